"""The exporter bridge: a PyTorch model to onnxc's textual IR (.fxir) and a
.safetensors file with its weights.

    from onnxc.bridge import export
    export(model, (x,), "model.fxir")        # writes model.fxir and model.safetensors

The graph is written at the ATen level as PyTorch traced it: in-place ops
such as aten::add_ stay in the graph (onnxc's functionalize pass removes
them), nothing is decomposed here.  Parameters and buffers become `param` /
`buffer` lines named by their state_dict key, which is also their key in the
safetensors file.  onnxc.export runs this, then the onnxc binary.

The modules, in the order they build on each other:

  common    dtypes, the error type, tensors as bytes and safetensors,
            literals
  dims      flattened inputs and outputs, symbolic dims, dynamic_shapes and
            dynamic_axes
  meta      provenance: module scopes, source locations, the user's line of
            an error
  writer    the FX-to-.fxir writer
  hops      torch.export's higher-order ops: grad-mode and autocast regions
            inlined, torch.cond / while_loop lowered to If / Loop regions,
            assertion and metadata ops checked and dropped
  make_fx   the make_fx capture (torch 1.13; the data-dependent fallback
            on torch 2.x)
  capture   torch.export (torch >= 2.1) and the fallbacks tried in turn
  (here)    export(), the reference data of --save-reference, the command
            line (utils/fxir_export.py, `python -m onnxc.bridge`)

Captures:
  * torch >= 2.1: torch.export.export (non-strict), then with TorchDynamo
    (strict), then make_fx, then draft_export; the ExportedProgram's graph
    signature says which placeholders are parameters, buffers, constants
    and inputs.  Buffer and input mutations listed in the signature are
    written back as aten::copy_ nodes.
  * torch 1.13: make_fx over a function of (params, buffers, inputs) that
    calls the module through functional_call.
"""

import argparse
import importlib.util
import os
import re
import sys

import torch
import torch.fx

__all__ = ["export", "write_safetensors", "ExportError", "CaptureFailed", "CAPTURES"]

from .common import (  # noqa: F401
    CaptureFailed,
    ExportError,
    _FX_DTYPE,
    _ST_DTYPE,
    _torch_version,
    checkpoint_name,
    write_safetensors)
from .dims import (  # noqa: F401
    _bind_inputs,
    _check_names,
    _flatten,
    _flatten_outputs,
    _from_dynamic_axes,
    _is_program)
from .writer import (  # noqa: F401
    _Printer)
from .make_fx import (  # noqa: F401
    _trace_make_fx)
from .capture import (  # noqa: F401
    CAPTURES,
    _trace_torch_export)
from . import compat
from . import experts as _experts
from .progress import Progress  # noqa: F401



# The capture the last export used (one of CAPTURES, "ExportedProgram", or
# "make_fx" on torch 1.13).
last_capture = None
# The example's inputs and PyTorch's outputs of the last export with
# save_reference="io": {"input.<name>" / "output.<name>": tensor}.
last_reference = None
# The ops PyTorch's decompositions replaced in the last export (decompose=).
last_decomposed = []
# The experts implementations of transformers the last export traced as
# experts.TRACED ("eager", ...; empty when none).
last_experts = []


# ---------------------------------------------------------------------------
# entry point

def export(model, args, path, kwargs=None, dynamic_shapes=None, keep_inplace=True,
           source_root=None, input_names=None, output_names=None, dynamic_axes=None,
           save_reference=False, training=None, capture=None, decompose=(), weights=None,
           progress=None, export_params=True):
    """Trace `model(*args, **kwargs)` and write `path` (.fxir) and the
    safetensors file beside it (same stem).  Returns the .fxir text.

    dynamic_shapes: {"x": {0: "batch"}} names dims of forward parameter x
    (strings or torch.export.Dim); nested dict/list inputs take a matching
    structure or the flattened name ("inputs_a").
    keep_inplace: leave in-place ops in the graph (default; onnxc's
    functionalize pass handles them).  False functionalizes while tracing
    (make_fx) or runs ExportedProgram.run_decompositions({}) (torch.export).
    torch.export versions that return a functional graph keep no in-place
    ops either way; their buffer and input mutations come back as
    aten::copy_ nodes at the end of the graph.
    source_root: file paths in loc()/trace() are written relative to it
    (default: the current directory).
    input_names, output_names: names of the graph's inputs and outputs, in
    the order of the flattened inputs and outputs (as torch.onnx.export);
    a shorter list names the first ones.
    dynamic_axes: torch.onnx.export's form, keyed by input or output name:
    {"x": {0: "batch"}} or {"x": [0]} (automatic names "x_dynamic_axes_1",
    ...).  Output entries name the output's dims.  Give it or
    dynamic_shapes, not both.
    save_reference: also write <stem>.ref.safetensors, the reference data
    of `onnxc verify --ref` and `onnxc -bisect-accuracy=`: the example
    inputs (input.<name>), PyTorch's outputs for them (output.<name>) and
    every intermediate tensor of the traced graph (value.<name>), named as
    in the .fxir.  "io": only the inputs and outputs, kept in memory as
    last_reference (onnxc.export's verify), no file.
    training: the mode the model is traced in, as torch.onnx.export's
    TrainingMode: EVAL (or False, "eval"), TRAINING (True, "train",
    "training") or PRESERVE (None, the default here: the model's own mode).
    The model's modes are restored afterwards.  In training mode batch norm
    uses the batch's statistics and returns the updated running statistics
    as extra outputs, and dropout is random.
    capture: torch 2.x: one of CAPTURES (default: each in turn).
    decompose: .fxir names of ATen ops ("aten::ravel") that PyTorch's own
    decompositions replace after a torch.export capture (onnxc.export
    passes the ops onnxc has no decomposition for); last_decomposed says
    which were replaced.
    progress: a Progress (onnxc.bridge.progress) that times the stages
    (capture, run_decompositions when it runs, the program, the text, the
    weights) and shows them on standard error when asked or when the
    conversion runs long; None: timed, never shown.
    weights: an existing safetensors file that holds every parameter and
    buffer under its state_dict key (a checkpoint): the .fxir names it and
    no weights file is written, so the model may be traced on fake or meta
    tensors (a model too large to build for real).  Each key's dtype and
    shape are checked against the file's header.
    export_params: False makes parameters and state_dict buffers graph
    inputs (after the model's, in state_dict order) instead of weights.
    A torch.jit.script / torch.jit.trace result is converted to an
    ExportedProgram first (compat.script_to_program, torch 2.x); args
    ending in a dict are keyword arguments as torch.onnx.export reads them
    (compat.split_kwargs); torch.onnx.is_in_onnx_export() is True while
    the model is traced.
    """
    train = training_flag(training)
    args, kwargs, model, train, input_names = compat.prepare(model, args, kwargs, train,
                                                             input_names)
    if _is_program(model):
        if args is None:
            args, kwargs = model.example_inputs or ((), None)
        if train:
            raise ExportError("an ExportedProgram is traced already: its mode cannot change")
        train = None
    saved = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    if train is not None:
        model.train(train)
    if capture is not None and capture not in CAPTURES:
        raise ExportError("capture must be one of %s, not %r" % (", ".join(CAPTURES), capture))
    try:
        with compat.onnx_export_flag(), compat.InputWatch(model), \
                _experts.traceable(model) as replaced:
            return _export(model, args, path, kwargs, dynamic_shapes, keep_inplace,
                           source_root, input_names, output_names, dynamic_axes,
                           save_reference, capture, decompose, weights,
                           progress or Progress(show=False), export_params, replaced)
    finally:
        for m, mode in saved:
            m.training = mode


def training_flag(training):
    """True (train), False (eval) or None (keep the model's mode) from
    torch.onnx.TrainingMode, a bool, None or "eval"/"train"/"training"/
    "preserve"."""
    if training is None or isinstance(training, bool):
        return training
    key = str(getattr(training, "name", training)).lower()
    table = {"eval": False, "train": True, "training": True, "preserve": None}
    if key not in table:
        raise ExportError("training must be a torch.onnx.TrainingMode, a bool or one of "
                          "'eval', 'train', 'preserve', not %r" % (training,))
    return table[key]


def _export(model, args, path, kwargs, dynamic_shapes, keep_inplace, source_root,
            input_names, output_names, dynamic_axes, save_reference, capture=None,
            decompose=(), weights=None, progress=None, export_params=True, experts=()):
    global last_capture, last_decomposed, last_experts
    if not isinstance(args, tuple):
        args = (args,) if isinstance(args, torch.Tensor) else tuple(args)
    expected = _eager_outputs(model, args, kwargs) if save_reference else None
    input_names = list(input_names or [])
    output_names = list(output_names or [])
    leaf_names = []
    for n, v, _ in _bind_inputs(model, args, kwargs):
        _flatten(n, v, leaf_names)
    leaf_names = [n for n, _ in leaf_names]
    renamed = _check_names(input_names, output_names, leaf_names)
    output_dims = {}
    if dynamic_axes:
        if dynamic_shapes:
            raise ExportError("give dynamic_shapes or dynamic_axes, not both")
        dynamic_shapes, output_dims = _from_dynamic_axes(dynamic_axes, renamed, output_names)
    if _torch_version() >= (2, 1) and hasattr(torch, "export"):
        ex = _trace_torch_export(model, args, kwargs, dynamic_shapes, keep_inplace, capture,
                                 decompose, progress)
    elif _is_program(model) or capture not in (None, "make_fx"):
        raise ExportError("torch %s has no torch.export: the capture is make_fx"
                          % torch.__version__)
    else:
        with progress.stage("capture (make_fx)"):
            try:
                ex = _trace_make_fx(model, args, kwargs, dynamic_shapes, keep_inplace)
            except ExportError:
                raise
            except Exception as e:   # noqa: BLE001 (the model's or PyTorch's error while tracing)
                if type(e).__name__ == "ControlFlowError":
                    raise   # onnxc.cond / a loop misused: the model's error
                from .meta import _user_frame
                where = _user_frame(e)
                raise CaptureFailed("%s: %s%s" % (type(e).__name__, str(e).strip(),
                                                  "\n  at %s" % where if where else "")) from e
    if not hasattr(ex, "weights_const"):
        ex.weights_const = {}
    if input_names:
        by_leaf = {old: new for new, old in renamed.items()}
        for node, (kind, key) in list(ex.placeholders.items()):
            if kind == "input" and key in by_leaf:
                ex.placeholders[node] = (kind, by_leaf[key])
    if len(output_names) > len(ex.outputs):
        raise ExportError("output_names has %d names, the model has %d outputs"
                          % (len(output_names), len(ex.outputs)))
    ex.output_names = output_names
    ex.output_dims = output_dims
    last_capture = getattr(ex, "capture", "make_fx")
    last_decomposed = list(getattr(ex, "decomposed", []))
    last_experts = list(experts)
    ex.experts = last_experts
    ex.non_persistent = {("%s.%s" % (p, b)).lstrip(".") for p, mod in
                         (model.named_modules() if hasattr(model, "named_modules") else ())
                         for b in getattr(mod, "_non_persistent_buffers_set", ())}
    if not export_params:
        compat.params_as_inputs(ex, model)
    ex.module_name = type(model).__name__
    cls = type(model)
    ex.root_class = "%s.%s" % (cls.__module__, cls.__qualname__)
    if source_root is not None:
        ex.source_root = os.path.abspath(source_root)
    stem = os.path.splitext(path)[0]
    st_path = stem + ".safetensors"
    ex.weights_file = os.path.basename(st_path)
    if weights is not None:
        ex.weights_file = checkpoint_name(weights, ex.weights, os.path.dirname(os.path.abspath(path)))
    printer = _Printer(ex)
    with progress.stage("write .fxir text"):
        text = printer.module()
    if weights is None:
        with progress.stage("write weights"):
            write_safetensors(st_path, ex.weights)
    if save_reference == "io":
        global last_reference
        last_reference = _reference(ex, printer, model, args, kwargs, expected, values=False)
    elif save_reference:
        write_safetensors(stem + ".ref.safetensors",
                          _reference(ex, printer, model, args, kwargs, expected))
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
    return text


# ---------------------------------------------------------------------------
# reference data (--save-reference)

def _eager_outputs(model, args, kwargs):
    """The model's flattened outputs, run before tracing (which may touch
    buffers) on copies of the inputs."""
    copy = lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v
    with torch.no_grad():
        out = model(*[copy(a) for a in args], **{k: copy(v) for k, v in (kwargs or {}).items()})
    flat = []
    _flatten_outputs(out, flat)
    return [t.detach().clone() for t in flat if isinstance(t, torch.Tensor)]


def _raw_name(printed):
    """A value name as the .fxir spells it (%x, %"a/b"), without % and quotes."""
    s = printed[1:]
    if not s.startswith('"'):
        return s
    esc = {"n": "\n", "t": "\t", "r": "\r"}

    def unescape(m):
        e = m.group(1)
        return chr(int(e[1:], 16)) if e[0] == "x" and len(e) == 3 else esc.get(e, e)
    return re.sub(r"\\(x[0-9a-fA-F]{2}|.)", unescape, s[1:-1])


def _reference(ex, printer, model, args, kwargs, expected, values=True):
    """{input.<name>, output.<name>, value.<name>: tensor} for the example
    (without the value.* entries unless `values`)."""
    leaves = []
    for n, v, _ in _bind_inputs(model, args, kwargs):
        _flatten(n, v, leaves)
    inputs = iter(t for _, t in leaves)
    ref, feed = {}, []
    for node in ex.gm.graph.nodes:
        if node.op != "placeholder":
            continue
        kind, key = ex.placeholders[node]
        if kind == "input":
            t = next(inputs).detach().clone()
            ref["input." + _raw_name(printer.names[node])] = t
        else:
            t = ex.weights_const[key] if kind == "const" else ex.weights[key]
        feed.append(t.detach().clone())
    names = printer.names

    class Capture(torch.fx.Interpreter):
        def run_node(self, node):
            val = super().run_node(node)
            if node.op != "placeholder" and node in names and isinstance(val, torch.Tensor):
                # A copy now: an in-place op later must not change it.
                ref.setdefault("value." + _raw_name(names[node]), val.detach().clone())
            return val
    if values:
        with torch.no_grad():
            Capture(ex.gm).run(*feed)
    if len(expected) != len(printer.returned):
        raise ExportError("the model returned %d tensors, the graph %d outputs"
                          % (len(expected), len(printer.returned)))
    for name, t in zip(printer.returned, expected):
        ref["output." + _raw_name(name)] = t
    return {k: v for k, v in ref.items() if v.dtype in _ST_DTYPE}


# ---------------------------------------------------------------------------
# command line

def _load_class(spec):
    if ":" not in spec:
        raise SystemExit("--module wants path/to/file.py:ClassName")
    fn, cls = spec.rsplit(":", 1)
    name = os.path.splitext(os.path.basename(fn))[0]
    sys.path.insert(0, os.path.dirname(os.path.abspath(fn)))
    mspec = importlib.util.spec_from_file_location(name, fn)
    mod = importlib.util.module_from_spec(mspec)
    sys.modules[name] = mod
    mspec.loader.exec_module(mod)
    return getattr(mod, cls)


_DTYPE_BY_NAME = {v: k for k, v in _FX_DTYPE.items()}



def example_inputs(shapes, dtypes=None):
    """Random example inputs from "2,3"-style shapes and fxir dtype names
    (f32 when not given): normal floats, random bools, integers in [0, 10).
    ValueError on an unknown dtype."""
    dtypes = dtypes or []
    inputs = []
    for i, s in enumerate(shapes):
        shape = [int(x) for x in s.split(",") if x.strip()]
        dt = _DTYPE_BY_NAME.get(dtypes[i] if i < len(dtypes) else "f32")
        if dt is None:
            raise ValueError("unknown dtype %r" % dtypes[i])
        if dt.is_floating_point:
            inputs.append(torch.randn(shape, dtype=dt))
        elif dt == torch.bool:
            inputs.append(torch.rand(shape) > 0.5)
        else:
            inputs.append(torch.randint(0, 10, shape, dtype=dt))
    return inputs

def main(argv=None):
    p = argparse.ArgumentParser(
        prog="fxir_export.py",
        description="Trace a PyTorch model and write onnxc's .fxir text plus a "
                    ".safetensors file with its parameters and buffers (same stem). "
                    "torch >= 2.1 traces with torch.export.export, older torch with "
                    "make_fx. In-place ops are kept; nothing is decomposed.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--torchvision", metavar="NAME",
                     help="a torchvision.models constructor, e.g. resnet18 "
                          "(random weights: weights=None, seeded)")
    src.add_argument("--module", metavar="FILE.py:CLASS",
                     help="a module class built with no constructor arguments")
    p.add_argument("-o", "--output", required=True, metavar="OUT.fxir",
                   help="the .fxir file; OUT.safetensors is written beside it")
    p.add_argument("--input-shape", action="append", metavar="D0,D1,...",
                   help="shape of one forward input (repeat for several); "
                        "default for --torchvision: BATCH,3,224,224")
    p.add_argument("--input-dtype", action="append", metavar="DTYPE",
                   help="dtype of the matching --input-shape (f32, i64, ...); default f32")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size for --torchvision (default 1, or 2 with --dynamic-batch: "
                        "torch 1.13 treats a size-1 dim as a constant)")
    p.add_argument("--dynamic-batch", action="store_true",
                   help="make dim 0 of every input a symbolic dim named 'batch'")
    p.add_argument("--seed", type=int, default=0, help="RNG seed for weights and inputs (default 0)")
    p.add_argument("--capture", choices=CAPTURES, default=None,
                   help="torch 2.x: trace with this capture only (default: each in turn "
                        "until one works: %s)" % ", ".join(CAPTURES))
    p.add_argument("--functionalize", action="store_true",
                   help="functionalize while tracing instead of keeping in-place ops")
    p.add_argument("--save-reference", action="store_true",
                   help="also write OUT.ref.safetensors: the example inputs (input.NAME), "
                        "PyTorch's outputs (output.NAME) and the traced graph's intermediate "
                        "values (value.NAME), as onnxc verify --ref and -bisect-accuracy= read them")
    a = p.parse_args(argv)

    torch.manual_seed(a.seed)
    if a.torchvision:
        import torchvision
        ctor = getattr(torchvision.models, a.torchvision, None)
        if ctor is None:
            raise SystemExit("torchvision.models has no %r" % a.torchvision)
        model = ctor(weights=None)
        batch = a.batch if a.batch is not None else (2 if a.dynamic_batch else 1)
        shapes = a.input_shape or ["%d,3,224,224" % batch]
    else:
        model = _load_class(a.module)()
        if not a.input_shape:
            raise SystemExit("--module needs --input-shape")
        shapes = a.input_shape
    model.eval()
    try:
        inputs = example_inputs(shapes, a.input_dtype)
    except ValueError as e:
        raise SystemExit(str(e))
    dyn = None
    if a.dynamic_batch:
        params = [n for n, _, _ in _bind_inputs(model, inputs, None)]
        dyn = {n: {0: "batch"} for n in params}
    try:
        export(model, tuple(inputs), a.output, dynamic_shapes=dyn,
               keep_inplace=not a.functionalize, save_reference=a.save_reference,
               capture=a.capture)
    except ExportError as e:
        print("fxir_export: error: %s" % e, file=sys.stderr)
        return 1
    stem = os.path.splitext(a.output)[0]
    print("wrote %s and %s%s" % (a.output, stem + ".safetensors",
                                 " and %s.ref.safetensors" % stem if a.save_reference else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
