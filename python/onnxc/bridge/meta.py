"""Provenance: module scopes and source locations of the traced nodes,
and the user's source line of an error.
"""

import contextlib
import functools
import linecache
import os
import sys

import torch
import torch.fx
from .common import _BRIDGE_DIR, _STDLIB_DIR, _TORCH_DIR


# ---------------------------------------------------------------------------
# provenance: module scopes and stack traces while tracing (torch 1.13)

_CONTROL_FILE = os.sep + os.path.join("onnxc", "control.py")


class _Provenance:
    """While active, tag every FX node created with the module stack and the
    user's stack trace (node.meta['fxir_scope'], node.meta['fxir_frames'])."""

    def __init__(self, root, stop_code):
        self.root = root
        self.stop_code = stop_code
        self.stack = []
        self.handles = []
        self.info = {}
        self.user_file = {}   # code object -> its absolute file name, None when not user code
        for path, mod in root.named_modules(remove_duplicate=False):
            if id(mod) not in self.info:
                cls = type(mod)
                self.info[id(mod)] = (path, "%s.%s" % (cls.__module__, cls.__qualname__))

    def __enter__(self):
        for mod in self.root.modules():
            self.handles.append(mod.register_forward_pre_hook(self._pre))
            self.handles.append(mod.register_forward_hook(self._post))
        self.orig_create_node = torch.fx.Graph.create_node
        prov = self

        def create_node(graph, *args, **kwargs):
            node = prov.orig_create_node(graph, *args, **kwargs)
            node.meta["fxir_scope"] = list(prov.stack)
            node.meta["fxir_frames"] = prov._user_frames()
            return node

        torch.fx.Graph.create_node = create_node
        return self

    def __exit__(self, *exc):
        torch.fx.Graph.create_node = self.orig_create_node
        for h in self.handles:
            h.remove()
        self.handles = []
        return False

    def _pre(self, mod, inputs):
        self.stack.append(self.info.get(id(mod), ("?", type(mod).__qualname__)))

    def _post(self, mod, inputs, output):
        if self.stack:
            self.stack.pop()

    def _user_frames(self):
        """(file, line, function) of user frames, outermost first."""
        frames = []
        f = sys._getframe(2)
        user = self.user_file
        while f is not None and f.f_code is not self.stop_code:
            code = f.f_code
            fn = user.get(code, False)
            if fn is False:
                fn = os.path.abspath(code.co_filename)
                if (fn.startswith((_TORCH_DIR, _BRIDGE_DIR)) or fn.endswith(_CONTROL_FILE)
                        or fn.startswith(_STDLIB_DIR) or code.co_filename.startswith("<")):
                    fn = None
                user[code] = fn
            if fn is not None:
                frames.append((fn, f.f_lineno, code.co_name))
            f = f.f_back
        if f is None:
            return []   # not inside the traced call
        frames.reverse()
        return frames


@functools.lru_cache(maxsize=None)
def _short_path_cached(fn, source_root, sys_path):
    return _short_path_uncached(fn, source_root, sys_path)


def _short_path(fn, source_root):
    """A path without the machine's layout: relative to source_root, or to
    the sys.path entry it was imported from; else absolute."""
    return _short_path_cached(fn, source_root, tuple(sys.path))


def _short_path_uncached(fn, source_root, sys_path):
    fn = os.path.abspath(fn)
    roots = [source_root] + sorted((p for p in sys_path if p), key=len, reverse=True)
    for r in roots:
        r = os.path.abspath(r)
        if fn.startswith(r + os.sep):
            return os.path.relpath(fn, r).replace(os.sep, "/")
    return fn


# ---------------------------------------------------------------------------
# tracer: torch >= 2.1 (torch.export)

def _user_frame(exc):
    """"file:line: source" of the innermost frame of the model's own code
    (not torch's, the standard library's or the bridge's) in exc's
    traceback or those it was raised from, or None."""
    best = None
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            fn = os.path.abspath(tb.tb_frame.f_code.co_filename)
            if not (fn.startswith((_TORCH_DIR, _STDLIB_DIR, _BRIDGE_DIR)) or fn.endswith(_CONTROL_FILE)
                    or "site-packages" + os.sep + "torch" in fn or fn.startswith("<")):
                best = (fn, tb.tb_lineno)
            tb = tb.tb_next
        if best is not None:
            break
        exc = exc.__cause__ or exc.__context__
    if best is None:
        return None
    src = linecache.getline(best[0], best[1]).strip()
    return "%s:%d%s" % (_short_path(best[0], os.getcwd()), best[1], ": " + src if src else "")


def _first_lines(exc, n=6):
    text = str(exc).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    out = "\n".join(lines[:n])
    return out + ("\n..." if len(lines) > n else "")


def _parse_stack_trace(text):
    """[(file, line, function)] from a Python traceback text."""
    frames = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        try:
            fn = line[6:line.index('"', 6)]
            rest = line[line.index('"', 6) + 1:]
            lineno = int(rest.split("line", 1)[1].split(",")[0])
            func = rest.split(" in ", 1)[1].strip() if " in " in rest else "?"
        except (ValueError, IndexError):
            continue
        if fn.startswith(_TORCH_DIR) or fn.startswith("<"):
            continue    # torch's frames, and FX's generated code (<eval_with_key>.N)
        frames.append((fn, lineno, func))
    return frames


def node_where(node):
    """"file:line: source" of the model's line a traced node came from, or
    None when the capture recorded none."""
    frames = node.meta.get("fxir_frames")
    if frames is None and node.meta.get("stack_trace"):
        frames = _parse_stack_trace(node.meta["stack_trace"])
    if not frames:
        return None
    fn, line = frames[-1][0], frames[-1][1]
    src = linecache.getline(fn, line).strip()
    return "%s:%d%s" % (_short_path(fn, os.getcwd()), line, ": " + src if src else "")


def located(exc, node):
    """exc (an ExportError) with the node's source line appended, once."""
    if getattr(exc, "located", False):
        return exc
    where = node_where(node) if node is not None else None
    new = type(exc)("%s\n  at %s" % (exc, where)) if where else exc
    new.located = True
    return new


# ---------------------------------------------------------------------------
# stack traces of a torch.export capture, recorded directly

_FORWARD_FILE = {}   # code object -> whether its frames are kept


def _forward_frames():
    """(file, line, "forward") of the `forward` frames outside torch on the
    stack, outermost first: what torch.export keeps of a node's stack (its
    tracer records forward frames only) once _parse_stack_trace has dropped
    torch's own and generated code."""
    frames = []
    f = sys._getframe(2)
    keep = _FORWARD_FILE
    while f is not None:
        code = f.f_code
        if code.co_name == "forward":
            k = keep.get(code)
            if k is None:
                fn = code.co_filename
                k = keep[code] = not (fn.startswith(_TORCH_DIR) or fn.startswith("<"))
            if k:
                frames.append((code.co_filename, f.f_lineno, "forward"))
        f = f.f_back
    frames.reverse()
    return frames


def frames_as_stack_traces(gm):
    """node.meta['stack_trace'] written from the frames own_stack_traces
    recorded, where torch wrote none: run_decompositions carries that text
    to the nodes it makes (and _parse_stack_trace reads it back)."""
    for node in gm.graph.nodes:
        frames = node.meta.get("fxir_frames")
        if frames and not node.meta.get("stack_trace"):
            node.meta["stack_trace"] = "\n".join('  File "%s", line %d, in %s' % f
                                                 for f in frames)


@contextlib.contextmanager
def own_stack_traces():
    """While torch.export (non-strict) traces: torch's own stack traces off
    and each node's frames recorded as node.meta['fxir_frames'] instead.
    torch builds a node's trace from a symbolized traceback of the whole
    Python stack, reads every frame's source line and formats it as text,
    which the bridge then parses back: a tenth of the trace's time.  The
    frames are the same (_forward_frames).  Without the switch (torch before
    it had one) nothing changes."""
    cfg = getattr(torch.fx, "config", None)
    if cfg is None or not hasattr(cfg, "do_not_emit_stack_traces"):
        yield
        return
    orig = torch.fx.Graph.create_node

    def create_node(graph, *args, **kwargs):
        node = orig(graph, *args, **kwargs)
        if node.op == "call_function":
            node.meta["fxir_frames"] = _forward_frames()
        return node

    saved = cfg.do_not_emit_stack_traces
    torch.fx.Graph.create_node = create_node
    cfg.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        torch.fx.Graph.create_node = orig
        cfg.do_not_emit_stack_traces = saved
