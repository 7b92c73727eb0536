"""Cases of check_decomps.py for decomps/torch2.fxir: the ATen ops of
PyTorch 2.x programs (Python's &, |, ^ on tensors, diff, F.pad's modes,
vector norms, linspace, meshgrid, tensor_split, fmax/fmin, outer, kron,
addbmm, trace, index_add/index_copy, instance_norm's other forms,
grid_sampler, cross entropy).

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X, f, i, b, Lit, DT) and takes the returned list.  The f32 cases run
again in the other dtypes (test/decomp/dtype_matrix.py); the bitwise ops,
which PyTorch refuses on floats, list their dtypes here.  Ops the
installed PyTorch lacks (linspace's Tensor overloads before 2.0) are
skipped.
"""

import numpy as np


def np_bool_scalar(fn):
    """A bool tensor and a bool number: bool, as torch.result_type says
    (PyTorch 1.13's .Scalar overloads return i64 there)."""
    return lambda x, other: fn(x, other)


def cases(m):
    C, X, f, i, b, DT = m.C, m.X, m.f, m.i, m.b, m.DT
    strided, cpu, POS = m.STRIDED, m.CPU, m.POS
    out = []
    A = out.extend

    # -- to.dtype_layout --
    A([
        C("aten::to.dtype_layout", f(), dtype=DT("f64"), layout=strided, device=cpu),
        C("aten::to.dtype_layout", f(lo=-5.0, hi=5.0), dtype=DT("i64"), id="to.dtype_layout-i64"),
        C("aten::to.dtype_layout", f(), id="to.dtype_layout-same"),
        C("aten::to.dtype_layout", i(), dtype=DT("bool"), pin_memory=False, id="to.dtype_layout-bool"),
    ])

    # -- __and__/__or__/__xor__: every integer dtype and bool --
    for op, fn in (("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
        name = "__%s__" % op
        A([C("aten::%s.Tensor" % name, b(), b(), id="%s.Tensor-bool" % name),
           C("aten::%s.Scalar" % name, b(), True, ref=np_bool_scalar(fn), id="%s.Scalar-bool" % name),
           C("aten::%s.Tensor" % name, b(), i(), id="%s.Tensor-bool-i64" % name)])
        for dt in ("i64", "i32", "i8", "u8"):
            x = X("%s[2,3]" % dt, lo=0, hi=100) if dt == "u8" else X("%s[2,3]" % dt)
            y = X("%s[3]" % dt, lo=0, hi=100) if dt == "u8" else X("%s[3]" % dt)
            A([C("aten::%s.Tensor" % name, x, y, id="%s.Tensor-%s" % (name, dt)),
               C("aten::%s.Scalar" % name, x, 6, id="%s.Scalar-%s" % (name, dt))])

    # -- min.other, max.other, fmax, fmin --
    A([
        C("aten::min.other", f(), f()),
        C("aten::max.other", f(), f("f32[3]")),
        C("aten::max.other", i(), X("i32[2,3]"), id="max.other-i64-i32"),
        C("aten::fmax", f(), f()),
        C("aten::fmin", f(), f("f32[3]")),
        C("aten::fmax", f("f32[4,4]", special=True), f("f32[4]", special=True), id="fmax-nan"),
        C("aten::fmin", f("f32[3,3]", special=True), f("f32[3,3]"), id="fmin-nan"),
        C("aten::fmax", f("f32[2,3]"), i(), id="fmax-f32-i64"),
        C("aten::fmin", i(), X("i32[3]"), id="fmin-i64-i32"),
    ])

    # -- diff --
    A([
        C("aten::diff", f("f32[3,5]")),
        C("aten::diff", f("f32[4,5]"), 2, 0, id="diff-n2-dim0"),
        C("aten::diff", f("f32[3,5]"), 1, -1, f("f32[3,2]"), f("f32[3,1]"), id="diff-prepend-append"),
        C("aten::diff", f("f32[3,4]"), 3, 1, None, f("f32[3,2]"), id="diff-n3-append"),
        C("aten::diff", f("f32[3,4]"), 0, id="diff-n0"),
        C("aten::diff", f("f32[3,4]"), 6, 1, id="diff-n-past-len"),
        C("aten::diff", b("f32[6]"), id="diff-bool"),
        C("aten::diff", b("f32[3,5]"), 2, 0, b("f32[1,5]"), id="diff-bool-n2-prepend"),
    ])

    # -- pad --
    A([
        C("aten::pad", f("f32[2,3,4]"), [1, 2]),
        C("aten::pad", f("f32[2,3,4]"), [1, 2, 0, 1], "constant", 1.5, id="pad-constant-value"),
        C("aten::pad", f("f32[2,3,4]"), [1, -2], "constant", 0.5, id="pad-constant-crop"),
        C("aten::pad", f("f32[2,3,6]"), [2, 1], "reflect", id="pad-reflect-1d"),
        C("aten::pad", f("f32[1,2,5,6]"), [1, 2, 3, 0], "reflect", id="pad-reflect-2d"),
        C("aten::pad", f("f32[1,2,3,4,5]"), [1, 0, 2, 1, 1, 1], "reflect", id="pad-reflect-3d"),
        C("aten::pad", f("f32[2,3,6]"), [2, 1], "replicate", id="pad-replicate-1d"),
        C("aten::pad", f("f32[1,2,5,6]"), [1, 2, 3, 0], "replicate", id="pad-replicate-2d"),
        C("aten::pad", f("f32[1,2,3,4,5]"), [1, 0, 2, 1, 1, 3], "replicate", id="pad-replicate-3d"),
        C("aten::pad", f("f32[2,3,6]"), [2, 1], "circular", id="pad-circular-1d"),
        C("aten::pad", f("f32[2,3,6]"), [0, 3], "circular", id="pad-circular-1d-end"),
        C("aten::pad", f("f32[1,2,5,6]"), [1, 2, 3, 0], "circular", id="pad-circular-2d"),
        C("aten::pad", f("f32[1,2,3,4,5]"), [1, 0, 2, 1, 3, 3], "circular", id="pad-circular-3d"),
    ])

    # -- linalg_vector_norm --
    A([
        C("aten::linalg_vector_norm", f("f32[3,4]")),
        C("aten::linalg_vector_norm", f("f32[3,4,5]"), 2, [1], True, id="linalg_vector_norm-dim-keepdim"),
        C("aten::linalg_vector_norm", f("f32[3,4,5]"), 1, [0, 2], id="linalg_vector_norm-ord1"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), float("inf"), [1], id="linalg_vector_norm-inf"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), float("-inf"), None, True, id="linalg_vector_norm-neginf-all"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), float("inf"), id="linalg_vector_norm-inf-all"),
        C("aten::linalg_vector_norm", f("f32[3,4]", intf=True), 0, [-1], id="linalg_vector_norm-ord0"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), 3, [1], id="linalg_vector_norm-ord3"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), 0.5, None, id="linalg_vector_norm-ord-half"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), 2, [0], dtype=DT("f64"), id="linalg_vector_norm-dtype"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), 2, [1], opset=17, id="linalg_vector_norm-opset17"),
        # ord 2 and 1 are ReduceL2 and ReduceL1: every dim (none, []), keepdim,
        # a dtype, opset 17's axes attribute, a 0-d tensor (written out)
        C("aten::linalg_vector_norm", f("f32[3,4,5]"), 2, [], True, id="linalg_vector_norm-empty-dim"),
        C("aten::linalg_vector_norm", f("f32[3,4,5]"), 1, None, True, id="linalg_vector_norm-ord1-all"),
        C("aten::linalg_vector_norm", f("f32[3,4,5]"), 1, [-1], True, opset=17, id="linalg_vector_norm-ord1-opset17"),
        C("aten::linalg_vector_norm", f("f32[3,4]"), 1, [0], dtype=DT("f64"), id="linalg_vector_norm-ord1-dtype"),
        C("aten::linalg_vector_norm", f("f32[]"), 2, [0], id="linalg_vector_norm-0d"),
        C("aten::linalg_vector_norm", f("f32[]"), 1, id="linalg_vector_norm-ord1-0d"),
    ])

    # -- instance_norm: no weight, no bias, running statistics --
    A([
        C("aten::instance_norm", f("f32[2,3,4,4]"), None, None, None, None, True, 0.1, 1e-5, False,
          id="instance_norm-noaffine"),
        C("aten::instance_norm", f("f32[2,3,5]"), f("f32[3]"), None, None, None, True, 0.1, 1e-5, False,
          id="instance_norm-weight-only"),
        C("aten::instance_norm", f("f32[2,3,4,4]"), f("f32[3]"), f("f32[3]"), f("f32[3]"),
          f("f32[3]", **POS), False, 0.1, 1e-5, False, id="instance_norm-running"),
        C("aten::instance_norm", f("f32[2,3,4,4]"), None, None, f("f32[3]"),
          f("f32[3]", **POS), False, 0.1, 1e-5, False, id="instance_norm-running-noaffine"),
    ])

    # -- grid_sampler (4-D: grid_sampler_2d) --
    A([
        C("aten::grid_sampler", f("f32[2,3,5,6]"), f("f32[2,4,3,2]", lo=-1.3, hi=1.3), 0, 0, False),
        C("aten::grid_sampler", f("f32[1,2,4,4]"), f("f32[1,3,3,2]", lo=-1.1, hi=1.1), 1, 1, True,
          id="grid_sampler-nearest-border"),
        C("aten::grid_sampler", f("f32[1,2,3,4,5]"), f("f32[1,2,3,4,3]", lo=-1.2, hi=1.2), 0, 0, False,
          opset=20, id="grid_sampler-3d"),
    ])
    for interp in (0, 1):
        for pad in (0, 1, 2):
            for corners in (False, True):
                A([C("aten::grid_sampler_3d", f("f32[2,2,3,4,5]"), f("f32[2,3,2,4,3]", lo=-1.3, hi=1.3),
                     interp, pad, corners, opset=20,
                     id="grid_sampler_3d-%s-%s%s" % (("trilinear", "nearest")[interp],
                                                     ("zeros", "border", "reflection")[pad],
                                                     "-corners" if corners else ""))])

    # -- linspace: every dtype PyTorch takes, even and odd counts --
    A([
        C("aten::linspace", 0, 10, 5),
        C("aten::linspace", -1.5, 2.25, 8, id="linspace-float"),
        C("aten::linspace", 3.0, -2.0, 7, id="linspace-down"),
        C("aten::linspace", 2.5, 7.0, 1, id="linspace-one"),
        C("aten::linspace", 2.5, 7.0, 0, id="linspace-zero"),
        C("aten::linspace", 0, 1, 11, dtype=DT("f64"), id="linspace-f64"),
        C("aten::linspace", -3, 40, 6, dtype=DT("f16"), id="linspace-f16"),
        C("aten::linspace", 0, 10, 4, dtype=DT("i64"), id="linspace-i64"),
        C("aten::linspace", -7, 25, 9, dtype=DT("i32"), id="linspace-i32"),
        C("aten::linspace", -2.7, 9.8, 5, dtype=DT("i64"), id="linspace-float-i64"),
        C("aten::linspace", 100, 3, 7, dtype=DT("i8"), id="linspace-i8"),
        C("aten::linspace", 0, 255, 6, dtype=DT("u8"), id="linspace-u8"),
        C("aten::linspace", 0, 1, 5, layout=strided, device=cpu, pin_memory=False, id="linspace-kw"),
        C("aten::linspace.Tensor_Tensor", f("f32[]"), f("f32[]"), 6),
        C("aten::linspace.Tensor_Scalar", f("f32[]"), 4.0, 5, dtype=DT("f64")),
        C("aten::linspace.Scalar_Tensor", -1, f("f32[]"), 9),
    ])

    # -- meshgrid --
    A([
        C("aten::meshgrid", [f("f32[3]"), f("f32[4]")]),
        C("aten::meshgrid", [f("f32[2]"), f("f32[3]"), f("f32[4]")], id="meshgrid-3"),
        C("aten::meshgrid", [f("f32[5]")], id="meshgrid-1"),
        C("aten::meshgrid.indexing", [f("f32[3]"), f("f32[4]")], indexing="ij"),
        C("aten::meshgrid.indexing", [f("f32[3]"), f("f32[4]")], indexing="xy", id="meshgrid.indexing-xy"),
        C("aten::meshgrid.indexing", [f("f32[2]"), f("f32[3]"), f("f32[4]")], indexing="xy",
          id="meshgrid.indexing-xy-3"),
        C("aten::meshgrid.indexing", [i("i64[2]"), i("i64[3]")], indexing="xy", id="meshgrid.indexing-xy-i64"),
    ])

    # -- tensor_split --
    A([
        C("aten::tensor_split.indices", f("f32[7,3]"), [2, 5]),
        C("aten::tensor_split.indices", f("f32[3,7]"), [1, 1, 9], 1, id="tensor_split.indices-empty-past"),
        C("aten::tensor_split.indices", f("f32[3,7]"), [-2], -1, id="tensor_split.indices-neg"),
        C("aten::tensor_split.indices", f("f32[3,7]"), [5, 2], 1, id="tensor_split.indices-decreasing"),
        C("aten::tensor_split.indices", f("f32[4,3]"), [], id="tensor_split.indices-none"),
        C("aten::tensor_split.sections", f("f32[7,3]"), 3),
        C("aten::tensor_split.sections", f("f32[3,8]"), 4, 1, id="tensor_split.sections-even"),
        C("aten::tensor_split.sections", f("f32[3,2]"), 3, -1, id="tensor_split.sections-more"),
    ])

    # -- outer, kron, addbmm, trace --
    A([
        C("aten::outer", f("f32[4]"), f("f32[3]")),
        C("aten::outer", i("i64[4]"), f("f32[3]"), id="outer-i64-f32"),
        C("aten::outer", b("f32[4]"), b("f32[2]"), id="outer-bool"),
        C("aten::kron", f("f32[2,3]"), f("f32[3,2]")),
        C("aten::kron", f("f32[3]"), f("f32[2,4]"), id="kron-ranks"),
        C("aten::kron", f("f32[2,2,3]"), f("f32[2]"), id="kron-3d-1d"),
        C("aten::kron", i("i64[2,2]"), X("i32[2,3]"), id="kron-i64-i32"),
        C("aten::kron", b("f32[2,2]"), b("f32[2,2]"), id="kron-bool"),
        C("aten::addbmm", f("f32[3,5]"), f("f32[4,3,2]"), f("f32[4,2,5]")),
        C("aten::addbmm", f("f32[5]"), f("f32[2,3,4]"), f("f32[2,4,5]"), beta=0.5, alpha=2,
          id="addbmm-scaled"),
        C("aten::trace", f("f32[4,4]")),
        C("aten::trace", f("f32[3,5]"), id="trace-wide"),
        C("aten::trace", f("f32[5,2]"), id="trace-tall"),
    ])

    # -- conv3d.padding --
    A([
        C("aten::conv3d.padding", f("f32[1,2,5,5,5]"), f("f32[3,2,3,3,3]"), f("f32[3]"), [1, 1, 1], "same"),
        C("aten::conv3d.padding", f("f32[1,2,5,6,4]"), f("f32[3,2,2,3,4]"), None, [1, 1, 1], "same", [1, 2, 1],
          id="conv3d.padding-same-odd"),
        C("aten::conv3d.padding", f("f32[1,4,5,5,5]"), f("f32[4,2,2,2,2]"), f("f32[4]"), [1, 1, 1], "same",
          [2, 1, 1], 2, id="conv3d.padding-same-groups"),
        C("aten::conv3d.padding", f("f32[1,2,5,5,5]"), f("f32[3,2,3,3,3]"), f("f32[3]"), [2, 1, 2], "valid",
          id="conv3d.padding-valid"),
    ])

    # -- unfold, item, random tensors (shapes and dtypes only) --
    A([
        C("aten::unfold", f("f32[2,7,3]"), 1, 3, 2),
        C("aten::unfold", f("f32[2,7,3]"), -1, 2, 1, id="unfold-last"),
        C("aten::unfold", f("f32[9]"), 0, 2, 3, id="unfold-1d-gaps"),
        C("aten::unfold", f("f32[2,3,6,6]"), 2, 6, 1, id="unfold-whole"),
        C("aten::unfold", f("f32[]"), 0, 1, 1, id="unfold-0d"),
        C("aten::unfold", f("f32[]"), -1, 0, 2, id="unfold-0d-empty"),
        C("aten::unfold", f("f32[1,2,8,5]"), -2, 3, 3, id="unfold-patches"),
        C("aten::item", f("f32[]")),
        C("aten::item", f("f32[1,1]"), id="item-1x1"),
        C("aten::rand_like", f("f32[3,4]"), shape_only=True),
        C("aten::rand_like", f("f32[3,4]"), dtype=DT("f64"), shape_only=True, id="rand_like-f64"),
        C("aten::randn_like", f("f32[3,4]"), shape_only=True),
        C("aten::randn_like", f("f32[3,4]"), dtype=DT("f64"), shape_only=True, id="randn_like-f64"),
        C("aten::randint", 10, [2, 3], shape_only=True),
        C("aten::randint", 10, [2, 3], dtype=DT("i32"), shape_only=True, id="randint-i32"),
        C("aten::randint.low", -3, 5, [4], shape_only=True),
        C("aten::randint.low", 0, 2, [4], dtype=DT("f32"), shape_only=True, id="randint.low-f32"),
    ])

    # -- indexing without bounds checks, dependency tokens (PyTorch 2.x) --
    A([
        C("aten::_unsafe_index.Tensor", f("f32[10,3]"), [i("i64[5]", lo=-10, hi=10)]),
        C("aten::_unsafe_index.Tensor", f("f32[4,10,3]"), [None, i("i64[2,5]", lo=0, hi=10)],
          id="_unsafe_index.Tensor-none"),
        C("aten::_unsafe_index_put", f("f32[5,3]"), [i("i64[4]", lo=0, hi=5, unique=True)], f("f32[4,3]")),
        C("aten::_unsafe_index_put", f("f32[5,3]"), [i("i64[7]", lo=-5, hi=5)], f("f32[7,3]"), True,
          id="_unsafe_index_put-accumulate"),
        C("aten::_make_dep_token", shape_only=True),
        C("aten::_functional_assert_async.msg", f("f32[]", lo=1.0, hi=2.0), "checked", f("f32[]"), shape_only=True),
    ])

    # -- index_add, index_copy --
    A([
        C("aten::index_add", f("f32[5,3]"), 0, i("i64[4]", lo=0, hi=5), f("f32[4,3]")),
        C("aten::index_add", f("f32[2,5,3]"), 1, i("i64[6]", lo=0, hi=5), f("f32[2,6,3]"), alpha=2,
          id="index_add-alpha-dup"),
        C("aten::index_add", f("f32[2,3,5]"), -1, i("i64[2]", lo=0, hi=5), f("f32[2,3,2]"),
          id="index_add-neg-dim"),
        C("aten::index_add", b("f32[5,3]"), 0, i("i64[4]", lo=0, hi=5), b("f32[4,3]"), id="index_add-bool"),
        C("aten::index_copy", f("f32[5,3]"), 0, i("i64[3]", lo=0, hi=5, unique=True), f("f32[3,3]")),
        C("aten::index_copy", f("f32[2,5,3]"), -2, i("i64[4]", lo=0, hi=5, unique=True), f("f32[2,4,3]"),
          id="index_copy-neg-dim"),
    ])

    # -- cross_entropy_loss: class indices (reductions, weights,
    #    ignore_index, spatial dims) and probabilities (smoothing) --
    for red in (0, 1, 2):
        A([
            C("aten::cross_entropy_loss", f("f32[4,5]"), i("i64[4]", lo=0, hi=5), None, red,
              id="cross_entropy_loss-%d" % red),
            C("aten::cross_entropy_loss", f("f32[4,5]"), i("i64[4]", lo=0, hi=5), f("f32[5]", **POS), red,
              id="cross_entropy_loss-weight-%d" % red),
            C("aten::cross_entropy_loss", f("f32[2,5,3,2]"), i("i64[2,3,2]", lo=0, hi=5), None, red, 2,
              id="cross_entropy_loss-spatial-ignore-%d" % red),
            C("aten::cross_entropy_loss", f("f32[4,5]"), f("f32[4,5]", lo=0.0, hi=1.0), None, red,
              id="cross_entropy_loss-probs-%d" % red),
            C("aten::cross_entropy_loss", f("f32[3,4,2]"), f("f32[3,4,2]", lo=0.0, hi=1.0), f("f32[4]", **POS),
              red, -100, 0.2, id="cross_entropy_loss-probs-weight-smooth-%d" % red),
        ])
        A([
            C("aten::cross_entropy_loss", f("f32[6,5]"), i("i64[6]", lo=0, hi=5), None, red, 1, 0.1,
              id="cross_entropy_loss-smooth-ignore-%d" % red),
            C("aten::cross_entropy_loss", f("f32[2,5,3]"), i("i64[2,3]", lo=0, hi=5), f("f32[5]", **POS), red,
              2, 0.25, id="cross_entropy_loss-smooth-weight-ignore-%d" % red),
            C("aten::cross_entropy_loss", f("f32[5]"), i("i64[]", lo=0, hi=5), f("f32[5]", **POS), red,
              id="cross_entropy_loss-unbatched-%d" % red),
            C("aten::cross_entropy_loss", f("f32[5]"), i("i64[]", lo=0, hi=5), None, red, -100, 0.3,
              id="cross_entropy_loss-unbatched-smooth-%d" % red),
        ])
    A([C("aten::cross_entropy_loss", f("f32[4,5]"), i("i64[4]", lo=0, hi=5), f("f32[5]", **POS), 1, 3,
         id="cross_entropy_loss-weight-ignore")])
    return out
