"""Three blocks that differ only in LeakyReLU's slope and LayerNorm's eps,
exported with -outline at -O1 and -O2: prints each function with its
attributes and the largest difference from PyTorch in ONNX Runtime.

    outline_attrs_torch.py DIR
"""
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import onnxc  # noqa: E402


class Block(nn.Module):
    def __init__(self, slope, eps):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.LeakyReLU(slope)
        self.norm = nn.LayerNorm(8, eps=eps)

    def forward(self, x):
        return self.norm(self.act(self.fc(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(0.1, 1e-5), Block(0.2, 1e-3), Block(0.3, 1e-5))

    def forward(self, x):
        return self.blocks(x)


torch.manual_seed(0)
model = Net().eval()
x = torch.randn(2, 8)
want = model(x).detach().numpy()
for level in ("O1", "O2"):
    path = os.path.join(sys.argv[1], "net_%s.onnx" % level)
    got = onnxc.export(model, (x,), path, optimize=level, outline=True)(x)[0]
    err = float(np.abs(np.asarray(got) - want).max())
    funcs = ", ".join("%s(%s)" % (f.name, " ".join(f.attribute)) for f in onnx.load(path).functions)
    print("%s: %s" % (level, funcs))
    print("%s: %s" % (level, "matches" if err < 1e-5 else "differs by %g" % err))
