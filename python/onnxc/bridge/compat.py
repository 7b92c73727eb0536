"""What torch.onnx.export does around its trace, done the same way here:
the ONNX-export flag models test, TorchScript modules converted to an
ExportedProgram, the trailing dict of keyword arguments in `args`,
the warning when the model changes a dict or list it was given, and
export_params=False (parameters and buffers as graph inputs).
"""

import contextlib
import sys

import torch

from .common import ExportError


def prepare(model, args, kwargs, train, input_names):
    """(args, kwargs, model, train, input_names) before tracing: a trailing
    dict of args taken as keyword arguments, and a TorchScript module
    converted to an ExportedProgram, traced in the mode asked for (its
    modes restored afterwards) and its inputs named as its forward's
    parameters unless input_names says otherwise."""
    args, kwargs = split_kwargs(model, args, kwargs)
    if not is_script(model):
        return args, kwargs, model, train, input_names
    saved = [(m, m.training) for m in model.modules()] if hasattr(model, "modules") else []
    try:
        if train is not None and hasattr(model, "train"):
            model.train(train)
        with onnx_export_flag():
            ep, args, names = script_to_program(model, args, kwargs)
    finally:
        for m, mode in saved:
            m.training = mode
    # The graph's inputs are the tensor arguments (an int, float, bool, str
    # or None argument is a constant of the trace): each takes its
    # parameter's name.
    if not input_names and len(names) == len(args) and all(
            isinstance(a, torch.Tensor) or _is_constant_value(a) for a in args):
        input_names = [n for n, a in zip(names, args) if isinstance(a, torch.Tensor)]
    return args, None, ep, None, input_names


def _is_constant_value(value):
    """A non-tensor argument that the trace takes as a constant."""
    return value is None or isinstance(value, (bool, int, float, str))


# ---------------------------------------------------------------------------
# torch.onnx.is_in_onnx_export() while tracing

@contextlib.contextmanager
def onnx_export_flag():
    """torch.onnx.is_in_onnx_export() is True inside, as under
    torch.onnx.export; the previous value comes back on the way out, also
    on an error.  torch 2.x reads the dynamo exporter's flag (TorchDynamo,
    the strict capture, reads False whatever it is); torch 1.13 the
    TorchScript exporter's GLOBALS."""
    flags = None
    try:
        from torch.onnx._internal.exporter import _flags as flags
    except ImportError:
        flags = None
    if flags is not None and hasattr(flags, "_is_onnx_exporting"):
        before = flags._is_onnx_exporting
        flags._is_onnx_exporting = True
        try:
            yield
        finally:
            flags._is_onnx_exporting = before
        return
    from torch.onnx._globals import GLOBALS
    before = GLOBALS.in_onnx_export
    GLOBALS.in_onnx_export = True
    try:
        yield
    finally:
        GLOBALS.in_onnx_export = before


# ---------------------------------------------------------------------------
# args ending in a dict of keyword arguments

def split_kwargs(model, args, kwargs):
    """(args, kwargs) with torch.onnx.export's convention applied: when no
    kwargs are given and args ends in a dict, that dict holds keyword
    arguments (an empty one only marks the one before it as positional).
    A trailing dict whose keys do not all name parameters of the forward
    stays a positional (dict) input, as onnxc takes one."""
    if kwargs or not isinstance(args, tuple) or not args or type(args[-1]) is not dict:
        return args, kwargs
    last = args[-1]
    if not last:
        return args[:-1], None
    fwd = getattr(model, "forward", None)
    if fwd is None or not callable(fwd):
        return args, kwargs
    import inspect
    try:
        sig = inspect.signature(fwd)
    except (TypeError, ValueError):
        return args, kwargs
    if not all(isinstance(k, str) for k in last):
        return args, kwargs
    try:
        sig.bind(*args[:-1], **last)
    except TypeError:
        return args, kwargs
    return args[:-1], dict(last)


# ---------------------------------------------------------------------------
# TorchScript modules

def is_script(model):
    jit = getattr(torch, "jit", None)
    kinds = tuple(k for k in (getattr(jit, "ScriptModule", None),
                              getattr(jit, "ScriptFunction", None)) if k is not None)
    return bool(kinds) and isinstance(model, kinds)


def script_to_program(model, args, kwargs):
    """(ExportedProgram, its argument names) for a torch.jit.script or
    torch.jit.trace result, through torch's TorchScript-to-ExportedProgram
    converter (torch._export.converter, torch >= 2.5).  Keyword arguments
    are passed in their positions and the ones the example leaves out take
    the schema's defaults, since the converter wants every one,
    positionally; a non-tensor argument (an int) is a constant of the
    trace.  ExportError when the converter is missing or refuses the
    module."""
    try:
        from torch._export.converter import TS2EPConverter
    except ImportError:
        raise ExportError(
            "%s is a TorchScript module: converting one needs torch's TorchScript-to-"
            "ExportedProgram converter (torch._export.converter, torch >= 2.5; this is torch "
            "%s). Export the Python module instead of its torch.jit.script/trace result"
            % (type(model).__name__, torch.__version__)) from None
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    names = []
    schema = getattr(getattr(model, "forward", model), "schema", None)
    if schema is not None:
        # Every argument positional, in the schema's order: keyword
        # arguments in their places, the ones left out at their defaults
        # (the converter wants every one, and fails on keyword arguments).
        params = [a for a in schema.arguments if a.name != "self"]
        names = [a.name for a in params]
        kw = dict(kwargs or {})
        for name in kw:
            if name not in names:
                raise ExportError("%s's forward takes no argument named %r (its arguments: %s)"
                                  % (_script_name(model), name, ", ".join(names)))
            if names.index(name) < len(args):
                raise ExportError("%s: argument %r is given both by position and by keyword"
                                  % (_script_name(model), name))
        extra = []
        for a in params[len(args):]:
            if a.name in kw:
                extra.append(kw.pop(a.name))
            elif a.has_default_value():
                extra.append(a.default_value)
            else:
                raise ExportError("%s: the forward's argument %r has no default and is not "
                                  "given" % (_script_name(model), a.name))
        args, kwargs = args + tuple(extra), None
    try:
        ep = TS2EPConverter(model, args, dict(kwargs or {})).convert()
    except Exception as e:   # noqa: BLE001 (the converter's own failures)
        text = str(e).strip().splitlines()
        raise ExportError(
            "%s is a TorchScript module and torch's TorchScript-to-ExportedProgram converter "
            "refused it: %s: %s. Export the Python module instead of its torch.jit.script/"
            "trace result" % (_script_name(model), type(e).__name__,
                              text[0].rstrip(".") if text else "")) from e
    return ep, args, names


def _script_name(model):
    return getattr(model, "original_name", None) or type(model).__name__


# ---------------------------------------------------------------------------
# inputs the model changes while it is traced

def _shape_of(value):
    """A dict's keys and a list's length with the identity of each entry,
    for the containers in value (recursively); None for other values."""
    if isinstance(value, dict):
        return ("dict", [(k, id(v), _shape_of(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [(id(v), _shape_of(v)) for v in value])
    if isinstance(value, tuple):
        return ("tuple", [_shape_of(v) for v in value])
    return None


def _describe(before, after):
    if before[0] == "dict":
        kb, ka = [k for k, _, _ in before[1]], [k for k, _, _ in after[1]]
        if kb != ka:
            return "its keys %s became %s" % (kb, ka)
        return "an entry was replaced"
    if before[0] == "list" and len(before[1]) != len(after[1]):
        return "its length %d became %d" % (len(before[1]), len(after[1]))
    return "an entry was replaced"


class InputWatch:
    """While tracing, warn (once per input) when the model changes a dict
    or a list it was given: adds, removes or replaces an entry.  The graph
    takes the inputs as they were given, so such a change is not in it (as
    torch.onnx.export warns about dict inputs).  Watched with hooks on the
    root module; skipped under TorchDynamo, which traces hooks too."""

    def __init__(self, model):
        self.model = model
        self.handles = []
        self.pending = []
        self.said = set()

    def __enter__(self):
        if isinstance(self.model, torch.nn.Module) and not is_script(self.model):
            try:
                self.handles.append(self.model.register_forward_pre_hook(
                    self._pre, with_kwargs=True))
                self.handles.append(self.model.register_forward_hook(
                    self._post, with_kwargs=True))
            except TypeError:   # torch 1.13: hooks see positional arguments only
                self.handles.append(self.model.register_forward_pre_hook(
                    lambda m, a: self._pre(m, a, {})))
                self.handles.append(self.model.register_forward_hook(
                    lambda m, a, o: self._post(m, a, {}, o)))
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []
        return False

    @staticmethod
    def _compiling():
        # TorchDynamo only: torch.compiler.is_compiling() is True under
        # the non-strict torch.export too, which runs these hooks in Python.
        comp = getattr(torch, "compiler", None)
        check = getattr(comp, "is_dynamo_compiling", None)
        return check is not None and check()

    def _named(self, args, kwargs):
        try:
            import inspect
            bound = inspect.signature(self.model.forward).bind(*args, **kwargs)
            return list(bound.arguments.items())
        except (TypeError, ValueError):
            return [("input %d" % i, a) for i, a in enumerate(args)] + list(kwargs.items())

    def _pre(self, mod, args, kwargs):
        if self._compiling():
            return None
        self.pending.append([(n, v, _shape_of(v)) for n, v in self._named(args, kwargs)
                             if isinstance(v, (dict, list, tuple))])
        return None

    def _post(self, mod, args, kwargs, output):
        if self._compiling() or not self.pending:
            return None
        for name, value, before in self.pending.pop():
            after = _shape_of(value)
            if after != before and name not in self.said:
                self.said.add(name)
                print("fxir_export: warning: the model changed its %s input %r while it was "
                      "traced (%s); the graph takes the input as it was given, without the "
                      "change (as torch.onnx.export, it takes dicts and lists as fixed "
                      "structures)" % (type(value).__name__, name, _describe(before, after)),
                      file=sys.stderr)
        return None


# ---------------------------------------------------------------------------
# export_params=False

def params_as_inputs(ex, model):
    """Parameters and state_dict buffers become graph inputs named by their
    state_dict key, after the model's own inputs in state_dict order, and
    are not written as weights (torch.onnx.export's export_params=False;
    its TorchScript exporter too puts them after the model's inputs under
    their keys).  Tensors outside the
    state_dict (non-persistent buffers, constants the trace captured) stay
    initializers: a caller holding a state_dict could not feed them."""
    sd = getattr(model, "state_dict", None)
    if callable(sd):
        order = list(sd(keep_vars=True).keys())
    elif isinstance(sd, dict):
        order = list(sd.keys())
    else:
        order = []
    rank = {k: i for i, k in enumerate(order)}
    phs = [n for n in ex.gm.graph.nodes if n.op == "placeholder"]
    moved = [n for n in phs if ex.placeholders[n][0] in ("param", "buffer")
             and ex.placeholders[n][1] in rank
             and ex.placeholders[n][1] not in ex.non_persistent]
    if not moved:
        return
    moved.sort(key=lambda n: rank[ex.placeholders[n][1]])
    last = phs[-1]
    for n in moved:
        if n is not last:
            last.append(n)
        last = n
        key = ex.placeholders[n][1]
        ex.placeholders[n] = ("input", key)
        ex.weights.pop(key, None)
