#!/usr/bin/python3
"""bench_scale.py - the bridge + onnxc -O2 against torch.onnx.export as depth grows.

    /usr/bin/python3 bench/bench_scale.py [--blocks 8,32,128] [--onnxc PATH]
                                          [--no-exporter] [--exporter-max BLOCKS] [--profile BLOCKS]
                                          [--stages]

A GPT-style model (the e2e zoo's GPT: the tutorial's decoder layers,
embedding dim 64, 4 heads, vocabulary 1024, context 256, 30 tokens) at
each depth, exported in one run, side by side, by torch.onnx.export (the
TorchScript exporter, opset 17, constant folding) and by
utils/fxir_export.py followed by onnxc -O2 (default rel/onnxc, else
build/onnxc).  Both are warmed up once on a 1-block model first.  Prints
the table: seconds per tool and the exporter's time over the pipeline's
(above 1: the pipeline is faster).

--profile N runs the bridge on an N-block model under cProfile instead and
prints the functions with the most cumulative and own time.

--stages prints, instead of the table, the bridge's stages at each depth
(wall and CPU seconds of the trace, the printing of the text and the
safetensors file) beside the time torch.jit.trace takes to capture the
same model (TorchScript's C++ tracer, which the bridge does not use).
"""
import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
import bench_exporter as be  # noqa: E402  (export_torch, export_bridge, compile_onnxc; sets sys.path)
import models  # noqa: E402
import torch  # noqa: E402


def build(blocks):
    models._seed()
    m = models.GPT(n_layers=blocks, embedding_dim=64, num_heads=4).eval()
    return m, (torch.randint(0, 1024, (1, 30), dtype=torch.int64),)


def profile(blocks, d):
    m, args = build(blocks)
    pr = cProfile.Profile()
    pr.enable()
    be.export_bridge(m, args, None, os.path.join(d, "p.fxir"))
    pr.disable()
    st = pstats.Stats(pr)
    print("total %.2f s" % st.total_tt)
    st.sort_stats("cumulative").print_stats(30)
    st.sort_stats("tottime").print_stats(25)


class _Clock:
    """Wall and CPU seconds spent in the functions it wraps, by label."""

    def __init__(self):
        self.spent = {}

    def wrap(self, obj, attr, label):
        orig = getattr(obj, attr)

        def timed(*a, **kw):
            w, c = time.perf_counter(), time.process_time()
            try:
                return orig(*a, **kw)
            finally:
                sw, sc = self.spent.get(label, (0.0, 0.0))
                self.spent[label] = (sw + time.perf_counter() - w, sc + time.process_time() - c)
        setattr(obj, attr, timed)
        return orig


def stages(blocks, d):
    fx = be.fxir_export
    clock = _Clock()
    saved = [(fx, "_trace_make_fx", clock.wrap(fx, "_trace_make_fx", "trace")),
             (fx._Printer, "module", clock.wrap(fx._Printer, "module", "print")),
             (fx, "write_safetensors", clock.wrap(fx, "write_safetensors", "safetensors"))]
    try:
        m, args = build(1)
        be.export_bridge(m, args, None, os.path.join(d, "w.fxir"))
        with torch.no_grad():
            torch.jit.trace(m, args, check_trace=False)
        print("| blocks | bridge | trace | print | safetensors | torch.jit.trace |")
        print("|---|---|---|---|---|---|")
        for n in blocks:
            m, args = build(n)
            clock.spent = {}
            w, c = time.perf_counter(), time.process_time()
            be.export_bridge(m, args, None, os.path.join(d, "s%d.fxir" % n))
            total = (time.perf_counter() - w, time.process_time() - c)
            w, c = time.perf_counter(), time.process_time()
            with torch.no_grad():
                torch.jit.trace(m, args, check_trace=False)
            jit = (time.perf_counter() - w, time.process_time() - c)
            cells = [total] + [clock.spent.get(k, (0.0, 0.0)) for k in ("trace", "print", "safetensors")] + [jit]
            print("| %d | %s |" % (n, " | ".join("%.2f s (CPU %.2f s)" % x for x in cells)))
            sys.stdout.flush()
    finally:
        for obj, attr, orig in saved:
            setattr(obj, attr, orig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", default="8,32,128")
    ap.add_argument("--onnxc")
    ap.add_argument("--no-exporter", action="store_true")
    ap.add_argument("--exporter-max", type=int, default=0,
                    help="run torch.onnx.export only up to this many blocks (0: always)")
    ap.add_argument("--profile", type=int)
    ap.add_argument("--stages", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="bench_scale.") as d:
        if a.profile:
            return profile(a.profile, d)
        if a.stages:
            return stages([int(x) for x in a.blocks.split(",")], d)
        onnxc = os.path.abspath(a.onnxc) if a.onnxc else next((p for p in (os.path.join(REPO, "rel", "onnxc"), os.path.join(REPO, "build", "onnxc"))
                                 if os.path.exists(p)), "onnxc")
        m, args = build(1)
        be.export_bridge(m, args, None, os.path.join(d, "w.fxir"))
        be.compile_onnxc(onnxc, os.path.join(d, "w.fxir"), os.path.join(d, "w.onnx"))
        if not a.no_exporter:
            be.export_torch(m, args, ["input_ids"], None, os.path.join(d, "w_t.onnx"))
        print("| blocks | torch.onnx.export | fxir_export.py | onnxc -O2 | whole pipeline vs exporter |")
        print("|---|---|---|---|---|")
        for n in [int(x) for x in a.blocks.split(",")]:
            m, args = build(n)
            fx, ox = os.path.join(d, "m%d.fxir" % n), os.path.join(d, "m%d.onnx" % n)
            tb = be.export_bridge(m, args, None, fx)
            to = be.compile_onnxc(onnxc, fx, ox)
            if a.no_exporter or (a.exporter_max and n > a.exporter_max):
                print("| %d | - | %.2f s | %.2f s | - |" % (n, tb, to))
            else:
                tt = be.export_torch(m, args, ["input_ids"], None, os.path.join(d, "t%d.onnx" % n))
                print("| %d | %.2f s | %.2f s | %.2f s | %.1fx |" % (n, tt, tb, to, tt / (tb + to)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
