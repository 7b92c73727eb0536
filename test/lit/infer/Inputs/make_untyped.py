"""Writes a small CNN as an .onnx model with no value_info (only the graph's
inputs and outputs are typed)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
inits = [
    numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
    numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "shape"),
    numpy_helper.from_array(rng.standard_normal((16, 10)).astype(np.float32), "w2"),
    numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
]
nodes = [
    helper.make_node("Conv", ["x", "w"], ["conv"], pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["conv"], ["relu"]),
    helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Reshape", ["pool", "shape"], ["flat"]),
    helper.make_node("MatMul", ["flat", "w2"], ["mm"]),
    helper.make_node("Greater", ["mm", "zero"], ["gt"]),
    helper.make_node("Where", ["gt", "mm", "zero"], ["y"]),
]
g = helper.make_graph(nodes, "untyped",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
m.ir_version = 8
assert not m.graph.value_info
onnx.save(m, sys.argv[1])
