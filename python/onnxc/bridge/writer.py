"""The FX-to-.fxir writer: the description a capture produces (_Export)
and the printer that writes it as .fxir text.
"""

import re
import linecache
import os
import sys

import torch
import torch.fx
from .common import (
    ExportError,
    _ENUM_NAMES,
    _RNN_NS,
    _float,
    _fx_dtype,
    _quote,
    _tensor_bytes,
    _value_name)
from .dims import _Dims, _dim_ident
from .meta import _short_path, located
from .experts import TRACED as _EXPERTS_TRACED
from . import attrs as _attrs


# ---------------------------------------------------------------------------
# the common description both tracers produce, and the printer

class _Export:
    def __init__(self):
        self.gm = None
        self.module_name = "Model"
        self.placeholders = {}   # FX placeholder node -> (kind, key_or_name)
        self.weights = {}        # key -> tensor (params and buffers)
        self.outputs = []        # FX nodes (or constants) returned
        self.mutations = []      # (target placeholder node, FX node holding new value)
        self.dims = _Dims()
        self.root_class = None
        self.source_root = os.getcwd()
        self.output_names = []   # user's names of the outputs, in order (may be short)
        self.output_dims = {}    # output index -> {dim: name}
        self.non_persistent = set()   # keys of buffers that are not in the state_dict
        self.ranges = {}         # dim name -> (lower, upper) when the tracer knows them


def _node_types(node):
    """The node's result type(s): a list of per-result objects (tensor meta,
    FakeTensor, SymInt) or None when unknown."""
    val = node.meta.get("val", None)
    if val is None:
        val = node.meta.get("tensor_meta", None)
    return val


def _is_multi(val):
    """A list/tuple of results (TensorMetadata is itself a namedtuple)."""
    return isinstance(val, (tuple, list)) and not hasattr(val, "_fields")


def _type_of(v, dims):
    if v is None:
        return "?"
    if isinstance(v, bool) or type(v).__name__ in ("SymBool",):
        return "bool[]"
    if isinstance(v, int) or type(v).__name__ in ("SymInt", "SymIntNode", "PySymInt"):
        return "i64[]"
    if isinstance(v, float) or type(v).__name__ in ("SymFloat", "SymFloatNode", "PySymFloat"):
        return "f64[]"
    shape = getattr(v, "shape", None)
    dtype = getattr(v, "dtype", None)
    if shape is None or dtype is None:
        return "?"
    return "%s[%s]" % (_fx_dtype(dtype), ",".join(dims.dim(d) for d in shape))


def _op_name(target):
    if isinstance(target, torch._ops.OpOverload):
        ns, name = target._schema.name.split("::", 1)
        if ns == _RNN_NS:
            return "aten::%s.input" % name
        ov = target._overloadname
        return "%s::%s" % (ns, name) if ov == "default" else "%s::%s.%s" % (ns, name, ov)
    if isinstance(target, torch._ops.OpOverloadPacket):
        # torch 1.13 records sym_size and friends as packets.
        qual = getattr(target, "_qualified_op_name", "aten::" + target.__name__)
        ns, name = qual.split("::", 1)
        over = {"sym_size": ".int", "sym_stride": ".int"}.get(name, "")
        return "%s::%s%s" % (ns, name, over)
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None)
    if mod in ("_operator", "operator") and name:
        return "_operator::" + name
    if mod == "math" and name:
        return "math::" + name
    if name and mod.startswith("torch"):
        # torch.sym_float, torch._sym_sqrt, ...
        return "torch::" + name.lstrip("_")
    raise ExportError("cannot name FX call target %r" % (target,))


def _num_results(node, val, returns):
    """How many values a call produces: 0, 1 or n (a tuple or Tensor[]).
    returns: _schema_info's count of schema results (None without a
    schema, "list" for one list result)."""
    if _is_multi(val):
        return len(val), True
    if returns is not None and returns != "list":
        return returns, returns > 1
    users_getitem = [u for u in node.users if u.op == "call_function"
                     and u.target.__name__ == "getitem" and getattr(u.target, "__module__", "") in ("_operator", "operator")]
    if returns == "list":
        return 1 + max([u.args[1] for u in users_getitem] or [-1]), True
    if users_getitem:
        return 1 + max(u.args[1] for u in users_getitem), True
    return 1, False


# torch.onnx.ops.symbolic's custom ops: a call of any ONNX op by name.
_SYMBOLIC = ("onnx_symbolic::_symbolic", "onnx_symbolic::_symbolic_multi_out")


def _symbolic_attrs(kw):
    """[(name, value)] of a symbolic call's attributes, decoded from the
    flat lists the custom op's schema carries them in (keys, types "i",
    "f", "s", "is", "fs", "ss", and [start, end) positions into the int,
    float and string lists)."""
    out = []
    pools = {"i": kw.get("attr_ints", ()), "f": kw.get("attr_floats", ()),
             "s": kw.get("attr_strs", ())}
    for key, kind, pos in zip(kw.get("attr_keys", ()), kw.get("attr_types", ()),
                              kw.get("attr_pos", ())):
        start, end = pos
        pool = pools.get(kind[0])
        if pool is None or kind not in ("i", "f", "s", "is", "fs", "ss"):
            raise ExportError("torch.onnx.ops.symbolic: attribute %s of type %r" % (key, kind))
        vals = list(pool[start:end])
        out.append((key, vals[0] if len(kind) == 1 else vals))
    return out


def _schema_info(target):
    """(the .fxir op name, {argument name: literal kind}, [kind of each
    positional argument], the schema's result count or "list") of a call
    target: the same for every node of that target."""
    op = _op_name(target)
    schema = getattr(target, "_schema", None)
    if schema is None:
        return op, {}, [], None
    kinds = {}
    for a in schema.arguments:
        ty = str(a.type)
        kinds[a.name] = ("tensor" if "Tensor" in ty else "float" if "float" in ty
                         else "string" if "str" in ty else "int")
    pos_kinds = [kinds.get(a.name) for a in schema.arguments]
    rets = schema.returns
    ret = len(rets)
    if ret == 1:
        ty = str(rets[0].type)
        if ty.startswith(("List[", "Tensor[]", "Tensor?[]")) or "[]" in ty:
            ret = "list"
    return op, kinds, pos_kinds, ret


class _Printer:
    def __init__(self, ex):
        self.ex = ex
        self.names = {}     # FX node -> printed value name ("%x")
        self.used = set(n for n in ex.output_names if n)
        self.lines = []
        self.frames = {}    # (file, line, function) -> its trace text
        self.traces = {}    # tuple of frames -> trace(...) text
        self.scopes = {}    # tuple of (path, class) -> scope(...) text
        self.targets = {}   # call target -> _schema_info(target)
        # Computed values that are outputs take the user's output names;
        # an output that is an input or is returned twice gets a copy.
        self.wanted = {}    # FX node -> output name
        self.copies = []    # (output index, output name)
        self.typed = {}     # FX node -> its type text with the output's dim names
        self.opsets = {}    # custom domain -> version, of torch.onnx.ops.symbolic nodes
        self.raw = {}       # FX node -> its value name, unquoted
        for i, o in enumerate(ex.outputs):
            want = ex.output_names[i] if i < len(ex.output_names) else None
            if not isinstance(o, torch.fx.Node):
                continue
            if want and (o.op == "placeholder" or o in self.wanted):
                self.copies.append((i, want))
            elif want:
                self.wanted[o] = want
            if i in ex.output_dims and o not in self.typed:
                self.typed[o] = self.output_type(i, o)

    def name_for(self, node):
        want = self.wanted.get(node)
        if want is None:
            want = self.fresh(node.name)
        self.raw[node] = want
        return want

    def type_for(self, node, val):
        t = self.typed.get(node)
        return t if t is not None else _type_of(val, self.ex.dims)

    def output_type(self, i, node):
        """The output's type with the dims named by dynamic_axes."""
        ex = self.ex
        v = _node_types(node)
        shape, dtype = getattr(v, "shape", None), getattr(v, "dtype", None)
        if shape is None or dtype is None:
            return _type_of(v, ex.dims)
        dims = [ex.dims.dim(d) for d in shape]
        for d, name in sorted(ex.output_dims[i].items()):
            label = ex.output_names[i] if i < len(ex.output_names) else "output %d" % i
            if not -len(dims) <= d < len(dims):
                raise ExportError("dynamic_axes: output %r has %d dims, no dim %d"
                                  % (label, len(dims), d))
            if isinstance(shape[d], int):
                print("fxir_export: warning: dynamic_axes names dim %d of output %r %r, but "
                      "the traced graph has it static (%d); name an input dim it depends on"
                      % (d, label, name, shape[d]), file=sys.stderr)
                continue
            dims[d] = _dim_ident(name)
        return "%s[%s]" % (_fx_dtype(dtype), ",".join(dims))

    def fresh(self, want):
        base = want or "v"
        name, i = base, 0
        while name in self.used:
            i += 1
            name = "%s_%d" % (base, i)
        self.used.add(name)
        return name

    def arg(self, a, kind=None):
        if isinstance(a, torch.fx.Node):
            if a not in self.names:
                raise ExportError("node %s used before its definition or not printable" % a.name)
            return self.names[a]
        if isinstance(a, bool):
            return "true" if a else "false"
        if isinstance(a, int):
            return str(a)
        if isinstance(a, float):
            return _float(a)
        if a is None:
            return "none"
        if isinstance(a, str):
            return _quote(a)
        if isinstance(a, torch.dtype):
            return _fx_dtype(a)
        if isinstance(a, torch.device):
            return _quote(str(a))
        if isinstance(a, (torch.layout, torch.memory_format)):
            if a not in _ENUM_NAMES:
                raise ExportError("no .fxir spelling for %s" % a)
            return _ENUM_NAMES[a]
        if isinstance(a, (list, tuple)):
            if not a:
                return "[:%s]" % (kind or "int")
            return "[" + ", ".join(self.arg(x) for x in a) + "]"
        if isinstance(a, complex):
            raise ExportError("complex scalar arguments are not supported")
        raise ExportError("cannot print argument %r of type %s" % (a, type(a).__name__))

    def provenance(self, node):
        ex = self.ex
        out = []
        scope = node.meta.get("fxir_scope")
        if scope is not None:
            key = tuple(scope)
            text = self.scopes.get(key)
            if text is None:
                items = [("", ex.root_class)] + [s for s in scope if s[0] != ""]
                text = "scope(" + ", ".join("%s: %s" % (_quote(p), _quote(c)) for p, c in items) + ")"
                self.scopes[key] = text
            out.append(text)
        frames = node.meta.get("fxir_frames")
        if frames:
            fn, line, _ = frames[-1]
            out.append("loc(%s:%d)" % (_quote(_short_path(fn, ex.source_root)), line))
            key = tuple(frames)
            trace = self.traces.get(key)
            if trace is None:
                trace = "trace(" + _quote("\n".join(self.frame_text(f) for f in frames)) + ")"
                self.traces[key] = trace
            out.append(trace)
        return out

    def frame_text(self, frame):
        """One frame of a trace(...): the File line and the source line."""
        text = self.frames.get(frame)
        if text is None:
            fn, line, func = frame
            text = 'File "%s", line %d, in %s' % (_short_path(fn, self.ex.source_root), line, func)
            src = linecache.getline(fn, line).strip()
            if src:
                text += "\n    " + src
            self.frames[frame] = text
        return text

    def emit_graph(self):
        ex = self.ex
        gm = ex.gm
        graph = gm.graph
        inputs, decls = [], []
        # Placeholders first: graph inputs, then param/buffer/const lines.
        for node in graph.nodes:
            if node.op != "placeholder":
                continue
            kind, key = ex.placeholders[node]
            vname = self.fresh(key)
            self.names[node] = _value_name(vname)
            self.raw[node] = vname
            ty = _type_of(_node_types(node), ex.dims)
            if kind == "input":
                inputs.append("%s: %s" % (_value_name(vname), ty))
            elif kind in ("param", "buffer"):
                decls.append("%s %s: %s = %s" % (kind, _value_name(vname), ty, _quote(key)))
            elif kind == "const":
                decls.append(self.const_decl(_value_name(vname), ex.weights_const[key]))
            else:
                raise ExportError("placeholder kind %s" % kind)
        body = []
        getitems = set()
        self.owner = _region_owners(graph)
        for node in graph.nodes:
            if node.op in ("placeholder", "output") or node in self.owner:
                continue
            if node.op == "get_attr":
                t = _get_attr(gm, node.target)
                if not isinstance(t, torch.Tensor):
                    raise ExportError("get_attr %s is not a tensor" % node.target)
                raw = self.fresh(node.name)
                vname = _value_name(raw)
                self.names[node] = vname
                self.raw[node] = raw
                decls.append(self.const_decl(vname, t))
                continue
            if node.op != "call_function":
                raise ExportError("FX node %s: op %s is not supported" % (node.name, node.op))
            if node in getitems:
                continue
            if _is_getitem(node):
                raise ExportError("getitem %s on a value that is not a multi-result op" % node.name)
            body.extend(self.node_lines(node, getitems))
        for target, new in ex.mutations:
            res = self.fresh("copy_" + target.name)
            ty = _type_of(_node_types(target), ex.dims)
            body.append("%s = aten::copy_(%s, %s) : %s" % (
                _value_name(res), self.names[target], self.arg(new), ty))
        for o in ex.outputs:
            if not isinstance(o, torch.fx.Node):
                raise ExportError("model output %r is a constant, not a computed value" % (o,))
        outs = [self.arg(o) for o in ex.outputs]
        out_types = [self.type_for(o, _node_types(o)) if isinstance(o, torch.fx.Node) else "?"
                     for o in ex.outputs]
        for i, want in self.copies:
            o = ex.outputs[i]
            ty = (self.output_type(i, o) if i in ex.output_dims
                  else _type_of(_node_types(o), ex.dims))
            body.append("%s = aten::clone(%s) : %s" % (_value_name(want), outs[i], ty))
            outs[i] = _value_name(want)
            out_types[i] = ty
        self.returned = outs
        meta = self.graph_meta(outs)
        lines = ["graph @forward(%s) -> (%s)%s {" % (", ".join(inputs), ", ".join(out_types),
                                                    " meta(%s)" % ", ".join(meta) if meta else "")]
        lines += ["  " + d for d in decls]
        lines += ["  " + b for b in body]
        lines.append("  return " + ", ".join(outs) if outs else "  return ()")
        lines.append("}")
        return lines

    def graph_meta(self, outs):
        """The graph's meta(...) entries: the named dims' ranges (`{}` for
        none), the module instances' annotated attributes (bridge/attrs.py),
        and, on the values (`input:NAME:KEY`, `initializer:...`, `output:...`,
        docs/onnx.md), the FX name of each input, weight and output whose
        name differs from it, non-persistent buffers, and the kind of the
        tensors the trace captured (CONSTANT_TENSOR)."""
        ex = self.ex
        q = lambda k, v: "%s: %s" % (_quote(k), _quote(v))
        meta = []
        if getattr(ex, "capture", None):
            meta.append(q("pkg.onnxc.capture", ex.capture))
        if getattr(ex, "experts", None):
            # transformers' expert layers traced through another implementation.
            meta.append(q("pkg.onnxc.experts_implementation", "%s in place of %s"
                          % (_EXPERTS_TRACED, " and ".join(ex.experts))))
        names = []
        for v in ex.dims.names.values():
            if isinstance(v, str) and v not in names:
                names.append(v)
        # `{}` when nothing is dynamic, as torch.export prints a program's.
        text = ", ".join("%s: VR[%s, %s]" % ((n,) + ex.ranges.get(n, ("2", "int_oo")))
                         for n in names)
        meta.append(q("pkg.torch.export.ExportedProgram.range_constraints", "{%s}" % text))
        if getattr(ex, "module_attributes", None):
            meta.append(q(_attrs.TABLE_KEY, ex.module_attributes))
        renamed = []
        for node in ex.gm.graph.nodes:
            kind_key = ex.placeholders.get(node)
            role = "input" if kind_key and kind_key[0] == "input" else "initializer"
            if node.op == "placeholder" and self.raw.get(node, node.name) != node.name:
                renamed.append((role, self.raw[node], node.name))
            if node.op == "get_attr" or (kind_key and kind_key[0] == "const"):
                key = "initializer:%s:pkg.torch.export.graph_signature.InputSpec." % self.raw[node]
                meta += [q(key + "kind", "CONSTANT_TENSOR"), q(key + "persistent", "None")]
            if kind_key and kind_key[0] == "buffer" and kind_key[1] in ex.non_persistent:
                meta.append(q("initializer:%s:pkg.torch.export.graph_signature.InputSpec.persistent"
                              % self.raw[node], "False"))
        for o, printed in zip(ex.outputs, outs):
            raw = self.raw.get(o) if printed == self.names.get(o) else printed[1:].strip('"')
            if isinstance(o, torch.fx.Node) and raw and raw != o.name:
                renamed.append(("output", raw, o.name))
        meta += [q("%s:%s:pkg.torch.onnx.original_node_name" % (r, n), orig)
                 for r, n, orig in renamed]
        return meta

    def node_lines(self, node, getitems):
        try:
            if "onnxc_control" in node.meta:
                return self.control(node, getitems)
            return self.call(node, getitems)
        except ExportError as e:
            raise located(e, node) from None

    def results(self, node, n, getitems):
        """Names and types of a multi-result node's n results (`_` for the
        unused ones), from its getitem users."""
        results, types = ["_"] * n, ["?"] * n
        for u in node.users:
            if _is_getitem(u):
                i = u.args[1]
                getitems.add(u)
                if results[i] == "_":
                    results[i] = _value_name(self.name_for(u))
                    types[i] = self.type_for(u, _node_types(u))
                self.names[u] = results[i]
        return results, types

    def region(self, node, k, params, outs, getitems):
        """Region k of control node `node` as a subgraph: its parameters
        (FX nodes, or (name, type) pairs), its nodes, and `return outs`.
        A returned value the region did not compute is returned through an
        Identity, so each subgraph output is its own value."""
        lines, sig = [], []
        for p in params:
            if isinstance(p, tuple):
                sig.append("%s: %s" % p)
                continue
            vname = _value_name(self.name_for(p))
            self.names[p] = vname
            sig.append("%s: %s" % (vname, self.type_for(p, _node_types(p))))
        mine = [n for n in node.meta["onnxc_control"]["regions"][k]
                if self.owner.get(n) == (node, k)]
        for n in mine:
            if n.op != "call_function" or n in params or n in getitems:
                continue
            if _is_getitem(n):
                raise ExportError("getitem %s on a value that is not a multi-result op" % n.name)
            lines.extend(self.node_lines(n, getitems))
        ret, types = [], []
        inside = set(mine)
        for o in outs:
            if isinstance(o, tuple):
                ret.append(o[0])
                types.append(o[1])
                continue
            ty = self.type_for(o, _node_types(o))
            name = self.arg(o)
            if o not in inside and o not in params:
                copy = _value_name(self.fresh(self.raw.get(o, o.name) + "_out"))
                lines.append("%s = onnx::Identity(%s) : %s" % (copy, name, ty))
                name = copy
            ret.append(name)
            types.append(ty)
        head = "graph(%s) -> (%s) {" % (", ".join(sig), ", ".join(types))
        return [head] + ["  " + l for l in lines] + ["  return " + ", ".join(ret), "}"]

    def control(self, node, getitems):
        """A captured onnxc.cond as onnx::If, a loop as onnx::Loop."""
        info = node.meta["onnxc_control"]
        if info["kind"] == "if":
            pred, then_out, else_out = node.args
            results, types = self.results(node, len(then_out), getitems)
            then_g = self.region(node, 0, [], then_out, getitems)
            else_g = self.region(node, 1, [], else_out, getitems)
            head = "%s = onnx::If(%s, then_branch = " % (", ".join(results), self.arg(pred))
            text = [head + then_g[0]] + ["  " + l for l in then_g[1:-1]]
            text += ["}, else_branch = " + else_g[0]] + ["  " + l for l in else_g[1:-1]]
        else:
            count, first, init, params, again, new = node.args
            results, types = self.results(node, len(init), getitems)
            # The body's parameters: `iter`, then each carried value's name
            # with `_carried` (FX names them all after their call target).
            carried = params[1:] if info["iter"] else params
            if info["iter"]:
                self.wanted[params[0]] = self.fresh("iter")
            for p, v in zip(carried, init):
                self.wanted[p] = self.fresh(self.raw.get(v, v.name) + "_carried")
            it = [] if info["iter"] else [(_value_name(self.fresh("iter")), "i64[]")]
            cond_in = (_value_name(self.fresh("cond_in")), "bool[]")
            sig = ([params[0], cond_in] + list(params[1:])) if info["iter"] \
                else it + [cond_in] + list(params)
            cond_out = [again[0]] if again[0] is not None else [cond_in]
            body = self.region(node, 0, sig, cond_out + list(new), getitems)
            inputs = [self.arg(count), self.arg(first)] + [self.arg(v) for v in init]
            head = "%s = onnx::Loop(%s, body = " % (", ".join(results), ", ".join(inputs))
            text = [head + body[0]] + ["  " + l for l in body[1:-1]]
        text.append("}) : " + ", ".join(types))
        prov = self.provenance(node)
        if prov:
            text.append("    " + " ".join(prov))
        return text

    def call(self, node, getitems):
        ex = self.ex
        info = self.targets.get(node.target)
        if info is None:
            info = self.targets[node.target] = _schema_info(node.target)
        op, kinds, pos_kinds, returns = info
        val = _node_types(node)
        n, multi = _num_results(node, val, returns)
        stat_copies = []
        # make_fx's training-mode batch norm updates the running statistics
        # in place, which the graph does not show: write torch.export's
        # functional form and copy the new statistics into the buffers.
        stats = node.args[3:5] if op == "aten::native_batch_norm" and len(node.args) > 5 \
            and node.args[5] is True else ()
        if len(stats) == 2 and all(isinstance(a, torch.fx.Node) for a in stats):
            op = "aten::_native_batch_norm_legit_functional"
        else:
            stats = ()
        if op in _SYMBOLIC:
            op, args = self.symbolic(node)
        else:
            args = [self.arg(a, pos_kinds[i] if i < len(pos_kinds) else None)
                    for i, a in enumerate(node.args)]
            args += ["%s = %s" % (k, self.arg(v, kinds.get(k))) for k, v in node.kwargs.items()]
        call = "%s(%s)" % (op, ", ".join(args))
        if n == 0:
            text = call
        elif not multi:
            vname = _value_name(self.name_for(node))
            self.names[node] = vname
            read = self.scalar_read_type(op, node)
            if read is not None and node not in self.typed:
                self.typed[node] = read     # the graph output's type too
            text = "%s = %s : %s" % (vname, call, self.type_for(node, val))
        else:
            results = [None] * n
            types = ["?"] * n
            for u in node.users:
                if _is_getitem(u):
                    i = u.args[1]
                    getitems.add(u)
                    if results[i] is None:
                        results[i] = _value_name(self.name_for(u))
                        types[i] = self.type_for(u, _node_types(u))
                    self.names[u] = results[i]
            if _is_multi(val):
                for i, v in enumerate(val):
                    if v is not None and results[i] is not None:
                        u = next((u for u in node.users if _is_getitem(u) and u.args[1] == i),
                                 None)
                        types[i] = self.type_for(u, v) if u is not None else _type_of(v, ex.dims)
                    elif v is not None:
                        types[i] = _type_of(v, ex.dims)
            for i in range(n):
                if results[i] is None:
                    results[i] = "_"
            for a in stats:
                new = _value_name(self.fresh(self.raw.get(a, a.name) + "_new"))
                ty = _type_of(_node_types(a), ex.dims)
                results.append(new)
                types.append(ty)
                stat_copies.append("%s = aten::copy_(%s, %s) : %s" % (
                    _value_name(self.fresh("copy_" + self.raw.get(a, a.name))), self.names[a], new, ty))
            # Any unused result is `_`; a type list is only written when some is known.
            tystr = ", ".join(types)
            text = "%s = %s" % (", ".join(results), call)
            if any(t != "?" for t in types):
                text += " : " + tystr
        prov = self.provenance(node)
        meta = "%s: %s" % (_quote("pkg.torch.onnx.fx_node"), _quote(node.format_node()))
        if _attrs.KEY in node.meta:   # the module attribute a literal is (bridge/attrs.py)
            meta += ", %s: %s" % (_quote(_attrs.KEY), _quote(node.meta[_attrs.KEY]))
        prov.append("meta(%s)" % meta)
        out = [text]
        if prov:
            out.append("    " + " ".join(prov))
        for c in stat_copies:
            out += [c, "    " + " ".join(prov)]
        return out

    def symbolic(self, node):
        """torch.onnx.ops.symbolic / symbolic_multi_out: the ONNX op they
        name, DOMAIN::OP_TYPE(inputs..., attributes): its domain imported at
        its version (custom domains), its results typed by the call's
        dtypes and shapes as any node's."""
        inputs, op_type = node.args[0], node.args[1]
        kw = node.kwargs
        domain = kw.get("domain", "") or ""
        if not re.fullmatch(r"[A-Za-z_][\w]*", op_type or ""):
            raise ExportError("torch.onnx.ops.symbolic: %r is not an ONNX op name" % (op_type,))
        if domain in ("", "ai.onnx", "onnx"):
            dom = "onnx"
        elif re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", domain):
            dom = domain
            version = kw.get("version")
            self.opsets[dom] = max(self.opsets.get(dom, 1), int(version or 1))
        else:
            raise ExportError("torch.onnx.ops.symbolic: %r is not a domain name" % (domain,))
        args = [self.arg(a) for a in inputs]
        for key, value in _symbolic_attrs(kw):
            if not re.fullmatch(r"[A-Za-z_]\w*", key):
                raise ExportError("torch.onnx.ops.symbolic: attribute name %r" % (key,))
            args.append("%s = %s" % (key, self.arg(value)))
        return "%s::%s" % (dom, op_type), args

    def scalar_read_type(self, op, node):
        """`Tensor.item()` gives a Python number (typed f64[] or i64[] by
        its value), but its ONNX value is the tensor's one element, of the
        tensor's dtype: that type, so the graph's types say what it
        computes."""
        if op not in ("aten::item", "aten::_local_scalar_dense") or not node.args:
            return None
        src = node.args[0]
        dtype = getattr(_node_types(src), "dtype", None) if isinstance(src, torch.fx.Node) else None
        return "%s[]" % _fx_dtype(dtype) if dtype is not None else None

    def const_decl(self, vname, t):
        t = t.detach().to("cpu")
        ty = "%s[%s]" % (_fx_dtype(t.dtype), ",".join(str(d) for d in t.shape))
        n = t.numel()
        if 1 <= n <= 16 and t.dim() >= 1 and t.dtype in (
                torch.float32, torch.float64, torch.int64, torch.int32, torch.int16,
                torch.int8, torch.uint8, torch.bool):
            flat = t.reshape(-1).tolist()
            if t.dtype == torch.bool:
                items = ["true" if x else "false" for x in flat]
            elif t.dtype.is_floating_point:
                items = [_float(x) for x in flat]
            else:
                items = [str(int(x)) for x in flat]
            return "const %s: %s = [%s]" % (vname, ty, ", ".join(items))
        return "const %s: %s = x\"%s\"" % (vname, ty, _tensor_bytes(t).hex())

    def module(self):
        ex = self.ex
        lines = ["module @%s {" % _dim_ident(ex.module_name).replace('"', "")
                 if _dim_ident(ex.module_name) == ex.module_name
                 else "module @%s {" % _quote(ex.module_name)]
        lines.append("  weights %s" % _quote(ex.weights_file))
        graph = self.emit_graph()
        lines += ["  opset %s %d" % (d, v) for d, v in sorted(self.opsets.items())]
        lines += ["  " + l for l in graph]
        lines.append("}")
        return "\n".join(lines) + "\n"


def _region_owners(graph):
    """FX node -> (control node, region index) for the nodes a captured
    onnxc.cond or loop traced into its branches or body, each owned by the
    innermost.  A node a region made that only reads values from outside it
    and is used outside it (a size the tracer computed lazily) belongs to
    the graph around."""
    owner = {}
    live = set(graph.nodes)
    for node in graph.nodes:
        info = node.meta.get("onnxc_control")
        if info is None:
            continue
        # Constants a region made (get_attr) are declared with the graph's.
        info["regions"] = [[n for n in nodes if n in live and n.op == "call_function"]
                           for nodes in info["regions"]]
        for k, nodes in enumerate(info["regions"]):
            for n in nodes:
                owner.setdefault(n, (node, k))

    def inside(n, where):
        while n is not None:
            o = owner.get(n)
            if o == where:
                return True
            n = o[0] if o else None
        return False

    for n in list(owner):
        where = owner[n]
        outside_use = any(u is not where[0] and not inside(u, where) for u in n.users)
        reads_inside = any(isinstance(a, torch.fx.Node) and inside(a, where)
                           for a in n.all_input_nodes)
        if outside_use and not reads_inside and "onnxc_control" not in n.meta:
            del owner[n]
    return owner


def _is_getitem(node):
    t = node.target
    return (node.op == "call_function" and getattr(t, "__name__", "") == "getitem"
            and getattr(t, "__module__", "") in ("_operator", "operator"))


def _get_attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
