"""Writes DIR/m.fxir and DIR/w.safetensors for the quantize pass's
memory test: a (f32[4096, 4096], 64 MB, [K,N], read by a MatMul) and b
(f16[3000, 2100], [N,K] with K = 2100 not a multiple of the block, read
by a Gemm with transB = 1), random values.

    make_big_quant.py DIR
"""
import os
import sys

import numpy as np

import stwrite

d = sys.argv[1]
rng = np.random.default_rng(5)
a = rng.standard_normal((4096, 4096), dtype=np.float32)
b = rng.standard_normal((3000, 2100)).astype(np.float16)
stwrite.write(os.path.join(d, "w.safetensors"), {"a": a, "b": b})
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write("""module @T { weights "w.safetensors"
graph @g(%x: f32[1,4096], %y: f16[1,2100]) -> (f32[1,4096], f16[1,3000]) {
  param %a: f32[4096,4096] = "a"
  param %b: f16[3000,2100] = "b"
  %u = onnx::MatMul(%x, %a) : f32[1,4096]
  %w = onnx::Gemm(%y, %b, transB = 1) : f16[1,3000]
  return %u, %w
}
}
""")
