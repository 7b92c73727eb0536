# Checks onnxc run's output for examples/simple.fxir against numpy:
# (sin(x) + y) * weight.
import json
import struct
import sys

import numpy as np


def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            b, end = e["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + b:8 + n + end], dtype=np.float32).reshape(e["shape"])
    return out


weights, x, y, got = load(sys.argv[1]), np.load(sys.argv[2]), np.load(sys.argv[3]), load(sys.argv[4])["mul"]
ref = (np.sin(x) + y) * weights["weight"]
err = float(np.abs(ref - got).max())
print("max abs error %g %s" % (err, "ok" if np.allclose(got, ref, rtol=1e-5, atol=1e-6) else "MISMATCH"))
