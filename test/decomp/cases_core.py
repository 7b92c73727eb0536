"""Cases of check_decomps.py for decomps/core_*.fxir: the overloads of
PyTorch's core ATen opset (test/decomp/core_aten.txt) the rest of the
library leaves out, and the ops real models meet beyond it (glu, padding
modes, scatter_reduce, embedding_bag, grid_sampler_2d...).

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X, f, i, b, Lit, DT) and takes the returned list.
"""

import numpy as np


def cases(m):
    C, X, f, i, b, DT = m.C, m.X, m.f, m.i, m.b, m.DT
    POS = dict(lo=0.2, hi=3.0)
    out = []
    A = out.extend

    # -- core_elementwise.fxir --
    A([
        C("aten::atan2", f("f32[3,4]"), f("f32[3,4]")),
        C("aten::atan2", f("f32[3,4]", intf=True), f("f32[3,4]", intf=True), id="atan2-zeros"),
        C("aten::atan2", f("f64[3,4]"), f("f64[4]"), id="atan2-f64-broadcast",
          xfail="ONNX Runtime's CPU Atan takes f32 only; the model is valid ONNX"),
        C("aten::atan2", f("f32[3,4]"), f("f32[4]"), id="atan2-broadcast"),
        C("aten::atan2", i("i64[3,4]"), i("i64[3,4]"), id="atan2-i64"),
        C("aten::atan2.out", f("f32[3,4]"), f("f32[3,4]"), out=f("f32[3,4]"),
          skip="functionalize adds the written `out` as a second result of the model; "
               "the harness builds one call with PyTorch's results (lit checks the lowering)"),
        C("aten::div.Scalar_mode", f("f32[4,5]", lo=-9, hi=9), 1.5, rounding_mode="floor"),
        C("aten::div.Scalar_mode", f("f32[4,5]", lo=-9, hi=9), -1.5, rounding_mode="trunc",
          id="div.Scalar_mode-trunc"),
        C("aten::div.Scalar_mode", i("i64[4,5]", lo=-20, hi=20), 3, rounding_mode="floor",
          id="div.Scalar_mode-floor-i64"),
        C("aten::div.Scalar_mode", f("f32[4,5]"), 2.0, rounding_mode=None, id="div.Scalar_mode-none"),
        C("aten::bitwise_and.Scalar", b(), True, ref=np_bitwise(np.logical_and)),
        C("aten::bitwise_or.Scalar", b(), False, ref=np_bitwise(np.logical_or)),
        C("aten::bitwise_xor.Scalar", b(), True, ref=np_bitwise(np.logical_xor)),
        C("aten::bitwise_and.Scalar", i(), 3, id="bitwise_and.Scalar-i64",
          xfail="ONNX And/Or/Xor take bool only (Bitwise* take no bool): needs a dtype guard the decompose pass lacks"),
        C("aten::copy", f("f32[2,3]"), f("f32[2,3]")),
        C("aten::copy", f("f32[2,3]"), i("i64[3]"), id="copy-broadcast-cast"),
        C("aten::glu", f("f32[2,6]")),
        C("aten::glu", f("f32[4,3,2]"), 0, id="glu-dim0"),
        C("aten::glu", f("f64[2,4,6]"), -2, id="glu-neg-f64"),
        C("aten::any.dims", b("f32[3,4,5]"), [0, 2], ref=np_any_dims),
        C("aten::any.dims", b("f32[3,4,5]"), [-1], True, ref=np_any_dims, id="any.dims-keepdim"),
        C("aten::any.dims", f("f32[3,4]", intf=True, lo=0, hi=2), ref=np_any_dims, id="any.dims-all"),
        C("aten::var.correction", f("f32[3,4]"), [1], correction=None, id="var.correction-default"),
        C("aten::var.correction", f("f32[3,4,5]"), [0, 2], correction=2, keepdim=True,
          id="var.correction-2-keepdim"),
        C("aten::var.correction", f("f32[3,4]"), None, correction=None, id="var.correction-all"),
        C("aten::var.correction", f("f64[3,4]"), None, correction=1, keepdim=True,
          id="var.correction-all-keepdim-f64"),
        C("aten::var.dim", f("f32[3,4]"), [1]),
        C("aten::var.dim", f("f32[3,4,5]"), [-1, 0], False, True, id="var.dim-biased-keepdim"),
    ])
    out.extend(nn_cases(m))
    return out


def np_any_dims(x, dim=None, keepdim=False):
    """aten::any.dims (PyTorch 2.2)."""
    axes = None if dim is None else tuple(dim)
    return np.any(x != 0, axis=axes, keepdims=keepdim)


def np_bitwise(fn):
    """bitwise_*.Scalar of a bool tensor and a bool: bool, as torch.result_type
    says (PyTorch 1.13's .Scalar overloads return i64 there)."""
    return lambda x, other: fn(x, other)


def nn_cases(m):
    C, X, f, i = m.C, m.X, m.f, m.i
    out = []
    A = out.extend
    for name, mode in (("reflection", "reflect"), ("replication", "edge")):
        A([
            C("aten::%s_pad1d" % name, f("f32[2,3,6]"), [2, 1]),
            C("aten::%s_pad1d" % name, f("f32[3,6]"), [0, 3], id="%s_pad1d-2d" % name),
            C("aten::%s_pad2d" % name, f("f32[1,2,5,6]"), [1, 2, 3, 0]),
            C("aten::%s_pad2d" % name, f("f64[2,4,5]"), [2, 2, 1, 1], id="%s_pad2d-3d-f64" % name),
            C("aten::%s_pad3d" % name, f("f32[1,2,3,4,5]"), [1, 0, 2, 1, 1, 1]),
        ])
    A([
        C("aten::_adaptive_avg_pool3d", f("f32[1,2,5,6,7]"), [2, 3, 4]),
        C("aten::_adaptive_avg_pool3d", f("f32[2,4,4,4]"), [1, 1, 1], id="_adaptive_avg_pool3d-unbatched-global"),
        C("aten::_adaptive_avg_pool3d", f("f32[1,1,3,2,2]"), [5, 3, 2], id="_adaptive_avg_pool3d-up"),
        C("aten::adaptive_avg_pool3d", f("f32[1,2,6,6,6]"), [2, 2, 2]),
    ])
    for interp in (0, 1, 2):
        for pad in (0, 1, 2):
            for corners in (False, True):
                tag = "grid_sampler_2d-%s-%s%s" % (("bilinear", "nearest", "bicubic")[interp],
                                                   ("zeros", "border", "reflection")[pad],
                                                   "-corners" if corners else "")
                A([C("aten::grid_sampler_2d", f("f32[2,3,5,6]"), f("f32[2,4,3,2]", lo=-1.3, hi=1.3),
                     interp, pad, corners, id=tag)])
    A([
        C("aten::grid_sampler_2d", f("f32[1,2,4,4]"), f("f32[1,3,3,2]", lo=-1.1, hi=1.1), 0, 0, False,
          opset=20, id="grid_sampler_2d-opset20"),
        C("aten::grid_sampler_2d", f("f32[1,2,4,4]"), f("f32[1,3,3,2]", lo=-1.1, hi=1.1), 2, 1, True,
          opset=20, id="grid_sampler_2d-bicubic-opset20"),
        C("aten::grid_sampler_2d", f("f32[1,2,4,4]"), f("f32[1,3,3,2]", lo=-1.1, hi=1.1), 0, 2, False,
          opset=17, id="grid_sampler_2d-opset17"),
    ])
    W = "f32[2,3,4,5]"
    RV = dict(lo=0.2, hi=3.0)
    A([
        C("aten::_native_batch_norm_legit", f(W), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **RV), True, 0.1, 1e-5, ref=torch_batch_norm(True)),
        C("aten::_native_batch_norm_legit", f("f32[4,3]"), None, f("f32[3]"), f("f32[3]"),
          f("f32[3]", **RV), True, 0.1, 1e-3, ref=torch_batch_norm(True), id="_native_batch_norm_legit-2d-nobias"),
        C("aten::_native_batch_norm_legit", f(W), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **RV), False, 0.1, 1e-5, outputs=[0], ref=torch_batch_norm(True),
          id="_native_batch_norm_legit-eval"),
        C("aten::_native_batch_norm_legit.no_stats", f(W), f("f32[3]"), f("f32[3]"), True, 0.1, 1e-5,
          ref=torch_batch_norm(False)),
        C("aten::_native_batch_norm_legit.no_stats", f("f64[3,2,7]"), None, None, True, 0.1, 1e-5,
          ref=torch_batch_norm(False), id="_native_batch_norm_legit.no_stats-3d-f64"),
        C("aten::_native_batch_norm_legit_no_training", f(W), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **RV), 0.1, 1e-5, outputs=[0], ref=torch_batch_norm(True, False),
          id="_native_batch_norm_legit_no_training-ref"),
    ])
    for p in (2.0, 1.0, 0.0, 3.0, float("inf")):
        A([C("aten::_cdist_forward", f("f32[4,3]", intf=True), f("f32[5,3]", intf=True), p, None,
             id="_cdist_forward-p%s" % p),
           C("aten::_pdist_forward", f("f32[5,3]", intf=True), p, id="_pdist_forward-p%s" % p)])
    A([
        C("aten::_cdist_forward", f("f32[2,4,3]"), f("f32[2,5,3]"), 2.0, None, id="_cdist_forward-batch"),
        C("aten::_pdist_forward", f("f32[6,4]"), id="_pdist_forward-default"),
    ])
    fixed = fixed_input(m)
    W10 = "f32[10,3]"
    IDX = i("i64[8]", lo=0, hi=10)
    A([
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[3]", [0, 3, 5]), outputs=[0]),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[4]", [0, 3, 3, 8]), False, 1, outputs=[0],
          id="_embedding_bag-mean-empty"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[3]", [0, 2, 2]), False, 2, outputs=[0],
          id="_embedding_bag-max-empty"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[4]", [0, 1, 4, 8]), False, 0, False, None,
          True, outputs=[0], id="_embedding_bag-include_last_offset"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[2]", [0, 5]), False, 0, False,
          f("f32[8]"), outputs=[0], id="_embedding_bag-per_sample_weights"),
        C("aten::_embedding_bag", f(W10), fixed("i64[6]", [1, 2, 2, 0, 2, 3]), fixed("i64[2]", [0, 3]),
          False, 1, False, None, False, 2, outputs=[0], id="_embedding_bag-mean-padding_idx"),
        C("aten::embedding_bag.padding_idx", f(W10), IDX, fixed("i64[3]", [0, 4, 6]), False, 0, False,
          None, False, 4, outputs=[0]),
        C("aten::embedding_bag", f(W10), IDX, fixed("i64[3]", [0, 4, 6]), False, 1, outputs=[0]),
    ])
    return out


def fixed_input(m):
    """A graph input with given values: `fixed("i64[3]", [0, 3, 5])`."""
    class Fixed(m.X):
        def __init__(self, spec, values):
            super().__init__(spec)
            self.values = values

        def make(self, rng):
            return np.array(self.values, dtype=m.DTYPES[self.dtype][0]).reshape(self.shape)
    return Fixed


def torch_batch_norm(stats, training=None):
    """PyTorch's native_batch_norm standing for the _native_batch_norm_legit
    overloads (PyTorch 2.0), which torch 1.13 lacks: with running statistics
    (`stats`) or without, in training mode unless `training` is False."""
    import torch

    def ref(x, w, b, *rest):
        t = lambda a: None if a is None else torch.from_numpy(a.copy())
        if stats:
            rm, rv, rest = rest[0], rest[1], rest[2:]
        else:
            rm = rv = None
        if training is False:
            momentum, eps = rest
            train = False
        else:
            train, momentum, eps = rest
        y = torch.ops.aten.native_batch_norm(t(x), t(w), t(b), t(rm), t(rv), train, momentum, eps)
        return [o.numpy() for o in y]
    return ref
