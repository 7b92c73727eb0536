"""Cases of check_decomps.py for decomps/torch2_math.fxir: erfc, erfcx,
exp2, signbit, ldexp, logcumsumexp, histc, var_mean/std_mean, dist, the
determinants (det, slogdet, logdet), the
copy forms of views (narrow_copy, unbind_copy, as_strided_copy),
new_empty_strided and torch 2.x's batch norm entry points.

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X, f, i, b, Lit, DT) and takes the returned list.  The f32 cases run
again in the other dtypes (test/decomp/dtype_matrix.py): PyTorch decides
which it takes (erfc, exp2, signbit and ldexp take integers and bools,
histc, logcumsumexp, var_mean and dist floats only).  Ops the installed
PyTorch lacks (special_erfcx's f16, _batch_norm_with_update before 2.3)
are skipped.
"""

import numpy as np


def cases(m):
    C, X, f, i, b, DT = m.C, m.X, m.f, m.i, m.b, m.DT
    torch = m.torch
    strided, cpu, POS = m.STRIDED, m.CPU, m.POS
    OLD = torch.__version__.startswith("1.")
    OLD_LDEXP = ("PyTorch 1.13's ldexp is self * pow(2.0, other): powers of 2 in f32, an f16 self "
                 "promoted to f32; the decomposition follows 2.x (exact for a float self)") if OLD else None
    OLD_NAN_HISTC = "PyTorch 1.13's histc counts a nan in the first bin (2.x leaves it out, as the decomposition)"

    class Zeros(X):
        """Floats whose first elements are -0.0 and 0.0 (signbit)."""

        def make(self, rng):
            arr = X.make(self, rng)
            flat = arr.reshape(-1)
            flat[:2] = np.array([-0.0, 0.0], dtype=arr.dtype)
            return arr

    out = []
    A = out.extend

    # -- erfc, erfcx: the series (|x| < 2), the continued fraction (|x| >=
    #    2, up to 1e6), erfc's underflow and erfcx's overflow for x < 0,
    #    nan and the infinities --
    A([
        C("aten::erfc", f("f32[4,6]", lo=-3.0, hi=3.0)),
        C("aten::erfc", f("f32[4,6]", lo=1.5, hi=2.5), id="erfc-switch"),
        C("aten::erfc", f("f32[4,6]", lo=2.0, hi=12.0), id="erfc-tail"),
        C("aten::erfc", f("f32[4,6]", lo=-12.0, hi=-2.0), id="erfc-negative"),
        C("aten::erfc", f("f32[8]", special=True), id="erfc-special"),
        C("aten::erfc", X("f64[4,6]", lo=-6.0, hi=28.0), id="erfc-f64-wide"),
        C("aten::erfc", i("i64[2,3]", lo=-4, hi=5), id="erfc-i64"),
        C("aten::special_erfcx", f("f32[4,6]", lo=-3.0, hi=3.0)),
        C("aten::special_erfcx", f("f32[4,6]", lo=1.5, hi=2.5), id="special_erfcx-switch"),
        C("aten::special_erfcx", f("f32[4,6]", lo=2.0, hi=30.0), id="special_erfcx-tail"),
        C("aten::special_erfcx", f("f32[4,6]", lo=30.0, hi=1e6), id="special_erfcx-far"),
        C("aten::special_erfcx", f("f32[4,6]", lo=-9.3, hi=-2.0), id="special_erfcx-negative"),
        C("aten::special_erfcx", f("f32[4,6]", lo=-30.0, hi=-9.5), id="special_erfcx-overflow"),
        C("aten::special_erfcx", f("f32[8]", special=True), id="special_erfcx-special"),
        C("aten::special_erfcx", X("f64[4,6]", lo=-26.0, hi=1e3), id="special_erfcx-f64-wide"),
        C("aten::special_erfcx", X("f64[4,6]", lo=-2.5, hi=2.5), id="special_erfcx-f64-switch"),
    ])

    # -- exp2, ldexp, signbit --
    A([
        C("aten::exp2", f("f32[3,4]", lo=-20.0, hi=20.0)),
        C("aten::exp2", f("f32[6]", special=True), id="exp2-special"),
        C("aten::exp2", i("i64[2,3]", lo=-10, hi=10), id="exp2-i64"),
    ])
    L = dict(skip=OLD_LDEXP)
    A([
        C("aten::ldexp.Tensor", f("f32[3,4]"), i("i64[3,4]", lo=-20, hi=20), **L),
        C("aten::ldexp.Tensor", f("f32[3,4]"), f("f32[4]", lo=-3.0, hi=3.0), id="ldexp.Tensor-float-exp", **L),
        C("aten::ldexp.Tensor", f("f32[3,4]", lo=1e-30, hi=2e-30), i("i64[4]", lo=190, hi=200),
          id="ldexp.Tensor-past-f32", **L),
        C("aten::ldexp.Tensor", f("f32[3,4]", intf=True), i("i64[4]", lo=1990, hi=2010),
          id="ldexp.Tensor-huge", **L),
        C("aten::ldexp.Tensor", X("f64[3,4]", lo=1e-300, hi=2e-300), i("i64[4]", lo=1990, hi=2010),
          id="ldexp.Tensor-f64-past", **L),
        C("aten::ldexp.Tensor", X("f16[3,4]", lo=1e-3, hi=2e-3), i("i64[4]", lo=15, hi=20),
          id="ldexp.Tensor-f16-past", **L),
        C("aten::ldexp.Tensor", i("i64[3,4]"), X("i32[3,4]", lo=0, hi=8), id="ldexp.Tensor-int", **L),
        C("aten::ldexp.Tensor", i("i64[3,4]", lo=0, hi=3), X("i32[4]", lo=120, hi=140),
          id="ldexp.Tensor-int-past", **L),
        C("aten::ldexp.Tensor", f("f32[3]"), X("f64[3]", lo=-4.0, hi=4.0), id="ldexp.Tensor-f32-f64", **L),
        C("aten::ldexp.Tensor", X("f16[3]"), f("f32[3]", lo=-4.0, hi=4.0), id="ldexp.Tensor-f16-f32", **L),
        # (no power past f16's range: ONNX Runtime's CPU provider multiplies f16 in f32
        # and fuses the power's f64 -> f16 -> f32 casts, so 2^17 stays finite there)
        C("aten::ldexp.Tensor", f("f32[3]", intf=True), X("f16[3]", lo=5.0, hi=15.0),
          id="ldexp.Tensor-f32-f16", **L),
    ])
    A([
        C("aten::signbit", f("f32[3,4]")),
        C("aten::signbit", Zeros("f32[6]"), id="signbit-zeros"),
        C("aten::signbit", Zeros("f64[6]"), id="signbit-zeros-f64"),
        C("aten::signbit", Zeros("f16[6]"), id="signbit-zeros-f16"),
        C("aten::signbit", f("f32[6]", special=True), id="signbit-special"),
    ])

    # -- logcumsumexp: the scan (static dims, values far apart), a 0-d
    #    tensor, infinities --
    A([
        C("aten::logcumsumexp", f("f32[3,5]"), 1),
        C("aten::logcumsumexp", f("f32[7,2,3]"), 0, id="logcumsumexp-dim0"),
        C("aten::logcumsumexp", f("f32[2,9]"), -1, id="logcumsumexp-neg-dim"),
        C("aten::logcumsumexp", f("f32[2,16]", lo=-300.0, hi=300.0), 1, id="logcumsumexp-wide"),
        C("aten::logcumsumexp", f("f32[1,4]"), 0, id="logcumsumexp-one"),
        C("aten::logcumsumexp", f("f32[]"), 0, id="logcumsumexp-0d"),
        C("aten::logcumsumexp", f("f32[2,0]"), 1, id="logcumsumexp-empty"),
        C("aten::logcumsumexp", f("f32[10]", special=True), 0, id="logcumsumexp-special"),
        C("aten::logcumsumexp", f("f32[3,5]"), 1, opset=17, id="logcumsumexp-opset17"),
    ])

    # -- histc: given range (integer values on bin edges, values outside),
    #    the data's range, one value (range +-1) --
    A([
        C("aten::histc", f("f32[50]"), 10, -2.0, 2.0),
        C("aten::histc", f("f32[6,5]", intf=True), 7, -3, 4, id="histc-edges"),
        C("aten::histc", f("f32[6,5]", intf=True), 3, -1, 1, id="histc-outside"),
        C("aten::histc", f("f32[40]"), id="histc-default"),
        C("aten::histc", f("f32[5,8]"), 6, id="histc-data-range"),
        C("aten::histc", f("f32[4]", lo=2.0, hi=2.0), 4, id="histc-one-value"),
        C("aten::histc", f("f32[4,5]", intf=True), 5, 1.0, 1.0, id="histc-equal-bounds"),
        C("aten::histc", f("f32[8]", special=True), 4, -1, 1, id="histc-special",
          skip=OLD_NAN_HISTC if OLD else None),
        C("aten::histc", f("f32[30]"), 4, -1, 1, opset=17, id="histc-opset17"),
    ])

    # -- var_mean, std_mean: correction, dims, keepdim; unbiased overloads --
    for op in ("var_mean", "std_mean"):
        A([
            C("aten::%s.correction" % op, f("f32[3,4,5]")),
            C("aten::%s.correction" % op, f("f32[3,4,5]"), [1], correction=None, id="%s.correction-dim" % op),
            C("aten::%s.correction" % op, f("f32[3,4,5]"), [0, 2], correction=0, keepdim=True,
              id="%s.correction-dims-keepdim" % op),
            C("aten::%s.correction" % op, f("f32[3,4]"), None, correction=2, keepdim=True,
              id="%s.correction-all-keepdim" % op),
            C("aten::%s.correction" % op, f("f32[3,4]"), [-1], correction=0.5,
              id="%s.correction-float" % op),
            C("aten::%s" % op, f("f32[3,4]")),
            C("aten::%s" % op, f("f32[3,4]"), False, id="%s-biased" % op),
            C("aten::%s.dim" % op, f("f32[3,4,2]"), [0, 2]),
            C("aten::%s.dim" % op, f("f32[3,4,2]"), [1], False, True, id="%s.dim-biased-keepdim" % op),
            C("aten::%s.correction" % op, f("f32[3,4]"), [1], correction=1, opset=17,
              id="%s.correction-opset17" % op),
        ])

    # -- determinants (ONNX's Det; the LU results dropped, as a trace does) --
    A([
        C("aten::_linalg_det", f("f32[3,3]"), dropped=[1, 2]),
        C("aten::_linalg_det", f("f32[2,4,4]"), dropped=[1, 2], id="_linalg_det-batched"),
        C("aten::_linalg_det", f("f32[0,0]"), dropped=[1, 2], id="_linalg_det-0x0"),
        C("aten::_linalg_det", f("f32[1,1]"), dropped=[1, 2], id="_linalg_det-1x1"),
        C("aten::linalg_det", f("f32[2,3,3]")),
        C("aten::det", f("f32[4,4]")),
        C("aten::_linalg_slogdet", f("f32[2,3,3]"), dropped=[2, 3]),
        C("aten::_linalg_slogdet", f("f32[0,0]"), dropped=[2, 3], id="_linalg_slogdet-0x0"),
        C("aten::linalg_slogdet", f("f32[4,4]")),
        C("aten::slogdet", f("f32[3,2,2]")),
        # negative determinants give NaN
        C("aten::logdet", f("f32[5,3,3]")),
        C("aten::logdet", f("f32[0,0]"), id="logdet-0x0"),
        C("aten::logdet", f("f32[4,1,1]", lo=0.2, hi=3.0), id="logdet-positive"),
    ])

    # -- dist --
    A([
        C("aten::dist", f("f32[3,4]"), f("f32[3,4]")),
        C("aten::dist", f("f32[3,4]"), f("f32[4]"), 1, id="dist-p1-broadcast"),
        C("aten::dist", f("f32[3,4]"), f("f32[3,4]"), 3.5, id="dist-p3.5"),
        C("aten::dist", f("f32[3,4]"), f("f32[3,4]"), float("inf"), id="dist-inf"),
        C("aten::dist", f("f32[3,4]"), f("f32[3,4]"), float("-inf"), id="dist-neginf"),
        C("aten::dist", f("f32[3,4]", intf=True), f("f32[3,4]", intf=True), 0, id="dist-p0"),
        C("aten::dist", f("f32[3]"), X("f64[3]"), id="dist-f32-f64"),
    ])

    # -- narrow_copy, unbind_copy, as_strided_copy, new_empty_strided --
    A([
        C("aten::narrow_copy", f("f32[5,4]"), 0, 1, 3),
        C("aten::narrow_copy", f("f32[3,6]"), -1, -4, 2, id="narrow_copy-neg"),
        C("aten::unbind_copy.int", f("f32[3,4]")),
        C("aten::unbind_copy.int", f("f32[2,3,4]"), -1, id="unbind_copy.int-last"),
        C("aten::unbind_copy.int", f("f32[2,5]"), 1, id="unbind_copy.int-dim1"),
        C("aten::as_strided_copy", f("f32[4,6]"), [6, 4], [4, 1], id="as_strided_copy-view"),
        C("aten::as_strided_copy", f("f32[4,6]"), [3, 3], [6, 2], 1, id="as_strided_copy-offset"),
        C("aten::as_strided_copy", f("f32[10]"), [4, 3], [2, 1], id="as_strided_copy-overlap"),
        C("aten::new_empty_strided", f("f32[2,3]"), [4, 5], [5, 1], shape_only=True),
        C("aten::new_empty_strided", f("f32[2,3]"), [3], [1], dtype=DT("i64"), layout=strided,
          device=cpu, pin_memory=False, shape_only=True, id="new_empty_strided-kw"),
    ])

    # -- torch 2.x's batch norm: training with update (the normalized
    #    output and the batch statistics; the running ones' update is not
    #    written back), its functional form (the updated statistics too),
    #    eval without update --
    A([
        C("aten::_batch_norm_with_update", f("f32[4,3,5]"), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **POS), 0.1, 1e-5),
        C("aten::_batch_norm_with_update", f("f32[2,3,4,4]"), None, None, f("f32[3]"),
          f("f32[3]", **POS), 0.3, 1e-3, id="_batch_norm_with_update-noaffine"),
        C("aten::_batch_norm_with_update", X("f16[4,3,5]"), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **POS), 0.1, 1e-5, id="_batch_norm_with_update-f16-f32"),
        C("aten::_batch_norm_with_update_functional", f("f32[4,3,5]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]"), f("f32[3]", **POS), 0.1, 1e-5),
        C("aten::_batch_norm_with_update_functional", f("f32[2,3,3,3]"), None, f("f32[3]"),
          f("f32[3]"), f("f32[3]", **POS), 0.2, 1e-5, id="_batch_norm_with_update_functional-nobias"),
        C("aten::_batch_norm_no_update", f("f32[4,3,5]"), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **POS), 0.1, 1e-5),
        C("aten::_batch_norm_no_update", X("f16[4,3,5]"), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **POS), 0.1, 1e-5, id="_batch_norm_no_update-f16-f32"),
        C("aten::_batch_norm_no_update", f("f32[2,3,4,4]"), None, None, f("f32[3]"),
          f("f32[3]", **POS), 0.1, 1e-5, id="_batch_norm_no_update-noaffine"),
    ])
    return out
