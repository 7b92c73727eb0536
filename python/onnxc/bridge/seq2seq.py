"""Encoder-decoder generation (transformers' T5, BART, Whisper and their
kin) as two ONNX files and a greedy loop over them in ONNX Runtime.

    from onnxc.bridge.seq2seq import export_seq2seq, greedy_seq2seq
    info = export_seq2seq(model, "out/")            # out/encoder.onnx, out/decoder.onnx
    ids = greedy_seq2seq(info, {"input_ids": ids, "attention_mask": mask}, 16)

encoder.onnx runs once per input: the encoder's hidden states and, for
every decoder layer, the keys and values of its cross-attention
(`present.N.encoder.key/value`, [batch, heads, enc_seq, head_dim]).
decoder.onnx runs once per generated token: the new tokens, the encoder's
attention mask (text encoders), the self-attention cache so far
(`past_key_values.N.decoder.key/value`, past length 0 on the first step) and
the cross-attention cache from encoder.onnx; it returns the logits and the
self-attention cache grown by the new tokens (`present.N.decoder.key/value`).

The wrappers call the model itself (its forward, with
transformers' EncoderDecoderCache), so the files compute what
`model.generate` computes.  See docs/generation.md.
"""

import json
import os

import torch
from torch import nn

__all__ = ["export_seq2seq", "greedy_seq2seq", "Seq2SeqEncoder", "Seq2SeqDecoder",
           "encoder_input_names"]


def _caches():
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache
    return DynamicCache, EncoderDecoderCache


def _encoder_outputs(hidden):
    from transformers.modeling_outputs import BaseModelOutput
    return BaseModelOutput(last_hidden_state=hidden)


def _num_layers(model):
    cfg = model.config
    for key in ("num_decoder_layers", "decoder_layers", "num_layers", "num_hidden_layers"):
        n = getattr(cfg, key, None)
        if isinstance(n, int) and n > 0:
            return n
    raise ValueError("cannot tell the number of decoder layers of %s" % type(model).__name__)


def _start_token(model):
    cfg = model.config
    gen = getattr(model, "generation_config", None)
    for src in (gen, cfg):
        v = getattr(src, "decoder_start_token_id", None) if src is not None else None
        if isinstance(v, int):
            return v
    raise ValueError("%s has no decoder_start_token_id in its config" % type(model).__name__)


def _config_token(model, key):
    gen = getattr(model, "generation_config", None)
    for src in (gen, model.config):
        v = getattr(src, key, None) if src is not None else None
        if isinstance(v, (list, tuple)):
            v = list(v) or None
        if v is not None:
            return v
    return None


def encoder_input_names(model):
    """The encoder's inputs: `input_ids` and `attention_mask` for a text
    encoder, the model's main input alone otherwise (Whisper's
    `input_features`)."""
    main = getattr(model, "main_input_name", "input_ids")
    return ["input_ids", "attention_mask"] if main == "input_ids" else [main]


class Seq2SeqEncoder(nn.Module):
    """The encoder of an encoder-decoder model, and the cross-attention
    keys and values of each decoder layer.  forward(*inputs) takes the
    inputs encoder_input_names(model) names, in that order, and returns
    (encoder_hidden_states, key_0, value_0, key_1, value_1, ...).

    The cross-attention cache comes from running the model's decoder once
    on the start token with an empty EncoderDecoderCache: its attention
    layers fill the cross cache from the encoder's states exactly as on the
    first step of generate.  The decoder's other results are unused, and
    onnxc drops the nodes that computed them."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.names = encoder_input_names(model)
        self.num_layers = _num_layers(model)
        self.start = _start_token(model)

    def forward(self, *inputs):
        kw = dict(zip(self.names, inputs))
        hidden = self.model.get_encoder()(**kw, return_dict=True).last_hidden_state
        DynamicCache, EncoderDecoderCache = _caches()
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        start = torch.full((hidden.shape[0], 1), self.start, dtype=torch.long,
                           device=hidden.device)
        extra = {"attention_mask": kw["attention_mask"]} if "attention_mask" in kw else {}
        out = self.model(encoder_outputs=_encoder_outputs(hidden), decoder_input_ids=start,
                         past_key_values=cache, use_cache=True, return_dict=True, **extra)
        cross = out.past_key_values.cross_attention_cache
        flat = [hidden]
        for i in range(self.num_layers):
            flat += [cross.layers[i].keys, cross.layers[i].values]
        return tuple(flat)


class _TextEncoder(Seq2SeqEncoder):
    def forward(self, input_ids, attention_mask):
        return super().forward(input_ids, attention_mask)


class _FeatureEncoder(Seq2SeqEncoder):
    def forward(self, input_features):
        return super().forward(input_features)


class Seq2SeqDecoder(nn.Module):
    """One decoding step with past.  forward(input_ids, [encoder_attention_mask,]
    past) where past is the flat tuple (self key, self value, cross key,
    cross value) per layer; returns (logits, self key 0, self value 0, ...),
    the self-attention cache grown by input_ids' length.

    The cache is an EncoderDecoderCache of two DynamicCaches built from the
    inputs, with `is_updated` set on every layer: the attention layers then
    take the cross keys and values as given instead of projecting the
    encoder's states (which the decoder does not receive; a zero tensor of
    their shape stands in for them)."""

    def __init__(self, model, with_mask):
        super().__init__()
        self.model = model
        self.with_mask = with_mask
        self.num_layers = _num_layers(model)
        self.d_model = int(getattr(model.config, "d_model", None)
                           or getattr(model.config, "hidden_size"))

    def step(self, input_ids, encoder_attention_mask, past):
        DynamicCache, EncoderDecoderCache = _caches()
        n = self.num_layers
        own = [(past[4 * i], past[4 * i + 1]) for i in range(n)]
        cross = [(past[4 * i + 2], past[4 * i + 3]) for i in range(n)]
        cache = EncoderDecoderCache(DynamicCache(own), DynamicCache(cross))
        for i in range(n):
            cache.is_updated[i] = True
        ck = past[2]
        hidden = ck.new_zeros((ck.shape[0], ck.shape[2], self.d_model))
        extra = {"attention_mask": encoder_attention_mask} if self.with_mask else {}
        out = self.model(encoder_outputs=_encoder_outputs(hidden), decoder_input_ids=input_ids,
                         past_key_values=cache, use_cache=True, return_dict=True, **extra)
        self_cache = out.past_key_values.self_attention_cache
        flat = [out.logits]
        for i in range(n):
            flat += [self_cache.layers[i].keys, self_cache.layers[i].values]
        return tuple(flat)


class _MaskedDecoder(Seq2SeqDecoder):
    def forward(self, input_ids, encoder_attention_mask, past_key_values):
        return self.step(input_ids, encoder_attention_mask, past_key_values)


class _PlainDecoder(Seq2SeqDecoder):
    def forward(self, input_ids, past_key_values):
        return self.step(input_ids, None, past_key_values)


def _cache_shape(model):
    """(heads, head_dim) of the decoder's attention, from the config
    (`decoder_attention_heads` or `num_heads`, `d_kv` or d_model / heads)."""
    cfg = model.config
    heads = (getattr(cfg, "decoder_attention_heads", None) or getattr(cfg, "num_heads", None)
             or getattr(cfg, "num_attention_heads"))
    head_dim = getattr(cfg, "d_kv", None) or (int(getattr(cfg, "d_model")) // int(heads))
    return int(heads), int(head_dim)


def _example_encoder_inputs(model, names, batch, seq, gen, dtype):
    cfg = model.config
    if names[0] == "input_ids":
        ids = torch.randint(3, int(cfg.vocab_size), (batch, seq), generator=gen)
        mask = torch.ones(batch, seq, dtype=torch.long)
        mask[0, seq - 1:] = 0
        return [ids, mask]
    if names[0] == "input_features":
        frames = 2 * int(cfg.max_source_positions)  # Whisper: fixed by the model
        return [torch.randn(batch, int(cfg.num_mel_bins), frames, generator=gen).to(dtype)]
    raise ValueError("export_seq2seq: no example for the encoder input %r" % names[0])


def export_seq2seq(model, out_dir, batch=2, enc_seq=5, past=3, seq=2, **export_kwargs):
    """Export `model` (a transformers encoder-decoder with EncoderDecoderCache,
    in eval mode) to out_dir/encoder.onnx and out_dir/decoder.onnx with
    onnxc.export, and write out_dir/seq2seq.json (the returned dict without
    the ExportedModels).  batch, enc_seq, past and seq are the example sizes
    traced (>= 2: torch.export treats 0 and 1 as constants); the files take
    any batch, encoder length, past length (0 included) and decoder length.
    export_kwargs go to onnxc.export (opset, optimize, external_data, ...).

    Returns {"encoder": ExportedModel, "decoder": ExportedModel,
    "num_layers", "num_heads", "head_dim", "encoder_input_names",
    "encoder_output_names", "decoder_input_names", "decoder_output_names", "decoder_start_token_id",
    "eos_token_id", "pad_token_id", "vocab_size", "dir"}."""
    from .. import export
    if min(batch, enc_seq, past, seq) < 2:
        raise ValueError("export_seq2seq: trace with sizes >= 2 (torch.export specializes 0 and 1)")
    os.makedirs(out_dir, exist_ok=True)
    model = model.eval()
    n = _num_layers(model)
    heads, head_dim = _cache_shape(model)
    names = encoder_input_names(model)
    with_mask = "attention_mask" in names
    gen = torch.Generator().manual_seed(0)
    dtype = next(model.parameters()).dtype
    enc_args = _example_encoder_inputs(model, names, batch, enc_seq, gen, dtype)
    with torch.no_grad():   # the encoder's length (Whisper's: fixed by the model)
        enc_seq = int(model.get_encoder()(**dict(zip(names, enc_args)))
                      .last_hidden_state.shape[1])

    enc_wrap = (_TextEncoder if with_mask else _FeatureEncoder)(model).eval()
    if with_mask:
        enc_dyn = {"input_ids": {0: "batch", 1: "enc_seq"},
                   "attention_mask": {0: "batch", 1: "enc_seq"}}
    else:
        enc_dyn = {names[0]: {0: "batch"}}
    enc_outs = ["encoder_hidden_states"]
    for i in range(n):
        enc_outs += ["present.%d.encoder.key" % i, "present.%d.encoder.value" % i]
    with torch.no_grad():
        encoder = export(enc_wrap, tuple(enc_args), os.path.join(out_dir, "encoder.onnx"),
                         dynamic_shapes=enc_dyn, input_names=names, output_names=enc_outs,
                         **export_kwargs)

    dec_wrap = (_MaskedDecoder if with_mask else _PlainDecoder)(model, with_mask).eval()
    ids = torch.randint(3, int(model.config.vocab_size), (batch, seq), generator=gen)
    cache, dec_names, cache_dyn = [], ["input_ids"], []
    if with_mask:
        dec_names.append("encoder_attention_mask")
    for i in range(n):
        for part, length in (("decoder", past), ("encoder", enc_seq)):
            for kv in ("key", "value"):
                cache.append(torch.randn(batch, heads, length, head_dim, generator=gen).to(dtype))
                dec_names.append("past_key_values.%d.%s.%s" % (i, part, kv))
                cache_dyn.append({0: "batch", 2: "past" if part == "decoder" else "enc_seq"})
    dec_outs = ["logits"]
    for i in range(n):
        dec_outs += ["present.%d.decoder.key" % i, "present.%d.decoder.value" % i]
    dec_args = [ids]
    dec_dyn = {"input_ids": {0: "batch", 1: "seq"}}
    if with_mask:
        mask = torch.ones(batch, enc_seq, dtype=torch.long)
        mask[0, enc_seq - 1:] = 0
        dec_args.append(mask)
        dec_dyn["encoder_attention_mask"] = {0: "batch", 1: "enc_seq"}
    dec_args.append(tuple(cache))
    dec_dyn["past_key_values"] = tuple(cache_dyn)
    with torch.no_grad():
        decoder = export(dec_wrap, tuple(dec_args), os.path.join(out_dir, "decoder.onnx"),
                         dynamic_shapes=dec_dyn, input_names=dec_names, output_names=dec_outs,
                         **export_kwargs)

    info = {
        "dir": os.path.abspath(out_dir),
        "num_layers": n,
        "num_heads": heads,
        "head_dim": head_dim,
        "encoder_input_names": names,
        "encoder_output_names": enc_outs,
        "decoder_input_names": dec_names,
        "decoder_output_names": dec_outs,
        "decoder_start_token_id": _start_token(model),
        "eos_token_id": _config_token(model, "eos_token_id"),
        "pad_token_id": _config_token(model, "pad_token_id"),
        "vocab_size": int(model.config.vocab_size),
    }
    with open(os.path.join(out_dir, "seq2seq.json"), "w") as fh:
        json.dump(info, fh, indent=1)
    info["encoder"] = encoder
    info["decoder"] = decoder
    return info


def _load(info_or_dir):
    """(info dict, encoder session, decoder session) from export_seq2seq's
    dict or the directory it wrote."""
    import onnxruntime as ort
    if isinstance(info_or_dir, (str, os.PathLike)):
        with open(os.path.join(info_or_dir, "seq2seq.json")) as fh:
            info = json.load(fh)
        info["dir"] = os.fspath(info_or_dir)
    else:
        info = info_or_dir
    sessions = []
    for part in ("encoder", "decoder"):
        m = info.get(part)
        if m is not None and hasattr(m, "session"):
            sessions.append(m.session)
        else:
            sessions.append(ort.InferenceSession(os.path.join(info["dir"], part + ".onnx"),
                                                 providers=["CPUExecutionProvider"]))
    return info, sessions[0], sessions[1]


def greedy_seq2seq(info_or_dir, encoder_inputs, max_new_tokens, eos_token_id="config",
                   pad_token_id="config", return_logits=False):
    """Greedy decoding in ONNX Runtime over the files export_seq2seq wrote.

    info_or_dir: export_seq2seq's dict, or its output directory.
    encoder_inputs: {name: numpy array} for encoder.onnx (`input_ids` and
    `attention_mask`, or `input_features`).  Returns the token ids as
    model.generate(do_sample=False, num_beams=1) returns them: [batch, 1 + n],
    starting with decoder_start_token_id; a row that produced
    eos_token_id continues with pad_token_id, and the loop ends when every
    row has (so n <= max_new_tokens).  eos_token_id=None: no stop.  The
    defaults ("config") take both from the model's config.  With
    return_logits, also the list of each step's logits [batch, vocab]."""
    import numpy as np
    from ..generation import end_tokens, next_tokens
    info, enc, dec = _load(info_or_dir)
    n = info["num_layers"]
    if eos_token_id == "config":
        eos_token_id = info.get("eos_token_id")
    if pad_token_id == "config":
        pad_token_id = info.get("pad_token_id")
    eos = end_tokens(eos_token_id)
    if eos and pad_token_id is None:
        pad_token_id = eos[0]   # as generate does without a pad token
    feeds = {k: np.asarray(encoder_inputs[k]) for k in info["encoder_input_names"]}
    enc_out = dict(zip(info["encoder_output_names"], enc.run(info["encoder_output_names"], feeds)))
    batch = next(iter(feeds.values())).shape[0]
    heads, head_dim = info["num_heads"], info["head_dim"]
    dtype = enc_out["encoder_hidden_states"].dtype
    past = {}
    for i in range(n):
        for kv in ("key", "value"):
            past["past_key_values.%d.decoder.%s" % (i, kv)] = np.zeros(
                (batch, heads, 0, head_dim), dtype=dtype)
            past["past_key_values.%d.encoder.%s" % (i, kv)] = \
                enc_out["present.%d.encoder.%s" % (i, kv)]
    dec_names = info["decoder_input_names"]
    tokens = np.full((batch, 1), info["decoder_start_token_id"], dtype=np.int64)
    done = np.zeros(batch, dtype=bool)
    step_logits = []
    for _ in range(max_new_tokens):
        step = dict(past)
        step["input_ids"] = tokens[:, -1:]
        if "encoder_attention_mask" in dec_names:
            step["encoder_attention_mask"] = feeds["attention_mask"]
        outs = dict(zip(info["decoder_output_names"],
                        dec.run(info["decoder_output_names"], {k: step[k] for k in dec_names})))
        logits = outs["logits"][:, -1, :]
        step_logits.append(logits)
        nxt = next_tokens(logits, done, eos, pad_token_id)
        tokens = np.concatenate([tokens, nxt[:, None]], axis=1)
        for i in range(n):
            for kv in ("key", "value"):
                past["past_key_values.%d.decoder.%s" % (i, kv)] = \
                    outs["present.%d.decoder.%s" % (i, kv)]
        if eos and done.all():
            break
    return (tokens, step_logits) if return_logits else tokens
