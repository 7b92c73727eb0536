#!/usr/bin/python3
"""Writes an ONNX model with deeply nested structure, for the depth limits.

    make_deep.py if DEPTH OUT.onnx     If nodes whose then_branch nests DEPTH deep
    make_deep.py seq DEPTH OUT.onnx    an input of type seq<...<f32>...> DEPTH deep

Built iteratively and in place, so any depth is cheap to make.
"""
import sys

import onnx
from onnx import TensorProto, helper


def fill_branch(g, name, out):
    g.name = name
    g.node.append(helper.make_node("Identity", ["x"], [out]))
    g.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, [1]))


def nested_ifs(depth):
    """Built from the outside in, filling each then_branch in place: making
    a node with a finished subgraph copies it, which is quadratic in the
    depth."""
    top = onnx.GraphProto()
    g = top
    for d in range(depth, 0, -1):
        g.name = g.name or "b%d" % d
        node = g.node.add()
        node.op_type = "If"
        node.input.append("c")
        node.output.append("y%d" % d)
        g.output.append(helper.make_tensor_value_info("y%d" % d, TensorProto.FLOAT, [1]))
        other = node.attribute.add()      # in name order, as make_node puts them
        other.name = "else_branch"
        other.type = onnx.AttributeProto.GRAPH
        then = node.attribute.add()
        then.name = "then_branch"
        then.type = onnx.AttributeProto.GRAPH
        fill_branch(other.g, "e%d" % d, "z%d" % d)
        g = then.g
    fill_branch(g, "leaf", "y0")
    top.input.extend([helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                      helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])])
    return top


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
