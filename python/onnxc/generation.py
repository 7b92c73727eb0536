"""Export a transformers language model for text generation, and generate.

    import onnxc
    g = onnxc.export_for_generation(model, "out/")       # or a save_pretrained directory
    tokens = g.generate(input_ids, attention_mask, max_new_tokens=16)   # ONNX Runtime

A decoder-only model (a causal LM) becomes one file, `out/model.onnx`: the
decoder with its key/value cache (onnxc.bridge.with_past), prefill and
decode steps alike.  An encoder-decoder (T5, BART, Whisper) becomes
`out/encoder.onnx` and `out/decoder.onnx` (onnxc.bridge.seq2seq).  Each file
is written by onnxc.export with the arguments given here; nothing about
generation is special-cased in the compiler.

generate() is greedy decoding in ONNX Runtime that gives what transformers'
`generate(do_sample=False)` gives: positions from the (left-padded)
attention mask, the cache fed back, and a row that has produced the end
token continued with the pad token until every row has.
"""

import json
import os

import numpy as np

__all__ = ["export_for_generation", "GenerationModel", "greedy"]


def _load_checkpoint(path):
    """A model saved with save_pretrained (config and weights in `path`;
    nothing is downloaded)."""
    try:
        import transformers
    except ImportError as e:
        raise ImportError("exporting a checkpoint directory needs transformers: %s" % e) from None
    from . import ConversionError
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise ConversionError("%s: not a checkpoint directory (no config.json; write one with "
                              "model.save_pretrained(%r))" % (path, path))
    config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
    if getattr(config, "is_encoder_decoder", False):
        for auto in ("AutoModelForSeq2SeqLM", "AutoModelForSpeechSeq2Seq"):
            try:
                return getattr(transformers, auto).from_pretrained(path, local_files_only=True)
            except ValueError:
                continue
    try:
        return transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    except ValueError as e:
        raise ConversionError("%s: %s is not a causal language model transformers can load "
                              "(%s)" % (path, type(config).__name__, e)) from None


def export_for_generation(model, out_dir, opset=None, optimize="O2", external_data=None,
                          progress=None, report=None, capture=None, target=None,
                          quantize=None, quantize_block=None, quantize_zero_points=False,
                          quantize_accuracy_level=None, quantize_exclude=None, ort_attention=None,
                          logits="last", quantize_embedding=False):
    """Write the generation files of `model` (a transformers model, or the
    path of a checkpoint directory saved with save_pretrained) into
    `out_dir`; returns a GenerationModel.  `logits`: "last" (default) makes
    a decoder-only model's `logits` output the last position's, [batch, 1,
    vocab], what generate() computes; "all" every position's (an
    encoder-decoder's decoder keeps every position's either way: its
    first step is one token).  The other
    arguments are onnxc.export's, applied to each file (quantize="int4"
    with target="ort": MatMulNBits weights)."""
    from . import ConversionError, export
    from .bridge import with_past
    from .bridge.common import ExportError
    try:
        with_past.check_logits(logits)     # before loading: an encoder-decoder checks it too
    except ExportError as e:
        raise ConversionError("export_for_generation: %s" % e, diagnostics=str(e)) from e
    if isinstance(model, (str, os.PathLike)):
        model = _load_checkpoint(os.fspath(model))
    model = model.eval()
    os.makedirs(out_dir, exist_ok=True)
    kw = dict(opset=opset, optimize=optimize, external_data=external_data, progress=progress,
              capture=capture, target=target, quantize=quantize, quantize_block=quantize_block,
              quantize_zero_points=quantize_zero_points,
              quantize_accuracy_level=quantize_accuracy_level, quantize_exclude=quantize_exclude,
              quantize_embedding=quantize_embedding, ort_attention=ort_attention)
    cfg = model.config
    if getattr(cfg, "is_encoder_decoder", False):
        from .bridge import seq2seq
        info = seq2seq.export_seq2seq(model, out_dir, report=report, **kw)
        return GenerationModel(out_dir, info["decoder"], info["encoder"], info=info,
                               config=_token_config(model))
    try:
        spec = with_past.decoder_spec(model, logits=logits)
    except ExportError as e:
        raise ConversionError("export_for_generation: %s" % e, diagnostics=str(e)) from e
    path = os.path.join(out_dir, "model.onnx")
    if report is True:
        report = os.path.join(out_dir, "model_report.md")
    m = export(spec.module, spec.args, path, dynamic_shapes=spec.dynamic_shapes,
               input_names=spec.input_names, output_names=spec.output_names, report=report,
               **kw)
    g = GenerationModel(out_dir, m, None, config=_token_config(model))
    g.write_config()
    return g


def _token_config(model):
    """The end and pad tokens generate() uses (its generation config, else
    the model config's)."""
    gc = getattr(model, "generation_config", None)
    cfg = model.config

    def pick(name):
        v = getattr(gc, name, None) if gc is not None else None
        return v if v is not None else getattr(cfg, name, None)

    eos = pick("eos_token_id")
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    pad = pick("pad_token_id")
    if pad is None and eos:
        pad = eos[0]
    return {"eos_token_id": eos, "pad_token_id": pad,
            "decoder_start_token_id": pick("decoder_start_token_id"),
            "model_type": getattr(cfg, "model_type", None)}


class GenerationModel:
    """The files of a generation export: `path` (the directory),
    `decoder` (an ExportedModel; the with-past decoder), `encoder` (an
    ExportedModel for an encoder-decoder, else None), `config` (end, pad
    and start tokens), and generate()."""

    def __init__(self, path, decoder, encoder=None, info=None, config=None):
        self.path = os.path.abspath(path)
        self.decoder, self.encoder = decoder, encoder
        self.info = info or {}
        self.config = config or {}
        self._sessions = {}

    def __repr__(self):
        return "GenerationModel(%r)" % self.path

    def write_config(self):
        """generation.json beside the files: the tokens generate() needs."""
        with open(os.path.join(self.path, "generation.json"), "w") as fh:
            json.dump(self.config, fh, indent=1, sort_keys=True)
            fh.write("\n")

    def _session(self, m):
        if m.path not in self._sessions:
            import onnxruntime as ort
            self._sessions[m.path] = ort.InferenceSession(m.path,
                                                          providers=["CPUExecutionProvider"])
        return self._sessions[m.path]

    def generate(self, input_ids=None, attention_mask=None, max_new_tokens=16, **encoder_inputs):
        """Greedy generation in ONNX Runtime: the new tokens, [batch,
        max_new_tokens] (fewer when every row ended).  Decoder-only:
        input_ids and attention_mask (left-padded for a batch of prompts).
        Encoder-decoder: the encoder's inputs as keywords (input_ids and
        attention_mask, or input_features)."""
        if self.encoder is not None:
            from .bridge import seq2seq
            inputs = dict(encoder_inputs)
            if input_ids is not None:
                inputs["input_ids"] = input_ids
            if attention_mask is not None:
                inputs["attention_mask"] = attention_mask
            return seq2seq.greedy_seq2seq(self.info, {k: _np(v) for k, v in inputs.items()},
                                          max_new_tokens)
        return greedy(self._session(self.decoder), _np(input_ids),
                      None if attention_mask is None else _np(attention_mask), max_new_tokens,
                      eos_token_id=self.config.get("eos_token_id"),
                      pad_token_id=self.config.get("pad_token_id"))[0]


def _np(x):
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _empty_past(session, batch):
    """The prefill's cache: every past input at length 0, its static dims
    (heads, head dim) read from the model."""
    past = {}
    for i in session.get_inputs():
        if not i.name.startswith("past_key_values."):
            continue
        dtype = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
                 "tensor(double)": np.float64}.get(i.type, np.float32)
        dims = [batch if k == 0 else (0 if k == 2 else d) for k, d in enumerate(i.shape)]
        if any(not isinstance(d, int) for d in dims):
            raise ValueError("%s: dims %s are not all static but batch and past"
                             % (i.name, i.shape))
        past[i.name] = np.zeros(dims, dtype)
    return past


def positions(mask):
    """generate()'s position ids for a left-padded mask."""
    pos = np.cumsum(mask, axis=-1) - 1
    return np.where(mask == 0, 1, pos).astype(np.int64)


def end_tokens(eos_token_id):
    """generate()'s end tokens as a list: an int, a list, or None (none)."""
    if eos_token_id is None:
        return []
    return list(eos_token_id) if isinstance(eos_token_id, (list, tuple)) else [eos_token_id]


def next_tokens(last_logits, done, eos, pad_token_id):
    """Each row's greedy token as generate() picks it: a row that has ended
    takes the pad token; `done` is updated in place."""
    nxt = last_logits.argmax(-1).astype(np.int64)
    if eos and pad_token_id is not None:
        nxt = np.where(done, pad_token_id, nxt)
    if eos:
        done |= np.isin(nxt, eos)
    return nxt


def greedy(session, input_ids, attention_mask=None, max_new_tokens=16, eos_token_id=None,
           pad_token_id=None, return_logits=False):
    """Greedy decoding with a with-past decoder in an onnxruntime session:
    (tokens [batch, n], per-step logits of the last position when
    return_logits, and the prefill's logits: [batch, 1, vocab] from a
    file exported with logits="last", [batch, seq, vocab] with "all")."""
    ids = np.asarray(input_ids, dtype=np.int64)
    batch = ids.shape[0]
    mask = (np.ones_like(ids) if attention_mask is None
            else np.asarray(attention_mask, dtype=np.int64))
    eos = end_tokens(eos_token_id)
    names = [i.name for i in session.get_inputs()]
    outs = [o.name for o in session.get_outputs()]
    past = _empty_past(session, batch)
    done = np.zeros(batch, bool)
    tokens, step_logits, prefill = [], [], None
    for step in range(max_new_tokens):
        feed = {"input_ids": ids, "attention_mask": mask}
        if "position_ids" in names:
            feed["position_ids"] = positions(mask)[:, -ids.shape[1]:]
        feed.update(past)
        res = dict(zip(outs, session.run(None, feed)))
        logits = res["logits"]
        if step == 0:
            prefill = logits
        last = logits[:, -1, :]
        nxt = next_tokens(last, done, eos, pad_token_id)
        tokens.append(nxt)
        if return_logits:
            step_logits.append(last)
        if eos and done.all():
            break
        past = {n.replace("present.", "past_key_values.", 1): v for n, v in res.items()
                if n.startswith("present.")}
        ids = nxt[:, None]
        mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], axis=1)
    toks = np.stack(tokens, 1) if tokens else np.zeros((batch, 0), np.int64)
    return toks, step_logits, prefill
