"""The bridge's torch.export capture with its own stack traces and lazy
GraphModule code, against torch.export's defaults: the same .fxir text.

    cheap_capture.py DIR    for each model (and the run_decompositions
                            paths), SAME or DIFFERENT, the number of loc()
                            lines, and how often the trace generated
                            Python code
"""
import contextlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

import torch  # noqa: E402
import torch.fx  # noqa: E402
from torch import nn  # noqa: E402
import models  # noqa: E402
from onnxc import bridge  # noqa: E402
from onnxc.bridge import capture  # noqa: E402


class Branchy(nn.Module):
    def forward(self, x):
        def helper(t):
            return t.sin() * 2
        y = torch.cond(x.sum() > 0, lambda t: t.cos(), lambda t: t.sin(), (x,))
        with torch.no_grad():
            z = helper(y) + 1
        return z


def gpt():
    models._seed()
    return (models.GPT(n_layers=3, embedding_dim=64, num_heads=4).eval(),
            (torch.randint(0, 1024, (1, 30)),))


CASES = [
    ("gpt", gpt, {}),
    ("gpt functionalized", gpt, {"keep_inplace": False}),
    ("gpt aten::linear decomposed", gpt, {"decompose": ["aten::linear"]}),
    ("branchy", lambda: (Branchy(), (torch.randn(3, 4),)), {}),
]


def main(d):
    own, lazy = capture.own_stack_traces, capture._lazy_code
    gen = torch.fx.Graph._python_code
    made = [0]

    def counting(self, *a, **k):
        made[0] += 1
        return gen(self, *a, **k)
    torch.fx.Graph._python_code = counting
    for name, build, kw in CASES:
        texts, codes = [], []
        for cheap in (False, True):
            capture.own_stack_traces = own if cheap else contextlib.nullcontext
            capture._lazy_code = lazy if cheap else contextlib.nullcontext
            m, args = build()
            made[0] = 0
            text = bridge.export(m, args, os.path.join(d, "m.fxir"), **kw)
            texts.append(text)
            codes.append(made[0])
        print("%s: %s, %d loc lines, code generated %d times (torch's defaults: %d)"
              % (name, "SAME" if texts[0] == texts[1] else "DIFFERENT",
                 texts[1].count(" loc("), codes[1], codes[0]))
    capture.own_stack_traces, capture._lazy_code = own, lazy


if __name__ == "__main__":
    main(sys.argv[1])
