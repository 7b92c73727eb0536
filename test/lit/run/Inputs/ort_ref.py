"""Runs an ONNX model in ONNX Runtime on a reference file's inputs
(input.<name>) and compares each output with output.<name>:

    ort_ref.py MODEL.onnx REF.safetensors

prints `ort: NAME ok` or `ort: NAME FAILED (max abs error X)` per output."""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "utils"))
import ortlib  # noqa: E402

DT = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}

model, ref = sys.argv[1], sys.argv[2]
data = open(ref, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
tensors = {}
for name, e in json.loads(data[8:8 + n]).items():
    if name != "__metadata__":
        b, end = e["data_offsets"]
        tensors[name] = np.frombuffer(data[8 + n + b:8 + n + end], dtype=DT[e["dtype"]]).reshape(e["shape"])
inputs = {k[6:]: v for k, v in tensors.items() if k.startswith("input.")}
got = ortlib.run(model, inputs)
for name, arr in got.items():
    want = tensors["output." + name]
    ok = np.allclose(arr, want, rtol=1e-4, atol=1e-5)
    print("ort: %s %s" % (name, "ok" if ok else "FAILED (max abs error %g)" % np.abs(arr - want).max()))
