"""Checks a model the quantize pass wrote from make_quant_mlp.py's MLP
against a NumPy implementation of the same quantization, written here
from the format's definition (docs/weight_quantization.md), not from the
pass:

  - each quantized weight's codes, scales and zero points, decoded from
    the file's bytes (MatMulNBits' packed rows, or DequantizeLinear's
    int4/int8 tensors), equal NumPy's;
  - ONNX Runtime's outputs equal NumPy's forward pass on the dequantized
    weights up to f32 rounding, and stay close to the float model's
    (cosine similarity).

    check_quant.py DIR MODEL.onnx BITS BLOCK ZERO_POINTS(0|1) [NAME:KAXIS,...]

With a list of weights (and the K axis of each), only those weights'
quantization is checked (any model).
"""
import json
import struct
import sys

import numpy as np
import onnx
import onnxruntime as ort

# The quantization checked, set by main() (or by a script importing this one).
bits, block, zp = 4, 32, False


def weights(p):
    raw = open(p, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for k, v in json.loads(raw[8:8 + n]).items():
        dt = np.float16 if v["dtype"] == "F16" else np.float32
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dt).reshape(v["shape"])
    return out


def ref_quant(w, kaxis):
    """Codes (signed when symmetric), scales and zero points of w [.., ..]
    with blocks of `block` along kaxis; the outputs keep w's layout, the K
    axis counted in blocks for the scales."""
    x = w.astype(np.float32)
    if kaxis == 0:
        x = x.T                                   # rows of K
    n, k = x.shape
    nb = -(-k // block)
    pad = np.zeros((n, nb * block), np.float32)
    pad[:, :k] = x
    blocks = pad.reshape(n, nb, block)
    valid = (np.arange(nb * block) < k).reshape(nb, block)
    if zp:
        qmax = (1 << bits) - 1
        lo = np.minimum(np.where(valid, blocks, 0).min(axis=2), 0).astype(np.float32)
        hi = np.maximum(np.where(valid, blocks, 0).max(axis=2), 0).astype(np.float32)
        s = ((hi - lo) / np.float32(qmax)).astype(w.dtype).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(s == 0, 0, np.clip(np.rint(-lo / s), 0, qmax))
            q = np.where(s[..., None] == 0, z[..., None],
                         np.clip(np.rint(blocks / s[..., None]) + z[..., None], 0, qmax))
    else:
        qmax = (1 << (bits - 1)) - 1
        vals = np.where(valid, blocks, 0)
        m = np.take_along_axis(vals, np.abs(vals).argmax(axis=2)[..., None], axis=2)[..., 0]
        s = (m.astype(np.float32) / np.float32(-qmax - 1)).astype(w.dtype).astype(np.float32)
        z = np.zeros_like(s)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(s[..., None] == 0, 0, np.clip(np.rint(blocks / s[..., None]), -qmax - 1, qmax))
    q = q.reshape(n, nb * block)[:, :k].astype(np.int64)
    deq = ((q - np.repeat(z, block, axis=1)[:, :k]) * np.repeat(s, block, axis=1)[:, :k]).astype(np.float32)
    if kaxis == 0:
        return q.T, s.T, z.T, deq.T
    return q, s, z, deq


def nibbles(raw, count, signed):
    b = np.frombuffer(raw, np.uint8)
    v = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:count].astype(np.int64)
    return np.where(v > 7, v - 16, v) if signed else v


def decode_nbits(inits, name, kshape, kaxis):
    """Codes in w's layout (offset back to signed when symmetric), scales,
    zero points, from MatMulNBits' [N, nblocks, blob] bytes."""
    b, s = inits[name + "_q"], inits[name + "_scale"]
    n, nb, blob = b.dims
    k = kshape[kaxis]
    raw = onnx.numpy_helper.to_array(b)
    if bits == 4:
        codes = nibbles(raw.tobytes(), n * nb * block, False).reshape(n, nb * block)
    else:
        codes = raw.reshape(n, nb * block).astype(np.int64)
    zrow = (nb * bits + 7) // 8
    if zp:
        zr = onnx.numpy_helper.to_array(inits[name + "_zero_point"]).reshape(n, zrow)
        z = nibbles(zr.tobytes(), n * zrow * 8 // bits, False).reshape(n, -1)[:, :nb] if bits == 4 else zr[:, :nb].astype(np.int64)
        pad_ok = bool((codes[:, k:] == np.repeat(z, block, axis=1)[:, k:]).all())
    else:
        codes = codes - (1 << (bits - 1))
        z = np.zeros((n, nb))
        pad_ok = bool((codes[:, k:] == 0).all())
    sc = onnx.numpy_helper.to_array(s).astype(np.float32).reshape(n, nb)
    codes = codes[:, :k]
    if kaxis == 0:
        return codes.T, sc.T, z.T, pad_ok
    return codes, sc, z, pad_ok


def decode_dq(inits, name, shape):
    q, s = inits[name + "_quant"], inits[name + "_scale"]
    count = int(np.prod(shape))
    if bits == 4:
        codes = nibbles(q.raw_data, count, not zp).reshape(shape)
    else:
        codes = np.frombuffer(q.raw_data, np.uint8 if zp else np.int8).astype(np.int64).reshape(shape)
    sc = onnx.numpy_helper.to_array(s).astype(np.float32)
    if zp:
        zt = inits[name + "_zero_point"]
        zc = int(np.prod(zt.dims))
        z = nibbles(zt.raw_data, zc, False).reshape(zt.dims) if bits == 4 else np.frombuffer(zt.raw_data, np.uint8).reshape(zt.dims)
    else:
        z = np.zeros_like(sc)
    return codes, sc, z, True


def main():
    global bits, block, zp
    d, path = sys.argv[1], sys.argv[2]
    bits, block, zp = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
    w = weights(d + "/w.safetensors")
    m = onnx.load(path, load_external_data=False)
    onnx.external_data_helper.load_external_data_for_model(m, d)
    inits = {t.name: t for t in m.graph.initializer}
    nbits = any(n.op_type == "MatMulNBits" for n in m.graph.node)
    kaxes = {"w1": 1, "w2": 0, "w3": 1, "w4": 0}
    if len(sys.argv) > 6:
        kaxes = {k: int(v) for k, v in (e.split(":") for e in sys.argv[6].split(","))}
    deq = {}
    for name, kaxis in kaxes.items():
        # -O1 and up fold a weight's Transpose: the quantized tensor is then
        # the transposed weight's, K on the other axis.
        base, wt = name, w[name]
        if base + "_scale" not in inits:
            base, wt, kaxis = name + "_transpose", wt.T, 1 - kaxis
        q, s, z, dq = ref_quant(wt, kaxis)
        deq[name] = dq.T if base != name else dq
        got = decode_nbits(inits, base, wt.shape, kaxis) if nbits else decode_dq(inits, base, wt.shape)
        print("%s codes %s scales %s zero points %s padding %s" % (
            name, np.array_equal(got[0], q), np.array_equal(got[1], s), np.array_equal(got[2], z), got[3]))

    if len(sys.argv) > 6:
        return
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 64), dtype=np.float32)
    y = rng.standard_normal((2, 40)).astype(np.float16)


    def forward(W):
        h = np.maximum(x @ W["w1"].astype(np.float32).T, 0) @ W["w2"].astype(np.float32)
        o1 = h.reshape(6, 40) @ W["w3"].astype(np.float32).T + w["c3"]
        o2 = y.astype(np.float32) @ W["w4"].astype(np.float32)
        return o1, o2


    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    got = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x, "y": y})
    ref_q, ref_f = forward(deq), forward(w)


    def cos(a, b):
        a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


    e1 = float(np.abs(got[0] - ref_q[0]).max() / np.abs(ref_q[0]).max())
    e2 = float(np.abs(got[1].astype(np.float32) - ref_q[1]).max() / np.abs(ref_q[1]).max())
    print("f32 output vs NumPy on the dequantized weights: rel err %.2e, within 1e-5: %s" % (e1, e1 < 1e-5))
    print("f16 output vs NumPy on the dequantized weights: rel err %.2e, within 2e-3: %s" % (e2, e2 < 2e-3))
    c1, c2 = cos(got[0], ref_f[0]), cos(got[1].astype(np.float32), ref_f[1])
    print("cosine vs the float model: %.5f %.5f, above 0.99: %s" % (c1, c2, min(c1, c2) > 0.99))


if __name__ == "__main__":
    main()
