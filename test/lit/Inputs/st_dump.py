"""Prints each tensor of a safetensors file (name, dtype, shape, values),
read with numpy alone, for tests of files onnxc writes."""
import json
import struct
import sys

import numpy as np

TYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32,
         "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}

data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
assert (8 + n) % 8 == 0, "data region not 8-byte aligned"
for name in sorted(k for k in header if k != "__metadata__"):
    e = header[name]
    b, end = e["data_offsets"]
    arr = np.frombuffer(data[8 + n + b:8 + n + end], dtype=TYPES[e["dtype"]]).reshape(e["shape"])
    print("%s %s %s %s" % (name, e["dtype"], list(arr.shape), arr.reshape(-1).tolist()))
