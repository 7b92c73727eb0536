"""Writes DIR/m.onnx whose initializers live in two external-data files at
uneven offsets with gaps between them (m.onnx.data, more.bin), and one
inline; the graph adds each initializer to an input of its own, so none
folds or merges away.  With --big MB, a further f32 initializer of that
size goes at the end of m.onnx.data.

    make_external_stream.py DIR [--big MB]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper



def dtype_of(a):
    return numpy_helper.from_array(a[:0]).data_type


d = sys.argv[1]
big = int(sys.argv[sys.argv.index("--big") + 1]) if "--big" in sys.argv else 0
rng = np.random.default_rng(7)
arrays = {
    "wf": rng.standard_normal((3, 333)).astype(np.float32),
    "wh": rng.standard_normal(77).astype(np.float16),
    "wi": rng.integers(-2**62, 2**62, size=(5, 9), dtype=np.int64),
    "wu": rng.integers(0, 256, size=4099, dtype=np.uint8),
    "wd": rng.standard_normal(13).astype(np.float64),
}
if big:
    arrays["wbig"] = rng.standard_normal(big * (1 << 20) // 4).astype(np.float32)
where = {"wf": ("m.onnx.data", 5), "wh": ("m.onnx.data", 4003), "wi": ("more.bin", 1),
         "wu": ("m.onnx.data", 4200), "wbig": ("m.onnx.data", 9001)}
files = {}
inits = []
for name, a in arrays.items():
    if name not in where:
        inits.append(numpy_helper.from_array(a, name))
        continue
    loc, off = where[name]
    buf = files.setdefault(loc, bytearray())
    buf.extend(b"\xee" * (off - len(buf)))       # a gap nothing reads
    buf.extend(a.tobytes())
    t = TensorProto(name=name, data_type=dtype_of(a), dims=a.shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", loc), ("offset", str(off)), ("length", str(a.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    inits.append(t)
for loc, buf in files.items():
    buf.extend(b"\xee" * 3)
    with open(os.path.join(d, loc), "wb") as f:
        f.write(buf)
nodes, ins, outs = [], [], []
for name, a in arrays.items():
    et = dtype_of(a)
    ins.append(helper.make_tensor_value_info("x_" + name, et, a.shape))
    outs.append(helper.make_tensor_value_info("y_" + name, et, a.shape))
    nodes.append(helper.make_node("Add", ["x_" + name, name], ["y_" + name]))
g = helper.make_graph(nodes, "m", ins, outs, inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
with open(os.path.join(d, "m.onnx"), "wb") as f:
    f.write(m.SerializeToString())
