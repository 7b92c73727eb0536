#!/usr/bin/python3
"""Writes a model of ONNX operators of opsets 26 to 28 (BitCast, CumProd,
CausalConvWithState, SwiGLU) for test/lit/onnx/new-ops.test.

    make_new_ops.py OUT.onnx [--short]

--short gives SwiGLU one input where it takes two.  Only onnx.helper
builds the file, so any onnx package writes it (no schema is consulted).
"""
import sys

from onnx import TensorProto as T
from onnx import helper as h
from onnx import save


def main(out, short):
    f = lambda n, s: h.make_tensor_value_info(n, T.FLOAT, s)
    nodes = [
        h.make_node("SwiGLU", ["a"] if short else ["a", "b"], ["s"], alpha=1.5),
        h.make_node("CumProd", ["s", "axis"], ["c"], exclusive=1, reverse=0),
        h.make_node("BitCast", ["c"], ["bits"], to=T.INT32),
        h.make_node("CausalConvWithState", ["x", "w", "", ""], ["y", "state"],
                    activation="silu"),
    ]
    g = h.make_graph(nodes, "new_ops", [f("a", [2, 8]), f("b", [2, 8]), f("x", [1, 4, 6]),
                                        f("w", [4, 1, 3])],
                     [h.make_tensor_value_info("bits", T.INT32, [2, 8]), f("y", [1, 4, 6]),
                      f("state", [1, 4, 2])],
                     [h.make_tensor("axis", T.INT64, [], [1])])
    save(h.make_model(g, opset_imports=[h.make_opsetid("", 28)]), out)


if __name__ == "__main__":
    main(sys.argv[1], "--short" in sys.argv[2:])
