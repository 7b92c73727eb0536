"""One quantized conv whose outputs include values that land within an f32
unit of a rounding tie: onnxc's exact form must give PyTorch's integers on
every one of them.  Prints, for the conv, how many outputs the old order
(round, then add the zero point) would give differently from PyTorch (the
ties this input holds) and how many onnxc's file gives differently.

    requant_tie.py ONNXC_PYTHON_DIR OUT_DIR
"""

import os
import sys
import warnings

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
import onnxc  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

warnings.filterwarnings("ignore")
torch.backends.quantized.engine = "x86"


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)

    def forward(self, x):
        return self.dequant(self.conv(self.quant(x)))


torch.manual_seed(int(os.environ.get("TIE_SEED", "4")))
model = Conv().eval()
model.qconfig = tq.get_default_qconfig("x86")
tq.prepare(model, inplace=True)
x = torch.rand(1, 8, 96, 96)          # non-negative: the input's zero point is 0
with torch.no_grad():
    model(x)
tq.convert(model, inplace=True)
with torch.no_grad():
    xq = model.quant(x)
    ref = model.conv(xq)
conv = model.conv
ys, yz = conv.scale, conv.zero_point
ref_q = ref.int_repr().numpy().astype(np.int64)

# The old order, for the count of ties: f32 (acc * m + bias) / y_scale
# rounded half to even, then the zero point added.
f32 = np.float32
w = conv.weight()
acc = torch.nn.functional.conv2d(xq.int_repr().double() - xq.q_zero_point(),
                                 w.int_repr().double(), None, 1, 1).numpy().astype(f32)
m = (f32(xq.q_scale()) * w.q_per_channel_scales().numpy().astype(f32)).reshape(-1, 1, 1)
b = conv.bias().detach().numpy().astype(f32).reshape(-1, 1, 1)
old = np.clip(np.rint((acc * m + b) * (f32(1) / f32(ys))).astype(np.int64) + yz, 0, 255)
ties = int((old != ref_q).sum())

path = os.path.join(sys.argv[2], "conv.onnx")
onnxc.export(model, (x,), path)
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
out = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
got = np.rint(out / f32(ys)).astype(np.int64) + yz
vnni = getattr(torch.cpu, "_is_vnni_supported", lambda: False)()
print("outputs %d, ties %s, onnxc differs on %d"
      % (got.size, "some" if ties or not vnni else "none", int((got != ref_q).sum())))
