"""IR-version-3 models for the initializers-as-inputs tests.

  ir3.py make OUT.onnx [W]   y = x + Neg(w) + b + k as old exporters wrote
                             it: w and b are initializers listed in
                             graph.input (inputs with defaults), k is an
                             initializer only; W = "a,b,c" replaces w's
                             values (the model an override should equal)
  ir3.py show MODEL.onnx     ir_version, graph inputs, initializers
  ir3.py feeds DIR           DIR/x.npy and DIR/w.npy (an override of w)
  ir3.py ort MODEL...        y of each model in ONNX Runtime on DIR's x
  ir3.py same A.npy MODEL    A.npy equals MODEL's y in ONNX Runtime
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
W_OVERRIDE = "100,-200,300"


def floats(s):
    return np.array([float(v) for v in s.split(",")], np.float32)


def make(out, w="1,2,3"):
    inits = [numpy_helper.from_array(floats(w), "w"),
             numpy_helper.from_array(floats("0.5,0.25,0.125"), "b"),
             numpy_helper.from_array(floats("10,20,30"), "k")]
    nodes = [helper.make_node("Neg", ["w"], ["nw"]),
             helper.make_node("Add", ["x", "nw"], ["s"]),
             helper.make_node("Add", ["s", "b"], ["t"]),
             helper.make_node("Add", ["t", "k"], ["y"])]
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes, "ir3",
        [vi("x", TensorProto.FLOAT, [2, 3]), vi("w", TensorProto.FLOAT, [3]), vi("b", TensorProto.FLOAT, [3])],
        [vi("y", TensorProto.FLOAT, [2, 3])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    model.ir_version = 3
    onnx.save(model, out)


def ort(model):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "utils"))
    import ortlib
    return list(ortlib.run(model, {"x": X}).values())[0]


def main(cmd, *args):
    if cmd == "make":
        make(*args)
    elif cmd == "show":
        m = onnx.load(args[0])
        print("ir_version", m.ir_version)
        print("inputs", [i.name for i in m.graph.input])
        print("initializers", [(t.name, numpy_helper.to_array(t).tolist()) for t in m.graph.initializer])
    elif cmd == "feeds":
        np.save(os.path.join(args[0], "x.npy"), X)
        np.save(os.path.join(args[0], "w.npy"), floats(W_OVERRIDE))
    elif cmd == "ort":
        for m in args:
            print("y", " ".join("%g" % v for v in ort(m).reshape(-1)))
    elif cmd == "same":
        got, want = np.load(args[0]), ort(args[1])
        print("same" if got.shape == want.shape and np.allclose(got, want) else "differ: %s vs %s" % (got, want))


main(*sys.argv[1:])
