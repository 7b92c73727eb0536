"""Cases of check_decomps.py for the edge modes: pooling's ceil_mode,
count_include_pad, padding and dilation in combination, and reductions
over 0-d tensors, over empty dims and over an empty dim list.

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X, f, i, b) and takes the returned list.
"""

import itertools


def cases(m):
    return pooling(m) + reductions(m)


def pad_ok(kernel, dilation, pad):
    """PyTorch's rule: padding at most half the (dilated) kernel."""
    return pad <= ((kernel - 1) * dilation + 1) // 2


def pooling(m):
    C, f = m.C, m.f
    out = []
    # 2-D over an odd-sized input, so that ceil_mode adds a partial window.
    for k, s, p, d, ceil in itertools.product((2, 3), (1, 2, 3), (0, 1), (1, 2), (False, True)):
        if not pad_ok(k, d, p):
            continue
        tag = "k%d-s%d-p%d-d%d%s" % (k, s, p, d, "-ceil" if ceil else "")
        out.append(C("aten::max_pool2d", f("f32[1,2,7,8]"), [k, k], [s, s], [p, p], [d, d], ceil,
                     id="max_pool2d-edge-" + tag))
    for k, s, p, ceil, inc in itertools.product((2, 3), (1, 2, 3), (0, 1), (False, True), (False, True)):
        if not pad_ok(k, 1, p):
            continue
        tag = "k%d-s%d-p%d%s%s" % (k, s, p, "-ceil" if ceil else "", "" if inc else "-exclude")
        out.append(C("aten::avg_pool2d", f("f32[1,2,7,8]"), [k, k], [s, s], [p, p], ceil, inc,
                     id="avg_pool2d-edge-" + tag))
    # Different modes per axis, 1-D and 3-D.
    out += [
        C("aten::max_pool2d", f("f32[2,3,9,6]"), [3, 2], [2, 1], [1, 0], [2, 1], True,
          id="max_pool2d-edge-mixed-ceil"),
        C("aten::avg_pool2d", f("f32[2,3,9,6]"), [3, 2], [2, 3], [1, 1], True, False,
          id="avg_pool2d-edge-mixed-ceil-exclude"),
        C("aten::avg_pool2d", f("f32[2,3,9,6]"), [3, 2], [2, 3], [1, 1], True, True,
          id="avg_pool2d-edge-mixed-ceil-include"),
        C("aten::avg_pool2d", f("f32[1,2,7,7]"), [3, 3], [2, 2], [1, 1], True, True, 4,
          id="avg_pool2d-edge-divisor-ceil", xfail="avg_pool2d with divisor_override has no "
          "decomposition (AveragePool divides by the window's count)"),
        C("aten::max_pool1d", f("f32[2,3,11]"), [3], [2], [1], [3], True, id="max_pool1d-edge-dilated-ceil"),
        C("aten::max_pool1d", f("f32[2,3,10]"), [4], [3], [2], [1], True, id="max_pool1d-edge-ceil-pad2"),
        C("aten::avg_pool1d", f("f32[2,3,10]"), [4], [3], [2], True, False, id="avg_pool1d-edge-ceil-exclude"),
        C("aten::avg_pool1d", f("f32[2,3,10]"), [4], [3], [2], True, True, id="avg_pool1d-edge-ceil-include"),
        C("aten::max_pool3d", f("f32[1,2,5,6,7]"), [2, 3, 2], [2, 2, 3], [1, 1, 0], [2, 1, 2], True,
          id="max_pool3d-edge-dilated-ceil"),
        C("aten::avg_pool3d", f("f32[1,2,5,6,7]"), [2, 3, 2], [2, 2, 3], [1, 1, 0], True, False,
          id="avg_pool3d-edge-ceil-exclude"),
        C("aten::avg_pool3d", f("f32[1,2,5,6,7]"), [2, 3, 2], [2, 2, 3], [1, 1, 0], True, True,
          id="avg_pool3d-edge-ceil-include"),
        C("aten::max_pool2d_with_indices", f("f32[1,2,7,8]"), [3, 3], [2, 2], [1, 1], [2, 2], True,
          id="max_pool2d_with_indices-edge-dilated-ceil"),
    ]
    return out


def reductions(m):
    C, f, i, b = m.C, m.f, m.i, m.b
    S = "f32[]"
    out = [
        # 0-d tensors: dim 0 and -1 name the tensor itself
        C("aten::sum", f(S), id="sum-0d"),
        C("aten::sum.dim_IntList", f(S), [0], id="sum.dim_IntList-0d"),
        C("aten::sum.dim_IntList", f(S), [-1], True, id="sum.dim_IntList-0d-keepdim"),
        C("aten::mean.dim", f(S), [0], id="mean.dim-0d"),
        C("aten::mean", f(S), id="mean-0d"),
        C("aten::prod", f(S), id="prod-0d"),
        C("aten::prod.dim_int", f(S), 0, id="prod.dim_int-0d"),
        C("aten::amax", f(S), [0], id="amax-0d"),
        C("aten::amin", f(S), [], id="amin-0d-nodims"),
        C("aten::max", f(S), id="max-0d"),
        C("aten::max.dim", f(S), 0, id="max.dim-0d"),
        C("aten::min.dim", f(S), -1, True, id="min.dim-0d-keepdim"),
        C("aten::argmax", f(S), 0, id="argmax-0d"),
        C("aten::argmin", f(S), id="argmin-0d-flat"),
        C("aten::logsumexp", f(S), [0], id="logsumexp-0d"),
        C("aten::cumsum", f(S), 0, id="cumsum-0d"),
        C("aten::any", b("f32[]"), id="any-0d"),
        C("aten::any.dim", b("f32[]"), 0, id="any.dim-0d"),
        C("aten::all", b("f32[]"), id="all-0d"),
        C("aten::var.correction", f(S), None, correction=0, id="var.correction-0d"),
        C("aten::norm.ScalarOpt_dim", f(S), 2, [0], id="norm.ScalarOpt_dim-0d"),
        C("aten::sum", i("i64[]"), id="sum-0d-i64"),
        # empty dims: sums are 0, products 1, means nan, any false, all true
        C("aten::sum.dim_IntList", f("f32[0,3]"), [0], id="sum.dim_IntList-empty"),
        C("aten::sum.dim_IntList", f("f32[2,0]"), [1], True, id="sum.dim_IntList-empty-keepdim"),
        C("aten::sum", f("f32[0,3]"), id="sum-empty"),
        C("aten::sum", i("i64[3,0]"), id="sum-empty-i64"),
        C("aten::mean.dim", f("f32[0,3]"), [0], id="mean.dim-empty"),
        C("aten::mean.dim", f("f32[2,0,3]"), [-2], True, id="mean.dim-empty-keepdim"),
        C("aten::mean", f("f32[0]"), id="mean-empty", xfail="ReduceMean of an empty set is "
          "undefined in ONNX (ONNX Runtime's is not PyTorch's nan); only mean.dim over one "
          "empty dim is written as a sum over 0"),
        C("aten::prod.dim_int", f("f32[2,0]"), 1, id="prod.dim_int-empty"),
        C("aten::prod", f("f32[0]"), id="prod-empty"),
        C("aten::any.dim", b("f32[2,0]"), 1, id="any.dim-empty"),
        C("aten::all", b("f32[0,2]"), id="all-empty"),
        C("aten::any", b("f32[0]"), id="any-empty"),
        C("aten::cumsum", f("f32[2,0]"), 1, id="cumsum-empty"),
        C("aten::logsumexp", f("f32[2,0]"), [1], id="logsumexp-empty"),
        C("aten::amax", f("f32[0,3]"), [1], id="amax-empty-other-dim"),
        C("aten::sum.dim_IntList", f("f32[0,3]"), [1], id="sum.dim_IntList-empty-other-dim"),
        C("aten::sum.dim_IntList", f("f32[2,0,3]"), [-2], True, id="sum.dim_IntList-empty-negdim",
          xfail="ONNX Runtime's ReduceSum keeps an empty dim named by a negative axis (shape "
                "[2,0,3] for [2,1,3]); the model is valid ONNX"),
        # an empty dim list reduces every dim (PyTorch's sum.dim_IntList, amax)
        C("aten::sum.dim_IntList", f("f32[2,3]"), [], id="sum.dim_IntList-nodims"),
        C("aten::sum.dim_IntList", f("f32[2,3]"), [], True, id="sum.dim_IntList-nodims-keepdim"),
        C("aten::mean.dim", f("f32[2,3]"), [], id="mean.dim-nodims"),
        C("aten::amax", f("f32[2,3]"), [], id="amax-nodims"),
        C("aten::sum.dim_IntList", f("f32[2,3]"), None, id="sum.dim_IntList-none"),
    ]
    return out
