"""The dtype matrix of check_decomps.py: every case whose tensors are f32
again with those tensors in each dtype of SWEEP.

A variant takes the case's f32 inputs (index, mask and other inputs keep
their dtypes) to the target dtype, draws values of that dtype in the
case's range (integers: the integers inside [lo, hi), at least 1 for a
positive range so that divisors stay non-zero), and keeps the literals.
PyTorch decides what is in the matrix: a variant whose eager call raises
is left out (counted as "not taken").  Then the variant is checked like
any case: onnxc's model must load and run in ONNX Runtime and match
PyTorch (exact for integers and bools, F16_RTOL / F16_ATOL for every
float result of an f16 variant).

A model ONNX Runtime refuses only for want of a CPU kernel of an op in
that dtype (its "Could not find an implementation" at load, or a kernel
that refuses the dtype at run time: ScatterND's f16 reductions, LSTM in
f64) is a skip
that names the op and the dtype: the model is valid ONNX.  Any other
refusal (a type constraint violated, a shape error) is onnxc's failure.

bf16 is not swept: ONNX Runtime's CPU provider has almost no bf16
kernels and its node binding has no bf16 tensors.

Variant ids are `CASE@DTYPE` (`abs@i32`); `-k 'abs@*'` picks them.
"""

import fnmatch
import math
import re
import zlib

SWEEP = ["f64", "f16", "i64", "i32", "i8", "u8", "bool"]
F16_RTOL = 1e-2
F16_ATOL = 1e-2
INTS = ("i64", "i32", "i16", "i8", "u8")

# Variants that fail, each with its reason (the matrix's known gaps):
# fnmatch globs of variant ids.  Some show only for some values (a
# division by a zero drawn, a quotient's rounding): one that passes counts
# as passed.
RNN_INT = ("PyTorch runs the RNN ops on integer tensors in integer arithmetic; the "
           "decompositions use ONNX's RNN, Tanh and Relu, which take floats")
# (glob of case ids, dtypes, reason)
_KNOWN = [
    ("einsum-transpose", ("bool",), "Einsum takes numbers; a list of bool operands is not cast yet"),
    ("rnn_tanh_cell*", ("i64", "i32", "i8", "u8"), RNN_INT),
    ("rnn_relu_cell", ("u8",), RNN_INT),
    ("rnn_relu.input-*", ("i64", "i32", "i8", "u8"), RNN_INT),
    ("scatter_reduce.two-sum-exclude", ("bool",), "scatter_reduce of bools subtracts, which ONNX "
                                                  "does not do on bool"),
    ("scatter_reduce.two-prod-exclude", ("bool",), "scatter_reduce of bools subtracts, which ONNX "
                                                   "does not do on bool"),
    ("istft*", ("f64",), "an f64 window over a c64 spectrum: the decomposition computes in the "
                         "window's dtype, PyTorch returns the spectrum's real dtype (f32)"),
    ("mul.Tensor-c64-f32", ("f64", "f16", "i64", "i32", "i8", "u8", "bool"),
     "a complex tensor times a real one of another precision or an integer: the complex "
     "decompositions take a real operand of the complex's own precision only"),
    ("mul.Tensor-f32-c64", ("f64", "f16", "i64", "i32", "i8", "u8", "bool"),
     "a complex tensor times a real one of another precision or an integer: the complex "
     "decompositions take a real operand of the complex's own precision only"),
    ("embedding_dense_backward*", ("bool",), "a bool gradient: the decomposition multiplies it"),
    ("_local_scalar_dense", ("f64", "f16", "i32", "i8", "u8"),
     "PyTorch returns a Python number, which the check types f32 or i64; the model keeps the "
     "tensor's dtype"),
    ("grid_sampler_3d-nearest-*", ("f16",),
     "PyTorch 2.x's f16 kernel and ONNX Runtime's GridSample round a volume's source "
     "coordinates differently: nearest takes the other neighbour for some (torch 2.x only)"),
    ("grid_sampler_2d-bicubic-*", ("f16",),
     "PyTorch 2.x's f16 bicubic kernel and ONNX Runtime's GridSample differ by more than "
     "the f16 tolerance near the border (torch 2.x only)"),
    ("item*", ("f64", "f16", "i32", "i8", "u8"),
     "PyTorch returns a Python number, which the check types f32 or i64; the model keeps the "
     "tensor's dtype"),
    ("avg_pool2d_backward*", ("i64",), "integer gradients go through ConvTranspose, which takes floats"),
    ("convolution_backward-stride-pad-dilation", ("i64",),
     "integer gradients go through ConvTranspose, which takes floats"),
]
KNOWN = {"%s@%s" % (g, dt): why for g, dts, why in _KNOWN for dt in dts}


def known(vid):
    for pattern, why in KNOWN.items():
        if fnmatch.fnmatch(vid, pattern):
            return why
    return None


def swept(case):
    """Whether `case` takes part: a PyTorch-checked case with f32 tensors,
    not one of the tables that already sweep dtypes."""
    if case.ref or case.skip or case.xfail or case.op.startswith("_operator::"):
        return False
    if case.id.startswith("promote-") or "-kw-" in case.id:
        return False
    return any(x.dtype == "f32" for x in inputs_of(case.args + list(case.kwargs.values())))


def has_op(m, op):
    """Whether the installed PyTorch has the op (the matrix needs its answers)."""
    try:
        m.torch_op(op)
    except m.Skip:
        return False
    return True


def inputs_of(args):
    out = []
    for a in args:
        if isinstance(a, list):
            out.extend(inputs_of(a))
        elif hasattr(a, "fx_type"):
            out.append(a)
    return out


def retyped(m, x, dt):
    """X `x` (f32) as dtype `dt`, its values in the same range."""
    spec = "%s[%s]" % (dt, ",".join(str(d) for d in x.shape))
    if dt == "bool":
        return m.X(spec)
    if dt in INTS:
        lo, hi = x.lo, x.hi
        if lo is None:
            lo, hi = -5, 6
        else:
            lo, hi = math.ceil(lo), math.floor(hi)
            if hi <= lo:
                hi = lo + 1
        if dt == "u8":
            lo, hi = max(lo, 0), max(hi, 1)
        if x.lo is not None and x.lo > 0:
            lo = max(lo, 1)
            hi = max(hi, lo + 1)
        return m.X(spec, lo=lo, hi=hi)
    return m.X(spec, lo=x.lo, hi=x.hi, intf=x.intf, special=x.special)


# Ops whose indices PyTorch leaves open for equal values: their integer
# variants draw distinct values.
TIE_OPEN = {"aten::topk"}


def distinct(m, x, dt):
    """X `x` as integer dtype `dt` with no two values equal."""
    n = 1
    for d in x.shape:
        n *= d
    spec = "%s[%s]" % (dt, ",".join(str(d) for d in x.shape))
    lo = 0 if dt == "u8" else -n
    return m.X(spec, lo=lo, hi=lo + 2 * n, unique=True)


def variant(m, case, dt):
    def conv(a):
        if isinstance(a, list):
            return [conv(e) for e in a]
        if hasattr(a, "fx_type") and a.dtype == "f32" and type(a) is m.X:
            if case.op in TIE_OPEN and dt in INTS:
                return distinct(m, a, dt)
            return retyped(m, a, dt)
        return a
    v = m.C(case.op, *[conv(a) for a in case.args], id="%s@%s" % (case.id, dt),
            outputs=case.outputs, shape_only=case.shape_only, opset=case.opset,
            mutated=case.mutated, dropped=case.dropped, **{k: conv(a) for k, a in case.kwargs.items()})
    v.matrix = (case.op, dt)
    v.seed = zlib.crc32(v.id.encode())   # values stay when the table grows
    v.xfail = known(v.id)
    v.strict = False   # a known gap that depends on the values drawn may not show
    return v


def variants(m, cases):
    out = []
    for case in cases:
        if swept(case) and has_op(m, case.op):
            out.extend(variant(m, case, dt) for dt in SWEEP)
    return out


# ONNX Runtime's words for a kernel it lacks: at load, or at run time for
# a dtype the op's kernel refuses (ScatterND's f16 reductions, f64 LSTM).
NO_KERNEL = [
    re.compile(r"Could not find an implementation for (\w+)\(\d+\)"),
    re.compile(r"while running (\w+) node\..*(?:data type is not supported with|"
               r"does not support double)"),
]


# The onnx checker's words for an input whose dtype the op's schema does
# not take (MaxPool on i32 and i64): the model is not valid ONNX, and ONNX
# Runtime refuses to load it.
NO_TYPE = re.compile(r"op_type:(\w+),.*typestr: \w+, has unsupported type: tensor\((\w+)\)")
ONNX_TYPES = {"double": "f64", "float16": "f16", "int64": "i64", "int32": "i32",
              "int8": "i8", "uint8": "u8", "bool": "bool"}


def type_refused(message, dtype):
    """The op whose schema refuses the variant's own dtype, from the
    checker's error, or None (another dtype: onnxc's doing, a failure)."""
    mo = NO_TYPE.search(message)
    if mo and ONNX_TYPES.get(mo.group(2)) == dtype:
        return mo.group(1)
    return None


def kernel_missing(message):
    """The op ONNX Runtime has no kernel for, from its error, or None."""
    for rx in NO_KERNEL:
        mo = rx.search(message)
        if mo:
            return mo.group(1)
    return None


class Summary:
    """Per-op counts of the variants: checked (PyTorch takes the dtype),
    passed, skipped for want of a kernel (with the ops and dtypes),
    known failures, failures."""

    def __init__(self):
        self.ops = {}
        self.no_kernel = {}   # (onnx op, dtype) -> aten ops
        self.no_type = {}     # (onnx op, dtype) -> aten ops

    def row(self, op):
        return self.ops.setdefault(op, {"dtypes": set(), "checked": 0, "passed": 0,
                                        "skipped": 0, "known": 0, "failed": 0, "not taken": 0})

    def count(self, case, what, onnx_op=None, no_type=False):
        op, dt = case.matrix
        r = self.row(op)
        r[what] += 1
        if what != "not taken":
            r["checked"] += 1
            r["dtypes"].add(dt)
        if onnx_op:
            (self.no_type if no_type else self.no_kernel).setdefault((onnx_op, dt), set()).add(op)

    def lines(self):
        out = ["dtype matrix (%s; variants of the f32 cases):" % " ".join(SWEEP),
               "  %-44s %7s %6s %7s %5s %6s  %s" % ("op", "checked", "passed", "no-kern",
                                                    "known", "failed", "dtypes")]
        tot = dict.fromkeys(("checked", "passed", "skipped", "known", "failed", "not taken"), 0)
        for op in sorted(self.ops):
            r = self.ops[op]
            for k in tot:
                tot[k] += r[k]
            if not r["checked"]:
                continue
            dts = " ".join(d for d in SWEEP if d in r["dtypes"])
            out.append("  %-44s %7d %6d %7d %5d %6d  %s" % (op[6:], r["checked"], r["passed"],
                                                            r["skipped"], r["known"], r["failed"], dts))
        for (onnx_op, dt), ops in sorted(self.no_kernel.items()):
            out.append("  no ONNX Runtime CPU kernel: %s in %s (the model is valid ONNX; %s)"
                       % (onnx_op, dt, ", ".join(sorted(o[6:] for o in ops))))
        for (onnx_op, dt), ops in sorted(self.no_type.items()):
            out.append("  no ONNX type: %s takes no %s (its schema; the model does not load; %s)"
                       % (onnx_op, dt, ", ".join(sorted(o[6:] for o in ops))))
        out.append("dtype matrix: %d ops, %d variants checked: %d passed, %d skipped (no kernel "
                   "or no ONNX type), "
                   "%d known failures, %d failed; %d not taken by PyTorch"
                   % (sum(1 for r in self.ops.values() if r["checked"]), tot["checked"],
                      tot["passed"], tot["skipped"], tot["known"], tot["failed"], tot["not taken"]))
        return out
