"""Cases of check_decomps.py for decomps/torch2_nn.fxir (broadcast_tensors,
atleast_Nd, column_stack, block_diag, cartesian_prod, round.decimals,
logaddexp, clamp_min/max.Tensor, angle, sum with a dtype, addr, bilinear,
binary cross entropy, channel_shuffle, the channel and alpha dropouts,
_safe_softmax, linalg_norm, max_unpool, adaptive_max_pool3d, nearest-exact
resampling, bucketize, argwhere, alias_copy) and for the calls the OpInfo
sweep found lowered to models ONNX Runtime refused (permute's negative
dims, unbatched convolutions, index_select of a 0-d tensor, roll of an
empty tensor, integer remainders).

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X, f, i, b, Lit, DT) and takes the returned list.  The f32 cases run
again in the other dtypes (test/decomp/dtype_matrix.py).  Ops the
installed PyTorch lacks (_safe_softmax before 2.5) are skipped.
"""

import numpy as np


def cases(m):
    C, X, f, i, b, DT = m.C, m.X, m.f, m.i, m.b, m.DT
    TORCH2 = int(m.torch.__version__.split(".")[0]) >= 2
    POS = dict(lo=0.2, hi=3.0)
    PROB = dict(lo=0.05, hi=0.95)
    out = []
    A = out.extend

    # -- the sweep's fixes --
    A([
        C("aten::permute", f("f32[2,3,4,5]"), [0, -1, -2, 1], id="permute-negative"),
        C("aten::permute", f("f32[3,4]"), [-1, -2], id="permute-negative-2d"),
        C("aten::permute_copy", f("f32[2,3,4]"), [-1, 0, -2], id="permute_copy-negative"),
        C("aten::permute", X("c64[2,3,4]"), [-1, 0, -2], id="permute-negative-c64"),
        C("aten::conv1d", f("f32[3,10]"), f("f32[4,3,3]"), f("f32[4]"), id="conv1d-unbatched"),
        C("aten::conv2d", f("f32[3,6,6]"), f("f32[4,3,3,3]"), None, [2, 1], [1, 0], id="conv2d-unbatched"),
        C("aten::conv1d.padding", f("f32[3,10]"), f("f32[4,3,3]"), None, [1], "same", [2],
          id="conv1d.padding-unbatched-same"),
        C("aten::conv2d.padding", f("f32[3,6,6]"), f("f32[4,3,2,3]"), f("f32[4]"), [1, 1], "same",
          id="conv2d.padding-unbatched-same-odd"),
        C("aten::conv2d.padding", f("f32[3,6,6]"), f("f32[4,3,2,3]"), None, [1, 1], "valid",
          id="conv2d.padding-unbatched-valid"),
        C("aten::conv_transpose1d", f("f32[3,10]"), f("f32[3,4,3]"), None, [2], id="conv_transpose1d-unbatched"),
        C("aten::conv_transpose2d.input", f("f32[3,5,5]"), f("f32[3,4,3,3]"), f("f32[4]"), [2, 2], [1, 1],
          id="conv_transpose2d-unbatched"),
        C("aten::conv1d", X("i64[3,10]"), X("i64[4,3,3]"), id="conv1d-unbatched-i64"),
        C("aten::conv2d.padding", X("i32[3,6,6]"), X("i32[4,3,2,3]"), None, [1, 1], "same",
          id="conv2d.padding-unbatched-same-i32"),
        C("aten::index_select", f("f32[]"), 0, i("i64[1]", lo=0, hi=1), id="index_select-0d"),
        C("aten::index_select", f("f32[3,4]"), 1, i("i64[]", lo=0, hi=4), id="index_select-0d-index"),
        C("aten::roll", f("f32[0,0,0]"), [1], [0], id="roll-empty"),
        C("aten::roll", f("f32[0,3]"), [1, 2], [0, 1], id="roll-empty-dims"),
        C("aten::remainder.Tensor", i("i64[3,4]", lo=-20, hi=20), i("i64[4]", lo=1, hi=6),
          id="remainder.Tensor-i64-divisor"),
        C("aten::fmod.Tensor", X("i32[3,4]", lo=-20, hi=20), X("i32[4]", lo=-6, hi=-1),
          id="fmod.Tensor-i32-negative"),
        C("aten::remainder.Scalar", X("u8[3,4]", lo=0, hi=200), 7, id="remainder.Scalar-u8"),
        # unsorted unique: PyTorch 2's CPU kernel sorts too (1.13's did not)
        C("aten::_unique2", i("i64[20]", lo=0, hi=6), False, True, True, id="_unique2-unsorted",
          skip=None if TORCH2 else "torch 1.13 leaves unsorted unique's values unordered"),
        C("aten::_unique2", f("f32[]"), False, id="_unique2-unsorted-0d"),
    ])

    # -- broadcasting and stacking --
    A([
        C("aten::broadcast_tensors", [f("f32[2,1]"), f("f32[3]")]),
        C("aten::broadcast_tensors", [f("f32[4,1,3]"), f("f32[2,1]"), f("f32[]")], id="broadcast_tensors-3"),
        C("aten::broadcast_tensors", [i("i64[3]")], id="broadcast_tensors-1"),
        C("aten::atleast_1d", f("f32[]")),
        C("aten::atleast_1d", f("f32[2,3]"), id="atleast_1d-2d"),
        C("aten::atleast_2d", f("f32[]")),
        C("aten::atleast_2d", f("f32[4]"), id="atleast_2d-1d"),
        C("aten::atleast_2d", f("f32[2,3,4]"), id="atleast_2d-3d"),
        C("aten::atleast_3d", f("f32[]")),
        C("aten::atleast_3d", f("f32[4]"), id="atleast_3d-1d"),
        C("aten::atleast_3d", f("f32[2,3]"), id="atleast_3d-2d"),
        C("aten::atleast_3d", f("f32[2,3,4,5]"), id="atleast_3d-4d"),
        C("aten::column_stack", [f("f32[4]"), f("f32[4]"), f("f32[4]")]),
        C("aten::column_stack", [f("f32[3,2]"), f("f32[3,1]")], id="column_stack-2d"),
        C("aten::column_stack", [f("f32[]"), f("f32[]")], id="column_stack-0d"),
        C("aten::block_diag", [f("f32[2,2]"), f("f32[1,3]")]),
        C("aten::block_diag", [f("f32[2,3]"), f("f32[3,1]"), f("f32[1,2]")], id="block_diag-3"),
        C("aten::block_diag", [f("f32[2,3]")], id="block_diag-1"),
        C("aten::cartesian_prod", [f("f32[2]"), f("f32[3]")]),
        C("aten::cartesian_prod", [f("f32[2]"), f("f32[3]"), f("f32[2]")], id="cartesian_prod-3"),
        C("aten::cartesian_prod", [f("f32[2]"), f("f32[1]"), f("f32[3]"), f("f32[2]")], id="cartesian_prod-4"),
        C("aten::cartesian_prod", [f("f32[4]")], id="cartesian_prod-1"),
    ])

    # -- elementwise --
    A([
        C("aten::round.decimals", f("f32[3,4]", lo=-50.0, hi=50.0), decimals=2),
        C("aten::round.decimals", f("f32[3,4]", lo=-500.0, hi=500.0), decimals=-1, id="round.decimals-neg"),
        C("aten::round.decimals", f("f32[3,4]", lo=-5.0, hi=5.0), decimals=0, id="round.decimals-0"),
        C("aten::round.decimals", X("f64[3,4]", lo=-50.0, hi=50.0), decimals=3, id="round.decimals-f64"),
        C("aten::logaddexp", f("f32[3,4]"), f("f32[4]")),
        C("aten::logaddexp", f("f32[3,3]", special=True), f("f32[3,3]", special=True), id="logaddexp-special"),
        C("aten::logaddexp", X("f64[3]", lo=-900.0, hi=900.0), X("f64[3]", lo=-900.0, hi=900.0),
          id="logaddexp-f64-large"),
        C("aten::logaddexp2", f("f32[3,4]"), f("f32[3,4]")),
        C("aten::logaddexp2", f("f32[2,2]", special=True), f("f32[2,2]", special=True), id="logaddexp2-special"),
        C("aten::clamp_min.Tensor", f("f32[3,4]"), f("f32[4]")),
        C("aten::clamp_max.Tensor", f("f32[3,4]"), f("f32[3,1]")),
        C("aten::clamp_min.Tensor", i("i64[3,4]"), f("f32[]"), id="clamp_min.Tensor-i64-f32"),
        C("aten::clamp_max.Tensor", X("i32[3,4]"), i("i64[4]"), id="clamp_max.Tensor-i32-i64"),
        C("aten::angle", f("f32[3,4]"), id="angle-real"),
        C("aten::angle", f("f32[2,3]", special=True), id="angle-special"),
        C("aten::angle", i("i64[2,3]"), id="angle-i64"),
        C("aten::angle", b("f32[2,3]"), id="angle-bool"),
    ])

    # -- sums with a dtype --
    A([
        C("aten::sum.dim_IntList", f("f32[3,4]"), [1], dtype=DT("f64"), id="sum.dim_IntList-dtype"),
        C("aten::sum.dim_IntList", b("f32[3,4]"), [0], True, dtype=DT("i32"), id="sum.dim_IntList-bool-i32"),
        C("aten::sum.dim_IntList", X("u8[3,4]", lo=0, hi=200), [-1], dtype=DT("u8"), id="sum.dim_IntList-u8-u8"),
        C("aten::sum.dim_IntList", i("i64[3,4,2]"), [0, 2], dtype=DT("f32"), id="sum.dim_IntList-i64-f32"),
        C("aten::sum.dim_IntList", f("f32[]"), [0], dtype=DT("f64"), id="sum.dim_IntList-dtype-0d"),
        C("aten::sum.dim_IntList", f("f32[3,4]"), None, dtype=DT("f64"), id="sum.dim_IntList-dtype-all"),
    ])

    # -- mean, prod, cumsum with a dtype --
    A([
        C("aten::mean.dim", f("f32[3,4]"), [1], dtype=DT("f64"), id="mean.dim-dtype"),
        C("aten::mean.dim", X("f16[3,4]"), [0, 1], True, dtype=DT("f32"), id="mean.dim-f16-f32"),
        C("aten::mean.dim", f("f32[]"), [0], dtype=DT("f64"), id="mean.dim-dtype-0d"),
        C("aten::mean", f("f32[3,4]"), dtype=DT("f64"), id="mean-dtype"),
        C("aten::prod.dim_int", f("f32[3,4]", lo=0.5, hi=1.5), 1, dtype=DT("f64"), id="prod.dim_int-dtype"),
        C("aten::prod.dim_int", X("u8[3,4]", lo=0, hi=9), 1, True, dtype=DT("u8"), id="prod.dim_int-u8-u8"),
        C("aten::prod.dim_int", b("f32[3,4]"), 0, dtype=DT("i32"), id="prod.dim_int-bool-i32"),
        C("aten::prod.dim_int", f("f32[]"), 0, dtype=DT("f64"), id="prod.dim_int-dtype-0d"),
        C("aten::prod", i("i64[3,4]", lo=-3, hi=4), dtype=DT("f32"), id="prod-i64-f32"),
        C("aten::prod", X("i8[5]", lo=-3, hi=4), dtype=DT("i8"), id="prod-i8-i8"),
        C("aten::cumsum", f("f32[3,4]"), 1, dtype=DT("f64"), id="cumsum-dtype"),
        C("aten::cumsum", b("f32[3,4]"), 0, dtype=DT("i32"), id="cumsum-bool-i32"),
        C("aten::cumsum", X("u8[6]", lo=0, hi=200), 0, dtype=DT("u8"), id="cumsum-u8-u8"),
        C("aten::cumsum", f("f32[]"), 0, dtype=DT("f64"), id="cumsum-dtype-0d"),
    ])

    # -- products --
    A([
        C("aten::addr", f("f32[3,4]"), f("f32[3]"), f("f32[4]")),
        C("aten::addr", f("f32[4]"), f("f32[3]"), f("f32[4]"), beta=0.5, alpha=2.0, id="addr-scaled"),
        C("aten::addr", f("f32[3,4]", special=True), f("f32[3]"), f("f32[4]"), beta=0, id="addr-beta0"),
        C("aten::addr", i("i64[3,4]"), i("i64[3]"), i("i64[4]"), beta=2, alpha=3, id="addr-i64"),
        C("aten::addr", b("f32[3,4]"), b("f32[3]"), b("f32[4]"), id="addr-bool"),
        C("aten::bilinear", f("f32[2,3]"), f("f32[2,4]"), f("f32[5,3,4]"), f("f32[5]")),
        C("aten::bilinear", f("f32[2,2,3]"), f("f32[2,2,4]"), f("f32[5,3,4]"), id="bilinear-nobias"),
    ])

    # -- losses --
    for red in (0, 1, 2):
        A([
            C("aten::binary_cross_entropy", f("f32[3,4]", **PROB), f("f32[3,4]", lo=0.0, hi=1.0), None, red,
              id="binary_cross_entropy-r%d" % red),
            C("aten::binary_cross_entropy_with_logits", f("f32[3,4]"), f("f32[3,4]", lo=0.0, hi=1.0), None,
              None, red, id="binary_cross_entropy_with_logits-r%d" % red),
        ])
    A([
        C("aten::binary_cross_entropy", f("f32[3,4]", **PROB), f("f32[3,4]", lo=0.0, hi=1.0), f("f32[4]", **POS),
          id="binary_cross_entropy-weight"),
        C("aten::binary_cross_entropy", X("f32[4]", lo=0.0, hi=1.0, intf=True), f("f32[4]", lo=0.0, hi=1.0),
          id="binary_cross_entropy-edges"),
        C("aten::binary_cross_entropy_with_logits", f("f32[3,4]", lo=-30.0, hi=30.0), f("f32[3,4]", lo=0.0, hi=1.0),
          f("f32[4]", **POS), f("f32[4]", **POS), id="binary_cross_entropy_with_logits-weights"),
        C("aten::binary_cross_entropy_with_logits", f("f32[2,3]"), f("f32[2,3]", lo=0.0, hi=1.0), None,
          f("f32[3]", **POS), 2, id="binary_cross_entropy_with_logits-pos-sum"),
    ])

    # -- channel_shuffle, dropouts, _safe_softmax --
    A([
        C("aten::channel_shuffle", f("f32[2,6,3,3]"), 3),
        C("aten::channel_shuffle", f("f32[1,4,5]"), 2, id="channel_shuffle-1d"),
        C("aten::native_channel_shuffle", f("f32[2,6,2,2,2]"), 2),
        C("aten::feature_dropout", f("f32[2,3,4,4]"), 0.5, False, id="feature_dropout-eval"),
        C("aten::feature_alpha_dropout", f("f32[2,3,4,4]"), 0.5, False),
        C("aten::alpha_dropout", f("f32[2,3]"), 0.5, False),
        C("aten::feature_dropout", f("f32[2,3,4,4]"), 0.0, True, id="feature_dropout-train-p0"),
        C("aten::feature_alpha_dropout", f("f32[2,3,4]"), 0.0, True, id="feature_alpha_dropout-train-p0"),
        C("aten::alpha_dropout", f("f32[2,3]"), 0.0, True, id="alpha_dropout-train-p0"),
        C("aten::feature_dropout", f("f32[2,3,4]"), 1.0, True, id="feature_dropout-train-p1"),
        C("aten::alpha_dropout", f("f32[2,3]"), 1.0, True, id="alpha_dropout-train-p1"),
        C("aten::feature_dropout", f("f32[2,3,4,4]"), 0.5, True, shape_only=True, id="feature_dropout-train"),
        C("aten::feature_alpha_dropout", f("f32[2,3,4,4]"), 0.3, True, shape_only=True,
          id="feature_alpha_dropout-train"),
        C("aten::alpha_dropout", f("f32[5,6]"), 0.2, True, shape_only=True, id="alpha_dropout-train"),
        C("aten::_safe_softmax", f("f32[3,4]"), -1),
        C("aten::_safe_softmax", f("f32[3,4]"), 0, DT("f64"), id="_safe_softmax-dtype"),
    ])

    # -- linalg_norm --
    A([
        C("aten::linalg_norm", f("f32[3,4]")),
        C("aten::linalg_norm", f("f32[2,3,4]"), None, [1, 2], True, id="linalg_norm-fro-dims"),
        C("aten::linalg_norm", f("f32[5]"), 3, id="linalg_norm-vector-ord3"),
        C("aten::linalg_norm", f("f32[3,4]"), 1, [1], id="linalg_norm-vector-dim"),
        C("aten::linalg_norm", f("f32[3,4]"), 1, id="linalg_norm-matrix-1"),
        C("aten::linalg_norm", f("f32[3,4]"), float("inf"), id="linalg_norm-matrix-inf"),
        C("aten::linalg_norm", f("f32[2,3,4]"), -1, [2, 0], True, id="linalg_norm-matrix-neg1-keepdim"),
        C("aten::linalg_norm", f("f32[2,3,4]"), float("-inf"), [-1, -2], id="linalg_norm-matrix-neginf"),
        C("aten::linalg_norm", f("f32[3,4]"), None, None, False, dtype=DT("f64"), id="linalg_norm-dtype"),
        C("aten::linalg_norm.ord_str", f("f32[3,4]"), "fro"),
        C("aten::linalg_norm.ord_str", f("f32[2,3,4]"), "fro", [0, 2], True, id="linalg_norm.ord_str-dims"),
    ])

    # -- unpooling, adaptive max pooling, nearest-exact --
    A([
        C("aten::max_unpool2d", f("f32[1,2,2,2]"), X("i64[1,2,2,2]", lo=0, hi=16, unique=True), [4, 4]),
        C("aten::max_unpool2d", f("f32[3,2,3]"), X("i64[3,2,3]", lo=0, hi=30, unique=True), [5, 6],
          id="max_unpool2d-unbatched"),
        C("aten::max_unpool3d", f("f32[1,2,1,2,2]"), X("i64[1,2,1,2,2]", lo=0, hi=27, unique=True), [3, 3, 3],
          [2, 2, 2], [0, 0, 0]),
        C("aten::adaptive_max_pool3d", f("f32[2,3,4,4,6]"), [2, 2, 3]),
        C("aten::adaptive_max_pool3d", f("f32[1,2,3,4,5]"), [1, 1, 1], id="adaptive_max_pool3d-global"),
        C("aten::adaptive_max_pool3d", f("f32[2,4,4,6]"), [2, 1, 3], id="adaptive_max_pool3d-unbatched"),
        C("aten::adaptive_max_pool2d", f("f32[2,3,6,4]"), [3, 2], id="adaptive_max_pool2d-divisible"),
        C("aten::adaptive_max_pool2d", f("f32[3,6,4]"), [2, 4], id="adaptive_max_pool2d-unbatched"),
        C("aten::_upsample_nearest_exact1d.vec", f("f32[1,2,4]"), [6], None),
        C("aten::_upsample_nearest_exact1d.vec", f("f32[2,2,5]"), None, [1.5], id="_upsample_nearest_exact1d.vec-scale"),
        C("aten::_upsample_nearest_exact1d.vec", f("f32[1,2,7]"), [3], None, id="_upsample_nearest_exact1d.vec-down"),
        C("aten::_upsample_nearest_exact2d.vec", f("f32[1,2,3,4]"), [5, 7], None),
        C("aten::_upsample_nearest_exact2d.vec", f("f32[1,2,4,4]"), None, [2.0, 0.5],
          id="_upsample_nearest_exact2d.vec-scale"),
        C("aten::_upsample_nearest_exact3d.vec", f("f32[1,1,2,3,4]"), [3, 5, 2], None),
        C("aten::_upsample_nearest_exact1d", f("f32[1,2,4]"), [7]),
        C("aten::_upsample_nearest_exact1d", f("f32[1,2,4]"), [6], 1.5, id="_upsample_nearest_exact1d-scale"),
        C("aten::_upsample_nearest_exact2d", f("f32[1,2,3,4]"), [5, 2]),
        C("aten::_upsample_nearest_exact2d", f("f32[1,2,4,4]"), [8, 2], 2.0, 0.5, id="_upsample_nearest_exact2d-scales"),
        C("aten::_upsample_nearest_exact3d", f("f32[1,1,2,3,4]"), [4, 3, 6]),
        C("aten::_upsample_nearest_exact3d", f("f32[1,1,2,2,2]"), [4, 6, 2], 2.0, 3.0, 1.0,
          id="_upsample_nearest_exact3d-scales"),
    ])

    # -- bucketize, argwhere, alias_copy (boundaries sorted, with repeats) --
    class Sorted(X):
        def draw(self, rng):
            return np.sort(X.draw(self, rng))
    A([
        C("aten::bucketize.Tensor", f("f32[3,4]", lo=-3.0, hi=3.0, intf=True), Sorted("f32[5]", lo=-3, hi=3, intf=True)),
        C("aten::bucketize.Tensor", f("f32[3,4]", lo=-3.0, hi=3.0, intf=True), Sorted("f32[5]", lo=-3, hi=3, intf=True),
          right=True, id="bucketize.Tensor-right"),
        C("aten::bucketize.Tensor", f("f32[2,3]", special=True), Sorted("f32[4]"), out_int32=True,
          id="bucketize.Tensor-special-int32"),
        C("aten::bucketize.Tensor", i("i64[2,3]", lo=-4, hi=5), Sorted("i64[4]", lo=-4, hi=5),
          id="bucketize.Tensor-i64"),
        C("aten::bucketize.Tensor", f("f32[]"), Sorted("f32[3]"), id="bucketize.Tensor-0d"),
        C("aten::argwhere", i("i64[3,4]", lo=0, hi=2)),
        C("aten::argwhere", f("f32[2,3,2]", intf=True, lo=0, hi=2), id="argwhere-f32"),
        C("aten::alias_copy", f("f32[2,3]")),
    ])
    # -- as_strided of a contiguous input: any static sizes and strides --
    A([
        C("aten::as_strided", f("f32[6]"), [2, 2], [1, 2], 1, id="as_strided-transposed-offset"),
        C("aten::as_strided", f("f32[3,3]"), [3], [4], id="as_strided-diagonal"),
        C("aten::as_strided", f("f32[10]"), [4, 3], [2, 1], id="as_strided-windows"),
        C("aten::as_strided", f("f32[2,3]"), [2, 2, 3], [0, 3, 1], id="as_strided-expand"),
        C("aten::as_strided", f("f32[2,3,4]"), [4, 3, 2], [1, 4, 12], 0, id="as_strided-permuted"),
        C("aten::as_strided", f("f32[2,3,4]"), [2, 2, 2, 2], [12, 4, 2, 1], 1, id="as_strided-4d"),
        C("aten::as_strided", f("f32[2,3]"), [3, 2], [2, 1], id="as_strided-contiguous"),
    ])

    # -- Python's comparisons of sizes --
    for name in ("ge", "gt", "le", "lt", "eq", "ne"):
        A([C("_operator::" + name, i("i64[]", lo=1, hi=5), i("i64[]", lo=1, hi=5), id="operator." + name),
           C("_operator::" + name, i("i64[]", lo=0, hi=8), 4, id="operator.%s-literal" % name)])
    return out

