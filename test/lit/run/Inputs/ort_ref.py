"""Runs an ONNX model in ONNX Runtime on a reference file's inputs
(input.<name>) and compares each output with output.<name>:

    ort_ref.py MODEL.onnx REF.safetensors

prints `ort: NAME ok` or `ort: NAME FAILED (max abs error X)` per output."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "utils"))
import ortlib  # noqa: E402
from stfile import load  # noqa: E402

model, ref = sys.argv[1], sys.argv[2]
tensors = load(ref)
inputs = {k[6:]: v for k, v in tensors.items() if k.startswith("input.")}
got = ortlib.run(model, inputs)
for name, arr in got.items():
    want = tensors["output." + name]
    ok = np.allclose(arr, want, rtol=1e-4, atol=1e-5)
    print("ort: %s %s" % (name, "ok" if ok else "FAILED (max abs error %g)" % np.abs(arr - want).max()))
