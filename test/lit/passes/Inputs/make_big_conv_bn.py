"""Writes DIR/m.fxir and DIR/w.safetensors: a Conv with a random f32
weight [1024, 256, 5, 5] (26.2 MB) and bias, followed by an inference
BatchNormalization whose statistics are params too, and DIR/ref.npz with
numpy's folded weight and bias (w * s per output channel, (b - mean) * s
+ beta, s = gamma / sqrt(var + eps), in double, stored as f32).  With
`transpose`, a ConvTranspose of two groups instead: weight [1024, 256, 5,
5], 512 output channels, output channel (c // 512) * 256 + j for weight
element [c, j, ...].

    make_big_conv_bn.py DIR [transpose]
"""
import os
import sys

import numpy as np

import stwrite

d = sys.argv[1]
tr = sys.argv[2:] == ["transpose"]
m = 512 if tr else 1024
rng = np.random.default_rng(5)
t = {"w": rng.standard_normal((1024, 256, 5, 5), dtype=np.float32),
     "b": rng.standard_normal(m, dtype=np.float32),
     "gamma": rng.standard_normal(m, dtype=np.float32),
     "beta": rng.standard_normal(m, dtype=np.float32),
     "mean": rng.standard_normal(m, dtype=np.float32),
     "var": rng.random(m, dtype=np.float32) + 0.5}
stwrite.write(os.path.join(d, "w.safetensors"), t)
s = t["gamma"].astype(np.float64) / np.sqrt(t["var"].astype(np.float64) + 1e-5)
w = t["w"].astype(np.float64)
if tr:
    w = (w.reshape(2, 512, 256, 5, 5) * s.reshape(2, 1, 256, 1, 1)).reshape(w.shape)
else:
    w = w * s[:, None, None, None]
np.savez(os.path.join(d, "ref.npz"),
         w=w.astype(np.float32),
         b=((t["b"].astype(np.float64) - t["mean"]) * s + t["beta"]).astype(np.float32))
with open(os.path.join(d, "m.fxir"), "w") as f:
    conv = ("%c = onnx::ConvTranspose(%x, %w, %b, group = 2) : f32[1,512,8,8]" if tr else
            "%c = onnx::Conv(%x, %w, %b, pads = [0, 0, 0, 0]) : f32[1,1024,4,4]")
    f.write("""module @C { weights "w.safetensors"
graph @g(%%x: %s) -> (%s) {
  param %%w: %s = "w"
  param %%b: f32[%d] = "b"
  param %%gamma: f32[%d] = "gamma"
  param %%beta: f32[%d] = "beta"
  param %%mean: f32[%d] = "mean"
  param %%var: f32[%d] = "var"
  %s
  %%y = onnx::BatchNormalization(%%c, %%gamma, %%beta, %%mean, %%var, epsilon = 1e-05) : %s
  return %%y
}
}
""" % ("f32[1,1024,4,4]" if tr else "f32[1,256,8,8]", conv.rsplit(": ", 1)[1],
       "f32[1024,256,5,5]", m, m, m, m, m, conv,
       conv.rsplit(": ", 1)[1]))
