"""Module attributes by name: a node inside a module instance that takes
the value of one of the instance's annotated attributes (a class variable
with a PEP 526 annotation, `factor: float`) as a literal argument says so
in its metadata (`pkg.onnxc.module_attribute`), so that outlining can name
the local function's attribute after it rather than after the op's own
(`value` for a constant).  The trace keeps no link from a literal to the
attribute it came from: the value is matched, and only when one literal of
the node matches exactly one attribute."""

import inspect

import torch

KEY = "pkg.onnxc.module_attribute"
TABLE_KEY = "pkg.onnxc.module_attributes"
_SCALARS = (bool, int, float)
_KINDS = ((bool, "b"), (int, "i"), (float, "f"), (str, "s"))


def annotated(module, kinds=_SCALARS):
    """{name: value} of module's annotated attributes that hold a value of
    one of kinds (bool, int or float), from its class and its bases below
    nn.Module."""
    out = {}
    for cls in reversed(type(module).__mro__):
        if not issubclass(cls, torch.nn.Module) or cls is torch.nn.Module:
            continue
        notes = (inspect.get_annotations(cls) if hasattr(inspect, "get_annotations")
                 else cls.__dict__.get("__annotations__", {}))
        for name in notes:
            value = getattr(module, name, None)
            if isinstance(value, kinds):
                out[name] = value
    return out


def _entry(name, value):
    """name TAB kind-letter value, or None when the text cannot hold it."""
    kind = next(k for t, k in _KINDS if isinstance(value, t))
    if kind == "b":
        text = "1" if value else "0"
    elif kind == "i":
        if not -2**63 <= value < 2**63:
            return None
        text = str(value)
    elif kind == "f":
        text = repr(float(value))
    else:
        text = value
    if "\t" in name or "\n" in name or "\t" in text or "\n" in text or "\0" in text:
        return None
    return "%s\t%s%s" % (name, kind, text)


def table(model, paths):
    """The value of TABLE_KEY: a line for each module instance of paths
    that has annotated bool, int, float or str attributes: its path, then a
    tab-separated name and value for each (the value after its kind's
    letter: b1, i3, f0.5, stanh)."""
    lines = []
    for path in paths:
        try:
            attrs = annotated(model.get_submodule(path), tuple(t for t, _ in _KINDS))
        except (AttributeError, TypeError):
            continue
        entries = [e for e in (_entry(n, v) for n, v in attrs.items()) if e]
        if entries and "\t" not in path and "\n" not in path:
            lines.append("\t".join([path] + entries))
    return "\n".join(lines)


def _literals(node):
    for a in list(node.args) + list(node.kwargs.values()):
        if isinstance(a, _SCALARS):
            yield a


def name_node(model, node, path, cache):
    """Sets node.meta[KEY] when the node's one matching literal is the value
    of one annotated attribute of the instance at `path` (cache: path ->
    its attributes, or None when the path names no module)."""
    if path not in cache:
        try:
            cache[path] = annotated(model.get_submodule(path))
        except (AttributeError, TypeError):
            cache[path] = None
    attrs = cache[path]
    if not attrs:
        return
    hits = [(n, lit) for lit in _literals(node) for n, v in attrs.items()
            if type(lit) is type(v) and lit == v]
    if len(hits) == 1:
        node.meta[KEY] = hits[0][0]
