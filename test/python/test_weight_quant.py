#!/usr/bin/python3
"""Weight-only quantization (onnxc.export(..., quantize="int4" | "int8"),
the quantize pass) on a small Llama (transformers, random weights from a
small config, nothing downloaded), at both targets: DequantizeLinear with
block_size (target "onnx", opset 21) and com.microsoft::MatMulNBits
(target "ort").

Each model is compared in ONNX Runtime with
  - PyTorch on the same model whose Linear weights were quantized and
    dequantized by NumPy here (ref_dequant: written from the format's
    definition in docs/weight_quantization.md, not from the pass): equal
    up to f32 rounding;
  - PyTorch on the float model: cosine similarity of the logits above
    0.97 (int4: 0.98 to 0.99 measured on this random two-layer model) and
    0.9999 (int8).
export_for_generation with quantize="int4", target="ort" generates the
tokens that generate() gives on the NumPy-dequantized model, for a Llama
and for a Qwen2 (biased q/k/v projections), in ONNX Runtime's forms
(SkipSimplifiedLayerNormalization, q/k/v and gate/up one MatMulNBits each,
the biases MatMulNBits' own).

quantize="int8-dynamic" (DynamicQuantTest) on a small BertModel, at both
targets (MatMulInteger; com.microsoft::DynamicQuantizeMatMul, and
MatMulIntegerToFloat where Q, K and V share one quantized A): the int8
codes and per-column scales in the file equal NumPy's (ref_dynamic), and
ONNX Runtime's last hidden state is within cosine 0.9999 of PyTorch's
float one; quantize_exclude leaves the products it matches float.

    ~/.cache/onnxc/venv-torch2/bin/python test/python/test_weight_quant.py [-v] [-k PATTERN]

The last line is `N passed, N failed, N skipped`.
"""

import copy
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import onnxc  # noqa: E402
from test_api import main  # noqa: E402

TORCH2 = hasattr(torch, "export")


def ref_dequant(w, bits, block, zero_points):
    """NumPy's round trip of a Linear weight w [N, K] (f32): blocks of
    `block` along K (the last one shorter), round half to even, the scale
    rounded to f32 before the codes are computed from it; symmetric: the
    block's value of largest magnitude m at code -2^(bits-1), s = m /
    -2^(bits-1)."""
    n, k = w.shape
    out = np.empty_like(w)
    for k0 in range(0, k, block):
        x = w[:, k0:k0 + block]
        if zero_points:
            qmax = np.float32((1 << bits) - 1)
            lo = np.minimum(x.min(axis=1, keepdims=True), 0)
            hi = np.maximum(x.max(axis=1, keepdims=True), 0)
            s = ((hi - lo) / qmax).astype(np.float32)
            safe = np.where(s == 0, np.float32(1), s)
            z = np.where(s == 0, 0, np.clip(np.rint(-lo / safe), 0, qmax))
            q = np.where(s == 0, z, np.clip(np.rint(x / safe) + z, 0, qmax))
            out[:, k0:k0 + block] = (q - z) * s
        else:
            qmax = np.float32((1 << (bits - 1)) - 1)
            m = np.take_along_axis(x, np.abs(x).argmax(axis=1)[:, None], axis=1)
            s = (m / (-qmax - 1)).astype(np.float32)
            safe = np.where(s == 0, np.float32(1), s)
            q = np.where(s == 0, 0, np.clip(np.rint(x / safe), -qmax - 1, qmax))
            out[:, k0:k0 + block] = q * s
    return out


def dequantized_copy(model, bits, block, zero_points):
    """model with every nn.Linear weight replaced by NumPy's round trip."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.Linear):
                w = mod.weight.detach().numpy().astype(np.float32)
                mod.weight.copy_(torch.from_numpy(ref_dequant(w, bits, block, zero_points)))
    return m


def cosine(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def small_llama(seed=0, arch="llama"):
    import transformers
    torch.manual_seed(seed)
    Config, Model = ((transformers.LlamaConfig, transformers.LlamaForCausalLM) if arch == "llama" else
                     (transformers.Qwen2Config, transformers.Qwen2ForCausalLM))
    cfg = Config(hidden_size=128, intermediate_size=352, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2,
                 vocab_size=512, use_cache=False, tie_word_embeddings=False)
    model = Model(cfg).eval()
    with torch.no_grad():   # Qwen2's q/k/v biases start at zero: make them count
        for mod in model.modules():
            if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
                mod.bias.copy_(0.5 * torch.randn_like(mod.bias))
    return model


@unittest.skipUnless(TORCH2, "needs torch 2.x (the torch 2.x environment)")
class WeightQuantTest(unittest.TestCase):
    def setUp(self):
        try:
            import onnxruntime  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            self.skipTest("needs %s" % e.name)
        self.dir = tempfile.mkdtemp(prefix="onnxc-wq.")

    def run_ort(self, path, ids, level="basic"):
        """At "basic" ONNX Runtime runs the graph as written; at "all" it
        also fuses DequantizeLinear + MatMul into its MatMulNBits with the
        session's default accuracy level 4 (A quantized to int8 a block at
        a time), which is no longer the file's arithmetic."""
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC if level == "basic"
                                       else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
        s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        return s.run(None, {s.get_inputs()[0].name: ids})[0]

    def check(self, target, bits, zero_points=False, block=32, accuracy_level=None):
        model = small_llama()
        ids = torch.randint(0, 512, (2, 11))
        path = os.path.join(self.dir, "llama_%s_%d_%d.onnx" % (target, bits, zero_points))
        onnxc.export(model, (ids,), path, dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}},
                     target=target, quantize="int%d" % bits, quantize_block=block,
                     quantize_zero_points=zero_points, quantize_accuracy_level=accuracy_level)
        import onnx
        g = onnx.load(path, load_external_data=False).graph
        inits = {t.name for t in g.initializer}
        quantized = [n for n in g.node if n.op_type == ("MatMulNBits" if target == "ort" else "DequantizeLinear")]
        if target == "ort":
            # every Linear, the LM head too; q/k/v and gate/up one product each
            self.assertEqual(len(quantized), 2 * 4 + 1)
            self.assertEqual(sum(n.op_type == "Split" for n in g.node), 2 * 2)
        else:
            self.assertEqual(len(quantized), 2 * 7 + 1)
        if accuracy_level is not None:
            self.assertTrue(all(a.i == accuracy_level for n in quantized for a in n.attribute
                                if a.name == "accuracy_level"))
        self.assertEqual([n.name for n in g.node if n.op_type in ("MatMul", "Gemm", "Transpose") and
                          n.input[len(n.input) > 1] in inits], [])
        for shape in ((2, 11), (1, 5)):
            ids = torch.randint(0, 512, shape)
            got = self.run_ort(path, ids.numpy())
            with torch.no_grad():
                ref = dequantized_copy(model, bits, block, zero_points)(ids).logits.numpy()
                flt = model(ids).logits.numpy()
            err = float(np.abs(got - ref).max() / np.abs(ref).max())
            cos = cosine(got, flt)
            cos_all = cosine(self.run_ort(path, ids.numpy(), "all"), flt)
            print("  %s int%d%s block %d %s: vs NumPy-dequantized %.2e (relative max), "
                  "cosine vs float %.5f (ORT's optimizations all on: %.5f)"
                  % (target, bits, " zero points" if zero_points else "", block, shape, err, cos, cos_all))
            # accuracy_level 4: ONNX Runtime quantizes A to int8 in the op
            self.assertLess(err, 1e-5 if accuracy_level is None else 3e-2, shape)
            self.assertGreater(cos, 0.97 if bits == 4 else 0.9999, shape)

    def test_int4_onnx(self):
        self.check("onnx", 4)

    def test_int4_ort(self):
        self.check("ort", 4)

    def test_int8_onnx(self):
        self.check("onnx", 8)

    def test_int8_ort(self):
        self.check("ort", 8)

    def test_int4_zero_points_ort(self):
        self.check("ort", 4, zero_points=True, block=16)

    def test_int4_ort_accuracy_level_4(self):
        self.check("ort", 4, accuracy_level=4)

    def test_int4_zero_points_onnx(self):
        self.check("onnx", 4, zero_points=True, block=64)

    def test_flags(self):
        model, x = small_llama(), torch.randint(0, 512, (1, 4))
        for bad in (dict(quantize="int3"), dict(quantize_block=64), dict(target="trt")):
            with self.assertRaises(ValueError):
                onnxc.export(model, (x,), os.path.join(self.dir, "bad.onnx"), **bad)
        with self.assertRaisesRegex(onnxc.ConversionError, "needs opset 21"):
            onnxc.export(model, (x,), os.path.join(self.dir, "old.onnx"), opset=20, quantize="int4")

    def test_generation_int4_ort(self):
        self.check_generation("llama")

    def test_generation_int4_ort_qwen2(self):
        self.check_generation("qwen2")

    def check_generation(self, arch):
        """export_for_generation(quantize="int4", target="ort"): greedy
        decoding in ONNX Runtime gives generate()'s tokens on the
        NumPy-dequantized model; the median decode step is printed next
        to the float file's.  The decoder has ONNX Runtime's forms: RMS
        normalizations as (Skip)SimplifiedLayerNormalization, one
        MatMulNBits for q/k/v and one for gate/up a layer, Qwen2's biases
        inside the MatMulNBits."""
        import onnx
        import onnxruntime as ort
        from onnxc.generation import greedy
        model = small_llama(1, arch)
        model.config.use_cache = True
        ref = dequantized_copy(model, 4, 32, False)
        prompt = torch.randint(0, 512, (1, 7))
        with torch.no_grad():
            want = ref.generate(prompt, max_new_tokens=16, do_sample=False, min_new_tokens=16,
                                pad_token_id=0)[:, 7:].numpy()
        steps = {}
        for name, kw in (("int4", dict(quantize="int4", target="ort")), ("float", dict(target="ort"))):
            out = os.path.join(self.dir, "gen_" + name)
            onnxc.export_for_generation(model, out, **kw)
            s = ort.InferenceSession(os.path.join(out, "model.onnx"), providers=["CPUExecutionProvider"])
            t0 = time.perf_counter()
            tokens = greedy(s, prompt.numpy(), max_new_tokens=16)[0]
            steps[name] = (time.perf_counter() - t0) / 16
            if name == "int4":
                self.assertEqual(tokens.tolist(), want.tolist())
                ops = [n.op_type for n in onnx.load(os.path.join(out, "model.onnx"),
                                                    load_external_data=False).graph.node]
                self.assertEqual(ops.count("SkipSimplifiedLayerNormalization"), 2 * 2)
                self.assertEqual(ops.count("SimplifiedLayerNormalization"), 1)
                self.assertEqual(ops.count("MatMulNBits"), 2 * 4 + 1)
                self.assertNotIn("Pow", ops)
        print("  generation (%s): 16 tokens equal to generate() on the dequantized model; "
              "mean step %.2f ms (int4) / %.2f ms (float)" % (arch, steps["int4"] * 1e3, steps["float"] * 1e3))


def ref_dynamic(w):
    """NumPy's int8-dynamic weight of a Linear weight w [N, K] (f32): B =
    w.T [K, N] in int8, one scale a column, s = max|x| / 127 in f32,
    round half to even, a zero column's codes 0."""
    b = w.T.astype(np.float32)
    s = (np.abs(b).max(axis=0) / np.float32(127)).astype(np.float32)
    safe = np.where(s == 0, np.float32(1), s)
    q = np.where(s == 0, 0, np.clip(np.rint(b / safe), -127, 127)).astype(np.int8)
    return q, s


def small_bert(seed=0):
    import transformers
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=256, vocab_size=512)
    return transformers.BertModel(cfg, add_pooling_layer=False).eval()


@unittest.skipUnless(TORCH2, "needs torch 2.x (the torch 2.x environment)")
class DynamicQuantTest(unittest.TestCase):
    """quantize="int8-dynamic" on a small BertModel: the codes and scales
    in the file equal NumPy's (ref_dynamic), every Linear is quantized
    (12: four attention ones and two feed-forward ones a layer), and ONNX
    Runtime's last hidden state is within cosine 0.9999 of PyTorch's float
    one (0.9999995 measured); quantize_exclude leaves the matching ones
    float."""

    def setUp(self):
        try:
            import onnxruntime  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as e:
            self.skipTest("needs %s" % e.name)
        self.dir = tempfile.mkdtemp(prefix="onnxc-dq.")

    def export(self, model, target, name, **kw):
        ids = torch.randint(0, 512, (2, 16))
        mask = torch.ones(2, 16, dtype=torch.long)
        path = os.path.join(self.dir, name)
        onnxc.export(model, (ids, mask), path, target=target, quantize="int8-dynamic",
                     dynamic_shapes={"input_ids": {1: "seq"}, "attention_mask": {1: "seq"}}, **kw)
        import onnx
        return path, onnx.load(path).graph

    def run_ort(self, path, ids, mask):
        import onnxruntime as ort
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in s.get_inputs()]
        return s.run(None, {names[0]: ids.numpy(), names[1]: mask.numpy()})[0]

    def check(self, target):
        from onnx import numpy_helper
        model = small_bert()
        path, g = self.export(model, target, "bert_%s.onnx" % target)
        ops = {n.op_type: 0 for n in g.node}
        for n in g.node:
            ops[n.op_type] += 1
        if target == "ort":   # Q, K and V read one quantized A: 3 a layer
            self.assertEqual((ops.get("DynamicQuantizeMatMul"), ops.get("MatMulIntegerToFloat"),
                              ops.get("DynamicQuantizeLinear")), (6, 6, 2))
        else:
            self.assertEqual((ops.get("MatMulInteger"), ops.get("DynamicQuantizeLinear")), (12, 12))
        inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        linears = {name: mod for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)}
        seen = 0
        for name, mod in linears.items():
            q, sc = ref_dynamic(mod.weight.detach().numpy())
            base = [k[:-len("_quant")] for k in inits if k.startswith(name + ".weight") and k.endswith("_quant")]
            self.assertEqual(len(base), 1, name)
            np.testing.assert_array_equal(inits[base[0] + "_quant"], q, err_msg=name)
            np.testing.assert_array_equal(inits[base[0] + "_scale"], sc, err_msg=name)
            seen += 1
        self.assertEqual(seen, 12)
        for seq in (16, 7):
            ids = torch.randint(0, 512, (2, seq))
            mask = torch.ones(2, seq, dtype=torch.long)
            mask[1, seq - 3:] = 0
            got = self.run_ort(path, ids, mask)
            with torch.no_grad():
                ref = model(ids, mask).last_hidden_state.numpy()
            cos = cosine(got, ref)
            print("  int8-dynamic %s, sequence %d: max abs diff %.2e, cosine vs float %.7f"
                  % (target, seq, float(np.abs(got - ref).max()), cos))
            self.assertGreater(cos, 0.9999, seq)

    def test_bert_onnx(self):
        self.check("onnx")

    def test_bert_ort(self):
        self.check("ort")

    def test_exclude(self):
        """Patterns match a module's path (the first; a weight's name is
        its path plus ".weight") or the weight's name (the second)."""
        model = small_bert()
        for target, ops in (("onnx", ("MatMulInteger",)),
                            ("ort", ("DynamicQuantizeMatMul", "MatMulIntegerToFloat"))):
            _, g = self.export(model, target, "bert_x_%s.onnx" % target,
                               quantize_exclude=["*.intermediate.dense", "encoder.layer.1.attention.*"])
            self.assertEqual(sum(n.op_type in ops for n in g.node), 12 - 2 - 4, target)
            import fnmatch
            kept = sorted(t.name for t in g.initializer if len(t.dims) == 2 and t.data_type == 1 and
                          ".weight" in t.name and not t.name.startswith("embeddings."))
            # at -target=ort the kept q, k and v of layer 1 are one joined
            # f32 product (FusedMatMul, transB: the weights [N, K] stacked)
            joined = [t for t in g.initializer if t.name.endswith("_joined") and len(t.dims) == 2]
            self.assertEqual(len(kept), 2 + (2 if target == "ort" else 4), (target, kept))
            if target == "ort":
                self.assertEqual([list(t.dims) for t in joined], [[384, 128]], kept)
            self.assertTrue(all(fnmatch.fnmatch(k, "*.intermediate.dense.weight*") or
                                k.startswith("encoder.layer.1.attention.") for k in kept), kept)

    def test_embedding(self):
        """quantize_embedding=True: BERT's word embedding, which the input
        ids index, becomes GatherBlockQuantized at target="ort", Gather +
        DequantizeLinear (opset 21) otherwise, and its float table leaves
        the file; the position and token-type tables, indexed by the
        model's own buffers here, stay float.  The last hidden state stays
        within cosine 0.999 of PyTorch's.  Without quantize the argument
        is refused."""
        model = small_bert()
        ids = torch.randint(0, 512, (2, 9))
        mask = torch.ones(2, 9, dtype=torch.long)
        with torch.no_grad():
            ref = model(ids, mask).last_hidden_state.numpy()
        sizes = {}
        for target, op, n in (("ort", "GatherBlockQuantized", 1), ("onnx", "DequantizeLinear", 1)):
            for emb in (False, True):
                path, g = self.export(model, target, "bert_e%d_%s.onnx" % (emb, target), quantize_embedding=emb)
                sizes[target, emb] = os.path.getsize(path)
                self.assertEqual(sum(x.op_type == op for x in g.node), n if emb else 0, (target, emb))
                tables = [t.name for t in g.initializer if t.name.endswith("embeddings.weight") and t.data_type == 1
                          and len(t.dims) == 2]
                self.assertEqual(len(tables), 2 if emb else 3, (target, tables))
                self.assertEqual("embeddings.word_embeddings.weight" in tables, not emb, (target, tables))
                cos = cosine(self.run_ort(path, ids, mask), ref)
                print("  int8-dynamic %s quantize_embedding=%s: %d bytes, cosine vs float %.6f"
                      % (target, emb, sizes[target, emb], cos))
                self.assertGreater(cos, 0.999, (target, emb))
            # the f32 table (512 x 128) becomes a byte and an eighth a value
            self.assertGreater(sizes[target, False] - sizes[target, True], 0.6 * 512 * 128 * 4, target)
        with self.assertRaises(ValueError):
            onnxc.export(model, (ids, mask), os.path.join(self.dir, "x.onnx"), quantize_embedding=True)

    def test_cli(self):
        """python -m onnxc --quantize int8-dynamic --quantize-exclude P,Q."""
        import subprocess
        src = os.path.join(self.dir, "mlp.py")
        with open(src, "w") as f:
            f.write("import torch\n"
                    "class Net(torch.nn.Module):\n"
                    "    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.a = torch.nn.Linear(16, 32)\n"
                    "        self.b = torch.nn.Linear(32, 32)\n"
                    "        self.c = torch.nn.Linear(32, 8)\n"
                    "    def forward(self, x):\n"
                    "        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))\n")
        out = os.path.join(self.dir, "mlp.onnx")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        p = subprocess.run([sys.executable, "-m", "onnxc", "--module", src + ":Net", "--input-shape",
                            "2,3,16", "--quantize", "int8-dynamic", "--quantize-exclude", "a,c.*",
                            "-o", out], env=env, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        import onnx
        g = onnx.load(out).graph
        self.assertEqual(sum(n.op_type == "MatMulInteger" for n in g.node), 1)   # b only
        self.assertEqual([t.name for t in g.initializer if t.data_type == onnx.TensorProto.INT8],
                         ["b.weight_transpose_quant"])

    def test_flags(self):
        model = small_bert()
        for bad in (dict(quantize_block=64), dict(quantize_zero_points=True)):
            with self.assertRaises(onnxc.ConversionError):
                self.export(model, "onnx", "bad.onnx", **bad)
        for bad in (dict(quantize_exclude=["a,b"]), dict(quantize_exclude=[""])):
            with self.assertRaises(ValueError):
                self.export(model, "onnx", "bad.onnx", **bad)
        # ort_attention chooses among ONNX Runtime's forms: target="ort" only
        for target, bad in (("onnx", "gqa"), ("ort", "flash")):
            with self.assertRaises(ValueError):
                self.export(model, target, "bad.onnx", ort_attention=bad)
        path, _ = self.export(model, "ort", "gqa.onnx", ort_attention="gqa")
        self.assertTrue(os.path.isfile(path))


if __name__ == "__main__":
    sys.exit(main([WeightQuantTest, DynamicQuantTest], __doc__))
