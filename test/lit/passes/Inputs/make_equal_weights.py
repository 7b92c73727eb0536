"""Writes DIR/w.safetensors for merge_weights.fxir: tensors that are equal
by dtype, shape and bytes (a.w, b.w; the buffers m1, m2 and cnt), and
others that differ from them in one of the three (c.w's bytes, d.w's
dtype, e.w's shape) or in kind only (the param z, zeros as the buffers);
f.w and g.w equal and h.w not, 16 KB each, h.w only between the windows
the pass probes first.

    make_equal_weights.py DIR
"""
import json
import os
import struct
import sys

import numpy as np

ones = np.ones(4, np.float32)
zeros = np.zeros(4, np.float32)
tensors = {
    "a.w": ones, "b.w": ones.copy(), "c.w": np.array([1, 1, 1, 2], np.float32),
    "d.w": np.ones(4, np.float64), "e.w": np.ones((2, 2), np.float32),
    "m1": zeros, "m2": zeros.copy(), "cnt": zeros.copy(), "z": zeros.copy(),
}
# Larger than the pass's three probe windows: f.w and g.w are equal; h.w
# differs from them only between the windows, so it is read whole and kept.
big = np.ones(4096, np.float32)
odd = big.copy()
odd[1000] = 2
tensors.update({"f.w": big, "g.w": big.copy(), "h.w": odd})
head, data, at = {}, b"", 0
for k, t in tensors.items():
    b = t.tobytes()
    head[k] = {"dtype": {np.float32: "F32", np.float64: "F64"}[t.dtype.type],
               "shape": list(t.shape), "data_offsets": [at, at + len(b)]}
    data += b
    at += len(b)
h = json.dumps(head).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(sys.argv[1], "w.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + data)
