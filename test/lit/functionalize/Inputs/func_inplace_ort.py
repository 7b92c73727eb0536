"""Runs func_inplace.fxir's ONNX files in ONNX Runtime and compares them
with the same program in eager PyTorch: outputs o and s, then x's
updated value (the mutated graph input).

    python func_inplace_ort.py MODEL.onnx...
"""
import sys

import numpy as np
import onnxruntime as ort
import torch


def reference(x, y):
    x = x.clone()
    c = x.clone()
    v = c[1]
    v.mul_(y)                       # Inner, called by Outer
    r = v.neg()
    o = c + r
    t = (y * 2).relu_()             # Block
    x.add_(t)
    s = x.sigmoid()
    return [o, s, x]


def main():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, generator=g)
    y = torch.randn(4, generator=g)
    want = [t.numpy() for t in reference(x, y)]
    bad = 0
    for path in sys.argv[1:]:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = sess.run(None, {"x": x.numpy(), "y": y.numpy()})
        names = [o.name for o in sess.get_outputs()]
        diff = max(float(np.abs(a - b).max()) for a, b in zip(got, want)) if len(got) == len(want) else None
        ok = diff is not None and diff <= 1e-5
        bad += not ok
        print("%s: outputs %s, max diff %s: %s" % (path.rsplit("/", 1)[-1], ",".join(names), diff,
                                                  "ok" if ok else "MISMATCH"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
