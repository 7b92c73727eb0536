"""Writes DIR/m.fxir and DIR/w.safetensors: params a (f32[4096, 4096],
64 MB) and b (f16[3000, 2100]) of random values, each read through an
onnx::Transpose that -O2's fold turns into a transposed weight.

    make_big_transpose.py DIR
"""
import os
import sys

import numpy as np

import stwrite

d = sys.argv[1]
rng = np.random.default_rng(3)
a = rng.standard_normal((4096, 4096), dtype=np.float32)
b = rng.standard_normal((3000, 2100)).astype(np.float16)
stwrite.write(os.path.join(d, "w.safetensors"), {"a": a, "b": b})
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write("""module @T { weights "w.safetensors"
graph @g(%x: f32[1,4096], %y: f16[1,3000]) -> (f32[1,4096], f16[1,3000]) {
  param %a: f32[4096,4096] = "a"
  param %b: f16[3000,2100] = "b"
  %at = onnx::Transpose(%a) : f32[4096,4096]
  %bt = onnx::Transpose(%b, perm = [1, 0]) : f16[2100,3000]
  %u = onnx::MatMul(%x, %at) : f32[1,4096]
  %v = onnx::MatMul(%y, %b) : f16[1,2100]
  %w = onnx::MatMul(%v, %bt) : f16[1,3000]
  return %u, %w
}
}
""")
