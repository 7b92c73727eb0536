#!/usr/bin/env python3
"""bench_scale.py - conversion time as depth grows: torch.export alone, the
whole onnxc pipeline, and torch.onnx.export(dynamo=True).

    ~/.cache/onnxc/venv-torch2/bin/python bench/bench_scale.py
        [--blocks 8,32,128] [--reps 3] [--cheap SECONDS] [--onnxc PATH]
        [--no-peer] [--torchscript] [--no-check] [--profile BLOCKS]

A GPT-style model (the e2e zoo's GPT: the tutorial's decoder layers,
embedding dim 64, 4 heads, vocabulary 1024, context 256, 30 tokens) at each
depth, converted in one run, on one thread, by:

  torch.export   torch.export.export(model, args, strict=False) alone: the
                 trace, before any run_decompositions (the floor every
                 torch.export-based exporter pays)
  pipeline       onnxc's whole pipeline: the bridge's capture (onnxc.bridge,
                 the same torch.export call), the .fxir text and the
                 .safetensors weights written, then `onnxc -O2` to .onnx
  peer           torch.onnx.export(model, args, f, dynamo=True), its
                 default optimizer on
  TorchScript    with --torchscript: torch.onnx.export(..., dynamo=False),
                 opset 17, where this torch still has it

Each tool converts a 1-block model once first (imports, caches).  At each
depth the tools run in turn, the order rotated from one repetition to the
next; --reps repetitions when one round takes less than --cheap seconds,
else one.  Medians of wall seconds (and of CPU seconds: the process's and
onnxc's) are printed with the ratios pipeline / torch.export (target at
most 1.3) and peer / pipeline (target at least 10 at 128 blocks), then the
pipeline's stages (the bridge's Progress, onnxc's -time-passes: read,
passes, write), the node counts, and unless --no-check the largest
difference between ONNX Runtime on onnxc's file and eager PyTorch.

--profile N runs the pipeline on an N-block model under cProfile instead
and prints the functions with the most cumulative and own time.
"""
import argparse
import contextlib
import cProfile
import gc
import io
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(REPO, "python"), os.path.join(REPO, "test", "e2e")):
    if _p not in sys.path:
        sys.path.insert(0, _p)
import torch  # noqa: E402
import models  # noqa: E402
from onnxc import bridge  # noqa: E402

TOOLS = ("torch.export", "pipeline", "peer")


def build(blocks):
    models._seed()
    m = models.GPT(n_layers=blocks, embedding_dim=64, num_heads=4).eval()
    return m, (torch.randint(0, 1024, (1, 30), dtype=torch.int64),)


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def _quiet():
    """The peer prints its steps and warns: kept out of the table."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def run_export(m, args, d, tag, onnxc):
    torch.export.export(m, args, strict=False)
    return {}


def _onnxc_times(stderr):
    """{read, passes, write: seconds} from onnxc's -time-passes lines."""
    out = {}
    for line in stderr.splitlines():
        f = line.split()
        if line.startswith("onnxc: time ") and len(f) >= 4:
            out["onnxc " + f[2]] = float(f[3]) / 1e3
        elif line.startswith("onnxc: pass total"):
            out["onnxc passes"] = float(f[3]) / 1e3
    return out


def run_pipeline(m, args, d, tag, onnxc):
    fx, ox = os.path.join(d, tag + ".fxir"), os.path.join(d, tag + ".onnx")
    shown = bridge.Progress(show=False)
    bridge.export(m, args, fx, progress=shown)
    c0, w0 = _children_cpu(), time.perf_counter()
    p = subprocess.run([onnxc, fx, "-O2", "-time-passes", "-emit=onnx", "-o", ox],
                       capture_output=True, text=True, cwd=d)
    wall, cpu = time.perf_counter() - w0, _children_cpu() - c0
    if p.returncode != 0:
        raise RuntimeError("onnxc exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    stages = {name.split(" (")[0]: w for name, w, _ in shown.stages}
    stages.update(_onnxc_times(p.stderr))
    stages["onnxc (process)"] = wall
    return {"stages": stages, "child_cpu": cpu, "file": ox}


def run_peer(m, args, d, tag, onnxc):
    f = os.path.join(d, tag + "_peer.onnx")
    with _quiet():
        torch.onnx.export(m, args, f, dynamo=True, input_names=["input_ids"])
    return {"file": f}


def run_torchscript(m, args, d, tag, onnxc):
    f = os.path.join(d, tag + "_ts.onnx")
    with _quiet():
        torch.onnx.export(m, args, f, dynamo=False, opset_version=17, do_constant_folding=True,
                          input_names=["input_ids"])
    return {"file": f}


RUNNERS = {"torch.export": run_export, "pipeline": run_pipeline, "peer": run_peer,
           "TorchScript": run_torchscript}


def timed(tool, m, args, d, tag, onnxc):
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    info = RUNNERS[tool](m, args, d, tag, onnxc)
    info["wall"] = time.perf_counter() - w0
    info["cpu"] = time.process_time() - c0 + info.get("child_cpu", 0.0)
    return info


def nodes(path):
    import onnx
    return len(onnx.load(path, load_external_data=False).graph.node)


def check(m, args, path):
    """The largest |ONNX Runtime - eager| over the output."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: args[0].numpy()})[0]
    with torch.no_grad():
        want = m(*args).numpy()
    return float(abs(got - want).max())


def profile(blocks, d, onnxc):
    m, args = build(blocks)
    run_pipeline(*build(1), d, "w", onnxc)
    pr = cProfile.Profile()
    pr.enable()
    info = run_pipeline(m, args, d, "p", onnxc)
    pr.disable()
    st = pstats.Stats(pr)
    print("total %.2f s (onnxc %.2f s)" % (st.total_tt, info["stages"]["onnxc (process)"]))
    st.sort_stats("cumulative").print_stats(30)
    st.sort_stats("tottime").print_stats(25)


def med(rows, tool, key="wall"):
    xs = [r[tool][key] for r in rows if tool in r]
    return statistics.median(xs) if xs else None


def fmt(x, unit=" s"):
    return "-" if x is None else "%.2f%s" % (x, unit)


def ratio(a, b):
    return "-" if a is None or b is None else "%.2fx" % (a / b)


def report(results, tools, checks):
    print()
    head = " | ".join(tools)
    for key, what in (("wall", "wall seconds"), ("cpu", "CPU seconds")):
        print("%s, medians:" % what)
        print("| blocks | reps | %s | pipeline / torch.export | peer / pipeline |" % head)
        print("|---|---|%s---|---|" % ("---|" * len(tools)))
        for n, rows in results:
            meds = {t: med(rows, t, key) for t in tools}
            print("| %d | %d | %s | %s | %s |" % (
                n, len(rows), " | ".join(fmt(meds[t]) for t in tools),
                ratio(meds.get("pipeline"), meds.get("torch.export")),
                ratio(meds.get("peer"), meds.get("pipeline"))))
        print()
    names = []
    for _, rows in results:
        for r in rows:
            for k in r["pipeline"]["stages"]:
                if k not in names:
                    names.append(k)
    print("pipeline stages (wall seconds, medians):")
    print("| blocks | %s |" % " | ".join(names))
    print("|---|%s" % ("---|" * len(names)))
    for n, rows in results:
        cells = []
        for k in names:
            xs = [r["pipeline"]["stages"][k] for r in rows if k in r["pipeline"]["stages"]]
            cells.append(fmt(statistics.median(xs)) if xs else "-")
        print("| %d | %s |" % (n, " | ".join(cells)))
    print()
    print("| blocks | onnxc nodes | peer nodes | max |ORT - eager| (onnxc) |")
    print("|---|---|---|---|")
    for n, rows in results:
        r = rows[-1]
        peer = nodes(r["peer"]["file"]) if "peer" in r else None
        print("| %d | %d | %s | %s |" % (n, nodes(r["pipeline"]["file"]),
                                        "-" if peer is None else peer, checks.get(n, "-")))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", default="8,32,128")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cheap", type=float, default=120.0,
                    help="repeat a depth only when one round took less than this (seconds)")
    ap.add_argument("--onnxc")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--torchscript", action="store_true",
                    help="also time torch.onnx.export(dynamo=False)")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--profile", type=int)
    a = ap.parse_args()
    onnxc = os.path.abspath(a.onnxc) if a.onnxc else next(
        (p for p in (os.path.join(REPO, d, "onnxc") for d in ("rel", "build"))
         if os.path.exists(p)), "onnxc")
    torch.set_num_threads(1)
    tools = ["torch.export", "pipeline"] + ([] if a.no_peer else ["peer"]) + \
        (["TorchScript"] if a.torchscript else [])
    load0 = os.getloadavg()
    print("torch %s, %s, load average %.2f %.2f %.2f" % (torch.__version__, onnxc, *load0))
    with tempfile.TemporaryDirectory(prefix="bench_scale.") as d:
        if a.profile:
            return profile(a.profile, d, onnxc)
        m, args = build(1)
        for t in tools:
            timed(t, m, args, d, "warm", onnxc)
        results, checks = [], {}
        for n in [int(x) for x in a.blocks.split(",")]:
            m, args = build(n)
            rows = []
            for rep in range(a.reps):
                order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                t0 = time.perf_counter()
                row = {t: timed(t, m, args, d, "m%d_%d" % (n, rep), onnxc) for t in order}
                rows.append(row)
                print("%d blocks, rep %d: %s" % (n, rep + 1, ", ".join(
                    "%s %.2f s (CPU %.2f s)" % (t, row[t]["wall"], row[t]["cpu"]) for t in tools)),
                    flush=True)
                if time.perf_counter() - t0 > a.cheap:
                    break
            if not a.no_check:
                checks[n] = "%.1e" % check(m, args, rows[-1]["pipeline"]["file"])
            results.append((n, rows))
        report(results, tools, checks)
    load1 = os.getloadavg()
    print("\nload average at the end %.2f %.2f %.2f (%d cores)" % (*load1, os.cpu_count()))


if __name__ == "__main__":
    main()
