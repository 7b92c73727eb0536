#!/usr/bin/env python3
"""Write ir/attrs.def, the attribute table `onnxc check` reads, from the
operator schemas of the installed onnx package.

    ~/.cache/onnxc/venv-torch2/bin/python utils/gen_attrs.py > ir/attrs.def

Every ONNX operator of ir/ops.def is listed with every attribute any of its
versions has had, so an attribute the table does not name for a listed op is
one the op never took.  Where versions disagree on a type, the newest wins.
"""

import os
import re
import sys

import onnx.defs

KINDS = {
    "FLOAT": "FLOAT", "INT": "INT", "STRING": "STRING", "TENSOR": "TENSOR",
    "GRAPH": "GRAPH", "FLOATS": "FLOATS", "INTS": "INTS", "STRINGS": "STRINGS",
    "TENSORS": "TENSORS", "GRAPHS": "GRAPHS", "SPARSE_TENSOR": "SPARSE_TENSOR",
    "SPARSE_TENSORS": "SPARSE_TENSORS", "TYPE_PROTO": "TYPE_PROTO",
    "TYPE_PROTOS": "TYPE_PROTOS",
}


def onnx_ops(ops_def):
    """(enum, name) of each ONNX op of ops.def, in its order."""
    pat = re.compile(r'^OP\((ONNX_\w+),\s*ONNX,\s*"(\w+)"')
    with open(ops_def) as f:
        return [m.groups() for m in map(pat.match, f) if m]


def attributes(name):
    """{attribute: kind} over every version of the default-domain op."""
    found = {}
    versions = sorted({s.since_version for s in onnx.defs.get_all_schemas_with_history()
                       if s.name == name and s.domain == ""})
    for v in versions:
        s = onnx.defs.get_schema(name, v, "")
        for a in s.attributes.values():
            found[a.name] = KINDS[a.type.name]
    return found


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.stdout
    out.write("/* Attributes of the ONNX operators of ops.def, for `onnxc check` and\n"
              " * the decompose pass.  ATTR(op enum, \"name\", kind): kind is an\n"
              " * AttrKind of ir.h (ONNX's AttributeProto.AttributeType).  Every\n"
              " * attribute any version of a listed op has had is here, so a name\n"
              " * missing for a listed op is one the op never took; where versions\n"
              " * disagree on a type the newest is listed.  Generated from onnx %s's\n"
              " * schemas by utils/gen_attrs.py: edit that, not this.  Ordered as\n"
              " * ops.def. */\n\n" % onnx.__version__)
    missing = []
    for enum, name in onnx_ops(os.path.join(repo, "ir", "ops.def")):
        try:
            attrs = attributes(name)
        except onnx.defs.SchemaError:
            missing.append(name)
            continue
        out.write("ATTR_OP(%s)\n" % enum)
        for a in sorted(attrs):
            out.write("ATTR(%s, \"%s\", %s)\n" % (enum, a, attrs[a]))
    if missing:
        sys.stderr.write("gen_attrs: no schema for %s\n" % ", ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
