"""Encoder-decoder generation through onnxc: transformers' Whisper, T5 and
BART (small configs, random seeded weights, nothing downloaded) exported by
onnxc.bridge.seq2seq.export_seq2seq to encoder.onnx and decoder.onnx, then
decoded greedily in ONNX Runtime by greedy_seq2seq and compared with eager
PyTorch's `model.generate(do_sample=False, num_beams=1)`.

    ~/.cache/onnxc/venv-torch2/bin/python test/generation/run_seq2seq.py
        [--onnxc PATH] [-k PATTERN] [--tokens N]

For each model the two files are exported once; the cases are:
  batch1    one input, greedy --tokens (16) tokens
  batch3    three inputs: T5 and BART with the encoder inputs padded on the
            right (attention_mask 0 at the end of two rows), Whisper with
            three different feature arrays; the loop reads the files from
            their directory (seq2seq.json)
  eos       batch3 with an end token the rows reach at different steps
            (finished rows padded, the loop ends when all have finished)
  prefix    decoder.onnx on four tokens at once at past 0, then one more
            at past 4, against the model's logits on the whole sequence
Tokens must be equal to generate's, every step's logits within 1e-4 of
generate's (output_logits).  generate runs with a plain GenerationConfig
(decoder_start_token_id, eos_token_id, pad_token_id only) put in the
model's place, so it is plain greedy: no forced or suppressed tokens, no
minimum length; Whisper's own generate (prompts, timestamps, language
detection) is bypassed through GenerationMixin.generate.  A row that
produced EOS continues with the pad token, as generate pads it.

One line per case, then `N passed, N failed, N skipped`; a model that does
not convert is a skip with its reason.  Exit status 1 on a failure.  The
onnxc binary: --onnxc, else $ONNXC, else the checkout's build/onnxc.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))

VOCAB = 128
TOL = 1e-4


def _seeded(model):
    """Weights that make a varied greedy sequence: every matrix redrawn
    (seeded) with std 0.3 and biases with std 0.1, so the logits spread over
    a few units (greedy's choices are not near-ties decided by rounding)
    and, with the output projection untied from the embedding, the model
    does not just repeat its last token."""
    import torch
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model.eval()


def build(name):
    import torch
    import transformers as T
    torch.manual_seed(0)
    if name == "t5":
        cfg = T.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                         num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                         decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        model = T.T5ForConditionalGeneration(cfg)
        # T5's config always ties lm_head to the embedding: untie it here
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    elif name == "bart":
        cfg = T.BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4,
                           encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                           tie_word_embeddings=False)
        model = T.BartForConditionalGeneration(cfg)
    elif name == "whisper":
        cfg = T.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, encoder_layers=2,
                              decoder_layers=2, encoder_attention_heads=4,
                              decoder_attention_heads=4, d_model=32, encoder_ffn_dim=64,
                              decoder_ffn_dim=64, max_source_positions=32,
                              max_target_positions=32, pad_token_id=0, bos_token_id=1,
                              eos_token_id=2, decoder_start_token_id=1,
                              tie_word_embeddings=False)
        model = T.WhisperForConditionalGeneration(cfg)
    else:
        raise ValueError(name)
    model = _seeded(model)
    gc = model.generation_config
    model.generation_config = T.GenerationConfig(
        decoder_start_token_id=gc.decoder_start_token_id, eos_token_id=gc.eos_token_id,
        pad_token_id=gc.pad_token_id)
    return model


def encoder_inputs(name, batch):
    """{name: torch tensor} of encoder.onnx's inputs for a batch."""
    import torch
    g = torch.Generator().manual_seed(10 + batch)
    if name == "whisper":
        return {"input_features": torch.randn(batch, 16, 64, generator=g)}
    seq = 9
    ids = torch.randint(3, VOCAB, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    if batch > 1:   # right padding: rows 1 and 2 shorter
        mask[1, 6:] = 0
        mask[2, 4:] = 0
        ids[1, 6:] = 0
        ids[2, 4:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def reference(model, inputs, tokens, eos=None):
    """generate's sequences and per-step logits (numpy); eos: an
    eos_token_id in place of the config's."""
    import torch
    from transformers.generation import GenerationMixin
    extra = {} if eos is None else {"eos_token_id": eos}
    with torch.no_grad():
        out = GenerationMixin.generate(model, **inputs, do_sample=False, num_beams=1,
                                       max_new_tokens=tokens, output_logits=True,
                                       return_dict_in_generate=True, **extra)
    return out.sequences.numpy(), [l.numpy() for l in out.logits]


class Failure(Exception):
    pass


def check_generation(model, info, name, batch, tokens, eos=None, from_dir=False):
    """from_dir: greedy_seq2seq reads the directory export_seq2seq wrote
    (seq2seq.json, new ONNX Runtime sessions) instead of its dict."""
    import numpy as np
    from onnxc.bridge.seq2seq import greedy_seq2seq
    inputs = encoder_inputs(name, batch)
    ref_ids, ref_logits = reference(model, inputs, tokens, eos)
    got_ids, got_logits = greedy_seq2seq(info["dir"] if from_dir else info,
                                         {k: v.numpy() for k, v in inputs.items()},
                                         tokens, return_logits=True,
                                         **({} if eos is None else {"eos_token_id": eos}))
    if len(got_logits) != len(ref_logits):
        raise Failure("%d steps, generate made %d" % (len(got_logits), len(ref_logits)))
    worst = 0.0
    for step, (r, g) in enumerate(zip(ref_logits, got_logits)):
        if np.isnan(g).any():
            raise Failure("step %d: NaN in the logits" % step)
        worst = max(worst, float(np.abs(r - g).max()))
    if worst > TOL:
        raise Failure("logits differ by %.3g (> %g)" % (worst, TOL))
    if got_ids.shape != ref_ids.shape or not (got_ids == ref_ids).all():
        raise Failure("tokens differ:\n  generate %s\n  onnx     %s"
                      % (ref_ids.tolist(), got_ids.tolist()))
    return "%d tokens x %d rows equal, logits max diff %.2g" % (got_ids.shape[1] - 1, batch,
                                                                worst)


def check_eos(model, info, name, tokens):
    """An end token that some rows produce: finished rows continue with
    the pad token and decoding stops when every row has finished, as in
    generate.  The end token is one the first row makes mid-way (found
    with no end token), so that the case exercises both."""
    import numpy as np
    ids, _ = reference(model, encoder_inputs(name, 3), tokens, eos=[])
    gen = ids[:, 1:]

    def ends(t):    # the step at which each row first makes t (None: never)
        return [int(np.argmax(r == t)) if (r == t).any() else None for r in gen]
    # A token every row makes, at different steps if there is one, ending
    # the loop earliest; else the first row's token half-way.
    common = [t for t in dict.fromkeys(gen[0].tolist()) if None not in ends(t)]
    eos = (min(common, key=lambda t: (len(set(ends(t))) == 1, max(ends(t)))) if common
           else int(gen[0, gen.shape[1] // 2]))
    msg = check_generation(model, info, name, 3, tokens, eos=eos)
    return "end token %d at steps %s: %s" % (eos, ends(eos), msg)


def check_prefix(model, info, name):
    """decoder.onnx on 4 tokens at past 0, then 1 token at past 4, against
    the model's logits on the 5 tokens at once."""
    import numpy as np
    import torch
    from transformers.modeling_outputs import BaseModelOutput
    inputs = encoder_inputs(name, 3)
    g = torch.Generator().manual_seed(5)
    dec_ids = torch.randint(3, VOCAB, (3, 5), generator=g)
    with torch.no_grad():
        enc = model.get_encoder()(**inputs).last_hidden_state
        extra = {"attention_mask": inputs["attention_mask"]} if "attention_mask" in inputs else {}
        ref = model(encoder_outputs=BaseModelOutput(last_hidden_state=enc),
                    decoder_input_ids=dec_ids, use_cache=False, **extra).logits.numpy()
    enc_sess, dec_sess = info["encoder"].session, info["decoder"].session
    feeds = {k: v.numpy() for k, v in inputs.items()}
    enc_out = dict(zip(info["encoder_output_names"], enc_sess.run(None, feeds)))
    hidden_diff = float(np.abs(enc_out["encoder_hidden_states"] - enc.numpy()).max())
    if hidden_diff > TOL:
        raise Failure("encoder_hidden_states differ by %.3g" % hidden_diff)
    n, h, d = info["num_layers"], info["num_heads"], info["head_dim"]
    past = {}
    for i in range(n):
        for kv in ("key", "value"):
            past["past_key_values.%d.decoder.%s" % (i, kv)] = np.zeros((3, h, 0, d), np.float32)
            past["past_key_values.%d.encoder.%s" % (i, kv)] = enc_out["present.%d.encoder.%s"
                                                                      % (i, kv)]
    got = []
    for lo, hi in ((0, 4), (4, 5)):
        step = dict(past, input_ids=dec_ids[:, lo:hi].numpy())
        if "attention_mask" in feeds:
            step["encoder_attention_mask"] = feeds["attention_mask"]
        outs = dict(zip(info["decoder_output_names"],
                        dec_sess.run(None, {k: step[k] for k in info["decoder_input_names"]})))
        got.append(outs["logits"])
        for i in range(n):
            for kv in ("key", "value"):
                present = outs["present.%d.decoder.%s" % (i, kv)]
                if present.shape[2] != hi:
                    raise Failure("present.%d.decoder.%s has length %d after %d tokens"
                                  % (i, kv, present.shape[2], hi))
                past["past_key_values.%d.decoder.%s" % (i, kv)] = present
    got = np.concatenate(got, axis=1)
    if np.isnan(got).any():
        raise Failure("NaN in the logits")
    worst = float(np.abs(got - ref).max())
    if worst > TOL:
        raise Failure("logits differ by %.3g (> %g)" % (worst, TOL))
    return "4 tokens at past 0 + 1 at past 4, logits max diff %.2g" % worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC",
                                                      os.path.join(REPO, "build", "onnxc")))
    ap.add_argument("-k", default="", help="run the cases whose name matches this regex")
    ap.add_argument("--tokens", type=int, default=16, help="tokens to generate (16)")
    args = ap.parse_args()
    if not os.access(args.onnxc, os.X_OK):
        print("run_seq2seq: no onnxc at %s (build it, or give --onnxc)" % args.onnxc,
              file=sys.stderr)
        return 2
    os.environ["ONNXC"] = os.path.abspath(args.onnxc)

    work = tempfile.mkdtemp(prefix="onnxc-seq2seq.")
    try:
        return run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work):
    import onnxc
    from onnxc.bridge.seq2seq import export_seq2seq
    passed = failed = skipped = 0
    t_all = time.perf_counter()
    for name in ("whisper", "t5", "bart"):
        cases = [c for c in ("batch1", "batch3", "eos", "prefix")
                 if re.search(args.k, "%s/%s" % (name, c))]
        if not cases:
            continue
        model = build(name)
        t0 = time.perf_counter()
        try:
            info = export_seq2seq(model, os.path.join(work, name), progress=False)
        except onnxc.ConversionError as e:
            reason = str(e).strip().splitlines()[0][:200]
            for c in cases:
                print("SKIP %s/%s: does not convert: %s" % (name, c, reason))
                skipped += 1
            continue
        print("     %s: exported encoder.onnx and decoder.onnx in %.1f s"
              % (name, time.perf_counter() - t0))
        for c in cases:
            t0 = time.perf_counter()
            try:
                if c == "prefix":
                    msg = check_prefix(model, info, name)
                elif c == "eos":
                    msg = check_eos(model, info, name, args.tokens)
                else:
                    msg = check_generation(model, info, name, 1 if c == "batch1" else 3,
                                           args.tokens, from_dir=c == "batch3")
            except Exception as e:   # noqa: BLE001 (any error fails the case, not the run)
                what = str(e) if isinstance(e, Failure) else "%s: %s" % (type(e).__name__, e)
                print("FAIL %s/%s: %s" % (name, c, what))
                failed += 1
                continue
            print("PASS %s/%s: %s (%.1f s)" % (name, c, msg, time.perf_counter() - t0))
            passed += 1
    print("(%.1f s)" % (time.perf_counter() - t_all))
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
