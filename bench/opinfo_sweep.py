#!/usr/bin/env python3
"""OpInfo sweep: every op of PyTorch's OpInfo database through onnxc and
through torch.onnx.export(dynamo=True), each checked in ONNX Runtime.

    ~/.cache/onnxc/venv-torch2/bin/python bench/opinfo_sweep.py [-k GLOB] [--limit N]
        [-j N] [--no-peer] [--onnxc PATH] [--timeout SECS]
        [--markdown docs/opinfo.md] [--json FILE] [--failures FILE]
    bench/opinfo_sweep.py --from-json FILE [--markdown ...] [--failures ...]

For each op of torch.testing._internal.common_methods_invocations.op_db that
supports float32 on the CPU, the first two sample inputs of
op.sample_inputs("cpu", torch.float32) whose arguments are plain tensors,
scalars, strings, dtypes, None and lists or tuples of those (samples of other
kinds are skipped, the first 50 looked at) are each wrapped in a one-op
nn.Module: the tensors become the module's inputs (t0, t1, ...), everything
else a constant of the call.  The module is exported with onnxc.export and
with torch.onnx.export(..., dynamo=True) (default options), each file is run
in ONNX Runtime (CPU) and its outputs compared with eager PyTorch: floats
with rtol 1e-4 and atol 1e-4 * max(1, max |expected|), integers and booleans
exactly, dtypes and shapes equal.

Every sample of every exporter runs in one of -j worker processes; a sample
that overruns --timeout or crashes its worker is one failure (the worker is
replaced).  A sample is: pass, no decomposition (the aten op), bridge error,
onnxc error, runtime error (ONNX Runtime refused or failed), mismatch (the
largest difference), or eager failed (PyTorch itself raised, or its output
changes from run to run: random ops; not counted).  An op passes when all of
its counted samples pass.
"""

import argparse
import datetime
import fnmatch
import json
import os
import platform
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MAX_SAMPLES = 2
MAX_SCAN = 50

PASS = "pass"
NODECOMP = "no decomposition"
BRIDGE = "bridge error"
ONNXC = "onnxc error"
PEER = "export error"
RUNTIME = "runtime error"
MISMATCH = "mismatch"
EAGER = "eager failed"
ORDER = [PASS, NODECOMP, BRIDGE, ONNXC, PEER, RUNTIME, MISMATCH, EAGER]

# Ops whose output is uninitialized memory: only dtypes and shapes compared.
METADATA_ONLY = ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty",
                 "new_empty_strided")


def import_op_db():
    """op_db, with a stand-in for the expecttest module torch's test
    utilities import (only its TestCase base class is needed here)."""
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase = unittest.TestCase
        sys.modules["expecttest"] = stub
    import warnings
    warnings.filterwarnings("ignore")
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def op_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def first_line(text, limit=400):
    for line in str(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[:limit] + "..."
    return ""


# ---------------------------------------------------------------------------
# worker side

class NotPlain(Exception):
    pass


def split_args(value, tensors):
    """A rebuild function for `value` with its tensors replaced by the
    module's inputs; the tensors are appended to `tensors`."""
    import torch
    if isinstance(value, torch.Tensor):
        if value.layout != torch.strided or value.is_quantized or value.is_complex():
            raise NotPlain("tensor of layout %s, dtype %s" % (value.layout, value.dtype))
        i = len(tensors)
        tensors.append(value.detach())
        return lambda ts: ts[i]
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype,
                                           torch.memory_format)):
        return lambda ts: value
    if isinstance(value, torch.Size):
        return lambda ts: value
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        parts = [split_args(v, tensors) for v in value]
        kind = type(value)
        return lambda ts: kind(p(ts) for p in parts)
    if isinstance(value, dict):
        parts = {k: split_args(v, tensors) for k, v in value.items()}
        return lambda ts: {k: p(ts) for k, p in parts.items()}
    raise NotPlain("argument of type %s" % type(value).__name__)


def make_module(op, sample):
    """(module, tensors): a one-op nn.Module calling op.op on the sample."""
    import torch
    tensors = []
    inp = split_args(sample.input, tensors)
    args = split_args(list(sample.args), tensors)
    kwargs = split_args(dict(sample.kwargs), tensors)
    fn = op.op
    names = ["t%d" % i for i in range(len(tensors))]
    ns = {}
    exec("def forward(self%s):\n    return self.call((%s))\n"
         % ("".join(", " + n for n in names), "".join(n + ", " for n in names)), ns)

    class OneOp(torch.nn.Module):
        forward = ns["forward"]

        def call(self, ts):
            return fn(inp(ts), *args(ts), **kwargs(ts))
    OneOp.__name__ = OneOp.__qualname__ = "OneOp"
    return OneOp().eval(), tensors


def flatten_out(value, out):
    import torch
    if isinstance(value, torch.Tensor):
        out.append(value.detach())
    elif isinstance(value, (list, tuple)):
        for v in value:
            flatten_out(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            flatten_out(v, out)
    elif isinstance(value, (bool, int, float)):
        out.append(torch.tensor(value))
    elif value is None:
        pass
    else:
        raise TypeError("output of type %s" % type(value).__name__)
    return out


def random_ops(module, tensors):
    """The aten ops of the call whose output depends on the random seed.
    OpInfo's random ops reseed the generator themselves, so their eager
    output repeats, but no exported graph reproduces it: each op tagged
    nondeterministic_seeded is run again under six seeds and compared."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map
    seen = []

    def fresh(x):
        return x.clone() if isinstance(x, torch.Tensor) else x

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()):
                state = torch.get_rng_state()
                outs = []
                for seed in range(1, 7):
                    torch.manual_seed(seed)
                    a, kw = tree_map(fresh, (args, kwargs))
                    flat = tree_flatten(func(*a, **kw))[0]
                    outs.append([t for t in flat if isinstance(t, torch.Tensor)])
                torch.set_rng_state(state)
                name = str(func.overloadpacket.__name__)
                if any(not same_outputs(outs[0], o) for o in outs[1:]) and name not in seen:
                    seen.append(name)
            return func(*args, **kwargs)
    with torch.no_grad(), Record():
        module(*[t.clone() for t in tensors])
    return seen


def run_eager(module, tensors, seed):
    import torch
    torch.manual_seed(seed)
    with torch.no_grad():
        out = module(*[t.clone() for t in tensors])
    return flatten_out(out, [])


def same_outputs(a, b):
    import torch
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.is_complex() or x.dtype.is_floating_point:
            if not torch.equal(torch.nan_to_num(x, nan=0.0), torch.nan_to_num(y, nan=0.0)):
                return False
            if not torch.equal(torch.isnan(x), torch.isnan(y)):
                return False
        elif not torch.equal(x, y):
            return False
    return True


def compare(expected, got, metadata_only):
    """None when the ONNX outputs match the eager ones, else a message."""
    import numpy as np
    import torch
    if len(expected) != len(got):
        return "%d outputs, expected %d" % (len(got), len(expected)), None
    worst = None
    for k, (e, g) in enumerate(zip(expected, got)):
        g = np.asarray(g)
        en = e.numpy() if e.dtype != torch.bfloat16 else e.float().numpy()
        if en.dtype != g.dtype:
            return "output %d: dtype %s, expected %s" % (k, g.dtype, en.dtype), None
        if tuple(en.shape) != tuple(g.shape):
            return "output %d: shape %s, expected %s" % (k, list(g.shape), list(en.shape)), None
        if metadata_only or en.size == 0:
            continue
        if en.dtype.kind in "fc":
            ef = en.astype(np.float64)
            gf = g.astype(np.float64)
            nan_e, nan_g = np.isnan(ef), np.isnan(gf)
            if (nan_e != nan_g).any():
                return "output %d: NaN at %d places, expected at %d" % (
                    k, int(nan_g.sum()), int(nan_e.sum())), float("nan")
            fin = np.isfinite(ef)
            if (ef[~fin & ~nan_e] != gf[~fin & ~nan_e]).any():
                return "output %d: infinities differ" % k, float("inf")
            if not fin.any():
                continue
            scale = max(1.0, float(np.abs(ef[fin]).max()))
            diff = np.abs(ef[fin] - gf[fin])
            if not np.isfinite(gf[fin]).all():
                return "output %d: non-finite values where finite expected" % k, float("inf")
            tol = 1e-4 * scale + 1e-4 * np.abs(ef[fin])
            md = float(diff.max())
            worst = md if worst is None else max(worst, md)
            if (diff > tol).any():
                return "output %d: max abs diff %.3g (scale %.3g)" % (k, md, scale), md
        else:
            if not np.array_equal(en, g):
                bad = int((en != g).sum())
                md = None
                if en.dtype.kind in "iu":
                    md = float(np.abs(en.astype(np.float64) - g.astype(np.float64)).max())
                return "output %d: %d of %d elements differ%s" % (
                    k, bad, en.size, "" if md is None else " (max diff %g)" % md), md
    return None, worst


def classify_onnxc(e):
    import onnxc
    if isinstance(e, onnxc.ConversionError):
        if e.returncode is None:
            msg = str(e.diagnostics or e)
            return BRIDGE, first_line(msg), None
        diags = e.diagnostics or str(e)
        ops = []
        for m in re.finditer(r"no decomposition for ([\w:.]+)", diags):
            if m.group(1) not in ops:
                ops.append(m.group(1))
        if ops:
            return NODECOMP, ops[0], ops
        for line in diags.splitlines():
            m = re.search(r"\berror: (.*)", line)
            if m:
                return ONNXC, first_line(m.group(1)), None
        return ONNXC, first_line(diags) or "onnxc exited %s" % e.returncode, None
    msg = "%s: %s" % (type(e).__name__, first_line(e))
    return BRIDGE, msg, None


def classify_peer(e):
    msg = "%s: %s" % (type(e).__name__, first_line(e))
    cause = e.__cause__ or e.__context__
    seen = 0
    while cause is not None and seen < 5:
        inner = "%s: %s" % (type(cause).__name__, first_line(cause))
        if first_line(cause):
            msg = inner
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return PEER, msg, None


def run_side(side, module, tensors, expected, path, emit, i, metadata_only):
    """The result dict of one exporter on one sample."""
    import onnxruntime as ort
    import torch
    res = {}
    emit({"ev": "phase", "i": i, "phase": "export"})
    t0 = time.perf_counter()
    try:
        if side == "onnxc":
            import onnxc
            onnxc.export(module, tuple(tensors), path)
        else:
            torch.onnx.export(module, tuple(tensors), path, dynamo=True)
    except Exception as e:
        kind, detail, ops = (classify_onnxc if side == "onnxc" else classify_peer)(e)
        res.update(status=kind, detail=detail, export_s=time.perf_counter() - t0)
        if ops:
            res["ops"] = ops
        return res
    res["export_s"] = round(time.perf_counter() - t0, 3)
    emit({"ev": "phase", "i": i, "phase": "ort"})
    try:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        feeds = {}
        inputs = sess.get_inputs()
        by_name = {"t%d" % k: t for k, t in enumerate(tensors)}
        for k, inp in enumerate(inputs):
            t = by_name.get(inp.name)
            if t is None:
                t = tensors[k]
            feeds[inp.name] = t.contiguous().numpy()
        got = sess.run(None, feeds)
    except Exception as e:
        res.update(status=RUNTIME, detail="%s: %s" % (type(e).__name__, first_line(
            str(e).replace(path, "MODEL.onnx"))))
        return res
    msg, worst = compare(expected, got, metadata_only)
    if worst is not None:
        res["max_diff"] = worst
    if msg:
        res.update(status=MISMATCH, detail=msg)
    else:
        res["status"] = PASS
    return res


def plain_samples(op):
    """The first MAX_SAMPLES samples with plain arguments, and how many were
    skipped before they were found."""
    import itertools
    import torch
    torch.manual_seed(0)
    found, skipped = [], []
    for sample in itertools.islice(op.sample_inputs("cpu", torch.float32), MAX_SCAN):
        try:
            make_module(op, sample)
        except NotPlain as e:
            skipped.append(str(e))
            continue
        found.append(sample)
        if len(found) == MAX_SAMPLES:
            break
    return found, skipped


def do_task(ops, task, emit, workdir):
    key, side, start = task["op"], task["side"], task.get("start", 0)
    op = ops[key]
    try:
        samples, skipped = plain_samples(op)
    except Exception as e:
        emit({"ev": "done", "n": 0, "skipped": [], "error": "sample_inputs: %s: %s"
              % (type(e).__name__, first_line(e))})
        return
    emit({"ev": "samples", "n": len(samples), "skipped": skipped})
    metadata_only = op.name in METADATA_ONLY
    for i in range(start, len(samples)):
        emit({"ev": "phase", "i": i, "phase": "eager"})
        res = {"i": i}
        try:
            module, tensors = make_module(op, samples[i])
            res["inputs"] = [[list(t.shape), str(t.dtype).replace("torch.", "")]
                             for t in tensors]
            expected = run_eager(module, tensors, 0)
            again = run_eager(module, tensors, 1)
            if not metadata_only and not same_outputs(expected, again):
                raise RuntimeError("output changes from run to run")
            rand = [] if metadata_only else random_ops(module, tensors)
            if rand:
                raise RuntimeError("random op (aten::%s)" % ", aten::".join(rand))
        except Exception as e:
            res.update(status=EAGER, detail="%s: %s" % (type(e).__name__, first_line(e)))
            emit(dict(res, ev="sample"))
            continue
        path = os.path.join(workdir, "%s_%d_%s.onnx" % (re.sub(r"\W", "_", key), i, side))
        try:
            res.update(run_side(side, module, tensors, expected, path, emit, i, metadata_only))
        except Exception as e:
            res.update(status=RUNTIME,
                       detail="sweep: %s: %s" % (type(e).__name__, first_line(e)))
        for f in (path, path + ".data"):
            try:
                os.remove(f)
            except OSError:
                pass
        emit(dict(res, ev="sample"))
    emit({"ev": "done"})


def worker_main():
    # The protocol goes to the original stdout; everything printed by torch,
    # the exporters or onnxc goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.path.insert(0, os.path.join(REPO, "python"))

    def emit(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()
    import torch
    torch.set_num_threads(1)
    import logging
    logging.disable(logging.WARNING)
    ops = {op_key(op): op for op in import_op_db()}
    workdir = tempfile.mkdtemp(prefix="opinfo-sweep.")
    emit({"ev": "ready"})
    for line in sys.stdin:
        task = json.loads(line)
        try:
            do_task(ops, task, emit, workdir)
        except Exception as e:
            emit({"ev": "done", "error": "sweep: %s: %s\n%s" % (
                type(e).__name__, first_line(e), traceback.format_exc(limit=3))})


# ---------------------------------------------------------------------------
# parent side

class Worker:
    def __init__(self, env, log):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log, env=env, start_new_session=True)
        self.buf = b""
        self.children_seen = set()

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def recv(self, deadline):
        """The next message, or None on timeout, or {"ev": "died"}."""
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            self.note_children()
            if not r:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                self.proc.wait()
                return {"ev": "died", "rc": self.proc.returncode}
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def note_children(self):
        """The names of the worker's child processes (onnxc, while it runs)."""
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                for pid in f.read().split():
                    with open("/proc/%s/comm" % pid) as c:
                        self.children_seen.add(c.read().strip())
        except OSError:
            pass

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()


def crash_result(side, phase, what, children):
    if phase == "eager":
        return EAGER, "eager PyTorch " + what
    if phase == "ort":
        return RUNTIME, "ONNX Runtime " + what
    if side != "onnxc":
        return PEER, "torch.onnx.export " + what
    if "onnxc" in children:
        return ONNXC, "onnxc " + what
    return BRIDGE, "trace " + what


def run_all(keys, sides, jobs, timeout, env, logdir, progress):
    """{op key: {"samples": n, "skipped": [...], side: [sample results]}}."""
    import queue
    tasks = queue.Queue()
    for key in keys:
        for side in sides:
            tasks.put({"op": key, "side": side, "start": 0})
    results = {k: {"samples": None, "skipped": [], "error": None,
                   **{s: [] for s in sides}} for k in keys}
    lock = threading.Lock()
    done_count = [0]
    fatal = []
    total = len(keys) * len(sides)
    startup = max(120.0, timeout)

    def slot(n):
        log = open(os.path.join(logdir, "worker%d.log" % n), "ab")
        w = None
        while not fatal:
            try:
                task = tasks.get_nowait()
            except queue.Empty:
                break
            if w is None:
                w = Worker(env, log)
                msg = w.recv(time.monotonic() + startup)
                if not msg or msg.get("ev") != "ready":
                    w.kill()
                    w = None
                    fatal.append("a worker did not start (see %s)" % log.name)
                    break
            w.children_seen = set()
            w.send(task)
            key, side = task["op"], task["side"]
            entry = results[key]
            phase, current = "samples", task["start"]
            deadline = time.monotonic() + timeout
            finished = False
            while not finished:
                msg = w.recv(deadline)
                if msg is None or msg["ev"] == "died":
                    what = ("timed out after %gs" % timeout if msg is None else
                            "crashed (exit %s)" % msg.get("rc"))
                    children = set(w.children_seen)
                    w.kill()
                    w = None
                    more = False
                    with lock:
                        if phase == "samples":
                            entry["error"] = "sample_inputs " + what
                        else:
                            kind, detail = crash_result(side, phase, what, children)
                            entry[side].append({"i": current, "status": kind, "detail": detail})
                            more = current + 1 < (entry["samples"] or 0)
                    if more:
                        tasks.put({"op": key, "side": side, "start": current + 1})
                    else:
                        finished = True
                    break
                ev = msg["ev"]
                if ev == "samples":
                    with lock:
                        entry["samples"] = msg["n"]
                        entry["skipped"] = msg["skipped"]
                elif ev == "phase":
                    phase, current = msg["phase"], msg["i"]
                    if phase == "eager":
                        deadline = time.monotonic() + timeout
                        w.children_seen = set()
                elif ev == "sample":
                    msg.pop("ev")
                    with lock:
                        entry[side].append(msg)
                elif ev == "done":
                    with lock:
                        if msg.get("error"):
                            entry["error"] = msg["error"]
                        if entry["samples"] is None:
                            entry["samples"] = msg.get("n", 0)
                    finished = True
            if finished:
                with lock:
                    done_count[0] += 1
                    if progress:
                        st = op_status(entry, side)
                        sys.stderr.write("[%d/%d] %-40s %-6s %s\n" % (
                            done_count[0], total, key, side, cell(st)[:100]))
                        sys.stderr.flush()
        if w is not None:
            w.proc.stdin.close()
            try:
                w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.kill()
        log.close()

    threads = [threading.Thread(target=slot, args=(n,), daemon=True) for n in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if fatal:
        sys.exit("opinfo_sweep: " + fatal[0])
    for entry in results.values():
        for side in sides:
            entry[side].sort(key=lambda r: r["i"])
    return results


def counted(entry, side):
    return [r for r in entry.get(side, []) if r["status"] != EAGER]


def op_status(entry, side):
    """(status, detail, sample) of an op on one side: pass when every
    counted sample passes, else the first failing sample's; None when no
    sample was counted."""
    rs = counted(entry, side)
    if not rs:
        return None
    for r in rs:
        if r["status"] != PASS:
            return r["status"], r.get("detail", ""), r
    return PASS, "", rs[0]


def norm_message(msg):
    """A message with the names and numbers that vary between ops blurred,
    to group failures of one cause."""
    s = short(msg)
    s = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", s)
    s = re.sub(r"%[\w.]+", "%…", s)
    s = re.sub(r"\b\d+(\.\d+)?(e-?\d+)?\b", "N", s)
    s = re.sub(r"\[[N, ]*\]", "[…]", s)
    return s[:300]


def group_key(status, detail, res):
    if status == NODECOMP:
        return detail
    if status == MISMATCH:
        return re.sub(r"max abs diff \S+ \(scale \S+\)", "values differ",
                      norm_message(detail.split(": ", 1)[-1]))
    return norm_message(detail)


def not_counted_reason(entry, side):
    """Why an op has no counted sample on a side."""
    for r in entry.get(side, []):
        if r["status"] == EAGER:
            return r.get("detail", "")
    if entry.get("error"):
        return entry["error"]
    if entry.get("skipped"):
        return "no plain sample (%s)" % entry["skipped"][0]
    return "no sample"


def short(detail):
    d = re.sub(r"^Fail: \[ONNXRuntimeError\] : \d+ : FAIL : (Load model from \S+ failed:)?",
               "ORT: ", detail)
    return re.sub(r"(/tmp|/var)/\S+?\.(onnx|fxir)\b", "MODEL", d)


def cell(st, entry=None, side=None):
    if st is None:
        if entry is None:
            return "n/a"
        d = not_counted_reason(entry, side).replace("|", "\\|").replace("`", "'")
        return "not counted: " + (d if len(d) <= 80 else d[:77] + "...")
    status, detail, res = st
    if status == PASS:
        return "pass"
    if status == NODECOMP:
        return "no decomposition: `%s`" % detail
    if status == MISMATCH and res.get("max_diff") is not None:
        return "mismatch (max diff %.3g)" % res["max_diff"]
    d = short(detail).replace("|", "\\|").replace("`", "'")
    if len(d) > 120:
        d = d[:117] + "..."
    return "%s: %s" % (status, d)


def summarize(results, sides):
    keys = sorted(results)
    per = {k: {s: op_status(results[k], s) for s in sides} for k in keys}
    have = [k for k in keys if all(per[k][s] is not None for s in sides)]
    out = {"ops": len(keys), "counted": len(have)}
    ok = {s: {k for k in have if per[k][s][0] == PASS} for s in sides}
    out["onnxc_pass"] = len(ok["onnxc"])
    if "peer" in sides:
        out["peer_pass"] = len(ok["peer"])
        out["both_pass"] = len(ok["onnxc"] & ok["peer"])
        out["onnxc_only"] = sorted(ok["onnxc"] - ok["peer"])
        out["peer_only"] = sorted(ok["peer"] - ok["onnxc"])
    out["not_counted"] = sorted(set(keys) - set(have))
    return per, out


def grouped(per, keys, side):
    """{status: {group: [op keys]}} of the ops in keys failing on side."""
    g = {}
    for k in keys:
        st = per[k][side]
        if st is None or st[0] == PASS:
            continue
        g.setdefault(st[0], {}).setdefault(group_key(*st), []).append(k)
    return g


def format_groups(g, indent=""):
    lines = []
    for status in sorted(g, key=lambda s: (ORDER.index(s) if s in ORDER else 99)):
        groups = g[status]
        n = sum(len(v) for v in groups.values())
        lines.append("%s%s (%d ops)" % (indent, status, n))
        for key, ops in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if status == NODECOMP:
                lines.append("%s  [%d] %s: %s" % (indent, len(ops), key, ", ".join(sorted(ops))))
            else:
                lines.append("%s  [%d] %s" % (indent, len(ops), key))
                lines.append("%s      %s" % (indent, ", ".join(sorted(ops))))
    return lines


def report_text(data):
    results, sides = data["results"], data["sides"]
    per, s = summarize(results, sides)
    lines = []
    w = max([len(k) for k in per] + [10])
    head = "%-*s  %-7s  %-50s" % (w, "op", "samples", "onnxc")
    if "peer" in sides:
        head += "  peer"
    lines.append(head)
    for k in sorted(per):
        e = results[k]
        n = "%d" % len(counted(e, "onnxc")) if e.get("samples") is not None else "-"
        row = "%-*s  %-7s  %-50s" % (w, k, n, cell(per[k]["onnxc"], e, "onnxc")[:50])
        if "peer" in sides:
            row += "  " + cell(per[k]["peer"], e, "peer")[:60]
        lines.append(row)
    lines.append("")
    lines += summary_lines(s, sides)
    if "peer" in sides:
        peer_ok_onnxc_fails = [k for k in per if per[k]["peer"] and per[k]["onnxc"]
                               and per[k]["peer"][0] == PASS and per[k]["onnxc"][0] != PASS]
        lines.append("")
        lines.append("ops the peer passes and onnxc fails (%d), by reason:"
                     % len(peer_ok_onnxc_fails))
        lines += format_groups(grouped(per, peer_ok_onnxc_fails, "onnxc"), "  ")
    return "\n".join(lines)


def summary_lines(s, sides):
    lines = ["ops: %d in the sweep, %d counted (at least one sample PyTorch runs "
             "deterministically)" % (s["ops"], s["counted"]),
             "passed by onnxc: %d / %d" % (s["onnxc_pass"], s["counted"])]
    if "peer" in sides:
        lines += ["passed by torch.onnx.export(dynamo=True): %d / %d" % (s["peer_pass"],
                                                                         s["counted"]),
                  "passed by both: %d" % s["both_pass"],
                  "onnxc only: %d%s" % (len(s["onnxc_only"]), (" (" + ", ".join(
                      s["onnxc_only"]) + ")") if s["onnxc_only"] else ""),
                  "peer only: %d" % len(s["peer_only"])]
    return lines


def failures_text(data):
    """The grouped failure reasons for onnxc, for whoever fixes them."""
    results, sides = data["results"], data["sides"]
    per, s = summarize(results, sides)
    lines = ["onnxc OpInfo sweep failures (bench/opinfo_sweep.py), run %s, onnxc %s, torch %s"
             % (data["date"], data["versions"].get("onnxc", "?"),
                data["versions"].get("torch", "?")), ""]
    lines += summary_lines(s, sides)
    if "peer" in sides:
        first = [k for k in per if per[k]["peer"] and per[k]["onnxc"]
                 and per[k]["peer"][0] == PASS and per[k]["onnxc"][0] != PASS]
        lines += ["", "== ops torch.onnx.export(dynamo=True) passes and onnxc fails (%d) =="
                  % len(first)]
        lines += format_groups(grouped(per, first, "onnxc"))
        rest = [k for k in per if per[k]["onnxc"] and per[k]["onnxc"][0] != PASS
                and k not in first]
        title = "== other onnxc failures (the peer fails too) (%d) ==" % len(rest)
    else:
        rest = [k for k in per if per[k]["onnxc"] and per[k]["onnxc"][0] != PASS]
        title = "== onnxc failures (%d) ==" % len(rest)
    lines += ["", title]
    lines += format_groups(grouped(per, rest, "onnxc"))
    # Missing decompositions over all samples (an op's later samples too).
    miss = {}
    for k, e in results.items():
        for r in e.get("onnxc", []):
            for a in r.get("ops", []):
                miss.setdefault(a, set()).add(k)
    if miss:
        lines += ["", "== missing decompositions, by aten op (any sample) =="]
        for a, ks in sorted(miss.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append("  [%d] %s: %s" % (len(ks), a, ", ".join(sorted(ks))))
    # Each failing sample in detail.
    lines += ["", "== failing samples (onnxc), with the inputs =="]
    for k in sorted(results):
        for r in results[k].get("onnxc", []):
            if r["status"] not in (PASS, EAGER):
                lines.append("  %s #%d %s: %s [%s]" % (
                    k, r["i"], r["status"], r.get("detail", ""),
                    "; ".join("%s %s" % (d, sh) for sh, d in r.get("inputs", []))))
    return "\n".join(lines) + "\n"


def markdown(data):
    results, sides = data["results"], data["sides"]
    per, s = summarize(results, sides)
    v = data["versions"]
    out = ["# OpInfo sweep: onnxc and torch.onnx.export(dynamo=True)", "",
           "Produced by `%s` (bench/opinfo_sweep.py; bench/README.md says what it measures)."
           % data["command"], "",
           "Run on %s, wall time %s with %d worker processes, on %s.  onnxc %s; torch %s, "
           "onnx %s, onnxruntime %s, onnxscript %s, Python %s." % (
               data["date"], fmt_secs(data["wall_s"]), data["jobs"], data.get("machine", "?"),
               v.get("onnxc"), v.get("torch"), v.get("onnx"), v.get("onnxruntime"),
               v.get("onnxscript"), v.get("python")), "",
           "Each op of PyTorch's OpInfo database with float32 support on the CPU, on its "
           "first %d sample inputs with plain arguments (tensors, scalars, lists), as a "
           "one-op module: exported by onnxc.export and by `torch.onnx.export(..., "
           "dynamo=True)`, run in ONNX Runtime (CPU), compared with eager PyTorch (floats: "
           "rtol 1e-4, atol 1e-4 x max(1, max |expected|); integers and booleans exactly; "
           "dtypes and shapes equal).  An op passes when all its samples pass; the cell "
           "shows the first failing sample's reason.  Ops with no sample PyTorch runs "
           "deterministically (random ops, errors) are not counted." % MAX_SAMPLES, "",
           "## Summary", ""]
    out += ["- " + l for l in summary_lines(s, sides)]
    if "peer" in sides:
        first = [k for k in per if per[k]["peer"] and per[k]["onnxc"]
                 and per[k]["peer"][0] == PASS and per[k]["onnxc"][0] != PASS]
        out += ["", "### Ops the peer passes and onnxc fails (%d), by reason" % len(first), ""]
        g = grouped(per, first, "onnxc")
        for status in sorted(g, key=lambda x: ORDER.index(x) if x in ORDER else 99):
            out.append("- **%s** (%d)" % (status, sum(len(x) for x in g[status].values())))
            for key, ops in sorted(g[status].items(), key=lambda kv: (-len(kv[1]), kv[0])):
                out.append("  - `%s`: %s" % (key.replace("`", "'"), ", ".join(sorted(ops))))
    out += ["", "## Per op", "",
            "| op | samples | onnxc | torch.onnx (dynamo) |" if "peer" in sides
            else "| op | samples | onnxc |",
            "|---|---|---|---|" if "peer" in sides else "|---|---|---|"]
    for k in sorted(per):
        e = results[k]
        n = str(len(counted(e, "onnxc"))) if e.get("samples") is not None else "-"
        row = "| %s | %s | %s |" % (k, n, cell(per[k]["onnxc"], e, "onnxc"))
        if "peer" in sides:
            row += " %s |" % cell(per[k]["peer"], e, "peer")
        out.append(row)
    return "\n".join(out) + "\n"


def fmt_secs(s):
    s = int(round(s or 0))
    return "%d min %02d s" % (s // 60, s % 60) if s >= 60 else "%d s" % s


def versions(onnxc_path):
    import importlib.metadata as md
    v = {"python": platform.python_version()}
    for name in ("torch", "onnx", "onnxruntime", "onnxscript", "numpy"):
        try:
            v[name] = md.version(name)
        except Exception:
            v[name] = "?"
    try:
        rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        import glob
        stamp = max(os.path.getmtime(f) for f in [onnxc_path] + glob.glob(
            os.path.join(os.path.dirname(onnxc_path), "decomps", "*.fxir")))
        built = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)
        v["onnxc"] = "%s built %s, tree at commit %s" % (
            os.path.relpath(onnxc_path, REPO) if onnxc_path.startswith(REPO) else onnxc_path,
            built.strftime("%Y-%m-%d %H:%M UTC"), rev)
    except Exception:
        v["onnxc"] = onnxc_path
    return v


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker_main()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="pattern", action="append",
                    help="op name glob (op or op.variant), may repeat")
    ap.add_argument("--limit", type=int, help="only the first N ops (after -k)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (2)")
    ap.add_argument("--no-peer", action="store_true", help="onnxc only")
    ap.add_argument("--onnxc", help="the onnxc binary ($ONNXC, else build/onnxc)")
    ap.add_argument("--timeout", type=float, default=180,
                    help="seconds per sample and exporter (180)")
    ap.add_argument("--markdown", help="write the table as markdown here")
    ap.add_argument("--json", help="write every result as JSON here")
    ap.add_argument("--failures", help="write onnxc's failures grouped by reason here")
    ap.add_argument("--from-json", help="no run: report a JSON file an earlier run wrote")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    a = ap.parse_args()

    if a.from_json:
        with open(a.from_json) as f:
            data = json.load(f)
    else:
        onnxc_path = a.onnxc or os.environ.get("ONNXC") or os.path.join(REPO, "build", "onnxc")
        if os.path.isdir(onnxc_path):
            onnxc_path = os.path.join(onnxc_path, "onnxc")
        onnxc_path = os.path.abspath(onnxc_path)
        if not os.access(onnxc_path, os.X_OK):
            sys.exit("opinfo_sweep: no onnxc binary at %s (build it, or give --onnxc)"
                     % onnxc_path)
        import torch
        op_db = import_op_db()
        keys = []
        for op in op_db:
            k = op_key(op)
            if a.pattern and not any(fnmatch.fnmatchcase(k, p) or
                                     fnmatch.fnmatchcase(op.name, p) for p in a.pattern):
                continue
            if torch.float32 not in op.supported_dtypes("cpu"):
                continue
            if k not in keys:
                keys.append(k)
        if a.limit:
            keys = keys[:a.limit]
        if not keys:
            sys.exit("opinfo_sweep: no op matches")
        sides = ["onnxc"] + ([] if a.no_peer else ["peer"])
        env = dict(os.environ, ONNXC=onnxc_path, OMP_NUM_THREADS="1",
                   PYTHONWARNINGS="ignore")
        logdir = tempfile.mkdtemp(prefix="opinfo-logs.")
        sys.stderr.write("opinfo_sweep: %d ops, %s, %d workers (logs in %s)\n"
                         % (len(keys), " and ".join(sides), a.jobs, logdir))
        date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        t0 = time.monotonic()
        results = run_all(keys, sides, a.jobs, a.timeout, env, logdir, not a.quiet)
        wall = time.monotonic() - t0
        data = {"command": "bench/opinfo_sweep.py " + " ".join(sys.argv[1:]),
                "date": date, "wall_s": round(wall, 1), "jobs": a.jobs,
                "machine": "%d cores" % os.cpu_count(),
                "timeout_s": a.timeout, "versions": versions(onnxc_path), "sides": sides,
                "results": results}
        data["summary"] = summarize(results, sides)[1]
    print(report_text(data))
    if not a.from_json:
        print("wall time: %s" % fmt_secs(data["wall_s"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(data, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(data))
    if a.failures:
        with open(a.failures, "w") as f:
            f.write(failures_text(data))


if __name__ == "__main__":
    main()
