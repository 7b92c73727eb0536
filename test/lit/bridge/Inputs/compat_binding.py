"""Writes the .fxir of three small models into the directory given, for
compat-binding.test: keyword inputs after a parameter left to its default,
a tensor's dims as a tuple, and a dim bounded by a mask's size."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "examples"))

import torch  # noqa: E402
from onnxc import bridge  # noqa: E402


class Scaled(torch.nn.Module):
    def forward(self, x, scale=1.0, y=None):
        return x * scale + y


class Rows(torch.nn.Module):
    def forward(self, x):
        return x.sum(1)


def main(out):
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    bridge.export(Scaled(), (x,), os.path.join(out, "scaled.fxir"), kwargs={"y": x})
    bridge.export(Rows(), (torch.randn(3, 4),), os.path.join(out, "rows.fxir"),
                  dynamic_shapes={"x": ("n", None)})
    from make_examples import LLM
    bridge.export(LLM(vocab_size=64, context_size=16).eval(), (torch.randint(0, 64, (2, 5)),),
                  os.path.join(out, "llm.fxir"), dynamic_shapes={"input_ids": {1: "seq"}})


if __name__ == "__main__":
    main(sys.argv[1])
