#!/usr/bin/python3
"""onnxc's reference kernels against ONNX's node tests (libonnx-testdata).

For every node test whose ops all have a kernel (`onnxc run --list-kernels`),
each data set's inputs are written as .npy files, the model runs through
`onnxc run model.onnx --input NAME=FILE.npy ... -o DIR`, and the outputs read
back from DIR must match the expected ones (rtol 1e-3, atol 1e-7, the same
comparison as run_conformance.py). Tests using an op without a kernel are not
counted; tests whose data a kernel or the .npy bridge cannot hold (a dtype
the kernels lack: strings, bfloat16, float8, uint64 arithmetic, ...) are
skipped with the reason, as are those using a mode a kernel lacks (Resize's
cubic mode, antialias, tf_crop_and_resize: "kernel lacks" in its message),
and so are the tests listed in UNMATCHABLE when they fail (their expected
outputs are random draws).

Prints a table `op passed failed skipped` and a closing line
`N passed, N failed, N skipped`; exits 1 if any test failed.
Run with /usr/bin/python3 (Debian's, which has onnx and numpy).
"""

import argparse
import concurrent.futures
import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run_conformance as rc  # noqa: E402
import onnx  # noqa: E402

# Tests no deterministic kernel can pass, skipped (with the reason) when
# they fail: their expected outputs come from numpy's random generator.
UNMATCHABLE = {
    "node/test_training_dropout*": "training-mode Dropout: expected outputs are random draws",
}

T = onnx.TensorProto
# Element types a .npy file holds and onnxc run reads.
NPY_TYPES = {T.FLOAT, T.DOUBLE, T.FLOAT16, T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8,
             T.UINT16, T.UINT32, T.UINT64, T.BOOL}


def kernel_ops(onnxc):
    out = subprocess.run([onnxc, "run", "--list-kernels"], check=True, stdout=subprocess.PIPE, text=True).stdout
    return {line.split("::", 1)[1] for line in out.split() if line.startswith("onnx::")}


def test_ops(testdir):
    """The op types of the model's graph, or None if a node is outside the default domain."""
    model = onnx.load(os.path.join(testdir, "model.onnx"), load_external_data=False)
    if any(n.domain not in ("", "ai.onnx") for n in model.graph.node):
        return None
    return {n.op_type for n in model.graph.node}


def load_sets(testdir):
    """The data sets through run_conformance's reader, with the .npy types.
    Graph inputs and outputs are checked too: some data files hold bfloat16
    as uint16, which would reach onnxc as the wrong dtype."""
    model = onnx.load(os.path.join(testdir, "model.onnx"), load_external_data=False)
    for vi in list(model.graph.input) + list(model.graph.output):
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else None
        if elem is not None and elem not in NPY_TYPES:
            raise rc.Skip("dtype %s (%s) has no .npy form" % (rc.dtype_name(elem), vi.name))
    rc.ORT_TYPES = NPY_TYPES
    try:
        return rc.load_test(testdir)
    except rc.Skip as e:
        raise rc.Skip(str(e).replace("ortlib (numpy arrays)", "onnxc run's .npy files"))


def run_set(opts, model, feeds, tmp):
    args = [opts.onnxc, "run", model]
    for i, (name, arr) in enumerate(feeds.items()):
        path = os.path.join(tmp, "in%d.npy" % i)
        np.save(path, arr)
        args += ["--input", "%s=%s" % (name, path)]
    outdir = os.path.join(tmp, "out")
    shutil.rmtree(outdir, ignore_errors=True)
    try:
        p = subprocess.run(args + ["-o", outdir], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=opts.timeout)
    except subprocess.TimeoutExpired:
        raise rc.Fail("onnxc run timed out after %ds" % opts.timeout)
    err = p.stderr.decode("utf-8", "replace")
    first = next((line for line in err.splitlines() if "error:" in line), err.strip() or "no message")
    if p.returncode != 0 and "unsupported dtype" in err:
        raise rc.Skip("kernel lacks the dtype: " + first)
    if p.returncode != 0 and "kernel lacks" in err:
        raise rc.Skip("kernel lacks the mode: " + first)
    if p.returncode != 0:
        how = ("signal %d" % -p.returncode) if p.returncode < 0 else ("exit %d" % p.returncode)
        raise rc.Fail("onnxc run: %s: %s" % (how, first))
    return outdir


def read_outputs(outdir, expected):
    got = {}
    for name, _ in expected:
        path = os.path.join(outdir, name.replace("/", "_") + ".npy")
        if os.path.exists(path):
            got[name] = np.load(path)
    return got


def run_test(opts, testdir):
    """('pass' | 'fail' | 'skip', message)."""
    try:
        sets = load_sets(testdir)
    except rc.Skip as e:
        return "skip", str(e)
    except Exception as e:  # a test file onnx itself cannot read
        return "skip", "cannot read test: " + rc.one_line(e)
    tmp = tempfile.mkdtemp(prefix="kern-", dir=opts.tmpdir)
    try:
        for i, (feeds, expected) in enumerate(sets):
            outdir = run_set(opts, os.path.join(testdir, "model.onnx"), feeds, tmp)
            msg = rc.compare(expected, read_outputs(outdir, expected))
            if msg:
                return "fail", "data set %d: %s" % (i, msg)
        return "pass", ""
    except rc.Skip as e:
        return "skip", str(e)
    except rc.Fail as e:
        return "fail", str(e)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def safe_run_test(opts, name, testdir):
    try:
        status, msg = run_test(opts, testdir)
    except Exception as e:  # a harness bug must not stop the run
        return "fail", "harness error: %s: %s" % (type(e).__name__, rc.one_line(e))
    why = next((w for p, w in UNMATCHABLE.items() if fnmatch.fnmatch(name, p)), None)
    if status == "fail" and why:
        return "skip", "%s (%s)" % (why, rc.one_line(msg, 120))
    return status, msg


def select(opts, kernels):
    """[(name, dir, op)] for the node tests whose ops all have kernels."""
    chosen = []
    for name, testdir in rc.find_tests(opts.data, opts.patterns):
        if not name.startswith("node/"):
            continue
        try:
            ops = test_ops(testdir)
        except Exception:
            continue
        if not ops or not ops <= kernels:
            continue
        chosen.append((name, testdir, ops.pop() if len(ops) == 1 else "(several ops)"))
    return chosen


def print_table(chosen, results):
    by_op = {}
    for name, _, op in chosen:
        by_op.setdefault(op, {"pass": 0, "fail": 0, "skip": 0})[results[name][0]] += 1
    print()
    print("%-22s %7s %7s %7s" % ("op", "passed", "failed", "skipped"))
    totals = {"pass": 0, "fail": 0, "skip": 0}
    for op in sorted(by_op, key=lambda o: (o.startswith("("), o)):
        c = by_op[op]
        print("%-22s %7d %7d %7d" % (op, c["pass"], c["fail"], c["skip"]))
        for k in totals:
            totals[k] += c[k]
    return totals


def main():
    ap = argparse.ArgumentParser(description="onnxc run's kernels against ONNX's node tests")
    ap.add_argument("--onnxc", default=os.path.join(rc.REPO, "build", "onnxc"), help="path of onnxc")
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="select tests whose name contains PATTERN (or matches a glob); repeatable")
    ap.add_argument("-j", dest="jobs", type=int, default=2, help="parallel workers (default 2)")
    ap.add_argument("--data", default=rc.DATA_ROOT, help="test data root (default %(default)s)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per onnxc run")
    ap.add_argument("--failures", metavar="FILE", help="write failing tests and their first error to FILE")
    ap.add_argument("--list-skips", metavar="FILE", help="write skipped tests and reasons to FILE")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test's result")
    opts = ap.parse_args()
    if not os.path.isdir(opts.data):
        sys.exit("run_kernels.py: no test data at %s (install libonnx-testdata)" % opts.data)
    if not os.access(opts.onnxc, os.X_OK):
        sys.exit("run_kernels.py: onnxc not found at %s (build it, or pass --onnxc)" % opts.onnxc)
    opts.onnxc = os.path.abspath(opts.onnxc)
    chosen = select(opts, kernel_ops(opts.onnxc))
    opts.tmpdir = tempfile.mkdtemp(prefix="onnxc-kernels-")
    start = time.time()
    results = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            futures = {pool.submit(safe_run_test, opts, n, d): n for n, d, _ in chosen}
            for fut in concurrent.futures.as_completed(futures):
                name = futures[fut]
                results[name] = fut.result()
                status, msg = results[name]
                if status == "fail" or opts.verbose:
                    print("%s %s%s" % (status.upper(), name, ": " + rc.one_line(msg) if msg else ""), flush=True)
    finally:
        shutil.rmtree(opts.tmpdir, ignore_errors=True)
    for path, kind in ((opts.failures, "fail"), (opts.list_skips, "skip")):
        if path:
            with open(path, "w") as f:
                for name, _, _ in chosen:
                    if results[name][0] == kind:
                        f.write("%s\t%s\n" % (name, rc.one_line(results[name][1], 1000)))
    totals = print_table(chosen, results)
    print("(onnxc run on %d node tests whose ops have kernels, in %.1fs)" % (len(chosen), time.time() - start))
    print("%d passed, %d failed, %d skipped" % (totals["pass"], totals["fail"], totals["skip"]))
    return 1 if totals["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
