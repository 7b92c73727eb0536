#!/usr/bin/python3
"""ONNX operator conformance tests, run through ONNX Runtime and onnxc.

The tests are ONNX's own (Debian's libonnx-testdata): each directory holds a
model.onnx and test_data_set_*/{input,output}_*.pb. For every test:

 (a) the original model runs in ONNX Runtime on each data set and must give
     the expected outputs; if it does not (load error, run error, wrong numbers)
     the test is skipped with the reason recorded, since the runtime cannot
     judge it. Inputs that ortlib (numpy arrays) cannot take (sequences, optionals,
     maps, some dtypes) are skipped too;
 (b) unless --no-onnxc, `onnxc model.onnx -O0 -emit=onnx -o out.onnx` (or -O1/-O2 with -O) re-emits
     the model, and out.onnx must give the same outputs: pass or fail;
 (c) with --opset=N, the re-emit converts the model to default-domain opset N
     (`-opset=N`; the written model must say N; a list N,M,... converts in
     turn, each file from the one before); a model with an op onnxc
     has no conversion for (its error names the op) is skipped with that
     reason;
 (d) with --text-roundtrip, the ONNX written directly and the ONNX written
     through the .fxir text (printed at the same level, re-emitted at -O0)
     must be byte-identical.

Run with /usr/bin/python3 (Debian's, which has onnx and numpy). The last line
printed is `N passed, N failed, N skipped`; the exit status is 1 if any failed.
"""

import argparse
import concurrent.futures
import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "utils"))

import ortlib  # noqa: E402

try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    sys.exit("run_conformance.py: needs the onnx module: run it with /usr/bin/python3")

DATA_ROOT = "/usr/share/libonnx-testdata/data"
SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
RTOL = 1e-3
ATOL = 1e-7

# Element types utils/ortlib.py passes to ONNX Runtime (numpy arrays).
ORT_TYPES = {
    onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
    onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
    onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT32, onnx.TensorProto.UINT64, onnx.TensorProto.BOOL,
    onnx.TensorProto.STRING,
}


# onnxc's errors for an op with no conversion between two opsets: the
# conversion's own ("has no form at opset"), and the final check's for a
# form older than any the conversion knows (opset.c).
NO_CONVERSION = re.compile(r"has no form at opset|is not in opset|is deprecated from opset|"
                           r"takes [0-9 to]+ inputs? at opset|has no attribute '[^']*' at opset")


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def dtype_name(elem):
    try:
        return onnx.TensorProto.DataType.Name(elem).lower()
    except ValueError:
        return "type %d" % elem


# ---- reading tests ----

def find_tests(root, patterns):
    tests = []
    for suite in SUITES:
        for model in sorted(glob.glob(os.path.join(root, suite, "*", "model.onnx"))):
            name = suite + "/" + os.path.basename(os.path.dirname(model))
            if patterns and not any(matches(name, p) for p in patterns):
                continue
            tests.append((name, os.path.dirname(model)))
    return tests


def matches(name, pattern):
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(name.split("/", 1)[1], pattern)
    return pattern in name


def value_kind(vi):
    """'tensor', 'sequence', 'optional', 'map', ... for a graph input or output."""
    kind = vi.type.WhichOneof("value")
    return (kind or "unknown").replace("_type", "")


def read_value(path, vi):
    """A .pb file as a numpy array; sequences and optionals raise Skip."""
    kind = value_kind(vi) if vi is not None else "tensor"
    if kind != "tensor":
        raise Skip("%s value (%s) not supported by ortlib (numpy arrays)" % (kind, os.path.basename(path)))
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    if tensor.data_type not in ORT_TYPES:
        raise Skip("dtype %s not supported by ortlib (numpy arrays)" % dtype_name(tensor.data_type))
    arr = numpy_helper.to_array(tensor)
    if tensor.data_type == onnx.TensorProto.STRING:
        arr = np.vectorize(lambda b: b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else str(b),
                           otypes=[object])(arr) if arr.size else arr.astype(object)
    return arr


def numbered(files):
    return sorted(files, key=lambda p: int(re.findall(r"(\d+)\.pb$", p)[0]))


def load_test(testdir):
    """The model's graph inputs/outputs and its data sets as [(inputs, outputs)]."""
    model = onnx.load(os.path.join(testdir, "model.onnx"))
    inits = {t.name for t in model.graph.initializer}
    ins = [vi for vi in model.graph.input if vi.name not in inits]
    all_ins = list(model.graph.input)
    outs = list(model.graph.output)
    for vi in outs:
        if value_kind(vi) != "tensor":
            raise Skip("%s output %s not supported by ortlib (numpy arrays)" % (value_kind(vi), vi.name))
    sets = []
    for ds in sorted(glob.glob(os.path.join(testdir, "test_data_set_*"))):
        in_files = numbered(glob.glob(os.path.join(ds, "input_*.pb")))
        out_files = numbered(glob.glob(os.path.join(ds, "output_*.pb")))
        # Data files follow graph.input order; with old IR versions that list
        # holds the initializers too, after the fed inputs.
        src = ins if len(in_files) <= len(ins) else all_ins
        feeds = {}
        for i, path in enumerate(in_files):
            if i >= len(src):
                raise Skip("more input files than graph inputs")
            feeds[src[i].name] = read_value(path, src[i])
        expected = []
        for i, path in enumerate(out_files):
            if i >= len(outs):
                raise Skip("more output files than graph outputs")
            expected.append((outs[i].name, read_value(path, outs[i])))
        sets.append((feeds, expected))
    if not sets:
        raise Skip("no data sets")
    return sets


# ---- comparing ----

def compare(expected, got):
    """None if `got` matches the expected [(name, array)], else a message."""
    for name, exp in expected:
        if name not in got:
            return "output %s missing (got %s)" % (name, ", ".join(got) or "none")
        act = got[name]
        msg = compare_array(exp, act)
        if msg:
            return "output %s: %s" % (name, msg)
    return None


def compare_array(exp, act):
    if exp.shape != act.shape:
        return "shape %s, expected %s" % (list(act.shape), list(exp.shape))
    if exp.dtype.kind == "O" or act.dtype.kind == "O":
        if exp.dtype.kind != act.dtype.kind:
            return "dtype %s, expected %s" % (act.dtype, exp.dtype)
        bad = [i for i, (e, a) in enumerate(zip(exp.reshape(-1), act.reshape(-1))) if e != a]
        if bad:
            i = bad[0]
            return "%d of %d strings differ; first at %d: %r, expected %r" % (
                len(bad), exp.size, i, act.reshape(-1)[i], exp.reshape(-1)[i])
        return None
    if exp.dtype != act.dtype:
        return "dtype %s, expected %s" % (act.dtype, exp.dtype)
    if exp.dtype.kind in "fc":
        e = exp.astype(np.float64)
        a = act.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            both_nan = np.isnan(e) & np.isnan(a)
            same = (e == a) | both_nan
            close = np.abs(a - e) <= ATOL + RTOL * np.abs(e)
        ok = same | close
    else:
        ok = exp == act
    if ok.all():
        return None
    bad = np.flatnonzero(~ok)
    i = bad[0]
    return "%d of %d values differ; first at %s: %r, expected %r" % (
        bad.size, exp.size, list(np.unravel_index(i, exp.shape)),
        act.reshape(-1)[i].item(), exp.reshape(-1)[i].item())


# ---- running ----

_local = threading.local()
_runners = []
_runners_lock = threading.Lock()


def runner():
    r = getattr(_local, "runner", None)
    if r is None:
        r = ortlib.Runner(timeout=120.0)
        _local.runner = r
        with _runners_lock:
            _runners.append(r)
    return r


def run_sets(model, sets, check=True):
    """Run every data set; None if all match, else (kind, message).  With
    `check` the file must pass onnx's checker first (onnxc's files; the
    suite's own, written by older onnx releases, are not held to it)."""
    for i, (feeds, expected) in enumerate(sets):
        try:
            got = runner().run(model, feeds, check=check)
        except ortlib.OrtError as e:
            msg = str(e)
            kind = "load error" if msg.startswith("load:") else "run error"
            return kind, "data set %d: %s" % (i, msg)
        msg = compare(expected, got)
        if msg:
            return "wrong result", "data set %d: %s" % (i, msg)
    return None


def onnxc(args, exe, timeout):
    try:
        p = subprocess.run([exe] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail("onnxc %s: timed out after %ds" % (" ".join(os.path.basename(a) for a in args), timeout))
    if p.returncode != 0:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        first = next((l for l in err if l.strip()), "no message")
        how = ("signal %d" % -p.returncode) if p.returncode < 0 else ("exit %d" % p.returncode)
        raise Fail("onnxc %s: %s: %s" % (" ".join(os.path.basename(a) for a in args), how, first))


def run_test(name, testdir, opts):
    """('pass' | 'fail' | 'skip', message)."""
    try:
        sets = load_test(testdir)
    except Skip as e:
        return "skip", str(e)
    except Exception as e:  # a test file onnx itself cannot read
        return "skip", "cannot read test: " + one_line(e)
    model = os.path.join(testdir, "model.onnx")
    bad = run_sets(model, sets, check=False)
    if bad:
        return "skip", "ort %s on the original: %s" % bad
    if opts.no_onnxc:
        return "pass", ""
    # onnxc's file must pass onnx's checker where the suite's own does (a
    # few, written by old exporters, do not: their copies are held to ONNX
    # Runtime's results only).
    try:
        runner().check_file(model)
        check_out = True
    except ortlib.OrtError:
        check_out = False
    tmp = tempfile.mkdtemp(prefix="conf-", dir=opts.tmpdir)
    try:
        out = os.path.join(tmp, "out.onnx")
        if opts.opset:
            src = model
            for i, n in enumerate(opts.opset):
                dst = out if i + 1 == len(opts.opset) else os.path.join(tmp, "at%d.onnx" % n)
                try:
                    onnxc([src, "-O" + opts.level, "-opset=%d" % n, "-emit=onnx", "-o", dst],
                          opts.onnxc, opts.timeout)
                except Fail as e:
                    if NO_CONVERSION.search(str(e)):
                        return "skip", "no conversion to opset %d: %s" % (n, e)
                    raise
                got = [o.version for o in onnx.load(dst, load_external_data=False).opset_import
                       if o.domain in ("", "ai.onnx")]
                if got != [n]:
                    raise Fail("onnxc output: default-domain opset %s, not %d" % (got, n))
                src = dst
        else:
            onnxc([model, "-O" + opts.level, "-emit=onnx", "-o", out], opts.onnxc, opts.timeout)
        bad = run_sets(out, sets, check=check_out)
        if bad and opts.opset and "Could not find an implementation" in bad[1]:
            return "skip", "ort has no kernel at opset %d: %s" % (opts.opset[-1], bad[1])
        if bad:
            raise Fail("onnxc output: ort %s: %s" % bad)
        if opts.text_roundtrip:
            a = os.path.join(tmp, "a.onnx")
            fx = os.path.join(tmp, "m.fxir")
            b = os.path.join(tmp, "b.onnx")
            onnxc([model, "-emit=onnx", "-o", a], opts.onnxc, opts.timeout)
            onnxc([model, "-emit=fxir", "-o", fx], opts.onnxc, opts.timeout)
            # -O0: the text is re-emitted as it is.  Optimizing it again
            # may find more (x * 1 after fold made the 1), which is no
            # loss of the text's.
            onnxc([fx, "-O0", "-emit=onnx", "-o", b], opts.onnxc, opts.timeout)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                da, db = fa.read(), fb.read()
            if da != db:
                at = next((i for i in range(min(len(da), len(db))) if da[i] != db[i]),
                          min(len(da), len(db)))
                raise Fail("text roundtrip: direct and via-.fxir ONNX differ (%d vs %d bytes, first at byte %d)"
                           % (len(da), len(db), at))
        return "pass", ""
    except Fail as e:
        return "fail", str(e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def safe_run_test(name, testdir, opts):
    try:
        return run_test(name, testdir, opts)
    except Exception as e:  # a harness bug must not stop the run
        return "fail", "harness error: %s: %s" % (type(e).__name__, one_line(e))


def main():
    ap = argparse.ArgumentParser(description="ONNX conformance tests through ONNX Runtime and onnxc")
    ap.add_argument("--onnxc", default=os.path.join(REPO, "build", "onnxc"), help="path of onnxc")
    ap.add_argument("--no-onnxc", action="store_true", help="only check the original models in ONNX Runtime")
    ap.add_argument("-O", dest="level", choices=["0", "1", "2"], default="0",
                    help="onnxc's optimization level for the re-emit (default 0)")
    ap.add_argument("--opset", default="", metavar="N[,M...]",
                    help="convert each model to default-domain opset N (onnxc -opset=N) before running it; "
                         "a list converts in turn (26,13: up, then down from there)")
    ap.add_argument("--text-roundtrip", action="store_true",
                    help="also check that ONNX written through .fxir is byte-identical")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="select tests whose suite/name contains PATTERN (or matches a glob); repeatable")
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="parallel workers (default 2)")
    ap.add_argument("--list-skips", metavar="FILE", help="write skipped tests and reasons to FILE")
    ap.add_argument("--failures", metavar="FILE", help="write failing tests and their first error to FILE")
    ap.add_argument("--data", default=DATA_ROOT, help="test data root (default %(default)s)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per onnxc run")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test's result")
    opts = ap.parse_args()
    try:
        opts.opset = [int(n) for n in opts.opset.split(",")] if opts.opset else []
    except ValueError:
        ap.error("--opset: expected opsets separated by commas")

    if not os.path.isdir(opts.data):
        sys.exit("run_conformance.py: no test data at %s (install libonnx-testdata)" % opts.data)
    if not opts.no_onnxc and not os.access(opts.onnxc, os.X_OK):
        sys.exit("run_conformance.py: onnxc not found at %s (build it, or pass --onnxc or --no-onnxc)" % opts.onnxc)
    opts.onnxc = os.path.abspath(opts.onnxc)
    tests = find_tests(opts.data, opts.patterns)
    if not tests:
        print("no tests selected")
        print("0 passed, 0 failed, 0 skipped")
        return 0

    opts.tmpdir = tempfile.mkdtemp(prefix="onnxc-conformance-")
    start = time.time()
    results = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            futures = {pool.submit(safe_run_test, n, d, opts): n for n, d in tests}
            for fut in concurrent.futures.as_completed(futures):
                name = futures[fut]
                status, msg = fut.result()
                results[name] = (status, msg)
                if status == "fail":
                    print("FAIL %s: %s" % (name, one_line(msg)), flush=True)
                elif opts.verbose:
                    print("%s %s%s" % (status.upper(), name, ": " + one_line(msg) if msg else ""), flush=True)
    finally:
        for r in _runners:
            r.close()
        shutil.rmtree(opts.tmpdir, ignore_errors=True)
    elapsed = time.time() - start

    names = [n for n, _ in tests]
    if opts.list_skips:
        with open(opts.list_skips, "w") as f:
            for n in names:
                if results[n][0] == "skip":
                    f.write("%s\t%s\n" % (n, one_line(results[n][1], 1000)))
    if opts.failures:
        with open(opts.failures, "w") as f:
            for n in names:
                if results[n][0] == "fail":
                    f.write("%s\t%s\n" % (n, one_line(results[n][1], 1000)))

    print()
    print("%-20s %7s %7s %7s" % ("suite", "passed", "failed", "skipped"))
    totals = {"pass": 0, "fail": 0, "skip": 0}
    for suite in SUITES:
        counts = {"pass": 0, "fail": 0, "skip": 0}
        for n in names:
            if n.split("/", 1)[0] == suite:
                counts[results[n][0]] += 1
        if sum(counts.values()):
            print("%-20s %7d %7d %7d" % (suite, counts["pass"], counts["fail"], counts["skip"]))
        for k in totals:
            totals[k] += counts[k]
    mode = "ORT on the original models only" if opts.no_onnxc else \
        "onnxc -O" + opts.level + " re-emit" + (" at opset " + "->".join(map(str, opts.opset)) if opts.opset else "") + \
        (" + text roundtrip" if opts.text_roundtrip else "")
    print("(%s; %d tests in %.1fs)" % (mode, len(tests), elapsed))
    print("%d passed, %d failed, %d skipped" % (totals["pass"], totals["fail"], totals["skip"]))
    return 1 if totals["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
