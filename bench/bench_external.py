#!/usr/bin/python3
"""bench_external.py - peak memory of onnxc on a multi-GB .onnx with external data.

    /usr/bin/python3 bench/bench_external.py [--gb 2.5] [--tensors 10] [--onnxc PATH ...] [--keep DIR]

Writes, in a temporary directory (removed at the end unless --keep), a
model `big.onnx` whose initializers (--tensors f32 vectors of random
normal values, --gb gigabytes in all) live in `big.onnx.data`, written a
tensor at a time so this script never holds more than one.  The graph is
y = x + w0 + w1 + ...  Then, for every --onnxc binary given (default
build/onnxc), it runs

    onnxc big.onnx -O2 -o out.onnx -external-data=out.data

under /usr/bin/time -v and prints wall time, peak RSS, peak RSS against
the largest tensor and the total, and whether out.data holds the same
bytes (tensor by tensor, read back through the offsets and lengths
out.onnx names).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_model(d, gb, ntensors):
    n = int(gb * (1 << 30) / 4 / ntensors)
    rng = np.random.default_rng(0)
    inits, offset = [], 0
    with open(os.path.join(d, "big.onnx.data"), "wb") as f:
        for i in range(ntensors):
            a = rng.standard_normal(n, dtype=np.float32)
            f.write(a.tobytes())
            del a
            t = TensorProto(name="w%d" % i, data_type=TensorProto.FLOAT, dims=[n])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "big.onnx.data"), ("offset", str(offset)), ("length", str(4 * n))):
                e = t.external_data.add()
                e.key, e.value = k, v
            offset += 4 * n
            inits.append(t)
    nodes, prev = [], "x"
    for i in range(ntensors):
        out = "y" if i == ntensors - 1 else "s%d" % i
        nodes.append(helper.make_node("Add", [prev, "w%d" % i], [out]))
        prev = out
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    with open(os.path.join(d, "big.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    return n * 4, offset


def read_tensors(path):
    """(name, location, offset, length) of each external initializer."""
    m = onnx.load(path, load_external_data=False)
    out = []
    for t in m.graph.initializer:
        kv = {e.key: e.value for e in t.external_data}
        out.append((t.name, kv.get("location"), int(kv.get("offset", 0)), int(kv["length"])))
    return out


def same_bytes(d, a, b):
    ta, tb = read_tensors(os.path.join(d, a)), read_tensors(os.path.join(d, b))
    if [(t[0], t[3]) for t in ta] != [(t[0], t[3]) for t in tb]:
        return False
    for (_, la, oa, n), (_, lb, ob, _) in zip(ta, tb):
        with open(os.path.join(d, la), "rb") as fa, open(os.path.join(d, lb), "rb") as fb:
            fa.seek(oa)
            fb.seek(ob)
            left = n
            while left:
                c = min(left, 64 << 20)
                if fa.read(c) != fb.read(c):
                    return False
                left -= c
    return True


def timed(cmd):
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))
    f = {}
    for line in r.stderr.splitlines():
        k, _, v = line.strip().rpartition(": ")
        f[k] = v
    wall = f["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    secs = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    return secs, int(f["Maximum resident set size (kbytes)"]) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=2.5)
    ap.add_argument("--tensors", type=int, default=10)
    ap.add_argument("--onnxc", action="append")
    ap.add_argument("--keep")
    a = ap.parse_args()
    binaries = a.onnxc or [os.path.join(REPO, "build", "onnxc")]
    d = a.keep or tempfile.mkdtemp(prefix="bench_external.")
    os.makedirs(d, exist_ok=True)
    try:
        largest, total = make_model(d, a.gb, a.tensors)
        print("model: %d initializers, %.0f MB of external data, largest %.0f MB" %
              (a.tensors, total / 1e6, largest / 1e6))
        print("| onnxc | wall | peak RSS | RSS / largest tensor | RSS / weights | bytes equal |")
        print("|---|---|---|---|---|---|")
        for b in binaries:
            for f in ("out.onnx", "out.data"):
                if os.path.exists(os.path.join(d, f)):
                    os.unlink(os.path.join(d, f))
            secs, rss = timed([b, os.path.join(d, "big.onnx"), "-O2", "-o", os.path.join(d, "out.onnx"),
                               "-external-data=out.data"])
            print("| %s | %.2f s | %.1f MB | %.3f | %.3f | %s |" %
                  (b, secs, rss / 1e6, rss / largest, rss / total, same_bytes(d, "big.onnx", "out.onnx")))
            sys.stdout.flush()
    finally:
        if not a.keep:
            shutil.rmtree(d)


if __name__ == "__main__":
    main()
