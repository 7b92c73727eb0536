#!/usr/bin/python3
"""Writes an ONNX model with deeply nested structure, for the depth limits.

    make_deep.py if DEPTH OUT.onnx     If nodes whose then_branch nests DEPTH deep
    make_deep.py seq DEPTH OUT.onnx    an input of type seq<...<f32>...> DEPTH deep

Built iteratively, so any depth is cheap to make.
"""
import sys

from onnx import TensorProto, helper


def branch(name, out):
    node = helper.make_node("Identity", ["x"], [out])
    return helper.make_graph([node], name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1])])


def nested_ifs(depth):
    g = branch("leaf", "y0")
    for d in range(1, depth + 1):
        node = helper.make_node("If", ["c"], ["y%d" % d], then_branch=g, else_branch=branch("e%d" % d, "z%d" % d))
        g = helper.make_graph([node], "b%d" % d, [], [helper.make_tensor_value_info("y%d" % d, TensorProto.FLOAT, [1])])
    g.input.extend([helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                    helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])])
    return g


def nested_seq(depth):
    t = helper.make_tensor_type_proto(TensorProto.FLOAT, [1])
    for _ in range(depth):
        t = helper.make_sequence_type_proto(t)
    node = helper.make_node("Identity", ["x"], ["y"])
    return helper.make_graph([node], "g", [helper.make_value_info("x", t)], [helper.make_value_info("y", t)])


def main():
    kind, depth, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    g = nested_ifs(depth) if kind == "if" else nested_seq(depth)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    with open(out, "wb") as f:
        f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
