"""onnxc -O2 against torch.onnx.export(dynamo=True) on the modern zoo.

The torch 2.x half of bench_exporter.py (which runs this when its torch is
2.x).  For every model of test/zoo/run_modern_zoo.py (its table and
builders, imported), in a child process of its own under a timeout:

1. `onnxc.export` (the bridge, `onnxc -O2`) and `torch.onnx.export(...,
   dynamo=True)` with its default optimizer, on the same torch, each timed
   and checked against PyTorch's eager outputs by the zoo's own check (the
   LLMs at their other sizes too); a side that fails is reported with its
   message, not fatal;
2. node count (nodes of subgraphs and local functions included), op
   histogram and file size (with external data) of both files.  Both
   store their weights alike: in external data (`<file>.data`), which is
   torch.onnx.export's default, unless --embedded keeps onnxc.export's
   (one file).  It matters to latency: ONNX Runtime runs r2plus1d_18's
   3-D convolutions about 3% faster from external data, for either file;
3. when both files match PyTorch, both run in ONNX Runtime (CPU, default
   graph optimizations, one intra-op and one inter-op thread), on the
   example's inputs, in --procs fresh processes (8), every other one
   loading the peer's file first: one process's ratio moves by several
   percent with where its sessions land in memory (the same file against
   a copy of itself: 0.93 to 1.09).  In each, after warm-up, rounds
   alternate A B and B A, each timing a batch of inferences that lasts
   about --sample-ms (the same batch for both files).  Over the rounds of
   all the processes: the median of each, their ratio onnxc / peer and the
   95% bootstrap interval of that ratio (processes resampled, then rounds
   within each).  A model slow enough that the processes would outlast
   about four budgets (each runs 3 warm-ups and at least 5 rounds of both
   files) gets fewer of them, an even number and at least 2, sized from
   the first one's times.

    ~/.cache/onnxc/venv-torch2/bin/python bench/bench_exporter.py [-k PATTERN] [--runs N]
        [--budget S] [--no-latency] [--embedded] [--onnxc PATH] [--timeout S] [--keep DIR]
    ~/.cache/onnxc/venv-torch2/bin/python bench/bench_exporter.py --hist MODEL

`--hist MODEL` prints the op histograms of both files side by side,
largest difference first (what the peer has fewer of is what to look at).
The last lines are a summary: models both convert, how many of them
onnxc has no more nodes on, how many run at or below the peer's latency
(a ratio at or below 1.00 at two decimals, or a tie: the interval reaches
1.00), the geometric mean of the ratios, and the load average of the
machine at the start and the end.
"""

import argparse
import fnmatch
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
ZOO = os.path.join(REPO, "test", "zoo")
for p in (ZOO, os.path.join(REPO, "test", "e2e"), os.path.join(REPO, "utils"),
          os.path.join(REPO, "python")):
    if p not in sys.path:
        sys.path.insert(0, p)

import run_modern_zoo as zoo  # noqa: E402  (the model table, builders and checks)


# -- one model, in a child process ---------------------------------------------------

def feeds_for(sess, leaves):
    """The session's feeds from the model's flattened inputs (by name where
    the graph's inputs are named like them, else in order: zoo.ort_run's
    rule, built once so the timed loop does not rebuild it)."""
    want = [i.name for i in sess.get_inputs()]
    named = dict(leaves)
    if all(w in named for w in want):
        return {w: named[w] for w in want}
    return {w: v for w, (_, v) in zip(want, leaves)}


def interleaved(sessions, feeds, runs, budget, sample_ms):
    """Per-round seconds of each session, rounds alternating the order."""
    for s, f in zip(sessions, feeds):
        for _ in range(3):
            s.run(None, f)
    t0 = time.perf_counter()
    sessions[0].run(None, feeds[0])
    one = max(time.perf_counter() - t0, 1e-6)
    batch = max(1, int(sample_ms / 1000.0 / one)) if sample_ms else 1
    times = [[] for _ in sessions]
    start = time.perf_counter()
    for r in range(runs):
        order = range(len(sessions)) if r % 2 == 0 else reversed(range(len(sessions)))
        for i in order:
            s, f = sessions[i], feeds[i]
            t0 = time.perf_counter()
            for _ in range(batch):
                s.run(None, f)
            times[i].append((time.perf_counter() - t0) / batch)
        if budget and r >= 9 and time.perf_counter() - start > budget:
            break
    return times, batch


def ratio_interval(groups_a, groups_b, draws=2000):
    """95% bootstrap interval of median(a) / median(b) over rounds timed in
    several processes: each draw resamples the processes, then the rounds
    within each (a process's rounds share where its sessions landed in
    memory, so they are not independent of one another)."""
    rng = random.Random(1)
    n = len(groups_a)
    q = []
    for _ in range(draws):
        xa, xb = [], []
        for _ in range(n):
            g = rng.randrange(n)
            ga, gb = groups_a[g], groups_b[g]
            idx = [rng.randrange(len(ga)) for _ in range(len(ga))]
            xa += [ga[i] for i in idx]
            xb += [gb[i] for i in idx]
        q.append(statistics.median(xa) / statistics.median(xb))
    q.sort()
    return q[int(0.025 * draws)], q[int(0.975 * draws) - 1]


def latency(res, case, workdir, a):
    """Times both files in --procs fresh processes, half of them loading the
    peer's file first (in one process the session made first runs a few
    percent slower or faster, by where its memory lands: the same file
    against a copy of itself reads 0.96 to 1.01), and pools their rounds."""
    leaves = zoo.flatten_inputs(case.model, case.args, case.kwargs)
    names = [n for n, _ in leaves]
    np.savez(os.path.join(workdir, "inputs.npz"), **{"i%d" % k: v for k, (_, v) in enumerate(leaves)})
    with open(os.path.join(workdir, "inputs.json"), "w") as f:
        json.dump(names, f)
    procs = max(1, a.procs)
    groups = [[], []]
    batch = None
    p = 0
    while p < procs:
        job = {"workdir": workdir, "peer_first": p % 2 == 1, "runs": max(5, -(-a.runs // procs)),
               "budget": a.budget / procs, "sample_ms": a.sample_ms}
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--latency-child", json.dumps(job)],
                             capture_output=True, text=True, timeout=a.timeout)
        lines = [l for l in out.stdout.splitlines() if l.startswith("LATENCY ")]
        if not lines:
            tail = (out.stderr or "").strip().splitlines()
            raise RuntimeError("latency process: exit %d: %s" % (out.returncode, tail[-1][:200] if tail else ""))
        got = json.loads(lines[-1][len("LATENCY "):])
        groups[0].append(got["times"][0])
        groups[1].append(got["times"][1])
        batch = got["batch"]
        p += 1
        if p == 1:
            # A slow model: each process costs (3 warm-ups + 5 rounds) x 2
            # inferences at the least; keep the processes (an even number,
            # at least 2) within about 4 budgets.
            one = statistics.median(got["times"][0] + got["times"][1]) * batch
            fit = int(4 * a.budget / max(one * 16, 1e-9))
            procs = min(procs, max(2, fit + fit % 2))
    times = [sum(g, []) for g in groups]
    mo, mp = statistics.median(times[0]), statistics.median(times[1])
    lo, hi = ratio_interval(groups[0], groups[1])
    res["latency"] = {"onnxc_ms": mo * 1e3, "peer_ms": mp * 1e3, "ratio": mo / mp,
                      "lo": lo, "hi": hi, "rounds": len(times[0]), "batch": batch, "procs": procs}


def latency_child(job):
    """One timing process: both sessions (in the order asked), interleaved
    rounds; prints LATENCY {times: [onnxc, peer], batch}."""
    workdir = job["workdir"]
    with open(os.path.join(workdir, "inputs.json")) as f:
        names = json.load(f)
    arrays = np.load(os.path.join(workdir, "inputs.npz"))
    leaves = [(n, arrays["i%d" % k]) for k, n in enumerate(names)]
    order = ["peer.onnx", "onnxc.onnx"] if job["peer_first"] else ["onnxc.onnx", "peer.onnx"]
    made = {f: zoo.ort_session(os.path.join(workdir, f)) for f in order}
    sessions = [made["onnxc.onnx"], made["peer.onnx"]]
    feeds = [feeds_for(s, leaves) for s in sessions]
    times, batch = interleaved(sessions, feeds, job["runs"], job["budget"], job["sample_ms"])
    print("LATENCY " + json.dumps({"times": times, "batch": batch}), flush=True)


def run_onnxc(spec, case, ref, a, workdir, r):
    """zoo.run_onnxc with the bench's --opset."""
    import onnxc
    os.environ["ONNXC"] = a.onnxc
    r["stage"] = "export"
    path = os.path.join(workdir, "onnxc.onnx")
    try:
        onnxc.export(case.model, case.args, path, kwargs=case.kwargs or None,
                     dynamic_shapes=case.dynamic, opset=a.opset,
                     external_data=None if a.embedded else True)
    except onnxc.ConversionError as e:
        r["stage"] = "bridge" if e.returncode is None else "onnxc"
        raise
    r["nodes"] = zoo.node_count(path)
    zoo.check_file(r, path, case, ref, spec)


def child(spec, a):
    import torch
    import bench_exporter as be   # inspect_onnx: nodes, histogram, size
    torch.set_num_threads(1)
    workdir = os.path.abspath(os.path.join(a.keep, spec[-1])) if a.keep else \
        tempfile.mkdtemp(prefix="onnxc-bench-modern.")
    os.makedirs(workdir, exist_ok=True)
    res = {"onnxc": {"stage": "build", "ok": False, "detail": "", "nodes": None, "diff": None},
           "peer": {"stage": "build", "ok": False, "detail": "", "nodes": None, "diff": None}}
    try:
        try:
            case = zoo.build(spec)
            ref = zoo.eager(case.model, case.args, case.kwargs)
        except Exception as e:
            res["onnxc"]["detail"] = res["peer"]["detail"] = zoo.short_message(e)
            return res
        for side, fn, args in (("onnxc", run_onnxc, (spec, case, ref, a, workdir)),
                               ("peer", zoo.run_peer, (spec, case, ref, workdir))):
            r = res[side]
            t0 = time.perf_counter()
            zoo.guarded(fn, r, *args)
            r["seconds"] = time.perf_counter() - t0
            path = os.path.join(workdir, side + ".onnx")
            if r["nodes"] is not None and os.path.exists(path):
                info = be.inspect_onnx(path)
                r.update(nodes=info["nodes"], size=info["size"], hist=info["hist"])
        if res["onnxc"]["ok"] and res["peer"]["ok"] and not a.no_latency:
            try:
                latency(res, case, workdir, a)
            except Exception as e:
                res["latency_error"] = zoo.short_message(e)
        return res
    finally:
        if not a.keep:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
        print("BENCH-RESULT " + json.dumps(res), flush=True)


# -- the parent ------------------------------------------------------------------------

def run_child(spec, a):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec),
           "--onnxc", a.onnxc, "--runs", str(a.runs), "--budget", str(a.budget),
           "--sample-ms", str(a.sample_ms), "--opset", str(a.opset), "--procs", str(a.procs)]
    cmd += ["--no-latency"] if a.no_latency else []
    cmd += ["--embedded"] if a.embedded else []
    cmd += ["--keep", a.keep] if a.keep else []
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false")
    fail = {"stage": "?", "ok": False, "nodes": None, "diff": None}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
    except subprocess.TimeoutExpired:
        why = dict(fail, detail="timed out after %d s" % a.timeout)
        return {"onnxc": why, "peer": dict(why)}
    lines = [l for l in p.stdout.splitlines() if l.startswith("BENCH-RESULT ")]
    if lines:
        return json.loads(lines[-1][len("BENCH-RESULT "):])
    tail = (p.stderr or "").strip().splitlines()
    why = dict(fail, detail="exit %d: %s" % (p.returncode, tail[-1][:200] if tail else ""))
    return {"onnxc": why, "peer": dict(why)}


def fmt_side(r):
    return "ok" if r["ok"] else "%s: %s" % (r["stage"], r["detail"][:70])


def fmt_size(n):
    return "-" if n is None else ("%.1f MB" % (n / 1e6) if n >= 1e6 else "%.0f kB" % (n / 1e3))


def tie_or_better(lat):
    return round(lat["ratio"], 2) <= 1.00 or lat["lo"] <= 1.0


def histogram_lines(name, res):
    ho, hp = res["onnxc"].get("hist") or {}, res["peer"].get("hist") or {}
    ops = sorted(set(ho) | set(hp), key=lambda o: (-(ho.get(o, 0) - hp.get(o, 0)), o))
    out = ["%s: nodes onnxc %s, peer %s" % (name, res["onnxc"]["nodes"], res["peer"]["nodes"]),
           "%-40s %7s %7s %7s" % ("op", "onnxc", "peer", "diff")]
    for o in ops:
        x, y = ho.get(o, 0), hp.get(o, 0)
        out.append("%-40s %7d %7d %+7d" % (o, x, y, x - y))
    return out


def report(rows, load0, load1, a, wall):
    head = ("model", "nodes onnxc/peer", "size onnxc/peer", "latency onnxc/peer",
            "ratio [95%]", "note")
    table = []
    both = fewer = fast = 0
    logs = []
    for name, res in rows:
        o, p = res["onnxc"], res["peer"]
        nodes = "%s/%s" % (o["nodes"] if o["nodes"] is not None else "-",
                           p["nodes"] if p["nodes"] is not None else "-")
        size = "%s/%s" % (fmt_size(o.get("size")), fmt_size(p.get("size")))
        lat, ratio, note = res.get("latency"), "", ""
        if o["ok"] and p["ok"]:
            both += 1
            fewer += o["nodes"] <= p["nodes"]
            if o["nodes"] > p["nodes"]:
                note = "more nodes"
            if lat:
                fast += tie_or_better(lat)
                logs.append(math.log(lat["ratio"]))
                ratio = "%.2f [%.2f..%.2f]" % (lat["ratio"], lat["lo"], lat["hi"])
                if not tie_or_better(lat):
                    note = (note + ", " if note else "") + "slower"
            elif res.get("latency_error"):
                note = "latency: " + res["latency_error"][:60]
        else:
            note = "; ".join("%s %s" % (k, fmt_side(res[k])) for k in ("onnxc", "peer")
                             if not res[k]["ok"])
        table.append((name, nodes, size,
                      "%.3f/%.3f ms" % (lat["onnxc_ms"], lat["peer_ms"]) if lat else "",
                      ratio, note))
    w = [max(len(head[i]), *(len(t[i]) for t in table)) for i in range(len(head))]
    fmt = " | ".join("%%-%ds" % x for x in w)
    print("| " + fmt % head + " |")
    print("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for t in table:
        print("| " + fmt % t + " |")
    print()
    line = "%d models; both convert and match PyTorch on %d; onnxc has no more nodes on %d " \
           "of them" % (len(rows), both, fewer)
    if logs:
        line += "; latency at or below the peer's (ratio <= 1.00, or a tie) on %d of %d, " \
                "geometric mean of the ratio %.3f" % (fast, len(logs), math.exp(sum(logs) / len(logs)))
    print(line + ".")
    if getattr(a, "left", None):
        print("Not run: %d torchvision builders over the zoo test's parameter budget "
              "(--large runs them)." % len(a.left))
    print("Load average (1 min) %.2f at the start, %.2f at the end; wall time %.0f s; "
          "onnxc %s at opset %d, weights %s." % (load0, load1, wall, a.onnxc, a.opset,
                                                 "embedded" if a.embedded else "in external data"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", dest="pattern", action="append",
                    help="models whose name or family contains PATTERN or matches it as a glob "
                         "(repeatable; default: the whole modern zoo)")
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC_BUILD",
                                                      os.path.join(REPO, "build", "onnxc")))
    ap.add_argument("--runs", type=int, default=30, help="timed rounds a model (default 30)")
    ap.add_argument("--budget", type=float, default=20,
                    help="seconds of timed rounds a model, at least 10 rounds (default 20)")
    ap.add_argument("--sample-ms", type=float, default=20,
                    help="a round times a batch of inferences lasting about MS (default 20)")
    ap.add_argument("--opset", type=int, default=20,
                    help="onnxc's default-domain opset (default 20, onnxc.export's default "
                         "and the peer's)")
    ap.add_argument("--no-latency", action="store_true", help="nodes and sizes only")
    ap.add_argument("--embedded", action="store_true",
                    help="onnxc's file holds its weights (onnxc.export's default); without it "
                         "they go to external data, as the peer's do (torch.onnx.export's default)")
    ap.add_argument("--large", action="store_true",
                    help="also the torchvision builders the zoo test leaves to --large "
                         "(over its parameter budget)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds a model (default 900)")
    ap.add_argument("-j", dest="jobs", type=int, default=1,
                    help="models at once (default 1; more distorts the latencies)")
    ap.add_argument("--hist", metavar="MODEL",
                    help="print the op histograms of both files for MODEL (no latency)")
    ap.add_argument("--keep", metavar="DIR", help="keep the files in DIR/MODEL/")
    ap.add_argument("--save-json", metavar="FILE", help="write the raw results as JSON")
    ap.add_argument("--procs", type=int, default=8,
                    help="timing processes a model, half loading the peer's file first; the "
                         "rounds and the budget are split among them (default 8)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--latency-child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.latency_child:
        latency_child(json.loads(a.latency_child))
        return 0
    a.onnxc = os.path.abspath(a.onnxc)
    if os.path.isdir(a.onnxc):
        a.onnxc = os.path.join(a.onnxc, "onnxc")
    if a.child:
        child(json.loads(a.child), a)
        return 0
    if not os.access(a.onnxc, os.X_OK):
        ap.error("no onnxc at %s (build it, or give --onnxc)" % a.onnxc)
    if a.hist:
        a.pattern, a.no_latency = [a.hist], True
    budget = {} if a.large or a.hist else zoo.tv_budget_skips()
    models = [(n, s) for n, f, s in zoo.all_models()
              if not a.pattern or any(p in n or p == f or fnmatch.fnmatch(n, p)
                                      for p in a.pattern)]
    left = [n for n, s in models if s[0] == "torchvision" and s[2] in budget]
    models = [(n, s) for n, s in models if n not in left]
    a.left = left
    if left:
        print("Left to --large (over the zoo test's parameter budget): %d models (%s)."
              % (len(left), ", ".join(left)), file=sys.stderr)
    if a.hist:
        models = [m for m in models if m[0] == a.hist] or models[:1]
    if not models:
        ap.error("no model matches")
    load0, t0 = os.getloadavg()[0], time.time()
    import concurrent.futures
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futs = [pool.submit(run_child, s, a) for _, s in models]
        for (name, _), fut in zip(models, futs):
            res = fut.result()
            rows.append((name, res))
            lat = res.get("latency")
            print("%-36s nodes %s/%s%s" % (
                name, res["onnxc"]["nodes"], res["peer"]["nodes"],
                "  ratio %.3f" % lat["ratio"] if lat else
                "  " + "; ".join("%s %s" % (k, fmt_side(res[k])) for k in ("onnxc", "peer")
                                 if not res[k]["ok"])), file=sys.stderr, flush=True)
    if a.save_json:
        with open(a.save_json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.hist:
        print("\n".join(histogram_lines(*rows[0])))
        return 0
    report(rows, load0, os.getloadavg()[0], a, time.time() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
