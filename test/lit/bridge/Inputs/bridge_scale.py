"""Checks of the bridge (utils/fxir_export.py) at scale.

    bridge_scale.py memory DIR      export a model with 256 MB of parameters;
                                    print the peak RSS above the same process
                                    exporting a 1-parameter model, per weight byte
    bridge_scale.py names DIR       export 8- and 32-block GPTs counting FX's
                                    name probes, with and without the bridge's
                                    linear-time naming; print the growth and
                                    whether the texts are the same
    bridge_scale.py trace DIR       export an 8-block GPT and a transformer
                                    encoder with the trace's fast paths and
                                    without them; print what each path
                                    did (pytree leaf tests, code generation,
                                    torch function mode calls) and whether
                                    the texts are the same
    bridge_scale.py multimeta DIR   trace a module with calls of several
                                    results; print whether the graph was run
                                    again and whether the metadata the trace
                                    recorded on them is what ShapeProp finds
"""
import os
import resource
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "utils"))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

import torch  # noqa: E402

import fxir_export  # noqa: E402
from onnxc.bridge import make_fx as tracer  # noqa: E402  (what the checks below patch)


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory(d):
    torch.manual_seed(0)
    small = torch.nn.Linear(1, 1, bias=False)
    fxir_export.export(small, (torch.ones(1, 1),), os.path.join(d, "s.fxir"))
    base = peak()
    big = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096, bias=False) for _ in range(4)])
    weights = sum(p.numel() * p.element_size() for p in big.parameters())
    fxir_export.export(big, (torch.ones(1, 4096),), os.path.join(d, "b.fxir"))
    print("weights %d MB" % (weights >> 20))
    print("peak above the model %.2f of the weights" % ((peak() - base - weights) / weights))
    print("safetensors size ok:", os.path.getsize(os.path.join(d, "b.safetensors")) > weights)


def names(d):
    import models
    ns = torch.fx.graph._Namespace
    orig_init = ns.__init__
    count = [0]

    class Counting(dict):
        def __contains__(self, k):
            count[0] += 1
            return dict.__contains__(self, k)

    def init(self, *a, **kw):
        orig_init(self, *a, **kw)
        self._used_names = Counting(self._used_names)

    class Plain:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    linear = fxir_export._LinearNames
    probes, texts = {}, {}
    ns.__init__ = init
    try:
        for mode in ("linear", "plain"):
            tracer._LinearNames = linear if mode == "linear" else Plain
            for n in (8, 32):
                models._seed()
                m = models.GPT(n_layers=n, embedding_dim=16, num_heads=2).eval()
                count[0] = 0
                text = fxir_export.export(m, (torch.randint(0, 1024, (1, 8)),), os.path.join(d, "g%d.fxir" % n))
                probes[mode, n] = count[0]
                texts[mode, n] = text
    finally:
        ns.__init__ = orig_init
        tracer._LinearNames = linear
    for mode in ("linear", "plain"):
        print("%s: name probes grow %.1fx from 8 to 32 blocks" % (mode, probes[mode, 32] / probes[mode, 8]))
    print("same text:", all(texts["linear", n] == texts["plain", n] for n in (8, 32)))


class Plain:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def trace(d):
    import models
    import torch.utils._pytree as pytree
    from torch.fx.graph import Graph
    from torch.fx.experimental.proxy_tensor import PythonKeyTracer
    counts = {"leaf": 0, "codegen": 0, "mode": 0, "arg": 0}

    def counting(obj, attr, key):
        orig = getattr(obj, attr)

        def f(*a, **kw):
            counts[key] += 1
            return orig(*a, **kw)
        setattr(obj, attr, f)
        return orig

    saved = [(pytree, "_is_leaf", counting(pytree, "_is_leaf", "leaf")),
             (Graph, "python_code", counting(Graph, "python_code", "codegen")),
             (PythonKeyTracer, "create_arg", counting(PythonKeyTracer, "create_arg", "arg")),
             (tracer._WholeRNNLayers, "__enter__",
              counting(tracer._WholeRNNLayers, "__enter__", "mode"))]
    fast = {"_FastPytree": fxir_export._FastPytree, "_NoRecompile": fxir_export._NoRecompile,
            "_FastCreateArg": fxir_export._FastCreateArg,
            "_TORCH_FUNCTION_MODULES": fxir_export._TORCH_FUNCTION_MODULES}
    slow = {"_FastPytree": Plain, "_NoRecompile": Plain, "_FastCreateArg": Plain,
            "_TORCH_FUNCTION_MODULES": (torch.nn.Module,)}

    def build(which):
        models._seed()
        if which == "gpt":
            return models.GPT(n_layers=8, embedding_dim=16, num_heads=2).eval(), \
                (torch.randint(0, 1024, (1, 8)),)
        m, args, _ = models.transformer_encoder()
        return m, args
    try:
        for which in ("gpt", "encoder"):
            texts, leaf, arg = {}, {}, {}
            for path, names in (("fast", fast), ("plain", slow)):
                for k, v in names.items():
                    setattr(tracer, k, v)
                for k in counts:
                    counts[k] = 0
                m, args = build(which)
                # Functionalized: the encoder's fused kernel would be taken there.
                texts[path] = fxir_export.export(m, args, os.path.join(d, "%s.fxir" % which),
                                                 keep_inplace=False)
                leaf[path], arg[path] = counts["leaf"], counts["arg"]
                print("%s %s: code generated %d, mode entered %d"
                      % (which, path, counts["codegen"], counts["mode"]))
            print("%s: leaf tests under a tenth: %s, argument checks under a tenth: %s, "
                  "same text: %s, fused: %s"
                  % (which, leaf["fast"] * 10 < leaf["plain"], arg["fast"] * 10 < arg["plain"],
                     texts["fast"] == texts["plain"],
                     "_transformer_encoder_layer_fwd" in texts["fast"]))
    finally:
        for k, v in fast.items():
            setattr(tracer, k, v)
        for obj, attr, orig in saved:
            setattr(obj, attr, orig)


class Multi(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(4, 6, batch_first=True)
        self.bn = torch.nn.BatchNorm1d(6)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        a, b = y.split([2, 4], dim=-1)
        v, i = b.max(dim=-1)
        t, ti = torch.topk(a, 1)
        z = self.bn(y.transpose(1, 2))
        return sum(torch.unbind(z, 0)), v, i, t, ti, h + c


def multimeta(d):
    from torch.fx.passes.shape_prop import ShapeProp
    torch.manual_seed(0)
    m = Multi().train()
    x = torch.randn(3, 5, 4)
    runs = [0]
    orig_run = torch.fx.Interpreter.run

    def run(self, *a, **kw):
        runs[0] += 1
        return orig_run(self, *a, **kw)
    torch.fx.Interpreter.run = run
    try:
        ex = fxir_export._trace_make_fx(m, (x,), None, None, True)
    finally:
        torch.fx.Interpreter.run = orig_run
    print("graph runs while tracing: %d" % runs[0])

    def key(v):
        if isinstance(v, (tuple, list)):
            return tuple(key(e) for e in v)
        return (tuple(v.shape), v.dtype) if hasattr(v, "dtype") else v
    multi = {n: key(n.meta["tensor_meta"]) for n in ex.gm.graph.nodes
             if isinstance(n.meta.get("tensor_meta"), (tuple, list))
             and not hasattr(n.meta["tensor_meta"], "_fields")}
    weights = [ex.weights[k] for n, (kind, k) in ex.placeholders.items() if kind != "input"]
    with torch.no_grad():
        ShapeProp(ex.gm).propagate(*[w.clone() for w in weights], x.clone())
    again = {n: key(n.meta["tensor_meta"]) for n in multi}
    print("calls of several results: %s" % sorted({str(n.target) for n in multi}))
    print("same as ShapeProp: %s" % (multi == again))


if __name__ == "__main__":
    {"memory": memory, "names": names, "trace": trace,
     "multimeta": multimeta}[sys.argv[1]](sys.argv[2])
