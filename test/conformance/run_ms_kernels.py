#!/usr/bin/env python3
"""The runtime's kernels for ONNX Runtime's contrib ops (com.microsoft: the
ones onnxc writes, runtime/kernels_ms.c) against onnxruntime itself.

Each case is a one-node model built with onnx.helper, run on seeded random
inputs by onnxruntime (CPU, graph optimizations off) and by `onnxc run`;
every output must agree within rtol/atol.  Needs the Python that has onnx
and onnxruntime (the torch 2.x environment).

    ~/.cache/onnxc/venv-torch2/bin/python test/conformance/run_ms_kernels.py --onnxc build/onnxc [-v] [-k NAME]

The last line is `N passed, N failed, N skipped`; exit 1 when one failed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

F32 = TensorProto.FLOAT
U8 = TensorProto.UINT8
I8 = TensorProto.INT8
I32 = TensorProto.INT32
I64 = TensorProto.INT64
DEFAULT_DOMAIN = {"SimplifiedLayerNormalization"}


def model(op, inputs, outputs, attrs, dtypes):
    """A one-node model: inputs {name: array}, outputs names ("" = omitted);
    ops of ONNX Runtime's default domain are named in DEFAULT_DOMAIN."""
    vin = [helper.make_tensor_value_info(n, dtypes.get(n, F32), list(a.shape))
           for n, a in inputs.items() if a is not None]
    names = [n for n in inputs]
    node = helper.make_node(op, [n if inputs.get(n) is not None else "" for n in names],
                            outputs, domain="" if op in DEFAULT_DOMAIN else "com.microsoft", **attrs)
    vout = [helper.make_tensor_value_info(n, F32, None) for n in outputs if n]
    g = helper.make_graph([node], op, vin, vout)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10)


def nbits_case(rng, bits, block, k, n, zp, bias, m=3):
    nblk = (k + block - 1) // block
    ins = {"A": rng.standard_normal((2, m, k)).astype(np.float32),
           "B": rng.integers(0, 256, (n, nblk, block * bits // 8), dtype=np.uint8),
           "scales": (rng.random(n * nblk) * 0.1 + 0.01).astype(np.float32)}
    dt = {"B": U8}
    if zp or bias:
        ins["zero_points"] = rng.integers(0, 256, n * ((nblk * bits + 7) // 8), dtype=np.uint8) if zp else None
        dt["zero_points"] = U8
    if bias:
        ins["g_idx"] = None
        ins["bias"] = rng.standard_normal(n).astype(np.float32)
    return ins, dt, {"K": k, "N": n, "bits": bits, "block_size": block}


def gqa_case(rng, b, s, past, hq, hkv, seqlens=None, total=None, bias=None, d=8, **attrs):
    """GroupQueryAttention's inputs: past None (absent) or its length P;
    total_sequence_length P + S unless given, seqlens_k total - 1 each
    unless given; bias an attention_bias array or None."""
    r = rng.standard_normal
    f = np.float32
    total = total if total is not None else (past or 0) + s
    ins = {"query": r((b, s, hq * d)).astype(f), "key": r((b, s, hkv * d)).astype(f),
           "value": r((b, s, hkv * d)).astype(f),
           "past_key": None if past is None else r((b, hkv, past, d)).astype(f),
           "past_value": None if past is None else r((b, hkv, past, d)).astype(f),
           "seqlens_k": np.array(seqlens if seqlens is not None else [total - 1] * b, np.int32),
           "total_sequence_length": np.array(total, np.int32)}
    if bias is not None:
        ins.update(cos_cache=None, sin_cache=None, position_ids=None, attention_bias=bias)
    return ins, dict(attrs, num_heads=hq, kv_num_heads=hkv), {"seqlens_k": I32, "total_sequence_length": I32}


def pad_mask(b, s, total, pads):
    """An attention_bias [b, 1, s, total] masking the first pads[i] keys of
    batch i with the f32 lowest (a left-padded batch)."""
    m = np.zeros((b, 1, s, total), np.float32)
    for i, n in enumerate(pads):
        m[i, :, :, :n] = np.finfo(np.float32).min
    return m


def gqa_cases(rng):
    r = rng.standard_normal
    f = np.float32
    gqa = [
        ("g1_prompt_b2_p0", dict(b=2, s=5, past=0, hq=2, hkv=2, scale=0.3)),
        ("g4_prompt_b1_nopast", dict(b=1, s=6, past=None, hq=4, hkv=1)),
        ("g4_decode_b2", dict(b=2, s=1, past=6, hq=4, hkv=1)),
        ("g1_chunk_b1", dict(b=1, s=3, past=4, hq=2, hkv=2)),
        ("g4_chunk_b1_window", dict(b=1, s=3, past=5, hq=8, hkv=2, local_window_size=4)),
        ("g4_prompt_leftpad_bias", dict(b=2, s=5, past=0, hq=4, hkv=1, bias=pad_mask(2, 5, 5, [0, 2]))),
        ("g1_decode_leftpad_bias", dict(b=2, s=1, past=6, hq=2, hkv=2, bias=pad_mask(2, 1, 7, [3, 0]))),
        ("g4_prompt_rightpad", dict(b=2, s=5, past=0, hq=4, hkv=1, seqlens=[4, 2])),
        ("g1_prompt_rightpad_window_softcap", dict(b=2, s=6, past=None, hq=2, hkv=2, seqlens=[1, 5],
                                                   local_window_size=2, softcap=1.5)),
        ("g4_decode_ragged", dict(b=2, s=1, past=6, hq=4, hkv=1, seqlens=[6, 3])),
        ("g4_prompt_window", dict(b=2, s=6, past=0, hq=4, hkv=1, local_window_size=3)),
        ("g4_decode_window", dict(b=2, s=1, past=6, hq=8, hkv=2, local_window_size=2)),
        ("g4_prompt_softcap_bias", dict(b=2, s=5, past=0, hq=4, hkv=1, softcap=0.8,
                                        bias=(3 * r((1, 4, 5, 5))).astype(f))),
        ("g1_decode_bias_b_h", dict(b=2, s=1, past=4, hq=2, hkv=2, bias=r((2, 2, 1, 5)).astype(f))),
    ]
    for tag, kw in gqa:
        ins, attrs, dt = gqa_case(rng, **kw)
        yield "GroupQueryAttention", tag, ins, attrs, dt, ["out", "present_key", "present_value"]


def rope_case(rng, b, s, h, d, n, pos=None, four=False, rd=0, heads=True, **attrs):
    """RotaryEmbedding's inputs: x [b, s, h*d] (or [b, h, s, d] when four),
    caches [n, rd/2] (rd = d unless given), position_ids pos (an array,
    or random rows of the caches [b, s] when None); num_heads unless heads
    is false."""
    r = rng.standard_normal
    f = np.float32
    half = (rd or d) // 2
    pos = rng.integers(0, n, (b, s)) if pos is None else np.asarray(pos)
    ins = {"input": r((b, h, s, d) if four else (b, s, h * d)).astype(f), "position_ids": pos.astype(np.int64),
           "cos_cache": r((n, half)).astype(f), "sin_cache": r((n, half)).astype(f)}
    attrs = dict(attrs, num_heads=h) if heads else attrs
    if rd:
        attrs["rotary_embedding_dim"] = rd
    return ins, attrs, {"position_ids": I64}


def rope_cases(rng):
    rope = [
        ("3d_b1_s5_d8", dict(b=1, s=5, h=2, d=8, n=16)),
        ("3d_b3_s5_d8_repeated", dict(b=3, s=5, h=2, d=8, n=6, pos=[[0, 0, 3, 3, 5], [5, 4, 4, 1, 0], [2] * 5])),
        ("3d_b3_s1_d64", dict(b=3, s=1, h=4, d=64, n=32)),
        ("3d_b3_s5_d8_interleaved", dict(b=3, s=5, h=2, d=8, n=16, interleaved=1)),
        ("3d_b1_s5_d64_interleaved", dict(b=1, s=5, h=2, d=64, n=8, interleaved=1)),
        ("3d_b3_s5_d64_row_a_token", dict(b=3, s=5, h=2, d=64, n=15, pos=np.arange(15).reshape(3, 5))),
        ("3d_b3_s5_d8_no_num_heads", dict(b=3, s=5, h=4, d=8, n=16, heads=False)),
        ("4d_b3_s5_d8", dict(b=3, s=5, h=2, d=8, n=16, four=True, heads=False)),
        ("4d_b1_s1_d64_interleaved", dict(b=1, s=1, h=3, d=64, n=8, four=True, interleaved=1)),
        ("4d_b3_s5_d64_row_a_token", dict(b=3, s=5, h=2, d=64, n=15, four=True, pos=np.arange(15).reshape(3, 5))),
        ("3d_b3_s5_d8_partial4", dict(b=3, s=5, h=2, d=8, n=16, rd=4)),
        ("3d_b1_s5_d64_partial32_interleaved", dict(b=1, s=5, h=2, d=64, n=16, rd=32, interleaved=1)),
        ("4d_b3_s5_d8_partial6", dict(b=3, s=5, h=2, d=8, n=16, four=True, rd=6)),
        ("3d_b3_s5_d8_start", dict(b=3, s=5, h=2, d=8, n=8, pos=[3])),
        ("4d_b3_s1_d64_start_scalar", dict(b=3, s=1, h=2, d=64, n=8, four=True, pos=7)),
    ]
    for tag, kw in rope:
        ins, attrs, dt = rope_case(rng, **kw)
        yield "RotaryEmbedding", tag, ins, attrs, dt, ["Y"]


def cases(rng):
    r = rng.standard_normal
    f = np.float32
    yield "FusedMatMul", "transB", {"A": r((2, 3, 4, 5)).astype(f), "B": r((2, 3, 6, 5)).astype(f)}, \
        {"transB": 1, "alpha": 0.125}, {}, ["Y"]
    yield "FusedMatMul", "transA_bcast", {"A": r((3, 5, 4)).astype(f), "B": r((5, 6)).astype(f)}, \
        {"transA": 1}, {}, ["Y"]
    yield "FusedMatMul", "both_alpha", {"A": r((2, 7, 4)).astype(f), "B": r((2, 3, 7)).astype(f)}, \
        {"transA": 1, "transB": 1, "alpha": -2.5}, {}, ["Y"]
    yield "Gelu", "plain", {"X": (3 * r((3, 7))).astype(f)}, {}, {}, ["Y"]
    yield "BiasGelu", "plain", {"A": (3 * r((2, 3, 8))).astype(f), "B": r(8).astype(f)}, {}, {}, ["C"]
    yield "FastGelu", "plain", {"X": (3 * r((4, 9))).astype(f)}, {}, {}, ["Y"]
    yield "FastGelu", "bias", {"X": (3 * r((2, 4, 9))).astype(f), "bias": r(9).astype(f)}, {}, {}, ["Y"]
    sln = {"input": r((2, 3, 16)).astype(f), "skip": r((2, 3, 16)).astype(f), "gamma": r(16).astype(f)}
    yield "SkipLayerNormalization", "gamma", dict(sln), {"epsilon": 1e-5}, {}, ["out"]
    yield "SkipLayerNormalization", "beta_bias_sum", dict(sln, beta=r(16).astype(f), bias=r(16).astype(f)), \
        {"epsilon": 1e-5}, {}, ["out", "", "", "sum"]
    yield "SkipLayerNormalization", "rank2_eps_default", {"input": r((5, 32)).astype(f), "skip": r((5, 32)).astype(f),
                                                          "gamma": r(32).astype(f), "beta": r(32).astype(f)}, \
        {}, {}, ["out", "", "", "sum"]
    x = r((2, 3, 16)).astype(f)
    yield "SimplifiedLayerNormalization", "plain", {"X": x, "scale": r(16).astype(f)}, {"epsilon": 1e-5}, {}, ["Y"]
    yield "SimplifiedLayerNormalization", "inv_default_eps", {"X": x, "scale": r(16).astype(f)}, {}, {}, ["Y", "inv"]
    yield "SkipSimplifiedLayerNormalization", "gamma", {"input": x, "skip": r((2, 3, 16)).astype(f),
                                                        "gamma": r(16).astype(f)}, {"epsilon": 1e-6}, {}, ["out"]
    yield "SkipSimplifiedLayerNormalization", "bias_sum", {"input": x, "skip": r((2, 3, 16)).astype(f),
                                                           "gamma": r(16).astype(f), "bias": r(16).astype(f)}, \
        {}, {}, ["out", "", "", "sum"]
    a = r((2, 3, 16)).astype(f)
    yield "DynamicQuantizeMatMul", "i8_per_column_bias", \
        {"A": a, "B": rng.integers(-128, 128, (16, 8), dtype=np.int8), "b_scale": (rng.random(8) * 0.05).astype(f),
         "b_zero_point": None, "bias": r(8).astype(f)}, {}, {"B": I8}, ["Y"]
    yield "DynamicQuantizeMatMul", "u8_zp", \
        {"A": a, "B": rng.integers(0, 256, (16, 8), dtype=np.uint8), "b_scale": np.array([0.02], f),
         "b_zero_point": np.array([128], np.uint8)}, {}, {"B": U8, "b_zero_point": U8}, ["Y"]
    yield "DynamicQuantizeMatMul", "positive_a", \
        {"A": np.abs(a) + 1, "B": rng.integers(-128, 128, (16, 4), dtype=np.int8),
         "b_scale": np.array(0.03, f)}, {}, {"B": I8}, ["Y"]
    for bits, block, k, n, zp, bias in ((4, 32, 64, 8, False, False), (4, 16, 40, 6, True, False),
                                         (4, 32, 50, 5, False, True), (8, 16, 24, 7, True, True),
                                         (8, 32, 64, 4, False, False), (2, 16, 33, 3, True, False)):
        ins, dt, attrs = nbits_case(rng, bits, block, k, n, zp, bias)
        yield "MatMulNBits", "b%d_blk%d_k%d%s%s" % (bits, block, k, "_zp" if zp else "", "_bias" if bias else ""), \
            ins, attrs, dt, ["Y"]
    yield from gqa_cases(rng)
    yield from rope_cases(rng)


def run_onnxc(onnxc, path, ins, outs, tmp):
    cmd = [onnxc, "run", path, "-o", os.path.join(tmp, "out")]
    for name, a in ins.items():
        if a is None:
            continue
        p = os.path.join(tmp, name + ".npy")
        np.save(p, a)
        cmd += ["--input", "%s=%s" % (name, p)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip() or r.stdout.strip())
    return [np.load(os.path.join(tmp, "out", o + ".npy")) for o in outs if o]


def run_ort(path, ins, outs):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3  # not the warning that a present's length differs from the past's
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run([o for o in outs if o], {n: a for n, a in ins.items() if a is not None})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnxc", default="build/onnxc")
    ap.add_argument("-k", action="append", default=[], help="only cases whose name contains this")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for op, tag, ins, attrs, dt, outs in cases(rng):
            name = "%s.%s" % (op, tag)
            if a.k and not any(k in name for k in a.k):
                continue
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model(op, ins, outs, attrs, dt), path)
            try:
                want = run_ort(path, ins, outs)
                got = run_onnxc(a.onnxc, path, ins, outs, tmp)
                bad = []
                for o, g, w in zip([o for o in outs if o], got, want):
                    if g.shape != w.shape:
                        bad.append("%s: shape %s, onnxruntime %s" % (o, g.shape, w.shape))
                    elif not np.allclose(g, w, rtol=a.rtol, atol=a.atol):
                        bad.append("%s: max abs error %.3g" % (o, float(np.max(np.abs(g - w)))))
                    elif a.v:
                        print("  %s: max abs error %.3g" % (o, float(np.max(np.abs(g - w))) if g.size else 0.0))
            except Exception as e:  # an onnxc or onnxruntime failure is this case's failure
                bad = [" / ".join(str(e).splitlines()[:3]) or type(e).__name__]
            if bad:
                failed += 1
                print("FAIL %s: %s" % (name, "; ".join(bad)))
            else:
                passed += 1
                if a.v:
                    print("ok   %s" % name)
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
