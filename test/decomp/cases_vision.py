"""Cases of check_decomps.py for decomps/torchvision.fxir: torchvision's
nms and roi_align, compared with torch.ops.torchvision; and the bicubic
upsampling (decomps/resample.fxir) Keypoint R-CNN's heatmaps need, at
their shapes.

Boxes are drawn as detection models make them: (x1, y1, x2, y2) with
x1 < x2 and y1 < y2, many of them overlapping (clustered corners, a few
exact duplicates), and scores with ties when asked for.  RoI lists are
[K, 5] rows (batch index, x1, y1, x2, y2), some boxes smaller than a
pixel and some reaching past the image.

check_decomps.py calls `cases(module)` with itself, for its vocabulary
(C, X) and takes the returned list.
"""

import numpy as np


def cases(m):
    C, X = m.C, m.X

    class Boxes(X):
        """[n, 4] boxes in a `size` square, `wide` their largest side;
        the last `dup` repeat the first ones exactly."""

        def __init__(self, spec, size=20.0, wide=12.0, dup=2):
            super().__init__(spec)
            self.size, self.wide, self.dup = size, wide, dup

        def draw(self, rng):
            n = self.shape[0]
            xy = rng.uniform(0, self.size, (n, 2))
            wh = rng.uniform(0.5, self.wide, (n, 2))
            boxes = np.concatenate([xy, xy + wh], axis=1)
            for k in range(min(self.dup, n // 2)):
                boxes[n - 1 - k] = boxes[k]
            return boxes.astype(self.np_dtype())

        def np_dtype(self):
            return np.float64 if self.dtype == "f64" else np.float32

    class Scores(X):
        """[n] scores; with `levels`, drawn from that many values (ties)."""

        def __init__(self, spec, levels=None):
            super().__init__(spec)
            self.levels = levels

        def draw(self, rng):
            n = self.shape[0]
            dt = np.float64 if self.dtype == "f64" else np.float32
            if self.levels:
                return (rng.integers(0, self.levels, n) / self.levels).astype(dt)
            return rng.uniform(0, 1, n).astype(dt)

    class Rois(X):
        """[k, 5] RoIs over a batch of `batch` images of `h` x `w` pixels at
        `scale` (boxes in input coordinates, as the model's are)."""

        def __init__(self, spec, batch=2, h=10, w=12, scale=1.0):
            super().__init__(spec)
            self.batch, self.h, self.w, self.scale = batch, h, w, scale

        def draw(self, rng):
            k = self.shape[0]
            dt = np.float64 if self.dtype == "f64" else np.float32
            bi = rng.integers(0, self.batch, (k, 1)).astype(np.float64)
            x1 = rng.uniform(-2, self.w, (k, 1))
            y1 = rng.uniform(-2, self.h, (k, 1))
            # Every third box is under a pixel (aligned=False makes it 1x1).
            side = np.where(np.arange(k)[:, None] % 3 == 0, rng.uniform(0.1, 0.9, (k, 2)),
                            rng.uniform(1.0, 8.0, (k, 2)))
            rois = np.concatenate([bi, x1, y1, x1 + side[:, :1], y1 + side[:, 1:]], axis=1)
            rois[:, 1:] /= self.scale
            return rois.astype(dt)

    out = []
    A = out.extend

    # -- nms: thresholds from 0 (any overlap suppresses) to above 1 (none
    #    does), ties in the scores, exact duplicates (IoU 1), f64 --
    for thr in [0.0, 0.3, 0.5, 0.7, 1.0, 1.5]:
        A([C("torchvision::nms", Boxes("f32[40,4]"), Scores("f32[40]"), thr,
             id="nms-%g" % thr)])
    A([
        C("torchvision::nms", Boxes("f32[60,4]"), Scores("f32[60]", levels=4), 0.5,
          id="nms-ties"),
        C("torchvision::nms", Boxes("f32[30,4]", size=60.0, wide=6.0), Scores("f32[30]", levels=2),
          0.2, id="nms-ties-sparse"),
        C("torchvision::nms", Boxes("f64[40,4]"), Scores("f64[40]"), 0.45, id="nms-f64"),
        C("torchvision::nms", Boxes("f32[1,4]"), Scores("f32[1]"), 0.5, id="nms-one"),
    ])

    # -- roi_align: aligned or not, adaptive (-1, 0) or fixed sampling,
    #    spatial scales below 1 as the FPN levels' --
    for aligned in [True, False]:
        for ratio in [-1, 0, 2]:
            for scale in [1.0, 0.5, 0.25]:
                A([C("torchvision::roi_align", X("f32[2,3,10,12]"),
                     Rois("f32[7,5]", scale=scale), scale, 3, 2, ratio, aligned,
                     id="roi_align-%s-%d-%g" % ("aligned" if aligned else "legacy", ratio, scale))])
    A([
        C("torchvision::roi_align", X("f32[1,4,16,16]"), Rois("f32[5,5]", batch=1, h=16, w=16,
                                                               scale=0.125), 0.125, 7, 7, 2, False,
          id="roi_align-7x7"),
        C("torchvision::roi_align", X("f64[2,3,10,12]"), Rois("f64[6,5]"), 1.0, 2, 2, -1, True,
          id="roi_align-f64"),
        C("torchvision::roi_align", X("f32[2,3,10,12]"), Rois("f32[4,5]"), 1, 2, 3, 1, True,
          id="roi_align-int-scale"),
    ])

    # -- upsample_bicubic2d (decomps/resample.fxir): Keypoint R-CNN's heatmaps --
    x = X("f32[2,3,5,6]")
    A([
        C("aten::upsample_bicubic2d.vec", x, [9, 13], False, None, id="upsample_bicubic2d.vec-size-heatmap"),
        C("aten::upsample_bicubic2d.vec", x, [9, 13], True, None, id="upsample_bicubic2d.vec-size-corners-heatmap"),
        C("aten::upsample_bicubic2d.vec", x, [3, 4], False, None, id="upsample_bicubic2d.vec-down-heatmap"),
        C("aten::upsample_bicubic2d.vec", x, None, False, [2.0, 1.5], id="upsample_bicubic2d.vec-scale-heatmap"),
        C("aten::upsample_bicubic2d.vec", x, None, True, [2.0, 1.5], id="upsample_bicubic2d.vec-scale-corners-heatmap"),
        C("aten::upsample_bicubic2d", x, [10, 14], False, id="upsample_bicubic2d-heatmap"),
        C("aten::upsample_bicubic2d", x, [7, 8], True, id="upsample_bicubic2d-corners-heatmap"),
    ])
    return out
