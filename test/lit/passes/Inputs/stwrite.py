"""Writes (and reads back) a safetensors file of numpy arrays, each in its
own dtype, for the test scripts beside it (the standard library and numpy
only)."""
import json
import struct

import numpy as np

DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
          np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}


def write(path, arrays):
    """{name: array} to path, in the dict's order, each array's bytes
    written from it (no joined copy of a large weight)."""
    hdr, off = {}, 0
    for name, a in arrays.items():
        hdr[name] = {"dtype": DTYPES[a.dtype], "shape": list(a.shape),
                     "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for a in arrays.values():
            f.write(np.ascontiguousarray(a).tobytes())


def read(path):
    """{name: array} of the file at path, each array a read-only map of
    its bytes."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
    names = {v: k for k, v in DTYPES.items()}
    out = {}
    for name, v in hdr.items():
        if name == "__metadata__":
            continue
        a, b = v["data_offsets"]
        dt = names[v["dtype"]]
        out[name] = np.memmap(path, dt, "r", 8 + n + a, tuple(v["shape"])) if b > a else \
            np.zeros(v["shape"], dt)
    return out
