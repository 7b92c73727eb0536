"""Checks the int8-dynamic weights the quantize pass wrote against a NumPy
implementation of the rule in docs/weight_quantization.md (written from
it, not from the pass): B = the weight as [K, N] (transposed when its K
axis is 1), one f32 scale a column, s = max|x| / 127, codes
rint(x / s) clamped to -127..127, 0 where s = 0.

    check_dynamic.py DIR MODEL.onnx NAME:KAXIS[,NAME:KAXIS...]

DIR holds w.safetensors; prints `NAME codes True scales True` a weight.
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import stwrite

d, path, which = sys.argv[1], sys.argv[2], sys.argv[3]
ws = stwrite.read(os.path.join(d, "w.safetensors"))
inits = {t.name: t for t in onnx.load(path).graph.initializer}
for item in which.split(","):
    name, kaxis = item.split(":")
    w = np.asarray(ws[name], np.float32)
    b = w.T if kaxis == "1" else w
    s = (np.abs(b).max(axis=0) / np.float32(127)).astype(np.float32)
    safe = np.where(s == 0, np.float32(1), s)
    q = np.where(s == 0, 0, np.clip(np.rint(b / safe), -127, 127)).astype(np.int8)
    fq = [k for k in inits if k.startswith(name) and k.endswith("_quant")]
    got_q = numpy_helper.to_array(inits[fq[0]]) if len(fq) == 1 else None
    got_s = numpy_helper.to_array(inits[fq[0][:-len("_quant")] + "_scale"]) if len(fq) == 1 else None
    print(name, "codes", got_q is not None and got_q.dtype == np.int8 and np.array_equal(got_q, q),
          "scales", got_s is not None and np.array_equal(got_s, s))
