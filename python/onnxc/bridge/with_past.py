"""A transformers causal LM as one decoder with past, ready for onnxc.export.

    spec = with_past.decoder_spec(model)
    onnxc.export(spec.module, spec.args, "model.onnx",
                 dynamic_shapes=spec.dynamic_shapes,
                 input_names=spec.input_names, output_names=spec.output_names)

The module's inputs are `input_ids`, `attention_mask`, `position_ids` (only
where the model's forward takes them) and the cache of each layer,
`past_key_values.N.key` / `.value`; its outputs are `logits` and
`present.N.key` / `.value`, the past grown by the new tokens (the names
ONNX Runtime's generation tools read).  Batch, sequence, past and total
length are dynamic; a past of length 0 is the prefill, in the same graph.

`logits` is [batch, 1, vocab] by default, the last position's: what
generate() asks of the model (transformers' `logits_to_keep=1`), so a
prefill of S tokens runs the LM head on one row, not S.  decoder_spec(model,
logits="all") keeps every position's ([batch, sequence, vocab]: scoring a
text, perplexity).

The cache is transformers' DynamicCache built from the past tensors, one
full layer per decoder layer.  Sliding-window layers (Mistral, Gemma 2 and
3) keep every position too: their attention mask, made from the window,
hides what falls out of it, so the result equals generate()'s, whose cache
drops those positions; the cost is memory, not correctness.

Nothing here runs ONNX Runtime; onnxc.generation drives the export and the
greedy loop.
"""

import inspect

import torch

from .common import ExportError

__all__ = ["DecoderSpec", "decoder_spec"]

# The example the decoder is traced at: batch, new tokens, past tokens.
# None is 0 or 1 (torch.export would specialize those sizes), and they
# differ from each other so that no two dims are taken to be equal.
TRACE_BATCH, TRACE_SEQ, TRACE_PAST = 2, 3, 5

DIM_NAMES = {"batch": "batch_size", "seq": "sequence_length",
             "past": "past_sequence_length", "total": "total_sequence_length"}


class DecoderSpec:
    """What onnxc.export needs for a decoder with past: `module`, `args`,
    `dynamic_shapes`, `input_names`, `output_names`, and `num_layers`,
    `takes_position_ids`, `past_shapes` ([(heads, head_dim)] per cache
    tensor, in input order), `logits` ("last" or "all")."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class _DecoderWithPast(torch.nn.Module):
    """forward(input_ids, attention_mask, position_ids, past), past a list
    of (key, value) pairs, one a layer; returns (logits, key 0, value 0,
    key 1, ...)."""

    def __init__(self, model, keep):
        super().__init__()
        self.model = model
        self.keep = keep

    def forward(self, input_ids, attention_mask, position_ids, past):
        return self.step(input_ids, attention_mask, past, position_ids=position_ids)

    def step(self, input_ids, attention_mask, past, **kw):
        from transformers import DynamicCache
        cache = DynamicCache()
        for i, (k, v) in enumerate(past):
            cache.update(k, v, i)
        if self.keep:
            kw[self.keep] = 1
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         past_key_values=cache, use_cache=True, **kw)
        flat = []
        for layer in out.past_key_values.layers:
            flat += [layer.keys, layer.values]
        logits = out.logits
        if self.keep is not None and logits.shape[1] != 1:
            logits = logits[:, -1:, :]
        return (logits, *flat)


class _DecoderWithPastNoPositions(_DecoderWithPast):
    """The same for a model that takes no position_ids (its positions come
    from the mask or the cache, as Bloom's ALiBi)."""

    def forward(self, input_ids, attention_mask, past):
        return self.step(input_ids, attention_mask, past)


def _refuse_unless_causal_lm(model):
    cfg = getattr(model, "config", None)
    if cfg is None or not isinstance(model, torch.nn.Module):
        raise ExportError("a generation export takes a transformers model (a PreTrainedModel "
                          "with a config), not %s" % type(model).__name__)
    if getattr(cfg, "is_encoder_decoder", False):
        raise ExportError("%s is an encoder-decoder: it is exported as an encoder file and a "
                          "decoder file (onnxc.bridge.seq2seq)" % type(model).__name__)


def position_ids_from_mask(mask):
    """generate()'s positions for a (left-padded) mask: the count of real
    tokens before each one; pad positions get 1."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


def _prefill_cache(model, batch, past):
    """Runs the model eagerly on `past` tokens and returns its cache: the
    shapes of real past tensors for any architecture, and a refusal for
    a state that is not a key/value cache."""
    from transformers import DynamicCache
    g = torch.Generator().manual_seed(0)
    vocab = int(getattr(model.config, "vocab_size", 0) or 0) or 8
    ids = torch.randint(0, vocab, (batch, past), generator=g)
    mask = torch.ones(batch, past, dtype=torch.long)
    with torch.no_grad():
        try:
            out = model(input_ids=ids, attention_mask=mask, past_key_values=DynamicCache(),
                        use_cache=True)
        except TypeError as e:
            raise ExportError("%s does not take a key/value cache (past_key_values): %s"
                              % (type(model).__name__, e)) from e
        except Exception as e:  # noqa: BLE001 (a state of its own: hybrid, recurrent)
            why = (str(e).strip().splitlines() or [""])[0][:200]
            raise ExportError(
                "%s does not run with a key/value cache per layer (transformers' DynamicCache): "
                "%s: %s; the with-past export covers attention decoders whose state is a "
                "key/value cache per layer (inputs past_key_values.N.key/.value)"
                % (type(model).__name__, type(e).__name__, why)) from e
    cache = getattr(out, "past_key_values", None)
    layers = getattr(cache, "layers", None)
    if not isinstance(cache, DynamicCache) or not layers or any(
            getattr(layer, "keys", None) is None for layer in layers):
        state = type(cache).__name__ if cache is not None else "no cache"
        raise ExportError(
            "%s keeps its generation state as %s, not a key/value cache per layer: the "
            "with-past export covers attention decoders (inputs past_key_values.N.key/.value); "
            "export a recurrent model with onnxc.export on a module that takes and returns "
            "its state tensors" % (type(model).__name__, state))
    for layer in layers:
        if layer.keys.dim() != 4 or layer.keys.shape[2] != past:
            raise ExportError("%s's cache layer holds keys of shape %s: the with-past export "
                              "wants [batch, heads, past, head_dim]"
                              % (type(model).__name__, tuple(layer.keys.shape)))
    return [(layer.keys, layer.values) for layer in layers]


def _last_logits_argument(model):
    """The forward argument that limits the LM head to the last positions
    (transformers' logits_to_keep, num_logits_to_keep before 4.50), or ''
    when the model has none (its logits are sliced after the head)."""
    params = inspect.signature(model.forward).parameters
    return next((n for n in ("logits_to_keep", "num_logits_to_keep") if n in params), "")


def check_logits(logits):
    """Refuses (ExportError) a `logits` choice other than "last" and "all"."""
    if logits not in ("last", "all"):
        raise ExportError("logits=%r: the choices are \"last\" (the last position's, what "
                          "generate() computes) and \"all\" (every position's)" % (logits,))


def decoder_spec(model, logits="last"):
    """The with-past decoder of a transformers causal LM (a DecoderSpec);
    `logits` "last" (the last position's, as generate() computes them) or
    "all".  Raises ExportError for a model whose state is not a key/value
    cache."""
    _refuse_unless_causal_lm(model)
    check_logits(logits)
    model = model.eval()
    keep = _last_logits_argument(model) if logits == "last" else None
    takes_pos = "position_ids" in inspect.signature(model.forward).parameters
    past = _prefill_cache(model, TRACE_BATCH, TRACE_PAST)
    n = len(past)
    g = torch.Generator().manual_seed(1)
    vocab = int(getattr(model.config, "vocab_size", 0) or 0) or 8
    ids = torch.randint(0, vocab, (TRACE_BATCH, TRACE_SEQ), generator=g)
    mask = torch.ones(TRACE_BATCH, TRACE_PAST + TRACE_SEQ, dtype=torch.long)
    args = [ids, mask]
    d = DIM_NAMES
    dyn = {"input_ids": {0: d["batch"], 1: d["seq"]},
           "attention_mask": {0: d["batch"], 1: d["total"]}}
    names = ["input_ids", "attention_mask"]
    if takes_pos:
        args.append(position_ids_from_mask(mask)[:, -TRACE_SEQ:])
        dyn["position_ids"] = {0: d["batch"], 1: d["seq"]}
        names.append("position_ids")
    kv = {0: d["batch"], 2: d["past"]}
    args.append([(k, v) for k, v in past])
    dyn["past"] = [(dict(kv), dict(kv)) for _ in range(n)]
    for i in range(n):
        names += ["past_key_values.%d.key" % i, "past_key_values.%d.value" % i]
    outs = ["logits"]
    for i in range(n):
        outs += ["present.%d.key" % i, "present.%d.value" % i]
    shapes = []
    for k, v in past:
        shapes += [(k.shape[1], k.shape[3]), (v.shape[1], v.shape[3])]
    wrapper = (_DecoderWithPast if takes_pos else _DecoderWithPastNoPositions)(model, keep).eval()
    return DecoderSpec(module=wrapper, args=tuple(args),
                       dynamic_shapes=dyn, input_names=names, output_names=outs,
                       num_layers=n, takes_position_ids=takes_pos, past_shapes=shapes,
                       logits=logits)
