"""Writes DIR/m.fxir and DIR/w.safetensors: a small MLP whose weights
reach MatMul and Gemm in each form the quantize pass takes: a [N,K] weight
through a Transpose (w1), a [K,N] weight (w2, K = 48: not a multiple of 32),
a Gemm with transB = 1 and a bias (w3, c3), and an f16 [K,N] weight (w4).

    make_quant_mlp.py DIR      (also DIR/x.npy, DIR/y.npy: inputs)
"""
import os
import sys

import numpy as np

import stwrite

d = sys.argv[1]
rng = np.random.default_rng(7)
ws = {
    "w1": rng.standard_normal((48, 64), dtype=np.float32) * 0.2,
    "w2": rng.standard_normal((48, 40), dtype=np.float32) * 0.2,
    "w3": rng.standard_normal((24, 40), dtype=np.float32) * 0.2,
    "c3": rng.standard_normal((24,), dtype=np.float32),
    "w4": (rng.standard_normal((40, 24)) * 0.2).astype(np.float16),
}
ws["w2"][:32, 0] = 0  # a block of zeros: scale 0
stwrite.write(os.path.join(d, "w.safetensors"), ws)
np.save(os.path.join(d, "x.npy"), rng.standard_normal((2, 3, 64), dtype=np.float32))
np.save(os.path.join(d, "y.npy"), rng.standard_normal((2, 40)).astype(np.float16))
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write("""module @Mlp { weights "w.safetensors"
graph @forward(%x: f32[2,3,64], %y: f16[2,40]) -> (f32[6,24], f16[2,24]) {
  param %w1: f32[48,64] = "w1"
  param %w2: f32[48,40] = "w2"
  param %w3: f32[24,40] = "w3"
  param %c3: f32[24] = "c3"
  param %w4: f16[40,24] = "w4"
  %w1t = onnx::Transpose(%w1, perm = [1, 0]) : f32[64,48]
  %h1 = onnx::MatMul(%x, %w1t) : f32[2,3,48] loc("m.py":10)
  %r1 = onnx::Relu(%h1) : f32[2,3,48]
  %h2 = onnx::MatMul(%r1, %w2) : f32[2,3,40]
  %s = onnx::Constant(value = tensor(i64[2], [6, 40])) : i64[2]
  %h2r = onnx::Reshape(%h2, %s) : f32[6,40]
  %out = onnx::Gemm(%h2r, %w3, %c3, transB = 1) : f32[6,24]
  %out2 = onnx::MatMul(%y, %w4) : f16[2,24]
  return %out, %out2
}
}
""")
