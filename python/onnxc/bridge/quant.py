"""Quantized models: PyTorch's quantized tensors rewritten as float ops
between decomposed quantize and dequantize ops (QDQ), before capture.

A model quantized in eager mode (torch.ao.quantization.convert) or FX mode
(quantize_fx.convert_fx) computes on quint8/qint8 tensors, which carry
their scale and zero point at run time and have no .fxir or ONNX dtype;
its weights hide in packed parameters.  In a statically quantized model
every scale and zero point is fixed, so `lower` rewrites the program once,
in one walk over its FX graph (the eager model traced with the quantized
modules as leaves; an FX-mode model is that graph already):

- a quantized tensor becomes the float tensor of its dequantized values,
  made by `quantized_decomposed::quantize_per_tensor` (a plain u8 or i8
  tensor) then `dequantize_per_tensor`; its (scale, zero point, dtype)
  are known to the walk, not to the tensor;
- a quantized conv or linear becomes the float op on that tensor and its
  weights dequantized (`dequantize_per_channel` of the int8 weights, their
  scales and zero points unpacked into buffers), then the requantization
  to the module's output scale; a fused ReLU comes before it;
- quantized add/mul/cat (and their ReLU forms), hardswish, average pools
  and clamps: the float op, then the requantization PyTorch's kernel does
  (to the op's scale, or to the input's for a pool or clamp);
- ops that move or select values (max pool, relu, flatten, reshape,
  dropout in eval mode) are exact on the dequantized values and keep the
  input's quantization;
- `dequantize` is its input.

decomps/quantized.fxir turns the quantize and dequantize ops into ONNX
QuantizeLinear and DequantizeLinear.  Each replacement module sits at the
path of the module it replaces, so provenance keeps the model's paths.
"""

import operator

import torch
import torch.fx
import torch.nn.functional as F

from .common import ExportError

__all__ = ["is_quantized", "lower"]

_QUANT_MODULES = ("torch.ao.nn.quantized", "torch.ao.nn.intrinsic.quantized",
                  "torch.nn.quantized", "torch.nn.intrinsic.quantized")


def _decomposed():
    import torch.ao.quantization.fx._decomposed  # noqa: F401 (registers the ops)
    return torch.ops.quantized_decomposed


def _is_quant_module(m):
    mod = type(m).__module__
    return mod.startswith(_QUANT_MODULES) and not mod.startswith(
        ("torch.ao.nn.quantized.reference", "torch.ao.nn.quantized.dynamic"))


def _quant_targets():
    q = torch.ops.quantized
    return {torch.quantize_per_tensor, torch.quantize_per_channel, q.add, q.add_relu,
            q.mul, q.mul_relu, q.cat}


def is_quantized(model):
    """Whether the model computes on quantized tensors: it holds quantized
    modules, or its FX graph calls torch.quantize_per_tensor or a
    quantized:: op."""
    if not isinstance(model, torch.nn.Module):
        return False
    if any(_is_quant_module(m) for m in model.modules()):
        return True
    if isinstance(model, torch.fx.GraphModule):
        targets = _quant_targets()
        return any(n.op == "call_function" and n.target in targets for n in model.graph.nodes)
    return False


class _Tracer(torch.fx.Tracer):
    """symbolic_trace with every quantized module a leaf (the default
    leaves, torch.nn's modules, stay leaves)."""

    def is_leaf_module(self, m, qualname):
        return _is_quant_module(m) or super().is_leaf_module(m, qualname)


def _trace(model):
    if isinstance(model, torch.fx.GraphModule):
        return model
    try:
        graph = _Tracer().trace(model)
    except Exception as e:   # noqa: BLE001 (reported with the model's name)
        raise ExportError("quantized model %s: torch.fx could not trace it (%s: %s)"
                          % (type(model).__name__, type(e).__name__, str(e).split("\n")[0])) \
            from None
    return torch.fx.GraphModule(model, graph, type(model).__name__)


# ---------------------------------------------------------------------------
# quantization parameters

_QDTYPES = {torch.quint8: (torch.uint8, 0, 255), torch.qint8: (torch.int8, -128, 127)}


class QParams:
    """A per-tensor quantization: scale, zero point and the quantized dtype."""

    def __init__(self, scale, zero_point, qdtype):
        if qdtype not in _QDTYPES:
            raise ExportError("quantized dtype %s is not supported (quint8 and qint8 are)"
                              % qdtype)
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.qdtype = qdtype

    def clamps_at_zero(self):
        """Whether quantizing clamps below at 0 (the zero point is the
        lowest value): then a ReLU before the quantization changes nothing."""
        return self.zero_point == _QDTYPES[self.qdtype][1]

    def args(self):
        dt, lo, hi = _QDTYPES[self.qdtype]
        return (self.scale, self.zero_point, lo, hi, dt)


def _qdq(x, qp):
    """The float values x takes once quantized with qp."""
    qd = _decomposed()
    q = qd.quantize_per_tensor.default(x, *qp.args())
    return qd.dequantize_per_tensor.default(q, *qp.args())


class _Requant(torch.nn.Module):
    """A float function of dequantized inputs, then quantized to qp."""

    def __init__(self, fn, qp, kwargs=None):
        super().__init__()
        self.fn, self.qp, self.kw = fn, qp, dict(kwargs or {})

    def forward(self, *args):
        return _qdq(self.fn(*args, **self.kw), self.qp)


def _f32(x):
    """x rounded to f32, as a Python float."""
    return float(torch.tensor(x, dtype=torch.float32))


class _QAddExact(torch.nn.Module):
    """quantized add (and add_relu) as PyTorch's x86 kernel computes it:
    each input dequantized as q * scale + (-zero_point * scale) with one
    rounding (a fused multiply-add, here exact in f64 then rounded to
    f32), the f32 sum, then times 1/scale in f32, rounded half to even."""

    def __init__(self, qa, qb, qp, relu):
        super().__init__()
        self.qa, self.qb, self.qp, self.relu = qa, qb, qp, relu
        self.inv_scale = _f32(1.0 / torch.tensor(qp.scale, dtype=torch.float32))

    @staticmethod
    def dequantized(x, qp, q):
        if q is None:
            q = _decomposed().quantize_per_tensor.default(x, *qp.args())
        premul = _f32(_f32(qp.scale) * -qp.zero_point)
        return (q.to(torch.float64) * _f32(qp.scale) + premul).to(torch.float32)

    def forward(self, a, b, qa=None, qb=None):
        """(the sum's integers, its dequantized values); qa, qb the
        inputs' integers when the caller has them."""
        y = self.dequantized(a, self.qa, qa) + self.dequantized(b, self.qb, qb)
        if self.relu and not self.qp.clamps_at_zero():
            y = torch.relu(y)
        y = y * self.inv_scale
        qd = _decomposed()
        unit = QParams(1.0, self.qp.zero_point, self.qp.qdtype)
        q = qd.quantize_per_tensor.default(y, *unit.args())
        return q, qd.dequantize_per_tensor.default(q, *self.qp.args())


def _weight_buffers(mod, w):
    """Register the int8 weight (and its scales and zero points) of the
    quantized weight w on mod; returns how to dequantize it."""
    mod.register_buffer("weight", w.int_repr().contiguous())
    scheme = w.qscheme()
    if scheme in (torch.per_channel_affine, torch.per_channel_symmetric):
        mod.register_buffer("weight_scale", w.q_per_channel_scales().to(torch.float32))
        mod.register_buffer("weight_zero_point", w.q_per_channel_zero_points().to(mod.weight.dtype))
        return ("channel", int(w.q_per_channel_axis()), w.dtype)
    if scheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return ("tensor", QParams(w.q_scale(), w.q_zero_point(), w.dtype))
    raise ExportError("quantized weight scheme %s is not supported" % scheme)


class _QWeighted(torch.nn.Module):
    """A quantized conv or linear, in one of two forms:

    "exact" (the default): PyTorch's x86 kernels step by step.  The
    integer accumulator sum((x_q - x_zp) * (w_q - w_zp)) is the float op
    on integer-valued tensors (exact while it stays below 2^24), then
    requantized as the kernel PyTorch picks for the layer does (see
    _uses_onednn), with m = x_scale * w_scale in f32:
      oneDNN: t = fma(acc, m, bias), t = relu(t) if fused,
              q = round(fma(t, 1 / y_scale, y_zp)): the zero point is
              added in f32 before the rounding;
      fbgemm: q = round((acc + bias / m) * (m / y_scale)) + y_zp, in f32.
    A fused multiply-add is computed in f64 (the product of two f32 is
    exact there) and rounded to f32.  Rounding is half to even.  The
    result is PyTorch's to the bit, but ONNX Runtime runs the float op.
    "qdq": the float op on the dequantized input and weights, then
    quantized to the output scale: the QDQ form ONNX Runtime fuses into
    its integer kernels (QLinearConv, QLinearMatMul), whose rounding
    differs from fbgemm's on a few values a layer.
    A fused ReLU comes before the quantization, or not at all when
    quantizing clamps at zero already."""

    def __init__(self, src, fn, relu, kwargs, form):
        super().__init__()
        self.how = _weight_buffers(self, src.weight())
        b = src.bias()
        self.bias = None if b is None else torch.nn.Parameter(b.detach().float(),
                                                              requires_grad=False)
        self.fn, self.relu, self.kw, self.form = fn, relu, kwargs, form
        self.qp = QParams(src.scale, src.zero_point, torch.quint8)
        self.qp_in = None

    def set_input(self, qp_in):
        """The input's quantization (the exact form's accumulator scale)."""
        self.qp_in = qp_in
        if self.form != "exact":
            return
        if self.how[0] == "channel":
            w_scale = self.weight_scale
        else:
            w_scale = torch.tensor([self.how[1].scale], dtype=torch.float32)
        acc_scale = torch.tensor(qp_in.scale, dtype=torch.float32) * w_scale
        # Broadcast along the output channels: dim 1 of a conv's result,
        # the last of a linear's.
        shape = [-1] + [1] * (self.weight.dim() - 2) if self.fn is not F.linear else [-1]
        y_scale = torch.tensor(self.qp.scale, dtype=torch.float32)
        self.onednn = _uses_onednn(self, qp_in)
        if self.onednn:
            self.register_buffer("acc_scale", acc_scale.reshape(shape).contiguous())
            if self.bias is not None:
                self.register_buffer("acc_bias", self.bias.detach().reshape(shape).clone())
            self.inv_scale = float(1.0 / y_scale)
        else:
            self.register_buffer("multiplier", (acc_scale / y_scale).reshape(shape).contiguous())
            if self.bias is not None:
                self.register_buffer("acc_bias",
                                     (self.bias.detach() / acc_scale).reshape(shape).contiguous())

    def dequantized_weight(self, unit=False):
        """The weight dequantized, or (unit) its integers q - zero point."""
        qd = _decomposed()
        if self.how[0] == "channel":
            dt, lo, hi = _QDTYPES[self.how[2]]
            scale = torch.ones_like(self.weight_scale) if unit else self.weight_scale
            return qd.dequantize_per_channel.default(
                self.weight, scale, self.weight_zero_point, self.how[1], lo, hi, dt)
        qp = self.how[1]
        if unit:
            qp = QParams(1.0, qp.zero_point, qp.qdtype)
        return qd.dequantize_per_tensor.default(self.weight, *qp.args())

    def forward(self, x, xq=None):
        """qdq: the dequantized output; exact: (its integers, it), xq the
        input's integers when the caller has them."""
        if self.form != "exact":
            y = self.fn(x, self.dequantized_weight(), self.bias, **self.kw)
            if self.relu and not self.qp.clamps_at_zero():
                y = torch.relu(y)
            return _qdq(y, self.qp)
        qd = _decomposed()
        unit_in = QParams(1.0, self.qp_in.zero_point, self.qp_in.qdtype)
        if xq is None:
            xq = qd.quantize_per_tensor.default(x, *self.qp_in.args())
        xi = qd.dequantize_per_tensor.default(xq, *unit_in.args())
        acc = self.fn(xi, self.dequantized_weight(unit=True), None, **self.kw)
        relu = self.relu and not self.qp.clamps_at_zero()
        if self.onednn:
            y = acc.to(torch.float64) * self.acc_scale.to(torch.float64)
            if self.bias is not None:
                y = y + self.acc_bias.to(torch.float64)
            y = y.to(torch.float32)
            if relu:
                y = torch.relu(y)
            y = (y.to(torch.float64) * self.inv_scale + float(self.qp.zero_point)).to(torch.float32)
            out = QParams(1.0, 0, self.qp.qdtype)   # the zero point is in y already
        else:
            y = acc + self.acc_bias if self.bias is not None else acc
            y = y * self.multiplier
            if relu:
                y = torch.relu(y)
            out = QParams(1.0, self.qp.zero_point, self.qp.qdtype)
        q = qd.quantize_per_tensor.default(y, *out.args())
        return q, qd.dequantize_per_tensor.default(q, *self.qp.args())


def _uses_onednn(mod, qp_in):
    """Whether PyTorch's x86 engine runs this conv with oneDNN rather than
    fbgemm (the two requantize differently): on a CPU with VNNI, for a
    conv of at most 100 groups whose weights are symmetric (zero points 0)
    and whose input's zero point is 0 (measured on torch 2.14, layer by
    layer); linears and everything else run in fbgemm."""
    vnni = getattr(torch.cpu, "_is_vnni_supported", None)
    if mod.fn is F.linear or vnni is None or not vnni():
        return False
    if mod.kw.get("groups", 1) > 100 or qp_in.zero_point != 0:
        return False
    if mod.how[0] == "channel":
        return bool((mod.weight_zero_point == 0).all())
    return mod.how[1].zero_point == 0


def _conv_fn(src):
    if getattr(src, "padding_mode", "zeros") != "zeros":
        raise ExportError("quantized conv with padding_mode=%r is not supported"
                          % src.padding_mode)
    nd = src.weight().dim() - 2
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}.get(nd)
    if fn is None:
        raise ExportError("quantized conv of %d spatial dims is not supported" % nd)
    return fn, dict(stride=tuple(src.stride), padding=tuple(src.padding),
                    dilation=tuple(src.dilation), groups=src.groups)


def _module_rule(m, form):
    """(kind, replacement) for a module called on a quantized tensor:
    kind "quantize", "dequantize", "module" (a new module computing on the
    dequantized values, returning its output's QParams via .qp), "keep"
    (exact on dequantized values: the input's QParams) or "input" (the
    float op, requantized to the input's QParams); None if unsupported."""
    import torch.ao.nn.quantized as nnq
    import torch.ao.nn.intrinsic.quantized as nniq
    nn = torch.nn
    if isinstance(m, nnq.Quantize):
        return "quantize", QParams(m.scale, m.zero_point, m.dtype)
    if isinstance(m, nnq.DeQuantize):
        return "dequantize", None
    relu_types = (nniq.ConvReLU1d, nniq.ConvReLU2d, nniq.ConvReLU3d, nniq.LinearReLU)
    if isinstance(m, (nnq.Conv1d, nnq.Conv2d, nnq.Conv3d)):
        fn, kw = _conv_fn(m)
        return "module", _QWeighted(m, fn, isinstance(m, relu_types), kw, form)
    if isinstance(m, nnq.Linear):
        return "module", _QWeighted(m, F.linear, isinstance(m, relu_types), {}, form)
    if isinstance(m, nnq.Hardswish):
        return "module", _Requant(F.hardswish, QParams(m.scale, m.zero_point, torch.quint8))
    if isinstance(m, nnq.Dropout):   # the identity in eval mode, as nn.Dropout
        return "keep", nn.Dropout(m.p)
    if isinstance(m, (nn.ReLU, nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.Identity,
                      nn.Dropout, nn.Flatten)):
        return "keep", m
    if isinstance(m, (nnq.ReLU6, nn.ReLU6, nn.Hardtanh, nn.AdaptiveAvgPool1d,
                      nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AvgPool1d, nn.AvgPool2d,
                      nn.AvgPool3d)):
        if isinstance(m, nnq.ReLU6):
            m = nn.ReLU6()
        return "input", m
    return None


# Functions and methods on quantized tensors that keep the input's
# quantization: exact on the dequantized values.
_KEEP_FUNCS = {F.relu, torch.relu, F.max_pool1d, F.max_pool2d, F.max_pool3d, torch.flatten,
               torch.reshape, torch.squeeze, torch.unsqueeze, torch.permute, torch.transpose,
               F.dropout, operator.getitem, torch.max_pool2d, torch.chunk, torch.split}
_KEEP_METHODS = {"relu", "flatten", "reshape", "view", "squeeze", "unsqueeze", "permute",
                 "transpose", "contiguous", "chunk", "split", "detach"}
# ... and those PyTorch requantizes to the input's scale (they average or
# clamp, so the result leaves the grid).
_INPUT_FUNCS = {F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d,
                F.avg_pool1d, F.avg_pool2d, F.avg_pool3d, torch.mean, F.hardtanh, F.relu6,
                torch.clamp}
_INPUT_METHODS = {"mean", "clamp"}
_AVERAGES = {F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.avg_pool1d,
             F.avg_pool2d, F.avg_pool3d, torch.mean, "mean"}
_AVERAGE_MODULES = (torch.nn.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool2d,
                    torch.nn.AdaptiveAvgPool3d, torch.nn.AvgPool1d, torch.nn.AvgPool2d,
                    torch.nn.AvgPool3d)
# Shapes and sizes of a quantized tensor are the float tensor's.
_SHAPE_FUNCS = {getattr}
_SHAPE_METHODS = {"size", "dim"}


def _quantized_ops():
    """{quantized:: op: (float function, takes a list, the function
    without its ReLU)} for the ops whose scale and zero point are
    arguments."""
    q = torch.ops.quantized

    def add_relu(a, b):
        return torch.relu(a + b)

    def mul_relu(a, b):
        return torch.relu(a * b)
    return {q.add: (torch.add, False, None), q.add_relu: (add_relu, False, torch.add),
            q.mul: (torch.mul, False, None), q.mul_relu: (mul_relu, False, torch.mul),
            q.cat: (torch.cat, True, None)}


# ---------------------------------------------------------------------------
# the walk

class _Lowering:
    def __init__(self, gm, form):
        self.gm, self.form = gm, form
        self.graph = torch.fx.Graph()
        self.env = {}      # old node -> new node (a float tensor for quantized values)
        self.qp = {}       # old node -> QParams of a quantized value
        self.root = {}     # qualified name -> module or tensor of the new GraphModule
        self.q_of = {}     # new dequantized node -> the new u8/i8 node it dequantizes
        self.qops = _quantized_ops()

    def literal(self, a, node):
        """A scale or zero point argument as a Python number: a literal or
        a get_attr of a 0-d tensor."""
        if isinstance(a, torch.fx.Node):
            if a.op != "get_attr":
                raise ExportError("quantized op %s: its scale or zero point is computed (%s), "
                                  "not a constant" % (node.format_node(), a.name))
            a = self.attr(a.target)
        if isinstance(a, torch.Tensor):
            a = a.item()
        return a

    def attr(self, target):
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    def mapped(self, a):
        return torch.fx.node.map_arg(a, lambda n: self.env[n])

    def quantized_inputs(self, node):
        found = []
        torch.fx.node.map_arg((node.args, node.kwargs),
                              lambda n: found.append(n) if n in self.qp else None)
        return found

    def copy(self, node):
        new = self.graph.node_copy(node, lambda n: self.env[n])
        if node.op in ("call_module", "get_attr"):
            self.root[node.target] = self.attr(node.target)
        return new

    def qdq(self, x, qp):
        """Nodes quantizing x with qp and dequantizing the result."""
        qd = _decomposed()
        q = self.graph.call_function(qd.quantize_per_tensor.default, (x,) + qp.args())
        dq = self.graph.call_function(qd.dequantize_per_tensor.default, (q,) + qp.args())
        self.q_of[dq] = q
        return dq

    def integers(self, old):
        """The u8/i8 tensor behind the quantized value `old` when the graph
        has it (made by a quantization here), else None: the exact form
        reads it instead of quantizing the dequantized values again."""
        return self.q_of.get(self.env[old])

    def exact_call(self, node, module, old_inputs):
        """A call of an exact-form module: its float inputs and their
        integer tensors (or None); it returns (q, dequantized)."""
        args = [self.env[o] for o in old_inputs] + [self.integers(o) for o in old_inputs]
        if node.op == "call_module":
            out = self.module_call(node, module, args)
        else:
            out = self.new_module(node, module, args)
        q = self.graph.call_function(operator.getitem, (out, 0))
        dq = self.graph.call_function(operator.getitem, (out, 1))
        self.q_of[dq] = q
        return dq

    def module_call(self, node, module, args, kwargs=None):
        self.root[node.target] = module
        return self.graph.call_module(node.target, tuple(args), dict(kwargs or {}))

    def new_module(self, node, module, args):
        """A replacement module for a call_function node, named after it."""
        name = "quantized_%s" % node.name
        self.root[name] = module
        return self.graph.call_module(name, tuple(args), {})

    def unsupported(self, node, what):
        raise ExportError("quantized model: %s on a quantized tensor is not supported (%s)"
                          % (what, node.format_node()))

    def run(self):
        for node in self.gm.graph.nodes:
            new, qp = self.lower_node(node)
            if new is not None and node.op != "output":
                new.meta.update({k: v for k, v in node.meta.items() if k == "stack_trace"})
            self.env[node] = new
            if qp is not None:
                self.qp[node] = qp
        gm = torch.fx.GraphModule(self.root, self.graph, type(self.gm).__name__)
        # The scale and zero point attributes the quantize ops read are
        # literals now.
        gm.graph.eliminate_dead_code()
        gm.recompile()
        gm.eval()
        return gm

    def lower_node(self, node):
        if node.op in ("placeholder", "get_attr", "output"):
            return self.copy(node), None
        if node.op == "call_module":
            return self.lower_module(node)
        if node.op == "call_function" and node.target in (torch.quantize_per_tensor,):
            x, scale, zp, dt = (list(node.args) + [node.kwargs.get(k) for k in
                                                     ("scale", "zero_point", "dtype")])[:4]
            qp = QParams(self.literal(scale, node), self.literal(zp, node), dt)
            return self.qdq(self.env[x], qp), qp
        if node.op == "call_function" and node.target in self.qops:
            return self.lower_qop(node)
        if (node.op == "call_function" and node.target is torch.dequantize) or (
                node.op == "call_method" and node.target == "dequantize"):
            return self.env[node.args[0]], None
        qin = self.quantized_inputs(node)
        if not qin:
            return self.copy(node), None
        target = node.target
        fn_table = node.op == "call_function"
        if (fn_table and target in _SHAPE_FUNCS) or (not fn_table and target in _SHAPE_METHODS):
            return self.copy(node), None
        if (fn_table and target in _KEEP_FUNCS) or (not fn_table and target in _KEEP_METHODS):
            return self.copy(node), self.qp[qin[0]]
        if (fn_table and target in _INPUT_FUNCS) or (not fn_table and target in _INPUT_METHODS):
            qp = self.qp[qin[0]]
            if self.form == "exact" and target in _AVERAGES:
                return self.averaged(node, qp, None), qp
            return self.qdq(self.copy(node), qp), qp
        self.unsupported(node, getattr(target, "__name__", str(target)))

    def lower_module(self, node):
        m = self.attr(node.target)
        if not self.quantized_inputs(node) and not _is_quant_module(m):
            return self.copy(node), None
        rule = _module_rule(m, self.form)
        if rule is None:
            self.unsupported(node, type(m).__name__)
        kind, obj = rule
        x = self.env[node.args[0]]
        if kind == "quantize":
            return self.qdq(x, obj), obj
        if kind == "dequantize":
            return x, None
        if node.args[0] not in self.qp:
            raise ExportError("quantized model: %s takes a quantized tensor, not a float one (%s)"
                              % (type(m).__name__, node.format_node()))
        if kind == "module":
            if isinstance(obj, _QWeighted):
                obj.set_input(self.qp[node.args[0]])
                if obj.form == "exact":
                    return self.exact_call(node, obj, [node.args[0]]), obj.qp
            return self.module_call(node, obj, [x]), obj.qp
        qp = self.qp[node.args[0]]
        if kind == "input" and self.form == "exact" and isinstance(obj, _AVERAGE_MODULES):
            return self.averaged(node, qp, obj), qp
        if kind == "keep" and isinstance(obj, (torch.nn.Identity, torch.nn.Dropout)):
            return x, qp   # the identity in eval mode: no node
        y = self.module_call(node, obj, [x])
        if kind == "keep":
            return y, qp
        return self.qdq(y, qp), qp

    def averaged(self, node, qp, module):
        """An average of a quantized tensor as PyTorch's kernels take it:
        over the integers q - zero point, rounded half to even (the float
        average of the dequantized values lands beside a tie)."""
        qd = _decomposed()
        unit = QParams(1.0, qp.zero_point, qp.qdtype)
        x = node.args[0]
        q = self.integers(x)
        if q is None:
            q = self.graph.call_function(qd.quantize_per_tensor.default, (self.env[x],) + qp.args())
        xi = self.graph.call_function(qd.dequantize_per_tensor.default, (q,) + unit.args())
        if module is not None:
            y = self.module_call(node, module, [xi])
        else:
            y = self.graph.node_copy(node, lambda n: xi if n is x else self.env[n])
        q = self.graph.call_function(qd.quantize_per_tensor.default, (y,) + unit.args())
        dq = self.graph.call_function(qd.dequantize_per_tensor.default, (q,) + qp.args())
        self.q_of[dq] = q
        return dq

    def lower_qop(self, node):
        fn, listed, without_relu = self.qops[node.target]
        names = ("qx", "scale", "zero_point", "dim") if listed else ("qa", "qb", "scale",
                                                                      "zero_point")
        bound = dict(zip(names, node.args))
        bound.update(node.kwargs)
        qp_in = self.qp.get(bound["qx"][0] if listed else bound["qa"])
        if qp_in is None:
            raise ExportError("quantized model: %s takes quantized tensors, not float ones (%s)"
                              % (node.target, node.format_node()))
        qp = QParams(self.literal(bound["scale"], node), self.literal(bound["zero_point"], node),
                     qp_in.qdtype)
        if without_relu is not None and qp.clamps_at_zero():
            fn = without_relu
        if listed:
            kw = {"dim": bound.get("dim", 0)}
            args = [self.mapped(list(bound["qx"]))]
        else:
            kw = {}
            args = [self.env[bound["qa"]], self.env[bound["qb"]]]
            qb = self.qp.get(bound["qb"])
            add = node.target in (torch.ops.quantized.add, torch.ops.quantized.add_relu)
            if self.form == "exact" and add and qb is not None:
                relu = node.target is torch.ops.quantized.add_relu
                module = _QAddExact(qp_in, qb, qp, relu)
                return self.exact_call(node, module, [bound["qa"], bound["qb"]]), qp
        return self.new_module(node, _Requant(fn, qp, kw), args), qp


def lower(model, form="exact"):
    """The float GraphModule with QDQ ops that computes what the quantized
    model does (see the module's docstring); raises ExportError naming an
    op it does not support.  form: how convs and linears are written,
    "exact" (PyTorch's x86 arithmetic, to the bit) or "qdq" (the standard
    QDQ form ONNX Runtime runs in integer kernels), see _QWeighted."""
    if form not in ("exact", "qdq"):
        raise ExportError("quantized form must be 'exact' or 'qdq', not %r" % (form,))
    gm = _trace(model)
    return _Lowering(gm, form).run()
