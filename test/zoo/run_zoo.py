#!/usr/bin/python3
"""The zoo sweep: torchvision's and torchaudio's model builders through onnxc.

Every model builder of torchvision's classification, segmentation, video and
detection/keypoint families with at most 62 M parameters (eval mode, seeded,
BatchNorm given trained-looking statistics, detectors' class scores spread
apart, small inputs), and torchaudio's
models in small configurations, goes through the bridge (utils/fxir_export.py)
and `onnxc -O2`, runs in ONNX Runtime and is compared with PyTorch (max abs
diff <= 1e-4 on float outputs, times the largest output magnitude when that
is above 1; exact otherwise; an output that is all near zero is refused as a
reference, as in the end-to-end tests, and so are float outputs that are all
empty: a detector that keeps no box).

    /usr/bin/python3 test/zoo/run_zoo.py [--onnxc PATH] [-k PATTERN] [--list] [-j N]
                                         [--timeout SECONDS] [--markdown FILE]

Each model runs in its own process (a crash or a timeout is that model's
failure).  A model listed in KNOWN_FAILURES below, with the reason it does not
convert yet, counts as a skip when it fails as listed; any other failure
counts as failed, and a listed model that passes counts as passed and is
reported so the list can shrink.  Prints one row a model (stage reached, the
first unsupported op or the max difference, time) and, alone on the last
line, `N passed, N failed, N skipped`.  Exit status 1 when a model fails.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

MAX_PARAMS = 62e6

# name -> why it does not convert yet.  The reason is matched against the
# failure message (a substring), so a model that starts failing differently
# is reported as a new failure.
KNOWN_FAILURES = {
    # They convert, and boxes, labels and scores match; the per-detection
    # outputs of two detections do not.  Two detections whose scores are
    # within 5e-5 (Keypoint R-CNN: rows 61/62 and 96/97, 2e-6 apart; Mask
    # R-CNN v2: rows 51/52) come in the other order in ONNX Runtime, whose
    # f32 scores differ from PyTorch's by up to 2e-4.  The keypoint decoding
    # (heatmaps_to_keypoints) and the mask pasting (paste_masks_in_image)
    # read each detection's box size in Python (.item(), int(box)), which the
    # bridge specializes to PyTorch's run, in PyTorch's order: each of the
    # swapped pair is resized and placed with the other's box.
    "keypointrcnn_resnet50_fpn": "max diff",
    "maskrcnn_resnet50_fpn_v2": "max diff",
    # Tacotron2's prenet applies dropout in eval mode too
    # (F.dropout(training=True)): PyTorch's own output changes from one run
    # to the next, so no reference exists.
    "tacotron2": "max diff",
}


# -- the models ----------------------------------------------------------------

def _tv_size(name):
    """Input size for a torchvision classifier: small, except where the
    architecture fixes it (patch/window sizes) or needs a minimum."""
    if name.startswith(("vit_", "swin", "maxvit")):
        return 224
    if name in ("inception_v3",):
        return 96
    return 64


def torchvision_models():
    """[(name, family, builder)] for the torchvision families."""
    import torchvision.models as M
    out = []
    families = [("classification", M), ("segmentation", M.segmentation),
                ("video", M.video), ("detection", M.detection)]
    for family, module in families:
        for name in M.list_models(module=module):
            weights = list(M.get_model_weights(name))
            params = weights[0].meta.get("num_params", 0) if weights else 0
            if params > MAX_PARAMS:
                continue
            out.append((name, family, ("torchvision", family, name)))
    return out


AUDIO = ["conformer", "emformer", "hdemucs", "wav2vec2", "hubert", "wavernn",
         "tacotron2", "conv_tasnet", "deepspeech", "wav2letter"]


def all_models():
    rows = []
    try:
        rows += torchvision_models()
    except ImportError as e:
        rows.append(("torchvision", "classification", ("missing", str(e))))
    rows += [(n, "audio", ("torchaudio", "audio", n)) for n in AUDIO]
    return rows


def _build_torchvision(family, name):
    import torch
    import torchvision.models as M
    import models as e2e_models     # test/e2e: _lively
    torch.manual_seed(0)
    kw = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kw["aux_logits"] = False
        kw["init_weights"] = False
    if family == "segmentation":
        kw["weights_backbone"] = None
        kw["aux_loss"] = False
    if family == "detection":
        kw["weights_backbone"] = None
        # Random weights score no box above the default thresholds, which
        # would leave the outputs empty and the comparison without numbers.
        if "rcnn" in name:
            kw["box_score_thresh"] = 0.0
        else:
            kw["score_thresh"] = 0.0
        # The R-CNNs, RetinaNet and FCOS resize images to 800 pixels or
        # so: keep the example's 128, for time and so that fewer boxes
        # meet (each IoU within f32 rounding of a threshold can change
        # what NMS keeps).  SSD's sizes are fixed by its anchors.
        if not name.startswith("ssd"):
            kw["min_size"] = kw["max_size"] = 128
    model = M.get_model(name, **kw).eval()
    e2e_models._lively(model)
    g = torch.Generator().manual_seed(2)
    if family == "classification":
        s = _tv_size(name)
        args = (torch.randn(1, 3, s, s, generator=g),)
    elif family == "segmentation":
        args = (torch.randn(1, 3, 64, 64, generator=g),)
    elif family == "video":
        if name.startswith("mvit"):
            args = (torch.randn(1, 3, 16, 224, 224, generator=g),)
        elif name == "s3d":
            args = (torch.randn(1, 3, 16, 224, 224, generator=g),)
        else:
            args = (torch.randn(1, 3, 4, 32, 32, generator=g),)
    else:
        args = ([torch.rand(3, 128, 128, generator=g)],)
    if family != "detection":
        # Eight other inputs of the example's shape: enough samples a
        # channel that the deepest (2x2) maps give steady statistics.
        x = args[0]
        _calibrate_batch_norm(model, (torch.randn((8,) + tuple(x.shape[1:]), generator=g),))
    else:
        # Two other images (resized to 320-800 pixels by the model: samples
        # enough), then class scores apart.
        _calibrate_batch_norm(model, ([torch.rand(3, 128, 128, generator=g) for _ in range(2)],))
        _spread_scores(model, args)
    return model, args


def _spread_scores(model, args):
    """Class scores far apart, as a trained detector's.  A random head
    scores every anchor about 1/num_classes (ssdlite's 300 best of a class
    within 1e-6 of each other, many equal): which boxes top-k and NMS keep,
    and in which order, is then decided by f32 rounding, not by the model.
    The layers that output class logits get weights ten times larger and
    biases drawn from N(0, 1).  Where that spreads a layer's logits (its
    weights' part) wider than a standard deviation of 5, as on SSD300's
    VGG features (up to 43), which no BatchNorm scales, its weights are
    scaled back to 5: wider, the softmax gives 1.0 in f32 to thousands of
    boxes, and which of those equal scores the model keeps is again f32
    rounding's choice.  (The R-CNNs, RetinaNet, FCOS and SSDlite spread
    theirs 0.5 to 4.1; Keypoint R-CNN's box classifier 5.5.)"""
    import re
    import torch
    g = torch.Generator().manual_seed(3)
    logits = re.compile(r"(.*\.(cls_logits|cls_score)|head\.classification_head\.module_list\.\d+(\.1)?)$")
    spread = {}

    def measure(mod, inputs, out):
        part = out if mod.bias is None else out - mod.bias.view((-1,) + (1,) * (out.dim() - 2))
        spread[mod] = max(spread.get(mod, 0.0), float(part.std()))   # once a level

    hooks = []
    with torch.no_grad():
        for name, mod in model.named_modules():
            if isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)) and logits.match(name):
                mod.weight.mul_(10.0)
                if mod.bias is not None:
                    mod.bias.copy_(torch.randn(mod.bias.shape, generator=g))
                hooks.append(mod.register_forward_hook(measure))
        model(*args)
        for h in hooks:
            h.remove()
        for mod, std in spread.items():
            if std > 5.0:
                mod.weight.mul_(5.0 / std)


def _calibrate_batch_norm(model, args):
    """Running statistics measured on the example, as training leaves them:
    each BatchNorm normalizes what it sees, so outputs keep a trained
    network's magnitude instead of growing with depth (random statistics
    give a resnet152 logits of 1e14)."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None          # a cumulative average: one batch gives its statistics
        m.train()
    with torch.no_grad():
        model(*args)
    for m in bns:
        m.eval()
        # A channel that saw (almost) no variation would scale by
        # 1/sqrt(eps): f32 noise amplified layer after layer (PyTorch's own
        # f32 and f64 logits of efficientnet_v2_m differed by 18).  Trained
        # networks keep their variances well above that.
        m.running_var.clamp_(min=1e-2)


def _build_torchaudio(name):
    import torch
    import torchaudio.models as A
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(2)
    if name == "conformer":
        m = A.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=2,
                        depthwise_conv_kernel_size=3)
        args = (torch.randn(2, 20, 16, generator=g), torch.tensor([20, 15]))
    elif name == "emformer":
        m = A.Emformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=2,
                       segment_length=4, right_context_length=1)
        args = (torch.randn(2, 21, 16, generator=g), torch.tensor([21, 21]))
    elif name == "hdemucs":
        m = A.HDemucs(sources=["drums", "bass", "other", "vocals"], channels=8, depth=4,
                      nfft=1024)
        args = (torch.randn(1, 2, 8192, generator=g),)
    elif name in ("wav2vec2", "hubert"):
        hubert = name == "hubert"
        m = A.wav2vec2_model(
            extractor_mode="group_norm" if hubert else "layer_norm",
            extractor_conv_layer_config=[(32, 10, 5), (32, 3, 2), (32, 2, 2)],
            extractor_conv_bias=not hubert, encoder_embed_dim=32,
            encoder_projection_dropout=0.0, encoder_pos_conv_kernel=16,
            encoder_pos_conv_groups=4, encoder_num_layers=2, encoder_num_heads=4,
            encoder_attention_dropout=0.0, encoder_ff_interm_features=64,
            encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
            encoder_layer_norm_first=not hubert, encoder_layer_drop=0.0, aux_num_out=None)
        args = (torch.randn(1, 1600, generator=g),)
    elif name == "wavernn":
        m = A.WaveRNN(upsample_scales=[2, 2], n_classes=16, hop_length=4, n_res_block=2,
                      n_rnn=16, n_fc=16, kernel_size=5, n_freq=8, n_hidden=8, n_output=8)
        args = (torch.randn(1, 1, 4 * (10 - 5 + 1), generator=g),
                torch.randn(1, 1, 8, 10, generator=g))
    elif name == "tacotron2":
        m = A.Tacotron2(n_symbol=20, n_mels=8, symbol_embedding_dim=16,
                        encoder_embedding_dim=16, encoder_n_convolution=1,
                        encoder_kernel_size=3, decoder_rnn_dim=16, decoder_max_step=20,
                        decoder_early_stopping=False, attention_rnn_dim=16,
                        attention_hidden_dim=16, attention_location_n_filter=4,
                        attention_location_kernel_size=3, prenet_dim=8,
                        postnet_n_convolution=1, postnet_kernel_size=3,
                        postnet_embedding_dim=8)
        args = (torch.randint(0, 20, (1, 7), generator=g), torch.tensor([7]),
                torch.randn(1, 8, 5, generator=g), torch.tensor([5]))
    elif name == "conv_tasnet":
        m = A.ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=32,
                         msk_kernel_size=3, msk_num_feats=16, msk_num_hidden_feats=32,
                         msk_num_layers=2, msk_num_stacks=2)
        args = (torch.randn(1, 1, 800, generator=g),)
    elif name == "deepspeech":
        m = A.DeepSpeech(n_feature=16, n_hidden=32, n_class=10)
        args = (torch.randn(1, 1, 12, 16, generator=g),)
    elif name == "wav2letter":
        m = A.Wav2Letter(num_classes=10, input_type="mfcc", num_features=13)
        args = (torch.randn(1, 13, 200, generator=g),)
    else:
        raise ValueError("unknown torchaudio model %s" % name)
    return m.eval(), args


def build(spec):
    kind = spec[0]
    if kind == "torchvision":
        return _build_torchvision(spec[1], spec[2])
    if kind == "torchaudio":
        return _build_torchaudio(spec[2])
    raise ImportError(spec[1])


# -- one model, in a child process ----------------------------------------------

def run_one(spec, onnxc, workdir, r):
    """Fills r = {"stage", "ok", "detail", "nodes"}; the stage is the last one
    reached (build, reference, bridge, onnxc, ort, compare), also when this
    raises."""
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    sys.path.insert(0, os.path.join(REPO, "utils"))
    import re
    import torch
    import fxir_export
    import run_e2e as e2e

    try:
        model, args = build(spec)
    except ImportError as e:
        r["detail"] = "cannot build: %s" % e
        return
    r["stage"] = "reference"
    with torch.no_grad():
        ref = e2e.flat_outputs(model(*args))
    e2e.check_reference(ref)
    if all(o.size == 0 for o in ref if o.dtype.kind == "f"):
        # A detector that keeps no box: nothing to compare.
        raise e2e.Failure("the reference's float outputs are empty: the comparison would "
                          "not test the model")
    r["stage"] = "bridge"
    fxir = os.path.join(workdir, "model.fxir")
    # A second build (same seed) rather than a deep copy: weight-normed
    # convolutions hold non-leaf tensors that deepcopy refuses.
    fxir_export.export(build(spec)[0], args, fxir)
    r["stage"] = "onnxc"
    out = os.path.join(workdir, "model.onnx")
    p = subprocess.run([onnxc, fxir, "-O2", "-emit=onnx", "-o", out],
                       capture_output=True, text=True, cwd=workdir)
    if p.returncode != 0:
        m = re.search(r"no decomposition for (\S+)", p.stderr)
        r["detail"] = ("no decomposition for %s" % m.group(1) if m
                       else e2e.first_lines(p.stderr or p.stdout, 1))
        return
    r["nodes"] = str(e2e.onnx_node_count(out))
    r["stage"] = "ort"
    import ortlib
    feeds = dict(e2e.flat_inputs(model, args))
    got = list(ortlib.run(out, feeds).values())
    r["stage"] = "compare"
    if spec[1] == "detection":
        ref, got = _order_ties(ref), _order_ties(got, like=ref)
    worst = e2e.compare(ref, got)
    # The end-to-end tolerance, scaled by the outputs' magnitude when it is
    # above 1 (a 50-layer network's f32 logits of ~100 differ by ~1e-4).
    scale = max([float(abs(o).max()) for o in ref if o.dtype.kind == "f" and o.size] + [1.0])
    tol = e2e.TOLERANCE * scale
    note = " (tolerance %.2g)" % tol if scale > 1 else ""
    if worst > tol:
        # PyTorch's own f32 result is not exact either: allow twice its
        # distance from the same model run in f64.
        drift = f64_drift(spec, args, ref)
        if drift is not None and 2 * drift > tol:
            tol = 2 * drift
            note = " (tolerance %.2g: twice PyTorch's f32 error against f64)" % tol
    r["detail"] = "max diff %.2g" % worst + note
    r["ok"] = worst <= tol


def _order_ties(outs, like=None, tie=0.0):
    """A detector's outputs with the detections of equal scores (runs of
    the reference's sorted scores each within the comparison's tolerance of
    the next, or within tie when that is wider) put in one order, by label
    and box: PyTorch's sort and topk leave the order of ties open (a random
    head scores some boxes exactly alike), and scores the comparison takes
    as equal may come in either order."""
    import numpy as np
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    import run_e2e as e2e
    like = like or outs
    k = next((i for i, o in enumerate(like) if o.ndim == 1 and o.dtype.kind == "f"), None)
    if k is None or any(o.shape[:1] != like[k].shape for o in outs[:k + 1]):
        return outs
    s, n = like[k], like[k].shape[0]
    rows = [o.reshape(n, -1) for i, o in enumerate(outs) if o.shape[:1] == (n,) and i != k]
    # Labels (exact) first, then boxes and the rest to 0.1.
    rows.sort(key=lambda r: r.dtype.kind == "f")
    keys = np.concatenate([np.round(r.astype(np.float64), 1) for r in rows], axis=1)
    perm = np.arange(n)
    start = 0
    for i in range(1, n + 1):
        tol = max(e2e.TOLERANCE * max(1.0, abs(float(s[i - 1]))), tie)
        if i == n or abs(float(s[i]) - float(s[i - 1])) > tol:
            run = perm[start:i]
            perm[start:i] = run[np.lexsort(keys[run].T[::-1])]
            start = i
    return [o[perm] if o.shape[:1] == (n,) else o for o in outs]


def f64_drift(spec, args, ref):
    """Max |f32 - f64| of PyTorch's own outputs, or None when the model
    does not run in f64."""
    import numpy as np
    import torch
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    import run_e2e as e2e
    try:
        model = build(spec)[0].double()
        args64 = tuple(a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                       for a in args)
        with torch.no_grad():
            ref64 = e2e.flat_outputs(model(*args64))
    except Exception:
        return None
    worst = 0.0
    for a, b in zip(ref, ref64):
        if a.dtype.kind == "f" and a.size and a.shape == b.shape:
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))))
    return worst


def child(spec_json, onnxc):
    spec = tuple(json.loads(spec_json))
    workdir = tempfile.mkdtemp(prefix="onnxc-zoo.")
    r = {"stage": "build", "ok": False, "detail": "", "nodes": "-"}
    try:
        try:
            run_one(spec, onnxc, workdir, r)
        except Exception as e:
            first = str(e).strip().splitlines()
            r["ok"] = False
            r["detail"] = "%s: %s" % (type(e).__name__, first[0][:200] if first else "")
    finally:
        import shutil
        shutil.rmtree(workdir, ignore_errors=True)
    print("ZOO-RESULT " + json.dumps(r), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC_BUILD",
                                                      os.path.join(REPO, "build", "onnxc")))
    ap.add_argument("-k", dest="pattern", action="append",
                    help="only models whose name or family contains PATTERN or matches "
                         "it as a glob (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--timeout", type=int, default=900, help="seconds a model (default 900)")
    ap.add_argument("--markdown", help="also write the table as Markdown to FILE")
    ap.add_argument("-j", dest="jobs", type=int, default=1,
                    help="models run at once (default 1)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()

    onnxc = os.path.abspath(a.onnxc)
    if os.path.isdir(onnxc):
        onnxc = os.path.join(onnxc, "onnxc")
    if a.child:
        child(a.child, onnxc)
        return 0

    rows = [(n, f, s) for n, f, s in all_models()
            if not a.pattern or any(p in n or p == f or fnmatch.fnmatch(n, p) for p in a.pattern)]
    if a.list:
        for n, f, _ in rows:
            print("%-40s %s" % (n, f))
        return 0

    def run(spec):
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--onnxc", onnxc,
                                "--child", json.dumps(spec)],
                               capture_output=True, text=True, timeout=a.timeout)
            lines = [l for l in p.stdout.splitlines() if l.startswith("ZOO-RESULT ")]
            if lines:
                r = json.loads(lines[-1][len("ZOO-RESULT "):])
            else:
                tail = (p.stderr or "").strip().splitlines()
                r = {"stage": "?", "ok": False, "nodes": "-",
                     "detail": "exit %d: %s" % (p.returncode, tail[-1][:200] if tail else "")}
        except subprocess.TimeoutExpired:
            r = {"stage": "?", "ok": False, "nodes": "-", "detail": "timed out after %ds" % a.timeout}
        return r, time.time() - t0

    counts = {"pass": 0, "fail": 0, "skip": 0}
    table = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs))
    futures = [pool.submit(run, spec) for _, _, spec in rows]
    for (name, family, spec), fut in zip(rows, futures):
        r, secs = fut.result()
        known = KNOWN_FAILURES.get(name)
        if r["ok"]:
            status = "pass" + (" (listed as failing: remove it from KNOWN_FAILURES)" if known else "")
            counts["pass"] += 1
        elif known and known in r["detail"]:
            status = "skip (known)"
            counts["skip"] += 1
        else:
            status = "FAIL"
            counts["fail"] += 1
        table.append((name, family, r["stage"], r["nodes"], r["detail"], "%.0fs" % secs, status))
        print("%-36s %-14s %-9s %s  [%s, %.0fs]" % (name, family, r["stage"], r["detail"], status, secs),
              file=sys.stderr, flush=True)

    head = ("model", "family", "stage", "nodes", "first unsupported op / max diff", "time", "result")
    w = [max(len(head[i]), *(len(t[i]) for t in table)) if table else len(head[i])
         for i in range(len(head))]
    fmt = "  ".join("%%-%ds" % x for x in w)
    print(fmt % head)
    print(fmt % tuple("-" * x for x in w))
    for t in table:
        print((fmt % t).rstrip())
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
            for t in table:
                f.write("| " + " | ".join(x.replace("|", "\\|") for x in t) + " |\n")
            f.write("\n%d passed, %d failed, %d skipped\n" % (counts["pass"], counts["fail"], counts["skip"]))
    print("%d passed, %d failed, %d skipped" % (counts["pass"], counts["fail"], counts["skip"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
