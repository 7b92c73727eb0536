#!/usr/bin/env python3
"""Write passes/opset_types.def, the element types ONNX operators gained
after opset 13, from the operator schemas of the installed onnx package.

    ~/.cache/onnxc/venv-torch2/bin/python utils/gen_opset_types.py > passes/opset_types.def

For each operator of ir/ops.def and each opset above 13 at which the type
constraint of its first input took new element types, one line
TYPES(op enum, since, "fxir dtype names") lists them.  opset_convert.c
reads it: lowering a node whose first input has one of those types below
`since` is an error.  Types onnxc has no spelling for are left out.
"""

import os
import re
import sys
from collections import defaultdict

import onnx
import onnx.defs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    with open(os.path.join(REPO, path)) as f:
        return f.read()


def main():
    ops = dict(re.findall(r'OP\((ONNX_\w+),\s*ONNX,\s*"(\w+)"', read("ir/ops.def")))
    by_name = {name: enum for enum, name in ops.items()}
    # DTYPE(enum, "fxir", onnx number, ...)
    fxir = {int(num): name for name, num in re.findall(r'DTYPE\(\w+,\s*"(\w+)",\s*(\d+),', read("ir/dtypes.def"))}
    onnx_num = {}
    for name, num in onnx.TensorProto.DataType.items():
        onnx_num["tensor(%s)" % name.lower()] = num
    onnx_num.update({"tensor(float)": 1, "tensor(double)": 11, "tensor(float16)": 10})
    schemas = defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx") and s.name in by_name:
            schemas[s.name].append(s)
    out = sys.stdout
    out.write("/* Element types ONNX operators took after opset 13 (the type constraint\n"
              " * of the first input): TYPES(op enum, since, \"fxir dtypes\").  Generated\n"
              " * from onnx %s's schemas by utils/gen_opset_types.py: edit that, not\n"
              " * this.  Ordered as ops.def, then by since. */\n\n" % onnx.__version__)
    for name in sorted(schemas, key=lambda n: list(by_name).index(n)):
        versions = sorted(schemas[name], key=lambda s: s.since_version)
        first = {}
        for s in versions:
            if not s.inputs:
                continue
            param = s.inputs[0].type_str
            allowed = next((c.allowed_type_strs for c in s.type_constraints if c.type_param_str == param), [param])
            for t in allowed:
                first.setdefault(t, s.since_version)
        rows = defaultdict(list)
        for t, v in first.items():
            num = onnx_num.get(t)
            if v > 13 and v > versions[0].since_version and num in fxir:
                rows[v].append(fxir[num])
        for v in sorted(rows):
            out.write('TYPES(%s, %d, "%s")\n' % (by_name[name], v, ",".join(sorted(rows[v]))))


if __name__ == "__main__":
    main()
