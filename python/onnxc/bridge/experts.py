"""The expert layers of transformers' mixture-of-experts models, traced
through an implementation a capture keeps.

transformers (5.x) runs a MoE layer's experts through the implementation
its config names (`config._experts_implementation`; the layer's class is
decorated by `use_experts_implementation`, which reads it at each call).
They compute the same function: "grouped_mm" and "batched_mm" route every
token at once with tensor ops, which torch.export captures
(aten::_grouped_mm or transformers::grouped_mm_fallback, lowered by
decomps/experts.fxir, and bmm).  "eager" loops in Python over the experts
the batch hit, a trip count only the data tells, which no capture keeps;
"deepgemm" and "sonicmoe" call GPU kernels a trace cannot see into.  While
the model is traced, layers set to one of those run "grouped_mm"; the
configs are restored afterwards, also on an error.
"""

import contextlib

# The implementation traced in place of the ones below.
TRACED = "grouped_mm"
REPLACED = ("eager", "deepgemm", "sonicmoe")


def _is_experts(mod):
    """A module whose forward use_experts_implementation dispatches: the
    decorator gives it these attributes and keeps its config."""
    cfg = getattr(mod, "config", None)
    return (cfg is not None and hasattr(mod, "has_gate") and hasattr(mod, "is_transposed")
            and isinstance(getattr(cfg, "_experts_implementation", None), str))


def _get(cfg):
    return cfg._experts_implementation


def _set(cfg, value):
    """Sets the config's own value only: the property's setter also
    rewrites the sub-configs, which may not be expert layers'."""
    if hasattr(cfg, "_experts_implementation_internal"):
        cfg._experts_implementation_internal = value
    else:
        cfg._experts_implementation = value


def replaced_configs(model):
    """[(config, its implementation)] of the model's expert layers whose
    implementation is one of REPLACED, each config once."""
    if not hasattr(model, "modules"):
        return []
    found = {}
    for mod in model.modules():
        if _is_experts(mod) and _get(mod.config) in REPLACED:
            found.setdefault(id(mod.config), (mod.config, _get(mod.config)))
    return list(found.values())


@contextlib.contextmanager
def traceable(model):
    """Inside, the model's expert layers set to an implementation no
    capture keeps run TRACED; yields the implementations replaced (a
    sorted list, empty when none was)."""
    saved = replaced_configs(model)
    try:
        for cfg, _ in saved:
            _set(cfg, TRACED)
        yield sorted({impl for _, impl in saved})
    finally:
        for cfg, impl in saved:
            _set(cfg, impl)
