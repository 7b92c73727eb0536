#!/usr/bin/python3
"""Prints the metadata_props of every node of an ONNX model, depth first.

    dump_meta.py model.onnx

onnx 1.12 predates IR version 10, where NodeProto gained metadata_props
(field 9), so the entries are read from the unknown fields.
"""
import sys

import onnx
from google.protobuf import unknown_fields


def node_meta(node):
    for f in unknown_fields.UnknownFieldSet(node):
        if f.field_number == 9:
            e = onnx.StringStringEntryProto.FromString(f.data)
            yield e.key, e.value


def walk(graph, depth):
    for node in graph.node:
        print("%snode %s" % ("  " * depth, node.name))
        for k, v in node_meta(node):
            print("%s  %s = %s" % ("  " * depth, k, v))
        for a in node.attribute:
            if a.HasField("g"):
                walk(a.g, depth + 1)


m = onnx.load(sys.argv[1])
walk(m.graph, 0)
for f in m.functions:
    print("function %s" % f.name)
    for node in f.node:
        print("  node %s" % node.name)
        for k, v in node_meta(node):
            print("    %s = %s" % (k, v))
