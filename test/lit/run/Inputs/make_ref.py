"""Writes a reference file for `onnxc verify`: the bundled MLP example run
in PyTorch on a fixed input, saved as input.x and output.addmm_1.

    make_ref.py OUT.safetensors [SCALE] [--values]

SCALE multiplies the expected output (1 by default), so a test can make
a reference the model does not match.  --values also saves the
intermediate values as value.<name>, named as in examples/mlp.fxir
(addmm: fc1's output, relu), for -bisect-accuracy.
"""
import os
import sys

import numpy as np
import torch

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
sys.path.insert(0, os.path.join(REPO, "examples"))
sys.path.insert(0, os.path.join(REPO, "utils"))

import make_examples  # noqa: E402
from stfile import load, save  # noqa: E402

args = [a for a in sys.argv[1:] if a != "--values"]
out = args[0]
scale = float(args[1]) if len(args) > 1 else 1.0
model = make_examples.MLP().eval()
weights = load(os.path.join(REPO, "examples", "mlp.safetensors"))
model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
x = np.random.default_rng(3).standard_normal((4, 16), dtype=np.float32)
with torch.no_grad():
    y = model(torch.from_numpy(x)).numpy() * np.float32(scale)
    addmm = model.fc1(torch.from_numpy(x))
    relu = torch.relu(addmm)
arrays = {"input.x": x, "output.addmm_1": y}
if "--values" in sys.argv:
    arrays.update({"value.addmm": addmm.numpy(), "value.relu": relu.numpy()})
save(out, arrays)
