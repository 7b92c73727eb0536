"""Writes DIR/m.fxir and DIR/w.safetensors: a Conv with a random f32
weight [1024, 256, 5, 5] (26.2 MB) and bias, followed by an inference
BatchNormalization whose statistics are params too, and DIR/ref.npz with
numpy's folded weight and bias (w * s per output channel, (b - mean) * s
+ beta, s = gamma / sqrt(var + eps), in double, stored as f32).

    make_big_conv_bn.py DIR
"""
import json
import os
import struct
import sys

import numpy as np

d = sys.argv[1]
rng = np.random.default_rng(5)
t = {"w": rng.standard_normal((1024, 256, 5, 5), dtype=np.float32),
     "b": rng.standard_normal(1024, dtype=np.float32),
     "gamma": rng.standard_normal(1024, dtype=np.float32),
     "beta": rng.standard_normal(1024, dtype=np.float32),
     "mean": rng.standard_normal(1024, dtype=np.float32),
     "var": rng.random(1024, dtype=np.float32) + 0.5}
hdr, off = {}, 0
for k, a in t.items():
    hdr[k] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(d, "w.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for a in t.values():
        f.write(a.tobytes())
s = t["gamma"].astype(np.float64) / np.sqrt(t["var"].astype(np.float64) + 1e-5)
np.savez(os.path.join(d, "ref.npz"),
         w=(t["w"].astype(np.float64) * s[:, None, None, None]).astype(np.float32),
         b=((t["b"].astype(np.float64) - t["mean"]) * s + t["beta"]).astype(np.float32))
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write("""module @C { weights "w.safetensors"
graph @g(%x: f32[1,256,8,8]) -> (f32[1,1024,4,4]) {
  param %w: f32[1024,256,5,5] = "w"
  param %b: f32[1024] = "b"
  param %gamma: f32[1024] = "gamma"
  param %beta: f32[1024] = "beta"
  param %mean: f32[1024] = "mean"
  param %var: f32[1024] = "var"
  %c = onnx::Conv(%x, %w, %b, pads = [0, 0, 0, 0]) : f32[1,1024,4,4]
  %y = onnx::BatchNormalization(%c, %gamma, %beta, %mean, %var, epsilon = 1e-05) : f32[1,1024,4,4]
  return %y
}
}
""")
