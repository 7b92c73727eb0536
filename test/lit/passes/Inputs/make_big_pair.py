"""Writes DIR/m.fxir and DIR/w.safetensors for fuse_ort's memory test on
joined products: p and q (f32[4096, 2048] each, 32 MB, [K,N]) read by two
MatMuls of one activation, random values.  Quantized to int4 each B is
4 MB; joined, 8 MB, which goes to a temporary file.

    make_big_pair.py DIR
"""
import os
import sys

import numpy as np

import stwrite

d = sys.argv[1]
rng = np.random.default_rng(7)
p = rng.standard_normal((4096, 2048), dtype=np.float32)
q = rng.standard_normal((4096, 2048), dtype=np.float32)
stwrite.write(os.path.join(d, "w.safetensors"), {"p": p, "q": q})
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write("""module @T { weights "w.safetensors"
graph @g(%x: f32[2,4096]) -> (f32[2,2048], f32[2,2048]) {
  param %p: f32[4096,2048] = "p"
  param %q: f32[4096,2048] = "q"
  %u = onnx::MatMul(%x, %p) : f32[2,2048]
  %v = onnx::MatMul(%x, %q) : f32[2,2048]
  return %u, %v
}
}
""")
