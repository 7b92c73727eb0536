#!/usr/bin/python3
"""Tests of the Python API (python/onnxc) and of the bridge's names and
dynamic dims: models exported with onnxc.export, run in ONNX Runtime
(utils/ortlib.py) and compared with PyTorch.

    /usr/bin/python3 test/python/test_api.py [-v] [-k PATTERN]

The onnxc binary is $ONNXC, else build/onnxc.  The last line is
`N passed, N failed, N skipped`; exit status 1 when a test fails.
"""

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "utils"))
sys.path.insert(0, os.path.join(REPO, "examples"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

import onnxc  # noqa: E402
import ortlib  # noqa: E402
from make_examples import LLM  # noqa: E402

TOLERANCE = 1e-4


def dims(value_info):
    """An ONNX input's or output's dims: ints and dim_param strings."""
    return [d.dim_param if d.HasField("dim_param") else d.dim_value
            for d in value_info.type.tensor_type.shape.dim]


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class TwoOut(torch.nn.Module):
    def forward(self, x, y):
        return torch.sum(x, dim=1), x * y + 1


class CumProd(torch.nn.Module):
    """aten::cumprod has no decomposition: onnxc refuses it."""

    def forward(self, x):
        h = x * 2
        return torch.cumprod(h, 0)


class PinsBatch(torch.nn.Module):
    def forward(self, x):
        return x.reshape(4, 6) * 2


class ReadsValues(torch.nn.Module):
    """Reads tensor values in Python: a length and a branch condition."""
    def forward(self, x, lengths):
        n = int(lengths.max())
        mask = torch.arange(n).unsqueeze(0) < lengths.unsqueeze(1)
        y = x[:, :n] * mask.unsqueeze(-1)
        if y.sum() > 0:
            return y + 1
        return y - 1


class KeepsBranches(torch.nn.Module):
    """ReadsValues's branch and a loop over a length, written with the
    control-flow functions, so the graph decides at run time."""
    def forward(self, x, n):
        y = onnxc.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))
        return onnxc.fori_loop(n, lambda i, y: y * 0.5 + i, y)


class BadBranches(torch.nn.Module):
    """Branches that return different shapes."""
    def forward(self, x):
        return onnxc.cond(x.sum() > 0, lambda x: x, lambda x: x[:1], (x,))


class UnbindsNothing(torch.nn.Module):
    """A list-returning op with no results (unbind of an empty dim), as
    Mask R-CNN's ROI heads make when no box survives."""
    def forward(self, x):
        parts = x[:0].unbind(0)
        return x * 2 + len(parts)


class TempDirTest(unittest.TestCase):
    """Each test in a fresh temporary directory, torch seeded."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="onnxc-api-test.")
        torch.manual_seed(0)

    def tearDown(self):
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)


class ApiTest(TempDirTest):

    def check_runs(self, model, f, feeds, args):
        with torch.no_grad():
            ref = model(*args)
        ref = ref if isinstance(ref, tuple) else (ref,)
        got = list(ortlib.run(f, feeds).values())
        self.assertEqual(len(got), len(ref))
        for r, g in zip(ref, got):
            self.assertEqual(tuple(r.shape), tuple(np.asarray(g).shape))
            self.assertLessEqual(float(np.abs(r.numpy() - g).max()), TOLERANCE)

    def test_happy_path(self):
        model = MLP().eval()
        x = torch.randn(4, 16)
        f = self.path("mlp.onnx")
        self.assertEqual(os.fspath(onnxc.export(model, (x,), f)), f)
        m = onnx.load(f)
        self.assertEqual([i.name for i in m.graph.input], ["x"])
        self.assertEqual(m.opset_import[0].version, 20)
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    def test_relative_onnxc_variable(self):
        """$ONNXC relative to the caller's directory (onnxc runs elsewhere)."""
        old, cwd = os.environ.get("ONNXC"), os.getcwd()
        os.chdir(os.path.dirname(onnxc.find_onnxc()))
        os.environ["ONNXC"] = os.path.join(".", "onnxc")
        try:
            f = self.path("rel.onnx")
            onnxc.export(MLP().eval(), (torch.randn(2, 16),), f)
            self.assertTrue(os.path.isfile(f))
        finally:
            os.chdir(cwd)
            if old is None:
                del os.environ["ONNXC"]
            else:
                os.environ["ONNXC"] = old

    def test_options(self):
        model = MLP().eval()
        x = torch.randn(4, 16)
        f = self.path("mlp.onnx")
        onnxc.export(model, x, f, opset=21, optimize="O0", outline=True,
                     external_data=True, report=True)
        m = onnx.load(f, load_external_data=False)
        self.assertEqual([o.version for o in m.opset_import if o.domain == ""], [21])
        self.assertTrue(m.functions, "outline=True makes the Linear modules functions")
        self.assertTrue(os.path.exists(f + ".data"))
        with open(self.path("mlp_report.md"), encoding="utf-8") as fh:
            report = fh.read()
        self.assertIn("✅ compile with `onnxc -O0 -opset=21 -outline -external-data`", report)
        self.assertIn("## ONNX model", report)
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    def test_dynamic_shapes_llm(self):
        """The seed tutorial's LLM with a dynamic batch and sequence length:
        the names are the ONNX input's dim_params, and the model runs at two
        sequence lengths."""
        model = LLM(vocab_size=1024, context_size=256).eval()
        ids = torch.randint(0, 1024, (2, 30))
        f = self.path("llm.onnx")
        onnxc.export(model, (ids,), f, dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
        m = onnx.load(f)
        self.assertEqual(dims(m.graph.input[0]), ["batch", "seq"])
        self.assertEqual(dims(m.graph.output[0]), ["batch", "seq", 16])
        for shape in ((2, 30), (3, 7), (1, 100)):
            ids = torch.randint(0, 1024, shape)
            self.check_runs(model, f, {"input_ids": ids.numpy()}, (ids,))

    def test_input_output_names(self):
        model = TwoOut().eval()
        x, y = torch.randn(3, 4), torch.randn(3, 4)
        f = self.path("two.onnx")
        onnxc.export(model, (x, y), f, input_names=["a", "b"], output_names=["total", "fma"])
        m = onnx.load(f)
        self.assertEqual([i.name for i in m.graph.input], ["a", "b"])
        self.assertEqual([o.name for o in m.graph.output], ["total", "fma"])
        listing = subprocess.run([onnxc.find_onnxc(), f, "-passes=", "-emit=listing"],
                                 capture_output=True, text=True, check=True).stdout
        self.assertIn('%"a"<FLOAT,[3,4]>', listing)
        self.assertIn('%"total"<FLOAT,[3]>', listing)
        self.check_runs(model, f, {"a": x.numpy(), "b": y.numpy()}, (x, y))

    def test_output_name_of_an_input(self):
        """An output that is an input (or is returned twice) is copied under
        its name."""
        class Same(torch.nn.Module):
            def forward(self, x):
                y = x + 1
                return x, y, y
        x = torch.randn(2, 3)
        f = self.path("same.onnx")
        onnxc.export(Same(), (x,), f, output_names=["echo", "y", "y_again"])
        m = onnx.load(f)
        self.assertEqual([o.name for o in m.graph.output], ["echo", "y", "y_again"])
        self.check_runs(Same(), f, {"x": x.numpy()}, (x,))

    def test_dynamic_axes(self):
        """torch.onnx.export's dynamic_axes: the list form gets PyTorch's
        automatic names; output entries name the output's dims."""
        model = TwoOut().eval()
        x, y = torch.randn(3, 4), torch.randn(3, 4)
        f = self.path("axes.onnx")
        onnxc.export(model, (x, y), f, input_names=["x", "y"], output_names=["sum", "fma"],
                     dynamic_axes={"x": {0: "my_custom_axis_name"}, "y": [0], "sum": [0]})
        m = onnx.load(f)
        self.assertEqual(dims(m.graph.input[0]), ["my_custom_axis_name", 4])
        # x + y makes the dims equal: torch.export (torch 2.x) proves it and
        # gives both one symbol, whose name is the one the user wrote;
        # make_fx (torch 1.13) keeps one symbol per input.
        want = "y_dynamic_axes_1" if torch.__version__ < "2" else "my_custom_axis_name"
        self.assertEqual(dims(m.graph.input[1]), [want, 4])
        self.assertEqual(dims(m.graph.output[0]), ["sum_dynamic_axes_1"])
        x, y = torch.randn(5, 4), torch.randn(5, 4)
        self.check_runs(model, f, {"x": x.numpy(), "y": y.numpy()}, (x, y))

    def test_failing_conversion(self):
        f = self.path("bad.onnx")
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(CumProd(), (torch.randn(3, 3),), f)
        e = cm.exception
        msg = str(e)
        self.assertRegex(msg, r"bad\.fxir:\d+:\d+: error: no decomposition for aten::cumprod")
        self.assertIn("note: traced from", msg)
        self.assertIn("test_api.py", msg)
        self.assertEqual(e.returncode, 1)
        self.assertTrue(e.fxir and os.path.exists(e.fxir))
        self.assertFalse(os.path.exists(f), "a failed conversion leaves no output")
        import shutil
        shutil.rmtree(os.path.dirname(e.fxir), ignore_errors=True)

    def test_specialized_dim_is_an_error(self):
        """A named dim the model pins to its example size is not dropped
        silently: the error names it and says what to change."""
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(PinsBatch(), (torch.randn(4, 6),), self.path("pin.onnx"),
                         dynamic_shapes={"x": {0: "batch"}})
        self.assertIn("dynamic dim 'batch' (dim 0 of input 'x') was specialized", str(cm.exception))
        self.assertIn("Leave 'batch' out of dynamic_shapes", str(cm.exception))
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(MLP(), (torch.randn(1, 16),), self.path("one.onnx"),
                         dynamic_shapes={"x": {0: "batch"}})
        self.assertIn("'batch'", str(cm.exception))
        self.assertIn("trace with a size >= 2", str(cm.exception))

    def test_data_dependent_values(self):
        """Python reading a tensor's value specializes the graph to the
        example, with a warning naming the line, instead of failing."""
        import contextlib
        import io
        model = ReadsValues()
        x, lengths = torch.rand(2, 6, 3), torch.tensor([4, 2])
        f = self.path("reads.onnx")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            onnxc.export(model, (x, lengths), f)
        lines = [l for l in err.getvalue().splitlines() if "a tensor's value is read" in l]
        self.assertEqual(len(lines), 2, err.getvalue())
        self.assertRegex(lines[0], r"test_api\.py:\d+: .*specialized to the example's value 4")
        self.assertRegex(lines[1], r"specialized to the example's value True")
        feeds = {"x": x.numpy(), "lengths": lengths.numpy()}
        self.check_runs(model, f, feeds, (x, lengths))
        # Other inputs that read the same values give PyTorch's results too.
        x2, l2 = torch.rand(2, 6, 3), torch.tensor([1, 4])
        self.check_runs(model, f, {"x": x2.numpy(), "lengths": l2.numpy()}, (x2, l2))

    def test_control_flow(self):
        """onnxc.cond and onnxc.fori_loop become If and Loop: one model
        gives PyTorch's results on both branches and several trip counts,
        and no value is specialized."""
        import contextlib
        import io
        model = KeepsBranches()
        x, n = torch.rand(2, 3), torch.tensor(2)
        f = self.path("branches.onnx")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            onnxc.export(model, (x, n), f)
        self.assertNotIn("specialized", err.getvalue())
        self.assertEqual(sorted({nd.op_type for nd in onnx.load(f).graph.node} & {"If", "Loop"}),
                         ["If", "Loop"])
        for x, n in ((x, n), (-x, torch.tensor(0)), (-x, torch.tensor(5))):
            self.check_runs(model, f, {"x": x.numpy(), "n": n.numpy()}, (x, n))
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(BadBranches(), (x,), self.path("bad.onnx"))
        self.assertIsInstance(cm.exception.__cause__, TypeError)   # onnxc.control's error

    def test_op_without_results(self):
        model, x = UnbindsNothing(), torch.randn(3, 4)
        f = self.path("unbind.onnx")
        onnxc.export(model, (x,), f)
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    def test_bad_names(self):
        with self.assertRaises(onnxc.ConversionError):
            onnxc.export(MLP(), (torch.randn(2, 16),), self.path("n.onnx"),
                         input_names=["a", "b"])
        with self.assertRaises(onnxc.ConversionError):
            onnxc.export(MLP(), (torch.randn(2, 16),), self.path("n.onnx"),
                         dynamic_axes={"nope": [0]})

    def test_cli(self):
        src = self.path("net.py")
        with open(src, "w") as fh:
            fh.write("import torch\nclass Net(torch.nn.Module):\n"
                     "    def forward(self, x):\n        return torch.tanh(x) * 3\n")
        f = self.path("net.onnx")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        p = subprocess.run([sys.executable, "-m", "onnxc", "--module", src + ":Net",
                            "--input-shape", "2,5", "--dynamic", "x:0:batch", "-o", f],
                           capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(dims(onnx.load(f).graph.input[0]), ["batch", 5])


TORCH2 = torch.__version__ >= "2"
ONLY_TORCH2 = "torch.export, torch 2.x only: the torch 1.13 lane traces with make_fx"


class Torch2Test(TempDirTest):
    """What the bridge does on torch 2.x (torch.export): the capture used
    is named, a model no capture traces fails with its source line, an
    ExportedProgram is a model, higher-order ops become If / Loop."""

    check_runs = ApiTest.check_runs

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_fallback_capture_is_named(self):
        """torch.export refuses ReadsValues (int(t) on a traced value):
        make_fx, the next capture, traces it, and the report says so."""
        model = ReadsValues()
        x, lengths = torch.rand(2, 6, 3), torch.tensor([4, 2])
        f = self.path("reads.onnx")
        with contextlib.redirect_stderr(io.StringIO()):
            onnxc.export(model, (x, lengths), f, report=True)
        with open(self.path("reads_report.md"), encoding="utf-8") as fh:
            self.assertIn("capture: make_fx", fh.read())
        meta = {p.key: p.value for p in onnx.load(f).graph.metadata_props}
        self.assertEqual(meta.get("pkg.onnxc.capture"), "make_fx")

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_capture_error_names_the_line(self):
        """With torch.export alone, the error names the capture, torch's
        reason and the model's own source line."""
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(ReadsValues(), (torch.rand(2, 6, 3), torch.tensor([4, 2])),
                         self.path("r.onnx"), capture="torch.export")
        msg = str(cm.exception)
        self.assertIn("no capture could trace ReadsValues (tried torch.export)", msg)
        self.assertRegex(msg, r"test_api\.py:\d+: n = int\(lengths\.max\(\)\)")
        with self.assertRaises(onnxc.ConversionError):
            onnxc.export(MLP(), (torch.randn(2, 16),), self.path("m.onnx"), capture="jit")

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_exported_program(self):
        model = MLP().eval()
        x = torch.randn(3, 16)
        ep = torch.export.export(model, (x,))
        f = self.path("ep.onnx")
        onnxc.export(ep, None, f)
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_torch_control_flow(self):
        """torch.cond is an If, both branches computed right."""
        class Branches(torch.nn.Module):
            def forward(self, x):
                return torch.cond(x.sum() > 0, lambda x: x.sin() * 2, lambda x: x.cos() - 1, (x,))
        model, x = Branches(), torch.rand(2, 3)
        f = self.path("cond.onnx")
        onnxc.export(model, (x,), f)
        self.assertIn("If", {n.op_type for n in onnx.load(f).graph.node})
        for v in (x, -x):
            self.check_runs(model, f, {"x": v.numpy()}, (v,))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_older_and_newer_opsets(self):
        """opset=13 lowers at 17 and converts down: LayerNormalization and
        Gelu are written out in older ops; opset=24 keeps them one node."""
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8), torch.nn.GELU()).eval()
        x = torch.randn(2, 4)
        for opset, has in ((13, False), (24, True)):
            f = self.path("ln%d.onnx" % opset)
            onnxc.export(model, (x,), f, opset=opset)
            m = onnx.load(f)
            self.assertEqual([o.version for o in m.opset_import if o.domain == ""], [opset])
            ops = {n.op_type for n in m.graph.node}
            self.assertEqual("LayerNormalization" in ops, has, ops)
            self.assertEqual("Gelu" in ops, has, ops)
            self.check_runs(model, f, {"input": x.numpy()}, (x,))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_dim_objects_and_ranges(self):
        """torch.export.Dim with a range, Dim.AUTO and a name in one call:
        the ONNX inputs' dim names, and the ranges in the metadata."""
        from torch.export import Dim
        model = TwoOut().eval()
        x, y = torch.randn(3, 4), torch.randn(3, 4)
        f = self.path("dims.onnx")
        onnxc.export(model, (x, y), f,
                     dynamic_shapes={"x": {0: Dim("rows", min=2, max=64), 1: Dim.AUTO},
                                     "y": {0: "rows_y", 1: None}})
        m = onnx.load(f)
        self.assertEqual(dims(m.graph.input[0]), ["rows", 4])   # AUTO: static, 4 columns
        self.assertEqual(dims(m.graph.input[1]), ["rows", 4])   # equal to x's rows
        meta = {p.key: p.value for p in m.graph.metadata_props}
        self.assertIn("rows: VR[2, 64]",
                      meta.get("pkg.torch.export.ExportedProgram.range_constraints", ""))
        x, y = torch.randn(9, 4), torch.randn(9, 4)
        self.check_runs(model, f, {"x": x.numpy(), "y": y.numpy()}, (x, y))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_pytorch_decomposes_what_onnxc_lacks(self):
        """Ops onnxc has no decomposition for are traced again with
        PyTorch's decompositions; the report names them; the file computes
        the model.  (rot90 and cosine_similarity: the library has no
        lowering of either; if it gains one, pick other ops.)"""
        class Mixed(torch.nn.Module):
            def forward(self, x, y):
                return torch.rot90(x) * 2, torch.nn.functional.cosine_similarity(x, y)
        model = Mixed()
        x, y = torch.randn(3, 4), torch.randn(3, 4)
        f = self.path("mixed.onnx")
        onnxc.export(model, (x, y), f, report=True)
        with open(self.path("mixed_report.md"), encoding="utf-8") as fh:
            report = fh.read()
        self.assertIn("PyTorch's decompositions for aten::cosine_similarity, aten::rot90", report)
        self.check_runs(model, f, {"x": x.numpy(), "y": y.numpy()}, (x, y))
        # The bridge alone: exactly the ops asked for, and only those.
        from onnxc import bridge
        text = bridge.export(model, (x, y), self.path("mixed.fxir"),
                             decompose=["aten::rot90", "aten::logaddexp"])
        self.assertEqual(bridge.last_decomposed, ["aten::rot90"])
        self.assertNotIn("aten::rot90", text)
        self.assertIn("aten::cosine_similarity", text)

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_llm_dynamic_batch_and_seq(self):
        """A Hugging Face Llama (random weights from a small config: its
        rotary embedding is a no_grad region, its causal mask ANDs bool
        masks) exported once with dynamic batch and sequence runs at three
        other sizes within 1e-4 of eager."""
        import transformers
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2,
                                       vocab_size=256, use_cache=False)
        model = transformers.LlamaForCausalLM(cfg).eval()
        f = self.path("llama.onnx")
        onnxc.export(model, (torch.randint(0, 256, (2, 8)),), f,
                     dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
        self.assertEqual(dims(onnx.load(f).graph.input[0]), ["batch", "seq"])
        for shape in ((1, 5), (3, 17), (4, 33)):
            ids = torch.randint(0, 256, shape)
            with torch.no_grad():
                want = model(ids).logits.numpy()
            got = list(ortlib.run(f, {"input_ids": ids.numpy()}).values())[0]
            self.assertEqual(got.shape, want.shape)
            self.assertLess(float(np.abs(got - want).max()), 1e-4, shape)

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_moe_every_experts_implementation(self):
        """A Mixtral (4 experts, 2 a token) converts with each experts
        implementation transformers offers, exported once with dynamic
        batch and sequence, and matches eager within 1e-4 down to one
        token (a decode step).  grouped_mm's custom op is lowered
        (decomps/experts.fxir); eager's loop over the experts hit, and the
        GPU kernels of deepgemm and sonicmoe (which do not run on the CPU:
        their reference is the same model run eager), are traced as
        grouped_mm, and the model's setting is left as it was."""
        import transformers
        from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS
        impls = ["eager"] + sorted(ALL_EXPERTS_FUNCTIONS.keys())
        self.assertTrue({"grouped_mm", "batched_mm"} <= set(impls), impls)
        torch.manual_seed(0)
        cfg = transformers.MixtralConfig(
            vocab_size=128, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
            num_experts_per_tok=2, use_cache=False)
        model = transformers.MixtralForCausalLM(cfg).eval()
        inputs = [torch.randint(3, 128, s) for s in ((1, 1), (2, 7), (3, 12))]
        with torch.no_grad():
            want = [model(ids).logits.numpy() for ids in inputs]
        for impl in impls:
            model.config._experts_implementation = impl
            f = self.path("mixtral_%s.onnx" % impl)
            onnxc.export(model, (torch.randint(3, 128, (2, 8)),), f, report=True,
                         dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
            self.assertEqual(model.config._experts_implementation, impl)
            text = onnx.load(f, load_external_data=False)
            self.assertFalse([n.op_type for n in text.graph.node if n.domain], impl)
            with open(self.path("mixtral_%s_report.md" % impl), encoding="utf-8") as fh:
                traced_as = "experts traced as grouped_mm in place of %s" % impl in fh.read()
            self.assertEqual(traced_as, impl not in ("grouped_mm", "batched_mm"), impl)
            for ids, ref in zip(inputs, want):
                got = list(ortlib.run(f, {"input_ids": ids.numpy()}).values())[0]
                self.assertEqual(got.shape, ref.shape)
                self.assertLess(float(np.abs(got - ref).max()), 1e-4, (impl, ids.shape))


class Scaled(torch.nn.Module):
    """A Linear whose output is scaled by a buffer and offset by a buffer
    that is not saved (persistent=False)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.register_buffer("offset", torch.ones(3), persistent=False)

    def forward(self, x):
        return self.fc(x) * self.scale + self.offset


class Counts(Scaled):
    """Scaled that also counts its calls in a buffer (a mutation)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(3))

    def forward(self, x):
        self.calls.add_(1)
        return super().forward(x) + self.calls


def _graph_meta(model_proto):
    return {p.key: p.value for p in model_proto.graph.metadata_props}


class TorchFormTest(TempDirTest):
    """The graph signature and range constraints in the text
    torch.onnx.export(dynamo=True) writes for the same module."""

    check_runs = ApiTest.check_runs

    def peer_meta(self, model, args):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return _graph_meta(torch.onnx.export(model, args, dynamo=True).model_proto)

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_signature_as_the_peer_writes_it(self):
        """At -O2 fc.weight is folded into its transpose: the signature
        still names it, under the program's names (p_fc_weight), with the
        buffers' persistence; range_constraints is {} as nothing is
        dynamic.  The same text as the peer's, key for key."""
        model = Scaled().eval()
        x = torch.randn(2, 4)
        f = self.path("scaled.onnx")
        onnxc.export(model, (x,), f)
        m = onnx.load(f)
        self.assertNotIn("fc.weight", [t.name for t in m.graph.initializer])
        peer = self.peer_meta(model, (x,))
        ours = _graph_meta(m)
        for key in ("pkg.torch.export.ExportedProgram.graph_signature",
                    "pkg.torch.export.ExportedProgram.range_constraints"):
            self.assertEqual(ours.get(key), peer[key], key)
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_captured_constant_in_the_signature(self):
        """A tensor attribute that is neither parameter nor buffer is a
        CONSTANT_TENSOR input of the program (c_mask, target 'mask'),
        listed after the parameters as the peer lists it, though -O2 folds
        it into the product."""
        model = Masked().eval()
        x = torch.randn(2, 3)
        f = self.path("masked.onnx")
        onnxc.export(model, (x,), f)
        key = "pkg.torch.export.ExportedProgram.graph_signature"
        ours = _graph_meta(onnx.load(f))[key]
        self.assertIn("CONSTANT_TENSOR target='mask'", ours)
        self.assertEqual(ours, self.peer_meta(model, (x,))[key])
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_mutation_signature_has_the_peers_kinds(self):
        """A buffer the module writes is a BUFFER_MUTATION output listed
        before the user output, as in the peer's text; the names of the
        outputs are onnxc's (the captured program still holds the in-place
        op, which the peer's functionalized program renamed), so each line
        is compared from its kind on."""
        model = Counts().eval()
        x = torch.randn(2, 4)
        f = self.path("counts.onnx")
        onnxc.export(model, (x,), f)
        key = "pkg.torch.export.ExportedProgram.graph_signature"
        peer = self.peer_meta(Counts().eval(), (x,))[key]
        ours = _graph_meta(onnx.load(f))[key]
        strip = lambda text: [ln.split(": ", 1)[-1] for ln in text.split("\n")]
        self.assertEqual(strip(ours), strip(peer))
        self.assertEqual(ours.split("# outputs")[0], peer.split("# outputs")[0])
        got = list(ortlib.run(f, {"x": x.numpy()}).values())
        with torch.no_grad():
            want = model(x)
        self.assertLessEqual(float(np.abs(got[0] - want.numpy()).max()), TOLERANCE)
        self.assertTrue(np.array_equal(got[1], model.calls.numpy()))


class Masked(torch.nn.Module):
    """A Linear times a plain tensor attribute (a constant of the trace)."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)
        self.mask = torch.tensor([1.0, 0.0, 2.0])

    def forward(self, x):
        return self.fc(x) * self.mask


class Factor(torch.nn.Module):
    """A Linear scaled by an annotated float attribute."""
    factor: float

    def __init__(self, factor):
        super().__init__()
        self.factor = factor
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * self.factor


class TwoFactors(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = Factor(2.0), Factor(3.0)

    def forward(self, x):
        return self.b(self.a(x))


class Gate(torch.nn.Module):
    """Annotated attributes its computation does not read (heads, mode,
    fused) and an unannotated slope it does."""
    heads: int
    mode: str
    fused: bool

    def __init__(self, heads, mode, fused, slope):
        super().__init__()
        self.heads, self.mode, self.fused, self.slope = heads, mode, fused, slope
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.leaky_relu(self.fc(x), self.slope)


class TwoGates(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = Gate(2, "fast", True, 0.1), Gate(4, "slow", False, 0.3)

    def forward(self, x):
        return self.b(self.a(x))


class ModuleAttributeTest(TempDirTest):
    """outline=True: module attributes as local-function attributes."""

    check_runs = ApiTest.check_runs

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_instances_share_a_function_with_the_attribute_named(self):
        """Two Factor instances differ only in `factor: float`: one function,
        whose attribute is `factor`, each call passing its own value; the
        file matches PyTorch in onnxruntime."""
        model = TwoFactors().eval()
        x = torch.randn(2, 4)
        f = self.path("factors.onnx")
        onnxc.export(model, (x,), f, outline=True)
        m = onnx.load(f)
        fn = [g for g in m.functions if g.name == "Factor"]
        self.assertEqual(len(fn), 1, [g.name for g in m.functions])
        self.assertEqual(list(fn[0].attribute) + [a.name for a in fn[0].attribute_proto],
                         ["factor"])
        calls = [n for n in m.graph.node if n.op_type == "Factor"]
        got = [float(onnx.numpy_helper.to_array(a.t)) for n in calls for a in n.attribute
               if a.name == "factor"]
        self.assertEqual(got, [model.a.factor, model.b.factor])
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_unread_and_inferred_attributes(self):
        """Two Gate instances differ in annotated attributes the body does
        not read and in an unannotated slope: one function, declaring
        "inferred::alpha" (the slope, read by LeakyRelu) and heads, mode
        and fused, each call passing its instance's values; onnx.checker
        (full_check) accepts the file, which matches PyTorch in
        onnxruntime."""
        model = TwoGates().eval()
        x = torch.randn(2, 4)
        f = self.path("gates.onnx")
        onnxc.export(model, (x,), f, outline=True)
        m = onnx.load(f)
        onnx.checker.check_model(m, full_check=True)
        fn = [g for g in m.functions if g.name == "Gate"]
        self.assertEqual(len(fn), 1, [g.name for g in m.functions])
        self.assertEqual(list(fn[0].attribute), ["inferred::alpha", "heads", "mode", "fused"])
        refs = [a.ref_attr_name for n in fn[0].node for a in n.attribute if a.ref_attr_name]
        self.assertEqual(refs, ["inferred::alpha"])
        calls = [n for n in m.graph.node if n.op_type == "Gate"]
        for call, gate in zip(calls, (model.a, model.b)):
            got = {a.name: onnx.helper.get_attribute_value(a) for a in call.attribute}
            self.assertAlmostEqual(got.pop("inferred::alpha"), gate.slope, places=6)
            self.assertEqual(got, {"heads": gate.heads, "mode": gate.mode.encode(),
                                   "fused": int(gate.fused)})
        self.check_runs(model, f, {"x": x.numpy()}, (x,))

SCALED_TANH = """decomp mylib::scaled_tanh(%x, $alpha) {
  %t = onnx::Tanh(%x)
  %a = aten::_onnxc_const($alpha) : f32
  %c = onnx::CastLike(%a, %x)
  %y = onnx::Mul(%t, %c)
  return %y
}
"""


def _scaled_tanh_model(torch_op_name):
    """A model calling a torch.library.custom_op (torch >= 2.4)."""
    @torch.library.custom_op(torch_op_name, mutates_args=())
    def scaled_tanh(x: torch.Tensor, alpha: float) -> torch.Tensor:
        return torch.tanh(x) * alpha

    @scaled_tanh.register_fake
    def _(x, alpha):
        return torch.empty_like(x)

    class UsesCustomOp(torch.nn.Module):
        def forward(self, x):
            return scaled_tanh(x, 2.5) + 1
    return UsesCustomOp()


HAS_CUSTOM_OP = hasattr(getattr(torch, "library", None), "custom_op")
try:
    import onnxruntime  # noqa: F401
    HAS_ORT = True
except ImportError:   # Debian's python3: ONNX Runtime is the venv's (utils/ortlib.py)
    HAS_ORT = False


class DecompositionsAndVerifyTest(TempDirTest):
    """onnxc.export(decompositions=[...]): a user's .fxir decompositions, as
    -decomp=FILE; verify=True: the file run in ONNX Runtime against eager
    PyTorch, a mismatch raised."""

    @unittest.skipUnless(HAS_CUSTOM_OP, "torch.library.custom_op: torch >= 2.4")
    def test_custom_op_through_a_users_decomposition(self):
        model = _scaled_tanh_model("onnxc_test::scaled_tanh")
        text = SCALED_TANH.replace("mylib::", "onnxc_test::")
        x = torch.randn(3, 4)
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(model, (x,), self.path("none.onnx"))
        self.assertIn("no decomposition for onnxc_test::scaled_tanh", str(cm.exception))
        self.assertIn("decompositions=", str(cm.exception))
        fx = self.path("my_decomps.fxir")
        with open(fx, "w") as fh:
            fh.write(text)
        for source in (fx, text):
            m = onnxc.export(model, (x,), self.path("c.onnx"), decompositions=[source])
            want = model(x)
            got = m(x)[0]
            self.assertLess(float((got - want).abs().max()), TOLERANCE)

    @unittest.skipIf(HAS_ORT, "this Python has onnxruntime")
    def test_verify_refused_without_onnxruntime(self):
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(MLP(), (torch.randn(2, 16),), self.path("m.onnx"), verify=True)
        self.assertIn("needs the onnxruntime package", str(cm.exception))

    def test_decompositions_checked_before_tracing(self):
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(MLP(), (torch.randn(2, 16),), self.path("m.onnx"),
                         decompositions=[self.path("missing.fxir")])
        self.assertIn("is not a file", str(cm.exception))

    @unittest.skipUnless(HAS_ORT, "verify=True needs onnxruntime in this Python")
    def test_verify_passes_and_is_reported(self):
        m = onnxc.export(MLP().eval(), (torch.randn(2, 16),), self.path("v.onnx"), verify=True,
                         report=True)
        line = [l for l in m.report.splitlines() if "compare with eager PyTorch" in l]
        self.assertEqual(len(line), 1, m.report)
        self.assertIn("max difference", line[0])
        self.assertTrue(line[0].startswith("✅"), line[0])

    @unittest.skipUnless(HAS_CUSTOM_OP and HAS_ORT, "torch.library.custom_op: torch >= 2.4")
    def test_verify_raises_on_a_wrong_decomposition(self):
        model = _scaled_tanh_model("onnxc_test::scaled_tanh_wrong")
        wrong = """decomp onnxc_test::scaled_tanh_wrong(%x, $alpha) {
  %y = onnx::Tanh(%x)
  return %y
}
"""
        with self.assertRaises(onnxc.VerificationError) as cm:
            onnxc.export(model, (torch.randn(3, 4),), self.path("w.onnx"),
                         decompositions=[wrong], verify=True, report=True)
        self.assertIn("max difference", cm.exception.diagnostics)
        with open(self.path("w_report.md"), encoding="utf-8") as fh:
            self.assertIn("❌ run in ONNX Runtime and compare with eager PyTorch", fh.read())


class FailsToRun(torch.nn.Module):
    """Raises whenever it runs: no capture can trace it."""

    def forward(self, x):
        raise RuntimeError("this model cannot run")


def _custom_op_decomposition(op, body):
    """A decomposition of the custom op `op` (onnxc_test::NAME, as
    _scaled_tanh_model makes it) whose result is `%y = <body>`."""
    return "decomp %s(%%x, $alpha) {\n  %%y = %s\n  return %%y\n}\n" % (op, body)


class ErrorClassesTest(TempDirTest):
    """ConversionError's subclasses by cause: CaptureError,
    UnsupportedOperatorError (with the ops' names), CheckerError (an
    invalid IR; onnx.checker under verify=True), VerificationError."""

    def drop_kept(self, e):
        """A failed onnxc run keeps its .fxir (e.fxir): removed here."""
        import shutil
        if e.fxir:
            self.addCleanup(shutil.rmtree, os.path.dirname(e.fxir), True)

    def test_capture_error(self):
        with self.assertRaises(onnxc.CaptureError) as cm:
            onnxc.export(FailsToRun(), (torch.randn(2, 3),), self.path("c.onnx"))
        e = cm.exception
        self.assertIsInstance(e, onnxc.ConversionError)
        self.assertNotIsInstance(e, onnxc.UnsupportedOperatorError)
        self.assertIsInstance(e.__cause__, RuntimeError)
        self.assertIn("this model cannot run", str(e))
        self.assertIsNone(e.returncode)
        self.assertFalse(os.path.exists(self.path("c.onnx")))
        if TORCH2:
            # One capture named, that cannot trace Python reading values.
            with self.assertRaises(onnxc.CaptureError) as cm:
                onnxc.export(ReadsValues(), (torch.rand(2, 6, 3), torch.tensor([4, 2])),
                             self.path("r.onnx"), capture="torch.export")
            self.assertIn("no capture could trace ReadsValues (tried torch.export)",
                          str(cm.exception))

    def test_argument_errors_are_not_capture_errors(self):
        for kw in (dict(input_names=["a", "b"]), dict(dynamic_axes={"nope": [0]})):
            with self.assertRaises(onnxc.ConversionError) as cm:
                onnxc.export(MLP(), (torch.randn(2, 16),), self.path("n.onnx"), **kw)
            self.assertIs(type(cm.exception), onnxc.ConversionError, kw)

    def test_unsupported_operator(self):
        with self.assertRaises(onnxc.UnsupportedOperatorError) as cm:
            onnxc.export(CumProd(), (torch.randn(3, 3),), self.path("u.onnx"))
        e = cm.exception
        self.drop_kept(e)
        self.assertIsInstance(e, onnxc.ConversionError)
        self.assertEqual(e.operators, ["aten::cumprod"])
        self.assertEqual(e.returncode, 1)
        self.assertTrue(e.fxir and os.path.exists(e.fxir))
        # `except ConversionError` catches it as before
        try:
            onnxc.export(CumProd(), (torch.randn(3, 3),), self.path("u.onnx"))
        except onnxc.ConversionError as caught:
            self.drop_kept(caught)
            self.assertIsInstance(caught, onnxc.UnsupportedOperatorError)
        else:
            self.fail("no error")
        # allow_custom_ops keeps the op instead (with a warning)
        import contextlib
        import io
        with contextlib.redirect_stderr(io.StringIO()):
            onnxc.export(CumProd(), (torch.randn(3, 3),), self.path("k.onnx"),
                         allow_custom_ops=True)
        self.assertIn("cumprod", [n.op_type for n in onnx.load(self.path("k.onnx")).graph.node])

    @unittest.skipUnless(HAS_CUSTOM_OP, "torch.library.custom_op: torch >= 2.4")
    def test_unsupported_custom_operator(self):
        model = _scaled_tanh_model("onnxc_test::scaled_tanh_unsupported")
        with self.assertRaises(onnxc.UnsupportedOperatorError) as cm:
            onnxc.export(model, (torch.randn(3, 4),), self.path("u.onnx"))
        self.drop_kept(cm.exception)
        self.assertEqual(cm.exception.operators, ["onnxc_test::scaled_tanh_unsupported"])

    @unittest.skipUnless(HAS_CUSTOM_OP, "torch.library.custom_op: torch >= 2.4")
    def test_invalid_ir_is_a_checker_error(self):
        """A decomposition giving Tanh two inputs: onnxc's verifier refuses
        the program after the passes."""
        op = "onnxc_test::scaled_tanh_two_inputs"
        model = _scaled_tanh_model(op)
        with self.assertRaises(onnxc.CheckerError) as cm:
            onnxc.export(model, (torch.randn(3, 4),), self.path("i.onnx"),
                         decompositions=[_custom_op_decomposition(op, "onnx::Tanh(%x, %x)")])
        e = cm.exception
        self.drop_kept(e)
        self.assertIsInstance(e, onnxc.ConversionError)
        self.assertNotIsInstance(e, onnxc.UnsupportedOperatorError)
        self.assertIn("the IR is invalid", str(e))
        self.assertIn("onnx::Tanh expects at most 1 inputs, got 2", e.diagnostics)
        self.assertEqual(e.returncode, 1)
        self.assertFalse(os.path.exists(self.path("i.onnx")))

    @unittest.skipUnless(HAS_CUSTOM_OP and HAS_ORT, "torch.library.custom_op: torch >= 2.4; "
                         "verify=True needs onnxruntime in this Python")
    def test_checker_refusal_under_verify(self):
        """Tanh with an attribute ONNX does not define: onnxc writes it,
        onnx.checker refuses it; verify=True checks before running."""
        op = "onnxc_test::scaled_tanh_bad_attribute"
        model = _scaled_tanh_model(op)
        decomp = _custom_op_decomposition(op, "onnx::Tanh(%x, foo = 1)")
        x = torch.randn(3, 4)
        onnxc.export(model, (x,), self.path("nv.onnx"), decompositions=[decomp])  # not checked
        with self.assertRaises(onnxc.CheckerError) as cm:
            onnxc.export(model, (x,), self.path("v.onnx"), decompositions=[decomp],
                         verify=True, report=True)
        e = cm.exception
        self.assertNotIsInstance(e, onnxc.VerificationError)
        self.assertIn("Unrecognized attribute: foo for operator Tanh", e.diagnostics)
        with open(self.path("v_report.md"), encoding="utf-8") as fh:
            report = fh.read()
        self.assertIn("❌ onnx.checker.check_model: refused", report)
        self.assertNotIn("compare with eager PyTorch", report)
        # A valid file passes the checker step.
        m = onnxc.export(MLP().eval(), (torch.randn(2, 16),), self.path("ok.onnx"), verify=True,
                         report=True)
        self.assertIn("✅ onnx.checker.check_model: valid", m.report)

    def test_verification_error_is_a_conversion_error(self):
        self.assertTrue(issubclass(onnxc.VerificationError, onnxc.ConversionError))
        for cls in (onnxc.CaptureError, onnxc.UnsupportedOperatorError, onnxc.CheckerError):
            self.assertTrue(issubclass(cls, onnxc.ConversionError), cls)
            self.assertFalse(issubclass(cls, onnxc.VerificationError), cls)


class TakesNonTensors(torch.nn.Module):
    """str, bool, int, float and None arguments, also inside a list and a
    dict: constants of the trace, as torch.onnx.export takes them."""

    def forward(self, x, mode, flag, n, s, opt=None, cfg=None, extra=None):
        y = x * n + s
        if mode == "double":
            y = y * 2
        if flag:
            y = y + 1
        if opt is not None:
            y = y + opt
        if cfg is not None:
            y = y * cfg["k"] + cfg["t"]
        if extra is not None:
            y = y - extra[1] * extra[0]
        return y


class MakeFxDynamic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 4)    # a weight dim (4) equal to the example batch

    def forward(self, x, y):
        return torch.relu(self.fc(x)) * x.shape[0] + y.sum(0)


class NonTensorArgumentsTest(TempDirTest):

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_make_fx_with_dynamic_shapes(self):
        """capture="make_fx" with dynamic_shapes on torch 2.x (it failed:
        ShapeEnv has no attribute create_symint): named dims are symbols,
        a weight dim of the same example size stays static."""
        model = MakeFxDynamic().eval()
        f = self.path("mfx.onnx")
        x, y = torch.randn(4, 3), torch.randn(4, 4)
        m = onnxc.export(model, (x, y), f, capture="make_fx",
                         dynamic_shapes={"x": {0: "batch"}, "y": {0: "batch"}})
        self.assertEqual(dims(onnx.load(f).graph.input[0]), ["batch", 3])
        for n in (2, 4, 7):
            a, b = torch.randn(n, 3), torch.randn(n, 4)
            self.assertLess(float((m(a, b)[0] - model(a, b)).abs().max()), TOLERANCE)

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_non_tensor_arguments_are_constants(self):
        x, t, u = torch.randn(2, 3), torch.ones(3), torch.randn(2, 3)
        model = TakesNonTensors()
        args = (x, "double", True, 3, 0.5, None, {"k": 2, "t": t, "name": "a"}, [1.5, u])
        m = onnxc.export(model, args, self.path("nt.onnx"))
        self.assertEqual([i.name for i in onnx.load(self.path("nt.onnx")).graph.input],
                         ["x", "cfg_t", "extra_1"])
        got = m(*args)[0]
        self.assertLess(float((got - model(*args)).abs().max()), TOLERANCE)
        # The other branch of the str and bool arguments is another trace.
        args2 = (x, "single", False, 2, -1.0)
        m2 = onnxc.export(model, args2, self.path("nt2.onnx"))
        self.assertEqual([i.name for i in onnx.load(self.path("nt2.onnx")).graph.input], ["x"])
        self.assertLess(float((m2(x)[0] - model(*args2)).abs().max()), TOLERANCE)


class UsesSymbolicOps(torch.nn.Module):
    """torch.onnx.ops.symbolic and symbolic_multi_out: any ONNX op by name."""

    def forward(self, x):
        ops = torch.onnx.ops
        y = ops.symbolic("Gelu", [x], attrs={"approximate": "tanh"}, dtype=x.dtype,
                         shape=x.shape, version=20)
        k = torch.tensor([2])
        vals, idx = ops.symbolic_multi_out("TopK", [y, k], attrs={"axis": -1, "largest": 1},
                                           dtypes=[x.dtype, torch.int64],
                                           shapes=[[x.shape[0], 2], [x.shape[0], 2]])
        z = ops.symbolic("my.domain::Frob", [vals, None, vals], attrs={"alpha": 0.5, "ks": [1, 2],
                                                                 "names": ["a", "b"]},
                         dtype=x.dtype, shape=vals.shape, version=3)
        return y, vals, idx, z


class SymbolicOpsTest(TempDirTest):

    @unittest.skipUnless(hasattr(getattr(torch, "onnx", None), "ops") and
                         hasattr(getattr(torch.onnx, "ops", None), "symbolic"),
                         "torch.onnx.ops.symbolic: torch >= 2.8")
    def test_symbolic_ops_become_the_named_op(self):
        f = self.path("sym.onnx")
        x = torch.randn(3, 5)
        onnxc.export(UsesSymbolicOps(), (x,), f)
        mp = onnx.load(f)
        nodes = [(n.domain, n.op_type) for n in mp.graph.node]
        self.assertEqual(nodes, [("", "Gelu"), ("", "TopK"), ("my.domain", "Frob")])
        attrs = {a.name: onnx.helper.get_attribute_value(a) for n in mp.graph.node
                 for a in n.attribute}
        self.assertEqual(attrs["approximate"], b"tanh")
        self.assertEqual((attrs["axis"], attrs["largest"]), (-1, 1))
        self.assertAlmostEqual(attrs["alpha"], 0.5)
        self.assertEqual((list(attrs["ks"]), list(attrs["names"])), ([1, 2], [b"a", b"b"]))
        v = mp.graph.node[1].output[0]
        self.assertEqual(list(mp.graph.node[2].input), [v, "", v])
        self.assertIn(("my.domain", 3), [(o.domain, o.version) for o in mp.opset_import])
        types = [o.type.tensor_type for o in mp.graph.output]
        self.assertEqual([t.elem_type for t in types], [1, 1, 7, 1])
        self.assertEqual(dims(mp.graph.output[2]), [3, 2])
        # The standard ops compute what they name (the eager call gives zeros).
        mp.graph.output.pop()
        del mp.graph.node[2]
        g = self.path("std.onnx")
        onnx.save(mp, g)
        y, vals = list(ortlib.run(g, {"x": x.numpy()}).values())[:2]
        want = torch.nn.functional.gelu(x, approximate="tanh")
        self.assertLess(float(np.abs(y - want.numpy()).max()), TOLERANCE)
        self.assertLess(float(np.abs(vals - want.topk(2).values.numpy()).max()), TOLERANCE)


class ExportedModelTest(TempDirTest):
    """What onnxc.export returns: the model proto, save() with and without
    external data, running it in onnxruntime (Python) on torch tensors and
    numpy arrays, and the report."""

    def setUp(self):
        super().setUp()
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            self.skipTest("needs the onnxruntime package (the torch 2.x environment has it)")

    def assertClose(self, got, want):
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        self.assertLessEqual(float(np.abs(np.asarray(got) - np.asarray(want)).max()), TOLERANCE)

    def test_returned_for_a_path(self):
        model, x = MLP().eval(), torch.randn(4, 16)
        f = self.path("mlp.onnx")
        m = onnxc.export(model, (x,), f)
        self.assertIsInstance(m, onnxc.ExportedModel)
        self.assertEqual(m.path, os.path.abspath(f))
        self.assertEqual(os.fspath(m), os.path.abspath(f))
        self.assertTrue(os.path.isfile(f))

    def test_version(self):
        """onnxc.__version__ is the binary's (ONNXC_VERSION of ir/ir.h)."""
        out = subprocess.run([onnxc.find_onnxc(), "--version"], capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(out.strip(), "onnxc " + onnxc.__version__)

    def test_model_proto(self):
        m = onnxc.export(MLP().eval(), (torch.randn(4, 16),))
        proto = m.model_proto
        self.assertIsInstance(proto, onnx.ModelProto)
        self.assertEqual(proto.producer_name, "onnxc")
        self.assertEqual([i.name for i in proto.graph.input], ["x"])
        onnx.checker.check_model(proto, full_check=True)

    def test_run_on_torch_and_numpy(self):
        model, x, y = TwoOut().eval(), torch.randn(3, 5), torch.randn(3, 5)
        m = onnxc.export(model, (x, y))
        with torch.no_grad():
            want = model(x, y)
        got = m(x, y)
        self.assertEqual(len(got), 2)
        self.assertTrue(all(isinstance(t, torch.Tensor) for t in got))
        for g, w in zip(got, want):
            self.assertClose(g.numpy(), w.numpy())
        got_np = m.run(x.numpy(), y=y.numpy())
        self.assertTrue(all(isinstance(a, np.ndarray) for a in got_np))
        for g, w in zip(got_np, want):
            self.assertClose(g, w.numpy())
        with self.assertRaises(TypeError):
            m.run(x)
        with self.assertRaises(TypeError):
            m.run(x, y, x)

    def test_temporary_file_goes_with_the_object(self):
        m = onnxc.export(MLP().eval(), (torch.randn(4, 16),))
        path = m.path
        self.assertTrue(os.path.isfile(path))
        del m
        import gc
        gc.collect()
        self.assertFalse(os.path.exists(path))

    def test_save(self):
        model, x = MLP().eval(), torch.randn(4, 16)
        m = onnxc.export(model, (x,))
        with torch.no_grad():
            want = model(x).numpy()
        plain, ext = self.path("plain.onnx"), self.path("ext.onnx")
        self.assertEqual(m.save(plain), plain)
        m.save(ext, external_data=True)
        self.assertFalse(os.path.exists(plain + ".data"))
        self.assertTrue(os.path.isfile(ext + ".data"))
        self.assertLess(os.path.getsize(ext), os.path.getsize(plain))
        for f in (plain, ext):
            onnx.checker.check_model(f, full_check=True)
            got = list(ortlib.run(f, {"x": x.numpy()}).values())[0]
            self.assertClose(got, want)
        weights = self.path("weights.bin")
        m.save(self.path("named.onnx"), external_data="weights.bin")
        self.assertTrue(os.path.isfile(weights))

    def test_report(self):
        model, x = MLP().eval(), torch.randn(4, 16)
        m = onnxc.export(model, (x,))
        self.assertIn("# onnxc Conversion Report", m.report)
        self.assertIn("## Passes", m.report)
        self.assertIsNone(m.report_path)
        f = self.path("mlp.onnx")
        m = onnxc.export(model, (x,), f, report=True)
        self.assertEqual(m.report_path, self.path("mlp_report.md"))
        with open(m.report_path, encoding="utf-8") as fh:
            self.assertEqual(fh.read(), m.report)
        self.assertIn("## ONNX model", m.report)


class QuickStartTest(unittest.TestCase):
    """The README's five-line script (test/python/quickstart.py, the same
    text): a torchvision model exported and run in onnxruntime."""

    def test_readme_shows_the_script(self):
        with open(os.path.join(HERE, "quickstart.py"), encoding="utf-8") as fh:
            script = fh.read()
        with open(os.path.join(REPO, "README.md"), encoding="utf-8") as fh:
            self.assertIn("```python\n" + script + "```", fh.read())

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_script_runs(self):
        try:
            import onnxruntime  # noqa: F401
            import torchvision  # noqa: F401
        except ImportError as e:
            self.skipTest("needs onnxruntime and torchvision: %s" % e)
        with tempfile.TemporaryDirectory(prefix="onnxc-quickstart.") as d:
            env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
            p = subprocess.run([sys.executable, os.path.join(HERE, "quickstart.py")], cwd=d,
                               env=env, capture_output=True, text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), "True", p.stderr)
            self.assertTrue(os.path.isfile(os.path.join(d, "resnet18.onnx")))


def main(case=None, doc=None):
    """Runs the tests of `case`, a TestCase class or a list of them
    (default: this file's), with -v and -k; the last line printed is the
    counts."""
    ap = argparse.ArgumentParser(description=(doc or __doc__).split("\n\n")[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("-k", dest="pattern", action="append", help="run tests matching PATTERN")
    a = ap.parse_args()
    loader = unittest.TestLoader()
    if a.pattern:
        loader.testNamePatterns = ["*%s*" % p for p in a.pattern]
    suite = unittest.TestSuite([loader.loadTestsFromTestCase(c)
                                for c in ((case if isinstance(case, list) else [case]) if case else [ApiTest, Torch2Test, ExportedModelTest,
                                                       TorchFormTest, ModuleAttributeTest,
                                                      DecompositionsAndVerifyTest,
                                                      NonTensorArgumentsTest, SymbolicOpsTest,
                                                      ErrorClassesTest, QuickStartTest])])
    result = unittest.TextTestRunner(verbosity=2 if a.verbose else 1, stream=sys.stdout).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    passed = result.testsRun - failed - skipped
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
