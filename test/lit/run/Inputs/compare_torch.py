"""Runs one of the bundled example models (examples/make_examples.py) in
PyTorch with its weights from the .safetensors file and compares the result
with an output onnxc run wrote.

    compare_torch.py MODEL INPUT.npy RESULT.safetensors OUTPUT_NAME
"""
import os
import sys

import numpy as np
import torch

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
sys.path.insert(0, os.path.join(REPO, "examples"))
sys.path.insert(0, os.path.join(REPO, "utils"))

import make_examples  # noqa: E402
from stfile import load  # noqa: E402


name, inp, result, output = sys.argv[1:5]
model = {"mlp": make_examples.MLP, "llm": make_examples.LLM}[name]().eval()
weights = load(os.path.join(REPO, "examples", name + ".safetensors"))
model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
with torch.no_grad():
    ref = model(torch.from_numpy(np.load(inp))).numpy()
got = load(result)[output]
ok = got.shape == ref.shape and np.allclose(got, ref, rtol=1e-4, atol=1e-5)
print("%s: max abs error %.3g: %s" % (name, float(np.abs(got - ref).max()), "ok" if ok else "MISMATCH"))
