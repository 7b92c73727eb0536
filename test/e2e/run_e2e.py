#!/usr/bin/python3
"""End-to-end tests: PyTorch model -> .fxir -> onnxc -> ONNX Runtime.

For every model of the zoo (test/e2e/models.py): export it with
utils/fxir_export.py, compile it with `onnxc -O0`, `-O2`, `-O2 -outline`
(modules as local functions) and `-O2 -target=ort` (ONNX Runtime's
contrib ops) to ONNX, each with -verify-each (the verifier after every pass), run each in ONNX Runtime through
utils/ortlib.py and compare with PyTorch's own outputs (max abs diff <= 1e-4
for floats, exact for integers and bools).  Each compile mode of each model
counts in the totals.

    /usr/bin/python3 test/e2e/run_e2e.py [--onnxc PATH] [-k PATTERN] [--keep] [--opset N]

--opset N compiles every mode with -opset=N (the fusions into Gelu,
RMSNormalization and Attention need opsets 20 and 23).

Prints one row a model (node counts are the main graph's: with -outline the
modules are local functions) and, alone on the last line,
`N passed, N failed, N skipped`, counting each mode of each model.  Exit status 1 when a model fails.
"""

import argparse
import copy
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "utils"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fxir_export  # noqa: E402
import models  # noqa: E402

TOLERANCE = 1e-4
REFERENCE_MIN = 1e-3
LEVELS = ("-O0", "-O2", "-O2 -outline", "-O2 -target=ort")


class Failure(Exception):
    pass


class Skip(Exception):
    pass


# -- ONNX node count: ModelProto.graph (field 7) -> GraphProto.node (field 1) --

def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """Yield (field number, wire type, value or bytes) of a protobuf message."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield field, wt, v


def onnx_node_count(path):
    with open(path, "rb") as f:
        buf = f.read()
    for field, wt, v in _fields(buf):
        if field == 7 and wt == 2:
            return sum(1 for f2, w2, _ in _fields(v) if f2 == 1 and w2 == 2)
    return 0


# -- helpers --------------------------------------------------------------------

def flat_outputs(value):
    out = []
    fxir_export._flatten_outputs(value, out)
    return [t.detach().numpy() for t in out]


def flat_inputs(model, args):
    """[(graph input name, numpy array)] in the order of the .fxir inputs."""
    leaves = []
    for name, value, _ in fxir_export._bind_inputs(model, args, None):
        fxir_export._flatten(name, value, leaves)
    return [(n, t.detach().numpy()) for n, t in leaves]


def graph_inputs(fxir_text):
    m = re.search(r"graph @\w+\((.*?)\)\s*->", fxir_text)
    if not m:
        return []
    return [p.split(":")[0].strip().lstrip("%").strip('"') for p in m.group(1).split(", ") if p]


def first_lines(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[:n]) if lines else "(no output)"


def compare(ref, got):
    """Max abs diff over the outputs; raise Failure on a mismatch."""
    if len(got) < len(ref):
        raise Failure("ONNX model has %d outputs, PyTorch %d" % (len(got), len(ref)))
    worst = 0.0
    for i, (r, g) in enumerate(zip(ref, got)):
        g = np.asarray(g)
        if tuple(r.shape) != tuple(g.shape):
            raise Failure("output %d: shape %s, expected %s" % (i, g.shape, r.shape))
        if r.dtype.kind == "f":
            if not np.array_equal(np.isnan(r), np.isnan(g)):
                raise Failure("output %d: NaNs differ" % i)
            both = ~np.isnan(r)
            d = float(np.max(np.abs(r[both].astype(np.float64) - g[both].astype(np.float64)),
                             initial=0.0))
            worst = max(worst, d)
        else:
            if not np.array_equal(r, g.astype(r.dtype)):
                raise Failure("output %d: %s values differ" % (i, r.dtype))
    return worst


EXTRA_FLAGS = []   # --opset: added to every mode


def compile_onnx(onnxc, fxir, level, out):
    if not os.access(onnxc, os.X_OK):
        raise Failure("onnxc not found at %s (build it: cmake -B build && "
                      "cmake --build build)" % onnxc)
    try:
        # -verify-each: a pass that writes a wrong type fails here, named.
        p = subprocess.run([onnxc, fxir] + level.split() + EXTRA_FLAGS + ["-verify-each", "-emit=onnx", "-o", out],
                           capture_output=True, text=True, timeout=600,
                           cwd=os.path.dirname(fxir))
    except subprocess.TimeoutExpired:
        raise Failure("onnxc %s timed out" % level)
    if p.returncode != 0 or not os.path.exists(out):
        raise Failure("onnxc %s exit %d: %s" % (level, p.returncode,
                                                 first_lines(p.stderr or p.stdout)))


def check_reference(ref):
    """A reference whose float outputs are all near zero would let any
    result pass the absolute tolerance: refuse it."""
    floats = [np.abs(np.asarray(r, dtype=np.float64)).max() for r in ref
              if np.asarray(r).dtype.kind == "f" and np.asarray(r).size]
    if floats and max(floats) < REFERENCE_MIN:
        raise Failure("the reference output is near zero (max |y| = %.2g < %g): "
                      "the comparison would not test the model" % (max(floats), REFERENCE_MIN))


def extra_cases(name, model):
    """[(feeds, PyTorch's outputs)] for the model's other inputs
    (models.EXTRA_INPUTS: one case or a list)."""
    make = getattr(models, "EXTRA_INPUTS", {}).get(name)
    cases = make() if make else []
    out = []
    for args in cases if isinstance(cases, list) else [cases]:
        with torch.no_grad():
            ref = flat_outputs(copy.deepcopy(model)(*args))
        out.append((flat_inputs(model, args), ref))
    return out


def run_model(name, builder, onnxc, ortlib, workdir):
    """Returns (main-graph nodes, max diff, failure or None) for each mode of
    LEVELS; raises Skip or Failure when the model cannot be exported."""
    try:
        model, args, dyn = builder()
    except ImportError as e:
        raise Skip("cannot build: %s" % e)
    fresh = copy.deepcopy(model)
    with torch.no_grad():
        ref = flat_outputs(fresh(*args))
    check_reference(ref)
    fxir = os.path.join(workdir, name + ".fxir")
    try:
        text = fxir_export.export(copy.deepcopy(model), args, fxir, dynamic_shapes=dyn)
    except Exception as e:
        why = "export: %s: %s" % (type(e).__name__, first_lines(str(e), 1))
        if name in getattr(models, "EXPORT_MAY_FAIL", ()):
            raise Skip("torch %s cannot export it (%s)" % (torch.__version__, why))
        raise Failure(why)
    names = graph_inputs(text)
    feeds = flat_inputs(model, args)
    if [n for n, _ in feeds] != names:
        raise Failure("input names %s, expected %s" % (names, [n for n, _ in feeds]))
    extra = extra_cases(name, model)
    results = []
    for level in LEVELS:
        try:
            results.append(run_level(name, level, onnxc, ortlib, workdir, fxir,
                                     [(feeds, ref)] + extra) + (None,))
        except Failure as e:
            results.append(("-", "-", str(e)))
    return results


def run_level(name, level, onnxc, ortlib, workdir, fxir, cases):
    """Compiles with one mode and runs every case: (nodes, max diff)."""
    out = os.path.join(workdir, "%s%s.onnx" % (name, level.replace(" ", "")))
    compile_onnx(onnxc, fxir, level, out)
    worst = 0.0
    for feed, expect in cases:
        try:
            got = ortlib.run(out, dict(feed))
        except Exception as e:
            raise Failure("ORT %s: %s" % (level, first_lines(str(e), 2)))
        worst = max(worst, compare(expect, list(got.values())))
    if worst > TOLERANCE:
        raise Failure("%s: max diff %.3g > %g" % (level, worst, TOLERANCE))
    return str(onnx_node_count(out)), "%.2g" % worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC_BUILD",
                                                      os.path.join(REPO, "build", "onnxc")),
                    help="the compiler (default $ONNXC_BUILD or build/onnxc)")
    ap.add_argument("-k", dest="pattern", action="append",
                    help="run only models whose name contains PATTERN or matches it as "
                         "a glob (repeatable)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory (.fxir, .onnx files) and print its path")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracebacks")
    ap.add_argument("--opset", type=int, help="compile with -opset=N")
    a = ap.parse_args()
    if a.opset:
        EXTRA_FLAGS.append("-opset=%d" % a.opset)

    try:
        import ortlib
    except ImportError as e:
        print("run_e2e: cannot import utils/ortlib.py (%s); it runs the ONNX models" % e)
        print("0 passed, %d failed, 0 skipped" % len(models.ZOO))
        return 1
    onnxc = os.path.abspath(a.onnxc)
    if os.path.isdir(onnxc):        # $ONNXC_BUILD may name the build directory
        onnxc = os.path.join(onnxc, "onnxc")

    selected = [(n, b) for n, b in models.ZOO.items()
                if not a.pattern or any(p in n or fnmatch.fnmatch(n, p) for p in a.pattern)]
    workdir = tempfile.mkdtemp(prefix="onnxc-e2e.")
    rows = []
    counts = {"pass": 0, "fail": 0, "skip": 0}
    try:
        for name, builder in selected:
            try:
                results = run_model(name, builder, onnxc, ortlib, workdir)
            except Skip as e:
                results = [("-", "-", ("skip", str(e)))] * len(LEVELS)
            except Failure as e:
                results = [("-", "-", str(e))] * len(LEVELS)
            except Exception as e:
                results = [("-", "-", "%s: %s" % (type(e).__name__, first_lines(str(e), 1)))] * len(LEVELS)
                if a.verbose:
                    traceback.print_exc()
            status, reasons = "pass", []
            for _, _, why in results:
                st = "skip" if isinstance(why, tuple) else "fail" if why else "pass"
                counts[st] += 1
                if st != "pass":
                    status = st
                    r = why[1] if isinstance(why, tuple) else why
                    if r not in reasons:
                        reasons.append(r)
            reason = "; ".join(reasons)
            rows.append((name, "/".join(r[0] for r in results)) +
                        tuple(r[1] for r in results) + (status, reason))
            print("%-20s %s" % (name, status + (": " + reason if reason else "")),
                  file=sys.stderr, flush=True)
    finally:
        if a.keep:
            print("work directory: %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    head = ("model", "nodes O0/O2/outline/ort", "diff O0", "diff O2", "diff outline", "diff ort",
            "result")
    nc = len(head)
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) if rows else len(head[i])
         for i in range(nc)]
    fmt = "  ".join("%%-%ds" % x for x in w)
    print(fmt % head)
    print(fmt % tuple("-" * x for x in w))
    for r in rows:
        line = fmt % r[:nc]
        if r[nc]:
            line += "  " + r[nc]
        print(line.rstrip())
    print("%d passed, %d failed, %d skipped" % (counts["pass"], counts["fail"], counts["skip"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
