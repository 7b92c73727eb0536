#!/usr/bin/env python3
"""Inference latency of ONNX models in ONNX Runtime, as a user runs them:
the onnxruntime Python package, the CPU execution provider with its default
graph optimizations, one thread.

    python bench/bench_ort.py [--runs N] [--warmup N] [--budget SECONDS]
                              [--inputs SPEC.json] [--outdir DIR] [--json] [--no-optimize]
                              A.onnx [B.onnx ...]

Feeds random inputs of the declared shapes (symbolic dims set to 1), runs
each model --warmup times (default 3) to warm up, then N times (default 30)
in turn, A B, B A, A B, ... (the order reverses every round), and prints
each model's median and min latency in ms, and each model's median against
the first one's.

--inputs SPEC.json feeds every model the same saved tensors instead: a JSON
    array of {"name", "dtype", "dims", "file"} (raw little-endian row-major
    data; dtype an ONNX element type name, "float", "int64", ...; file
    relative to the JSON file's directory).  Each model takes the inputs it
    declares, by name.
--outdir DIR writes each model's outputs of its last timed run to DIR.
--budget SECONDS caps the timed runs so that they take about that long
    (estimated from the last warm-up round), but never fewer than 10.
--sample-ms MS makes each timed run of a fast model a batch of K
    inferences, K the same for every model and chosen from the last warm-up
    round so that a round takes about MS; times are per inference (the
    batch's time / K), so one preemption of the process weighs less.
--no-optimize runs the models with ONNX Runtime's graph optimizations off.
--json prints one JSON object instead of the text lines:
    {"runs", "warmup", "batch", "models": [{"model", "times": [ms, ...], "median",
     "min", "outputs": [{"name", "dtype", "dims", "file"}]}]}
    where times[i] of every model belong to the same round i.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import onnxruntime as ort

# ONNX element type names <-> numpy dtypes.
NP_OF = {"float": np.float32, "double": np.float64, "float16": np.float16,
         "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
         "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
         "bool": np.bool_}
ONNX_OF = {np.dtype(v): k for k, v in NP_OF.items()}


def onnx_type(ort_type):
    """ONNX Runtime's 'tensor(float)' -> 'float'."""
    return ort_type[len("tensor("):-1] if ort_type.startswith("tensor(") else ort_type


def random_feeds(session, rng):
    out = {}
    for meta in session.get_inputs():
        dims = [d if isinstance(d, int) and d > 0 else 1 for d in meta.shape]
        dt = np.dtype(NP_OF.get(onnx_type(meta.type), np.float32))
        out[meta.name] = (rng.random(dims).astype(dt) if dt.kind == "f"
                          else np.zeros(dims, dt))
    return out


def saved_tensors(spec_file):
    with open(spec_file) as f:
        specs = json.load(f)
    base = os.path.dirname(spec_file)
    out = {}
    for sp in specs:
        if sp["dtype"] not in NP_OF:
            raise SystemExit("input %s: unsupported dtype %s" % (sp["name"], sp["dtype"]))
        dt = np.dtype(NP_OF[sp["dtype"]]).newbyteorder("<")
        data = (np.fromfile(os.path.join(base, sp["file"]), dtype=dt) if sp.get("file")
                else np.zeros(0, dt))
        dims = sp.get("dims") or []
        if data.size != math.prod(dims):
            raise SystemExit("input %s: %d elements for dims %s" % (sp["name"], data.size, dims))
        out[sp["name"]] = data.astype(dt.newbyteorder("="), copy=False).reshape(dims)
    return out


def saved_feeds(session, saved, model):
    out = {}
    for meta in session.get_inputs():
        if meta.name not in saved:
            raise SystemExit("%s: input %s is not in the --inputs file" % (model, meta.name))
        out[meta.name] = saved[meta.name]
    return out


def write_outputs(res, names, outdir, tag):
    out = []
    for k, (name, arr) in enumerate(zip(names, res)):
        arr = np.asarray(arr)
        v = {"name": name, "dims": [int(d) for d in arr.shape]}
        if arr.dtype.kind in "OUS":
            v.update(dtype="string", strings=[str(s) for s in arr.reshape(-1)])
        else:
            v["dtype"] = ONNX_OF[arr.dtype]
            v["file"] = os.path.join(outdir, "%s_%d.bin" % (tag, k))
            np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("<")).tofile(v["file"])
        out.append(v)
    return out


def median(v):
    return sorted(v)[len(v) // 2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", metavar="MODEL.onnx")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0)
    ap.add_argument("--sample-ms", type=float, default=0)
    ap.add_argument("--inputs")
    ap.add_argument("--outdir")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-optimize", action="store_true")
    a = ap.parse_args(argv)
    if a.runs < 1 or a.warmup < 1:
        ap.error("--runs and --warmup must be at least 1")
    saved = saved_tensors(a.inputs) if a.inputs else None
    rng = np.random.default_rng()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if a.no_optimize
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    sessions = []
    for m in a.models:
        s = ort.InferenceSession(m, so, providers=["CPUExecutionProvider"])
        sessions.append({"model": m, "s": s, "times": [],
                         "feeds": saved_feeds(s, saved, m) if saved else random_feeds(s, rng)})
    round_ms = 0.0
    for _ in range(a.warmup):
        round_ms = 0.0
        for x in sessions:
            t0 = time.perf_counter_ns()
            x["s"].run(None, x["feeds"])
            round_ms += (time.perf_counter_ns() - t0) / 1e6
    batch = max(1, math.ceil(a.sample_ms / round_ms)) if a.sample_ms > 0 and round_ms > 0 else 1
    if batch > 1:      # warm up as many inferences as a timed run does
        for x in sessions:
            for _ in range(batch):
                x["s"].run(None, x["feeds"])
    runs = a.runs
    if a.budget > 0 and round_ms > 0:
        runs = max(min(runs, 10), min(runs, int(a.budget * 1000 // (round_ms * batch))))
    last = [None] * len(sessions)
    # Odd rounds run the models in reverse order (A B, B A, A B, ...): no
    # model always runs first, or always right after another one.
    for r in range(runs):
        order = range(len(sessions)) if r % 2 == 0 else reversed(range(len(sessions)))
        for i in order:
            x = sessions[i]
            t0 = time.perf_counter_ns()
            for _ in range(batch):
                res = x["s"].run(None, x["feeds"])
            x["times"].append((time.perf_counter_ns() - t0) / 1e6 / batch)
            last[i] = res
    if a.outdir:
        os.makedirs(a.outdir, exist_ok=True)

    def outputs(i):
        names = [o.name for o in sessions[i]["s"].get_outputs()]
        return write_outputs(last[i], names, a.outdir, "m%d" % i) if a.outdir else []

    if a.json:
        print(json.dumps({"runs": runs, "warmup": a.warmup, "batch": batch, "models": [
            {"model": x["model"], "times": x["times"], "median": median(x["times"]),
             "min": min(x["times"]), "outputs": outputs(i)} for i, x in enumerate(sessions)]}))
        return 0
    for i in range(len(sessions)):
        outputs(i)
    base = median(sessions[0]["times"])
    if batch > 1:
        print("(%d inferences a timed run)" % batch)
    for x in sessions:
        print("%s\tmedian %.3f ms\tmin %.3f ms\tx%.3f" % (
            os.path.basename(x["model"]), median(x["times"]), min(x["times"]),
            median(x["times"]) / base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
