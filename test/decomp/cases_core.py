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
        C("aten::atan2.out", f("f32[3,4]"), f("f32[3,4]"), out=f("f32[3,4]"), mutated=1),
        C("aten::div.Scalar_mode", f("f32[4,5]", lo=-9, hi=9), 1.5, rounding_mode="floor"),
        C("aten::div.Scalar_mode", f("f32[4,5]", lo=-9, hi=9), -1.5, rounding_mode="trunc",
          id="div.Scalar_mode-trunc"),
        C("aten::div.Scalar_mode", i("i64[4,5]", lo=-20, hi=20), 3, rounding_mode="floor",
          id="div.Scalar_mode-floor-i64"),
        C("aten::div.Scalar_mode", f("f32[4,5]"), 2.0, rounding_mode=None, id="div.Scalar_mode-none"),
        C("aten::bitwise_and.Scalar", b(), True, ref=np_bitwise(np.logical_and)),
        C("aten::bitwise_or.Scalar", b(), False, ref=np_bitwise(np.logical_or)),
        C("aten::bitwise_xor.Scalar", b(), True, ref=np_bitwise(np.logical_xor)),
        C("aten::bitwise_and.Scalar", i(), 3, id="bitwise_and.Scalar-i64"),
        C("aten::bitwise_or.Scalar", X("i32[2,3]"), 6, id="bitwise_or.Scalar-i32"),
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
    out.extend(indexing_cases(m))
    out.extend(misc_cases(m))
    out.extend(grad_cases(m))
    out.extend(dtype_cases(m))
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
        C("aten::_native_batch_norm_legit_functional", f(W), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **RV), True, 0.1, 1e-5, ref=torch_batch_norm(True, updated=True),
          id="_native_batch_norm_legit_functional-train"),
        C("aten::_native_batch_norm_legit_functional", f("f64[4,3]"), None, None, f("f64[3]"),
          f("f64[3]", **RV), True, 0.3, 1e-3, ref=torch_batch_norm(True, updated=True),
          id="_native_batch_norm_legit_functional-train-2d-f64"),
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
        C("aten::col2im", f("f32[2,12,16]"), [5, 6], [2, 3], [1, 1], [0, 0], [1, 1]),
        C("aten::col2im", f("f32[1,8,20]"), [7, 7], [2, 2], [2, 1], [1, 2], [2, 2], id="col2im-dilation-pad-stride"),
        C("aten::col2im", f("f32[18,4]"), [4, 5], [3, 3], [1, 1], [1, 0], [2, 2], id="col2im-unbatched"),
        C("aten::_pdist_forward", f("f32[6,4]"), id="_pdist_forward-default"),
    ])
    fixed = fixed_input(m)
    W10 = "f32[10,3]"
    IDX = i("i64[8]", lo=0, hi=10)
    A([
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[3]", [0, 3, 5]), outputs=[0]),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[4]", [0, 3, 3, 8]), False, 1, outputs=[0],
          id="_embedding_bag-mean-empty"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[3]", [0, 2, 2]), False, 2,
          id="_embedding_bag-max-empty"),
        C("aten::_embedding_bag", f(W10), fixed("i32[7]", [3, 1, 3, 3, 0, 1, 1]), fixed("i32[3]", [0, 4, 4]),
          False, 2, id="_embedding_bag-max-repeated-i32"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[4]", [0, 3, 3, 8]), False, 2, False, None,
          True, id="_embedding_bag-max-include_last_offset"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[4]", [0, 1, 4, 8]), False, 0, False, None,
          True, outputs=[0], id="_embedding_bag-include_last_offset"),
        C("aten::_embedding_bag", f(W10), IDX, fixed("i64[2]", [0, 5]), False, 0, False,
          f("f32[8]"), outputs=[0], id="_embedding_bag-per_sample_weights"),
        C("aten::_embedding_bag", f(W10), fixed("i64[6]", [1, 2, 2, 0, 2, 3]), fixed("i64[2]", [0, 3]),
          False, 1, False, None, False, 2, outputs=[0], id="_embedding_bag-mean-padding_idx"),
        C("aten::embedding_bag.padding_idx", f(W10), IDX, fixed("i64[3]", [0, 4, 6]), False, 0, False,
          None, False, 4, outputs=[0]),
        C("aten::embedding_bag", f(W10), IDX, fixed("i64[3]", [0, 4, 6]), False, 1, outputs=[0]),
        C("aten::_pack_padded_sequence", f("f32[4,3,2]"), fixed("i64[3]", [4, 2, 1]), False),
        C("aten::_pack_padded_sequence", f("f32[3,5,2,2]"), fixed("i64[3]", [3, 3, 2]), True,
          id="_pack_padded_sequence-batch_first"),
        C("aten::_pack_padded_sequence", f("f32[6,2]"), fixed("i64[2]", [4, 4]), False,
          id="_pack_padded_sequence-short"),
        C("aten::_pad_packed_sequence", f("f32[7,2]"), fixed("i64[4]", [3, 2, 1, 1]), False, 0.0, 4),
        C("aten::_pad_packed_sequence", f("f32[7,2,3]"), fixed("i64[4]", [3, 2, 1, 1]), True, -1.5, 6,
          id="_pad_packed_sequence-batch_first-total"),
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


def torch_batch_norm(stats, training=None, updated=False):
    """PyTorch's native_batch_norm standing for the _native_batch_norm_legit
    overloads (PyTorch 2.0), which torch 1.13 lacks: with running statistics
    (`stats`) or without, in training mode unless `training` is False;
    `updated` adds the running statistics PyTorch updated in place (the
    functional form's last two results)."""
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
        rm, rv = t(rm), t(rv)
        y = torch.ops.aten.native_batch_norm(t(x), t(w), t(b), rm, rv, train, momentum, eps)
        return [o.numpy() for o in y] + ([rm.numpy(), rv.numpy()] if updated else [])
    return ref


def indexing_cases(m):
    C, X, f, i, b = m.C, m.X, m.f, m.i, m.b
    fixed = fixed_input(m)
    out = []
    A = out.extend
    A([
        C("aten::index_put", f("f32[5,4]"), [fixed("i64[3]", [0, 3, -1])], f("f32[4]")),
        C("aten::index_put", f("f32[5,4]"), [fixed("i64[3]", [1, 1, -4])], f("f32[3,4]"), True,
          id="index_put-accumulate-dup"),
        C("aten::index_put", f("f32[5,4,3]"), [fixed("i64[2,1]", [0, -1]), fixed("i64[3]", [1, 2, 3])],
          f("f32[3]"), id="index_put-two-broadcast"),
        C("aten::index_put", f("f32[5,4,3]"), [fixed("i64[2]", [0, 4]), fixed("i64[2]", [1, 2]),
                                               fixed("i64[2]", [2, 0])], f("f32[]"), True,
          id="index_put-three-accumulate"),
        C("aten::index_put", i("i64[5,4]"), [fixed("i64[2]", [2, 0])], i("i64[2,4]"), id="index_put-i64"),
        C("aten::index_put.hacked_twin", f("f32[5,4]"), [fixed("i64[2]", [4, 1])], f("f32[1]")),
    ])
    for red in ("sum", "prod", "amax", "amin", "mean"):
        for inc in (True, False):
            tag = "scatter_reduce.two-%s%s" % (red, "" if inc else "-exclude")
            A([C("aten::scatter_reduce.two", f("f32[3,5]"), 1, i("i64[3,4]", lo=0, hi=5), f("f32[3,4]"),
                 red, include_self=inc, id=tag)])
    A([
        C("aten::scatter_reduce.two", f("f32[4,3]"), 0, i("i64[2,3]", lo=0, hi=4), f("f32[2,3]"), "sum",
          opset=17, id="scatter_reduce.two-sum-opset17"),
        C("aten::scatter_reduce.two", f("f32[4,3]"), -2, i("i64[5,3]", lo=0, hi=4), f("f32[5,3]"), "amax",
          include_self=False, id="scatter_reduce.two-amax-negdim"),
        C("aten::scatter_reduce.two", i("i64[4,3]"), 0, i("i64[5,3]", lo=0, hi=4), i("i64[5,3]"), "amin",
          id="scatter_reduce.two-amin-i64"),
        C("aten::scatter.reduce", f("f32[3,5]"), 1, i("i64[3,4]", lo=0, hi=5), f("f32[3,4]"), reduce="add"),
        C("aten::scatter.reduce", f("f32[3,5]"), -1, i("i64[3,4]", lo=0, hi=5), f("f32[3,4]"), reduce="multiply",
          id="scatter.reduce-multiply-negdim"),
        C("aten::scatter.value_reduce", f("f32[3,5]"), 0, i("i64[2,5]", lo=0, hi=3), 1.5, reduce="multiply"),
        C("aten::scatter.value_reduce", i("i64[3,5]"), 1, i("i64[3,2]", lo=0, hi=5), 2, reduce="add",
          id="scatter.value_reduce-add-i64"),
        C("aten::masked_scatter", f("f32[3,4]"), b("f32[3,4]"), f("f32[12]")),
        C("aten::masked_scatter", f("f32[3,4]"), b("f32[4]"), f("f32[2,9]"), id="masked_scatter-broadcast"),
        C("aten::masked_scatter", i("i64[2,3]"), b("f32[2,3]"), i("i64[6]"), id="masked_scatter-i64"),
        C("aten::diagonal", f("f32[4,5]")),
        C("aten::diagonal", f("f32[4,5]"), 2, id="diagonal-offset"),
        C("aten::diagonal", f("f32[4,5]"), -3, id="diagonal-neg-offset"),
        C("aten::diagonal", f("f32[4,5]"), 7, id="diagonal-empty"),
        C("aten::diagonal", f("f32[4,5]"), 1, 1, 0, id="diagonal-swapped"),
        C("aten::diagonal", f("f32[2,3,4,5]"), -1, -2, -1, id="diagonal-last-4d"),
        C("aten::diagonal", f("f32[3,4,5]"), 0, 1, 2, id="diagonal-3d-12"),
        C("aten::diagonal", f("f32[2,3,4,5]"), 1, 2, 3, id="diagonal-4d-23"),
        C("aten::diagonal", f("f32[3,4,5]"), 1, id="diagonal-3d-01"),
        C("aten::diagonal", f("f32[3,4,2,5]"), -1, id="diagonal-4d-01"),
        C("aten::embedding_dense_backward", f("f32[2,3,4]"), i("i64[2,3]", lo=0, hi=7), 7, -1, False),
        C("aten::embedding_dense_backward", f("f32[6,4]"), fixed("i64[6]", [1, 2, 1, 0, 2, 2]), 4, 2, False,
          id="embedding_dense_backward-padding_idx"),
    ])
    return out


def misc_cases(m):
    C, f, i, DT = m.C, m.f, m.i, m.DT
    return [
        C("aten::sym_is_contiguous", f("f32[2,3,4]"), ref=lambda x, memory_format=None: np.array(True)),
        C("aten::sym_storage_offset", f("f32[2,3,4]")),
        C("aten::sym_stride.int", f("f32[2,3,4]"), 0),
        # torch 1.13's sym_stride.int reads a negative dim as 0 (Tensor.stride(-1) is 1)
        C("aten::sym_stride.int", f("f32[2,3,4]"), -1, ref=np_stride, id="sym_stride.int-last"),
        C("aten::sym_stride.int", f("f32[2,3,4]"), -3, ref=np_stride, id="sym_stride.int-neg"),
        C("aten::sym_stride.int", f("f32[2,3,4]"), 1, id="sym_stride.int-mid"),
        C("aten::_local_scalar_dense", f("f32[]")),
        C("aten::_local_scalar_dense", i("i64[1]"), id="_local_scalar_dense-i64-1"),
        C("aten::empty_strided", [2, 3], [3, 1], shape_only=True),
        C("aten::empty_strided", [4], [1], dtype=DT("i64"), shape_only=True, id="empty_strided-i64"),
        C("aten::rand", [2, 3], shape_only=True),
        C("aten::rand", [4], dtype=DT("f64"), shape_only=True, id="rand-f64"),
        C("aten::randn", [2, 3], shape_only=True),
        C("aten::randn", [3, 1], dtype=DT("f64"), shape_only=True, id="randn-f64"),
        # as many elements: a view of the same storage, the input unchanged
        C("aten::resize_", f("f32[2,3]"), [3, 2]),
        C("aten::resize_", f("f32[2,3]"), [4], mutated=1, id="resize_-shrink"),
        # a tensor from NumPy memory cannot grow: the shape from NumPy
        C("aten::resize_", f("f32[2,3]"), [2, 5], mutated=1, shape_only=True,
          ref=lambda x, size: np.zeros(size, x.dtype), id="resize_-grow"),
        C("aten::squeeze.dims", f("f32[1,2,1,3,1]"), [0, -1], ref=np_squeeze_dims,
          id="squeeze.dims-neg"),
        C("aten::squeeze.dims", f("f32[1,2,1,3,1]"), [0, -1, 1], ref=np_squeeze_dims,
          id="squeeze.dims-kept", xfail="squeeze.dims squeezes every listed dim; PyTorch keeps "
                                        "those of size other than 1 (docs/decompositions.md, known gaps)"),
        C("aten::_unique2", i("i64[12]", lo=0, hi=5), True, True, True),
        C("aten::_unique2", f("f32[3,4]"), True, True, False, id="_unique2-2d"),
        C("aten::_unique2", i("i64[3,4]", lo=0, hi=3), True, False, False, id="_unique2-values"),
        C("aten::_unique2", f("f32[]"), True, True, True, id="_unique2-0d"),
        C("aten::randperm", 6, shape_only=True),
        C("aten::randperm", 4, dtype=DT("i32"), shape_only=True, id="randperm-i32"),
    ]


def np_stride(x, dim):
    """The contiguous stride of `dim`, in elements."""
    return np.array(int(np.prod(x.shape[dim:][1:], dtype=np.int64)), dtype=np.int64)


def np_squeeze_dims(x, dims):
    """aten::squeeze.dims (PyTorch 2.0): dims of size other than 1 stay."""
    return np.squeeze(x, tuple(d for d in dims if x.shape[d] == 1))


def grad_cases(m):
    C, f, i = m.C, m.f, m.i
    return [
        C("aten::max_pool2d_with_indices_backward", f("f32[2,3,2,3]"), f("f32[2,3,4,6]"), [2, 2], [2, 2],
          [0, 0], [1, 1], False, i("i64[2,3,2,3]", lo=0, hi=24)),
        C("aten::max_pool2d_with_indices_backward", f("f32[3,3,3]"), f("f32[3,5,5]"), [3, 3], [2, 2],
          [1, 1], [1, 1], False, i("i64[3,3,3]", lo=0, hi=25), id="max_pool2d_with_indices_backward-3d"),
        C("aten::_adaptive_avg_pool2d_backward", f("f32[2,3,3,2]"), f("f32[2,3,7,5]")),
        C("aten::_adaptive_avg_pool2d_backward", f("f32[1,2,4,6]"), f("f32[1,2,3,3]"),
          id="_adaptive_avg_pool2d_backward-up"),
        C("aten::avg_pool2d_backward", f("f32[1,2,3,3]"), f("f32[1,2,6,6]"), [2, 2], [2, 2], [0, 0],
          False, True, None),
        C("aten::avg_pool2d_backward", f("f32[2,2,3,4]"), f("f32[2,2,6,7]"), [3, 3], [2, 2], [1, 1],
          False, True, None, id="avg_pool2d_backward-pad"),
        C("aten::avg_pool2d_backward", f("f32[2,2,3,4]"), f("f32[2,2,6,7]"), [3, 3], [2, 2], [1, 1],
          False, False, None, id="avg_pool2d_backward-exclude-pad"),
        C("aten::avg_pool2d_backward", f("f32[1,2,3,3]"), f("f32[1,2,5,5]"), [3, 3], [2, 2], [1, 1],
          False, False, None, id="avg_pool2d_backward-end-pad"),
        C("aten::avg_pool2d_backward", f("f32[1,1,3,2]"), f("f32[1,1,5,5]"), [2, 3], [], [1, 1],
          False, True, 4, id="avg_pool2d_backward-divisor-nostride"),
        C("aten::native_layer_norm_backward", f("f32[2,3,4]"), f("f32[2,3,4]"), [4], f("f32[2,3,1]"),
          f("f32[2,3,1]", lo=0.5, hi=2.0), f("f32[4]"), f("f32[4]"), [True, True, True]),
        C("aten::native_layer_norm_backward", f("f32[2,3,4]"), f("f32[2,3,4]"), [3, 4], f("f32[2,1,1]"),
          f("f32[2,1,1]", lo=0.5, hi=2.0), f("f32[3,4]"), f("f32[3,4]"), [True, True, True],
          id="native_layer_norm_backward-2d"),
        C("aten::native_layer_norm_backward", f("f32[3,4]"), f("f32[3,4]"), [3, 4], f("f32[1,1]"),
          f("f32[1,1]", lo=0.5, hi=2.0), f("f32[3,4]"), f("f32[3,4]"), [True, True, True], opset=17,
          id="native_layer_norm_backward-all-opset17"),
        C("aten::native_group_norm_backward", f("f32[2,6,3,2]"), f("f32[2,6,3,2]"), f("f32[2,3]"),
          f("f32[2,3]", lo=0.5, hi=2.0), f("f32[6]"), 2, 6, 6, 3, [True, True, True]),
        C("aten::native_group_norm_backward", f("f32[2,4,5]"), f("f32[2,4,5]"), f("f32[2,1]"),
          f("f32[2,1]", lo=0.5, hi=2.0), f("f32[4]"), 2, 4, 5, 1, [True, True, True], opset=17,
          id="native_group_norm_backward-1group-opset17"),
        C("aten::convolution_backward", f("f32[2,4,5,5]"), f("f32[2,3,7,7]"), f("f32[4,3,3,3]"), [4],
          [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]),
        C("aten::convolution_backward", f("f32[1,2,4,3]"), f("f32[1,3,8,7]"), f("f32[2,3,3,2]"), [2],
          [2, 2], [1, 0], [1, 2], False, [0, 0], 1, [True, True, True], id="convolution_backward-stride-pad-dilation"),
        C("aten::convolution_backward", f("f32[1,2,3,3]"), f("f32[1,1,6,6]"), f("f32[2,1,2,2]"), [2],
          [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True], id="convolution_backward-stride-remainder"),
    ]


def dtype_cases(m):
    """The data-moving ops over every dtype of the table, the float ones in f64."""
    C, X, f, i, b = m.C, m.X, m.f, m.i, m.b
    out = []
    for dt in ("f64", "i64", "i32", "u8", "bool"):
        def x(spec, dt=dt):
            return X(spec.replace("f32", dt))
        out += [
            C("aten::copy", x("f32[2,3]"), f("f32[3]"), id="copy-dtype-" + dt),
            C("aten::diagonal", x("f32[3,4]"), 1, id="diagonal-dtype-" + dt),
            C("aten::masked_scatter", x("f32[2,3]"), b("f32[2,3]"), x("f32[6]"), id="masked_scatter-dtype-" + dt),
            C("aten::index_put", x("f32[4,3]"), [i("i64[2]", lo=0, hi=4)], x("f32[3]"), id="index_put-dtype-" + dt),
            C("aten::resize_", x("f32[2,3]"), [4], mutated=1, id="resize_-dtype-" + dt),
            C("aten::scatter_reduce.two", x("f32[3,4]"), 1, i("i64[3,2]", lo=0, hi=4), x("f32[3,2]"), "sum",
              id="scatter_reduce.two-sum-dtype-" + dt),
        ]
        if dt != "bool":   # ONNX Runtime's ScatterElements has no bool max
            out.append(C("aten::scatter_reduce.two", x("f32[3,4]"), 1, i("i64[3,2]", lo=0, hi=4),
                         x("f32[3,2]"), "amax", include_self=False, id="scatter_reduce.two-amax-dtype-" + dt))

    def d(spec):
        return X(spec.replace("f32", "f64"))
    out += [
        C("aten::_cdist_forward", d("f32[3,2]"), d("f32[4,2]"), 2.0, None, id="_cdist_forward-f64"),
        C("aten::_pdist_forward", d("f32[4,2]"), 1.0, id="_pdist_forward-f64"),
        C("aten::col2im", d("f32[1,4,4]"), [3, 3], [2, 2], [1, 1], [0, 0], [1, 1], id="col2im-f64"),
        C("aten::_embedding_bag", d("f32[5,2]"), i("i64[4]", lo=0, hi=5), i("i64[1]", lo=0, hi=1),
          outputs=[0], id="_embedding_bag-f64-one-bag"),
        C("aten::_adaptive_avg_pool3d", d("f32[1,2,3,3,3]"), [2, 2, 2], id="_adaptive_avg_pool3d-f64"),
        C("aten::var.dim", d("f32[3,4]"), [1], id="var.dim-f64"),
        C("aten::reflection_pad2d", d("f32[1,2,4,5]"), [1, 2, 2, 1], id="reflection_pad2d-f64"),
        C("aten::grid_sampler_2d", d("f32[1,1,3,3]"), d("f32[1,2,2,2]"), 0, 0, False, id="grid_sampler_2d-f64",
          xfail="ONNX Runtime has no f64 GridSample kernel; the model is valid ONNX"),
    ]
    return out
