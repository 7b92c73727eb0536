#!/usr/bin/env python3
"""bench_7b.py - a 7-billion-parameter Llama-architecture decoder (Llama-2-7B's
shape) converted on a machine whose memory barely holds its weights.

    ~/.cache/onnxc/venv-torch2/bin/python bench/bench_7b.py
        [--layers N] [--dtype bf16|f16|f32] [--dir DIR] [--seq 8]
        [--onnxc PATH] [--no-peer] [--peer-cap-gb 17] [--skip-check]

Runs on torch 2.x (the torch 2.x environment).  Every stage is its own
process, run one after the other under /usr/bin/time -v, so the peak RSS
of the whole pipeline is the largest stage's:

  ckpt    write the checkpoint DIR/llama7b-<dtype>-<layers>l.safetensors,
          one tensor at a time (seeded random weights, nothing downloaded),
          unless a valid one is there already (its header names the same
          config and seed, and the file has the size the header implies)
  bridge  build the model on fake tensors (no weight memory), trace it with
          torch.export through onnxc's bridge, which writes m.fxir naming
          the checkpoint as the weights file (onnxc.bridge.export(weights=))
  onnxc   onnxc m.fxir -O2 -o DIR/m.onnx -external-data -external-in-place:
          the initializers' external data point into the checkpoint itself
          (location, offset, length), so no weight is copied, in memory or
          on disk
  eager   PyTorch eager on the same checkpoint (mapped, not read into
          memory) on a prompt of --seq random token ids: the reference
  check   the ONNX model run by onnxc's runtime (`onnxc run`; ONNX
          Runtime's CPU provider has no bf16 MatMul) on the same ids,
          logits compared with the reference
  peer    torch.onnx.export(model, (ids,), dynamo=True) on the same model
          with the checkpoint's weights, external data, under a watchdog
          that kills it past --peer-cap-gb of RSS or when the machine has
          under 1.5 GB available; its wall time and peak, or how it failed
  peercheck  the peer's file run by `onnxc run` on the same ids, compared
          with the reference the same way

Stage times and peak RSS are printed as a table; the conversion is the
bridge and onnxc stages, compared with the peer.  The checkpoint is kept
(DIR defaults to ~/.cache/onnxc/bench_7b; Llama-2-7B in bf16 is 13.5 GB),
the other files are removed at the end unless --keep.  --layers N builds
the same width with N layers (2 to develop with).
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = dict(vocab=32000, dim=4096, layers=32, heads=32, ffn=11008, eps=1e-5, theta=10000.0)
SEED = 7
ST_DTYPE = {"bf16": "BF16", "f16": "F16", "f32": "F32"}
ELEM = {"bf16": 2, "f16": 2, "f32": 4}
ALIGN = 4096        # the data region starts on a page: every tensor does (all sizes are pages)


def torch_dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def use_this_checkout():
    """Import onnxc from this checkout, even where an editable install of
    another one is on the import path."""
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable_")]


# ---------------------------------------------------------------------------
# the model: Llama's architecture with Hugging Face's parameter names

def build_model(cfg, dtype):
    """The decoder, with parameters of `dtype`, on whatever device or
    tensor mode is current (fake tensors for the trace).  Rotary angles and
    the causal mask are computed in forward, so the model has parameters
    only: its state_dict is the checkpoint."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    class RMSNorm(nn.Module):
        def __init__(self, d, eps):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * h.to(x.dtype)

    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    class Attention(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.h, self.hd = c["heads"], c["dim"] // c["heads"]
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                setattr(self, n, nn.Linear(c["dim"], c["dim"], bias=False))

        def forward(self, x, cos, sin, mask):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
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
            self.input_layernorm = RMSNorm(c["dim"], c["eps"])
            self.self_attn = Attention(c)
            self.post_attention_layernorm = RMSNorm(c["dim"], c["eps"])
            self.mlp = MLP(c)

        def forward(self, x, cos, sin, mask):
            x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
            return x + self.mlp(self.post_attention_layernorm(x))

    class Llama(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c = c
            self.embed_tokens = nn.Embedding(c["vocab"], c["dim"])
            self.layers = nn.ModuleList(Block(c) for _ in range(c["layers"]))
            self.norm = RMSNorm(c["dim"], c["eps"])
            self.lm_head = nn.Linear(c["dim"], c["vocab"], bias=False)

        def forward(self, input_ids):
            s = input_ids.shape[1]
            x = self.embed_tokens(input_ids)
            hd = self.c["dim"] // self.c["heads"]
            inv = 1.0 / (self.c["theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
            ang = torch.outer(torch.arange(s, dtype=torch.float32), inv)
            ang = torch.cat((ang, ang), dim=-1)
            cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
            mask = torch.full((s, s), float("-inf")).triu(1).to(x.dtype)
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            return self.lm_head(self.norm(x))

    # Parameters are made in the target dtype (converting afterwards would
    # hold two copies, and fake parameters cannot be swapped).
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        m = Llama(cfg)
    finally:
        torch.set_default_dtype(old)
    return m.eval()


def param_specs(cfg):
    """(name, shape, init) of every parameter in state_dict order; init is
    ("normal", std), ("uniform", bound) or ("ones",)."""
    d, f, L = cfg["dim"], cfg["ffn"], cfg["layers"]
    out_scale = 1.0 / math.sqrt(2 * L)   # keeps a deep random residual stack in range
    specs = [("embed_tokens.weight", [cfg["vocab"], d], ("normal", 1.0))]
    for i in range(L):
        p = "layers.%d." % i
        specs.append((p + "input_layernorm.weight", [d], ("ones",)))
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            bound = 1 / math.sqrt(d) * (out_scale if n == "o_proj" else 1.0)
            specs.append((p + "self_attn.%s.weight" % n, [d, d], ("uniform", bound)))
        specs.append((p + "post_attention_layernorm.weight", [d], ("ones",)))
        specs.append((p + "mlp.gate_proj.weight", [f, d], ("uniform", 1 / math.sqrt(d))))
        specs.append((p + "mlp.up_proj.weight", [f, d], ("uniform", 1 / math.sqrt(d))))
        specs.append((p + "mlp.down_proj.weight", [d, f], ("uniform", out_scale / math.sqrt(f))))
    specs.append(("norm.weight", [d], ("ones",)))
    specs.append(("lm_head.weight", [cfg["vocab"], d], ("uniform", 1 / math.sqrt(d))))
    return specs


# ---------------------------------------------------------------------------
# the checkpoint

def checkpoint_path(d, cfg, dtype):
    return os.path.join(d, "llama7b-%s-%dl.safetensors" % (dtype, cfg["layers"]))


def checkpoint_header(cfg, dtype):
    """(header bytes, data size): the header padded so the data starts on a page."""
    header = {"__metadata__": {"format": "pt", "onnxc.bench_7b": json.dumps(
        {"config": cfg, "dtype": dtype, "seed": SEED}, sort_keys=True)}}
    off = 0
    for name, shape, _ in param_specs(cfg):
        n = math.prod(shape) * ELEM[dtype]
        header[name] = {"dtype": ST_DTYPE[dtype], "shape": shape, "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % ALIGN)
    return text, off


def checkpoint_valid(path, cfg, dtype):
    import struct
    text, size = checkpoint_header(cfg, dtype)
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            same = n == len(text) and f.read(n) == text
        return same and os.path.getsize(path) == 8 + n + size
    except (OSError, struct.error):
        return False


def stage_ckpt(d, cfg, dtype):
    """Write the checkpoint a tensor at a time (the largest, 0.5 GB in f32
    while drawn, is the most held)."""
    import struct
    import torch
    torch.set_num_threads(2)
    os.makedirs(d, exist_ok=True)
    path = checkpoint_path(d, cfg, dtype)
    t0 = time.time()
    reused = checkpoint_valid(path, cfg, dtype)
    if not reused:
        text, _ = checkpoint_header(cfg, dtype)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for i, (name, shape, init) in enumerate(param_specs(cfg)):
                g = torch.Generator().manual_seed(SEED * 100003 + i)
                t = torch.empty(shape, dtype=torch_dtype(dtype))
                if init[0] == "normal":
                    t.normal_(0.0, init[1], generator=g)
                elif init[0] == "uniform":
                    t.uniform_(-init[1], init[1], generator=g)
                else:
                    t.fill_(1.0)
                f.write(t.view(-1).view(torch.uint8).numpy())
                del t
        os.replace(tmp, path)
    json.dump({"reused": reused, "bytes": os.path.getsize(path), "s": time.time() - t0},
              open(os.path.join(d, "ckpt.json"), "w"))


def mapped_state_dict(path):
    """{name: tensor} over a read-only mapping of the checkpoint: nothing is
    read into memory until used, and pages read stay shared with the page
    cache (no second copy)."""
    import mmap
    import struct
    import torch
    f = open(path, "rb")
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    base = 8 + n
    dtypes = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
    out = {}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the mapping is copy-on-write: never written
        for name, e in header.items():
            if name == "__metadata__":
                continue
            lo, hi = e["data_offsets"]
            dt = dtypes[e["dtype"]]
            t = torch.frombuffer(mm, dtype=dt, count=(hi - lo) // torch.empty(0, dtype=dt).element_size(),
                                 offset=base + lo)
            out[name] = t.view(e["shape"])
    return out


def real_model(cfg, dtype, path):
    """The model with the checkpoint's tensors as its parameters (assigned,
    not copied)."""
    import torch
    with torch.device("meta"):
        m = build_model(cfg, torch_dtype(dtype))
    m.load_state_dict(mapped_state_dict(path), assign=True, strict=True)
    return m.eval()


# ---------------------------------------------------------------------------
# stages

def stage_bridge(d, cfg, dtype, seq):
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    torch.set_num_threads(2)
    use_this_checkout()
    t0 = time.time()
    from onnxc import bridge
    t1 = time.time()
    with FakeTensorMode(allow_non_fake_inputs=True):
        m = build_model(cfg, torch_dtype(dtype))
        ids = torch.zeros(1, seq, dtype=torch.int64)
        t2 = time.time()
        bridge.export(m, (ids,), os.path.join(d, "m.fxir"), input_names=["input_ids"],
                      weights=checkpoint_path(d, cfg, dtype))
    t3 = time.time()
    json.dump({"import_s": t1 - t0, "build_s": t2 - t1, "export_s": t3 - t2,
               "capture": bridge.last_capture},
              open(os.path.join(d, "bridge.json"), "w"))


def stage_eager(d, cfg, dtype, seq):
    import numpy as np
    import torch
    torch.set_num_threads(2)
    t0 = time.time()
    m = real_model(cfg, dtype, checkpoint_path(d, cfg, dtype))
    ids = torch.randint(0, cfg["vocab"], (1, seq), generator=torch.Generator().manual_seed(SEED))
    t1 = time.time()
    with torch.no_grad():
        out = m(ids)
    t2 = time.time()
    np.save(os.path.join(d, "ids.npy"), ids.numpy())
    np.save(os.path.join(d, "ref.npy"), out.float().numpy())
    json.dump({"load_s": t1 - t0, "forward_s": t2 - t1}, open(os.path.join(d, "eager.json"), "w"))


def stage_peer(d, cfg, dtype, seq):
    import torch
    torch.set_num_threads(2)
    t0 = time.time()
    m = real_model(cfg, dtype, checkpoint_path(d, cfg, dtype))
    ids = torch.zeros(1, seq, dtype=torch.int64)
    t1 = time.time()
    torch.onnx.export(m, (ids,), os.path.join(d, "peer.onnx"), dynamo=True, external_data=True,
                      input_names=["input_ids"])
    t2 = time.time()
    json.dump({"load_s": t1 - t0, "export_s": t2 - t1}, open(os.path.join(d, "peer.json"), "w"))


# ---------------------------------------------------------------------------
# running stages: wall time and peak RSS

def mem_available():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def tree_rss(pgid):
    """Sum of the RSS of every process in process group pgid."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:      # field 5, pgrp
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")   # field 24, rss
        except (OSError, IndexError, ValueError):
            pass
    return total


def run_stage(cmd, cap=None):
    """Run cmd in its own process group under /usr/bin/time -v, sampling the
    group's RSS.  Returns (ok, wall s, peak RSS bytes, note).  With cap,
    the group is killed past cap bytes of RSS or when the machine has under
    1.5 GB available."""
    t0 = time.time()
    p = subprocess.Popen(["/usr/bin/time", "-v"] + cmd, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    peak, killed = 0, None
    import threading
    err = []
    reader = threading.Thread(target=lambda: err.append(p.stderr.read()))
    reader.start()
    while p.poll() is None:
        rss = tree_rss(p.pid)
        peak = max(peak, rss)
        if cap and killed is None and (rss > cap or mem_available() < (1536 << 20)):
            killed = "out of memory at %.1f GB after %.0f s" % (rss / 1e9, time.time() - t0)
            os.killpg(p.pid, signal.SIGKILL)
        time.sleep(0.1)
    reader.join()
    wall = time.time() - t0
    text = err[0] if err else ""
    f = dict(line.strip().rpartition(": ")[::2] for line in text.splitlines() if ": " in line)
    maxrss = int(f.get("Maximum resident set size (kbytes)", 0)) * 1024
    peak = max(peak, maxrss)
    if killed:
        return False, wall, peak, killed
    if p.returncode:
        tail = [l for l in text.splitlines() if not l.startswith("\t")][-12:]
        return False, wall, peak, "exit %d: %s" % (p.returncode, "\n".join(tail))
    return True, wall, peak, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=CONFIG["layers"])
    ap.add_argument("--dtype", default="bf16", choices=sorted(ST_DTYPE))
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--dir", default=os.path.join(os.path.expanduser("~"), ".cache", "onnxc", "bench_7b"))
    ap.add_argument("--onnxc")
    ap.add_argument("--keep", action="store_true", help="keep m.fxir, m.onnx and the peer's files")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--skip-check", action="store_true", help="no eager run and no onnxc run")
    ap.add_argument("--peer-cap-gb", type=float, default=17.0)
    ap.add_argument("--stages", default="ckpt,bridge,onnxc,eager,check,peer,peercheck",
                    help="the stages to run, comma-separated; a later one reuses an earlier one's files "
                    "from DIR (run before with --keep)")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    a = ap.parse_args()
    cfg = dict(CONFIG, layers=a.layers)
    d = os.path.abspath(a.dir)
    stages = {"ckpt": stage_ckpt, "bridge": stage_bridge, "eager": stage_eager, "peer": stage_peer}
    if a.stage == "ckpt":
        return stage_ckpt(d, cfg, a.dtype)
    if a.stage:
        return stages[a.stage](d, cfg, a.dtype, a.seq)
    os.makedirs(d, exist_ok=True)
    onnxc = a.onnxc or next((p for p in (os.path.join(REPO, n, "onnxc") for n in ("rel", "build"))
                             if os.path.exists(p)), "onnxc")
    me = [sys.executable, os.path.abspath(__file__), "--dir", d, "--layers", str(a.layers),
          "--dtype", a.dtype, "--seq", str(a.seq)]
    print("config %s %s, seq %d, onnxc %s, dir %s" % (a.dtype, json.dumps(cfg), a.seq, onnxc, d))
    ckpt = checkpoint_path(d, cfg, a.dtype)
    rows = []
    chosen = set(a.stages.split(","))
    if a.skip_check:
        chosen -= {"eager", "check"}
    if a.no_peer:
        chosen.discard("peer")

    def stage(name, cmd, cap=None, must=True):
        if name not in chosen:
            return True
        ok, wall, rss, note = run_stage(cmd, cap)
        rows.append((name, ok, wall, rss, note))
        print("  %-8s %s %7.1f s  peak RSS %6.2f GB %s" % (name, "ok  " if ok else "FAIL", wall,
                                                           rss / 1e9, note.splitlines()[0] if note else ""),
              flush=True)
        if not ok and must:
            print(note)
            report(rows, d, ckpt, None, None)
            sys.exit(1)
        return ok

    stage("ckpt", me + ["--stage", "ckpt"])
    stage("bridge", me + ["--stage", "bridge"])
    # The weights stay as the checkpoint lays them out (a Linear's
    # transpose is a node, not a transposed copy): -fold-limit keeps fold
    # from writing results past 16 MB.
    stage("onnxc", [onnxc, os.path.join(d, "m.fxir"), "-O2", "-fold-limit=%d" % (16 << 20),
                    "-o", os.path.join(d, "m.onnx"), "-external-in-place"])
    check = None
    stage("eager", me + ["--stage", "eager"])
    out = os.path.join(d, "onnxc_out.safetensors")
    stage("check", [onnxc, "run", os.path.join(d, "m.onnx"), "--input",
                    "input_ids=" + os.path.join(d, "ids.npy"), "-o", out])
    if "check" in chosen:
        check = compare(d, out)
    if "peer" in chosen:
        if mem_available() < (17 << 30):
            rows.append(("peer", False, 0, 0, "not run: %.1f GB available, 17 needed" % (mem_available() / 2**30)))
        else:
            stage("peer", me + ["--stage", "peer"], cap=int(a.peer_cap_gb * 1e9), must=False)
    peer_check = None
    if "peercheck" in chosen and os.path.exists(os.path.join(d, "peer.onnx")):
        out = os.path.join(d, "peer_out.safetensors")
        if stage("peercheck", [onnxc, "run", os.path.join(d, "peer.onnx"), "--input",
                               "input_ids=" + os.path.join(d, "ids.npy"), "-o", out], must=False):
            peer_check = compare(d, out)
    report(rows, d, ckpt, check, peer_check)
    if not a.keep:
        for n in ("m.fxir", "m.onnx", "m.onnx.data", "peer.onnx", "peer.onnx.data", "ids.npy", "ref.npy",
                  "onnxc_out.safetensors", "peer_out.safetensors"):
            if os.path.exists(os.path.join(d, n)):
                os.unlink(os.path.join(d, n))


def read_output(path):
    """The one tensor of onnxc run's safetensors output, as f32."""
    import struct
    import numpy as np
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    (name, e), = [(k, v) for k, v in json.loads(raw[8:8 + n]).items() if k != "__metadata__"]
    lo, hi = e["data_offsets"]
    data = raw[8 + n + lo:8 + n + hi]
    if e["dtype"] == "BF16":
        a = (np.frombuffer(data, np.uint16).astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.frombuffer(data, {"F16": np.float16, "F32": np.float32}[e["dtype"]]).astype(np.float32)
    return a.reshape(e["shape"])


def compare(d, out):
    import numpy as np
    ref = np.load(os.path.join(d, "ref.npy"))
    got = read_output(out)
    diff = np.abs(got - ref)
    top_ref, top_got = ref.argmax(-1), got.argmax(-1)
    return {"shape": list(got.shape), "max_abs": float(diff.max()), "mean_abs": float(diff.mean()),
            "ref_max": float(np.abs(ref).max()), "ref_std": float(ref.std()),
            "argmax_agree": float((top_ref == top_got).mean())}


def report(rows, d, ckpt, check, peer_check):
    size = os.path.getsize(ckpt) if os.path.exists(ckpt) else 0
    print()
    print("checkpoint %s: %.2f GB" % (ckpt, size / 1e9))
    for name in ("ckpt", "bridge", "eager", "peer"):
        p = os.path.join(d, name + ".json")
        if os.path.exists(p) and any(r[0] == name for r in rows):
            print("%s: %s" % (name, json.dumps({k: round(v, 2) if isinstance(v, float) else v
                                                for k, v in json.load(open(p)).items()})))
    print()
    print("| stage | wall | peak RSS | peak RSS / weights | result |")
    print("|---|---|---|---|---|")
    for name, ok, wall, rss, note in rows:
        print("| %s | %.1f s | %.2f GB | %.3f | %s |" % (name, wall, rss / 1e9, rss / size if size else 0,
                                                      "ok" if ok else "failed: " + note.splitlines()[0]))
    conv = [r for r in rows if r[0] in ("bridge", "onnxc")]
    if len(conv) == 2:
        wall = sum(r[2] for r in conv)
        print()
        print("onnxc conversion (bridge + onnxc): %.1f s, peak RSS %.2f GB (bound: weights + 2 GB = %.2f GB)"
              % (wall, max(r[3] for r in conv) / 1e9, (size + 2e9) / 1e9))
        peer = [r for r in rows if r[0] == "peer"]
        if peer and peer[0][1]:
            print("peer torch.onnx.export(dynamo=True): %.1f s, peak RSS %.2f GB: onnxc %.2fx faster"
                  % (peer[0][2], peer[0][3] / 1e9, peer[0][2] / wall))
        elif peer:
            print("peer torch.onnx.export(dynamo=True): failed: %s" % peer[0][4].splitlines()[0])
    for what, c in (("onnxc's m.onnx", check), ("the peer's peer.onnx", peer_check)):
        if c:
            print("logits of %s in onnxc run %s: max |diff to eager| %.4g, mean %.4g (largest |logit| %.3g, "
                  "std %.3g); argmax agrees on %.0f%% of positions" % (what, c["shape"], c["max_abs"], c["mean_abs"],
                                                                       c["ref_max"], c["ref_std"],
                                                                       100 * c["argmax_agree"]))


if __name__ == "__main__":
    main()
