#!/usr/bin/env python3
"""Run ONNX models in ONNX Runtime (the onnxruntime Python package).

    import ortlib
    outs = ortlib.run("model.onnx", {"x": np.ones((2, 3), np.float32)})

Where this Python has onnxruntime (the torch 2.x environment), runs are
in-process.  Where it has not (Debian's python3, the torch 1.13 lane), one
long-lived server process -- `ortlib.py --server` under a Python that has
it, by default the torch 2.x environment's (ort_python()) -- serves all runs
of a Runner; tensors go to it and back as .npy files in a private temporary
directory, one JSON job a line on its stdin, one JSON answer a line on its
stdout.  Either way sessions run on the CPU with graph optimizations
disabled (the model runs as written), one thread, and the last few stay
open.  With check=True (Runner(check=True), or run(..., check=True); the
command line's default) each file is checked before its first run with the
onnx package of that Python (onnx.checker with full_check: the checker and
strict shape inference at the file's opsets), and a file that fails is an
OrtError ("check: ...").

Command line (for lit's %ort_run; --no-check skips the check):

    ortlib.py MODEL.onnx [--random] [--seed N] [--show N] [--digits N]

feeds zero-filled (or random) inputs of the declared shapes, symbolic dims
set to 1, and prints each input's name, type and shape, and each output's
name, type, shape and first N values (floats to --digits significant
digits, default 6).  Under a Python without onnxruntime it runs itself again
under ort_python().
"""

import atexit
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE_MAX = 4


class OrtError(Exception):
    """The runtime refused the model or failed to run it, or the server died."""


def ort_python():
    """The Python that has onnxruntime: $ONNXC_ORT_PYTHON, else the torch
    2.x environment's ($ONNXC_VENV, default ~/.cache/onnxc/venv-torch2)."""
    env = os.environ.get("ONNXC_ORT_PYTHON")
    if env:
        return env
    venv = os.environ.get("ONNXC_VENV") or os.path.join(
        os.path.expanduser("~"), ".cache", "onnxc", "venv-torch2")
    return os.path.join(venv, "bin", "python")


def _have_ort():
    try:
        import onnxruntime  # noqa: F401
        return True
    except ImportError:
        return False


def _strings_in(arr):
    """ONNX Runtime takes string tensors as object arrays of str."""
    if arr.dtype.kind in "US":
        return np.array([v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)
                         for v in arr.reshape(-1)], dtype=object).reshape(arr.shape)
    return arr


def check_model(model):
    """onnx.checker.check_model(full_check=True) on the file: raises
    OrtError("check: ...") when it fails."""
    import onnx
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:   # ValidationError, InferenceError, a file it cannot read
        raise OrtError("check: %s" % _one_line(e)) from None


class _Sessions:
    """The last CACHE_MAX sessions, keyed by path, mtime and size; each
    file checked (check_model) before its first session when `check`."""

    def __init__(self, check=False):
        self.cache = {}
        self.check = check

    def get(self, model, check=None):
        import onnxruntime as ort
        st = os.stat(model)
        key = (os.path.abspath(model), st.st_mtime_ns, st.st_size)
        s = self.cache.pop(key, None)
        if s is None:
            if self.check if check is None else check:
                check_model(model)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            so.intra_op_num_threads = 1
            so.inter_op_num_threads = 1
            so.log_severity_level = 3
            try:
                s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            except Exception as e:
                raise OrtError("load: %s" % _one_line(e)) from None
        self.cache[key] = s
        while len(self.cache) > CACHE_MAX:
            self.cache.pop(next(iter(self.cache)))
        return s

    def run(self, model, inputs, outputs=None, check=None):
        s = self.get(model, check)
        names = list(outputs) if outputs else [o.name for o in s.get_outputs()]
        feeds = {k: _strings_in(np.asarray(v)) for k, v in inputs.items()}
        try:
            res = s.run(names, feeds)
        except Exception as e:
            self.cache = {k: v for k, v in self.cache.items() if v is not s}
            raise OrtError("run: %s" % _one_line(e)) from None
        return dict(zip(names, res))


def _one_line(e):
    return " ".join(str(e).split())


class Runner:
    """Runs models in ONNX Runtime: in-process where onnxruntime imports,
    else through a server under ort_python(), started on first use and
    restarted after a crash (`timeout` bounds one run there)."""

    def __init__(self, timeout=300.0, python=None, check=False):
        self.timeout = timeout
        self.python = python
        self.check = check
        self.local = _Sessions(check) if python is None and _have_ort() else None
        self.proc = None
        self.tmp = None
        self.errlog = None
        self.count = 0

    # ---- the server process ----

    def _start(self):
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="ortlib-")
        py = self.python or ort_python()
        self.errlog = open(os.path.join(self.tmp, "stderr.log"), "w+b")
        try:
            self.proc = subprocess.Popen(
                [py, os.path.abspath(__file__), "--server"],
                env=dict(os.environ, ORTLIB_REEXEC="1"), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self.errlog, cwd=HERE)
        except OSError as e:
            raise OrtError("cannot start the ONNX Runtime server under %s: %s (run "
                           "utils/install-deps.sh, or set ONNXC_ORT_PYTHON)" % (py, e))

    def _stderr_tail(self):
        if self.errlog is None:
            return ""
        try:
            self.errlog.flush()
            self.errlog.seek(0)
            data = self.errlog.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        lines = [l for l in data.splitlines() if l.strip()]
        return " | ".join(lines[-3:])

    def _kill(self):
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.proc = None
        if self.errlog is not None:
            self.errlog.close()
            self.errlog = None

    def _readline(self):
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], self.timeout)
        if not ready:
            self._kill()
            raise OrtError("ONNX Runtime server timed out after %gs" % self.timeout)
        line = self.proc.stdout.readline()
        if not line:
            tail = self._stderr_tail()
            code = self.proc.wait()
            self._kill()
            raise OrtError("ONNX Runtime server died (exit %s)%s"
                           % (code, ": " + tail if tail else ""))
        return line

    def _remote(self, model, inputs, outputs, check):
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._start()
        self.count += 1
        jobdir = os.path.join(self.tmp, "job%d" % self.count)
        os.makedirs(jobdir)
        try:
            specs = []
            for i, (name, value) in enumerate(inputs.items()):
                arr = np.asarray(value)
                if arr.dtype.kind == "O":
                    arr = arr.astype(str)
                path = os.path.join(jobdir, "in%d.npy" % i)
                np.save(path, arr, allow_pickle=False)
                specs.append({"name": name, "file": path})
            job = {"model": os.path.abspath(model), "inputs": specs, "outdir": jobdir,
                   "check": self.check if check is None else check}
            if outputs:
                job["outputs"] = list(outputs)
            try:
                self.proc.stdin.write((json.dumps(job) + "\n").encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                tail = self._stderr_tail()
                self._kill()
                raise OrtError("ONNX Runtime server died%s" % (": " + tail if tail else ""))
            answer = json.loads(self._readline())
            if not answer.get("ok"):
                raise OrtError(answer.get("error", "unknown error"))
            result = {}
            for o in answer["outputs"]:
                arr = np.load(o["file"], allow_pickle=False)
                result[o["name"]] = arr.astype(object) if arr.dtype.kind == "U" else arr
            return result
        finally:
            shutil.rmtree(jobdir, ignore_errors=True)

    # ---- the API ----

    def check_file(self, model):
        """check_model(model) under the Runner's Python: raises OrtError
        ("check: ...") when the file fails onnx's checker."""
        if self.local is not None:
            return check_model(model)
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._start()
        try:
            self.proc.stdin.write((json.dumps({"check_only": os.path.abspath(model)}) + "\n")
                                  .encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._kill()
            raise OrtError("ONNX Runtime server died")
        answer = json.loads(self._readline())
        if not answer.get("ok"):
            raise OrtError(answer.get("error", "unknown error"))

    def run(self, model, inputs, outputs=None, check=None):
        """Run `model` on {name: array}; return {output name: array} in model
        order (or in the order of `outputs`).  `check` overrides the
        Runner's for this file."""
        if self.local is not None:
            return self.local.run(model, inputs, outputs, check)
        return self._remote(model, inputs, outputs, check)

    def close(self):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_default = None


def run(model, inputs, outputs=None, check=None):
    """Run `model` with the module's shared Runner."""
    global _default
    if _default is None:
        _default = Runner()
        atexit.register(_default.close)
    return _default.run(model, inputs, outputs, check)


# ---- the server (under a Python with onnxruntime) ----

def serve(stdin=sys.stdin, stdout=sys.stdout):
    sessions = _Sessions()
    for line in stdin:
        if not line.strip():
            continue
        try:
            job = json.loads(line)
            if "check_only" in job:
                check_model(job["check_only"])
                stdout.write(json.dumps({"ok": True}) + "\n")
                stdout.flush()
                continue
            inputs = {i["name"]: np.load(i["file"], allow_pickle=False) for i in job["inputs"]}
            res = sessions.run(job["model"], inputs, job.get("outputs"),
                               bool(job.get("check", False)))
            outs = []
            for k, (name, arr) in enumerate(res.items()):
                arr = np.asarray(arr)
                if arr.dtype.kind == "O":
                    arr = arr.astype(str)
                path = os.path.join(job["outdir"], "out%d.npy" % k)
                np.save(path, arr, allow_pickle=False)
                outs.append({"name": name, "file": path})
            answer = {"ok": True, "outputs": outs}
        except Exception as e:   # every failure is an answer; the server lives on
            answer = {"ok": False, "error": _one_line(e)}
        stdout.write(json.dumps(answer) + "\n")
        stdout.flush()


# ---- the command line ----

_NP_OF = {"float": np.float32, "double": np.float64, "float16": np.float16,
          "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
          "bool": np.bool_}


def _onnx_type(ort_type):
    """ONNX Runtime's 'tensor(float)' -> 'float'."""
    return ort_type[len("tensor("):-1] if ort_type.startswith("tensor(") else ort_type


def _fill(meta, random, rng):
    dims = [d if isinstance(d, int) and d >= 0 else 1 for d in meta.shape]
    t = _onnx_type(meta.type)
    if t == "string":
        return np.full(dims, "a" if random else "", dtype=object)
    if t not in _NP_OF:
        raise OrtError("input %s has unsupported type %s" % (meta.name, meta.type))
    dt = np.dtype(_NP_OF[t])
    if not random:
        return np.zeros(dims, dt)
    r = rng.random(dims)
    if dt.kind == "f":
        return (np.ones(dims) if dt == np.float16 else r * 2 - 1).astype(dt)
    if dt.kind == "b":
        return r >= 0.5
    return np.floor(r * 10).astype(dt)


def _show(arr, count, digits):
    flat = np.asarray(arr).reshape(-1)
    out = []
    for v in flat[:count]:
        if isinstance(v, str):
            out.append(json.dumps(v))
        elif isinstance(v, (bool, np.bool_)):
            out.append("1" if v else "0")
        elif isinstance(v, (np.floating, float)):
            f = float(v)
            if f != f:
                out.append("NaN")
            elif f in (float("inf"), float("-inf")):
                out.append("Infinity" if f > 0 else "-Infinity")
            else:
                f = float("%.*g" % (digits, f))
                out.append(str(int(f)) if f.is_integer() else repr(f))
        else:
            out.append(str(int(v)))
    return "[" + ", ".join(out) + (", ..." if flat.size > count else "") + "]"


def cli(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="ortlib.py", description="Run a model in ONNX Runtime "
                                 "on zero or random inputs and print its outputs.")
    ap.add_argument("model")
    ap.add_argument("--random", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--show", type=int, default=8)
    ap.add_argument("--digits", type=int, default=6)
    ap.add_argument("--no-check", action="store_true",
                    help="do not check the file with onnx.checker first")
    a = ap.parse_args(argv)
    sessions = _Sessions(check=not a.no_check)   # lit's files are checked
    s = sessions.get(a.model)
    rng = np.random.default_rng(a.seed)
    feeds = {}
    for meta in s.get_inputs():
        feeds[meta.name] = _fill(meta, a.random, rng)
        print("input  %s: %s[%s] %s" % (meta.name, _onnx_type(meta.type),
                                        ",".join(str(d) for d in feeds[meta.name].shape),
                                        "random" if a.random else "zeros"))
    res = sessions.run(a.model, feeds)
    types = {o.name: _onnx_type(o.type) for o in s.get_outputs()}
    for name, arr in res.items():
        print("output %s: %s[%s] %s" % (name, types[name], ",".join(str(d) for d in arr.shape),
                                        _show(arr, a.show, a.digits)))
    return 0


def main(argv):
    if not _have_ort():
        py = ort_python()
        if os.environ.get("ORTLIB_REEXEC") or not os.access(py, os.X_OK):
            print("ortlib.py: no onnxruntime in %s nor in %s (run utils/install-deps.sh, or set "
                  "ONNXC_ORT_PYTHON)" % (sys.executable, py), file=sys.stderr)
            return 2
        os.environ["ORTLIB_REEXEC"] = "1"    # once: no loop when py lacks it too
        os.execv(py, [py, os.path.abspath(__file__)] + argv)
    if argv in ([], ["--server"]):
        serve()
        return 0
    try:
        return cli(argv)
    except OrtError as e:
        print("ortlib.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
