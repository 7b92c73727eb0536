#!/usr/bin/python3
"""The exporter's contract: the examples of PyTorch's exporter documents that
torch 1.13 can express, and the behaviours those documents promise (names,
dynamic dims, metadata, training mode), exported with onnxc.export, run in
ONNX Runtime (utils/ortlib.py) and compared with PyTorch.

    /usr/bin/python3 test/contract/run_contract.py [-v] [-k PATTERN]

Examples the Python API tests or the end-to-end zoo already run are not
repeated here; docs/exporter.md's feature table names the test of each.
The onnxc binary is $ONNXC, else build/onnxc.  The last line is
`N passed, N failed, N skipped`; exit status 1 when a test fails.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
for d in ("python", "utils", "examples", "test/python", "test/lit/onnx/Inputs"):
    sys.path.insert(0, os.path.join(REPO, d))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import onnxc  # noqa: E402
import ortlib  # noqa: E402
import test_api  # noqa: E402
from dump_meta import meta  # noqa: E402
import make_examples  # noqa: E402
from make_examples import LLM  # noqa: E402

TOLERANCE = test_api.TOLERANCE
dims = test_api.dims


# -- the seed documents' models ------------------------------------------------

# torch-export-onnx-exporter-docs.md, "A simple example" (also bundled as
# examples/dynamic_mlp.fxir).
MLPModel = make_examples.DynamicMLP


class SimpleModel(make_examples.SimpleModel):
    """conversion-report-example.md's model (examples/make_examples.py's,
    which stops before the attention); torch 1.13 has no
    scaled_dot_product_attention, so the attention is written out."""

    def forward(self, x, y):
        b = super().forward(x, y)
        att = torch.softmax(b @ b.transpose(-2, -1) / b.shape[-1] ** 0.5, dim=-1)
        return att @ b


# -- training mode --------------------------------------------------------------

class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4, momentum=0.3)
        self.bn1 = nn.BatchNorm1d(5, affine=False)
        self.bn2 = nn.BatchNorm1d(5, track_running_stats=False)

    def forward(self, x, y):
        return torch.relu(self.bn(self.conv(x))), self.bn1(y), self.bn2(y * 2)


class DropNet(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(self.fc(x)) + torch.nn.functional.dropout(x, 0.0, self.training)


def _lively_bn(model):
    """Running statistics away from 0 and 1, so that using them or not shows."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.track_running_stats:
                m.running_mean.uniform_(-1, 1)
                m.running_var.uniform_(0.5, 2)
    return model


class ContractTest(test_api.TempDirTest):
    def outputs(self, f, feeds):
        """ONNX Runtime's outputs in the graph's order, by name."""
        got = ortlib.run(f, feeds)
        return [(o.name, np.asarray(got[o.name])) for o in onnx.load(f).graph.output]

    def assertClose(self, ref, got, what):
        ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
        self.assertEqual(ref.shape, got.shape, what)
        self.assertLessEqual(float(np.abs(ref.astype(np.float64) - got).max(initial=0)),
                             TOLERANCE, what)

    # -- seed examples --------------------------------------------------------

    def test_seed_mlp_dynamic_names(self):
        """The exporter docs' MLPModel: dict and list inputs, dynamic_shapes
        as a tuple matching them, input_names and output_names; the three
        inputs are ("batch_size", 8) and the model runs at two batch sizes."""
        model = MLPModel().eval()
        tensor_input = torch.rand((97, 8))
        dict_input = {"tensor_x": torch.rand((97, 8))}
        list_input = [torch.rand((97, 8))]
        f = self.path("mlp.onnx")
        onnxc.export(model, (tensor_input, dict_input, list_input), f,
                     dynamic_shapes=({0: "batch_size"}, {"tensor_x": {0: "batch_size"}},
                                     [{0: "batch_size"}]),
                     input_names=["tensor_input", "tensor_x", "list_input_index_0"],
                     output_names=["output"])
        m = onnx.load(f)
        self.assertEqual([i.name for i in m.graph.input],
                         ["tensor_input", "tensor_x", "list_input_index_0"])
        for i in m.graph.input:
            self.assertEqual(dims(i), ["batch_size", 8])
        self.assertEqual([o.name for o in m.graph.output], ["output"])
        for n in (97, 5):
            args = (torch.rand(n, 8), {"tensor_x": torch.rand(n, 8)}, [torch.rand(n, 8)])
            feeds = {"tensor_input": args[0].numpy(), "tensor_x": args[1]["tensor_x"].numpy(),
                     "list_input_index_0": args[2][0].numpy()}
            with torch.no_grad():
                ref = model(*args)
            self.assertClose(ref, self.outputs(f, feeds)[0][1], "batch %d" % n)

    def test_seed_report_model(self):
        """The conversion report's model (in-place add_, a weight): the report
        holds the traced program with the add_ and the ONNX listing."""
        model = SimpleModel().eval()
        x, y = torch.randn(2, 3, 10, 10), torch.randn(2, 3, 10, 10)
        f = self.path("simple.onnx")
        onnxc.export(model, (x, y), f, report=True)
        with open(self.path("simple_report.md"), encoding="utf-8") as fh:
            report = fh.read()
        self.assertIn("aten::add_.Tensor", report)
        self.assertIn("## ONNX model", report)
        with torch.no_grad():
            ref = model(x.clone(), y)
        self.assertClose(ref, self.outputs(f, {"x": x.numpy(), "y": y.numpy()})[0][1], "out")

    def test_seed_llm_functions_inlined(self):
        """The local-functions tutorial's LLM, exported with its modules as
        functions, then inlined again (the tutorial's onnx inliner step):
        no functions left, same outputs as PyTorch."""
        model = LLM(vocab_size=1024, context_size=256).eval()
        ids = torch.randint(0, 1024, (2, 30))
        f, flat = self.path("llm.onnx"), self.path("llm_inlined.onnx")
        onnxc.export(model, (ids,), f, outline=True)
        self.assertTrue(onnx.load(f).functions)
        p = subprocess.run([onnxc.find_onnxc(), f, "-passes=inline", "-o", flat],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(onnx.load(flat).functions)
        with torch.no_grad():
            ref = model(ids)
        for g in (f, flat):
            self.assertClose(ref, self.outputs(g, {"input_ids": ids.numpy()})[0][1], g)

    # -- metadata ---------------------------------------------------------------

    def test_metadata(self):
        """PyTorch's metadata keys on nodes, values and the graph, from a real
        module: each node's entries end with its FX node; inputs, weights and
        outputs carry their signature kind and their FX names."""
        model = test_api.MLP().eval()
        x = torch.randn(4, 16)
        f = self.path("mlp.onnx")
        onnxc.export(model, (x,), f, dynamic_shapes={"x": {0: "batch"}},
                     output_names=["logits"], optimize="O0")
        m = onnx.load(f)
        graph_meta = dict(meta(m.graph, 16))
        self.assertEqual(graph_meta.pop("pkg.torch.export.ExportedProgram.range_constraints"),
                         "{batch: VR[2, int_oo]}")
        # The graph signature is written on every model, in the text
        # torch.export prints for a program's, under the FX graph's names
        # (the trace's, not output_names').
        orig = "pkg.torch.onnx.original_node_name"
        fx_name = {v.name: dict(meta(v, 4 if i < 2 else 16))[orig] for i, part in
                   enumerate((m.graph.input, m.graph.output, m.graph.initializer)) for v in part}
        params = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
        self.assertEqual(graph_meta, {"pkg.torch.export.ExportedProgram.graph_signature":
                                      "\n# inputs\n"
                                      + "".join("%s: PARAMETER target='%s'\n" % (fx_name[p], p)
                                                for p in params)
                                      + "%s: USER_INPUT\n" % fx_name["x"]
                                      + "\n# outputs\n%s: USER_OUTPUT\n" % fx_name["logits"]})
        keys = {}
        for n in m.graph.node:
            props = dict(meta(n, 9))
            fx = props.get("pkg.torch.onnx.fx_node", "")
            if "aten.relu" not in fx:
                continue
            self.assertEqual(list(props)[:5], [
                "namespace", "pkg.torch.onnx.class_hierarchy", "pkg.torch.onnx.name_scopes",
                "pkg.torch.onnx.fx_node", "pkg.torch.onnx.stack_trace"])
            self.assertEqual(props["namespace"], "test_api.MLP/relu: aten.relu.default")
            self.assertEqual(props["pkg.torch.onnx.class_hierarchy"],
                             "['test_api.MLP', 'aten.relu.default']")
            self.assertEqual(props["pkg.torch.onnx.name_scopes"], "['', 'relu']")
            self.assertTrue(fx.startswith("%relu : "), fx)
            keys = props
        self.assertTrue(keys, "no node came from aten.relu")
        kind = "pkg.torch.export.graph_signature.InputSpec.kind"
        x_meta = dict(meta(m.graph.input[0], 4))
        self.assertEqual(x_meta[kind], "USER_INPUT")
        self.assertEqual(x_meta["pkg.torch.export.graph_signature.InputSpec.persistent"], "None")
        self.assertTrue(x_meta["pkg.torch.onnx.original_node_name"].startswith("arg"))
        inits = {t.name: dict(meta(t, 16)) for t in m.graph.initializer}
        self.assertEqual(inits["fc1.weight"][kind], "PARAMETER")
        out = dict(meta(m.graph.output[0], 4))
        self.assertEqual(out["pkg.torch.export.graph_signature.OutputSpec.kind"], "USER_OUTPUT")
        self.assertEqual(out["pkg.torch.onnx.original_node_name"], "addmm_1")

    def test_metadata_buffers_constants(self):
        """A buffer outside the state_dict is not persistent; a tensor the
        trace captured is a CONSTANT_TENSOR."""

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("scale", torch.full((3,), 2.0), persistent=False)
                self.register_buffer("shift", torch.ones(3))

            def forward(self, x):
                return x * torch.tensor([1.0, 2.0, 3.0]) * self.scale + self.shift

        model = M().eval()
        x = torch.randn(2, 3)
        f = self.path("bufs.onnx")
        onnxc.export(model, (x,), f, optimize="O0")
        m = onnx.load(f)
        spec = "pkg.torch.export.graph_signature.InputSpec."
        inits = {t.name: dict(meta(t, 16)) for t in m.graph.initializer}
        self.assertEqual(inits["scale"][spec + "kind"], "BUFFER")
        self.assertEqual(inits["scale"][spec + "persistent"], "False")
        self.assertEqual(inits["shift"][spec + "persistent"], "True")
        consts = [v for k, v in inits.items() if k not in ("scale", "shift")]
        self.assertEqual([c[spec + "kind"] for c in consts], ["CONSTANT_TENSOR"])
        with torch.no_grad():
            self.assertClose(model(x), self.outputs(f, {"x": x.numpy()})[0][1], "out")

    # -- training mode --------------------------------------------------------

    def test_training_batch_norm(self):
        """training=TRAINING: batch norm normalizes with the batch's statistics
        and returns the running statistics PyTorch's update gives (its
        momentum, the unbiased variance), for affine and non-affine layers
        and one without running statistics; the model's mode is kept."""
        model = _lively_bn(BNNet()).eval()
        ref_model = _lively_bn(BNNet())
        ref_model.load_state_dict(model.state_dict())
        x, y = torch.randn(2, 3, 6, 7), torch.randn(6, 5)
        f = self.path("bn.onnx")
        onnxc.export(model, (x, y), f, training=torch.onnx.TrainingMode.TRAINING)
        self.assertFalse(model.training, "the model's mode is restored")
        ref_model.train()
        with torch.no_grad():
            ref = ref_model(x, y)
        got = self.outputs(f, {"x": x.numpy(), "y": y.numpy()})
        want = list(ref) + [ref_model.bn.running_mean, ref_model.bn.running_var,
                            ref_model.bn.num_batches_tracked, ref_model.bn1.running_mean,
                            ref_model.bn1.running_var, ref_model.bn1.num_batches_tracked]
        self.assertEqual([n for n, _ in got][3:], [
            "bn.running_mean_updated", "bn.running_var_updated",
            "bn.num_batches_tracked_updated", "bn1.running_mean_updated",
            "bn1.running_var_updated", "bn1.num_batches_tracked_updated"])
        for (name, g), r in zip(got, want):
            self.assertClose(r, g, name)
        kinds = [dict(meta(o, 4))["pkg.torch.export.graph_signature.OutputSpec.kind"]
                 for o in onnx.load(f).graph.output]
        self.assertEqual(kinds, ["USER_OUTPUT"] * 3 + ["BUFFER_MUTATION"] * 6)
        # The statistics moved: a model that kept them would fail above.
        self.assertGreater(float((ref_model.bn.running_var - model.bn.running_var).abs().max()),
                           1e-2)

    def test_training_dynamic_batch(self):
        """Training-mode batch norm with dynamic batch dims: the statistics
        and their update (n / (n - 1)) follow the batch the model runs at."""
        model = _lively_bn(BNNet())
        ref_model = _lively_bn(BNNet())
        ref_model.load_state_dict(model.state_dict())
        f = self.path("bn_dyn.onnx")
        onnxc.export(model, (torch.randn(2, 3, 6, 7), torch.randn(6, 5)), f, training=True,
                     dynamic_shapes={"x": {0: "n"}, "y": {0: "b"}})
        x, y = torch.randn(4, 3, 6, 7), torch.randn(9, 5)
        ref_model.train()
        with torch.no_grad():
            ref = list(ref_model(x, y))
        got = self.outputs(f, {"x": x.numpy(), "y": y.numpy()})
        for (name, g), r in zip(got, ref + [ref_model.bn.running_mean,
                                            ref_model.bn.running_var]):
            self.assertClose(r, g, name)

    def test_eval_is_the_default(self):
        """Without training=, a model in train() mode exports in eval mode:
        running statistics used, no Dropout, no extra outputs."""
        model = _lively_bn(BNNet()).train()
        x, y = torch.randn(2, 3, 6, 7), torch.randn(6, 5)
        f = self.path("bn_eval.onnx")
        onnxc.export(model, (x, y), f)
        self.assertTrue(model.training, "the model's mode is restored")
        model.eval()
        with torch.no_grad():
            ref = model(x, y)
        got = self.outputs(f, {"x": x.numpy(), "y": y.numpy()})
        self.assertEqual(len(got), 3)
        for (name, g), r in zip(got, ref):
            self.assertClose(r, g, name)
        d = DropNet(0.5).train()
        f = self.path("drop_eval.onnx")
        onnxc.export(d, (torch.randn(3, 6),), f, training=False)
        self.assertNotIn("Dropout", [n.op_type for n in onnx.load(f).graph.node])

    def test_training_dropout(self):
        """Dropout in training mode is ONNX Dropout with training_mode true:
        with p = 0 the output is exact; with p = 0.5 each element is 0 or
        scaled by 2, and some of each appear."""
        for p, form in ((0.0, True), (0.5, "train")):
            model = DropNet(p)
            x = torch.randn(64, 6)
            f = self.path("drop%d.onnx" % (p * 10))
            onnxc.export(model, (x,), f, training=form, optimize="O0")
            m = onnx.load(f)
            drops = [n for n in m.graph.node if n.op_type == "Dropout"]
            self.assertEqual(len(drops), 2, "nn.Dropout and F.dropout")
            consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t)
                      for n in m.graph.node if n.op_type == "Constant"}
            for n in drops:
                self.assertEqual(len(n.input), 3)
                self.assertTrue(bool(consts[n.input[2]]), "training_mode is true")
            got = self.outputs(f, {"x": x.numpy()})[0][1]
            with torch.no_grad():
                lin = model.fc(x)
            if p == 0.0:
                self.assertClose(lin + x, got, "p = 0")
                continue
            scaled = (lin * 2 + x).numpy()
            dropped = x.numpy()
            is_scaled = np.abs(got - scaled) <= TOLERANCE
            is_dropped = np.abs(got - dropped) <= TOLERANCE
            self.assertTrue(np.all(is_scaled | is_dropped))
            self.assertTrue(is_scaled.any() and is_dropped.any())

    def test_training_argument(self):
        """training= takes torch.onnx.TrainingMode, a bool or a string;
        anything else is a ConversionError naming the forms."""
        bridge = onnxc._bridge()
        TM = torch.onnx.TrainingMode
        for given, want in ((TM.EVAL, False), (TM.TRAINING, True), (TM.PRESERVE, None),
                            (True, True), (False, False), (None, None), ("eval", False),
                            ("training", True), ("preserve", None)):
            self.assertIs(bridge.training_flag(given), want, given)
        with self.assertRaises(onnxc.ConversionError) as cm:
            onnxc.export(DropNet(0.1), (torch.randn(2, 6),), self.path("x.onnx"),
                         training="sometimes")
        self.assertIn("TrainingMode", str(cm.exception))
        # python3 -m onnxc --training
        src = self.path("drop.py")
        with open(src, "w") as fh:
            fh.write("import torch\nclass Net(torch.nn.Module):\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     "        self.drop = torch.nn.Dropout(0.5)\n"
                     "    def forward(self, x):\n        return self.drop(x) * 3\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        for flag, want in (("train", True), ("eval", False)):
            f = self.path("drop_%s.onnx" % flag)
            p = subprocess.run([sys.executable, "-m", "onnxc", "--module", src + ":Net",
                                "--input-shape", "2,5", "--training", flag, "-o", f],
                               capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            ops = [n.op_type for n in onnx.load(f).graph.node]
            self.assertEqual("Dropout" in ops, want, (flag, ops))


if __name__ == "__main__":
    sys.exit(test_api.main(ContractTest, __doc__))
