"""The modern zoo's comparison of a detector's outputs: two detections whose
scores are closer than PyTorch's own f32 error may come in either order.
The rows are Faster R-CNN's (ResNet-50) on torch 2.x: PyTorch's f32 scores
0.7921287 (label 68) and 0.7920098 (label 8), f64 0.7920734 and 0.7919856;
ONNX Runtime's 0.7920119 (8) and 0.7920085 (68)."""
import os
import sys

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "test", "zoo"))
import run_modern_zoo as Z  # noqa: E402

boxes = np.array([[67.46, 91.13, 122.04, 114.48], [72.81, 45.10, 128.0, 86.31],
                  [10.0, 10.0, 20.0, 20.0]], np.float32)
want = [boxes, np.array([68, 8, 3]), np.array([0.7921287, 0.7920098, 0.5], np.float32)]
got = [boxes[[1, 0, 2]] + 1e-4, np.array([8, 68, 3]),
       np.array([0.7920119, 0.7920085, 0.5], np.float32)]
for tie in (0.0, 2 * 6.4e-5):
    try:
        Z.compare(*Z.order_ties(want, got, tie))
        print("tie %.2g: match" % tie)
    except Z.Mismatch as e:
        print("tie %.2g: %s" % (tie, e))
# The reference's order is kept where the scores are apart.
w, g = Z.order_ties(want, got, 2 * 6.4e-5)
print("labels", w[1].tolist(), g[1].tolist())
