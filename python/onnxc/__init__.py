"""onnxc from Python: export a PyTorch model to ONNX in one call.

    import onnxc
    m = onnxc.export(model, (input_ids,), "llm.onnx",
                     dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}})
    logits, = m(input_ids)         # in ONNX Runtime

export returns an ExportedModel (onnxc.program): the model's path,
`model_proto`, `save(path, external_data=...)`, `run(*tensors)` (or calling
it) in ONNX Runtime, and the conversion `report`.

The model is traced by the exporter bridge (onnxc.bridge) into a
.fxir file and a .safetensors file in a temporary directory, then compiled by
the onnxc binary.  A conversion that fails raises ConversionError, whose
message carries onnxc's diagnostics (`file:line:col: error: ...`, with the
source line); the .fxir they point into is kept and its path given.

The onnxc binary is found, in order: the ONNXC environment variable, the
repository's build/onnxc next to this package (a checkout), the one a wheel
keeps inside this package (onnxc/bin/onnxc), the one an editable pip install
put in the scripts directory of this Python, then PATH.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

from .control import cond, fori_loop, while_loop  # noqa: E402,F401
from .program import ExportedModel  # noqa: E402,F401
from .generation import GenerationModel, export_for_generation  # noqa: E402,F401

__all__ = ["export", "ExportedModel", "ConversionError", "find_onnxc", "cond", "while_loop",
           "fori_loop", "export_for_generation", "GenerationModel", "VerificationError",
           "CaptureError", "UnsupportedOperatorError", "CheckerError"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.dirname(os.path.dirname(_HERE))


def _version():
    """ONNXC_VERSION of ir/ir.h: from the checkout when there is one, else
    from the installed distribution (pyproject.toml reads it there)."""
    try:
        with open(os.path.join(_REPO, "ir", "ir.h")) as fh:
            m = re.search(r'#define ONNXC_VERSION "([^"]+)"', fh.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        from importlib.metadata import version
        return version("onnxc")
    except Exception:   # neither: a copy of python/ alone
        return "unknown"


__version__ = _version()


class ConversionError(Exception):
    """The model could not be converted.

    Attributes: `diagnostics` (onnxc's standard error, or the bridge's
    message), `fxir` (the path of the kept .fxir file the diagnostics point
    into, or None), `returncode` (onnxc's exit status, or None when the
    bridge failed)."""

    def __init__(self, message, diagnostics="", fxir=None, returncode=None):
        super().__init__(message)
        self.diagnostics = diagnostics
        self.fxir = fxir
        self.returncode = returncode


class CaptureError(ConversionError):
    """PyTorch could not trace the model: on torch 2.x no capture (of
    torch.export, its strict form, make_fx, draft_export, or the one named
    by capture=) traced it; on torch 1.13 make_fx did not.  The capture's
    error is the __cause__; the message names the captures tried, the
    first one's error and the model's line."""


class UnsupportedOperatorError(ConversionError):
    """The traced program calls operators onnxc has no decomposition for
    (onnxc's `no decomposition for ...` errors), and PyTorch's own
    decompositions did not remove them.  `operators` lists their names
    (`aten::cumprod`, `mylib::my_op`), sorted.  Pass a decomposition
    (decompositions=) or keep them as custom-domain nodes
    (allow_custom_ops=True)."""

    def __init__(self, message, operators=(), **kw):
        super().__init__(message, **kw)
        self.operators = list(operators)


class CheckerError(ConversionError):
    """The model is not valid ONNX: onnxc's verifier refused the program
    after its passes (`the IR is invalid`; `fxir` and `returncode` as for
    any onnxc failure), or, with verify=True, onnx.checker refused the
    written file (`diagnostics` holds the checker's message)."""


class VerificationError(ConversionError):
    """export(..., verify=True): the written file runs in ONNX Runtime but
    its outputs differ from eager PyTorch's on the example inputs
    (`diagnostics` names each output and its largest difference)."""


def find_onnxc():
    """The path of the onnxc binary: $ONNXC, the repository's build/onnxc,
    the wheel's own (onnxc/bin/onnxc in this package), the one an editable
    install put in the scripts directory, or onnxc on PATH.  Raises
    ConversionError when there is none."""
    env = os.environ.get("ONNXC")
    if env:
        if os.path.isdir(env):
            env = os.path.join(env, "onnxc")
        if not os.access(env, os.X_OK):
            raise ConversionError("ONNXC=%s is not an executable onnxc" % env)
        return os.path.abspath(env)   # onnxc runs in a temporary directory
    built = os.path.join(_REPO, "build", "onnxc")
    if os.access(built, os.X_OK):
        return built
    # A wheel's binary, inside the package (its RPATH names the shared
    # libraries the wheel bundles; the scripts directory holds a launcher).
    bundled = os.path.join(_HERE, "bin", "onnxc")
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    # pip put the binary in the scripts directory of the environment this
    # package is installed in, which need not be on PATH (a venv not activated).
    for scheme_dir in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(scheme_dir, "onnxc")
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("onnxc")
    if found:
        return found
    raise ConversionError(
        "onnxc binary not found: pip install onnxc's source tree, set ONNXC, build it "
        "(cmake -B build && cmake --build build in %s), or put it on PATH" % _REPO)


def _bridge():
    """The exporter bridge (onnxc.bridge), imported on first use."""
    from . import bridge
    return bridge


def _opt_flag(optimize):
    level = str(optimize).upper().lstrip("-")
    if not level.startswith("O"):
        level = "O" + level
    if level not in ("O0", "O1", "O2"):
        raise ValueError("optimize must be one of O0, O1, O2 (or 0, 1, 2), not %r" % (optimize,))
    return "-" + level


def _outline_flag(outline):
    if not outline:
        return []
    if outline is True:
        return ["-outline"]
    if isinstance(outline, str):
        outline = [outline]
    names = [c if isinstance(c, str) else c.__name__ for c in outline]
    return ["-outline=" + ",".join(names)]


def _external_flag(external_data):
    if external_data is None or external_data is False:
        return []
    if external_data is True:
        return ["-external-data"]
    if isinstance(external_data, str):
        return ["-external-data=" + external_data]
    raise ValueError("external_data must be None, True or a file name, not %r" % (external_data,))


def _quantize_flags(quantize, quantize_block, quantize_zero_points, target, quantize_accuracy_level=None,
                    quantize_exclude=None, ort_attention=None, quantize_embedding=False):
    """onnxc's -target=, -ort-attention= and -quantize flags for export's arguments."""
    if target not in (None, "onnx", "ort"):
        raise ValueError("target must be 'onnx' or 'ort', not %r" % (target,))
    if ort_attention not in (None, "matmul", "gqa"):
        raise ValueError("ort_attention must be 'matmul' or 'gqa', not %r" % (ort_attention,))
    if ort_attention and target != "ort":
        raise ValueError("ort_attention chooses among ONNX Runtime's forms: it needs target='ort'")
    flags = ["-target=" + target] if target else []
    if ort_attention:
        flags.append("-ort-attention=" + ort_attention)
    if quantize is None or quantize is False:
        if (quantize_block is not None or quantize_zero_points or quantize_accuracy_level is not None
                or quantize_exclude or quantize_embedding):
            raise ValueError("quantize_block, quantize_zero_points, quantize_accuracy_level, "
                             "quantize_exclude and quantize_embedding need quantize='int4', 'int8' "
                             "or 'int8-dynamic'")
        return flags
    if quantize not in ("int4", "int8", "int8-dynamic"):
        raise ValueError("quantize must be 'int4', 'int8' or 'int8-dynamic', not %r" % (quantize,))
    flags.append("-quantize=" + quantize)
    if quantize_exclude:
        pats = [quantize_exclude] if isinstance(quantize_exclude, str) else list(quantize_exclude)
        if not pats or any(not p or "," in p for p in pats):
            raise ValueError("quantize_exclude: glob patterns, none empty or holding a comma, not %r"
                             % (quantize_exclude,))
        flags.append("-quantize-exclude=" + ",".join(pats))
    if quantize_embedding:
        flags.append("-quantize-embedding")
    if quantize_block is not None:
        flags.append("-quantize-block=%d" % int(quantize_block))
    if quantize_zero_points:
        flags.append("-quantize-zero-points")
    if quantize_accuracy_level is not None:
        flags.append("-quantize-accuracy-level=%d" % int(quantize_accuracy_level))
    return flags


def export(model, args, f=None, kwargs=None, dynamic_shapes=None, input_names=None,
           output_names=None, opset=None, optimize="O2", outline=False, report=None,
           external_data=None, dynamic_axes=None, training="eval", capture=None,
           progress=None, export_params=True, allow_custom_ops=False, custom_opsets=None,
           decompositions=None, verify=False, target=None, quantize=None,
           quantize_block=None, quantize_zero_points=False, quantize_accuracy_level=None,
           quantize_exclude=None, quantize_embedding=False, ort_attention=None,
           operator_export_type=None, keep_initializers_as_inputs=False):
    """Export `model(*args, **kwargs)` to the ONNX file `f`; returns an
    ExportedModel (onnxc.program) for it.  Without `f` the model is written
    to a temporary file the returned object owns (save() it to keep it).

    Arguments that torch.onnx.export also has mean the same:
      args            a tuple of positional inputs (or one tensor); dicts and
                      lists are flattened (`inputs_a`, `extras_0`)
      kwargs          keyword inputs
      dynamic_shapes  {"x": {0: "batch"}} (or a list in parameter order): the
                      names become the ONNX inputs' dim_params
      dynamic_axes    torch.onnx.export's older form, keyed by input or output
                      name: {"x": {0: "batch"}}, {"x": [0]} (named
                      "x_dynamic_axes_1"); output entries name output dims
      input_names     names of the graph inputs, in flattened order
      output_names    names of the graph outputs, in flattened order
      opset           the default-domain opset (13 to 28, default 20: Gelu is one node from 20; below 17 the program is lowered at 17 and converted, see docs/usage.md; 21 with quantize at the onnx target)
      report          True (writes `<f stem>_report.md`) or a path: a
                      markdown conversion report, written also on failure
      external_data   True: large tensors go to `<f>.data`; a file name: there
      training        torch.onnx.TrainingMode.EVAL (the default; also False or
                      "eval"), TRAINING (True, "train", "training": batch norm
                      with batch statistics, the updated running statistics
                      as extra outputs, Dropout in training mode) or PRESERVE
                      (None, "preserve": the model's own mode)
      export_params   False: parameters and state_dict buffers are graph
                      inputs named by their state_dict keys, after the
                      model's inputs in state_dict order, not initializers
      custom_opsets   {"domain": version}: the opset version imported for
                      a custom domain (default 1); see allow_custom_ops
      keep_initializers_as_inputs  True: every initializer is also a graph
                      input, a default the user may override; no pass then
                      merges or folds one (-keep-initializers-as-inputs)
      operator_export_type  torch.onnx.OperatorExportTypes (or its name):
                      ONNX (the default) fails on an op with no
                      decomposition; ONNX_ATEN_FALLBACK keeps such an ATen
                      op as org.pytorch.aten::ATen with the attributes
                      operator and overload_name (-aten-fallback);
                      ONNX_FALLTHROUGH is allow_custom_ops=True
    onnxc's own:
      optimize        "O0", "O1" or "O2" (default)
      outline         True: nn.Modules become ONNX local functions; a list of
                      class names (or classes): only those
      allow_custom_ops  True: calls with no decomposition (aten::, a custom
                      op's namespace) stay as nodes of the domain named by
                      their namespace (-allow-custom-ops, docs/exporter.md)
                      instead of failing the conversion
      capture         torch 2.x: None (default) tries torch.export, then
                      torch.export with TorchDynamo ("torch.export (strict)"),
                      then "make_fx", then "draft_export", and keeps the first
                      that traces the model (named in the report and in the
                      model's metadata); a name uses that capture only
      target          "onnx" (default): standard ops only; "ort": at O2 also
                      ONNX Runtime's contrib ops (-target=ort)
      ort_attention   with target="ort", attention over a key/value cache:
                      "matmul" (default) keeps MatMul and Softmax, the faster
                      on ONNX Runtime's CPU provider; "gqa" writes
                      GroupQueryAttention (-ort-attention=)
      quantize        "int4" or "int8": the weights of MatMul and Gemm
                      quantized blockwise along K (-quantize=, see
                      docs/weight_quantization.md): MatMulNBits with
                      target="ort", else DequantizeLinear (opset 21 and up);
                      "int8-dynamic": int8 weights with a scale a column,
                      activations quantized at run time (MatMulInteger, or
                      DynamicQuantizeMatMul with target="ort")
      quantize_exclude  a glob pattern or a list of them: the products whose
                      weight name, node name or module path matches one stay
                      float (-quantize-exclude=)
      quantize_embedding  True: the tables of Gather (embeddings) are
                      quantized too, blockwise along each row
                      (-quantize-embedding): GatherBlockQuantized with
                      target="ort", else Gather and DequantizeLinear
      quantize_block  values along K sharing a scale (a power of two from 16
                      to 4096; default 32)
      quantize_zero_points  True: unsigned codes with a zero point a block
                      (default: symmetric)
      quantize_accuracy_level  with target="ort": MatMulNBits' accuracy_level
                      (0 to 4; 4 computes A in int8, the fastest on CPU)
      progress        None (default): quiet, unless the conversion runs past
                      5 s; then each stage (capture, text, weights, onnxc)
                      with its time on standard error; True: always; False:
                      never
      decompositions  a list of .fxir files (paths) or .fxir texts holding
                      `decomp` definitions, as onnxc's -decomp=FILE: they
                      win over the built-in library (a custom op's
                      decomposition, docs/decompositions.md)
      verify          True: check the written file with onnx.checker (a
                      refusal raises CheckerError), run it in ONNX Runtime on the
                      example inputs and compare each output with eager
                      PyTorch's (relative tolerance 1e-3, absolute 1e-4 of
                      the output's scale); a mismatch raises
                      VerificationError; the report shows the step and the
                      largest difference

    `model` may also be a torch.export.ExportedProgram (args None: its
    example inputs), or a torch.jit.script / torch.jit.trace result (torch
    2.x: converted to an ExportedProgram).  As in torch.onnx.export, args
    ending in a dict (without kwargs) passes that dict as keyword
    arguments, and torch.onnx.is_in_onnx_export() is True while the model
    is traced.  Every failure is a ConversionError; an error raised while
    tracing is its __cause__.  By cause: CaptureError (no capture traced
    the model), UnsupportedOperatorError (ops with no decomposition, in its
    `operators`), CheckerError (an invalid IR, or onnx.checker refusing the
    file under verify=True), VerificationError (verify=True: outputs differ).
    """
    onnxc = find_onnxc()
    qflags = _quantize_flags(quantize, quantize_block, quantize_zero_points, target,
                             quantize_accuracy_level, quantize_exclude, ort_attention, quantize_embedding)
    if opset is None:   # DequantizeLinear's block_size: opset 21
        opset = 21 if quantize and (quantize != "int8-dynamic" or quantize_embedding) and target != "ort" else 20
    user_decomps = _decomposition_sources(decompositions)
    if verify:
        try:
            import onnxruntime  # noqa: F401
        except ImportError as e:
            raise ConversionError("verify=True runs the file in ONNX Runtime: it needs the "
                                  "onnxruntime package (%s)" % e) from None
    custom, aten_fallback = _operator_export_type(operator_export_type)
    allow_custom_ops = allow_custom_ops or custom
    cmd_tail = ([_opt_flag(optimize), "-opset=%d" % int(opset)] + _outline_flag(outline) + qflags
                + _external_flag(external_data)
                + (["-aten-fallback"] if aten_fallback else
                   ["-allow-custom-ops"] if allow_custom_ops else [])
                + (["-keep-initializers-as-inputs"] if keep_initializers_as_inputs else []))
    opset_lines = _custom_opset_lines(custom_opsets)
    report_path = None
    if report and (isinstance(report, str) or f is not None):
        report_path = report if isinstance(report, str) else os.path.splitext(f)[0] + "_report.md"
    owned = None
    if f is None:
        owned = tempfile.mkdtemp(prefix="onnxc-model.")
        f = os.path.join(owned, "model.onnx")
    bridge = _bridge()
    shown = bridge.Progress(show=progress)
    work = tempfile.mkdtemp(prefix="onnxc-export.")
    stem = os.path.splitext(os.path.basename(f))[0] or "model"
    fxir = os.path.join(work, stem + ".fxir")
    steps = []
    keep = False
    try:
        out = os.path.abspath(f)
        decomp_flags = _decomposition_flags(user_decomps, work)
        cmd = [onnxc, fxir] + cmd_tail + decomp_flags + ["-emit=onnx", "-o", out, "-stats"]
        decompose = []
        while True:
            t0 = time.perf_counter()
            trace_step = "trace the model (onnxc.bridge)"
            try:
                text = bridge.export(model, args, fxir, kwargs=kwargs,
                                     dynamic_shapes=dynamic_shapes, input_names=input_names,
                                     output_names=output_names, dynamic_axes=dynamic_axes,
                                     training=training, capture=capture, decompose=decompose,
                                     progress=shown, export_params=export_params,
                                     save_reference="io" if verify else False)
                if opset_lines:
                    text = _add_opsets(fxir, text, opset_lines)
            except Exception as e:   # noqa: BLE001 (each reaches the caller as a ConversionError)
                steps.append((trace_step, False, time.perf_counter() - t0))
                msg = _bridge_message(bridge, e)
                _write_report(report_path, steps, msg, None, None, None)
                # The error PyTorch raised, when the bridge's own one wraps it.
                cause = e.__cause__ if isinstance(e, bridge.ExportError) and e.__cause__ else e
                cls = CaptureError if isinstance(e, bridge.CaptureFailed) else ConversionError
                raise cls("export: %s" % msg, diagnostics=msg) from cause
            trace_step = "trace the model (onnxc.bridge, capture: %s)" % bridge.last_capture
            if bridge.last_decomposed:
                trace_step += "; PyTorch's decompositions for %s" % ", ".join(bridge.last_decomposed)
            if getattr(bridge, "last_experts", None):
                trace_step += "; experts traced as %s in place of %s" % (
                    bridge.experts.TRACED, " and ".join(bridge.last_experts))
            steps.append((trace_step, True, time.perf_counter() - t0))
            t0 = time.perf_counter()
            with shown.stage("onnxc %s" % " ".join(cmd_tail)):
                p = subprocess.run(cmd, capture_output=True, text=True, cwd=work)
            ok = p.returncode == 0
            steps.append(("compile with `onnxc %s`" % " ".join(cmd_tail), ok,
                          time.perf_counter() - t0))
            # An op onnxc has no decomposition for: trace again with
            # PyTorch's decomposition of it, while that makes progress.
            missing = sorted(set(re.findall(r"error: no decomposition for ([a-z_]+::[\w.]+)",
                                            p.stderr)) - set(decompose))
            if ok and allow_custom_ops:
                # aten:: ops kept as custom ops that PyTorch may decompose
                missing = sorted(set(re.findall(
                    r"warning: no decomposition for (aten::[\w.]+); kept as "
                    r"(?:a custom op|org\.pytorch\.aten::ATen)",
                    p.stderr)) - set(decompose))
            if (ok and not allow_custom_ops) or not missing or len(decompose) > 200:
                break
            decompose = sorted(set(decompose) | set(missing))
            if not _may_decompose(bridge):
                break
            if capture is None and bridge.last_capture in bridge.CAPTURES:
                capture = bridge.last_capture   # the one that worked, not the failed ones again
        listing = None
        if report and ok:
            lp = subprocess.run([onnxc, out, "-passes=", "-emit=listing"],
                                capture_output=True, text=True, cwd=work)
            listing = lp.stdout if lp.returncode == 0 else lp.stderr
        diags = _with_sources(
            "\n".join(l for l in p.stderr.splitlines() if not l.startswith("onnxc: stats ")),
            fxir, text)
        stats = "\n".join(l for l in p.stderr.splitlines() if l.startswith("onnxc: stats "))
        if not ok:
            keep = True
            _write_report(report_path, steps, diags, text, stats, None)
            hint = ""
            unsupported = sorted(set(re.findall(r"error: no decomposition for (\w+::[\w.]+)",
                                                p.stderr)))
            if unsupported:
                hint = ("\nfrom Python, pass a decomposition with onnxc.export(..., "
                        "decompositions=[\"my_decomps.fxir\"]) (a path or the text; "
                        "docs/decompositions.md)")
            message = ("onnxc exited %d converting %s:\n%s\n(the .fxir the locations refer "
                       "to is kept at %s)%s" % (p.returncode, type(model).__name__,
                                                diags.rstrip(), fxir, hint))
            fields = dict(diagnostics=diags, fxir=fxir, returncode=p.returncode)
            if unsupported:
                raise UnsupportedOperatorError(message, operators=unsupported, **fields)
            if re.search(r"error: the IR is invalid after", p.stderr):
                raise CheckerError(message, **fields)
            raise ConversionError(message, **fields)
        if diags.strip():
            sys.stderr.write(diags.rstrip() + "\n")
        if verify:
            t0 = time.perf_counter()
            refused = _check_onnx(out)
            steps.append(("onnx.checker.check_model: %s" % ("refused" if refused else "valid"),
                          not refused, time.perf_counter() - t0))
            if refused:
                _write_report(report_path, steps, refused, text, stats, listing)
                raise CheckerError("%s: onnx.checker refuses the written model:\n%s"
                                   % (out, refused), diagnostics=refused)
            t0 = time.perf_counter()
            verdict = _verify(out, bridge.last_reference)
            steps.append(("run in ONNX Runtime and compare with eager PyTorch: %s"
                          % verdict.summary, verdict.ok, time.perf_counter() - t0))
            if not verdict.ok:
                _write_report(report_path, steps, verdict.detail, text, stats, listing)
                raise VerificationError(
                    "%s: ONNX Runtime's outputs differ from eager PyTorch's on the example "
                    "inputs:\n%s" % (out, verdict.detail), diagnostics=verdict.detail)
        text = _write_report(report_path, steps, diags, text, stats, listing)
        result = ExportedModel(out, onnxc, text, report_path, owned_dir=owned)
        owned = None    # the object removes it now
        return result
    finally:
        shown.done()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)


def _decomposition_sources(decompositions):
    """decompositions= as [(kind, value)]: ("file", absolute path) or
    ("text", .fxir text); checked before anything is traced."""
    if decompositions is None:
        return []
    if isinstance(decompositions, (str, os.PathLike)):
        decompositions = [decompositions]
    out = []
    for d in decompositions:
        if not isinstance(d, (str, os.PathLike)):
            raise ConversionError("decompositions: want .fxir file paths or texts, not %r" % (d,))
        d = os.fspath(d)
        if "\n" in d or d.lstrip().startswith(("decomp ", "//", "module")):
            out.append(("text", d))
        elif os.path.isfile(d):
            out.append(("file", os.path.abspath(d)))
        else:
            raise ConversionError("decompositions: %s is not a file (a decomposition given as "
                                  "text holds a `decomp` definition)" % d)
    return out


def _decomposition_flags(sources, work):
    """-decomp=FILE for each source; texts are written into `work` first, so
    that onnxc's diagnostics point into a file that is kept on failure."""
    flags = []
    for i, (kind, value) in enumerate(sources):
        if kind == "text":
            path = os.path.join(work, "decompositions_%d.fxir" % i)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(value if value.endswith("\n") else value + "\n")
            value = path
        flags.append("-decomp=" + value)
    return flags


def _check_onnx(path):
    """onnx.checker.check_model's message for the file at `path`, or ""
    when it is valid (given the path, external data is not loaded)."""
    import onnx
    try:
        onnx.checker.check_model(path)
    except onnx.checker.ValidationError as e:
        return str(e).strip() or type(e).__name__
    return ""


class _Verdict:
    def __init__(self, ok, summary, detail):
        self.ok, self.summary, self.detail = ok, summary, detail


def _verify(path, reference):
    """Runs `path` in ONNX Runtime on the example inputs of `reference`
    (the bridge's last_reference) and compares each output PyTorch gave."""
    import numpy as np
    from .program import ExportedModel
    m = ExportedModel(path, None, None)
    sess = m.session
    feeds = {}
    for i in sess.get_inputs():
        t = reference.get("input." + i.name)
        if t is None:
            return _Verdict(False, "no example value for input %r" % i.name,
                            "verify: the example has no value for the graph input %r" % i.name)
        feeds[i.name] = t.detach().cpu().numpy()
    names = [o.name for o in sess.get_outputs()]
    got = dict(zip(names, sess.run(None, feeds)))
    worst, lines, bad = 0.0, [], False
    for key, t in reference.items():
        if not key.startswith("output."):
            continue
        name = key[len("output."):]
        if name not in got:
            bad = True
            lines.append("output %s: not an output of the file" % name)
            continue
        want = t.detach().cpu().numpy()
        have = np.asarray(got[name])
        if have.shape != want.shape:
            bad = True
            lines.append("output %s: shape %s, PyTorch's %s" % (name, have.shape, want.shape))
            continue
        if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
            diff = float(np.count_nonzero(have != want))
            ok = diff == 0
            lines.append("output %s: %d elements differ" % (name, diff))
        else:
            w, h = want.astype(np.float64), have.astype(np.float64)
            same_nan = np.array_equal(np.isnan(w), np.isnan(h))
            fin = np.isfinite(w) & np.isfinite(h)
            diff = float(np.abs(w - h)[fin].max()) if fin.any() else 0.0
            scale = float(np.abs(w[fin]).max()) if fin.any() else 0.0
            ok = same_nan and np.allclose(h[fin], w[fin], rtol=1e-3, atol=1e-4 * max(1.0, scale))
            ok = ok and np.array_equal(np.isinf(w), np.isinf(h))
            worst = max(worst, diff)
            lines.append("output %s: max difference %.3g%s" % (name, diff,
                                                               "" if same_nan else ", NaNs differ"))
        bad = bad or not ok
    summary = "max difference %.3g" % worst
    return _Verdict(not bad, ("mismatch, " if bad else "") + summary, "\n".join(lines))


def _bridge_message(bridge, e):
    """The text of a failure while tracing: the bridge's own message, or
    PyTorch's error named by its type, with the model's line when the
    traceback has one."""
    if isinstance(e, bridge.ExportError):
        return str(e)
    from .bridge.meta import _user_frame
    where = _user_frame(e)
    return "%s: %s%s" % (type(e).__name__, str(e).strip(), "\n  at %s" % where if where else "")


def _operator_export_type(t):
    """(keep ops without a decomposition, as ATen nodes) for
    torch.onnx.export's operator_export_type, an OperatorExportTypes
    member or its name."""
    name = getattr(t, "name", t)
    kinds = {None: (False, False), "ONNX": (False, False),
             "ONNX_FALLTHROUGH": (True, False), "ONNX_ATEN_FALLBACK": (True, True)}
    if not isinstance(name, (str, type(None))) or name not in kinds:
        raise ConversionError("operator_export_type must be ONNX, ONNX_ATEN_FALLBACK or "
                              "ONNX_FALLTHROUGH, not %r" % (t,))
    return kinds[name]


def _custom_opset_lines(custom_opsets):
    """`opset DOMAIN N` lines for the .fxir module from custom_opsets."""
    if not custom_opsets:
        return []
    if not isinstance(custom_opsets, dict):
        raise ConversionError("custom_opsets must be a dict {domain: version}, not %r"
                              % (custom_opsets,))
    lines = []
    for dom, ver in custom_opsets.items():
        if (not isinstance(dom, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", dom)
                or dom in ("", "onnx", "ai.onnx")):
            raise ConversionError("custom_opsets: %r is not a custom domain name (the default "
                                  "domain's version is opset=)" % (dom,))
        if isinstance(ver, bool) or not isinstance(ver, int) or ver < 1:
            raise ConversionError("custom_opsets[%r]: the version must be an int >= 1, not %r"
                                  % (dom, ver))
        lines.append("  opset %s %d" % (dom, ver))
    return lines


def _add_opsets(fxir, text, lines):
    """The .fxir text with `opset` lines after its `weights` line (the
    module's opset imports), written back to fxir."""
    head, sep, rest = text.partition("\n  weights ")
    if not sep:
        raise ConversionError("custom_opsets: the traced program has no weights line")
    line_end = rest.index("\n") + 1
    text = head + sep + rest[:line_end] + "\n".join(lines) + "\n" + rest[line_end:]
    with open(fxir, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    return text


def _may_decompose(bridge):
    """Whether a trace can take PyTorch's decompositions: torch.export's
    captures (make_fx's graph is traced again otherwise)."""
    return bridge.last_capture not in (None, "make_fx")


def _with_sources(diags, fxir, text):
    """After each diagnostic located in the .fxir, a note with the Python
    line the node was traced from (its loc(...) provenance)."""
    import re
    src = text.splitlines()
    head = re.compile(re.escape(fxir) + r":(\d+):\d+: (error|warning): ")
    loc = re.compile(r'\bloc\(("(?:[^"\\]|\\.)*"):(\d+)\)')
    out, note = [], None
    for line in diags.splitlines():
        m = head.match(line)
        if m and note:
            out.append(note)
            note = None
        out.append(line)
        if note and line.strip() == "^" * len(line.strip()) and line.strip():
            out.append(note)    # after the source line and its caret
            note = None
        if not m:
            continue
        n = int(m.group(1))
        for cand in src[n - 1:n + 1]:
            lm = loc.search(cand)
            if lm:
                note = ("  note: traced from %s, line %s"
                        % (lm.group(1)[1:-1].replace('\\"', '"'), lm.group(2)))
                break
    if note:
        out.append(note)
    return "\n".join(out)


def _write_report(path, steps, errors, fxir_text, stats, listing):
    """The report's markdown text, also written to `path` when there is one."""
    lines = ["# onnxc Conversion Report", "", "```"]
    for name, ok, secs in steps:
        lines.append("%s %s (%.2f s)" % ("✅" if ok else "❌", name, secs))
    done = len(steps)
    for name in ("trace the model (onnxc.bridge)", "compile with onnxc")[done:]:
        lines.append("⚪ " + name)
    lines += ["```", "", "## Error messages", "", "```", errors.strip() or "No errors", "```"]
    if fxir_text is not None:
        lines += ["", "## Traced program (.fxir)", "", "```", fxir_text.rstrip(), "```"]
    if stats:
        lines += ["", "## Passes", "", "```", stats.rstrip(), "```"]
    if listing is not None:
        lines += ["", "## ONNX model", "", "```", listing.rstrip(), "```"]
    text = "\n".join(lines) + "\n"
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text
