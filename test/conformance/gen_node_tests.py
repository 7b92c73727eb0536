#!/usr/bin/env python3
"""Writes ONNX's node tests from the installed onnx package's test cases
(onnx.backend.test.case.node), in the layout of Debian's libonnx-testdata:
DIR/node/<test>/model.onnx and test_data_set_*/{input,output}_*.pb.

Debian's data stops at opset 17; the onnx package of the torch 2.x
environment (utils/venv-requirements.txt) holds the tests of the ops added
since (AffineGrid, RMSNormalization, GroupNormalization 21, Attention, ...),
so the opset conversions of those ops can be run against ONNX's own tests:

    ~/.cache/onnxc/venv-torch2/bin/python test/conformance/gen_node_tests.py DIR [REGEX]
    python3 test/conformance/run_conformance.py --data DIR --opset=13 -k 'node/*'

Only the tests whose name matches REGEX (re.search) are written.
"""
import os
import re
import sys

from onnx import numpy_helper
from onnx.backend.test.case import node


def write(path, value, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())


def main(argv):
    out, pattern = argv[1], re.compile(argv[2] if len(argv) > 2 else "")
    count = 0
    for case in node.collect_testcases(None):
        if not pattern.search(case.name):
            continue
        d = os.path.join(out, "node", case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds, exist_ok=True)
            for j, x in enumerate(inputs):
                write(os.path.join(ds, "input_%d.pb" % j), x, graph.input[j].name)
            for j, x in enumerate(outputs):
                write(os.path.join(ds, "output_%d.pb" % j), x, graph.output[j].name)
        count += 1
    print("%d node tests written to %s" % (count, os.path.join(out, "node")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
