"""Control flow that survives export: onnxc.cond, onnxc.while_loop and
onnxc.fori_loop.

Outside an export each primitive is plain Python: `cond` calls one branch,
the loops iterate.  While the exporter bridge (utils/fxir_export.py) traces
a model, a primitive records its branches or its body as a region of the
traced graph instead of running the Python control flow on the example's
values; the bridge prints the regions as the subgraphs of an ONNX `If` or
`Loop` (docs/exporter.md).

The bridge turns capture on with `capturing(True)`; this module never
imports the bridge.  The traced FX graph holds, per primitive, one
`call_function` node whose target is an _IfTarget or _LoopTarget and whose
`meta["onnxc_control"]` lists the region nodes; the target, called by an FX
interpreter, gives the values the example computed.
"""

import contextlib

import torch

__all__ = ["cond", "while_loop", "fori_loop"]

_capture = [False]


class ControlFlowError(TypeError):
    """A misuse of cond or a loop (branches or a body whose results do not
    match): the model's error, whichever capture traces it."""


@contextlib.contextmanager
def capturing(on=True):
    """While active, the primitives record If/Loop regions under make_fx."""
    old = _capture[0]
    _capture[0] = on
    try:
        yield
    finally:
        _capture[0] = old


# ---- checks shared by the eager and the traced forms ------------------------

def _as_tuple(what, value):
    """A branch's or body's results as a tuple of tensors (a single tensor
    counts as one)."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    for i, t in enumerate(items):
        if not isinstance(t, torch.Tensor):
            raise ControlFlowError("%s must be tensors; item %d is a %s"
                                   % (what, i, type(t).__name__))
    return items


def _same_structure(what, got, want, want_what):
    """got (what's results) has the count, dtypes and shapes of want
    (want_what: "true_fn's result", "carried value")."""
    if len(got) != len(want):
        raise ControlFlowError("%s returns %d tensor(s), not %d (one per %s)"
                               % (what, len(got), len(want), want_what))
    for i, (a, b) in enumerate(zip(got, want)):
        if a.dtype != b.dtype:
            raise ControlFlowError("%s: result %d is %s, but %s %d is %s"
                                   % (what, i, a.dtype, want_what, i, b.dtype))
        if tuple(a.shape) != tuple(b.shape):
            raise ControlFlowError("%s: result %d has shape %s, but %s %d has %s"
                                   % (what, i, list(a.shape), want_what, i, list(b.shape)))


def _pack(like, items):
    """items in the structure of `like` (a tensor, tuple or list)."""
    if isinstance(like, torch.Tensor):
        return items[0]
    return list(items) if isinstance(like, list) else tuple(items)


def _operands(operands):
    if isinstance(operands, torch.Tensor):
        return (operands,)
    return tuple(operands)


def _scalar(what, t, dtype):
    """t as a 0-d tensor of dtype (traced ops when tracing)."""
    if isinstance(t, torch.Tensor):
        if t.numel() != 1:
            raise ControlFlowError("%s must have one element, not shape %s" % (what, list(t.shape)))
        if t.dtype != dtype:
            t = t.to(dtype)
        return t.reshape(()) if t.dim() else t
    return torch.tensor(t, dtype=dtype)


# ---- tracing ------------------------------------------------------------------

def _proxy_mode():
    """The active make_fx proxy mode when the bridge captures control flow;
    None otherwise (eager, or a region being run for its values)."""
    if not _capture[0]:
        return None
    try:
        from torch.fx.experimental.proxy_tensor import get_torch_dispatch_modes, \
            ProxyTorchDispatchMode
    except ImportError:
        return None
    for m in reversed(get_torch_dispatch_modes()):
        if isinstance(m, ProxyTorchDispatchMode):
            return m if m.enable_tracing else None
    return None


def _no_tracing():
    from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
    return disable_proxy_modes_tracing()


def _fake(t):
    """t is a fake tensor (symbolic tracing): it has a shape, no data."""
    return type(t).__name__ == "FakeTensor"


def _proxy(mode, t, what):
    from torch.fx.experimental.proxy_tensor import get_proxy_slot
    p = get_proxy_slot(t, mode.tracer, None)
    if p is None:
        raise ControlFlowError("%s is a tensor the trace does not know (made outside the traced "
                               "model?)" % what)
    return p.proxy


class _Region:
    """The FX nodes a traced callable added to the graph."""

    def __init__(self, mode):
        self.graph = mode.tracer.graph
        self.nodes = None

    def __enter__(self):
        self.before = set(self.graph.nodes)
        return self

    def __exit__(self, *exc):
        self.nodes = [n for n in self.graph.nodes if n not in self.before]
        return False


def _private(mode, t):
    """A copy of t's data that stands for the same traced value: a region run
    for tracing may then write into it without changing the example's data
    that the other region and the rest of the model read."""
    from torch.fx.experimental.proxy_tensor import track_tensor_tree
    proxy = _proxy(mode, t, "an operand")
    with _no_tracing():
        c = t.detach().clone()
    track_tensor_tree(c, proxy, constant=None, tracer=mode.tracer)
    return c


def _results(mode, node, values):
    """Fresh tensors holding `values`' data, traced as node's results."""
    from torch.fx.experimental.proxy_tensor import track_tensor_tree
    import operator
    with _no_tracing():
        fresh = [v.detach().clone() for v in values]
    proxies = []
    for i in range(len(fresh)):
        proxies.append(mode.tracer.create_proxy("call_function", operator.getitem,
                                                (node, i), {}))
    track_tensor_tree(fresh, proxies, constant=None, tracer=mode.tracer)
    return fresh


class _IfTarget:
    """FX call target of a captured cond: (pred, then results, else results)
    -> the results of the branch pred chooses."""
    _onnxc_control = "if"
    __name__ = "onnxc_if"
    __module__ = "onnxc.control"

    def __call__(self, pred, then_out, else_out):
        return tuple(then_out if bool(pred) else else_out)


class _LoopTarget:
    """FX call target of a captured loop: (trip count, first condition,
    initial values, body parameters, body results) -> the final values, as
    the example computed them."""
    _onnxc_control = "loop"
    __name__ = "onnxc_loop"
    __module__ = "onnxc.control"

    def __init__(self, final):
        self.final = final

    def __call__(self, *args):
        return tuple(self.final)


class _LoopParam:
    """FX call target of a loop body's parameter: its value on the first
    iteration (FX interpreters see one iteration of the body)."""
    _onnxc_control = "param"
    __name__ = "onnxc_loop_param"
    __module__ = "onnxc.control"

    def __call__(self, first=None):
        return torch.zeros((), dtype=torch.int64) if first is None else first


_LOOP_PARAM = _LoopParam()


def _trace_cond(mode, pred, true_fn, false_fn, ops):
    pred = _scalar("cond's predicate", pred, torch.bool)
    regions, outs = [], []
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        with _Region(mode) as r:
            out = fn(*[_private(mode, t) for t in ops])
        regions.append(r)
        outs.append((out, _as_tuple("cond: " + what, out)))
    _same_structure("cond: false_fn", outs[1][1], outs[0][1], "true_fn's result")
    if not outs[0][1]:
        raise ControlFlowError("cond: the branches return no tensor")
    with _no_tracing():     # fake tensors (named dynamic dims) have no value: either will do
        chosen = outs[0][1] if _fake(pred) or bool(pred) else outs[1][1]
    args = (_proxy(mode, pred, "cond's predicate"),
            tuple(_proxy(mode, t, "a result of true_fn") for t in outs[0][1]),
            tuple(_proxy(mode, t, "a result of false_fn") for t in outs[1][1]))
    node = mode.tracer.create_proxy("call_function", _IfTarget(), args, {})
    node.node.meta["onnxc_control"] = {
        "kind": "if", "regions": [regions[0].nodes, regions[1].nodes]}
    return _pack(outs[0][0], _results(mode, node, chosen))


def _loop_params(mode, values):
    """Body parameters: traced nodes standing for values on each iteration
    (None: the iteration number)."""
    from torch.fx.experimental.proxy_tensor import track_tensor_tree
    params = []
    for v in values:
        first = () if v is None else (_proxy(mode, v, "a loop value"),)
        p = mode.tracer.create_proxy("call_function", _LOOP_PARAM, first, {})
        with _no_tracing():
            c = torch.zeros((), dtype=torch.int64) if v is None else v.detach().clone()
        track_tensor_tree(c, p, constant=None, tracer=mode.tracer)
        params.append(c)
    return params


def _trace_loop(mode, n, cond_fn, body_fn, init, eager):
    """A Loop node: trip count n (a 0-d i64 tensor or None) and/or cond_fn."""
    carried = _as_tuple("the loop's carried values", init)
    if not carried:
        raise ControlFlowError("a loop needs at least one carried tensor")
    first = None
    if cond_fn is not None:
        first = _scalar("cond_fn's result", cond_fn(*carried), torch.bool)
    with _Region(mode) as r:
        it = _loop_params(mode, [None]) if n is not None else []
        params = _loop_params(mode, carried)
        out = body_fn(*it, *params)
        new = _as_tuple("body_fn", out)
        _same_structure("body_fn", new, carried, "carried value")
        again = (_scalar("cond_fn's result", cond_fn(*new), torch.bool)
                 if cond_fn is not None else None)
    with _no_tracing():
        final = carried if _fake(carried[0]) else _as_tuple("body_fn", eager())
    px = lambda t, what: _proxy(mode, t, what)
    args = (px(n, "the trip count") if n is not None else None,
            px(first, "cond_fn's result") if first is not None else None,
            tuple(px(t, "a carried value") for t in carried),
            tuple(px(t, "a loop parameter") for t in it + params),
            (px(again, "cond_fn's result") if again is not None else None,),
            tuple(px(t, "a result of body_fn") for t in new))
    node = mode.tracer.create_proxy("call_function", _LoopTarget(final), args, {})
    node.node.meta["onnxc_control"] = {"kind": "loop", "regions": [r.nodes],
                                       "iter": n is not None}
    return _pack(init, _results(mode, node, final))


# ---- the primitives -------------------------------------------------------------

def cond(pred, true_fn, false_fn, operands=()):
    """`true_fn(*operands)` if pred else `false_fn(*operands)`.

    pred is a bool (or a one-element tensor); the branches return a tensor or
    a tuple/list of tensors, the same number, dtypes and shapes from both.
    Under export (onnxc.export, utils/fxir_export.py) a tensor pred becomes
    an ONNX If whose branches are both traced; a Python bool picks its
    branch while tracing.  The branches may read other tensors of the model
    (weights, earlier values); they should not write into tensors they did
    not create."""
    ops = _operands(operands)
    if isinstance(pred, torch.Tensor) and _torch_exporting():
        return _export_cond(pred, true_fn, false_fn, ops)
    mode = _proxy_mode() if isinstance(pred, torch.Tensor) else None
    if mode is not None:
        return _trace_cond(mode, pred, true_fn, false_fn, ops)
    if isinstance(pred, torch.Tensor) and pred.numel() != 1:
        raise ControlFlowError("cond's predicate must have one element, not shape %s"
                               % list(pred.shape))
    return (true_fn if bool(pred) else false_fn)(*ops)


def while_loop(cond_fn, body_fn, carried):
    """`while cond_fn(*carried): carried = body_fn(*carried)`; returns carried.

    carried is a tensor or a tuple/list of tensors; body_fn returns the same
    number, with the same dtypes and shapes; cond_fn returns a one-element
    tensor (or a bool).  Under export this is an ONNX Loop with no trip count
    whose body runs body_fn, then cond_fn on its results."""
    mode = _proxy_mode()

    def eager():
        c = _as_tuple("the loop's carried values", carried)
        while bool(cond_fn(*c)):
            new = _as_tuple("body_fn", body_fn(*c))
            _same_structure("body_fn", new, c, "carried value")
            c = new
        return c

    if _torch_exporting():
        return _pack(carried, _export_while(cond_fn, body_fn,
                                            _as_tuple("the loop's carried values", carried)))
    if mode is not None:
        return _trace_loop(mode, None, cond_fn, body_fn, carried, eager)
    return _pack(carried, eager())


def fori_loop(n, body_fn, carried):
    """`for i in range(n): carried = body_fn(i, *carried)`; returns carried.

    n is an int or a one-element integer tensor; i is a 0-d int64 tensor;
    carried and body_fn's results are as for while_loop.  Under export this
    is an ONNX Loop whose trip count is n (a tensor n keeps the count
    dynamic)."""
    mode = _proxy_mode()
    if isinstance(n, torch.Tensor) and (n.numel() != 1 or n.dtype.is_floating_point
                                        or n.dtype == torch.bool):
        raise ControlFlowError("fori_loop's trip count must be an int or a one-element integer "
                               "tensor, not %s %s" % (n.dtype, list(n.shape)))

    def eager():
        c = _as_tuple("the loop's carried values", carried)
        with _no_tracing() if mode is not None else contextlib.nullcontext():
            count = int(n)
        for i in range(count):
            new = _as_tuple("body_fn", body_fn(torch.tensor(i, dtype=torch.int64), *c))
            _same_structure("body_fn", new, c, "carried value")
            c = new
        return c

    if _torch_exporting():
        return _pack(carried, _export_fori(n, body_fn,
                                           _as_tuple("the loop's carried values", carried)))
    if mode is not None:
        nt = _scalar("fori_loop's trip count", n, torch.int64) \
            if isinstance(n, torch.Tensor) else None
        if nt is None:
            nt = _constant(mode, int(n))
        return _trace_loop(mode, nt, None, body_fn, carried, eager)
    return _pack(carried, eager())


def _constant(mode, value):
    """A 0-d int64 tensor the trace knows (a lifted constant)."""
    return torch.tensor(value, dtype=torch.int64)


# ---- under torch.export (torch 2.x): PyTorch's own control-flow ops ---------------
#
# torch.export records torch.cond and torch's while_loop as higher-order ops,
# which the bridge lowers to If and Loop (onnxc.bridge.hops); the checks of
# the results' structure stay ours, so a misuse reads the same on every
# torch.

def _torch_exporting():
    if _capture[0]:
        return False    # make_fx capture: the regions are recorded above
    compiler = getattr(torch, "compiler", None)
    is_exporting = getattr(compiler, "is_exporting", None)
    return bool(is_exporting and is_exporting())


def _checked(fn, what, like, like_what):
    def run(*args):
        out = _as_tuple(what, fn(*args))
        _same_structure(what, out, like, like_what)
        return out
    return run


def _export_cond(pred, true_fn, false_fn, ops):
    pred = _scalar("cond's predicate", pred, torch.bool)

    def branch(fn, what):
        def run(*args):     # no side effects: torch.cond traces it with TorchDynamo
            raw = fn(*args)
            _as_tuple(what, raw)
            return tuple(raw) if isinstance(raw, list) else raw
        return run

    return torch.cond(pred if pred.dim() == 0 else pred.reshape(()), branch(true_fn, "cond: true_fn"),
                      branch(false_fn, "cond: false_fn"), tuple(ops))


def _torch_while_loop():
    from torch._higher_order_ops.while_loop import while_loop as torch_while
    return torch_while


def _export_while(cond_fn, body_fn, carried):
    def test(*c):
        r = cond_fn(*c)
        return _scalar("cond_fn's result", r, torch.bool).reshape(())

    body = _checked(body_fn, "body_fn", carried, "carried value")
    return tuple(_torch_while_loop()(test, lambda *c: tuple(t.clone() for t in body(*c)),
                                     tuple(carried)))


def _export_fori(n, body_fn, carried):
    count = n if isinstance(n, torch.Tensor) else torch.tensor(int(n), dtype=torch.int64)
    count = count.reshape(()).to(torch.int64)
    i0 = torch.zeros((), dtype=torch.int64)
    body = _checked(body_fn, "body_fn", carried, "carried value")

    def step(i, k, *c):
        return (i + 1, k.clone()) + tuple(t.clone() for t in body(i, *c))

    out = _torch_while_loop()(lambda i, k, *c: i < k, step, (i0, count) + tuple(carried))
    return tuple(out[2:])
