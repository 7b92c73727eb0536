"""Run ONNX models in ONNX Runtime from Python, through utils/ort_run.js.

One long-lived `node utils/ort_run.js` process serves all runs of a Runner, so a
test harness pays node's start-up once. Tensors go through raw files in a
private temporary directory.

    import ortlib
    outs = ortlib.run("model.onnx", {"x": np.ones((2, 3), np.float32)})

Needs numpy (use /usr/bin/python3 on Debian) and the onnxruntime-node package
under utils/node (utils/install-deps.sh installs it).
"""

import atexit
import json
import os
import select
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER_JS = os.path.join(HERE, "ort_run.js")

# numpy dtype -> ONNX element type name, and back.
_NP_TO_ONNX = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.float16): "float16",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.bool_): "bool",
}
_ONNX_TO_NP = {v: k for k, v in _NP_TO_ONNX.items()}


class OrtError(Exception):
    """The runtime refused the model or failed to run it, or the runner died."""


def onnx_dtype(arr):
    """The ONNX element type name of a numpy array."""
    if arr.dtype.kind in "USO":
        return "string"
    dt = arr.dtype.newbyteorder("=")
    if dt not in _NP_TO_ONNX:
        raise OrtError("unsupported numpy dtype %s" % arr.dtype)
    return _NP_TO_ONNX[dt]


def numpy_dtype(name):
    """The numpy dtype of an ONNX element type name ("float", "int64", ...)."""
    if name == "string":
        return np.dtype(object)
    if name not in _ONNX_TO_NP:
        raise OrtError("unsupported ONNX dtype %s" % name)
    return _ONNX_TO_NP[name]


def _as_str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="surrogateescape")
    return str(v)


class Runner:
    """A node process running ort_run.js; start on first use, restart after a crash."""

    def __init__(self, node="node", timeout=300.0):
        self.node = node
        self.timeout = timeout
        self.proc = None
        self.tmp = None
        self.errlog = None
        self.count = 0

    def _start(self):
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="ortlib-")
        self.errlog = open(os.path.join(self.tmp, "stderr.log"), "w+b")
        try:
            self.proc = subprocess.Popen(
                [self.node, RUNNER_JS, "--server"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog,
                cwd=HERE)
        except OSError as e:
            raise OrtError("cannot start %s: %s" % (self.node, e))

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
        out = self.proc.stdout
        fd = out.fileno()
        ready, _, _ = select.select([fd], [], [], self.timeout)
        if not ready:
            self._kill()
            raise OrtError("runner timed out after %gs" % self.timeout)
        line = out.readline()
        if not line:
            tail = self._stderr_tail()
            code = self.proc.wait()
            self._kill()
            raise OrtError("runner died (exit %s)%s" % (code, ": " + tail if tail else ""))
        return line

    def _write_inputs(self, jobdir, inputs):
        specs = []
        for i, (name, value) in enumerate(inputs.items()):
            arr = np.asarray(value)
            dtype = onnx_dtype(arr)
            spec = {"name": name, "dtype": dtype, "dims": [int(d) for d in arr.shape]}
            if dtype == "string":
                spec["strings"] = [_as_str(v) for v in arr.reshape(-1)]
            else:
                le = np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<"))
                path = os.path.join(jobdir, "in%d.bin" % i)
                le.tofile(path)
                spec["file"] = path
            specs.append(spec)
        return specs

    @staticmethod
    def _read_output(o):
        dims = tuple(int(d) for d in o["dims"])
        if o["dtype"] == "string":
            arr = np.array(o.get("strings", []), dtype=object)
            return arr.reshape(dims)
        dt = numpy_dtype(o["dtype"]).newbyteorder("<")
        arr = np.fromfile(o["file"], dtype=dt)
        return arr.astype(dt.newbyteorder("="), copy=False).reshape(dims)

    def run(self, model, inputs, outputs=None):
        """Run `model` on {name: array}; return {output name: array} in model order."""
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._start()
        self.count += 1
        jobdir = os.path.join(self.tmp, "job%d" % self.count)
        os.makedirs(jobdir)
        try:
            job = {"model": os.path.abspath(model),
                   "inputs": self._write_inputs(jobdir, inputs),
                   "outdir": jobdir}
            if outputs:
                job["outputs"] = list(outputs)
            try:
                self.proc.stdin.write((json.dumps(job) + "\n").encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                tail = self._stderr_tail()
                self._kill()
                raise OrtError("runner died%s" % (": " + tail if tail else ""))
            answer = json.loads(self._readline())
            if not answer.get("ok"):
                raise OrtError(answer.get("error", "unknown error"))
            return {o["name"]: self._read_output(o) for o in answer["outputs"]}
        finally:
            shutil.rmtree(jobdir, ignore_errors=True)

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


def run(model, inputs, outputs=None):
    """Run `model` with the module's shared Runner."""
    global _default
    if _default is None:
        _default = Runner()
        atexit.register(_default.close)
    return _default.run(model, inputs, outputs)
