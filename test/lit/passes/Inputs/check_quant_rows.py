"""Checks a model the quantize pass wrote with -quantize-embedding from
make_quant_embed.py's tables against check_quant.py's NumPy quantization
(blocks along each row, K = the table's axis 1):

  - each quantized table decoded from the file's bytes
    (GatherBlockQuantized's packed rows, or the int8/uint8 codes a Gather
    reads) has NumPy's codes, scales and zero points;
  - ONNX Runtime's gathered rows equal NumPy's dequantized rows (a float
    table's, its own), and the tied LM head's logits NumPy's product of
    the dequantized rows and the dequantized table (R, the table the
    model's own indices gather, is not read: it stays float, which the
    lit test checks).

    check_quant_rows.py DIR MODEL.onnx BITS BLOCK ZERO_POINTS(0|1) FLOAT_TABLES

FLOAT_TABLES: the tables expected to stay float, comma-separated, or -.
"""
import sys

import numpy as np
import onnx
import onnxruntime as ort

import check_quant as cq

d, path = sys.argv[1], sys.argv[2]
cq.bits, cq.block, cq.zp = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
floats = set() if sys.argv[6] == "-" else set(sys.argv[6].split(","))
bits, zp = cq.bits, cq.zp

w = cq.weights(d + "/w.safetensors")
m = onnx.load(path)
inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
packed = any(n.op_type == "GatherBlockQuantized" for n in m.graph.node)


def decode(name, shape):
    """Codes (signed when symmetric), scales and zero points of a table's
    rows as the file holds them."""
    v, k = shape
    nb = -(-k // cq.block)
    q, s = inits[name + "_rows_quant"], inits[name + "_rows_scale"].astype(np.float32)
    if packed:
        codes = cq.nibbles(q.tobytes(), v * k, False).reshape(v, k) if bits == 4 else q.astype(np.int64)
        if not zp:
            codes = codes - (1 << (bits - 1))
    else:
        codes = q.astype(np.int64)
    z = np.zeros_like(s)
    if zp:
        zr = inits[name + "_rows_zero_point"]
        z = cq.nibbles(zr.tobytes(), zr.size * 8 // bits, False).reshape(v, -1)[:, :nb] if packed and bits == 4 else zr
    return codes, s, z


deq = {}
for name in ("E", "P", "O"):
    if name in floats:
        deq[name] = w[name]
        print("%s float %s" % (name, name + "_rows_quant" not in inits and name in inits))
        continue
    q, s, z, deq[name] = cq.ref_quant(w[name], 1)
    got = decode(name, w[name].shape)
    print("%s codes %s scales %s zero points %s" % (
        name, np.array_equal(got[0], q), np.array_equal(got[1], s), np.array_equal(got[2], z)))

ids, pos = np.load(d + "/ids.npy"), np.load(d + "/pos.npy")
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
e, p, o, logits = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(
    None, {"ids": ids, "pos": pos})[:4]
rows = [np.abs(e - deq["E"][ids]).max(), np.abs(p - deq["P"][pos]).max(), np.abs(o - deq["O"][pos]).max()]
print("rows vs NumPy: max abs diff %.1e, exact: %s" % (max(rows), max(rows) == 0))
head = cq.ref_quant(w["E"], 1)[3]
ref = deq["E"][ids] @ head.T
err = float(np.abs(logits - ref).max() / np.abs(ref).max())
print("logits vs NumPy: rel err %.1e, within 1e-5: %s" % (err, err < 1e-5))
