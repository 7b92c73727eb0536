#!/usr/bin/python3
"""Writes the small models of the tests in test/lit/check, each broken in
one or a few ways that `onnxc check` must name.

    /usr/bin/python3 test/lit/check/Inputs/make_models.py

Built with onnx.helper from fixed values, so the files come out the same on
every run; they are checked in next to this script.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F = TensorProto.FLOAT


def vi(name, shape=(2, 3)):
    return helper.make_tensor_value_info(name, F, list(shape))


def model(nodes, inputs, outputs, inits=(), functions=(), opsets=(("", 18),), name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          functions=list(functions))
    m.ir_version = 10
    return m


def save(name, m):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(m.SerializeToString())


w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")

# A valid model: the summary line.
save("good.onnx", model([helper.make_node("Add", ["x", "w"], ["y"], name="Add_0"),
                         helper.make_node("Relu", ["y"], ["z"], name="Relu_1")],
                        [vi("x")], [vi("z")], [w]))

# Out of order, undefined input, a name assigned twice, an undefined output.
save("order.onnx", model([helper.make_node("Relu", ["y"], ["z"], name="Relu_0"),
                          helper.make_node("Add", ["x", "w"], ["y"], name="Add_1"),
                          helper.make_node("Mul", ["x", "nowhere"], ["y"], name="Mul_2"),
                          helper.make_node("Neg", ["x"], ["q"])],
                         [vi("x")], [vi("z"), vi("missing")], [w]))

# A domain without an opset import, an unknown default-domain op, wrong
# arity, attribute types against the registry, a duplicate attribute.
save("ops.onnx", model([
    helper.make_node("Transpose", ["x"], ["t"], name="Transpose_0", perm=1),
    helper.make_node("Softmax", ["t"], ["s"], name="Softmax_1", axis=1.5),
    helper.make_node("Frobnicate", ["s"], ["f"], name="Frob_2"),
    helper.make_node("Add", ["f"], ["a"], name="Add_3"),
    helper.make_node("Scale", ["a"], ["y"], name="Scale_4", domain="com.example"),
    helper.make_node("Concat", ["y", "y"], ["c"], name="Concat_5", axis=0),
], [vi("x")], [vi("c")]))
m = onnx.load(os.path.join(HERE, "ops.onnx"))
m.graph.node[5].attribute.append(helper.make_attribute("axis", 1))
save("ops.onnx", m)

# Initializers whose data does not match their shape; external data that
# lies outside its file or outside the model's directory.
bad_raw = helper.make_tensor("short", F, [2, 3], b"\0" * 24, raw=True)
bad_raw.raw_data = b"\0" * 20
bad_typed = helper.make_tensor("few", F, [2], [1.0, 2.0])
bad_typed.dims[0] = 4
ext = helper.make_tensor("far", F, [2, 3], b"\0" * 24, raw=True)
ext.ClearField("raw_data")
ext.data_location = TensorProto.EXTERNAL
for k, v in (("location", "weights.bin"), ("offset", "16"), ("length", "24")):
    ext.external_data.add(key=k, value=v)
esc = helper.make_tensor("escape", F, [2, 3], b"\0" * 24, raw=True)
esc.ClearField("raw_data")
esc.data_location = TensorProto.EXTERNAL
esc.external_data.add(key="location", value="../outside.bin")
with open(os.path.join(HERE, "weights.bin"), "wb") as f:
    f.write(bytes(range(32)))
save("inits.onnx", model([helper.make_node("Add", ["short", "far"], ["y"], name="Add_0"),
                          helper.make_node("Add", ["few", "escape"], ["z"], name="Add_1")],
                         [], [vi("y"), vi("z", (4,))], [bad_raw, bad_typed, ext, esc]))

# A local function called with more inputs than it declares, and a
# function body using a domain its opset imports lack.
fn = helper.make_function("local", "Double", ["a"], ["b"],
                          [helper.make_node("Add", ["a", "a"], ["b"]),
                           helper.make_node("Helper", ["b"], ["h"], domain="other")],
                          [helper.make_opsetid("", 18)])
save("functions.onnx", model([helper.make_node("Double", ["x", "x"], ["y"], name="call_0", domain="local")],
                             [vi("x")], [vi("y")], functions=[fn], opsets=(("", 18), ("local", 1))))

# Attribute names an operator never took (MatMul has none; Relu's alpha
# belongs to LeakyRelu), beside ones it takes in some opset (Squeeze's
# axes, an attribute before opset 13) that must pass.
save("attrs.onnx", model([
    helper.make_node("MatMul", ["x", "x"], ["m"], name="MatMul_0", perm=[1, 0]),
    helper.make_node("Relu", ["m"], ["r"], name="Relu_1", alpha=0.1),
    helper.make_node("Transpose", ["r"], ["t"], name="Transpose_2", perm=[1, 0]),
    helper.make_node("Squeeze", ["t"], ["y"], name="Squeeze_3", axes=[0]),
], [vi("x")], [vi("y")]))

# Not a model at all.
with open(os.path.join(HERE, "garbage.onnx"), "wb") as f:
    f.write(b"\x08\x0a\x12\xff\xff\xff\xff\x0f")
