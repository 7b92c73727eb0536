#!/usr/bin/python3
"""onnxc's type inference against the output types of ONNX's node tests.

For every model of the node suite (Debian's libonnx-testdata), the graph
outputs' types are removed and the model is read back by onnxc
(`-passes= -emit=onnx`): the outputs then carry only what onnxc inferred.
Each output is compared with the type the test declares:

  exact     same dtype, same rank, every dim the test knows inferred the same
  partial   same dtype; the rank or some dims left unknown
  untyped   nothing inferred
  conflict  a different dtype, rank or static dim (an inference error)

A per-op table and the totals are printed (the op is the op_type of the
model's last node); the exit status is 1 if any output is in conflict.

    /usr/bin/python3 test/conformance/infer_agreement.py [--onnxc build/onnxc] [-k PATTERN] [-v]
"""

import argparse
import collections
import fnmatch
import glob
import os
import subprocess
import sys
import tempfile

try:
    import onnx
except ImportError:
    sys.exit("infer_agreement.py: needs the onnx module: run it with /usr/bin/python3")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "/usr/share/libonnx-testdata/data/node"


def tensor_type(vi):
    """(elem_type, dims or None) of a ValueInfoProto; dims are ints, names
    or None (unknown); None when it is not a tensor or has no type."""
    t = vi.type
    if not t.HasField("tensor_type"):
        return None
    tt = t.tensor_type
    if not tt.elem_type:
        return None
    if not tt.HasField("shape"):
        return (tt.elem_type, None)
    dims = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif d.HasField("dim_param") and d.dim_param:
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return (tt.elem_type, dims)


def compare(want, got):
    if got is None:
        return "untyped"
    if got[0] != want[0]:
        return "conflict"
    if want[1] is None or got[1] is None:
        return "partial" if want[1] is not None else "exact"
    if len(want[1]) != len(got[1]):
        return "conflict"
    exact = True
    for w, g in zip(want[1], got[1]):
        if isinstance(w, int) and isinstance(g, int) and w != g:
            return "conflict"
        if w is not None and w != g:
            exact = False
    return "exact" if exact else "partial"


def check(onnxc, path, tmp):
    m = onnx.load(path)
    want = [tensor_type(o) for o in m.graph.output]
    for o in m.graph.output:
        o.ClearField("type")
    src = os.path.join(tmp, "in.onnx")
    out = os.path.join(tmp, "out.onnx")
    onnx.save(m, src)
    r = subprocess.run([onnxc, src, "-passes=", "-emit=onnx", "-o", out],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[:1]
    got = [tensor_type(o) for o in onnx.load(out).graph.output]
    res = []
    for w, g in zip(want, got):
        if w is None:
            continue        # sequences, optionals: not compared
        res.append((compare(w, g), w, g))
    return m.graph.node[-1].op_type if m.graph.node else "?", res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnxc", default=os.path.join(REPO, "build", "onnxc"))
    ap.add_argument("--data", default=DATA)
    ap.add_argument("-k", dest="patterns", action="append", default=[])
    ap.add_argument("-v", "--verbose", action="store_true", help="print every output that is not exact")
    a = ap.parse_args()
    dirs = sorted(d for d in glob.glob(os.path.join(a.data, "*")) if os.path.isfile(os.path.join(d, "model.onnx")))
    if a.patterns:
        dirs = [d for d in dirs if any(fnmatch.fnmatch(os.path.basename(d), "*%s*" % p) for p in a.patterns)]
    per_op = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    unread = 0
    with tempfile.TemporaryDirectory() as tmp:
        for d in dirs:
            name = os.path.basename(d)
            try:
                op, res = check(a.onnxc, os.path.join(d, "model.onnx"), tmp)
            except Exception as e:    # a model onnx itself cannot load or save
                op, res = None, [str(e)]
            if op is None:
                unread += 1
                if a.verbose:
                    print("%s: not read: %s" % (name, res[0] if res else ""))
                continue
            for kind, w, g in res:
                per_op[op][kind] += 1
                total[kind] += 1
                if a.verbose and kind != "exact" or kind == "conflict":
                    print("%s (%s): %s: expected %s, inferred %s" % (name, op, kind, w, g))
    kinds = ["exact", "partial", "untyped", "conflict"]
    print("%-28s %s" % ("op", " ".join("%8s" % k for k in kinds)))
    for op in sorted(per_op):
        print("%-28s %s" % (op, " ".join("%8d" % per_op[op][k] for k in kinds)))
    print("outputs: " + ", ".join("%d %s" % (total[k], k) for k in kinds) + "; %d models not read by onnxc" % unread)
    return 1 if total["conflict"] else 0


if __name__ == "__main__":
    sys.exit(main())
