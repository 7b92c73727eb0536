"""Safetensors files as numpy arrays, for the test scripts beside it
(the standard library and numpy only)."""
import json
import struct

import numpy as np

TYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}


def load(path):
    """{name: array} of every tensor in the file."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    out = {}
    for name, e in json.loads(data[8:8 + n]).items():
        if name != "__metadata__":
            b, end = e["data_offsets"]
            out[name] = np.frombuffer(data[8 + n + b:8 + n + end], dtype=TYPES[e["dtype"]]).reshape(e["shape"])
    return out


def save(path, arrays):
    """Writes {name: f32 array}."""
    hdr, data = {}, b""
    for name, a in arrays.items():
        b = np.ascontiguousarray(a, dtype=np.float32).tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
