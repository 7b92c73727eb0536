#!/usr/bin/python3
"""Prints the metadata_props of every node of an ONNX model, depth first.

    dump_meta.py model.onnx
    dump_meta.py --values model.onnx     # the graph's, its inputs', initializers' and outputs'

onnx 1.12 predates IR version 10, where NodeProto gained metadata_props
(field 9), GraphProto (16), ValueInfoProto (4) and TensorProto (16), so the
entries are read from the unknown fields.
"""
import sys

import onnx
from google.protobuf import unknown_fields


def meta(msg, field):
    for f in unknown_fields.UnknownFieldSet(msg):
        if f.field_number == field:
            e = onnx.StringStringEntryProto.FromString(f.data)
            yield e.key, e.value


def node_meta(node):
    return meta(node, 9)


def values(m):
    for k, v in meta(m.graph, 16):
        print("graph %s = %s" % (k, v))
    for what, items, field in (("input", m.graph.input, 4), ("initializer", m.graph.initializer, 16),
                               ("output", m.graph.output, 4)):
        for x in items:
            print("%s %s" % (what, x.name))
            for k, v in meta(x, field):
                print("  %s = %s" % (k, v))


def walk(graph, depth):
    for node in graph.node:
        print("%snode %s" % ("  " * depth, node.name))
        for k, v in node_meta(node):
            print("%s  %s = %s" % ("  " * depth, k, v))
        for a in node.attribute:
            if a.HasField("g"):
                walk(a.g, depth + 1)


def main(argv):
    if argv[1] == "--values":
        values(onnx.load(argv[2]))
        return
    m = onnx.load(argv[1])
    walk(m.graph, 0)
    for f in m.functions:
        print("function %s" % f.name)
        for node in f.node:
            print("  node %s" % node.name)
            for k, v in node_meta(node):
                print("    %s = %s" % (k, v))


if __name__ == "__main__":
    main(sys.argv)
