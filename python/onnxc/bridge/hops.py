"""Higher-order ops and assertion ops in a torch.export graph.

torch.export keeps some regions of a program as submodules called by a
higher-order op (`torch.ops.higher_order.*`): a `torch.no_grad()` or
`torch.autocast` block (`wrap_with_set_grad_enabled`,
`wrap_with_autocast`), `torch.cond`, `torch._higher_order_ops.while_loop`, `map` and `scan`.
Grad mode and autocast mean nothing to an inference graph whose dtypes are
already in its types: those regions are copied into the graph around them.
`cond` and `while_loop` become the control nodes the printer writes as
`onnx::If` and `onnx::Loop` (the same form onnxc.cond takes on torch 1.13).
`map` and `scan` over a static leading dim are unrolled: the body once a
row, the per-row outputs stacked.

Assertion and metadata ops (`_assert_tensor_metadata`, `_assert_scalar`,
`sym_constrain_range_for_size`, ...) compute nothing: a tensor-metadata
assertion is checked against the traced types here, the others hold for
the example and are dropped.

Every pass over the graph is linear in its nodes (each region is copied
once, by its node).
"""

import contextlib

import torch
import torch.fx

__all__ = ["lower_higher_order_ops", "drop_assertions", "HopError"]


class HopError(Exception):
    """A higher-order op this bridge cannot lower (named, with its node)."""

    def __init__(self, message, node=None):
        super().__init__(message)
        self.node = node

def _hop(name):
    return getattr(torch.ops.higher_order, name, None)


def _aten(name, overload="default"):
    packet = getattr(torch.ops.aten, name, None)
    return getattr(packet, overload, None) if packet is not None else None


def _assert_targets():
    found = set()
    for name, ov in (("_assert_tensor_metadata", "default"), ("_assert_scalar", "default"),
                     ("sym_constrain_range_for_size", "default"),
                     ("sym_constrain_range", "default"), ("_assert_async", "default"),
                     ("_assert_async", "msg"), ("_print", "default")):
        t = _aten(name, ov)
        if t is not None:
            found.add(t)
    return found


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _fresh_attr(gm, base):
    name, i = base, 0
    while hasattr(gm, name):
        i += 1
        name = "%s_%d" % (base, i)
    return name


def _copy_region(gm, sub, operands, before):
    """Copies the graph of submodule `sub` into gm's graph before node
    `before`, its placeholders bound to `operands`.  Returns (the values it
    returns, the nodes it made).  Constants and nested submodules it reads
    are registered on gm under fresh names."""
    graph = gm.graph
    phs = [n for n in sub.graph.nodes if n.op == "placeholder"]
    if len(phs) != len(operands):
        raise HopError("region %s takes %d operands, the call passes %d"
                       % (type(sub).__name__, len(phs), len(operands)))
    env = dict(zip(phs, operands))
    made = []
    result = None
    with graph.inserting_before(before):
        for n in sub.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                result = torch.fx.node.map_arg(n.args[0], lambda a: env[a])
                break
            if n.op == "get_attr":
                name = _fresh_attr(gm, n.target.replace(".", "_"))
                setattr(gm, name, _attr(sub, n.target))
                new = graph.get_attr(name)
                new.meta = dict(n.meta)
            else:
                new = graph.node_copy(n, lambda a: env[a])
            env[n] = new
            made.append(new)
    if not isinstance(result, (tuple, list)):
        result = (result,)
    return list(result), made


def _replace_results(graph, node, values):
    """The getitem users of multi-result `node` read `values` instead."""
    for u in list(node.users):
        if u.op == "call_function" and getattr(u.target, "__name__", "") == "getitem":
            u.replace_all_uses_with(values[u.args[1]])
            graph.erase_node(u)
    if node.users:
        raise HopError("%s: a result is used other than by index" % node.name, node)


def _region_arg(gm, node, index):
    a = node.args[index]
    if not (isinstance(a, torch.fx.Node) and a.op == "get_attr"):
        raise HopError("%s: argument %d is not a submodule" % (node.name, index), node)
    return a, _attr(gm, a.target)


def _inline(gm, node, sub_index, operands):
    getter, sub = _region_arg(gm, node, sub_index)
    _lower_in(sub)   # its own regions first
    values, _ = _copy_region(gm, sub, list(operands), node)
    _replace_results(gm.graph, node, values)
    gm.graph.erase_node(node)
    if not getter.users:
        gm.graph.erase_node(getter)


def _lower_cond(gm, node):
    """cond(pred, true_gm, false_gm, operands) -> a control node of kind
    "if" whose regions are the branches' copies."""
    pred, _, _, operands = node.args[:4]
    t_get, t_sub = _region_arg(gm, node, 1)
    f_get, f_sub = _region_arg(gm, node, 2)
    _lower_in(t_sub)
    _lower_in(f_sub)
    t_out, t_made = _copy_region(gm, t_sub, list(operands), node)
    f_out, f_made = _copy_region(gm, f_sub, list(operands), node)
    node.args = (pred, tuple(t_out), tuple(f_out))
    node.kwargs = {}
    node.meta["onnxc_control"] = {"kind": "if", "regions": [t_made, f_made]}
    for g in (t_get, f_get):
        if not g.users:
            gm.graph.erase_node(g)


def _lower_while(gm, node):
    """while_loop(cond_gm, body_gm, carried, additional) -> a control node
    of kind "loop": no trip count, the condition computed before the loop
    on the initial values and again at the end of each iteration."""
    c_get, c_sub = _region_arg(gm, node, 0)
    b_get, b_sub = _region_arg(gm, node, 1)
    carried, extra = list(node.args[2]), list(node.args[3]) if len(node.args) > 3 else []
    _lower_in(c_sub)
    _lower_in(b_sub)
    graph = gm.graph
    # The first test, on the initial values, outside the loop.
    first, _ = _copy_region(gm, c_sub, carried + extra, node)
    # The body's parameters: placeholders standing for the carried values.
    with graph.inserting_before(node):
        params = []
        for i, v in enumerate(carried):
            p = graph.call_function(_loop_param, (i,))
            p.meta = dict(v.meta) if isinstance(v, torch.fx.Node) else {}
            p.meta.pop("onnxc_control", None)
            params.append(p)
    new, b_made = _copy_region(gm, b_sub, params + extra, node)
    again, c_made = _copy_region(gm, c_sub, list(new) + extra, node)
    count = None
    node.args = (count, first[0], tuple(carried), tuple(params), (again[0],), tuple(new))
    node.kwargs = {}
    node.meta["onnxc_control"] = {"kind": "loop", "iter": False,
                                  "regions": [params + b_made + c_made]}
    for g in (c_get, b_get):
        if not g.users:
            graph.erase_node(g)


def _fake_mode(vals):
    from torch._guards import detect_fake_mode
    mode = detect_fake_mode(vals)
    return mode if mode is not None else contextlib.nullcontext()


def _call(graph, target, args, val, like):
    """A new call node with the traced value `val` and the provenance of
    node `like`."""
    n = graph.call_function(target, args)
    n.meta = {k: like.meta[k] for k in ("stack_trace", "nn_module_stack") if k in like.meta}
    n.meta["val"] = val
    return n


def _unroll(gm, node, body_index, xs, fixed, carry):
    """map_impl and scan over a static leading dim: the body copied once a
    step, on row i of each scanned input (aten::select), the carried values
    threaded through, each per-step output stacked (aten::stack).  Returns
    the final carried values followed by the stacked outputs."""
    graph = gm.graph
    getter, sub = _region_arg(gm, node, body_index)
    _lower_in(sub)
    if not xs:
        raise HopError("%s: nothing to scan over" % node.name, node)
    length = xs[0].meta["val"].shape[0]
    if not isinstance(length, int):
        raise HopError("%s over a dynamic length (%s) is not supported: only a static leading "
                       "dim is unrolled" % (node.target.name(), length), node)
    if length == 0:
        raise HopError("%s over an empty dim is not supported" % node.target.name(), node)
    select, stack = torch.ops.aten.select.int, torch.ops.aten.stack.default
    vals = [x.meta["val"] for x in xs]
    steps = []
    carry = list(carry)
    with _fake_mode(vals):
        for i in range(length):
            with graph.inserting_before(node):
                rows = [_call(graph, select, (x, 0, i), v[i], node) for x, v in zip(xs, vals)]
            outs, _ = _copy_region(gm, sub, carry + rows + list(fixed), node)
            carry, ys = outs[:len(carry)], outs[len(carry):]
            steps.append(ys)
        stacked = []
        with graph.inserting_before(node):
            for k in range(len(steps[0])):
                parts = [step[k] for step in steps]
                stacked.append(_call(graph, stack, (parts, 0),
                                     torch.stack([p.meta["val"] for p in parts]), node))
    _replace_results(graph, node, carry + stacked)
    graph.erase_node(node)
    if not getter.users:
        graph.erase_node(getter)


def _loop_param(i):   # pragma: no cover - a marker target, never called
    raise RuntimeError("loop parameter %d is only a marker" % i)


def _lower_in(gm):
    """Lowers every higher-order op of gm's graph, in order."""
    inline = {}
    for name, sub_index in (("wrap_with_set_grad_enabled", 1), ("wrap_with_autocast", 4)):
        t = _hop(name)
        if t is not None:
            inline[t] = sub_index
    cond, while_loop = _hop("cond"), _hop("while_loop")
    map_impl, scan = _hop("map_impl"), _hop("scan")
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.HigherOrderOperator):
            continue
        if node.target in inline:
            k = inline[node.target]
            _inline(gm, node, k, node.args[k + 1:])
        elif node.target is cond:
            _lower_cond(gm, node)
        elif node.target is while_loop:
            _lower_while(gm, node)
        elif node.target is map_impl:     # map_impl(body, xs, pos_args)
            _unroll(gm, node, 0, list(node.args[1]), list(node.args[2]), [])
        elif node.target is scan:         # scan(combine, init, xs, additional_inputs)
            _unroll(gm, node, 0, list(node.args[2]), list(node.args[3]), list(node.args[1]))
        else:
            raise HopError("higher-order op %s is not supported" % node.target.name(), node)


def lower_higher_order_ops(gm):
    """Inlines grad-mode and autocast regions and lowers cond/while_loop
    in gm (recursively, innermost first)."""
    _lower_in(gm)


def drop_assertions(gm):
    """Removes assertion and metadata ops.  `_assert_tensor_metadata` is
    checked against the traced dtype of its operand first: a mismatch
    means the trace itself is inconsistent, and is an error."""
    targets = _assert_targets()
    meta_check = _aten("_assert_tensor_metadata")
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in targets or node.users:
            continue
        if node.target is meta_check:
            want = node.kwargs.get("dtype")
            val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
            have = getattr(val, "dtype", None)
            if want is not None and have is not None and want != have:
                raise HopError("%s: the traced value is %s, the program asserts %s"
                               % (node.name, have, want), node)
        gm.graph.erase_node(node)
