"""Drop the value_info of every function of an .onnx file (argv[1] ->
argv[2]); with --clash, also give the second call of Block an input of
another shape (a graph input of its own, with a symbolic first dim), so its call sites disagree."""
import sys

import onnx

m = onnx.load(sys.argv[1])
for f in m.functions:
    del f.value_info[:]
if "--clash" in sys.argv:
    g = m.graph
    g.input.append(onnx.helper.make_tensor_value_info("x2", onnx.TensorProto.FLOAT, ["n", 8]))
    calls = [n for n in g.node if n.op_type == "Block"]
    calls[1].input[1] = "x2"
onnx.save(m, sys.argv[2])
