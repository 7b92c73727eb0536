#!/usr/bin/python3
"""Tests of what onnxc.export does as torch.onnx.export does it, beyond the
arguments test_api.py covers: TorchScript modules, the export flag models
test, export_params=False, custom ops and their opsets, dims named
automatically, errors, args ending in keyword arguments, inputs the model
changes, the ranges of dynamic dims, and F.cross_entropy.  Each model is
run in ONNX Runtime (utils/ortlib.py) against PyTorch.

    /usr/bin/python3 test/python/test_compat.py [-v] [-k PATTERN]

The onnxc binary is $ONNXC, else build/onnxc.  The last line is
`N passed, N failed, N skipped`; exit status 1 when a test fails.
"""

import contextlib
import io
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_api import (  # noqa: E402
    ONLY_TORCH2, TORCH2, ApiTest, TempDirTest, dims, main, np, onnx, onnxc, ortlib, torch)
from make_examples import LLM  # noqa: E402

F = torch.nn.functional


class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("shift", torch.arange(3.0))

    def forward(self, x):
        return torch.relu(self.fc(x)) + self.shift


class ExportBranch(torch.nn.Module):
    """Takes another path under ONNX export, as models do."""

    def forward(self, x):
        if torch.onnx.is_in_onnx_export():
            return x + 1
        return x - 1


class FailsInExport(torch.nn.Module):
    def forward(self, x):
        if torch.onnx.is_in_onnx_export():
            raise RuntimeError("refused while exporting")
        return x


class Raises(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("this model cannot run")


class WithStats(torch.nn.Module):
    """A parameter, batch-norm buffers and a buffer outside the state_dict."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.bn = torch.nn.BatchNorm1d(3)
        self.register_buffer("offset", torch.full((3,), 0.5), persistent=False)

    def forward(self, x):
        return self.bn(self.fc(x)) + self.offset


class KwModel(torch.nn.Module):
    def forward(self, x, scale=1.0, y=None):
        return x * scale + (y if y is not None else 0)


class DictLast(torch.nn.Module):
    def forward(self, x, extras):
        return x + extras["a"] * extras["b"]


class ChangesInputs(torch.nn.Module):
    def forward(self, d, items):
        d["twice"] = d["a"] * 2
        items.append(d["a"])
        return d["a"] + 1


def relu_times(a, b):
    return torch.relu(a) * b + 1


def run_onnx(f, feeds):
    return list(ortlib.run(f, {k: np.asarray(v) for k, v in feeds.items()}).values())


def graph_meta(text):
    """The graph's meta("KEY": "VALUE") entries of a .fxir text."""
    head = next(l for l in text.splitlines() if l.lstrip().startswith("graph @"))
    return dict(re.findall(r'"([^"]+)": "((?:[^"\\]|\\.)*)"', head))


class CompatTest(TempDirTest):

    check_runs = ApiTest.check_runs

    def export_quiet(self, *a, **kw):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            m = onnxc.export(*a, **kw)
        return m, err.getvalue()

    # ---- TorchScript modules ----

    @unittest.skipUnless(TORCH2, "the TorchScript-to-ExportedProgram converter is torch 2.x's")
    def test_script_modules(self):
        """torch.jit.script and torch.jit.trace results convert (through
        torch's converter), keep their forward's input names and compute
        the model."""
        model, x = Linear().eval(), torch.randn(2, 4)
        for how, sm in (("script", torch.jit.script(model)), ("trace", torch.jit.trace(model, (x,)))):
            f = self.path("%s.onnx" % how)
            self.export_quiet(sm, (x,), f)
            self.assertEqual([i.name for i in onnx.load(f).graph.input], ["x"], how)
            x2 = torch.randn(2, 4)
            self.check_runs(model, f, {"x": x2.numpy()}, (x2,))
        # A ScriptFunction too.
        fn = torch.jit.script(relu_times)
        a, b = torch.randn(2, 3), torch.randn(2, 3)
        f = self.path("fn.onnx")
        self.export_quiet(fn, (a, b), f)
        self.assertEqual([i.name for i in onnx.load(f).graph.input], ["a", "b"])
        got = run_onnx(f, {"a": a.numpy(), "b": b.numpy()})[0]
        self.assertLess(float(np.abs(got - relu_times(a, b).numpy()).max()), 1e-6)

    @unittest.skipUnless(TORCH2, "the TorchScript-to-ExportedProgram converter is torch 2.x's")
    def test_script_module_with_int_argument(self):
        """A scripted forward with an int parameter: a passed int (by
        position or keyword) is a constant of the trace, an omitted one
        takes its default; the graph's inputs are the tensor parameters,
        named as the forward names them."""
        class Repeats(torch.nn.Module):
            def forward(self, x, n: int = 3):
                return x.repeat(n, 1) * n + 1

        class Reshapes(torch.nn.Module):
            def forward(self, x, n: int, y):
                return x.reshape(n, -1) + y.sum()

        model, x, y = Repeats(), torch.randn(2, 3), torch.randn(4)
        sm = torch.jit.script(model)
        for args, kwargs, n in (((x,), None, 3), ((x, 5), None, 5), ((x,), {"n": 4}, 4)):
            f = self.path("int%d.onnx" % n)
            self.export_quiet(sm, args, f, kwargs=kwargs)
            self.assertEqual([i.name for i in onnx.load(f).graph.input], ["x"], (args, kwargs))
            x2 = torch.randn(2, 3)
            got = run_onnx(f, {"x": x2.numpy()})[0]
            self.assertEqual(tuple(got.shape), (2 * n, 3))
            self.assertLess(float(np.abs(got - model(x2, n).numpy()).max()), 1e-5, (args, kwargs))
        # An int with no default, before a tensor given by position or keyword.
        sm = torch.jit.script(Reshapes())
        for args, kwargs in (((x, 3, y), None), ((x, 3), {"y": y})):
            f = self.path("reshape.onnx")
            self.export_quiet(sm, args, f, kwargs=kwargs)
            self.assertEqual([i.name for i in onnx.load(f).graph.input], ["x", "y"])
            got = run_onnx(f, {"x": x.numpy(), "y": y.numpy()})[0]
            self.assertEqual(tuple(got.shape), (3, 2))
            self.assertLess(float(np.abs(got - Reshapes()(x, 3, y).numpy()).max()), 1e-5)
        # Leaving it out, or naming no parameter, says so.
        with self.assertRaises(onnxc.ConversionError) as cm:
            self.export_quiet(sm, (x,), self.path("missing.onnx"), kwargs={"y": y})
        self.assertIn("argument 'n' has no default", str(cm.exception))
        with self.assertRaises(onnxc.ConversionError) as cm:
            self.export_quiet(sm, (x, 3, y), self.path("nope.onnx"), kwargs={"m": 1})
        self.assertIn("no argument named 'm'", str(cm.exception))

    def test_script_module_refused_is_a_conversion_error(self):
        """A ScriptModule the converter refuses (here: a branch on a float
        argument; on torch 1.13 every one) is a ConversionError that says
        why, with torch's error as its cause, never a raw RuntimeError."""
        class Branchy(torch.nn.Module):
            def forward(self, x, y: float = 2.0):
                h = x + 1
                if bool(x.sum() > 0):
                    h = h * y
                return h
        sm = torch.jit.script(Branchy())
        x = torch.randn(2, 3)
        try:
            m, _ = self.export_quiet(sm, (x,), self.path("b.onnx"))
        except onnxc.ConversionError as e:
            self.assertIn("TorchScript", str(e))
            if TORCH2:
                self.assertIsNotNone(e.__cause__)
            return
        # A newer converter may take it: then it must compute the model.
        self.check_runs(Branchy(), m.path, {"x": x.numpy()}, (x,))

    # ---- torch.onnx.is_in_onnx_export ----

    def test_is_in_onnx_export(self):
        """True while onnxc traces (the model's export branch is in the
        graph), False again afterwards, also after a failure."""
        x = torch.randn(2, 3)
        f = self.path("branch.onnx")
        self.export_quiet(ExportBranch(), (x,), f)
        got = run_onnx(f, {"x": x.numpy()})[0]
        self.assertLess(float(np.abs(got - (x + 1).numpy()).max()), 1e-6)
        self.assertFalse(torch.onnx.is_in_onnx_export())
        # TorchDynamo (the strict capture) reads the flag as False and would
        # trace the other branch: the failure is asked of torch.export alone.
        with self.assertRaises(onnxc.ConversionError) as cm:
            self.export_quiet(FailsInExport(), (x,), self.path("fails.onnx"),
                              capture="torch.export" if TORCH2 else None)
        self.assertIn("refused while exporting", str(cm.exception))
        self.assertFalse(torch.onnx.is_in_onnx_export())

    # ---- export_params=False ----

    def test_export_params_false(self):
        """Parameters and state_dict buffers are graph inputs after the
        model's, in state_dict order, named by their keys; no initializer
        holds them (a buffer outside the state_dict stays one); fed another
        model's state_dict, the file computes that model."""
        model, x = WithStats().eval(), torch.randn(5, 4)
        f = self.path("noparams.onnx")
        self.export_quiet(model, (x,), f, export_params=False)
        g = onnx.load(f).graph
        keys = list(model.state_dict().keys())
        self.assertEqual([i.name for i in g.input], ["x"] + keys)
        self.assertEqual([t.name for t in g.initializer], ["offset"])
        self.assertEqual(dims(g.input[1]), [3, 4])
        other = WithStats().eval()
        with torch.no_grad():
            other.bn.running_mean.uniform_(-1, 1)
            other.bn.running_var.uniform_(0.5, 2)
        feeds = {"x": x.numpy()}
        feeds.update({k: v.detach().numpy() for k, v in other.state_dict().items()})
        got = run_onnx(f, feeds)[0]
        with torch.no_grad():
            want = other(x).numpy()
        self.assertLess(float(np.abs(got - want).max()), 1e-5)
        # The default keeps them as initializers.
        f2 = self.path("params.onnx")
        self.export_quiet(model, (x,), f2)
        self.assertEqual([i.name for i in onnx.load(f2).graph.input], ["x"])

    def test_command_line_options(self):
        """python3 -m onnxc --no-export-params, --allow-custom-ops and
        --custom-opset DOMAIN:VERSION (the last two: the domain import is
        written; a bad spelling is a usage error)."""
        from onnxc.__main__ import main as cli
        src = self.path("net.py")
        with open(src, "w") as fh:
            fh.write("import torch\n\nclass Net(torch.nn.Module):\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     "        self.fc = torch.nn.Linear(4, 2)\n\n"
                     "    def forward(self, x):\n        return self.fc(x)\n")
        f = self.path("net.onnx")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            rc = cli(["--module", src + ":Net", "--input-shape", "3,4", "-o", f,
                      "--no-export-params", "--allow-custom-ops", "--custom-opset", "my.domain:2"])
        self.assertEqual(rc, 0)
        m = onnx.load(f)
        self.assertEqual([i.name for i in m.graph.input], ["x", "fc.weight", "fc.bias"])
        self.assertEqual(len(m.graph.initializer), 0)
        self.assertEqual({o.domain: o.version for o in m.opset_import}.get("my.domain"), 2)
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            cli(["--module", src + ":Net", "--input-shape", "3,4", "-o", f,
                 "--custom-opset", "my.domain"])

    # ---- custom ops ----

    @unittest.skipUnless(TORCH2 and hasattr(torch, "library")
                         and hasattr(torch.library, "custom_op"), "torch.library.custom_op: torch >= 2.4")
    def test_custom_ops(self):
        """A custom op with no decomposition fails the conversion; with
        allow_custom_ops=True it is a node of its namespace's domain named
        by the op, tensors as inputs, literal arguments as attributes
        arg<i>; custom_opsets sets the domain's version (default 1)."""
        lib = "onnxc_test%d" % os.getpid()

        @torch.library.custom_op("%s::scale_shift" % lib, mutates_args=())
        def scale_shift(x: torch.Tensor, scale: float, shift: int) -> torch.Tensor:
            return x * scale + shift

        @scale_shift.register_fake
        def _(x, scale, shift):
            return torch.empty_like(x)

        class UsesCustom(torch.nn.Module):
            def forward(self, x):
                return torch.relu(scale_shift(x, 0.5, 3))
        x = torch.randn(3, 4)
        with self.assertRaises(onnxc.ConversionError) as cm:
            self.export_quiet(UsesCustom(), (x,), self.path("c0.onnx"))
        self.assertIn("no decomposition for %s::scale_shift" % lib, str(cm.exception))
        for opsets, version in ((None, 1), ({lib: 3}, 3)):
            f = self.path("custom.onnx")
            _, err = self.export_quiet(UsesCustom(), (x,), f, allow_custom_ops=True,
                                       custom_opsets=opsets)
            self.assertIn("kept as a custom op", err)
            m = onnx.load(f)
            self.assertEqual({o.domain: o.version for o in m.opset_import}.get(lib), version)
            node = next(n for n in m.graph.node if n.domain == lib)
            self.assertEqual(node.op_type, "scale_shift")
            self.assertEqual(list(node.input), ["x"])
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            self.assertEqual(attrs, {"arg1": 0.5, "arg2": 3})
        with self.assertRaises(onnxc.ConversionError):
            onnxc.export(UsesCustom(), (x,), self.path("c1.onnx"), custom_opsets={lib: 0})

    @unittest.skipIf(TORCH2, "torch 2.x: PyTorch's own decomposition may replace cumprod")
    def test_aten_op_kept_as_custom_op(self):
        """An ATen op with no decomposition, kept: domain aten, the op's
        name, its literal argument as attribute arg1."""
        class CumProd(torch.nn.Module):
            def forward(self, x):
                return torch.cumprod(x * 2, 0)
        f = self.path("cumprod.onnx")
        _, err = self.export_quiet(CumProd(), (torch.randn(3, 3),), f, allow_custom_ops=True)
        self.assertIn("kept as a custom op", err)
        m = onnx.load(f)
        node = next(n for n in m.graph.node if n.domain == "aten")
        self.assertEqual(node.op_type, "cumprod")
        self.assertEqual({a.name: onnx.helper.get_attribute_value(a) for a in node.attribute},
                         {"arg1": 0})
        self.assertEqual({o.domain: o.version for o in m.opset_import}.get("aten"), 1)

    def test_aten_fallback(self):
        """operator_export_type=ONNX_ATEN_FALLBACK (the enum or its name)
        keeps an ATen op with no decomposition as torch.onnx.export does:
        org.pytorch.aten::ATen with operator, overload_name and the literal
        argument; an unknown type is a ConversionError."""
        class CumProd(torch.nn.Module):
            def forward(self, x):
                return torch.cumprod(x * 2, 0)
        kinds = ["ONNX_ATEN_FALLBACK"]
        if hasattr(torch.onnx, "OperatorExportTypes"):
            kinds.append(torch.onnx.OperatorExportTypes.ONNX_ATEN_FALLBACK)
        for kind in kinds:
            f = self.path("cumprod_aten.onnx")
            _, err = self.export_quiet(CumProd(), (torch.randn(3, 3),), f, operator_export_type=kind)
            self.assertIn("kept as org.pytorch.aten::ATen", err)
            m = onnx.load(f)
            node = next(n for n in m.graph.node if n.domain == "org.pytorch.aten")
            self.assertEqual(node.op_type, "ATen")
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            self.assertEqual(attrs["operator"], b"cumprod")
            self.assertIn("overload_name", attrs)
            self.assertEqual(attrs.get("arg1"), 0)
            self.assertEqual({o.domain: o.version for o in m.opset_import}.get("org.pytorch.aten"), 1)
        with self.assertRaises(onnxc.ConversionError):
            onnxc.export(CumProd(), (torch.randn(3, 3),), self.path("bad.onnx"),
                         operator_export_type="ONNX_SOMETHING")

    def test_keep_initializers_as_inputs(self):
        """keep_initializers_as_inputs=True: every initializer is a graph
        input too, and two equal weights stay two inputs (not merged), so
        each may be given another value."""
        class Twice(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = torch.nn.Parameter(torch.ones(3))
                self.b = torch.nn.Parameter(torch.ones(3))

            def forward(self, x):
                return x * self.a + self.b
        f = self.path("keep.onnx")
        self.export_quiet(Twice(), (torch.randn(2, 3),), f, keep_initializers_as_inputs=True)
        g = onnx.load(f).graph
        inits = [t.name for t in g.initializer]
        self.assertEqual(len(inits), 2, inits)
        self.assertEqual([i.name for i in g.input][1:], inits)

    # ---- dims named automatically ----

    @unittest.skipUnless(TORCH2, ONLY_TORCH2)
    def test_automatic_dim_names(self):
        """Dim.AUTO and Dim.DYNAMIC name a dim INPUT_dimD, in the dict form
        and the tuple form of a tensor's dims (the tuple form was left with
        torch's symbol, s31); None keeps it static, as torch.export does;
        the file runs at other sizes."""
        from torch.export import Dim
        model = torch.nn.Sequential(torch.nn.Linear(4, 3)).eval()
        x = torch.randn(3, 4)
        # A tensor's dims as a dict, or as a tuple or list with one entry a
        # dim (torch.export takes both).
        for spec, want in (({0: Dim.AUTO}, ["input_dim0", 4]), ({0: Dim.DYNAMIC}, ["input_dim0", 4]),
                           ({0: None}, [3, 4]), ((Dim.AUTO, None), ["input_dim0", 4]),
                           ([Dim.DYNAMIC, Dim.STATIC], ["input_dim0", 4]), (("rows", 4), ["rows", 4])):
            f = self.path("auto.onnx")
            self.export_quiet(model, (x,), f, dynamic_shapes={"input": spec})
            m = onnx.load(f)
            self.assertEqual(dims(m.graph.input[0]), want, spec)
            if want[0] != 3:
                self.assertEqual(dims(m.graph.output[0]), [want[0], 3])
                x7 = torch.randn(7, 4)
                self.check_runs(model, f, {"input": x7.numpy()}, (x7,))

    def test_dims_as_a_tuple(self):
        """A tensor's dims given as a tuple of names (None static): the
        named dim is dynamic on either torch."""
        model = torch.nn.Sequential(torch.nn.Linear(4, 3)).eval()
        f = self.path("tuple.onnx")
        self.export_quiet(model, (torch.randn(3, 4),), f, dynamic_shapes={"input": ("n", None)})
        self.assertEqual(dims(onnx.load(f).graph.input[0]), ["n", 4])
        x = torch.randn(6, 4)
        self.check_runs(model, f, {"input": x.numpy()}, (x,))

    # ---- errors, args ending in kwargs, changed inputs ----

    def test_every_failure_is_a_conversion_error(self):
        """Bad keyword arguments, a model that raises, and a model whose
        forward rejects its input reach the caller as ConversionError with
        the original error as __cause__."""
        x = torch.randn(2, 4)
        cases = (
            (Linear(), (x,), {"nope": x}, TypeError),
            (Raises(), (x,), None, RuntimeError),
            (Linear(), ("not a tensor",), None, Exception),
        )
        for model, args, kwargs, cause in cases:
            with self.assertRaises(onnxc.ConversionError) as cm:
                self.export_quiet(model, args, self.path("e.onnx"), kwargs=kwargs)
            self.assertIsInstance(cm.exception.__cause__, cause, str(cm.exception))
            self.assertFalse(os.path.exists(self.path("e.onnx")))

    def test_args_ending_in_kwargs(self):
        """As torch.onnx.export: a trailing dict of args whose keys name
        forward parameters holds keyword arguments; an empty trailing dict
        is dropped; a dict whose keys are not parameters stays a dict input."""
        x, y = torch.randn(2, 3), torch.randn(2, 3)
        f = self.path("kw.onnx")
        self.export_quiet(KwModel(), (x, {"y": y}), f)
        self.assertEqual([i.name for i in onnx.load(f).graph.input], ["x", "y"])
        got = run_onnx(f, {"x": x.numpy(), "y": y.numpy()})[0]
        self.assertLess(float(np.abs(got - (x + y).numpy()).max()), 1e-6)
        f2 = self.path("dict.onnx")
        a, b = torch.randn(2, 3), torch.randn(2, 3)
        self.export_quiet(DictLast(), (x, {"a": a, "b": b}, {}), f2)
        self.assertEqual([i.name for i in onnx.load(f2).graph.input], ["x", "extras_a", "extras_b"])
        self.export_quiet(DictLast(), (x, {"a": a, "b": b}), f2)
        got = run_onnx(f2, {"x": x.numpy(), "extras_a": a.numpy(), "extras_b": b.numpy()})[0]
        self.assertLess(float(np.abs(got - (x + a * b).numpy()).max()), 1e-6)

    def test_changed_inputs_warn(self):
        """A model that adds to a dict or list input while traced: one
        warning each, naming the input and the change."""
        a = torch.randn(2, 3)
        _, err = self.export_quiet(ChangesInputs(), ({"a": a}, [a]), self.path("ch.onnx"))
        self.assertEqual(err.count("warning: the model changed its"), 2, err)
        self.assertIn("dict input 'd'", err)
        self.assertIn("became ['a', 'twice']", err)
        self.assertIn("list input 'items'", err)
        got = run_onnx(self.path("ch.onnx"), {"d_a": a.numpy(), "items_0": a.numpy()})[0]
        self.assertLess(float(np.abs(got - (a + 1).numpy()).max()), 1e-6)
        _, err = self.export_quiet(DictLast(), (a, {"a": a, "b": a}), self.path("same.onnx"))
        self.assertNotIn("changed its", err)

    # ---- one truth for a dynamic dim's range ----

    def test_dim_range_is_one_truth(self):
        """The tutorial's LLM (a 256-row causal mask) with a dynamic
        sequence: the range in the range_constraints metadata and any
        warning the bridge gives about the dim say the same bound, and the
        file runs at that bound."""
        from onnxc import bridge
        model = LLM(vocab_size=1024, context_size=256).eval()
        ids = torch.randint(0, 1024, (2, 30))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            text = bridge.export(model, (ids,), self.path("llm.fxir"),
                                 dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
        ranges = graph_meta(text)["pkg.torch.export.ExportedProgram.range_constraints"]
        m = re.search(r"seq: VR\[(\d+), (\d+|int_oo)\]", ranges)
        self.assertIsNotNone(m, ranges)
        lo, hi = int(m.group(1)), m.group(2)
        self.assertNotEqual(hi, "int_oo", "the mask bounds seq: %s" % ranges)
        hi = int(hi)
        self.assertLessEqual(hi, 256)
        said = [l for l in err.getvalue().splitlines() if "valid only where" in l and "seq" in l]
        want = "seq <= %d" % hi if lo <= 2 else "%d <= seq <= %d" % (lo, hi)
        for line in said:
            self.assertTrue(line.endswith("where " + want), "%s against %s" % (line, ranges))
        f = self.path("llm.onnx")
        self.export_quiet(model, (ids,), f, dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
        ids = torch.randint(0, 1024, (1, hi))
        with torch.no_grad():
            want = model(ids).numpy()
        got = run_onnx(f, {"input_ids": ids.numpy()})[0]
        self.assertLess(float(np.abs(got - want).max()), 1e-4)

    # ---- F.cross_entropy ----

    def test_cross_entropy(self):
        """F.cross_entropy (mean, sum with weights and ignore_index, none
        with label smoothing, 4-D, unbatched) and F.nll_loss match PyTorch."""
        class Losses(torch.nn.Module):
            def forward(self, x, t, w, x4, t3, xu, tu):
                return (F.cross_entropy(x, t),
                        F.cross_entropy(x, t, weight=w, ignore_index=1, reduction="sum"),
                        F.cross_entropy(x, t, reduction="none", label_smoothing=0.1),
                        F.nll_loss(F.log_softmax(x, 1), t, weight=w, ignore_index=2),
                        F.cross_entropy(x4, t3, weight=w),
                        F.cross_entropy(xu, tu),
                        F.cross_entropy(x, t, reduction="none", weight=w))
        args = (torch.randn(5, 3), torch.tensor([0, 1, 2, 1, 0]), torch.rand(3) + 0.1,
                torch.randn(2, 3, 4, 5), torch.randint(0, 3, (2, 4, 5)), torch.randn(3),
                torch.tensor(2))
        names = ["x", "t", "w", "x4", "t3", "xu", "tu"]
        f = self.path("losses.onnx")
        self.export_quiet(Losses(), args, f)
        self.check_runs(Losses(), f, {n: a.numpy() for n, a in zip(names, args)}, args)


if __name__ == "__main__":
    sys.exit(main(CompatTest, __doc__))
