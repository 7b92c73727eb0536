#!/usr/bin/python3
"""bench_1b.py - a 1.1-billion-parameter Llama-architecture decoder end to end.

    /usr/bin/python3 bench/bench_1b.py [--config tinyllama|small|tiny] [--layers N]
                                       [--seq 8] [--onnxc PATH] [--keep DIR]
                                       [--peer-python PY | --no-peer]

Builds a decoder with Llama's architecture (RMSNorm, rotary position
embeddings, SwiGLU MLP, grouped-query attention, untied output head) from
a config, f32 with random weights (seeded; nothing is downloaded), then in
three processes, one after the other, each under /usr/bin/time -v:

  1. bridge  build the model, run PyTorch once on random token ids (the
             reference output), export with utils/fxir_export.py
             (m.fxir + m.safetensors)
  2. onnxc   onnxc m.fxir -O2 -o m.onnx -external-data
  3. ort     run m.onnx once in ONNX Runtime (utils/ortlib.py: a server) on the
             same ids and compare with PyTorch's output
  4. peer     under the torch 2.x environment's Python (--peer-python, by
             default ~/.cache/onnxc/venv-torch2/bin/python): build the same
             model (same seed), torch.onnx.export(..., dynamo=True) with
             external data, run that in ONNX Runtime on the same ids and
             compare with PyTorch's output there

and prints wall time and peak RSS per stage (a stage's peak is its largest
process: ORT's is ortlib's server, under the torch 2.x environment's
Python), the weights' size and the largest tensor's, onnxc's peak
against the largest tensor, and the max abs difference between ONNX
Runtime and PyTorch, for onnxc and for the peer, and the bridge's and
the peer's stage times.  Stages 1 to 3 run under the Python that runs
the bench (Debian's torch 1.13 captures with make_fx, torch 2.x with
torch.export).  --config tinyllama is
TinyLlama-1.1B's published shape (d 2048, 22 layers, 32 heads, 4 kv heads,
ffn 5632, vocab 32000); --layers overrides the depth.  Needs about 1.1x the
weights of free memory and 2.2x of free disk (TMPDIR moves the files).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = {
    "tinyllama": dict(vocab=32000, dim=2048, layers=22, heads=32, kv_heads=4, ffn=5632),
    "small": dict(vocab=4096, dim=512, layers=4, heads=8, kv_heads=2, ffn=1376),
    "tiny": dict(vocab=256, dim=64, layers=2, heads=4, kv_heads=2, ffn=160),
}
MAX_SEQ = 256


def build_model(cfg):
    import torch
    from torch import nn
    import torch.nn.functional as F

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.h, self.kv, self.hd = c["heads"], c["kv_heads"], c["dim"] // c["heads"]
            self.q_proj = nn.Linear(c["dim"], self.h * self.hd, bias=False)
            self.k_proj = nn.Linear(c["dim"], self.kv * self.hd, bias=False)
            self.v_proj = nn.Linear(c["dim"], self.kv * self.hd, bias=False)
            self.o_proj = nn.Linear(self.h * self.hd, c["dim"], bias=False)

        def forward(self, x, cos, sin, mask):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            rep = self.h // self.kv     # grouped-query attention: each kv head serves rep query heads
            k = k[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.h, s, self.hd)
            v = v[:, :, None].expand(b, self.kv, rep, s, self.hd).reshape(b, self.h, s, self.hd)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd)) + mask
            y = F.softmax(att, dim=-1) @ v
            return self.o_proj(y.transpose(1, 2).reshape(b, s, self.h * self.hd))

    class MLP(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.gate_proj = nn.Linear(c["dim"], c["ffn"], bias=False)
            self.up_proj = nn.Linear(c["dim"], c["ffn"], bias=False)
            self.down_proj = nn.Linear(c["ffn"], c["dim"], bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.input_layernorm = RMSNorm(c["dim"])
            self.self_attn = Attention(c)
            self.post_attention_layernorm = RMSNorm(c["dim"])
            self.mlp = MLP(c)

        def forward(self, x, cos, sin, mask):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self, c):
            super().__init__()
            hd = c["dim"] // c["heads"]
            self.embed_tokens = nn.Embedding(c["vocab"], c["dim"])
            self.layers = nn.ModuleList(Block(c) for _ in range(c["layers"]))
            self.norm = RMSNorm(c["dim"])
            self.lm_head = nn.Linear(c["dim"], c["vocab"], bias=False)
            inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2).float() / hd))
            ang = torch.outer(torch.arange(MAX_SEQ).float(), inv)
            ang = torch.cat((ang, ang), dim=-1)
            self.register_buffer("cos_cached", ang.cos(), persistent=False)
            self.register_buffer("sin_cached", ang.sin(), persistent=False)
            self.register_buffer("causal", torch.full((MAX_SEQ, MAX_SEQ), float("-inf")).triu(1),
                                 persistent=False)

        def forward(self, input_ids):
            s = input_ids.shape[1]
            x = self.embed_tokens(input_ids)
            cos, sin = self.cos_cached[:s], self.sin_cached[:s]
            mask = self.causal[:s, :s]
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            return self.lm_head(self.norm(x))

    # Linear's default init scaled for depth keeps the activations of a
    # random 22-layer residual stack in a sane range.
    with torch.no_grad():
        m = Llama(cfg)
        for name, p in m.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")):
                p.mul_(1.0 / math.sqrt(2 * cfg["layers"]))
    return m.eval()


def stage_bridge(d, cfg, seq):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(REPO, "utils"))
    # This checkout's onnxc, even where an editable install of another is set up.
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable_")]
    import fxir_export
    torch.manual_seed(0)
    torch.set_num_threads(2)
    t0 = time.time()
    m = build_model(cfg)
    t1 = time.time()
    ids = torch.randint(0, cfg["vocab"], (1, seq))
    with torch.no_grad():
        ref = m(ids)
    np.save(os.path.join(d, "ids.npy"), ids.numpy())
    np.save(os.path.join(d, "ref.npy"), ref.numpy())
    t2 = time.time()
    fxir_export.export(m, (ids,), os.path.join(d, "m.fxir"))
    t3 = time.time()
    sizes = [p.numel() * p.element_size() for p in m.state_dict().values()]
    json.dump({"params": sum(p.numel() for p in m.parameters()), "weight_bytes": sum(sizes),
               "largest": max(sizes), "build_s": t1 - t0, "torch_s": t2 - t1, "export_s": t3 - t2},
              open(os.path.join(d, "bridge.json"), "w"))


def stage_peer(d, cfg, seq):
    """torch.onnx.export(dynamo=True) on the same model and ids, timed by
    its steps, then its file in ONNX Runtime against PyTorch."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(REPO, "utils"))
    import ortlib
    torch.manual_seed(0)
    torch.set_num_threads(2)
    t0 = time.time()
    m = build_model(cfg)
    t1 = time.time()
    ids = torch.from_numpy(np.load(os.path.join(d, "ids.npy")))
    with torch.no_grad():
        ref = m(ids).numpy()
    t2 = time.time()
    path = os.path.join(d, "peer.onnx")
    torch.onnx.export(m, (ids,), path, dynamo=True, external_data=True, input_names=["input_ids"])
    t3 = time.time()
    with ortlib.Runner(timeout=3600) as r:
        out = list(r.run(path, {"input_ids": ids.numpy()}).values())[0]
    json.dump({"torch": torch.__version__, "build_s": t1 - t0, "torch_s": t2 - t1, "export_s": t3 - t2,
               "max_abs": float(np.abs(out - ref).max()),
               "weights_same": bool(np.array_equal(ref, np.load(os.path.join(d, "ref.npy"))))},
              open(os.path.join(d, "peer.json"), "w"))


def stage_ort(d):
    import numpy as np
    sys.path.insert(0, os.path.join(REPO, "utils"))
    import ortlib
    ids, ref = np.load(os.path.join(d, "ids.npy")), np.load(os.path.join(d, "ref.npy"))
    with ortlib.Runner(timeout=3600) as r:
        t0 = time.time()
        outs = r.run(os.path.join(d, "m.onnx"), {"input_ids": ids})
        t1 = time.time()
    out = list(outs.values())[0]
    json.dump({"shape": list(out.shape), "max_abs": float(np.abs(out - ref).max()),
               "ref_max": float(np.abs(ref).max()), "run_s": t1 - t0},
              open(os.path.join(d, "ort.json"), "w"))


def timed(cmd):
    """(wall seconds, peak RSS bytes of the largest process) of cmd."""
    r = subprocess.run(["/usr/bin/time", "-v"] + cmd, stderr=subprocess.PIPE, text=True)
    if r.returncode:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), r.stderr[-4000:]))
    f = dict(line.strip().rpartition(": ")[::2] for line in r.stderr.splitlines() if ": " in line)
    wall = f["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    return (sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall))),
            int(f["Maximum resident set size (kbytes)"]) * 1024)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="tinyllama", choices=sorted(CONFIGS))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--onnxc")
    ap.add_argument("--keep")
    ap.add_argument("--peer-python", default=os.path.join(os.path.expanduser("~"), ".cache", "onnxc",
                                                          "venv-torch2", "bin", "python"))
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    a = ap.parse_args()
    cfg = dict(CONFIGS[a.config])
    if a.layers:
        cfg["layers"] = a.layers
    if a.stage == "bridge":
        return stage_bridge(a.dir, cfg, a.seq)
    if a.stage == "ort":
        return stage_ort(a.dir)
    if a.stage == "peer":
        return stage_peer(a.dir, cfg, a.seq)
    onnxc = a.onnxc or next((p for p in (os.path.join(REPO, "rel", "onnxc"), os.path.join(REPO, "build", "onnxc"))
                             if os.path.exists(p)), "onnxc")
    d = a.keep or tempfile.mkdtemp(prefix="bench_1b.")
    os.makedirs(d, exist_ok=True)
    me = [sys.executable, os.path.abspath(__file__), "--config", a.config, "--seq", str(a.seq), "--dir", d]
    if a.layers:
        me += ["--layers", str(a.layers)]
    try:
        print("config %s %s, seq %d, onnxc %s" % (a.config, json.dumps(cfg), a.seq, onnxc))
        rows = []
        wall, rss = timed(me + ["--stage", "bridge"])
        b = json.load(open(os.path.join(d, "bridge.json")))
        rows.append(("bridge (build model, PyTorch forward, fxir_export)", wall, rss))
        wall, rss = timed([onnxc, os.path.join(d, "m.fxir"), "-O2", "-o", os.path.join(d, "m.onnx"), "-external-data"])
        onnxc_rss = rss
        rows.append(("onnxc -O2 -external-data", wall, rss))
        onnx_bytes = os.path.getsize(os.path.join(d, "m.onnx"))
        data_bytes = os.path.getsize(os.path.join(d, "m.onnx.data"))
        wall, rss = timed(me + ["--stage", "ort"])
        o = json.load(open(os.path.join(d, "ort.json")))
        rows.append(("ONNX Runtime (load + one forward)", wall, rss))
        peer = None
        if not a.no_peer and os.path.exists(a.peer_python):
            wall, rss = timed([a.peer_python] + me[1:] + ["--stage", "peer"])
            peer = json.load(open(os.path.join(d, "peer.json")))
            rows.append(("peer: build model, PyTorch forward, torch.onnx.export(dynamo=True), "
                         "ONNX Runtime", wall, rss))
        print("parameters %d (%.2f B), weights %.1f MB, largest tensor %.1f MB" %
              (b["params"], b["params"] / 1e9, b["weight_bytes"] / 1e6, b["largest"] / 1e6))
        print("bridge: model built in %.1f s, PyTorch forward %.1f s, fxir_export %.1f s" %
              (b["build_s"], b["torch_s"], b["export_s"]))
        print("m.onnx %.1f kB + m.onnx.data %.1f MB; ORT run (after load) %.1f s" %
              (onnx_bytes / 1e3, data_bytes / 1e6, o["run_s"]))
        print()
        print("| stage | wall | peak RSS | peak RSS / weights |")
        print("|---|---|---|---|")
        for name, wall, rss in rows:
            print("| %s | %.1f s | %.1f MB | %.3f |" % (name, wall, rss / 1e6, rss / b["weight_bytes"]))
        print()
        print("onnxc peak RSS %.1f MB = %.3f x the largest tensor (%.1f MB)" %
              (onnxc_rss / 1e6, onnxc_rss / b["largest"], b["largest"] / 1e6))
        print("output %s, max abs difference ORT vs PyTorch %.3g (largest |logit| %.3g)" %
              (o["shape"], o["max_abs"], o["ref_max"]))
        if peer:
            conv = b["export_s"] + rows[1][1]
            print("peer (torch %s): model built in %.1f s, PyTorch forward %.1f s, torch.onnx.export %.1f s; "
                  "its file in ORT within %.3g of PyTorch%s" %
                  (peer["torch"], peer["build_s"], peer["torch_s"], peer["export_s"], peer["max_abs"],
                   "" if peer["weights_same"] else " (its model's weights differ from the bridge stage's)"))
            print("conversion: fxir_export + onnxc %.1f s against torch.onnx.export %.1f s (%.2fx)" %
                  (conv, peer["export_s"], peer["export_s"] / conv))
    finally:
        if not a.keep:
            shutil.rmtree(d)


if __name__ == "__main__":
    main()
