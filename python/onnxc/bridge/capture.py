"""The torch.export capture (torch 2.x) and the fallbacks tried in turn
when it fails; the higher-order ops of its graph are lowered (hops).
"""

import contextlib
import io
import sys

from .common import CaptureFailed, ExportError
from .dims import (
    _GENERATED_DIM,
    _bind_inputs,
    _dynamic_for_leaves,
    _flatten,
    _is_program,
    _specialized_dim_error,
    _sym_expr,
    _to_export_dims)
from .meta import (_first_lines, _parse_stack_trace, _user_frame, frames_as_stack_traces,
                   located, own_stack_traces)
from .writer import _Export, _op_name
from .make_fx import _trace_make_fx
from .progress import Progress
from . import attrs as _attrs
from . import hops as _hops
from . import quant as _quant


# The captures tried in turn on torch 2.x; the one that worked is named in
# the .fxir's meta and the report.
CAPTURES = ("torch.export", "torch.export (strict)", "make_fx", "draft_export")


def _capture(model, args, kwargs, dynamic_shapes, keep_inplace, only=None):
    """(ExportedProgram or None, the make_fx _Export or None, capture name).
    torch.export (non-strict) first; when it fails, torch.export with
    TorchDynamo (strict), then make_fx over the module (the torch 1.13
    path, which specializes data-dependent Python to the example with a
    warning), then draft_export.  A dynamic dim the model specializes is
    the user's error, not a reason to try another capture."""
    from torch.export import Dim
    ds = _to_export_dims(dynamic_shapes, Dim)
    named = _bind_inputs(model, args, kwargs)
    leaves = []
    for n, v, _ in named:
        _flatten(n, v, leaves)
    dyn = _dynamic_for_leaves(dynamic_shapes, named, leaves)
    if isinstance(ds, dict) and set(ds) <= {n for n, _, _ in named}:
        # torch.export wants every input named; torch.onnx.export's users
        # name only the dynamic ones: the others are static.
        ds = {n: ds.get(n) for n, _, _ in named}
    first = None
    order = [only] if only else list(CAPTURES)
    for how in order:
        # A capture that fails may print pages of graph code on the way;
        # what it printed is shown only if it succeeds (its warnings).
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                result = _run_capture(how, model, args, kwargs, dynamic_shapes, ds,
                                      keep_inplace)
        except ExportError as e:
            first = first or e
            continue
        except Exception as e:   # noqa: BLE001 (the next capture may succeed)
            if type(e).__name__ == "ControlFlowError":
                raise   # onnxc.cond / a loop misused: the model's error
            spec = _specialized_dim_error(e, dyn, leaves)
            if spec:
                raise ExportError(spec) from None
            first = first or e
            continue
        sys.stdout.write(out.getvalue())
        sys.stderr.write(err.getvalue())
        return result + (how,)
    where = _user_frame(first)
    raise CaptureFailed("no capture could trace %s (tried %s). %s: %s%s"
                      % (type(model).__name__, ", ".join(order), type(first).__name__,
                         _first_lines(first),
                         "\n  at %s" % where if where else "")) from first


def _run_capture(how, model, args, kwargs, dynamic_shapes, ds, keep_inplace):
    """(ExportedProgram, None) or (None, make_fx's _Export) from one capture."""
    from torch.export import export as texport
    if how == "torch.export":
        with own_stack_traces(), _lazy_code():
            return texport(model, tuple(args), kwargs=kwargs or None, dynamic_shapes=ds,
                           strict=False), None
    if how == "torch.export (strict)":
        return texport(model, tuple(args), kwargs=kwargs or None, dynamic_shapes=ds,
                       strict=True), None
    if how == "make_fx":
        return None, _trace_make_fx(model, args, kwargs, dynamic_shapes, keep_inplace)
    if how == "draft_export":
        from torch.export import draft_export
        return draft_export(model, tuple(args), kwargs=kwargs or None,
                            dynamic_shapes=ds), None
    raise ExportError("unknown capture %r (one of %s)" % (how, ", ".join(CAPTURES)))


@contextlib.contextmanager
def _lazy_code():
    """The GraphModules the trace makes generate their Python code when
    first run rather than at each recompile: torch.export recompiles its
    graph six times, and the bridge only reads it (run_decompositions and
    --save-reference run it: the code is made then).  Without torch's
    switch nothing changes."""
    try:
        from torch.fx._lazy_graph_module import _use_lazy_graph_module
    except ImportError:
        yield
        return
    with _use_lazy_graph_module(True):
        yield


def _torch_decompositions(ep, names):
    """{op: function} from PyTorch's own decompositions (its core ATen
    table, else the op's CompositeImplicitAutograd kernel) for the ops of
    ep's graph whose .fxir names are in `names`."""
    import torch
    from torch._decomp import core_aten_decompositions
    core = core_aten_decompositions()
    table = {}
    for node in ep.graph.nodes:
        t = node.target
        if (node.op != "call_function" or not isinstance(t, torch._ops.OpOverload)
                or t in table or _op_name(t) not in names):
            continue
        if t in core:
            table[t] = core[t]
        elif torch._C._dispatch_has_kernel_for_dispatch_key(t.name(), "CompositeImplicitAutograd"):
            table[t] = t.decompose
    return table


def _trace_torch_export(model, args, kwargs, dynamic_shapes, keep_inplace, capture=None,
                        decompose=(), progress=None):
    """The torch.export path: capture, then (decompose: .fxir op names
    onnxc has no decomposition for) PyTorch's decompositions of those ops,
    then the higher-order and assertion ops lowered.  Returns the _Export;
    its `decomposed` lists the ops PyTorch decomposed.  progress (a
    Progress) times the capture, run_decompositions when it runs, and the
    rest ("program")."""
    progress = progress or Progress(show=False)
    if _is_program(model):
        ep, how = model, "ExportedProgram"
    else:
        if _quant.is_quantized(model):   # quantized tensors become QDQ around float ops
            model = _quant.lower(model)
        with progress.stage("capture") as st:
            ep, ex, how = _capture(model, args, kwargs, dynamic_shapes, keep_inplace, capture)
            st.name = "capture (%s)" % how
        if ex is not None:
            ex.capture = how
            ex.decomposed = []
            return ex
    decomposed = []
    if decompose or not keep_inplace:
        with progress.stage("run_decompositions"):
            ep, decomposed = _decompose(ep, decompose)
    with progress.stage("program (signature, provenance)"):
        return _from_program(ep, how, decomposed, model, args, kwargs, dynamic_shapes)


def _decompose(ep, decompose):
    """(ep with PyTorch's decompositions of the ops named in `decompose`,
    or functionalized when none are named; the ops it replaced)."""
    frames_as_stack_traces(ep.graph_module)
    if not decompose:
        return _run_decompositions(ep, {}), []   # functionalizes, decomposes nothing
    # A decomposition may make another op of the list (var_mean.dim
    # becomes var_mean.correction): again, until none is left.
    done = set()
    for _ in range(8):
        table = _torch_decompositions(ep, set(decompose))
        if not table:
            break
        ep = _run_decompositions(ep, table)
        done |= {_op_name(t) for t in table}
    return ep, sorted(done)


def _run_decompositions(ep, table):
    """ep.run_decompositions(table).  It retraces ep.module(), which (torch
    >= 2.9) first calls a _guards_fn checking the inputs; with some
    programs (DeepseekV2's) that check fails on the retrace's own fake
    inputs (AttributeError: 'NoneType' object has no attribute 'size').
    Then once more with the module made without it: the guards check the
    inputs of a later run, not the trace."""
    try:
        return ep.run_decompositions(table)
    except Exception as e:   # noqa: BLE001 (retried only for the guard's failure)
        if "_guards_fn" not in str(e):
            raise
        first = e
    import inspect
    cls = type(ep)
    module = cls.module
    if "check_guards" not in inspect.signature(module).parameters:
        raise first
    cls.module = lambda self, check_guards=False: module(self, check_guards=check_guards)
    try:
        return ep.run_decompositions(table)
    finally:
        cls.module = module


def _is_constant_argument(spec):
    """A user input torch.export took as a constant of the trace (a str,
    bool, int, float or None argument, also inside lists and dicts)."""
    return type(spec.arg).__name__ == "ConstantArgument"


def _bake_constant(gm, node, value):
    """The placeholder of a constant argument leaves the graph, as
    torch.onnx.export leaves it out: its uses (torch.export specializes the
    program on the value, so there are usually none) take the value."""
    for user in list(node.users):
        user.args = torch.fx.node.map_arg(user.args, lambda n: value if n is node else n)
        user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda n: value if n is node else n)
    gm.graph.erase_node(node)


def _from_program(ep, how, decomposed, model, args, kwargs, dynamic_shapes):
    """The _Export of an ExportedProgram: its higher-order and assertion
    ops lowered, its signature read, provenance and dim names attached."""
    from torch.export.graph_signature import InputKind, OutputKind

    gm = ep.graph_module
    try:
        _hops.lower_higher_order_ops(gm)
        _hops.drop_assertions(gm)
    except _hops.HopError as e:
        raise located(ExportError(str(e)), e.node) from None
    sig = ep.graph_signature
    ex = _Export()
    phs = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    ex.weights_const = {}
    for spec in sig.input_specs:
        node = phs[spec.arg.name]
        if spec.kind == InputKind.PARAMETER:
            ex.placeholders[node] = ("param", spec.target)
            ex.weights[spec.target] = ep.state_dict[spec.target].detach()
        elif spec.kind == InputKind.BUFFER:
            if spec.target in ep.state_dict:
                t = ep.state_dict[spec.target]
            else:   # non-persistent buffers live with the constants
                t = ep.constants[spec.target]
            ex.placeholders[node] = ("buffer", spec.target)
            ex.weights[spec.target] = t.detach()
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            ex.placeholders[node] = ("const", spec.target)
            ex.weights_const[spec.target] = ep.constants[spec.target]
        elif spec.kind == InputKind.USER_INPUT and _is_constant_argument(spec):
            _bake_constant(gm, node, spec.arg.value)
        elif spec.kind == InputKind.USER_INPUT:
            ex.placeholders[node] = ("input", spec.arg.name)
        else:
            raise ExportError("input %s of kind %s is not supported" % (spec.arg.name, spec.kind))

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    out_args = list(out_node.args[0])
    by_input_name = {s.arg.name: phs[s.arg.name] for s in sig.input_specs}
    target_to_ph = {s.target: phs[s.arg.name] for s in sig.input_specs if s.target is not None}
    for spec, value in zip(sig.output_specs, out_args):
        if spec.kind == OutputKind.USER_OUTPUT:
            ex.outputs.append(value)
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            ex.mutations.append((target_to_ph[spec.target], value))
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            ex.mutations.append((by_input_name[spec.target], value))
        else:
            raise ExportError("output of kind %s is not supported" % spec.kind)

    # Provenance from the metadata torch.export records.
    attr_cache = {}
    paths = {}   # module instances, in order of first use
    for node in gm.graph.nodes:
        stack = node.meta.get("nn_module_stack")
        if stack:
            scope = []
            for _, (path, cls) in stack.items():
                if not isinstance(cls, str):
                    cls = "%s.%s" % (cls.__module__, cls.__qualname__)
                if path.startswith("L['self']."):
                    path = path[len("L['self']."):]
                elif path == "L['self']":
                    path = ""
                scope.append((path, cls))
            node.meta["fxir_scope"] = scope
            for path, _ in scope:
                paths.setdefault(path, None)
            if not _is_program(model) and scope[-1][0]:
                _attrs.name_node(model, node, scope[-1][0], attr_cache)
        elif node.op == "call_function":
            node.meta["fxir_scope"] = []
        st = node.meta.get("stack_trace")
        if st:
            node.meta["fxir_frames"] = _parse_stack_trace(st)
    if not _is_program(model):
        ex.module_attributes = _attrs.table(model, [p for p in paths if p])

    # Symbolic dims: the user's names for the input symbols.
    user_specs = [s for s in sig.input_specs
                  if s.kind == InputKind.USER_INPUT and not _is_constant_argument(s)]
    named = _bind_inputs(model, args, kwargs)
    leaves = []
    for n, v, _ in named:
        _flatten(n, v, leaves)
    dyn = _dynamic_for_leaves(dynamic_shapes, named, leaves)
    if len(user_specs) == len(leaves):
        # Name the inputs like the make_fx path does (x, inputs_a, xs_0).
        for spec, (lname, _) in zip(user_specs, leaves):
            ex.placeholders[phs[spec.arg.name]] = ("input", lname)
    for li, spec in enumerate(user_specs):
        val = phs[spec.arg.name].meta.get("val")
        if val is None or li >= len(leaves):
            continue
        for d, sd in enumerate(getattr(val, "shape", ())):
            expr = _sym_expr(sd) if not isinstance(sd, int) else None
            if expr is not None and getattr(expr, "is_Symbol", False):
                name = dyn.get(li, {}).get(d)
                have = ex.dims.names.get(str(expr))
                # torch.export makes dims it proves equal one symbol: the
                # first name given wins, a name the user wrote over one
                # made up for an unnamed dim (x_dim0, x_dynamic_axes_1).
                if name is not None and (have is None or (_GENERATED_DIM.search(have)
                                                          and not _GENERATED_DIM.search(name))):
                    ex.dims.names[str(expr)] = name
    # The ranges torch.export proved (or the user's Dim(min=, max=)).
    for sym, vr in (getattr(ep, "range_constraints", None) or {}).items():
        name = ex.dims.names.get(str(sym))
        if isinstance(name, str):
            ex.ranges[name] = (str(vr.lower), str(vr.upper))
    ex.gm = gm
    ex.capture = how
    ex.decomposed = decomposed
    return ex
