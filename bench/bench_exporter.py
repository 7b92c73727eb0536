#!/usr/bin/python3
"""onnxc -O2 against PyTorch's exporter on the end-to-end zoo.

On torch 2.x (the virtual environment's Python) this runs bench_modern.py
instead: onnxc against torch.onnx.export(dynamo=True) on the modern zoo
(its docstring and --help).  What follows is the torch 1.13 lane, against
the TorchScript exporter.

For every model of test/e2e/models.py (same builders, same weights, same
BatchNorm statistics, same example inputs):

1. torch.onnx.export (the TorchScript exporter: opset 17,
   do_constant_folding=True, eval mode), timed;
2. utils/fxir_export.py then `onnxc -O2`, each timed;
3. node count (main graph; nodes of local functions and subgraphs are
   counted too and shown after a +) and file size (with external data) of
   both files;
4. both models in ONNX Runtime (bench/bench_ort.py: CPU, default graph
   optimizations, 1 intra-op and 1 inter-op thread) in one process, on the
   same saved inputs, interleaved A B, B A, ... after warm-up (a fast
   model's timed run is a batch of inferences lasting about --sample-ms,
   the same batch for both), the runs split among --procs processes (4),
   every other one loading the exporter's file first: one process's
   medians move by several percent with where its sessions land in memory
   (densenet121's ratio 0.96 to 1.005 in four processes; the session made
   first runs slower, 1.02 against a copy of itself): the median latency
   of each over all runs, the ratio of the medians
   onnxc / exporter and the min..max of the per-round ratios, and each
   model's max abs difference to PyTorch's output;
5. each file run again on the e2e tests' other inputs of the model
   (EXTRA_INPUTS: other batch sizes, branches, trip counts, classes) and
   compared with PyTorch's outputs for them: a file whose outputs are off
   by more than FAITHFUL (1e-3) on the example or on any of those inputs,
   or of another shape, does not compute the model (a trace specialized
   to the example, a dropped buffer update);
6. a Markdown table, a summary line over the models whose two files both
   compute the model (how many have nodes <= the exporter's and a latency
   ratio <= 1.00 at the table's two decimals; the others are named with
   the reason; a ratio above that is given with the 95% bootstrap
   interval of the ratio of medians, a tie when the interval reaches 1)
   and, for every model where onnxc has more nodes or is slower, the ops
   whose counts differ most.

    /usr/bin/python3 bench/bench_exporter.py [--models a,b] [--runs N] [--onnxc PATH] [--opset N]

`--help` lists the other options.  A model that one side cannot export or
compile stays in the table with the reason.
"""

import argparse
import collections
import copy
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
sys.path.insert(0, os.path.join(REPO, "utils"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

import fxir_export  # noqa: E402
import models  # noqa: E402
import run_e2e  # noqa: E402  (flat_inputs, flat_outputs, first_lines, extra_cases)

BENCH_ORT = os.path.join(HERE, "bench_ort.py")


def ort_python():
    """The Python that runs bench_ort.py: this one if it has onnxruntime,
    else ortlib's (the torch 2.x environment's)."""
    import importlib.util
    if importlib.util.find_spec("onnxruntime"):
        return sys.executable
    import ortlib
    return ortlib.ort_python()


OPSET = 17
# A file computes the model when every output is within this of PyTorch's,
# on the example and on the e2e tests' other inputs.  Far above rounding
# (the zoo's CNNs differ by up to 5e-5), far below a wrong program.
FAITHFUL = 1e-3

_NP_TO_ONNX = {"float32": "float", "float64": "double", "float16": "float16",
               "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
               "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
               "uint64": "uint64", "bool": "bool"}


def one_line(e):
    return "%s: %s" % (type(e).__name__, run_e2e.first_lines(str(e), 1))


# -- the two compilers -----------------------------------------------------------

def export_torch(model, args, names, dyn, out):
    """torch.onnx.export with the TorchScript exporter; returns seconds."""
    a = tuple(args)
    if a and isinstance(a[-1], dict):      # a last dict would be read as kwargs
        a = a + ({},)
    dynamic_axes = None
    if dyn:
        dynamic_axes = {k: dict(v) for k, v in dyn.items()
                        if k in names and isinstance(v, dict)}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, a, out, opset_version=OPSET, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL, input_names=list(names),
                          dynamic_axes=dynamic_axes)
    return time.perf_counter() - t0


def export_bridge(model, args, dyn, fxir):
    t0 = time.perf_counter()
    fxir_export.export(model, args, fxir, dynamic_shapes=dyn)
    return time.perf_counter() - t0


ONNXC_FLAGS = []   # --opset, --target: added to every onnxc run


def compile_onnxc(onnxc, fxir, out, level="-O2"):
    t0 = time.perf_counter()
    p = subprocess.run([onnxc, fxir, level] + ONNXC_FLAGS + ["-emit=onnx", "-o", out], capture_output=True,
                       text=True, timeout=1800, cwd=os.path.dirname(fxir))
    dt = time.perf_counter() - t0
    if p.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("onnxc %s exit %d: %s" % (level, p.returncode,
                                                    run_e2e.first_lines(p.stderr or p.stdout)))
    return dt


# -- what is in a file ----------------------------------------------------------------

def _graph_nodes(graph):
    """All nodes of a graph, with those of its subgraphs (If, Loop, Scan)."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graph_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _graph_nodes(g)


def _op(n):
    return n.op_type if n.domain in ("", "ai.onnx") else "%s:%s" % (n.domain, n.op_type)


def _initializer_data(t, base):
    """An initializer's payload, from the external file if it is there."""
    if t.data_location == onnx.TensorProto.EXTERNAL:
        kv = {e.key: e.value for e in t.external_data}
        with open(os.path.join(base, kv["location"]), "rb") as f:
            f.seek(int(kv.get("offset", 0)))
            return f.read(int(kv["length"])) if "length" in kv else f.read()
    if t.raw_data:
        return t.raw_data
    c = onnx.TensorProto()
    c.CopyFrom(t)
    c.ClearField("name")
    return c.SerializeToString()


def patterns(m, nodes, base):
    """Counts of node patterns ONNX Runtime handles worse, or that make the
    file bigger, than the exporter's forms of the same computation."""
    g = m.graph
    inits = {t.name for t in g.initializer}
    used = collections.Counter(i for n in nodes for i in n.input)
    used.update(o.name for o in g.output)
    p = collections.Counter()
    for n in nodes:
        if len(n.input) and n.input[-1] == "":
            p["trailing empty input (%s)" % n.op_type] += 1
        if n.op_type == "MaxPool" and len(n.output) == 2 and not used[n.output[1]]:
            p["MaxPool with unused Indices output"] += 1
        if n.op_type == "BatchNormalization":
            p["BatchNormalization"] += 1
        if n.op_type == "Transpose" and n.input and n.input[0] in inits:
            p["Transpose of an initializer"] += 1
        # Fields this onnx package does not know (node metadata_props,
        # where provenance goes) survive parsing as unknown fields.
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.DiscardUnknownFields()
        p["node metadata bytes"] += n.ByteSize() - c.ByteSize()
    seen, dup = set(), 0
    for t in g.initializer:
        key = (t.data_type, tuple(t.dims), hashlib.sha1(_initializer_data(t, base)).digest())
        if key in seen:
            dup += 1
        seen.add(key)
    p["initializer equal to another"] = dup
    return {k: v for k, v in p.items() if v}


def inspect_onnx(path):
    """Node counts, op histogram, patterns and file size (with external data)."""
    m = onnx.load(path, load_external_data=False)
    main = list(_graph_nodes(m.graph))
    inner = [n for f in m.functions for n in f.node]
    hist = collections.Counter(_op(n) for n in main + inner)
    pats = patterns(m, main + inner, os.path.dirname(path))
    size = os.path.getsize(path)
    files = set()
    for t in m.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            for e in t.external_data:
                if e.key == "location":
                    files.add(os.path.join(os.path.dirname(path), e.value))
    size += sum(os.path.getsize(f) for f in files if os.path.exists(f))
    return {"nodes_main": len(m.graph.node), "nodes_sub": len(main) - len(m.graph.node),
            "nodes_fn": len(inner), "functions": len(m.functions),
            "nodes": len(main) + len(inner), "size": size, "external": len(files),
            "hist": dict(hist), "patterns": pats}


def write_patched(src, dst):
    """onnxc's file with two output-level patterns undone, nothing else:
    trailing empty optional inputs dropped (Conv(x, w, '')) and MaxPool's
    Indices output dropped when nothing reads it.  For --patched only.
    Returns how many nodes changed (nothing is written when none did)."""
    m = onnx.load(src, load_external_data=False)
    changed = 0
    used = collections.Counter(i for n in _graph_nodes(m.graph) for i in n.input)
    used.update(o.name for o in m.graph.output)
    for n in _graph_nodes(m.graph):
        k = len(n.input) + len(n.output)
        while len(n.input) and n.input[-1] == "":
            n.input.pop()
        if n.op_type == "MaxPool" and len(n.output) == 2 and not used[n.output[1]]:
            n.output.pop()
        changed += k != len(n.input) + len(n.output)
    if changed:
        onnx.save(m, dst)      # beside src: external data stays where it is
    return changed


# -- ONNX Runtime ---------------------------------------------------------------------------

def save_inputs(feeds, d):
    os.makedirs(d, exist_ok=True)
    specs = []
    for i, (name, arr) in enumerate(feeds):
        arr = np.ascontiguousarray(arr)
        key = str(arr.dtype)
        if key not in _NP_TO_ONNX:
            raise RuntimeError("input %s: dtype %s" % (name, arr.dtype))
        f = os.path.join(d, "in%d.bin" % i)
        arr.astype(arr.dtype.newbyteorder("<")).tofile(f)
        specs.append({"name": name, "dtype": _NP_TO_ONNX[key],
                      "dims": [int(x) for x in arr.shape], "file": f})
    spec = os.path.join(d, "inputs.json")
    with open(spec, "w") as f:
        json.dump(specs, f)
    return spec


def run_ort_once(paths, spec, outdir, runs, budget, node, sample_ms=0):
    cmd = [node, BENCH_ORT, "--json", "--runs", str(runs), "--warmup", "3",
           "--sample-ms", str(sample_ms), "--inputs", spec, "--outdir", outdir]
    if budget:
        cmd += ["--budget", str(budget)]
    p = subprocess.run(cmd + list(paths), capture_output=True, text=True, timeout=7200)
    if p.returncode != 0:
        raise RuntimeError("ORT: " + run_e2e.first_lines(p.stderr or p.stdout, 2))
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_ort(paths, spec, outdir, runs, budget, node, sample_ms=0, procs=4):
    """Times the models in `procs` processes, the runs and the budget split
    evenly among them; every other process loads the models in reverse
    order.  The result is the first process's, with every model's times of
    all of them (round i of each model from the same process and round) and
    the outputs of the first."""
    if len(paths) < 2 or procs < 2:
        return run_ort_once(paths, spec, outdir, runs, budget, node, sample_ms)
    share = max(5, -(-runs // procs))
    res = None
    for k in range(procs):
        order = list(paths) if k % 2 == 0 else list(reversed(paths))
        r = run_ort_once(order, spec, outdir if k == 0 else "%s-%d" % (outdir, k), share,
                         budget / procs, node, sample_ms)
        models = r["models"] if k % 2 == 0 else list(reversed(r["models"]))
        if res is None:
            res = r
            continue
        for m, x in zip(res["models"], models):
            m["times"] = m["times"] + x["times"]
        res["runs"] += r["runs"]
    return res


def read_outputs(desc):
    out = []
    for o in desc["outputs"]:
        dt = np.dtype(np_dtype(o["dtype"])).newbyteorder("<")
        out.append(np.fromfile(o["file"], dtype=dt).reshape([int(x) for x in o["dims"]]))
    return out


def np_dtype(onnx_name):
    for k, v in _NP_TO_ONNX.items():
        if v == onnx_name:
            return k
    raise RuntimeError("output dtype %s" % onnx_name)


def max_diff(ref, got):
    """Max abs difference over PyTorch's outputs (extra outputs ignored)."""
    if len(got) < len(ref):
        return "%d outputs, PyTorch %d" % (len(got), len(ref))
    worst = 0.0
    for i, (r, g) in enumerate(zip(ref, got)):
        if tuple(r.shape) != tuple(g.shape):
            return "output %d shape %s, PyTorch %s" % (i, list(g.shape), list(r.shape))
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        both = ~(np.isnan(r64) | np.isnan(g64))
        if not np.array_equal(np.isnan(r64), np.isnan(g64)):
            return "output %d NaNs differ" % i
        worst = max(worst, float(np.max(np.abs(r64[both] - g64[both]), initial=0.0)))
    return worst


def unfaithful(path, diff, cases):
    """Why the file at `path` does not compute the model, or None: its
    example difference `diff`, then each other input run in ONNX Runtime
    (fed the inputs the file declares; an exporter's trace may drop one)."""
    if isinstance(diff, str):
        return "example: " + diff
    if diff is not None and diff > FAITHFUL:
        return "example: max diff %.2g" % diff
    if not cases:
        return None
    import ortlib
    declared = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
    for i, (feeds, ref) in enumerate(cases):
        try:
            got = ortlib.run(path, {n: v for n, v in feeds if n in declared})
        except Exception as e:
            return "other input %d: %s" % (i + 1, one_line(e))
        d = max_diff(ref, list(got.values()))
        if isinstance(d, str) or d > FAITHFUL:
            return "other input %d: %s" % (i + 1, d if isinstance(d, str) else
                                           "max diff %.2g" % d)
    return None


# -- one model --------------------------------------------------------------------------------

def bench_model(name, builder, a, work):
    row = {"model": name, "onnxc": None, "exporter": None, "patched": None,
           "onnxc_error": None, "exporter_error": None}
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    model, args, dyn = builder()
    with torch.no_grad():
        ref = run_e2e.flat_outputs(copy.deepcopy(model)(*args))
    feeds = run_e2e.flat_inputs(model, args)
    names = [n for n, _ in feeds]

    paths = {}
    exp = os.path.join(d, name + ".exporter.onnx")
    try:
        t = export_torch(copy.deepcopy(model), args, names, dyn, exp)
        row["exporter"] = dict(inspect_onnx(exp), compile=t)
        paths["exporter"] = exp
    except Exception as e:
        row["exporter_error"] = "torch.onnx.export: " + one_line(e)
        if a.verbose:
            traceback.print_exc()

    fxir = os.path.join(d, name + ".fxir")
    out = os.path.join(d, name + ".onnxc.onnx")
    stage = "fxir_export"
    try:
        tb = export_bridge(copy.deepcopy(model), args, dyn, fxir)
        stage = "onnxc"
        tc = compile_onnxc(a.onnxc, fxir, out)
        row["onnxc"] = dict(inspect_onnx(out), bridge=tb, compile=tc)
        paths["onnxc"] = out
    except Exception as e:
        row["onnxc_error"] = str(e) if stage == "onnxc" else "fxir_export: " + one_line(e)
        if a.verbose:
            traceback.print_exc()

    if a.patched and "onnxc" in paths:
        patched = os.path.join(d, name + ".onnxc-patched.onnx")
        if write_patched(paths["onnxc"], patched):
            paths["patched"] = patched
            row["patched"] = {}
    order = [k for k in ("onnxc", "exporter", "patched") if k in paths]
    if not order:
        return row
    spec = save_inputs(feeds, os.path.join(d, "inputs"))
    runs = a.slow_runs if name in a.slow else a.runs
    try:
        res = run_ort([paths[k] for k in order], spec, os.path.join(d, "outputs"),
                      runs, a.budget, a.node, a.sample_ms, a.procs)
    except Exception:
        # Find which side ONNX Runtime refuses, and time the other alone.
        good = []
        for k in order:
            try:
                run_ort([paths[k]], spec, os.path.join(d, "outputs"), 1, 0, a.node)
                good.append(k)
            except Exception as e:
                row[k + "_error"] = str(e).replace(d + os.sep, "")
        if len(good) == len(order) or not good:
            return row
        order = good
        res = run_ort([paths[k] for k in order], spec, os.path.join(d, "outputs"),
                      runs, a.budget, a.node, a.sample_ms, a.procs)
    row["runs"] = res["runs"]
    row["batch"] = res["batch"]
    for k, m in zip(order, res["models"]):
        row[k]["times"] = m["times"]
        row[k]["median"] = statistics.median(m["times"])
        row[k]["diff"] = max_diff(ref, read_outputs(m))
    if row["onnxc"] and row["exporter"] and "median" in row["exporter"]:
        for k, rk, sk in (("onnxc", "ratio", "spread"), ("patched", "patched_ratio",
                                                           "patched_spread")):
            if not row.get(k) or "times" not in row[k]:
                continue
            pair = [x / y for x, y in zip(row[k]["times"], row["exporter"]["times"])]
            row[rk] = row[k]["median"] / row["exporter"]["median"]
            row[sk] = (min(pair), max(pair))
    cases = run_e2e.extra_cases(name, model)
    for k in ("onnxc", "exporter"):
        if row.get(k) and "diff" in row[k]:
            row[k]["unfaithful"] = unfaithful(paths[k], row[k]["diff"], cases)
    return row


# -- the report --------------------------------------------------------------------------------

def fmt_nodes(r):
    if r is None:
        return "-"
    s = str(r["nodes_main"])
    extra = r["nodes_fn"] + r["nodes_sub"]
    return s + ("+%d" % extra if extra else "")


def fmt_size(n):
    if n is None:
        return "-"
    if n >= 1 << 20:
        return "%.1f MB" % (n / (1 << 20))
    return "%.0f kB" % (n / 1024)


def fmt_ms(x):
    if x >= 100:
        return "%.0f ms" % x
    if x >= 1:
        return "%.2f ms" % x
    return "%.3f ms" % x


def fmt_diff(d):
    if d is None:
        return "-"
    if isinstance(d, str):
        return d
    return "0" if d == 0 else "%.1e" % d


def table(rows, default_runs):
    out = ["| model | nodes onnxc / exporter | size onnxc / exporter "
           "| latency onnxc / exporter (ratio, spread) | compile bridge+onnxc / exporter "
           "| max diff onnxc / exporter |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        o, e = r["onnxc"], r["exporter"]
        nodes = "%s / %s" % (fmt_nodes(o), fmt_nodes(e))
        size = "%s / %s" % (fmt_size(o and o["size"]), fmt_size(e and e["size"]))
        if o and e and "median" in o and "median" in e:
            lo, hi = r["spread"]
            lat = "%s / %s (%.2f, %.2f..%.2f)" % (fmt_ms(o["median"]), fmt_ms(e["median"]),
                                                  r["ratio"], lo, hi)
        else:
            lat = "%s / %s" % (fmt_ms(o["median"]) if o and "median" in o else "-",
                               fmt_ms(e["median"]) if e and "median" in e else "-")
        if r.get("runs") is not None and r["runs"] != default_runs:
            lat += " [%d runs]" % r["runs"]
        comp = "%s / %s" % ("%.2f+%.2f s" % (o["bridge"], o["compile"]) if o else "-",
                            "%.2f s" % e["compile"] if e else "-")
        diff = "%s / %s" % (fmt_diff(o and o.get("diff")), fmt_diff(e and e.get("diff")))
        out.append("| %s | %s | %s | %s | %s | %s |" % (r["model"], nodes, size, lat, comp, diff))
    notes = []
    for r in rows:
        for k, who in (("onnxc_error", "onnxc"), ("exporter_error", "exporter")):
            if r.get(k):
                msg = r[k] if len(r[k]) <= 240 else r[k][:237] + "..."
                notes.append("- %s, %s: %s" % (r["model"], who, msg))
    return "\n".join(out), notes


def ratio_ok(r):
    """The latency target at the table's precision: a ratio that shows as
    1.00 (up to 1.005) is met; two files of the same graph land on either
    side of 1 by noise alone."""
    return "ratio" in r and round(r["ratio"], 2) <= 1.00


def ratio_interval(r, draws=2000):
    """The 95% bootstrap interval of the ratio of medians: rounds drawn
    with replacement, each round's two times together (seeded: the same
    times give the same interval)."""
    o = np.asarray(r["onnxc"]["times"])
    e = np.asarray(r["exporter"]["times"])
    idx = np.random.default_rng(0).integers(0, len(o), size=(draws, len(o)))
    q = np.median(o[idx], axis=1) / np.median(e[idx], axis=1)
    return float(np.percentile(q, 2.5)), float(np.percentile(q, 97.5))


def faithful(r):
    return all(r[k] and r[k].get("unfaithful") is None for k in ("onnxc", "exporter"))


def summary(rows):
    """Targets over the models both sides export, ONNX Runtime runs and
    both files compute: the line, and the timed models left out."""
    run = [r for r in rows if "ratio" in r]
    timed = [r for r in run if faithful(r)]
    out = ["- %s: %s" % (r["model"], "; ".join(
        "%s's file, %s" % (k, r[k]["unfaithful"]) for k in ("onnxc", "exporter")
        if r[k].get("unfaithful"))) for r in run if not faithful(r)]
    nodes_ok = sum(1 for r in timed if r["onnxc"]["nodes"] <= r["exporter"]["nodes"])
    lat_ok = sum(1 for r in timed if ratio_ok(r))
    both_ok = sum(1 for r in timed
                  if r["onnxc"]["nodes"] <= r["exporter"]["nodes"] and ratio_ok(r))
    n = len(timed)
    ties = []
    for r in timed:
        if not ratio_ok(r):
            lo, hi = ratio_interval(r)
            ties.append("- %s: %.3f, 95%% interval %.3f..%.3f%s" % (
                r["model"], r["ratio"], lo, hi, ": a tie" if lo <= 1.0 else ""))
    return ("%d models, %d run on both sides, %d of them computing the model on both: "
            "nodes <= exporter on %d/%d, latency ratio <= 1.00 (two decimals) on %d/%d, "
            "both on %d/%d"
            % (len(rows), len(run), n, nodes_ok, n, lat_ok, n, both_ok, n)), out, ties


def hist_diffs(rows, top):
    """For models where onnxc has more nodes or is slower: the ops whose
    counts differ most (onnxc count / exporter count)."""
    lines = []
    for r in rows:
        o, e = r["onnxc"], r["exporter"]
        if not (o and e):
            continue
        if o["nodes"] <= e["nodes"] and (ratio_ok(r) or "ratio" not in r):
            continue
        ops = set(o["hist"]) | set(e["hist"])
        d = sorted(ops, key=lambda op: (-abs(o["hist"].get(op, 0) - e["hist"].get(op, 0)), op))
        d = [op for op in d if o["hist"].get(op, 0) != e["hist"].get(op, 0)][:top]
        why = []
        if o["nodes"] > e["nodes"]:
            why.append("%d more nodes" % (o["nodes"] - e["nodes"]))
        if "ratio" in r and not ratio_ok(r):
            why.append("ratio %.2f" % r["ratio"])
        lines.append("- %s (%s): %s" % (r["model"], ", ".join(why), ", ".join(
            "%s %d/%d" % (op, o["hist"].get(op, 0), e["hist"].get(op, 0)) for op in d)))
    return lines


def patched_table(rows):
    out = ["| model | onnxc / exporter | onnxc patched / exporter |", "|---|---|---|"]
    for r in rows:
        if "patched_ratio" in r and "ratio" in r:
            out.append("| %s | %.2f (%.2f..%.2f) | %.2f (%.2f..%.2f) |" % (
                r["model"], r["ratio"], r["spread"][0], r["spread"][1],
                r["patched_ratio"], r["patched_spread"][0], r["patched_spread"][1]))
    return "\n".join(out)


def pattern_lines(rows):
    """Per model, the patterns whose counts differ (onnxc/exporter)."""
    lines = []
    for r in rows:
        o, e = r["onnxc"], r["exporter"]
        if not o:
            continue
        po, pe = o["patterns"], e["patterns"] if e else {}
        keys = sorted(k for k in set(po) | set(pe) if po.get(k, 0) != pe.get(k, 0))
        if keys:
            lines.append("- %s: %s" % (r["model"], ", ".join(
                "%s %d/%s" % (k, po.get(k, 0), pe.get(k, 0) if e else "-") for k in keys)))
    return lines


def warm_up(onnxc, work):
    """Pay the one-time costs (imports, registries) of both paths on a tiny
    model before anything is timed."""
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    x = (torch.randn(2, 4),)
    d = os.path.join(work, "_warmup")
    os.makedirs(d, exist_ok=True)
    export_torch(copy.deepcopy(m), x, ["x"], None, os.path.join(d, "w.onnx"))
    export_bridge(copy.deepcopy(m), x, None, os.path.join(d, "w.fxir"))
    compile_onnxc(onnxc, os.path.join(d, "w.fxir"), os.path.join(d, "w2.onnx"))


def default_onnxc():
    for b in ("rel", "build"):
        p = os.path.join(REPO, b, "onnxc")
        if os.access(p, os.X_OK):
            return p
    return os.path.join(REPO, "rel", "onnxc")


def main():
    if int(torch.__version__.split(".")[0]) >= 2:
        import bench_modern
        return bench_modern.main()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated model names (default: the whole zoo)")
    ap.add_argument("--runs", type=int, default=30, help="timed runs per model (default 30)")
    ap.add_argument("--slow", default="",
                    help="comma-separated models to time with --slow-runs instead")
    ap.add_argument("--slow-runs", type=int, default=10, help="runs for --slow models (default 10)")
    ap.add_argument("--budget", type=float, default=0,
                    help="cap each model's timed runs at about this many seconds "
                         "(never under 10 runs; default: no cap)")
    ap.add_argument("--sample-ms", type=float, default=20,
                    help="time a fast model in batches of inferences lasting about MS "
                         "(the same batch for both; 0: one inference a run; default 20)")
    ap.add_argument("--onnxc", default=default_onnxc(),
                    help="the compiler (default rel/onnxc, else build/onnxc)")
    ap.add_argument("--procs", type=int, default=4,
                    help="ONNX Runtime processes a model's runs are split among, every other "
                         "one loading the files in reverse order (default 4)")
    ap.add_argument("--ort-python", dest="node", default=ort_python(),
                    help="the Python (with onnxruntime) that runs bench/bench_ort.py "
                         "(default: this one if it has onnxruntime, else the torch 2.x "
                         "environment's)")
    ap.add_argument("--top", type=int, default=6, help="op differences listed per model")
    ap.add_argument("--patched", action="store_true",
                    help="also time a copy of onnxc's file with trailing empty inputs and "
                         "unused MaxPool Indices outputs dropped (a diagnostic: what those "
                         "two patterns cost)")
    ap.add_argument("--keep", metavar="DIR", help="write the files into DIR and keep them")
    ap.add_argument("--save-json", metavar="FILE", help="also write the raw results as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracebacks")
    ap.add_argument("--opset", type=int,
                    help="compile with onnxc -opset=N (the exporter stays at 17)")
    ap.add_argument("--target", choices=("onnx", "ort"),
                    help="compile with onnxc -target=T (ort: ONNX Runtime's contrib ops)")
    a = ap.parse_args()
    if a.opset:
        ONNXC_FLAGS.append("-opset=%d" % a.opset)
    if a.target:
        ONNXC_FLAGS.append("-target=%s" % a.target)
    a.onnxc = os.path.abspath(a.onnxc)
    a.slow = {s for s in a.slow.split(",") if s}
    if not os.access(a.onnxc, os.X_OK):
        ap.error("onnxc not found at %s (cmake -B rel -DCMAKE_BUILD_TYPE=Release && "
                 "cmake --build rel)" % a.onnxc)
    names = list(models.ZOO) if not a.models else [s for s in a.models.split(",") if s]
    unknown = [n for n in names if n not in models.ZOO]
    if unknown:
        ap.error("unknown models: %s (the zoo: %s)" % (", ".join(unknown), ", ".join(models.ZOO)))

    torch.set_num_threads(1)
    work = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="onnxc-bench.")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        try:
            warm_up(a.onnxc, work)
        except Exception as e:
            print("bench_exporter: the warm-up on a tiny model failed: %s" % one_line(e),
                  file=sys.stderr)
            return 1
        for n in names:
            t0 = time.perf_counter()
            try:
                r = bench_model(n, models.ZOO[n], a, work)
            except Exception as e:
                r = {"model": n, "onnxc": None, "exporter": None,
                     "onnxc_error": "build: " + one_line(e), "exporter_error": None}
                if a.verbose:
                    traceback.print_exc()
            rows.append(r)
            bits = ["%.0f s" % (time.perf_counter() - t0)]
            if "ratio" in r:
                bits.append("ratio %.3f" % r["ratio"])
            for k in ("onnxc_error", "exporter_error"):
                if r.get(k):
                    bits.append(r[k])
            print("%-20s %s" % (n, "; ".join(bits)), file=sys.stderr, flush=True)
            if not a.keep:
                shutil.rmtree(os.path.join(work, n), ignore_errors=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    if a.save_json:
        with open(a.save_json, "w") as f:
            json.dump(rows, f, indent=1)
    t, notes = table(rows, a.runs)
    print(t)
    print()
    line, left_out, ties = summary(rows)
    print(line)
    if ties:
        print()
        print("Above 1.00 there, with the 95% bootstrap interval of the ratio (rounds "
              "resampled; a tie when it reaches 1.00 or below):")
        print("\n".join(ties))
    if left_out:
        print()
        print("Run on both sides but left out of that line (a file that does not compute "
              "the model: off PyTorch by more than %g on the example or on the e2e tests' "
              "other inputs):" % FAITHFUL)
        print("\n".join(left_out))
    if notes:
        print()
        print("Not exported or not run:")
        print("\n".join(notes))
    if a.patched:
        print()
        print("Latency ratios with onnxc's file patched (--patched: trailing empty inputs "
              "and unused MaxPool Indices dropped):")
        print(patched_table(rows))
    pats = pattern_lines(rows)
    if pats:
        print()
        print("Patterns onnxc/exporter:")
        print("\n".join(pats))
    diffs = hist_diffs(rows, a.top)
    if diffs:
        print()
        print("Op counts onnxc/exporter where onnxc has more nodes or is slower:")
        print("\n".join(diffs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
