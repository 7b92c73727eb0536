"""Writes DIR/m.fxir, DIR/w.safetensors and DIR/x.npy: a chain of eight
MatMuls, each by its own f32[2048, 2048] weight (16 MB of zeros, the file
made sparse), on x = ones[1, 2048].

    make_chain.py DIR
"""
import json
import os
import struct
import sys

import numpy as np

d = sys.argv[1]
n = 2048 * 2048 * 4
header = {"w%d" % i: {"dtype": "F32", "shape": [2048, 2048], "data_offsets": [i * n, (i + 1) * n]}
          for i in range(8)}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(d, "w.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    f.truncate(8 + len(h) + 8 * n)
params = ['    param %%w%d: f32[2048,2048] = "w%d"' % (i, i) for i in range(8)]
nodes = ["    %%h%d = onnx::MatMul(%%%s, %%w%d) : f32[1,2048]" % (i, "x" if i == 0 else "h%d" % (i - 1), i)
         for i in range(8)]
with open(os.path.join(d, "m.fxir"), "w") as f:
    f.write('module @Chain {\n  weights "w.safetensors"\n'
            "  graph @g(%x: f32[1,2048]) -> (f32[1,2048]) {\n" + "\n".join(params + nodes)
            + "\n    return %h7\n  }\n}\n")
np.save(os.path.join(d, "x.npy"), np.ones((1, 2048), np.float32))
