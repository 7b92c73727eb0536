"""The make_fx capture: torch 1.13's tracer, and on torch 2.x the fallback
that specializes data-dependent Python to the example (with a warning).
make_fx records neither module scopes nor stack traces, so forward hooks
and a patched Graph.create_node record them while tracing.
"""

import contextlib
import sys

import torch
import torch.fx
from .common import ExportError, _RNN_NS, _torch_version
from .dims import (
    _bind_inputs,
    _check_dynamic,
    _dynamic_for_leaves,
    _flatten,
    _flatten_outputs,
    _is_symbolic,
    _sym_expr)
from .meta import _Provenance
from .writer import _Export, _get_attr


# The whole-layer recurrent calls (nn.LSTM, nn.GRU, nn.RNN) as ops of their
# own: make_fx would otherwise record their per-step decomposition (every
# gate of every time step).  They are written as aten::lstm.input and
# friends, one call a layer.
_RNN_SCHEMAS = {
    "lstm": "lstm(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
            "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)",
    "gru": "gru(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, "
           "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)",
    "rnn_tanh": "rnn_tanh(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, "
                "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)",
    "rnn_relu": "rnn_relu(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, "
                "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)",
}
_RNN_LIBS = []


def _rnn_ops():
    """{torch._VF function: (name, the onnxc_rnn op)}, defined once."""
    if not _RNN_LIBS:
        lib = torch.library.Library(_RNN_NS, "DEF")
        impl = torch.library.Library(_RNN_NS, "IMPL", "CPU")
        for name, schema in _RNN_SCHEMAS.items():
            lib.define(schema)
            impl.impl(name, getattr(torch._VF, name))
        _RNN_LIBS.extend([lib, impl])
    ops = getattr(torch.ops, _RNN_NS)
    return {getattr(torch._VF, n): (n, getattr(ops, n)) for n in _RNN_SCHEMAS}


_TORCH_FUNCTION_MODULES = (torch.nn.RNNBase, torch.nn.MultiheadAttention,
                           torch.nn.TransformerEncoder, torch.nn.TransformerEncoderLayer)


class _WholeRNNLayers(torch.overrides.TorchFunctionMode):
    """While active, nn.LSTM/GRU/RNN calls on padded (not packed) input are
    recorded as one call a layer.  Not for projections (proj_size) or
    dropout between layers in training: those keep the per-step form."""

    def __enter__(self):
        self.ops = _rnn_ops()
        return super().__enter__()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        hit = self.ops.get(func) if not kwargs and len(args) == 9 else None
        if hit and isinstance(args[2], (list, tuple)):
            inp, hx, params, has_biases, layers, dropout, train, bidir, batch_first = args
            d = 2 if bidir else 1
            per = (4 if has_biases else 2) * d
            if len(params) == per * layers and not (train and dropout > 0 and layers > 1):
                return self._layers(hit, args, d, per)
        return func(*args, **(kwargs or {}))

    @staticmethod
    def _layers(hit, args, d, per):
        name, op = hit
        inp, hx, params, has_biases, layers, dropout, train, bidir, batch_first = args
        if layers == 1:
            return op(*args)
        x, hs, cs = inp, [], []
        for k in range(layers):
            part = slice(k * d, (k + 1) * d)
            h = [hx[0][part], hx[1][part]] if name == "lstm" else hx[part]
            r = op(x, h, list(params[k * per:(k + 1) * per]), has_biases, 1, dropout, train,
                   bidir, batch_first)
            x = r[0]
            hs.append(r[1])
            if name == "lstm":
                cs.append(r[2])
        if name == "lstm":
            return x, torch.cat(hs, 0), torch.cat(cs, 0)
        return x, torch.cat(hs, 0)


class _Patches:
    """Base of the tracing contexts that replace attributes of torch while
    active: __enter__ calls self.patch(owner, name, new), __exit__ puts
    every original back."""

    def patch(self, owner, name, new):
        self.__dict__.setdefault("_saved", []).append((owner, name, getattr(owner, name)))
        setattr(owner, name, new)

    def __exit__(self, *exc):
        for owner, name, old in reversed(self.__dict__.pop("_saved", [])):
            setattr(owner, name, old)
        return False


class _SpecializeDataDependent:
    """While active (real-mode tracing only), an op whose result is data
    (`tensor.item()`, `int(t)`, `if t.sum() > 0`, `.tolist()`) returns the
    example's value instead of failing the trace: the graph is specialized to
    it, as torch.jit.trace does, and a warning names the user's source line."""

    def __init__(self, prov):
        self.prov = prov
        self.seen = set()

    def __enter__(self):
        import torch.fx.experimental.proxy_tensor as pt
        self.pt = pt
        self.orig = pt.proxy_call
        tag = getattr(torch.Tag, "data_dependent_output", None)
        me = self

        def proxy_call(mode, func, *rest):   # torch 2.x passes pre_dispatch before args
            if tag is not None and tag in func.tags:
                return me._specialize(func, rest[-2], rest[-1])
            return me.orig(mode, func, *rest)

        pt.proxy_call = proxy_call
        return self

    def __exit__(self, *exc):
        self.pt.proxy_call = self.orig
        return False

    def _specialize(self, func, args, kwargs):
        value = func(*args, **kwargs)
        frames = self.prov._user_frames()
        where = "%s:%d" % (frames[-1][0], frames[-1][1]) if frames else "(unknown line)"
        if where not in self.seen:
            self.seen.add(where)
            print("fxir_export: warning: %s: a tensor's value is read in Python (%s); the graph "
                  "is specialized to the example's value %r and is valid only for inputs that give "
                  "the same value; to keep a branch or a loop on a tensor in the graph, write it with "
                  "onnxc.cond, onnxc.while_loop or onnxc.fori_loop (docs/exporter.md)"
                  % (where, func.overloadpacket.__name__, value), file=sys.stderr)
        return value


class _TracingBatchedNms(_Patches):
    """While active (real-mode tracing), torchvision's batched_nms takes the
    path it takes under torch.jit.trace: one NMS over the boxes offset by
    class, so that boxes of two classes never overlap.  Its other path,
    taken on the CPU past 4000 box coordinates, runs one NMS a class of
    `torch.unique(idxs)`: a Python loop whose trip count and class ids the
    trace would bake in from the example, and whose results ONNX Runtime's
    run would not meet when its rounding keeps another set of classes.
    Both paths keep the same boxes."""

    def __enter__(self):
        boxes = sys.modules.get("torchvision.ops.boxes")
        trick = getattr(boxes, "_batched_nms_coordinate_trick", None)
        if trick is not None and hasattr(boxes, "_batched_nms_vanilla"):
            self.patch(boxes, "_batched_nms_vanilla", trick)
        return self


class _MultiResultMeta(_Patches):
    """While active (real-mode tracing), a call with several results (a
    tuple, or a Tensor[]) gets their metadata as it is traced: make_fx
    records it on the getitem nodes only, and the printer wants each
    result's type and the length of a Tensor[] on the call.  The metadata
    is what torch.fx's ShapeProp would record running the graph again
    (which cost the bridge as much as printing it): a tuple or list of
    TensorMetadata, other values as they are, only when a tensor is among
    them."""

    def __enter__(self):
        import torch.fx.experimental.proxy_tensor as pt
        from torch.fx.passes.shape_prop import _extract_tensor_metadata
        orig, getitem = pt.proxy_call, _operator_getitem()

        def meta(v):
            if isinstance(v, torch.Tensor):
                return _extract_tensor_metadata(v)
            if isinstance(v, (tuple, list)):
                return type(v)(meta(x) for x in v) if type(v) in (tuple, list) else v
            return v

        def tensors(v):
            return isinstance(v, torch.Tensor) or (
                isinstance(v, (tuple, list)) and any(tensors(x) for x in v))

        def proxy_call(mode, func, *rest):   # torch 2.x passes pre_dispatch before args
            out = orig(mode, func, *rest)
            if type(out) in (tuple, list) and tensors(out):
                for t in out:
                    slot = pt.get_proxy_slot(t, mode.tracer, None) \
                        if isinstance(t, torch.Tensor) else None
                    node = getattr(getattr(slot, "proxy", None), "node", None)
                    if (node is not None and node.target is getitem and node.args
                            and isinstance(node.args[0], torch.fx.Node)
                            and node.args[0].target is func):
                        node.args[0].meta["tensor_meta"] = meta(out)
                        break
            return out

        self.patch(pt, "proxy_call", proxy_call)
        return self


def _operator_getitem():
    import operator
    return operator.getitem


# ---------------------------------------------------------------------------
# tracer: torch 1.13 (make_fx)

def _trace_make_fx(model, args, kwargs, dynamic_shapes, keep_inplace):
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        from torch.func import functional_call
    except ImportError:
        from torch.nn.utils.stateless import functional_call

    ex = _Export()
    named = _bind_inputs(model, args, kwargs)
    leaves = []
    rebuilders = [(n, how, _flatten(n, v, leaves)) for n, v, how in named]
    dyn = _dynamic_for_leaves(dynamic_shapes, named, leaves)

    params = list(model.named_parameters())
    buffers = list(model.named_buffers())
    # Snapshot the buffers before tracing: real-mode tracing runs the model,
    # and in-place ops on buffers would change them.  Parameters are not
    # copied (a model's weights may take most of the memory): the trace
    # reads them through detached views, and an in-place op on a parameter
    # that requires grad is an error in PyTorch itself.
    state = [(k, v.detach()) for k, v in params] + [(k, v.detach().clone()) for k, v in buffers]
    for k, v in state:
        ex.weights[k] = v
    nweights = len(state)
    keys = [k for k, _ in state]
    requires_grad = [True] * len(params) + [False] * len(buffers)
    out_count = []

    def call_model(*flat):
        pb = dict(zip(keys, flat[:nweights]))
        it = iter(flat[nweights:])
        pos, kw = [], {}
        for n, how, rebuild in rebuilders:
            v = rebuild(it)
            if how == "pos":
                pos.append(v)
            else:
                kw[n] = v
        out = functional_call(model, pb, tuple(pos), kw)
        flat_out = []
        _flatten_outputs(out, flat_out)
        out_count.append(len(flat_out))
        return tuple(flat_out)

    fn = call_model
    if not keep_inplace:
        from functorch.experimental import functionalize
        fn = functionalize(call_model)

    def example_weights():
        # Parameters keep requires_grad so that autograd-dependent fast
        # paths (fused transformer kernels) are not taken, as torch.export.
        # Not with symbolic dims: torch 1.13's autograd kernels read
        # concrete sizes (aten::cat's does), so they would fail.
        # Parameters as fresh leaves over the same storage (no copy),
        # buffers as copies, so the trace's in-place ops leave the snapshot.
        return [v.detach().requires_grad_(mode != "symbolic") if rg else v.clone()
                for (k, v), rg in zip(state, requires_grad)]

    def example_inputs():
        return [t.detach().clone() for _, t in leaves]

    mode = "symbolic" if dyn else "real"
    prov = _Provenance(model, call_model.__code__)
    inputs = example_inputs()
    named_dims = _NamedDimsOnly({id(t): dyn[li] for li, t in enumerate(inputs) if li in dyn},
                                {id(t): leaves[li][0] for li, t in enumerate(inputs)})
    # Symbolic tracing runs on fake tensors, which the whole-layer ops have
    # no kernel for: recurrent layers keep their per-step form there.
    control = sys.modules.get("onnxc.control")
    # The whole-layer mode sees every torch call (a Python round trip each):
    # it is entered only when the model has a recurrent layer, or a module
    # whose fused fast path it keeps off (they take their fused kernels when
    # no torch function mode is active: _transformer_encoder_layer_fwd).
    rnn = mode != "symbolic" and any(isinstance(m, _TORCH_FUNCTION_MODULES) for m in model.modules())
    # The fast paths patch torch 1.13's pytree and FX internals; torch 2.x
    # has other ones (and a C++ pytree).
    fast = _torch_version() < (2, 0)
    nul = contextlib.nullcontext
    trace_args = [*example_weights(), *inputs]
    if mode == "symbolic" and not fast:
        # torch 2.x: fake tensors whose named dims alone are symbols (the
        # 1.13 patch below does not apply to its ShapeEnv).
        trace_args = _fake_named_dims(trace_args, nweights, dyn)
    with prov, _LinearNames(), _NativeDropout(), _FastPytree() if fast else nul(), \
            _NoRecompile() if fast else nul(), _FastCreateArg() if fast else nul(), \
            (control.capturing() if control else contextlib.nullcontext()), \
            ((named_dims if fast else nul()) if mode == "symbolic"
             else _SpecializeDataDependent(prov)), \
            (contextlib.nullcontext() if mode == "symbolic" else _MultiResultMeta()), \
            (contextlib.nullcontext() if mode == "symbolic" else _TracingBatchedNms()), \
            (_WholeRNNLayers() if rnn else contextlib.nullcontext()):
        gm = make_fx(fn, tracing_mode=mode)(*trace_args)

    # Dead detach nodes are autograd's saved-tensor bookkeeping, not part
    # of the computation.
    for node in reversed(list(gm.graph.nodes)):
        if (node.op == "call_function" and node.target is torch.ops.aten.detach.default
                and not node.users):
            gm.graph.erase_node(node)

    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    _reuse_weight_placeholders(gm, model, dict(zip(keys, phs)))
    for i, node in enumerate(phs):
        if i < len(params):
            ex.placeholders[node] = ("param", keys[i])
        elif i < nweights:
            ex.placeholders[node] = ("buffer", keys[i])
        else:
            ex.placeholders[node] = ("input", leaves[i - nweights][0])

    if mode == "symbolic":
        # make_fx gives every dim of every placeholder a symbol; all but the
        # ones the user named are static and print as their sizes.
        concrete = [v for _, v in state] + [t for _, t in leaves]
        for i, node in enumerate(phs):
            val = node.meta.get("val")
            if val is None:
                continue
            for d, sd in enumerate(val.shape):
                expr = _sym_expr(sd)
                if expr is None or not getattr(expr, "is_Symbol", False):
                    continue
                name = dyn.get(i - nweights, {}).get(d) if i >= nweights else None
                ex.dims.names[str(expr)] = name if name is not None else int(concrete[i].shape[d])
        _check_dynamic(ex, phs, nweights, dyn, leaves)

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    outs = out_node.args[0]
    ex.outputs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    ex.gm = gm
    return ex


class _FastPytree(_Patches):
    """While active, torch.utils._pytree's flatten and map functions take a
    fast path for the containers make_fx meets on every op (tuple, list,
    dict, leaves), with the same results.

    make_fx (torch 1.13) flattens each op's arguments five to seven times
    with pytree, which asks for every element whether its type is a
    namedtuple and builds a spec object per leaf: a third of the trace.
    Here the kind of a type is looked up once, leaves share one spec (specs
    are never mutated), and the map and predicate functions walk the
    containers without building specs; any other container (a namedtuple,
    an OrderedDict, FX's immutable ones) goes to the original function."""

    _NAMES = ("tree_flatten", "tree_map", "tree_map_only", "tree_all_only", "tree_any_only")

    def __enter__(self):
        import torch.utils._pytree as pytree
        orig = {n: getattr(pytree, n) for n in self._NAMES}
        nodes = pytree.SUPPORTED_NODES
        leaf_spec = pytree.LeafSpec()
        TreeSpec = pytree.TreeSpec
        leaf_types = {}   # type -> True when a pytree leaf

        def is_leaf(x):
            t = type(x)
            r = leaf_types.get(t)
            if r is None:
                r = leaf_types[t] = pytree._is_leaf(x)
            return r

        def flatten(tree):
            t = type(tree)
            if t is tuple or t is list:
                leaves, specs = [], []
                for c in tree:
                    f, sp = flatten(c)
                    leaves += f
                    specs.append(sp)
                return leaves, TreeSpec(t, None, specs)
            if t is not dict and is_leaf(tree):
                return [tree], leaf_spec
            return orig["tree_flatten"](tree)

        def tmap(fn, tree):
            t = type(tree)
            if t is tuple:
                return tuple([tmap(fn, c) for c in tree])
            if t is list:
                return [tmap(fn, c) for c in tree]
            if t is dict:
                return {k: tmap(fn, v) for k, v in tree.items()}
            if is_leaf(tree):
                return fn(tree)
            return orig["tree_map"](fn, tree)

        def leaves(tree, out):
            t = type(tree)
            if t is tuple or t is list:
                for c in tree:
                    if type(c) in plain:
                        out.append(c)
                    else:
                        leaves(c, out)
            elif t is dict:
                for c in tree.values():
                    leaves(c, out)
            elif is_leaf(tree):
                out.append(tree)
            else:
                out += orig["tree_flatten"](tree)[0]
            return out

        plain = (int, float, bool, str, type(None))   # leaves, never mapped below

        def map_only(ty, fn, tree):
            t = type(tree)
            if t is tuple:
                return tuple([c if type(c) in plain and not isinstance(c, ty)
                              else map_only(ty, fn, c) for c in tree])
            if t is list:
                return [c if type(c) in plain and not isinstance(c, ty)
                        else map_only(ty, fn, c) for c in tree]
            if t is dict:
                return {k: map_only(ty, fn, v) for k, v in tree.items()}
            if is_leaf(tree):
                return fn(tree) if isinstance(tree, ty) else tree
            return orig["tree_map_only"](ty, fn, tree)

        def all_only(ty, pred, tree):
            return all(pred(x) for x in leaves(tree, []) if isinstance(x, ty))

        def any_only(ty, pred, tree):
            return any(pred(x) for x in leaves(tree, []) if isinstance(x, ty))

        assert tuple in nodes and list in nodes and dict in nodes
        for name, f in zip(self._NAMES, (flatten, tmap, map_only, all_only, any_only)):
            self.patch(pytree, name, f)
        return self


class _FastCreateArg(_Patches):
    """While active, make_fx's tracer turns the plain arguments of a call
    (proxies, ints, floats, bools, strings, None, and tuples, lists and
    string-keyed dicts of them) into node arguments directly, as torch.fx would after its checks
    for parameters, tensors, modules and namedtuples (a parameter check is
    a Python metaclass call per element); anything else goes to torch.fx."""

    def __enter__(self):
        from torch.fx.experimental.proxy_tensor import PythonKeyTracer
        orig, Proxy = PythonKeyTracer.create_arg, torch.fx.Proxy
        plain = (int, float, bool, str, type(None))

        def create_arg(tracer, a):
            t = type(a)
            if t is Proxy:
                return a.node
            if t in plain:
                return a
            if t is tuple or t is list:
                return t(create_arg(tracer, e) for e in a)
            if t is dict and all(type(k) is str for k in a):
                return {k: create_arg(tracer, v) for k, v in a.items()}
            return orig(tracer, a)

        self.patch(PythonKeyTracer, "create_arg", create_arg)
        return self


class _NoRecompile(_Patches):
    """While active, a GraphModule built does not generate and compile its
    Python code (make_fx builds one, and the bridge only reads its graph):
    the code is made on the module's first call instead."""

    def __enter__(self):
        from torch.fx.graph_module import GraphModule
        orig = GraphModule.recompile

        def recompile(gm):
            def forward(self, *args, **kwargs):
                orig(self)   # installs the real forward on the class
                return type(self).forward(self, *args, **kwargs)
            type(gm).forward = forward
            return None

        self.patch(GraphModule, "recompile", recompile)
        return self


class _NativeDropout:
    """While active, training-mode F.dropout calls aten::native_dropout, so
    that the graph holds one dropout op (torch 1.13 spells it on the CPU as
    bernoulli_ on an empty tensor, div_ and mul, which reads as random
    numbers, not as dropout)."""

    def __enter__(self):
        import torch.nn.functional as F
        self.F, self.orig = F, F.dropout
        orig = self.orig

        def dropout(input, p=0.5, training=True, inplace=False):
            if not training or not isinstance(input, torch.Tensor):
                return orig(input, p, training, inplace)
            out = torch.ops.aten.native_dropout.default(input, float(p), True)[0]
            return input.copy_(out) if inplace else out

        F.dropout = dropout
        return self

    def __exit__(self, *exc):
        self.F.dropout = self.orig
        return False


class _LinearNames:
    """While active, FX names nodes in linear time, giving the same names.

    torch.fx's _Namespace.create_name (1.13) finds a free name by trying
    base_1, base_2, ... in turn, so the k-th node named after an op
    (`linear`, `add`) costs k tries: tracing a deep model is quadratic in
    its depth (the largest own-time function of the bridge at 32 blocks).
    Names are only ever added to a namespace, so when a search for `base`
    started at or below the memo next[base] and ended at n, every
    base_1..base_n is taken: the next search starts at n + 1.  A candidate
    the memo cannot speed up goes to the original unchanged."""

    def __enter__(self):
        ns = getattr(torch.fx.graph, "_Namespace", None)
        self.ns, self.orig = ns, getattr(ns, "create_name", None)
        if self.orig is None:
            return self
        orig = self.orig

        def create_name(space, candidate, obj):
            suffix = getattr(space, "_name_suffix_regex", None)
            illegal = getattr(space, "_illegal_char_regex", None)
            if (suffix is None or illegal is None or not candidate or not isinstance(space.__dict__.get("_used_names"), dict)
                    or (obj is not None and obj in space._obj_to_name)):
                return orig(space, candidate, obj)
            cand = illegal.sub("_", candidate)
            if cand[0].isdigit():
                cand = "_" + cand
            m = suffix.match(cand)
            base, num = (cand, None) if m is None else (m.group(1), int(m.group(2)))
            memo = space.__dict__.setdefault("_fxir_next", {})
            nxt = memo.get(base, 1)
            start = 0 if num is None else num
            if num is None and cand not in space._used_names:
                return orig(space, candidate, obj)      # may well be free: the original decides
            if 1 <= start < nxt or (num is None and nxt > 1):
                candidate, start = "%s_%d" % (base, nxt), nxt
            name = orig(space, candidate, obj)
            r = suffix.match(name)
            if start <= nxt and r is not None and r.group(1) == base and int(r.group(2)) >= nxt:
                memo[base] = int(r.group(2)) + 1
            return name

        ns.create_name = create_name
        return self

    def __exit__(self, *exc):
        if self.orig is not None:
            self.ns.create_name = self.orig
        return False


def _fake_named_dims(args, nweights, dyn):
    """torch 2.x: the trace's arguments as fake tensors of one ShapeEnv in
    which only the dims the user named are symbols (one per name: dims of
    one name are made equal); every other dim, and every weight, is static,
    so no weight dim is taken for a batch of the same size.  make_fx finds
    the fake mode on its arguments and traces with it."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import (DimDynamic, ShapeEnv,
                                                       StatelessSymbolicContext)
    mode = FakeTensorMode(shape_env=ShapeEnv(), allow_non_fake_inputs=True)
    out, by_name = [], {}
    for i, t in enumerate(args):
        named = dyn.get(i - nweights, {}) if i >= nweights else {}
        if not isinstance(t, torch.Tensor):
            out.append(t)
            continue
        sizes = [DimDynamic.DYNAMIC if d in named else DimDynamic.STATIC for d in range(t.dim())]
        ctx = StatelessSymbolicContext(dynamic_sizes=sizes)
        f = mode.from_tensor(t, symbolic_context=ctx)
        for d, name in named.items():
            first = by_name.setdefault(name, f.shape[d])
            if first is not f.shape[d]:
                torch._check(first == f.shape[d])
        out.append(f)
    return out


class _NamedDimsOnly:
    """While active, make_fx's symbolic mode (torch 1.13) gives a symbol only
    to the dims the user named, one symbol per name; every other dim of the
    inputs, and every dim of the weights, stays a plain int.

    torch 1.13 makes every dim of every traced tensor symbolic and merges dims
    of equal example size into one symbol ("duck shaping").  Static dims then
    reach user code as SymInts (`C ** -0.5` with C = x.size(-1) fails: SymInt
    has no power with a float), and a weight dim that happens to equal a named
    dim's example size would be taken for it.  Strides of the (contiguous)
    inputs are products of their sizes, so they stay consistent."""

    def __init__(self, dims_by_id, names_by_id):
        self.dims_by_id = dims_by_id     # id(input tensor) -> {dim: name}
        self.names_by_id = names_by_id   # id(input tensor) -> input name
        self.current = []                # [(tensor, sizes so far)]
        self.symbols = {}                # dim name -> (SymIntNode, example size, where)

    def __enter__(self):
        from torch._subclasses.meta_utils import MetaConverter
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        self.MetaConverter, self.ShapeEnv = MetaConverter, ShapeEnv
        self.orig_meta_tensor = MetaConverter.meta_tensor
        self.orig_create_symint = ShapeEnv.create_symint
        me = self

        def meta_tensor(conv, t, shape_env=None):
            me.current.append((t, []))
            try:
                return me.orig_meta_tensor(conv, t, shape_env=shape_env)
            finally:
                me.current.pop()

        def create_symint(env, name, val):
            return me.create_symint(env, name, val)

        MetaConverter.meta_tensor = meta_tensor
        ShapeEnv.create_symint = create_symint
        self.orig_getitem = torch.Tensor.__getitem__
        torch.Tensor.__getitem__ = _sym_getitem(self.orig_getitem)
        # Ops whose C++ meta kernels read concrete sizes get Python ones.
        from torch._meta_registrations import meta_table
        self.meta_table = meta_table
        self.added_metas = [op for op in _SYMBOLIC_METAS if op not in meta_table]
        for op in self.added_metas:
            meta_table[op] = _SYMBOLIC_METAS[op]
        return self

    def __exit__(self, *exc):
        self.MetaConverter.meta_tensor = self.orig_meta_tensor
        self.ShapeEnv.create_symint = self.orig_create_symint
        torch.Tensor.__getitem__ = self.orig_getitem
        for op in self.added_metas:
            self.meta_table.pop(op, None)
        return False

    def create_symint(self, env, name, val):
        if not self.current:
            return self.orig_create_symint(env, name, val)
        t, sizes = self.current[-1]
        kind, _, index = name.partition(".")[2].partition("(")
        index = index.rstrip(")")
        if kind == "size":
            d = int(index)
            dim_name = self.dims_by_id.get(id(t), {}).get(d)
            v = val
            if dim_name is not None and val >= 2:
                v = self.symbol(env, dim_name, val, (self.names_by_id.get(id(t)), d))
            sizes.append(v)
            return v
        if kind == "stride" and any(not isinstance(x, int) for x in sizes) \
                and t.is_contiguous():
            d = int(index)
            v = 1
            for x in sizes[d + 1:]:
                v = x * v
            return v
        return val

    def symbol(self, env, dim_name, val, where):
        import sympy
        from torch.fx.experimental.symbolic_shapes import PySymInt
        have = self.symbols.get(dim_name)
        if have is not None:
            if have[1] != val:
                raise ExportError(
                    "dynamic dim %r is dim %d of input %r (example size %d) and dim %d of "
                    "input %r (example size %d): dims with one name must have one size"
                    % (dim_name, have[2][1], have[2][0], have[1], where[1], where[0], val))
            return have[0]
        sym = sympy.Symbol("s%d" % len(self.symbols), positive=True, integer=True)
        node = torch.SymIntNode.new_symint(PySymInt(sym, env))
        env.var_to_val[sym] = sympy.Integer(val)
        self.symbols[dim_name] = (node, val, where)
        return node


def _cat_meta(tensors, dim=0):
    # torch's legacy rule: 1-D empty tensors take no part in the shape.
    parts = [t for t in tensors if not (t.dim() == 1 and isinstance(t.shape[0], int)
                                        and t.shape[0] == 0)] or list(tensors)
    ref = parts[0]
    dim = dim % ref.dim() if ref.dim() else 0
    size = list(ref.shape)
    total = 0
    for t in parts:
        total = t.shape[dim] + total
    size[dim] = total
    dtype = ref.dtype
    for t in parts[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return ref.new_empty(size, dtype=dtype)


def _symbolic_metas():
    aten = torch.ops.aten
    return {aten.cat.default: _cat_meta}


_SYMBOLIC_METAS = _symbolic_metas()


def _sym_getitem(orig):
    """Tensor indexing where slice bounds are SymInts (`mask[:T, :T]` with
    T = x.size(1) a dynamic dim): torch 1.13's indexing wants __index__,
    which SymInts lack, so such an index of slices (and Ellipsis-free) is
    taken as one aten::slice per dim."""
    def getitem(self, index):
        items = index if isinstance(index, tuple) else (index,)
        if not any(isinstance(i, slice) and any(_is_symbolic(b) for b in
                                                (i.start, i.stop, i.step))
                   for i in items):
            return orig(self, index)
        if not all(isinstance(i, slice) for i in items):
            raise ExportError("indexing with dynamic bounds supports slices only (got %r)"
                              % (index,))
        out = self
        for d, i in enumerate(items):
            if i.start is None and i.stop is None and i.step is None:
                continue
            out = torch.ops.aten.slice.Tensor(out, d, i.start, i.stop,
                                              1 if i.step is None else i.step)
        return out
    return getitem


def _reuse_weight_placeholders(gm, model, ph_by_key):
    """Modules that read their weights through another reference than the
    attribute functional_call swaps (nn.LSTM's _flat_weights) leave them in
    the graph as get_attr constants; point those back at the placeholders."""
    def ident(t):
        return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)
    orig = None
    for node in list(gm.graph.nodes):
        if node.op != "get_attr":
            continue
        if orig is None:
            orig = {}
            for k, t in list(model.named_parameters()) + list(model.named_buffers()):
                orig.setdefault(ident(t), k)
        t = _get_attr(gm, node.target)
        if isinstance(t, torch.Tensor) and ident(t) in orig:
            node.replace_all_uses_with(ph_by_key[orig[ident(t)]])
            gm.graph.erase_node(node)
