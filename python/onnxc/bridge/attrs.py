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
_SCALARS = (bool, int, float)


def annotated(module):
    """{name: value} of module's annotated attributes that hold a bool,
    int or float, from its class and its bases below nn.Module."""
    out = {}
    for cls in reversed(type(module).__mro__):
        if not issubclass(cls, torch.nn.Module) or cls is torch.nn.Module:
            continue
        notes = (inspect.get_annotations(cls) if hasattr(inspect, "get_annotations")
                 else cls.__dict__.get("__annotations__", {}))
        for name in notes:
            value = getattr(module, name, None)
            if isinstance(value, _SCALARS):
                out[name] = value
    return out


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
