"""Exports models written with onnxc.cond / onnxc.fori_loop /
onnxc.while_loop through the bridge, or shows the errors of bad uses.

    control_flow.py export DIR     write DIR/cond.fxir, DIR/loops.fxir and
                                   DIR/specialize.fxir (stderr: the bridge's warnings)
    control_flow.py errors         print the error of each bad use, eagerly
                                   and under export
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "utils"))
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402

import fxir_export  # noqa: E402
import onnxc  # noqa: E402


class Cond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        s = x.sum()
        return onnxc.cond(s > 0, lambda x: x * self.w + s + torch.tensor([0.0, 1.0, 2.0, 3.0]),
                          lambda x: x, (x,))


class Loops(torch.nn.Module):
    def forward(self, x, n):
        y, = onnxc.fori_loop(n, lambda i, y: (y * 2.0 + i,), (x,))
        z = onnxc.while_loop(lambda z: z.sum() < 100.0, lambda z: z + 1.0, y)
        return onnxc.fori_loop(2, lambda i, z: z - 1.0, z)


class Specialize(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


def export(d):
    x = torch.arange(4.0)
    fxir_export.export(Cond(), (x,), os.path.join(d, "cond.fxir"))
    fxir_export.export(Loops(), (x, torch.tensor(3)), os.path.join(d, "loops.fxir"))
    fxir_export.export(Specialize(), (x,), os.path.join(d, "specialize.fxir"))


class Bad(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


BAD = [
    ("shapes", lambda x: onnxc.cond(x.sum() > 0, lambda x: x, lambda x: x[:2], (x,))),
    ("dtypes", lambda x: onnxc.cond(x.sum() > 0, lambda x: x, lambda x: x.long(), (x,))),
    ("counts", lambda x: onnxc.cond(x.sum() > 0, lambda x: (x, x), lambda x: x, (x,))),
    ("not a tensor", lambda x: onnxc.cond(x.sum() > 0, lambda x: x, lambda x: 1.0, (x,))),
    ("predicate", lambda x: onnxc.cond(x > 0, lambda x: x, lambda x: x, (x,))),
    ("body", lambda x: onnxc.fori_loop(2, lambda i, x: torch.cat([x, x]), x)),
    ("trip count", lambda x: onnxc.fori_loop(x, lambda i, x: x, x)),
    ("while body", lambda x: onnxc.while_loop(lambda x: x.sum() < 9, lambda x: (x, x), x)),
]


def errors():
    x = torch.arange(4.0)
    for name, f in BAD:
        for how in ("eager", "export"):
            try:
                if how == "eager":
                    f(x)
                else:
                    fxir_export.export(Bad(f), (x,), "/dev/null/never.fxir")
                print("%s, %s: no error" % (name, how))
            except TypeError as e:
                print("%s, %s: TypeError: %s" % (name, how, e))


if __name__ == "__main__":
    export(sys.argv[2]) if sys.argv[1] == "export" else errors()
