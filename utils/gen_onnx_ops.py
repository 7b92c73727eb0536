#!/usr/bin/env python3
"""Write the ONNX default-domain lines of ir/ops.def from the operator
schemas of the installed onnx package.

    ~/.cache/onnxc/venv-torch2/bin/python utils/gen_onnx_ops.py          # rewrite ir/ops.def
    ~/.cache/onnxc/venv-torch2/bin/python utils/gen_onnx_ops.py --check  # exit 1 if stale

Every operator of the default domain gets one OP line, in name order,
between the `---- ONNX default domain ----` and `---- ATen` comments of
ops.def; the rest of the file is left as it is.  The counts follow
docs/ops.md: inputs and outputs of the latest version, but the minimum is
the smallest of every version in force from opset 7 on, and a variadic
maximum is -1; `since` is the op's oldest version.  The flags are kept
from the line the op had (they are judged by hand, docs/ops.md "Flags");
an op new to the table takes them from NEW_FLAGS, else 0.  Run
utils/gen_attrs.py and utils/gen_opset_types.py after it.
"""

import os
import re
import sys

import onnx.defs

OLDEST = 7          # versions in force from this opset on set the minimums
VARIADIC = 2 ** 31 - 1

# Where the table knowingly departs from the latest schema (docs/ops.md).
OVERRIDE = {
    # the five outputs of the opset-7/9 versions (training statistics)
    "BatchNormalization": {"max_out": 5},
}

# Flags of ops that were not in the table yet.
NEW_FLAGS = {
    "SwiGLU": "OPF_ELEMWISE | OPF_SAMETYPE",   # A, B and Y: one shape, one type
}

LINE = re.compile(r'^OP\((ONNX_\w+),\s*ONNX,\s*"(\w+)",[^)]*,\s*([^,()]+)\)\s*$')
BEGIN = "/* ---- ONNX default domain ---- */\n"
END = "/* ---- ATen"


def versions():
    """{name: [schema, ...] oldest first} of the default domain."""
    ops = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            ops.setdefault(s.name, []).append(s)
    for vs in ops.values():
        vs.sort(key=lambda s: s.since_version)
    return ops


def counts(vs):
    """(min_in, max_in, min_out, max_out, since) of one op's versions."""
    live = [s for i, s in enumerate(vs) if i + 1 == len(vs) or vs[i + 1].since_version > OLDEST]
    last = vs[-1]

    def top(n):
        return -1 if n >= VARIADIC else n
    row = {"min_in": min(s.min_input for s in live), "max_in": top(last.max_input),
           "min_out": min(s.min_output for s in live), "max_out": top(last.max_output),
           "since": vs[0].since_version}
    row.update(OVERRIDE.get(vs[0].name, {}))
    return row


def render(name, row, flags):
    return "OP(%-32sONNX, %-29s%d, %2d, %d, %2d, %2d, %s)\n" % (
        "ONNX_%s," % name, '"%s",' % name, row["min_in"], row["max_in"],
        row["min_out"], row["max_out"], row["since"], flags)


def section(old_lines):
    """The new ONNX lines, the flags of old_lines kept."""
    flags = {}
    for line in old_lines:
        m = LINE.match(line)
        if m:
            flags[m.group(2)] = m.group(3).strip()
    ops = versions()
    return [render(n, counts(ops[n]), flags.get(n, NEW_FLAGS.get(n, "0"))) for n in sorted(ops)]


def main(argv):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(repo, "ir", "ops.def")
    with open(path) as f:
        text = f.read()
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END, start)
    old = text[start:end].splitlines(True)
    # blank lines and comments at the section's end stay where they are
    tail = []
    while old and not old[-1].startswith("OP("):
        tail.insert(0, old.pop())
    new = text[:start] + "".join(section(old)) + "".join(tail) + text[end:]
    if "--check" in argv:
        if new != text:
            sys.stderr.write("gen_onnx_ops: ir/ops.def is not what onnx %s's schemas give "
                             "(run utils/gen_onnx_ops.py)\n" % onnx.__version__)
            return 1
        return 0
    if new != text:
        with open(path + ".tmp", "w") as f:
            f.write(new)
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
