#!/usr/bin/python3
"""Export a PyTorch model to onnxc's textual IR (.fxir) and a .safetensors file.

    from fxir_export import export
    export(model, (x,), "model.fxir")        # writes model.fxir and model.safetensors

The graph is written at the ATen level exactly as PyTorch traced it: in-place
ops such as aten::add_ stay in the graph (onnxc's functionalize pass removes
them), nothing is decomposed here.  Parameters and buffers become `param` /
`buffer` lines named by their state_dict key, which is also their key in the
safetensors file.

Two tracers:
  * torch >= 2.1: torch.export.export; the ExportedProgram's graph signature
    says which placeholders are parameters, buffers, constants and inputs.
    Buffer and input mutations listed in the signature are written back as
    aten::copy_ nodes, so the file means the same as with the other tracer.
  * older torch (1.13): make_fx over a function of (params, buffers, inputs)
    that calls the module through functional_call.  make_fx records neither
    module scopes nor stack traces, so forward hooks and a patched
    Graph.create_node record them while tracing.

Command line: see `fxir_export.py --help`.
"""

import argparse
import contextlib
import functools
import importlib.util
import inspect
import json
import linecache
import math
import os
import re
import struct
import sys
import sysconfig

import torch
import torch.fx

__all__ = ["export", "write_safetensors"]

_THIS_FILE = os.path.abspath(__file__)
_REPO = os.path.dirname(os.path.dirname(_THIS_FILE))
if os.path.join(_REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(_REPO, "python"))
from onnxc.bridge import hops as _hops  # noqa: E402
_BRIDGE_DIR = os.path.dirname(os.path.abspath(_hops.__file__)) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


def _torch_version():
    parts = []
    for p in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


# ---------------------------------------------------------------------------
# dtypes

def _dtype_table():
    # (torch attribute, .fxir name, safetensors name)
    rows = [
        ("float32", "f32", "F32"), ("float16", "f16", "F16"),
        ("bfloat16", "bf16", "BF16"), ("float64", "f64", "F64"),
        ("int8", "i8", "I8"), ("int16", "i16", "I16"), ("int32", "i32", "I32"),
        ("int64", "i64", "I64"), ("uint8", "u8", "U8"), ("uint16", "u16", "U16"),
        ("uint32", "u32", "U32"), ("uint64", "u64", "U64"), ("bool", "bool", "BOOL"),
        ("complex64", "c64", "C64"), ("complex128", "c128", "C128"),
        ("float8_e4m3fn", "f8e4m3fn", "F8_E4M3"),
        ("float8_e4m3fnuz", "f8e4m3fnuz", "F8_E4M3FNUZ"),
        ("float8_e5m2", "f8e5m2", "F8_E5M2"),
        ("float8_e5m2fnuz", "f8e5m2fnuz", "F8_E5M2FNUZ"),
        ("float8_e8m0fnu", "f8e8m0", "F8_E8M0"),
    ]
    fx, st = {}, {}
    for attr, fxname, stname in rows:
        dt = getattr(torch, attr, None)
        if isinstance(dt, torch.dtype):
            fx[dt] = fxname
            st[dt] = stname
    return fx, st


_FX_DTYPE, _ST_DTYPE = _dtype_table()


def _fx_dtype(dt):
    try:
        return _FX_DTYPE[dt]
    except KeyError:
        raise ExportError("dtype %s has no .fxir spelling" % dt) from None


class ExportError(Exception):
    pass


# ---------------------------------------------------------------------------
# tensors as bytes; safetensors

def _tensor_array(t):
    """A numpy array over a tensor's bytes in row-major order, little-endian:
    a view of the tensor's own storage when it is a contiguous CPU tensor
    (no copy), else a copy of that one tensor."""
    if sys.byteorder != "little":
        raise ExportError("big-endian hosts are not supported")
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    elif t.dtype == torch.bool:
        t = t.to(torch.uint8)
    elif t.dtype not in (torch.float32, torch.float64, torch.float16, torch.int8,
                         torch.int16, torch.int32, torch.int64, torch.uint8,
                         torch.complex64, torch.complex128):
        # float8 and unsigned types without numpy support: reinterpret bytes.
        t = t.view(torch.uint8)
    return t.numpy()


def _tensor_bytes(t):
    """Little-endian bytes of a tensor in row-major order."""
    return _tensor_array(t).tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} as a safetensors file with the standard library.

    Layout: u64 little-endian header size, a JSON header padded with spaces
    to a multiple of 8, then the tensors packed without holes.  Tensors are
    ordered by element size (largest first), then name, so that every tensor
    starts at an offset aligned to its element size.  Each tensor is written
    straight from its storage, one at a time: no copy of the weights is
    gathered (a non-contiguous tensor is copied alone, then dropped).
    """
    items = []
    for name, t in tensors.items():
        if t.dtype not in _ST_DTYPE:
            raise ExportError("tensor %r: dtype %s has no safetensors name" % (name, t.dtype))
        items.append((name, t))
    items.sort(key=lambda kv: (-kv[1].element_size(), kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, t in items:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, t in items:
            a = _tensor_array(t)
            if a.size:
                f.write(a.reshape(-1).view("u1"))
            del a
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# printing literals

def _quote_table():
    table = {ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\t"): "\\t",
             ord("\r"): "\\r"}
    for o in list(range(0x20)) + [0x7f]:
        table.setdefault(o, "\\x%02x" % o)
    for o in range(0xd800, 0xe000):
        table[o] = "?"   # lone surrogate: not valid UTF-8
    return table


_QUOTE_TABLE = _quote_table()


def _quote(s):
    """s as a .fxir string literal (one C-level pass: str.translate)."""
    return '"' + s.translate(_QUOTE_TABLE) + '"'


def _float(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(x)
    if "e" in r:
        mant, exp = r.split("e")
        exp = exp.lstrip("+")
        return mant + "e" + exp
    if "." not in r:
        r += ".0"
    return r


_ENUM_NAMES = {}
for _attr in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
              "sparse_bsc", "_mkldnn", "contiguous_format", "channels_last",
              "channels_last_3d", "preserve_format"):
    _v = getattr(torch, _attr, None)
    if _v is not None:
        _ENUM_NAMES[_v] = _attr.lstrip("_")


_PLAIN_NAME = re.compile(r"[0-9A-Za-z_.]+\Z")


def _value_name(name):
    if _PLAIN_NAME.match(name):
        return "%" + name
    return "%" + _quote(name)


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
# provenance: module scopes and stack traces while tracing (torch 1.13)

_CONTROL_FILE = os.sep + os.path.join("onnxc", "control.py")


class _Provenance:
    """While active, tag every FX node created with the module stack and the
    user's stack trace (node.meta['fxir_scope'], node.meta['fxir_frames'])."""

    def __init__(self, root, stop_code):
        self.root = root
        self.stop_code = stop_code
        self.stack = []
        self.handles = []
        self.info = {}
        self.user_file = {}   # code object -> its absolute file name, None when not user code
        for path, mod in root.named_modules(remove_duplicate=False):
            if id(mod) not in self.info:
                cls = type(mod)
                self.info[id(mod)] = (path, "%s.%s" % (cls.__module__, cls.__qualname__))

    def __enter__(self):
        for mod in self.root.modules():
            self.handles.append(mod.register_forward_pre_hook(self._pre))
            self.handles.append(mod.register_forward_hook(self._post))
        self.orig_create_node = torch.fx.Graph.create_node
        prov = self

        def create_node(graph, *args, **kwargs):
            node = prov.orig_create_node(graph, *args, **kwargs)
            node.meta["fxir_scope"] = list(prov.stack)
            node.meta["fxir_frames"] = prov._user_frames()
            return node

        torch.fx.Graph.create_node = create_node
        return self

    def __exit__(self, *exc):
        torch.fx.Graph.create_node = self.orig_create_node
        for h in self.handles:
            h.remove()
        self.handles = []
        return False

    def _pre(self, mod, inputs):
        self.stack.append(self.info.get(id(mod), ("?", type(mod).__qualname__)))

    def _post(self, mod, inputs, output):
        if self.stack:
            self.stack.pop()

    def _user_frames(self):
        """(file, line, function) of user frames, outermost first."""
        frames = []
        f = sys._getframe(2)
        user = self.user_file
        while f is not None and f.f_code is not self.stop_code:
            code = f.f_code
            fn = user.get(code, False)
            if fn is False:
                fn = os.path.abspath(code.co_filename)
                if (fn.startswith(_TORCH_DIR) or fn == _THIS_FILE or fn.endswith(_CONTROL_FILE)
                        or fn.startswith(_STDLIB_DIR) or code.co_filename.startswith("<")):
                    fn = None
                user[code] = fn
            if fn is not None:
                frames.append((fn, f.f_lineno, code.co_name))
            f = f.f_back
        if f is None:
            return []   # not inside the traced call
        frames.reverse()
        return frames


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
_RNN_NS = "onnxc_rnn"
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


@functools.lru_cache(maxsize=None)
def _short_path_cached(fn, source_root, sys_path):
    return _short_path_uncached(fn, source_root, sys_path)


def _short_path(fn, source_root):
    """A path without the machine's layout: relative to source_root, or to
    the sys.path entry it was imported from; else absolute."""
    return _short_path_cached(fn, source_root, tuple(sys.path))


def _short_path_uncached(fn, source_root, sys_path):
    fn = os.path.abspath(fn)
    roots = [source_root] + sorted((p for p in sys_path if p), key=len, reverse=True)
    for r in roots:
        r = os.path.abspath(r)
        if fn.startswith(r + os.sep):
            return os.path.relpath(fn, r).replace(os.sep, "/")
    return fn


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
    for pname, p in sig.parameters.items():
        if pname not in bound.arguments:
            continue
        v = bound.arguments[pname]
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            for i, a in enumerate(v):
                named.append(("%s_%d" % (pname, i), a, "pos"))
        elif p.kind == inspect.Parameter.VAR_KEYWORD:
            for k, a in v.items():
                named.append((k, a, "kw"))
        elif p.kind == inspect.Parameter.KEYWORD_ONLY:
            named.append((pname, v, "kw"))
        else:
            named.append((pname, v, "pos"))
    return named


_GENERATED_DIM = re.compile(r"_(dim|dynamic_axes_)\d+$")


def _dim_name(spec, leaf, d):
    """The name of dim d of input `leaf` given as spec: a string, a
    torch.export.Dim's name, or for Dim.AUTO / Dim.DYNAMIC `LEAF_dimD`.
    None for Dim.STATIC and None (not dynamic)."""
    if spec is None:
        return None
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
        _flatten_spec(key, spec, sub)
        for lname, dims in sub:
            if lname not in leaf_index:
                raise ExportError("dynamic_shapes: no tensor input named %r" % lname)
            result[leaf_index[lname]] = _named_dims(dims, lname)
    return result


def _flatten_spec(name, spec, out):
    if isinstance(spec, dict) and all(isinstance(k, int) for k in spec):
        out.append((name, spec))
    elif isinstance(spec, dict):
        for k, v in spec.items():
            _flatten_spec("%s_%s" % (name, k), v, out)
    elif isinstance(spec, (list, tuple)):
        for i, v in enumerate(spec):
            _flatten_spec("%s_%d" % (name, i), v, out)


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
        """The graph's meta(...) entries: the named dims' ranges, and, on the
        values (`input:NAME:KEY`, `initializer:...`, `output:...`,
        docs/onnx.md), the FX name of each input, weight and output whose
        name differs from it, non-persistent buffers, and the kind of the
        tensors the trace captured (CONSTANT_TENSOR)."""
        ex = self.ex
        q = lambda k, v: "%s: %s" % (_quote(k), _quote(v))
        meta = []
        if getattr(ex, "capture", None):
            meta.append(q("pkg.onnxc.capture", ex.capture))
        names = []
        for v in ex.dims.names.values():
            if isinstance(v, str) and v not in names:
                names.append(v)
        if names:
            text = ", ".join("%s: VR[%s, %s]" % ((n,) + ex.ranges.get(n, ("2", "int_oo")))
                             for n in names)
            meta.append(q("pkg.torch.export.ExportedProgram.range_constraints", "{%s}" % text))
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
        if "onnxc_control" in node.meta:
            return self.control(node, getitems)
        return self.call(node, getitems)

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
        args = [self.arg(a, pos_kinds[i] if i < len(pos_kinds) else None)
                for i, a in enumerate(node.args)]
        args += ["%s = %s" % (k, self.arg(v, kinds.get(k))) for k, v in node.kwargs.items()]
        call = "%s(%s)" % (op, ", ".join(args))
        if n == 0:
            text = call
        elif not multi:
            vname = _value_name(self.name_for(node))
            self.names[node] = vname
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
        prov.append("meta(%s: %s)" % (_quote("pkg.torch.onnx.fx_node"), _quote(node.format_node())))
        out = [text]
        if prov:
            out.append("    " + " ".join(prov))
        for c in stat_copies:
            out += [c, "    " + " ".join(prov)]
        return out

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
        lines += ["  " + l for l in self.emit_graph()]
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
    with prov, _LinearNames(), _NativeDropout(), _FastPytree() if fast else nul(), \
            _NoRecompile() if fast else nul(), _FastCreateArg() if fast else nul(), \
            (control.capturing() if control else contextlib.nullcontext()), \
            (named_dims if mode == "symbolic" else _SpecializeDataDependent(prov)), \
            (contextlib.nullcontext() if mode == "symbolic" else _MultiResultMeta()), \
            (contextlib.nullcontext() if mode == "symbolic" else _TracingBatchedNms()), \
            (_WholeRNNLayers() if rnn else contextlib.nullcontext()):
        gm = make_fx(fn, tracing_mode=mode)(*example_weights(), *inputs)

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
    # The graph is only read from here on: no recompile (it costs as much as
    # printing the whole program).


def _check_dynamic(ex, phs, nweights, dyn, leaves):
    """Refuse dims the tracer specialized; warn about guards on named dims."""
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
        text = _condition_text(expr, value, syms, ex.dims.names)
        if text in said:
            continue
        said.add(text)
        print("fxir_export: warning: the graph is valid only where %s" % text, file=sys.stderr)


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


# ---------------------------------------------------------------------------
# tracer: torch >= 2.1 (torch.export)

def _user_frame(exc):
    """"file:line: source" of the innermost frame of the model's own code
    (not torch's, the standard library's or the bridge's) in exc's
    traceback or those it was raised from, or None."""
    best = None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            fn = os.path.abspath(tb.tb_frame.f_code.co_filename)
            if not (fn.startswith((_TORCH_DIR, _STDLIB_DIR, _BRIDGE_DIR)) or fn == _THIS_FILE
                    or "site-packages" + os.sep + "torch" in fn or fn.startswith("<")):
                best = (fn, tb.tb_lineno)
            tb = tb.tb_next
        if best is not None:
            break
        exc = exc.__cause__ or exc.__context__
    if best is None:
        return None
    src = linecache.getline(best[0], best[1]).strip()
    return "%s:%d%s" % (_short_path(best[0], os.getcwd()), best[1], ": " + src if src else "")


def _first_lines(exc, n=6):
    text = str(exc).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    out = "\n".join(lines[:n])
    return out + ("\n..." if len(lines) > n else "")


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


# The capture the last export used (one of CAPTURES, "ExportedProgram", or
# "make_fx" on torch 1.13).
last_capture = None

# The captures tried in turn on torch 2.x; the one that worked is named in
# the .fxir's meta and the report.
CAPTURES = ("torch.export", "torch.export (strict)", "make_fx", "draft_export")


def _capture(model, args, kwargs, dynamic_shapes, keep_inplace, only=None):
    """(ExportedProgram or None, the make_fx _Export or None, capture name).
    torch.export (non-strict) first; when it fails, torch.export with
    TorchDynamo (strict), then make_fx over the module (the torch 1.13
    path, which specializes data-dependent Python to the example with a
    warning), then draft_export.  A dynamic dim the model specializes is
    the user's error, not a reason to try another capture."""
    from torch.export import Dim, export as texport
    ds = _to_export_dims(dynamic_shapes, Dim)
    named = _bind_inputs(model, args, kwargs)
    leaves = []
    for n, v, _ in named:
        _flatten(n, v, leaves)
    dyn = _dynamic_for_leaves(dynamic_shapes, named, leaves)
    first = None
    order = [only] if only else list(CAPTURES)
    for how in order:
        try:
            if how == "torch.export":
                return texport(model, tuple(args), kwargs=kwargs or None, dynamic_shapes=ds,
                               strict=False), None, how
            if how == "torch.export (strict)":
                return texport(model, tuple(args), kwargs=kwargs or None, dynamic_shapes=ds,
                               strict=True), None, how
            if how == "make_fx":
                return None, _trace_make_fx(model, args, kwargs, dynamic_shapes,
                                            keep_inplace), how
            if how == "draft_export":
                from torch.export import draft_export
                return draft_export(model, tuple(args), kwargs=kwargs or None,
                                    dynamic_shapes=ds), None, how
            raise ExportError("unknown capture %r (one of %s)" % (how, ", ".join(CAPTURES)))
        except ExportError as e:
            first = first or e
        except Exception as e:   # noqa: BLE001 (the next capture may succeed)
            if type(e).__name__ == "ControlFlowError":
                raise   # onnxc.cond / a loop misused: the model's error

            spec = _specialized_dim_error(e, dyn, leaves)
            if spec:
                raise ExportError(spec) from None
            first = first or e
    where = _user_frame(first)
    raise ExportError("no capture could trace %s (tried %s). %s: %s%s"
                      % (type(model).__name__, ", ".join(order), type(first).__name__,
                         _first_lines(first),
                         "\n  at %s" % where if where else "")) from first


def _trace_torch_export(model, args, kwargs, dynamic_shapes, keep_inplace, capture=None):
    from torch.export.graph_signature import InputKind, OutputKind

    if _is_program(model):
        ep, how = model, "ExportedProgram"
    else:
        ep, ex, how = _capture(model, args, kwargs, dynamic_shapes, keep_inplace, capture)
        if ex is not None:
            ex.capture = how
            return ex
    if not keep_inplace:
        ep = ep.run_decompositions({})   # functionalizes, decomposes nothing
    gm = ep.graph_module
    try:
        _hops.lower_higher_order_ops(gm)
        _hops.drop_assertions(gm)
    except _hops.HopError as e:
        raise ExportError(str(e)) from None
    sig = ep.graph_signature
    ex = _Export()
    phs = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    ex.weights_const = {}
    for spec in sig.input_specs:
        node = phs[spec.arg.name]
        if spec.kind == InputKind.PARAMETER:
            ex.placeholders[node] = ("param", spec.target)
            ex.weights[spec.target] = ep.state_dict[spec.target].detach()
        elif spec.kind == InputKind.BUFFER:
            if spec.target in ep.state_dict:
                t = ep.state_dict[spec.target]
            else:   # non-persistent buffers live with the constants
                t = ep.constants[spec.target]
            ex.placeholders[node] = ("buffer", spec.target)
            ex.weights[spec.target] = t.detach()
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            ex.placeholders[node] = ("const", spec.target)
            ex.weights_const[spec.target] = ep.constants[spec.target]
        elif spec.kind == InputKind.USER_INPUT:
            ex.placeholders[node] = ("input", spec.arg.name)
        else:
            raise ExportError("input %s of kind %s is not supported" % (spec.arg.name, spec.kind))

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    out_args = list(out_node.args[0])
    by_input_name = {s.arg.name: phs[s.arg.name] for s in sig.input_specs}
    target_to_ph = {s.target: phs[s.arg.name] for s in sig.input_specs if s.target is not None}
    for spec, value in zip(sig.output_specs, out_args):
        if spec.kind == OutputKind.USER_OUTPUT:
            ex.outputs.append(value)
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            ex.mutations.append((target_to_ph[spec.target], value))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            ex.mutations.append((by_input_name[spec.target], value))
        else:
            raise ExportError("output of kind %s is not supported" % spec.kind)

    # Provenance from the metadata torch.export records.
    for node in gm.graph.nodes:
        stack = node.meta.get("nn_module_stack")
        if stack:
            scope = []
            for _, (path, cls) in stack.items():
                if not isinstance(cls, str):
                    cls = "%s.%s" % (cls.__module__, cls.__qualname__)
                if path.startswith("L['self']."):
                    path = path[len("L['self']."):]
                elif path == "L['self']":
                    path = ""
                scope.append((path, cls))
            node.meta["fxir_scope"] = scope
        elif node.op == "call_function":
            node.meta["fxir_scope"] = []
        st = node.meta.get("stack_trace")
        if st:
            node.meta["fxir_frames"] = _parse_stack_trace(st)

    # Symbolic dims: the user's names for the input symbols.
    user_specs = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT]
    named = _bind_inputs(model, args, kwargs)
    leaves = []
    for n, v, _ in named:
        _flatten(n, v, leaves)
    dyn = _dynamic_for_leaves(dynamic_shapes, named, leaves)
    if len(user_specs) == len(leaves):
        # Name the inputs like the make_fx path does (x, inputs_a, xs_0).
        for spec, (lname, _) in zip(user_specs, leaves):
            ex.placeholders[phs[spec.arg.name]] = ("input", lname)
    for li, spec in enumerate(user_specs):
        val = phs[spec.arg.name].meta.get("val")
        if val is None or li >= len(leaves):
            continue
        for d, sd in enumerate(getattr(val, "shape", ())):
            expr = _sym_expr(sd) if not isinstance(sd, int) else None
            if expr is not None and getattr(expr, "is_Symbol", False):
                name = dyn.get(li, {}).get(d)
                have = ex.dims.names.get(str(expr))
                # torch.export makes dims it proves equal one symbol: the
                # first name given wins, a name the user wrote over one
                # made up for an unnamed dim (x_dim0, x_dynamic_axes_1).
                if name is not None and (have is None or (_GENERATED_DIM.search(have)
                                                          and not _GENERATED_DIM.search(name))):
                    ex.dims.names[str(expr)] = name
    ex.gm = gm
    ex.capture = how
    return ex


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


def _parse_stack_trace(text):
    """[(file, line, function)] from a Python traceback text."""
    frames = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        try:
            fn = line[6:line.index('"', 6)]
            rest = line[line.index('"', 6) + 1:]
            lineno = int(rest.split("line", 1)[1].split(",")[0])
            func = rest.split(" in ", 1)[1].strip() if " in " in rest else "?"
        except (ValueError, IndexError):
            continue
        if fn.startswith(_TORCH_DIR) or fn.startswith("<"):
            continue    # torch's frames, and FX's generated code (<eval_with_key>.N)
        frames.append((fn, lineno, func))
    return frames


# ---------------------------------------------------------------------------
# entry point

def export(model, args, path, kwargs=None, dynamic_shapes=None, keep_inplace=True,
           source_root=None, input_names=None, output_names=None, dynamic_axes=None,
           save_reference=False, training=None, capture=None):
    """Trace `model(*args, **kwargs)` and write `path` (.fxir) and the
    safetensors file beside it (same stem).  Returns the .fxir text.

    dynamic_shapes: {"x": {0: "batch"}} names dims of forward parameter x
    (strings or torch.export.Dim); nested dict/list inputs take a matching
    structure or the flattened name ("inputs_a").
    keep_inplace: leave in-place ops in the graph (default; onnxc's
    functionalize pass handles them).  False functionalizes while tracing
    (make_fx) or runs ExportedProgram.run_decompositions({}) (torch.export).
    torch.export versions that return a functional graph keep no in-place
    ops either way; their buffer and input mutations come back as
    aten::copy_ nodes at the end of the graph.
    source_root: file paths in loc()/trace() are written relative to it
    (default: the current directory).
    input_names, output_names: names of the graph's inputs and outputs, in
    the order of the flattened inputs and outputs (as torch.onnx.export);
    a shorter list names the first ones.
    dynamic_axes: torch.onnx.export's form, keyed by input or output name:
    {"x": {0: "batch"}} or {"x": [0]} (automatic names "x_dynamic_axes_1",
    ...).  Output entries name the output's dims.  Give it or
    dynamic_shapes, not both.
    save_reference: also write <stem>.ref.safetensors, the reference data
    of `onnxc verify --ref` and `onnxc -bisect-accuracy=`: the example
    inputs (input.<name>), PyTorch's outputs for them (output.<name>) and
    every intermediate tensor of the traced graph (value.<name>), named as
    in the .fxir.
    training: the mode the model is traced in, as torch.onnx.export's
    TrainingMode: EVAL (or False, "eval"), TRAINING (True, "train",
    "training") or PRESERVE (None, the default here: the model's own mode).
    The model's modes are restored afterwards.  In training mode batch norm
    uses the batch's statistics and returns the updated running statistics
    as extra outputs, and dropout is random.
    """
    train = training_flag(training)
    if _is_program(model):
        if args is None:
            args, kwargs = model.example_inputs or ((), None)
        if train:
            raise ExportError("an ExportedProgram is traced already: its mode cannot change")
        train = None
    saved = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    if train is not None:
        model.train(train)
    if capture is not None and capture not in CAPTURES:
        raise ExportError("capture must be one of %s, not %r" % (", ".join(CAPTURES), capture))
    try:
        return _export(model, args, path, kwargs, dynamic_shapes, keep_inplace, source_root,
                       input_names, output_names, dynamic_axes, save_reference, capture)
    finally:
        for m, mode in saved:
            m.training = mode


def training_flag(training):
    """True (train), False (eval) or None (keep the model's mode) from
    torch.onnx.TrainingMode, a bool, None or "eval"/"train"/"training"/
    "preserve"."""
    if training is None or isinstance(training, bool):
        return training
    key = str(getattr(training, "name", training)).lower()
    table = {"eval": False, "train": True, "training": True, "preserve": None}
    if key not in table:
        raise ExportError("training must be a torch.onnx.TrainingMode, a bool or one of "
                          "'eval', 'train', 'preserve', not %r" % (training,))
    return table[key]


def _export(model, args, path, kwargs, dynamic_shapes, keep_inplace, source_root,
            input_names, output_names, dynamic_axes, save_reference, capture=None):
    global last_capture
    if not isinstance(args, tuple):
        args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    expected = _eager_outputs(model, args, kwargs) if save_reference else None
    input_names = list(input_names or [])
    output_names = list(output_names or [])
    leaf_names = []
    for n, v, _ in _bind_inputs(model, args, kwargs):
        _flatten(n, v, leaf_names)
    leaf_names = [n for n, _ in leaf_names]
    renamed = _check_names(input_names, output_names, leaf_names)
    output_dims = {}
    if dynamic_axes:
        if dynamic_shapes:
            raise ExportError("give dynamic_shapes or dynamic_axes, not both")
        dynamic_shapes, output_dims = _from_dynamic_axes(dynamic_axes, renamed, output_names)
    if _torch_version() >= (2, 1) and hasattr(torch, "export"):
        ex = _trace_torch_export(model, args, kwargs, dynamic_shapes, keep_inplace, capture)
    elif _is_program(model) or capture not in (None, "make_fx"):
        raise ExportError("torch %s has no torch.export: the capture is make_fx"
                          % torch.__version__)
    else:
        ex = _trace_make_fx(model, args, kwargs, dynamic_shapes, keep_inplace)
    if not hasattr(ex, "weights_const"):
        ex.weights_const = {}
    if input_names:
        by_leaf = {old: new for new, old in renamed.items()}
        for node, (kind, key) in list(ex.placeholders.items()):
            if kind == "input" and key in by_leaf:
                ex.placeholders[node] = (kind, by_leaf[key])
    if len(output_names) > len(ex.outputs):
        raise ExportError("output_names has %d names, the model has %d outputs"
                          % (len(output_names), len(ex.outputs)))
    ex.output_names = output_names
    ex.output_dims = output_dims
    last_capture = getattr(ex, "capture", "make_fx")
    ex.non_persistent = {("%s.%s" % (p, b)).lstrip(".") for p, mod in
                         (model.named_modules() if hasattr(model, "named_modules") else ())
                         for b in getattr(mod, "_non_persistent_buffers_set", ())}
    ex.module_name = type(model).__name__
    cls = type(model)
    ex.root_class = "%s.%s" % (cls.__module__, cls.__qualname__)
    if source_root is not None:
        ex.source_root = os.path.abspath(source_root)
    stem = os.path.splitext(path)[0]
    st_path = stem + ".safetensors"
    ex.weights_file = os.path.basename(st_path)
    printer = _Printer(ex)
    text = printer.module()
    write_safetensors(st_path, ex.weights)
    if save_reference:
        write_safetensors(stem + ".ref.safetensors",
                          _reference(ex, printer, model, args, kwargs, expected))
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
    return text


# ---------------------------------------------------------------------------
# reference data (--save-reference)

def _eager_outputs(model, args, kwargs):
    """The model's flattened outputs, run before tracing (which may touch
    buffers) on copies of the inputs."""
    copy = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v
    with torch.no_grad():
        out = model(*[copy(a) for a in args], **{k: copy(v) for k, v in (kwargs or {}).items()})
    flat = []
    _flatten_outputs(out, flat)
    return [t.detach().clone() for t in flat if isinstance(t, torch.Tensor)]


def _raw_name(printed):
    """A value name as the .fxir spells it (%x, %"a/b"), without % and quotes."""
    s = printed[1:]
    if not s.startswith('"'):
        return s
    esc = {"n": "\n", "t": "\t", "r": "\r"}

    def unescape(m):
        e = m.group(1)
        return chr(int(e[1:], 16)) if e[0] == "x" and len(e) == 3 else esc.get(e, e)
    return re.sub(r"\\(x[0-9a-fA-F]{2}|.)", unescape, s[1:-1])


def _reference(ex, printer, model, args, kwargs, expected):
    """{input.<name>, output.<name>, value.<name>: tensor} for the example."""
    leaves = []
    for n, v, _ in _bind_inputs(model, args, kwargs):
        _flatten(n, v, leaves)
    inputs = iter(t for _, t in leaves)
    ref, feed = {}, []
    for node in ex.gm.graph.nodes:
        if node.op != "placeholder":
            continue
        kind, key = ex.placeholders[node]
        if kind == "input":
            t = next(inputs).detach().clone()
            ref["input." + _raw_name(printer.names[node])] = t
        else:
            t = ex.weights_const[key] if kind == "const" else ex.weights[key]
        feed.append(t.detach().clone())
    names = printer.names

    class Capture(torch.fx.Interpreter):
        def run_node(self, node):
            val = super().run_node(node)
            if node.op != "placeholder" and node in names and isinstance(val, torch.Tensor):
                # A copy now: an in-place op later must not change it.
                ref.setdefault("value." + _raw_name(names[node]), val.detach().clone())
            return val
    with torch.no_grad():
        Capture(ex.gm).run(*feed)
    if len(expected) != len(printer.returned):
        raise ExportError("the model returned %d tensors, the graph %d outputs"
                          % (len(expected), len(printer.returned)))
    for name, t in zip(printer.returned, expected):
        ref["output." + _raw_name(name)] = t
    return {k: v for k, v in ref.items() if v.dtype in _ST_DTYPE}


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


# ---------------------------------------------------------------------------
# command line

def _load_class(spec):
    if ":" not in spec:
        raise SystemExit("--module wants path/to/file.py:ClassName")
    fn, cls = spec.rsplit(":", 1)
    name = os.path.splitext(os.path.basename(fn))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(fn)))
    mspec = importlib.util.spec_from_file_location(name, fn)
    mod = importlib.util.module_from_spec(mspec)
    sys.modules[name] = mod
    mspec.loader.exec_module(mod)
    return getattr(mod, cls)


_DTYPE_BY_NAME = {v: k for k, v in _FX_DTYPE.items()}



def example_inputs(shapes, dtypes=None):
    """Random example inputs from "2,3"-style shapes and fxir dtype names
    (f32 when not given): normal floats, random bools, integers in [0, 10).
    ValueError on an unknown dtype."""
    dtypes = dtypes or []
    inputs = []
    for i, s in enumerate(shapes):
        shape = [int(x) for x in s.split(",") if x.strip()]
        dt = _DTYPE_BY_NAME.get(dtypes[i] if i < len(dtypes) else "f32")
        if dt is None:
            raise ValueError("unknown dtype %r" % dtypes[i])
        if dt.is_floating_point:
            inputs.append(torch.randn(shape, dtype=dt))
        elif dt == torch.bool:
            inputs.append(torch.rand(shape) > 0.5)
        else:
            inputs.append(torch.randint(0, 10, shape, dtype=dt))
    return inputs

def main(argv=None):
    p = argparse.ArgumentParser(
        prog="fxir_export.py",
        description="Trace a PyTorch model and write onnxc's .fxir text plus a "
                    ".safetensors file with its parameters and buffers (same stem). "
                    "torch >= 2.1 traces with torch.export.export, older torch with "
                    "make_fx. In-place ops are kept; nothing is decomposed.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--torchvision", metavar="NAME",
                     help="a torchvision.models constructor, e.g. resnet18 "
                          "(random weights: weights=None, seeded)")
    src.add_argument("--module", metavar="FILE.py:CLASS",
                     help="a module class built with no constructor arguments")
    p.add_argument("-o", "--output", required=True, metavar="OUT.fxir",
                   help="the .fxir file; OUT.safetensors is written beside it")
    p.add_argument("--input-shape", action="append", metavar="D0,D1,...",
                   help="shape of one forward input (repeat for several); "
                        "default for --torchvision: BATCH,3,224,224")
    p.add_argument("--input-dtype", action="append", metavar="DTYPE",
                   help="dtype of the matching --input-shape (f32, i64, ...); default f32")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size for --torchvision (default 1, or 2 with --dynamic-batch: "
                        "torch 1.13 treats a size-1 dim as a constant)")
    p.add_argument("--dynamic-batch", action="store_true",
                   help="make dim 0 of every input a symbolic dim named 'batch'")
    p.add_argument("--seed", type=int, default=0, help="RNG seed for weights and inputs (default 0)")
    p.add_argument("--capture", choices=CAPTURES, default=None,
                   help="torch 2.x: trace with this capture only (default: each in turn "
                        "until one works: %s)" % ", ".join(CAPTURES))
    p.add_argument("--functionalize", action="store_true",
                   help="functionalize while tracing instead of keeping in-place ops")
    p.add_argument("--save-reference", action="store_true",
                   help="also write OUT.ref.safetensors: the example inputs (input.NAME), "
                        "PyTorch's outputs (output.NAME) and the traced graph's intermediate "
                        "values (value.NAME), as onnxc verify --ref and -bisect-accuracy= read them")
    a = p.parse_args(argv)

    torch.manual_seed(a.seed)
    if a.torchvision:
        import torchvision
        ctor = getattr(torchvision.models, a.torchvision, None)
        if ctor is None:
            raise SystemExit("torchvision.models has no %r" % a.torchvision)
        model = ctor(weights=None)
        batch = a.batch if a.batch is not None else (2 if a.dynamic_batch else 1)
        shapes = a.input_shape or ["%d,3,224,224" % batch]
    else:
        model = _load_class(a.module)()
        if not a.input_shape:
            raise SystemExit("--module needs --input-shape")
        shapes = a.input_shape
    model.eval()
    try:
        inputs = example_inputs(shapes, a.input_dtype)
    except ValueError as e:
        raise SystemExit(str(e))
    dyn = None
    if a.dynamic_batch:
        params = [n for n, _, _ in _bind_inputs(model, inputs, None)]
        dyn = {n: {0: "batch"} for n in params}
    try:
        export(model, tuple(inputs), a.output, dynamic_shapes=dyn,
               keep_inplace=not a.functionalize, save_reference=a.save_reference,
               capture=a.capture)
    except ExportError as e:
        print("fxir_export: error: %s" % e, file=sys.stderr)
        return 1
    stem = os.path.splitext(a.output)[0]
    print("wrote %s and %s%s" % (a.output, stem + ".safetensors",
                                 " and %s.ref.safetensors" % stem if a.save_reference else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
