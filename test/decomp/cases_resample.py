"""Cases of check_decomps.py for decomps/resample.fxir: F.interpolate's
1-D and 3-D nearest, linear, bicubic and trilinear overloads, as output
sizes and as scale factors, both corner modes, up and down; and the
anti-aliased bilinear of nn.fxir.

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X) and takes the returned list.
"""


def cases(m):
    C, X = m.C, m.X
    x1, x2, x3 = X("f32[2,3,7]"), X("f32[2,3,5,7]"), X("f32[1,2,3,4,5]")
    out = []
    A = out.extend
    # anti-aliased bilinear (nn.fxir): down by whole and by fractional
    # factors, to 1, and up (where the filter is plain bilinear)
    xa = X("f32[2,3,10,20]")
    A([
        C("aten::_upsample_bilinear2d_aa", xa, [3, 3], False, id="_upsample_bilinear2d_aa-down"),
        C("aten::_upsample_bilinear2d_aa", xa, [5, 10], False, id="_upsample_bilinear2d_aa-half"),
        C("aten::_upsample_bilinear2d_aa", xa, [7, 31], False, id="_upsample_bilinear2d_aa-mixed"),
        C("aten::_upsample_bilinear2d_aa", xa, [1, 1], False, id="_upsample_bilinear2d_aa-1x1"),
        C("aten::_upsample_bilinear2d_aa", xa, [13, 40], False, id="_upsample_bilinear2d_aa-up"),
        C("aten::_upsample_bilinear2d_aa.vec", xa, [4, 6], False, None, id="_upsample_bilinear2d_aa.vec"),
    ])
    A([
        C("aten::upsample_nearest1d.vec", x1, [12], None, id="upsample_nearest1d.vec-size"),
        C("aten::upsample_nearest1d.vec", x1, [4], None, id="upsample_nearest1d.vec-down"),
        C("aten::upsample_nearest1d.vec", x1, None, [2.5], id="upsample_nearest1d.vec-scale"),
        C("aten::upsample_nearest1d", x1, [11], id="upsample_nearest1d"),
        C("aten::upsample_nearest1d", x1, [14], 2.0, id="upsample_nearest1d-scales"),
        C("aten::upsample_nearest3d.vec", x3, [5, 6, 9], None, id="upsample_nearest3d.vec-size"),
        C("aten::upsample_nearest3d.vec", x3, None, [2.0, 1.5, 0.5], id="upsample_nearest3d.vec-scale"),
        C("aten::upsample_nearest3d", x3, [6, 4, 10], id="upsample_nearest3d"),
        C("aten::upsample_nearest3d", x3, [6, 8, 10], 2.0, 2.0, 2.0, id="upsample_nearest3d-scales"),
    ])
    for corners in (False, True):
        s = "-corners" if corners else ""
        A([
            C("aten::upsample_linear1d.vec", x1, [12], corners, None, id="upsample_linear1d.vec-size" + s),
            C("aten::upsample_linear1d.vec", x1, [3], corners, None, id="upsample_linear1d.vec-down" + s),
            C("aten::upsample_linear1d.vec", x1, None, corners, [1.5], id="upsample_linear1d.vec-scale" + s),
            C("aten::upsample_linear1d", x1, [9], corners, id="upsample_linear1d" + s),
            C("aten::upsample_linear1d", x1, [14], corners, 2.0, id="upsample_linear1d-scales" + s),
            C("aten::upsample_bicubic2d.vec", x2, [9, 11], corners, None, id="upsample_bicubic2d.vec-size" + s),
            C("aten::upsample_bicubic2d.vec", x2, [3, 4], corners, None, id="upsample_bicubic2d.vec-down" + s),
            C("aten::upsample_bicubic2d.vec", x2, [1, 1], corners, None, id="upsample_bicubic2d.vec-size1" + s),
            C("aten::upsample_bicubic2d.vec", x2, None, corners, [2.0, 1.5], id="upsample_bicubic2d.vec-scale" + s),
            C("aten::upsample_bicubic2d", x2, [8, 13], corners, id="upsample_bicubic2d" + s),
            C("aten::upsample_bicubic2d", x2, [10, 14], corners, 2.0, 2.0, id="upsample_bicubic2d-scales" + s),
            C("aten::upsample_trilinear3d.vec", x3, [5, 6, 9], corners, None, id="upsample_trilinear3d.vec-size" + s),
            C("aten::upsample_trilinear3d.vec", x3, [2, 2, 3], corners, None, id="upsample_trilinear3d.vec-down" + s),
            C("aten::upsample_trilinear3d.vec", x3, None, corners, [2.0, 1.5, 1.2], id="upsample_trilinear3d.vec-scale" + s),
            C("aten::upsample_trilinear3d", x3, [4, 5, 6], corners, id="upsample_trilinear3d" + s),
            C("aten::upsample_trilinear3d", x3, [6, 8, 10], corners, 2.0, 2.0, 2.0,
              id="upsample_trilinear3d-scales" + s),
        ])
    return out
