"""Writes DIR/m.fxir and DIR/w.safetensors: tables read by Gather, for
-quantize-embedding: E [50, 64], also the LM head's weight (tied, read
through a Transpose), P [20, 48] (K = 48: a block of 32 and one of 16)
O [10, 33] (an odd K: 4-bit GatherBlockQuantized packs two codes a
byte, so at -target=ort int4 it stays float) and R [50, 32], gathered by
indices the model computes (an ArgMax of the logits): it stays float.

    make_quant_embed.py DIR      (also DIR/ids.npy, DIR/pos.npy: inputs)
"""
import os
import sys

import numpy as np

import stwrite

d = sys.argv[1]
rng = np.random.default_rng(11)
ws = {
    "E": rng.standard_normal((50, 64), dtype=np.float32) * 0.5,
    "P": rng.standard_normal((20, 48), dtype=np.float32) * 0.5,
    "O": rng.standard_normal((10, 33), dtype=np.float32) * 0.5,
    "R": rng.standard_normal((50, 32), dtype=np.float32) * 0.5,
}
ws["P"][3, :32] = 0  # a block of zeros: scale 0
stwrite.write(os.path.join(d, "w.safetensors"), ws)
np.save(os.path.join(d, "ids.npy"), rng.integers(0, 50, (2, 3)).astype(np.int64))
np.save(os.path.join(d, "pos.npy"), np.array([[0, 3, 9], [1, 2, 3]], np.int64))
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write("""module @Lm { weights "w.safetensors"
graph @forward(%ids: i64[2,3], %pos: i64[2,3]) -> (f32[2,3,64], f32[2,3,48], f32[2,3,33], f32[2,3,50], f32[2,3,32]) {
  param %E: f32[50,64] = "E"
  param %P: f32[20,48] = "P"
  param %O: f32[10,33] = "O"
  param %R: f32[50,32] = "R"
  %e = onnx::Gather(%E, %ids) : f32[2,3,64] loc("lm.py":4)
  %p = onnx::Gather(%P, %pos, axis = 0) : f32[2,3,48]
  %posc = onnx::Cast(%pos, to = 6) : i32[2,3]
  %o = onnx::Gather(%O, %posc) : f32[2,3,33]
  %Et = onnx::Transpose(%E, perm = [1, 0]) : f32[64,50]
  %logits = onnx::MatMul(%e, %Et) : f32[2,3,50] loc("lm.py":9)
  %k = onnx::ArgMax(%logits, axis = -1, keepdims = 0) : i64[2,3]
  %r = onnx::Gather(%R, %k) : f32[2,3,32]
  return %e, %p, %o, %logits, %r
}
}
""")
