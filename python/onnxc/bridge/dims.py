"""Inputs and their dims: flattening nested inputs and outputs, symbolic
dims and their names, and dynamic_shapes / dynamic_axes as the user
writes them, checked against what the capture specialized.
"""

import inspect
import re
import sys

import torch
import torch.fx
from .common import ExportError, _quote


# ---------------------------------------------------------------------------
# symbolic dims

def _sym_expr(d):
    """The sympy expression behind a SymInt (torch 1.13 or 2.x), or None."""
    node = getattr(d, "node", None)
    if node is not None and hasattr(node, "expr"):
        return node.expr
    if hasattr(d, "get_pyobj"):
        return d.get_pyobj().expr
    if hasattr(d, "expr"):
        return d.expr
    return None


def _is_symbolic(v):
    return type(v).__name__ in ("SymInt", "SymIntNode", "PySymInt", "SymFloat",
                                "SymFloatNode", "PySymFloat", "SymBool", "SymNode")


class _Dims:
    """Maps sympy symbols to the user's dim names or to concrete sizes."""

    def __init__(self):
        self.names = {}   # str(symbol) -> name (str) or concrete size (int)

    def dim(self, d):
        if isinstance(d, int):
            return str(d)
        expr = _sym_expr(d)
        if expr is None:
            return "?"
        try:
            import sympy
        except ImportError:
            return "?"
        subs = {}
        for s in expr.free_symbols:
            v = self.names.get(str(s))
            if isinstance(v, int):
                subs[s] = sympy.Integer(v)
            elif isinstance(v, str):
                subs[s] = sympy.Symbol(v)
        e = expr.subs(subs) if subs else expr
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            return _dim_ident(str(e))
        return _quote(str(e).replace(" ", ""))


_KEYWORDS = frozenset((
    "module graph func decomp weights opset param buffer const return where none "
    "true false tensor seq opt scope loc trace name doc meta attrs type inf nan _ "
    "f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool c64 c128 str f8e4m3fn "
    "f8e4m3fnuz f8e5m2 f8e5m2fnuz u4 i4 f4e2m1 f8e8m0").split())


def _dim_ident(name):
    """A bare identifier when the lexer reads it as one, else a string."""
    ok = (name and name.isascii() and (name[0].isalpha() or name[0] == "_")
          and all(c.isalnum() or c in "_." for c in name)
          and ".." not in name and not name.endswith(".")
          and name not in _KEYWORDS)
    return name if ok else _quote(name)


# ---------------------------------------------------------------------------
# input flattening

def _flatten(name, value, out):
    """Append (leaf_name, leaf) for the tensors in value; return a rebuild
    function taking an iterator of the new leaves."""
    if isinstance(value, torch.Tensor):
        out.append((name, value))
        return lambda it: next(it)
    if isinstance(value, dict):
        parts = [(k, _flatten("%s_%s" % (name, k), v, out)) for k, v in value.items()]
        return lambda it: type(value)((k, r(it)) for k, r in parts) if type(value) is not dict \
            else {k: r(it) for k, r in parts}
    if isinstance(value, (list, tuple)):
        parts = [_flatten("%s_%d" % (name, i), v, out) for i, v in enumerate(value)]
        if hasattr(value, "_fields"):  # namedtuple
            return lambda it: type(value)(*[r(it) for r in parts])
        return lambda it: type(value)(r(it) for r in parts)
    return lambda it: value   # non-tensor: a constant baked into the graph


def _flatten_outputs(value, out):
    if isinstance(value, torch.Tensor) or _is_symbolic(value):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten_outputs(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flatten_outputs(v, out)
    elif value is None:
        pass
    else:
        raise ExportError("model output of type %s is not a tensor" % type(value).__name__)


def _is_program(model):
    ep = getattr(getattr(torch, "export", None), "ExportedProgram", None)
    return ep is not None and isinstance(model, ep)


def _bind_inputs(model, args, kwargs):
    """[(name, value)] for the forward's parameters, in signature order
    (for an ExportedProgram: its user inputs, flattened, in order)."""
    if _is_program(model):
        from torch.export.graph_signature import InputKind
        import torch.utils._pytree as pytree
        names = [s.arg.name for s in model.graph_signature.input_specs
                 if s.kind == InputKind.USER_INPUT]
        flat = pytree.tree_leaves((tuple(args), dict(kwargs or {})))
        return [(n, v, "pos") for n, v in zip(names, flat)]
    sig = inspect.signature(model.forward)
    bound = sig.bind(*args, **(kwargs or {}))
    named = []
    skipped = False   # a parameter left to its default: later ones go by keyword
    for pname, p in sig.parameters.items():
        if pname not in bound.arguments:
            skipped = True
            continue
        v = bound.arguments[pname]
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            for i, a in enumerate(v):
                named.append(("%s_%d" % (pname, i), a, "pos"))
        elif p.kind == inspect.Parameter.VAR_KEYWORD:
            for k, a in v.items():
                named.append((k, a, "kw"))
        elif p.kind == inspect.Parameter.KEYWORD_ONLY or skipped:
            named.append((pname, v, "kw"))
        else:
            named.append((pname, v, "pos"))
    return named


_GENERATED_DIM = re.compile(r"_(dim|dynamic_axes_)\d+$")


def _dim_name(spec, leaf, d):
    """The name of dim d of input `leaf` given as spec: a string, a
    torch.export.Dim's name, or for Dim.AUTO / Dim.DYNAMIC `LEAF_dimD`.
    None for Dim.STATIC and None (not dynamic)."""
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return None   # static (an int is the size torch.export is told)
    if isinstance(spec, str):
        return spec
    hint = type(spec).__name__ == "_DimHint" or str(spec).startswith("DimHint(")
    if hint:
        return None if "STATIC" in str(spec) else "%s_dim%d" % (leaf, d)
    n = getattr(spec, "__name__", None)
    if isinstance(n, str):
        return n
    raise ExportError("dynamic_shapes: cannot name dim %r" % (spec,))


def _named_dims(spec, leaf):
    named = {d: _dim_name(s, leaf, d) for d, s in spec.items()}
    return {d: n for d, n in named.items() if n is not None}


def _dynamic_for_leaves(dynamic_shapes, named, leaves):
    """{leaf_index: {dim: name}} from dynamic_shapes keyed by forward
    parameter name (or flattened leaf name), or a list in parameter order."""
    result = {}
    if not dynamic_shapes:
        return result
    if isinstance(dynamic_shapes, (list, tuple)):
        dynamic_shapes = {named[i][0]: s for i, s in enumerate(dynamic_shapes) if s}
    leaf_index = {n: i for i, (n, _) in enumerate(leaves)}
    for key, spec in dynamic_shapes.items():
        if spec is None:
            continue
        if key in leaf_index and isinstance(spec, dict) and all(isinstance(k, int) for k in spec):
            result[leaf_index[key]] = _named_dims(spec, key)
            continue
        # a structure matching the argument: flatten it alongside
        sub = []
        _flatten_spec(key, spec, sub, leaf_index)
        for lname, dims in sub:
            if lname not in leaf_index:
                raise ExportError("dynamic_shapes: no tensor input named %r" % lname)
            result[leaf_index[lname]] = _named_dims(dims, lname)
    return result


def _flatten_spec(name, spec, out, leaf_index=()):
    """(leaf name, {dim: spec}) for each tensor a spec describes.  A tensor's
    dims are a dict, or (torch.export's other form) a tuple or list with
    one entry a dim."""
    if isinstance(spec, dict) and all(isinstance(k, int) for k in spec):
        out.append((name, spec))
    elif isinstance(spec, (list, tuple)) and name in leaf_index:
        out.append((name, dict(enumerate(spec))))
    elif isinstance(spec, dict):
        for k, v in spec.items():
            _flatten_spec("%s_%s" % (name, k), v, out, leaf_index)
    elif isinstance(spec, (list, tuple)):
        for i, v in enumerate(spec):
            _flatten_spec("%s_%d" % (name, i), v, out, leaf_index)
    # The graph is only read from here on: no recompile (it costs as much as
    # printing the whole program).


def _check_dynamic(ex, phs, nweights, dyn, leaves):
    """Refuse dims the tracer specialized; warn about guards on named dims.
    A guard that bounds one named dim narrows its range: the ranges are
    what the graph's range_constraints metadata says (ex.ranges) and what
    the one warning a dim gets says, so both tell the same bound."""
    env = None
    named_syms = {k for k, v in ex.dims.names.items() if isinstance(v, str)}
    for li, dims in dyn.items():
        val = phs[nweights + li].meta.get("val")
        for d, name in dims.items():
            sd = val.shape[d] if val is not None else None
            if isinstance(sd, int):
                raise ExportError(
                    "dim %d of input %r (%r) was specialized to %d while tracing; torch "
                    "1.13 treats sizes 0 and 1 as constants: trace with a size >= 2"
                    % (d, leaves[li][0], name, sd))
            if sd is not None and hasattr(sd, "get_pyobj"):
                env = getattr(sd.get_pyobj(), "shape_env", env)
    seen, said = set(), set()
    bounds = {}   # dim name -> [lower, upper or None]
    for guard in getattr(env, "guards", []) or []:
        expr, value = guard[0], guard[1]
        syms = {str(s): s for s in getattr(expr, "free_symbols", ())}
        if not set(syms) & named_syms or str(expr) in seen:
            continue
        seen.add(str(expr))
        if _guard_holds_generally(expr, value, syms, ex.dims.names):
            continue
        pinned = _pinned_dims(expr, value, syms, ex.dims.names, env)
        if pinned:
            sym, size = pinned[0]
            name = ex.dims.names[sym]
            where = [(leaves[li][0], d) for li, dims in dyn.items()
                     for d, n in dims.items() if n == name]
            raise ExportError(
                "dynamic dim %r (%s) was specialized to its example size %d: the model's "
                "code depends on it being exactly %d (%s), so the graph would be valid at "
                "that size only. Leave %r out of dynamic_shapes, or change the model so "
                "that it does not need the exact size (for example reshape with -1)"
                % (name, ", ".join("dim %d of input %r" % (d, i) for i, d in where),
                   size, size, _guard_text(expr, value, syms, ex.dims.names), name))
        bound = _bound_of(expr, value, syms, ex.dims.names)
        if bound is not None:
            name, lo, hi = bound
            have = bounds.setdefault(name, [2, None])
            have[0] = max(have[0], lo) if lo is not None else have[0]
            have[1] = hi if have[1] is None else (min(have[1], hi) if hi is not None else have[1])
            continue
        text = _condition_text(expr, value, syms, ex.dims.names)
        if text in said:
            continue
        said.add(text)
        print("fxir_export: warning: the graph is valid only where %s" % text, file=sys.stderr)
    for name, (lo, hi) in bounds.items():
        ex.ranges[name] = (str(lo), "int_oo" if hi is None else str(hi))
        print("fxir_export: warning: the graph is valid only where %s" % _range_text(name, lo, hi),
              file=sys.stderr)


def _bound_of(expr, value, syms, names):
    """(dim name, lower or None, upper or None): the integer bounds a guard
    puts on one named dim (`seq < 256` for `seq >= 256` being False gives
    upper 255), or None when the guard is not such a bound."""
    if len(syms) != 1:
        return None
    (sname, sym), = syms.items()
    name = names.get(sname)
    if not isinstance(name, str):
        return None
    try:
        import math
        import sympy
        cond = expr if bool(value) else sympy.Not(expr)
        if not isinstance(cond, sympy.core.relational.Relational):
            cond = sympy.simplify(cond)
        if not isinstance(cond, sympy.core.relational.Relational):
            return None
        real = sympy.Symbol("d", real=True)
        iv = sympy.solve_univariate_inequality(cond.subs(sym, real), real, relational=False)
        if not isinstance(iv, sympy.Interval):
            return None
        lo = hi = None
        if iv.start.is_finite:
            lo = math.ceil(iv.start)
            lo += 1 if iv.left_open and lo == iv.start else 0
        if iv.end.is_finite:
            hi = math.floor(iv.end)
            hi -= 1 if iv.right_open and hi == iv.end else 0
        return name, lo, hi
    except Exception:   # noqa: BLE001 (not a bound sympy can solve: warn with the text)
        return None


def _range_text(name, lo, hi):
    """`seq <= 255`, `4 <= seq <= 255`, `seq >= 4`: a dim's range as a
    condition (sizes below 2 are never traced)."""
    if hi is None:
        return "%s >= %d" % (name, lo)
    if lo <= 2:
        return "%s <= %d" % (name, hi)
    return "%d <= %s <= %d" % (lo, name, hi)


def _condition_text(expr, value, syms, names):
    """The condition a guard puts on the dims, simplified and in the user's
    names: `seq < 256` for `seq >= 256` being False."""
    try:
        import sympy
        cond = expr if bool(value) else sympy.Not(expr)
        cond = sympy.simplify(cond)
        subs = {sym: sympy.Symbol(names[s]) for s, sym in syms.items()
                if isinstance(names.get(s), str)}
        return str(cond.subs(subs) if subs else cond)
    except Exception:   # noqa: BLE001 (any sympy failure: say it as it is)
        return _guard_text(expr, value, syms, names)


def _guard_text(expr, value, syms, names):
    text = str(expr)
    for sym in syms:
        v = names.get(sym)
        if v is not None:
            text = text.replace(sym, str(v))
    return "%s is %s" % (text, value)


def _pinned_dims(expr, value, syms, names, env):
    """[(symbol name, example size)] of the named dims that the guard
    allows at their example size only (other dims at their example sizes)."""
    var_to_val = getattr(env, "var_to_val", {}) or {}
    example = {}
    for sname, sym in syms.items():
        v = names.get(sname)
        example[sym] = v if isinstance(v, int) else var_to_val.get(sym)
    if any(v is None for v in example.values()):
        return []
    pinned = []
    for sname, sym in syms.items():
        if not isinstance(names.get(sname), str):
            continue
        size = int(example[sym])
        alive = False
        for other in (2, 3, 5, 8, 17, 64, 1000, size - 1, size + 1, 2 * size):
            if other < 2 or other == size:
                continue
            subs = dict(example)
            subs[sym] = other
            try:
                if bool(expr.subs(subs)) == bool(value):
                    alive = True
                    break
            except (TypeError, ValueError):
                alive = True
                break
        if not alive:
            pinned.append((sname, size))
    return pinned


def _guard_holds_generally(expr, value, syms, names):
    """True when a guard keeps its value for other sizes of the dynamic
    dims (most guards, such as `numel == 0` being False, are harmless)."""
    for size in (2, 3, 5, 8, 17, 64, 1000):
        subs = {}
        for sname, sym in syms.items():
            v = names.get(sname)
            subs[sym] = v if isinstance(v, int) else size
        try:
            if bool(expr.subs(subs)) != bool(value):
                return False
        except (TypeError, ValueError):
            return False
    return True


def _specialized_dim_error(exc, dyn, leaves):
    """torch.export's 'marked dynamic but specialized' error in the user's
    names, or None when exc is another error."""
    text = str(exc)
    one = re.search(r"specialized due to hint of ([01]) for dimension inputs\['([^']+)'\]"
                    r"\.shape\[(\d+)\]", text)
    if one:
        leaf, d = one.group(2), int(one.group(3))
        li = next((i for i, (n, _) in enumerate(leaves) if n == leaf), None)
        name = dyn.get(li, {}).get(d, "%s.%d" % (leaf, d))
        return ("dynamic dim %r (dim %d of input %r) has example size %s, which torch.export "
                "treats as a constant: trace with a size >= 2" % (name, d, leaf, one.group(1)))
    m = re.search(r"You marked L\['([^']+)'\]\.size\(\)\[(\d+)\] as dynamic but your code "
                  r"specialized it to be a constant \((\d+)\)", text)
    if not m:
        return None
    leaf, d, size = m.group(1), int(m.group(2)), int(m.group(3))
    li = next((i for i, (n, _) in enumerate(leaves) if n == leaf), None)
    name = dyn.get(li, {}).get(d, "%s.%d" % (leaf, d)) if li is not None else "%s.%d" % (leaf, d)
    if size < 2:
        return ("dynamic dim %r (dim %d of input %r) has example size %d, which torch.export "
                "treats as a constant: trace with a size >= 2" % (name, d, leaf, size))
    return ("dynamic dim %r (dim %d of input %r) was specialized to its example size %d: the "
            "model's code depends on it being exactly %d, so the graph would be valid at that "
            "size only. Leave %r out of dynamic_shapes, or change the model so that it does "
            "not need the exact size (for example reshape with -1)"
            % (name, d, leaf, size, size, name))


def _to_export_dims(dynamic_shapes, Dim):
    """Turn {"x": {0: "batch"}} into torch.export's dynamic_shapes: a name
    becomes Dim.DYNAMIC; Dim objects, Dim.AUTO / Dim.DYNAMIC / Dim.STATIC
    and None pass as they are."""
    if not dynamic_shapes:
        return None
    def conv(s):
        if isinstance(s, str):
            # Dim.DYNAMIC, not Dim(name): torch.export then finds the
            # ranges and the equalities between dims itself, and still
            # refuses a dim the model specializes.  The names are put back
            # on the traced symbols afterwards.
            return Dim.DYNAMIC
        if isinstance(s, dict):
            return {k: conv(v) for k, v in s.items()}
        if isinstance(s, (list, tuple)):
            return type(s)(conv(v) for v in s)
        return s

    return conv(dynamic_shapes)


def _check_names(input_names, output_names, leaf_names):
    """{graph input name: flattened leaf name}, after checking the user's
    names: no more than there are inputs, no duplicates, no clashes."""
    if len(input_names) > len(leaf_names):
        raise ExportError("input_names has %d names, the model has %d tensor inputs (%s)"
                          % (len(input_names), len(leaf_names), ", ".join(leaf_names)))
    final = list(input_names) + leaf_names[len(input_names):]
    for n in list(input_names) + list(output_names):
        if not isinstance(n, str) or not n:
            raise ExportError("input and output names must be non-empty strings, not %r" % (n,))
    seen = set()
    for n in final + list(output_names):
        if n in seen:
            raise ExportError("name %r is given to two graph inputs or outputs" % n)
        seen.add(n)
    return dict(zip(final, leaf_names))


def _from_dynamic_axes(dynamic_axes, renamed, output_names):
    """torch.onnx.export's dynamic_axes as (dynamic_shapes keyed by flattened
    input name, {output index: {dim: name}})."""
    shapes, outs = {}, {}
    leaves = set(renamed.values())
    for key, spec in dynamic_axes.items():
        if isinstance(spec, (list, tuple)):
            spec = {d: "%s_dynamic_axes_%d" % (key, i + 1) for i, d in enumerate(spec)}
        if not isinstance(spec, dict) or not all(isinstance(d, int) for d in spec):
            raise ExportError("dynamic_axes[%r]: want {dim: name} or [dim, ...], not %r"
                              % (key, spec))
        spec = {d: _dim_name(n, key, d) for d, n in spec.items()}
        if key in renamed:
            shapes[renamed[key]] = spec
        elif key in leaves:
            shapes[key] = spec
        elif key in output_names:
            outs[output_names.index(key)] = spec
        else:
            raise ExportError("dynamic_axes: %r is neither an input name (%s) nor an output "
                              "name (%s)" % (key, ", ".join(renamed) or "none",
                                             ", ".join(output_names) or "none"))
    return shapes, outs
