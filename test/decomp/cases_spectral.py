"""Cases of check_decomps.py for decomps/spectral.fxir: window functions,
the FFTs (`_fft_r2c`, `_fft_c2r`, `_fft_c2c`) and the ops on the complex
values they make.  Complex inputs and results are compared as onnxc lowers
them, real and imaginary parts in a trailing dim of 2 (check_decomps.py's
as_pairs).

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X, f, DT) and takes the returned list.
"""


def cases(m):
    C, X, f, DT = m.C, m.X, m.f, m.DT
    # istft divides by the overlap-added squared window: keep it away from 0.
    W = dict(lo=0.5, hi=1.5)
    out = []
    A = out.extend

    # -- windows: periodic or not, sizes odd and even, 1, dtype= --
    A([
        C("aten::hann_window", 8),
        C("aten::hann_window", 1, id="hann_window-1"),
        C("aten::hann_window", 6, dtype=DT("f64"), id="hann_window-f64"),
        C("aten::hann_window.periodic", 7, False),
        C("aten::hann_window.periodic", 7, True, id="hann_window.periodic-true"),
        C("aten::hamming_window", 10),
        C("aten::hamming_window.periodic", 9, False),
        C("aten::hamming_window.periodic_alpha", 6, True, 0.5),
        C("aten::hamming_window.periodic_alpha_beta", 6, False, 0.6, 0.3),
        C("aten::hamming_window.periodic_alpha_beta", 5, True, 0.5, 0.5, dtype=DT("f64"),
          id="hamming_window.periodic_alpha_beta-f64"),
        C("aten::blackman_window", 12),
        C("aten::blackman_window.periodic", 5, False),
        C("aten::blackman_window.periodic", 1, False, id="blackman_window.periodic-1"),
        C("aten::kaiser_window", 10),
        C("aten::kaiser_window.periodic", 9, False),
        C("aten::kaiser_window.beta", 8, True, 5.0),
        C("aten::kaiser_window.beta", 7, False, 20.0, dtype=DT("f64"),
          id="kaiser_window.beta-20-f64"),
        C("aten::kaiser_window.beta", 1, False, 3.0, id="kaiser_window.beta-1"),
        C("aten::bartlett_window", 8),
        C("aten::bartlett_window.periodic", 7, False),
        C("aten::bartlett_window.periodic", 6, True, dtype=DT("f64"),
          id="bartlett_window.periodic-f64"),
    ])

    # -- FFTs: sizes odd and even, each dim, the three norm modes --
    A([
        C("aten::_fft_r2c", f("f32[4,8]"), [1], 0, True),
        C("aten::_fft_r2c", f("f32[6,3]"), [0], 2, True, id="_fft_r2c-dim0-by_n"),
        C("aten::_fft_r2c", f("f32[2,7,3]"), [1], 1, False, id="_fft_r2c-twosided-sqrt"),
        C("aten::_fft_r2c", f("f64[16]"), [0], 1, True, id="_fft_r2c-f64"),
        C("aten::_fft_r2c", f("f32[3,5]"), [1], 2, True, id="_fft_r2c-odd"),
        C("aten::_fft_c2c", X("c64[4,8]"), [1], 0, True),
        C("aten::_fft_c2c", X("c64[3,5,6]"), [2], 2, False, id="_fft_c2c-inverse-by_n"),
        C("aten::_fft_c2c", X("c64[3,5,6]"), [0], 1, True, id="_fft_c2c-dim0-sqrt"),
        C("aten::_fft_c2c", X("c64[2,7,3]"), [1], 0, False, id="_fft_c2c-inverse-none"),
        C("aten::_fft_c2c", X("c128[8]"), [0], 1, False, id="_fft_c2c-c128"),
        C("aten::_fft_c2r", X("c64[4,5]"), [1], 2, 8),
        C("aten::_fft_c2r", X("c64[3,4]"), [1], 0, 7, id="_fft_c2r-odd-none"),
        C("aten::_fft_c2r", X("c64[5,3]"), [0], 1, 8, id="_fft_c2r-dim0-sqrt"),
        C("aten::_fft_c2r", X("c64[2,6,4]"), [1], 2, 8, id="_fft_c2r-longer-input"),
        C("aten::_fft_c2r", X("c128[9]"), [0], 2, 16, id="_fft_c2r-c128"),
        C("aten::_fft_r2c", f("f32[4,6,5]"), [0, 2], 2, True, id="_fft_r2c-2d"),
        C("aten::_fft_r2c", f("f32[3,4,6]"), [0, 1, 2], 1, False, id="_fft_r2c-3d-twosided"),
        C("aten::_fft_c2c", X("c64[3,4,5]"), [1, 2], 2, False, id="_fft_c2c-2d-inverse"),
        C("aten::_fft_c2c", X("c64[3,4,5]"), [0, 1, 2], 1, True, id="_fft_c2c-3d"),
        C("aten::_fft_c2r", X("c64[4,6,3]"), [0, 2], 0, 4, id="_fft_c2r-2d"),
        C("aten::_fft_c2r", X("c64[3,4,5]"), [0, 1, 2], 2, 8, id="_fft_c2r-3d"),
        C("aten::_fft_c2r", X("c64[2,5,4]"), [1, 2], 1, 7, id="_fft_c2r-2d-odd-sqrt"),
        C("aten::_fft_r2c", f("f32[4,8]"), [0], 1, False, opset=20, id="_fft_r2c-opset20"),
        # casts to complex and conjugates (irfft, hfft)
        C("aten::_to_copy", f("f32[3,4]"), dtype=DT("c64"), id="_to_copy-f32-c64"),
        C("aten::_to_copy", f("f64[5]"), dtype=DT("c128"), id="_to_copy-f64-c128"),
        C("aten::_to_copy", X("i64[2,3]", lo=-9, hi=9), dtype=DT("c64"), id="_to_copy-i64-c64"),
        C("aten::_to_copy", f("f32[]"), dtype=DT("c64"), id="_to_copy-0d-c64"),
        C("aten::_to_copy", X("c64[2,3]"), dtype=DT("c128"), id="_to_copy-c64-c128"),
        C("aten::_conj", X("c64[3,4]")),
        C("aten::_conj_physical", X("c128[5]")),
        C("aten::conj_physical", X("c64[2,2,3]")),
        C("aten::_fft_c2r", X("c64[4,5]"), [1], 0, 8, opset=20, id="_fft_c2r-opset20"),
        C("aten::_fft_c2c", X("c64[4,6]"), [1], 2, True, opset=17, id="_fft_c2c-opset17"),
    ])

    # -- stft / istft: centered or not, hops, windows and their lengths --
    A([
        C("aten::stft.center", f("f32[2,64]"), 16, 4, window=f("f32[16]"), return_complex=True),
        C("aten::stft.center", f("f32[64]"), 16, return_complex=True, id="stft.center-1d-defaults"),
        C("aten::stft.center", f("f32[2,50]"), 12, 5, 8, f("f32[8]"), False, "constant", True,
          return_complex=True, id="stft.center-uncentered-win8-normalized"),
        C("aten::stft.center", f("f64[3,40]"), 10, 3, pad_mode="constant", return_complex=True,
          id="stft.center-f64-constant-pad"),
        C("aten::stft.center", f("f32[2,64]"), 16, 8, return_complex=False,
          id="stft.center-real-pairs"),
        C("aten::stft", f("f32[2,64]"), 16, 4, return_complex=True),
        C("aten::stft.center", f("f32[2,64]"), 16, 4, return_complex=True, opset=17,
          id="stft.center-opset17"),
        C("aten::istft", X("c64[2,9,17]"), 16, 4, window=f("f32[16]", **W)),
        C("aten::istft", X("c64[9,13]"), 16, window=f("f32[16]", **W), id="istft-2d"),
        C("aten::istft", X("c64[2,9,13]"), 16, 4, window=f("f32[16]", **W), length=40,
          id="istft-length"),
        C("aten::istft", X("c64[2,7,11]"), 12, 3, 8, f("f32[8]", **W), normalized=True,
          id="istft-win8-normalized"),
        C("aten::istft", X("c64[2,7,11]"), 12, 3, window=f("f32[12]", **W), center=False,
          id="istft-uncentered"),
        C("aten::istft", X("c64[2,7,11]"), 12, 3, window=f("f32[12]", **W), center=False,
          length=30, id="istft-uncentered-length"),
        C("aten::istft", X("c128[2,9,10]"), 16, 6, window=f("f64[16]", **W),
          id="istft-c128-hop6"),
        C("aten::istft", X("c64[2,9,10]"), 16, 4, id="istft-rect-window"),
        C("aten::istft", X("c64[2,9,10]"), 16, 4, window=f("f32[16]", **W), opset=17,
          id="istft-opset17"),
    ])

    # -- complex values through the ops that carry them --
    A([
        C("aten::view_as_real", X("c64[3,4]")),
        C("aten::view_as_complex", f("f32[3,4,2]")),
        C("aten::view_as_complex", f("f64[5,2]"), id="view_as_complex-f64"),
        C("aten::view", X("c64[2,6]"), [3, 4], id="view-c64"),
        C("aten::reshape", X("c64[2,6]"), [-1], id="reshape-c64"),
        C("aten::_unsafe_view", X("c64[2,6]"), [4, 3], id="_unsafe_view-c64"),
        C("aten::clone", X("c64[2,3]"), id="clone-c64"),
        C("aten::slice.Tensor", X("c64[4,6]"), 1, 1, 5, id="slice.Tensor-c64"),
        C("aten::slice.Tensor", X("c64[4,6]"), -1, None, -1, id="slice.Tensor-c64-neg"),
        C("aten::slice.Tensor", X("c64[4,6]"), 0, 1, None, 2, id="slice.Tensor-c64-step"),
        C("aten::select.int", X("c64[3,4]"), -1, 2, id="select.int-c64"),
        C("aten::unsqueeze", X("c64[3,4]"), -1, id="unsqueeze-c64"),
        C("aten::transpose.int", X("c64[2,3,4]"), 0, -1, id="transpose.int-c64"),
        C("aten::permute", X("c64[2,3,4]"), [2, 0, 1], id="permute-c64"),
        C("aten::constant_pad_nd", X("c64[2,3]"), [1, 2, 0, 1], 0.0, id="constant_pad_nd-c64"),
        C("aten::mul.Tensor", X("c64[3,4]"), X("c64[3,4]"), id="mul.Tensor-c64"),
        C("aten::mul.Tensor", X("c64[3,4]"), f("f32[4]"), id="mul.Tensor-c64-f32"),
        C("aten::mul.Tensor", f("f32[3,1]"), X("c64[3,4]"), id="mul.Tensor-f32-c64"),
        C("aten::mul.Tensor", X("c64[3,4]"), 0.5, id="mul.Tensor-c64-number"),
        C("aten::mul.Tensor", X("c128[5]"), -2.0, id="mul.Tensor-c128-number"),
        C("aten::polar", f("f32[3,4]"), f("f32[3,4]"), id="polar"),
        C("aten::polar", f("f32[3,1]"), f("f32[4]"), id="polar-broadcast"),
        C("aten::polar", f("f64[5]"), f("f64[5]"), id="polar-f64"),
        C("aten::add.Tensor", X("c64[3,4]"), X("c64[4]"), id="add.Tensor-c64"),
        C("aten::sub.Tensor", X("c64[3,4]"), X("c64[3,4]"), id="sub.Tensor-c64"),
        C("aten::angle", X("c64[3,4]")),
        C("aten::angle", X("c128[5]"), id="angle-c128",
          xfail="ONNX Runtime's CPU Atan takes f32 only; the model is valid ONNX"),
        C("aten::abs", X("c64[3,4]"), id="abs-c64"),
        C("aten::abs", X("c128[5]"), id="abs-c128"),
    ])
    return out
