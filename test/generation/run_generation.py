"""Generation with a KV cache in ONNX Runtime, against transformers' generate().

Each decoder LLM of the modern zoo (test/zoo/run_modern_zoo.py's LLMS
table: small configs, seeded random weights, nothing downloaded) is exported
once with onnxc.export_for_generation (one file: prefill and decode steps,
dynamic batch, sequence and past), then generates 16 tokens greedily in
ONNX Runtime (onnxc.generation.greedy) for
  b1      one prompt,
  b3      three prompts of one length,
  b3pad   three prompts left-padded by 0, 2 and 4 tokens (as a tokenizer
          pads a batch),
each checked against `model.generate(do_sample=False)`: the same tokens,
every step's logits within 1e-4, and the prefill's logits within 1e-4 of
eager PyTorch (this first file with logits="all": every position where
the attention mask is 1; the other files the default, the last position
only, [batch, 1, vocab]); for three models the
padded batch again from a file at opset 23, whose attention -O2 fuses
into onnx::Attention, and for sixteen from two files at target="ort" (the
rotary embeddings as ONNX Runtime's RotaryEmbedding, or with
ort_attention="gqa" the attention over the cache as its GroupQueryAttention;
RMS normalizations as its SkipSimplifiedLayerNormalization), and the same
every decoder weight-only quantized (QUANTIZED: int4 and int8 at
target="ort", MatMulNBits, and int4 as DequantizeLinear) against
generate() on a copy of the model whose weights are NumPy's round trip
of them (dequantized()).  Also: a model whose state
is not a key/value cache (Mamba) is refused with a message saying so, and
`python -m onnxc --checkpoint DIR` on a save_pretrained directory writes a
file that generates the same tokens, and examples/generate.py (the greedy
loop docs/generation.md shows) runs and agrees with generate(); a hybrid
(Qwen3-Next, linear attention beside attention) is refused too; a model
whose forward takes no logits_to_keep gets its logits sliced to the last
position, and a bad logits= is refused.

    ~/.cache/onnxc/venv-torch2/bin/python test/generation/run_generation.py [-k NAME] [--peer]

--peer also exports the same with-past module with
torch.onnx.export(dynamo=True) and runs the same three checks on its file,
and prints both node counts and the median decode step.  The last line is
`N passed, N failed, N skipped` (one check a case; a model that does not
convert is a counted skip with its reason when listed in KNOWN_SKIPS, else
a failure).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "test", "zoo"))
sys.path.insert(0, os.path.join(REPO, "test", "python"))

NEW_TOKENS = 16
PROMPT = 8
TOL = 1e-4
PADS = (0, 2, 4)

# name -> why it is not run yet (counted as skips).
KNOWN_SKIPS = {
    "lfm2": "a hybrid: its convolution layers keep a state of their own, not a key/value cache "
            "(refused with a message saying so)",
}


def build(name):
    """The zoo's LLM `name` with its cache on (the zoo turns it off)."""
    import torch
    import transformers as T
    import run_modern_zoo as Z
    cls, cfg, extra = Z.LLMS[name]
    fields = dict(extra["_only"]) if "_only" in extra else dict(Z._LLM_COMMON, **extra)
    torch.manual_seed(0)
    model = getattr(T, cls)(getattr(T, cfg)(**fields)).eval()
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    import models as e2e_models
    return e2e_models._lively(model)


def prompts(model, batch, pads, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    ids = torch.randint(3, vocab, (batch, PROMPT), generator=g)
    mask = torch.ones(batch, PROMPT, dtype=torch.long)
    pad = model.generation_config.pad_token_id
    pad = 0 if pad is None else pad
    for r, n in enumerate(pads):
        ids[r, :n] = pad
        mask[r, :n] = 0
    return ids, mask


def reference(model, ids, mask):
    """generate()'s tokens and per-step logits, and the prefill's logits."""
    import torch
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=NEW_TOKENS,
                             do_sample=False, use_cache=True, output_logits=True,
                             return_dict_in_generate=True)
        kw = {}
        import inspect
        if "position_ids" in inspect.signature(model.forward).parameters:
            from onnxc.bridge.with_past import position_ids_from_mask
            kw["position_ids"] = position_ids_from_mask(mask)
        full = model(input_ids=ids, attention_mask=mask, use_cache=False, **kw).logits
    return (out.sequences[:, ids.shape[1]:].numpy(), [x.numpy() for x in out.logits],
            full.numpy())


def check_case(sess, model, ids, mask, tokens_cfg, logits="last"):
    """'' when the file generates what generate() does, else why not.  A
    file of logits="last" must give the prefill's last position only, one
    of "all" every position (checked where the mask is 1)."""
    from onnxc.generation import greedy
    want, want_logits, want_full = reference(model, ids, mask)
    got, got_logits, got_full = greedy(sess, ids.numpy(), mask.numpy(), NEW_TOKENS,
                                       eos_token_id=tokens_cfg["eos_token_id"],
                                       pad_token_id=tokens_cfg["pad_token_id"],
                                       return_logits=True)
    if np.isnan(got_full).any() or any(np.isnan(x).any() for x in got_logits):
        return "NaN in the logits"
    keep = mask.numpy().astype(bool)
    if logits == "last":
        want_full, keep = want_full[:, -1:], keep[:, -1:]
    if got_full.shape != want_full.shape:
        return "prefill logits of shape %s, want %s (logits=%r)" % (
            got_full.shape, want_full.shape, logits)
    d = float(np.abs(got_full[keep] - want_full[keep]).max())
    if d > TOL:
        return "prefill logits differ from eager by %.2g where the mask is 1" % d
    if got.shape != want.shape or not np.array_equal(got, want):
        first = next((i for i in range(min(got.shape[1], want.shape[1]))
                      if not np.array_equal(got[:, i], want[:, i])), None)
        return "tokens differ from generate() (first at step %s): %s vs %s" % (
            first, got.tolist(), want.tolist())
    for step, (a, b) in enumerate(zip(got_logits, want_logits)):
        d = float(np.abs(a - b).max())
        if d > TOL:
            return "step %d logits differ by %.2g" % (step, d)
    return ""


CASES = (("b1", 1, (0,)), ("b3", 3, (0, 0, 0)), ("b3pad", 3, PADS))
# Also exported at opset 23, where -O2 fuses the attention into one
# onnx::Attention: the padded batch again.
OPSET23 = ("llama", "mistral", "gemma2")
# And at target="ort", the padded batch again, in both forms of the
# attention over the cache: the default (MatMul and Softmax, the rotary
# embeddings as RotaryEmbedding where transformers writes rotate_half) and
# ort_attention="gqa" (GroupQueryAttention); with SimplifiedLayerNormalization
# and SkipSimplifiedLayerNormalization for the RMS normalizations the first
# four write out.  The other decoders (GPT-J, BLOOM and Falcon, whose
# attention is not in the form fuse_ort_gqa.c matches, and those added to
# the zoo later) are checked in the default form only, for the tokens.
TARGET_ORT = ("llama", "qwen2", "mistral", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "phi3",
              "gemma", "gemma2", "gemma3_text", "gpt2", "gpt_neox", "opt", "gpt_bigcode")
# And weight-only quantized, the padded batch again against generate() on
# the model with NumPy's round trip of the weights: (case, bits, target,
# ort_attention, quantize_embedding); the "gqa" form for TARGET_ORT only.
# At target "onnx" ONNX Runtime runs the graph as written (its optimizer
# would fuse DequantizeLinear + MatMul into int8 products).
QUANTIZED = (("b3pad-ort-int4", 4, "ort", "matmul", False), ("b3pad-ort-int4-gqa", 4, "ort", "gqa", False),
             ("b3pad-ort-int8", 8, "ort", "matmul", False), ("b3pad-int4", 4, "onnx", None, False),
             ("b3pad-ort-int4-emb", 4, "ort", "matmul", True))
RMS_WRITTEN_OUT = ("llama", "qwen2", "mistral", "qwen3")
ROTATE_HALF = TARGET_ORT[:12]


def dequantized(model, bits, tables=()):
    """A copy of model whose weights are what quantize="int<bits>" (block
    32, symmetric) makes of them, by NumPy (test_weight_quant.ref_dequant,
    written from the format's definition): every 2-D weight a product
    reads (nn.Linear's [N, K], the routers', GPT-2's Conv1D [K, N]) and
    each expert's [N, K] of the experts' stacked [E, N, K] ([E, K, N]
    where the experts say is_transposed, GPT-OSS's) when transformers
    routes tokens to one product an expert (Llama 4's batched experts
    stay f32); the input embedding stays f32, so an LM head tied to it
    is untied first.  `tables`: the names of the nn.Embedding weights
    quantize_embedding=True quantized (quantized_tables()), blocks along
    K, round-tripped too."""
    import copy
    import torch
    from test_weight_quant import ref_dequant
    ref = copy.deepcopy(model)
    with torch.no_grad():
        head = ref.get_output_embeddings()
        emb = ref.get_input_embeddings().weight
        if head is not None and head.weight is emb:
            head.weight = torch.nn.Parameter(emb.detach().clone())
        done = set()
        for mname, mod in ref.named_modules():
            kind = type(mod).__name__
            if kind.endswith("Experts"):
                # transformers' experts interface (is_transposed set): one
                # product an expert the tokens were routed to; Llama 4's
                # multiply all experts at once (bmm of the stacked [E, K, N]),
                # a batched product that stays f32
                weights = [(p, mod.is_transposed) for p in mod.parameters(recurse=False)
                           if p.dim() == 3] if hasattr(mod, "is_transposed") else []
            elif kind == "Conv1D":
                weights = [(mod.weight, True)]
            else:
                w = getattr(mod, "weight", None)
                weights = ([(w, False)] if isinstance(w, torch.Tensor) and w.dim() == 2 and
                           (mname + ".weight" in tables or not isinstance(mod, torch.nn.Embedding))
                           else [])
            for p, transposed in weights:
                if id(p) in done:
                    continue
                done.add(id(p))
                w = p.detach().numpy().astype(np.float32)
                w = np.swapaxes(w, -1, -2) if transposed else w
                q = np.stack([ref_dequant(np.ascontiguousarray(x), bits, 32, False)
                              for x in w.reshape((-1,) + w.shape[-2:])]).reshape(w.shape)
                p.copy_(torch.from_numpy(np.ascontiguousarray(np.swapaxes(q, -1, -2) if transposed else q)))
    return ref


def quantized_tables(model, decoder):
    """The names of model's nn.Embedding weights that the decoder file
    reads through GatherBlockQuantized (quantize_embedding quantizes the
    tables a graph input indexes: the token embedding, not a position
    table the model indexes with positions it computes)."""
    import onnx
    import torch
    data = {n.input[0] for n in onnx.load(decoder, load_external_data=False).graph.node
            if n.op_type == "GatherBlockQuantized"}
    names = [n + ".weight" for n, mod in model.named_modules() if isinstance(mod, torch.nn.Embedding)]
    return {n for n in names if any(d == n + "_rows_quant" or d.endswith("." + n + "_rows_quant") for d in data)}


def tables_ref(model, bits, decoder):
    """dequantized() of model with the tables the decoder file quantized,
    which must include the token embedding; else the reason, a string."""
    tables = quantized_tables(model, decoder)
    emb = [n for n, m in model.named_modules() if m is model.get_input_embeddings()][0] + ".weight"
    if emb not in tables:
        return "%s not quantized (%s)" % (emb, sorted(tables))
    return dequantized(model, bits, tables)


def nodes(path):
    import onnx
    return len(onnx.load(path, load_external_data=False).graph.node)


def decode_ms(sess, batch=1, past=32, reps=30):
    """Median ms of one decode step (one new token over `past` cached)."""
    from onnxc.generation import _empty_past
    feed = {}
    names = [i.name for i in sess.get_inputs()]
    for n, v in _empty_past(sess, batch).items():
        shape = list(v.shape)
        shape[2] = past
        feed[n] = np.random.default_rng(0).standard_normal(shape).astype(v.dtype)
    feed["input_ids"] = np.full((batch, 1), 5, np.int64)
    feed["attention_mask"] = np.ones((batch, past + 1), np.int64)
    if "position_ids" in names:
        feed["position_ids"] = np.full((batch, 1), past, np.int64)
    for _ in range(5):
        sess.run(None, feed)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sess.run(None, feed)
        ts.append(time.perf_counter() - t0)
    return 1000 * float(np.median(ts))


def export_peer(spec, path):
    import torch
    from torch.export import Dim
    dims = {}

    def conv(s):
        if isinstance(s, str):
            return Dim.DYNAMIC
        if isinstance(s, dict):
            return {k: conv(v) for k, v in s.items()}
        return type(s)(conv(v) for v in s)
    dims = conv(spec.dynamic_shapes)
    torch.onnx.export(spec.module, spec.args, path, dynamo=True, dynamic_shapes=dims,
                      input_names=spec.input_names, output_names=spec.output_names,
                      verbose=False)


def check_form(results, name, case, model, ref, toks, path, want, seed, **export):
    """Exports model with export_for_generation(**export) to path and checks
    the padded batch (prompts of `seed`) against generate() on ref (or a
    function: ref(decoder path) gives it, or the reason there is none); the
    file must hold the ops of want.  A file of the standard target runs
    with ONNX Runtime's basic optimizations only: with all of them it
    runs DequantizeLinear + MatMul as int8 products, its own arithmetic."""
    import onnx
    import onnxruntime as ort
    import onnxc
    try:
        g = onnxc.export_for_generation(model, path, progress=False, **export)
        if isinstance(ref, types.FunctionType):     # (a model is callable too)
            ref = ref(g.decoder.path)
            if isinstance(ref, str):
                results.append((name, case, "FAIL", ref))
                return
        so = ort.SessionOptions()
        if export.get("quantize") and export.get("target", "onnx") == "onnx":
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        sess = ort.InferenceSession(g.decoder.path, so, providers=["CPUExecutionProvider"])
        ops = {n.op_type for n in onnx.load(g.decoder.path, load_external_data=False).graph.node}
        ids, mask = prompts(model, 3, PADS, seed=seed)
        why = check_case(sess, ref, ids, mask, toks) or "".join(
            "no %s in the file" % op for op in want if op not in ops)[:200]
    except Exception as e:   # noqa: BLE001 (reported, counted)
        why = "export (%s): %s" % (", ".join("%s=%s" % kv for kv in sorted(export.items())),
                                   str(e).strip().splitlines()[0][:200])
    results.append((name, case, "FAIL" if why else "ok", why))


def run_model(name, work, results, peer):
    import onnxruntime as ort
    import onnxc
    from onnxc.generation import _token_config
    model = build(name)
    out = os.path.join(work, name)
    t0 = time.time()
    try:
        g = onnxc.export_for_generation(model, out, progress=False, logits="all")
        t_export = time.time() - t0
        sess = ort.InferenceSession(g.decoder.path, providers=["CPUExecutionProvider"])
    except Exception as e:   # noqa: BLE001 (reported, counted)
        msg = str(e).strip().splitlines()[0][:300]
        status = "skip" if name in KNOWN_SKIPS else "FAIL"
        for case, _, _ in CASES:
            results.append((name, case, status, KNOWN_SKIPS.get(name, "export: " + msg)))
        return
    toks = _token_config(model)
    for i, (case, batch, pads) in enumerate(CASES):
        ids, mask = prompts(model, batch, pads, seed=10 + i)
        why = check_case(sess, model, ids, mask, toks, logits="all")
        results.append((name, case, "FAIL" if why else "ok", why))
    if name in OPSET23:
        check_form(results, name, "b3pad-opset23", model, model, toks, out + "-23", ["Attention"], 12,
                   opset=23)
    for attention in (("matmul", "gqa") if name in TARGET_ORT else ("matmul",)):
        case = "b3pad-ort" + ("-gqa" if attention == "gqa" else "")
        want = (["GroupQueryAttention"] if attention == "gqa" else
                ["RotaryEmbedding"] if name in ROTATE_HALF else [])
        if name in RMS_WRITTEN_OUT:
            want.append("SkipSimplifiedLayerNormalization")
        check_form(results, name, case, model, model, toks, out + "-" + case, want, 13,
                   target="ort", ort_attention=attention)
    refs = {}   # bits -> the model with NumPy's round trip of its weights
    for case, bits, target, attention, emb in QUANTIZED:
        if attention == "gqa" and name not in TARGET_ORT:
            continue
        export = dict(target=target, quantize="int%d" % bits, ort_attention=attention)
        want = ["MatMulNBits" if target == "ort" else "DequantizeLinear"]
        if emb:
            export["quantize_embedding"] = True
            ref = lambda decoder, bits=bits: tables_ref(model, bits, decoder)   # noqa: E731
            want.append("GatherBlockQuantized")
        else:
            if bits not in refs:
                refs[bits] = dequantized(model, bits)
            ref = refs[bits]
        check_form(results, name, case, model, ref, toks, out + "-" + case, want, 15, **export)
    row = "%-12s onnxc: export %.1fs, %d nodes, decode step %.3f ms" % (
        name, t_export, nodes(g.decoder.path), decode_ms(sess))
    if peer:
        from onnxc.bridge import with_past
        path = os.path.join(out, "peer.onnx")
        spec = with_past.decoder_spec(model)
        t0 = time.time()
        try:
            export_peer(spec, path)
            psess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        except Exception as e:   # noqa: BLE001
            row += "; peer: fails (%s)" % str(e).strip().splitlines()[0][:120]
        else:
            t_peer = time.time() - t0
            ok = []
            for i, (case, batch, pads) in enumerate(CASES):
                ids, mask = prompts(model, batch, pads, seed=10 + i)
                why = check_case(psess, model, ids, mask, toks)
                ok.append(case if not why else "%s: %s" % (case, why[:60]))
            row += "; peer: export %.1fs, %d nodes, decode step %.3f ms, %s" % (
                t_peer, nodes(path), decode_ms(psess), ", ".join(ok))
    print(row, flush=True)


def check_refusal(work, results):
    """A recurrent model (Mamba) and a hybrid one (Qwen3-Next) are refused
    with a message naming what the export covers."""
    import torch
    import transformers as T
    torch.manual_seed(0)
    cfg = T.MambaConfig(vocab_size=128, hidden_size=32, state_size=4, num_hidden_layers=2)
    refused(work, results, "mamba", T.MambaForCausalLM(cfg).eval(), "not a key/value cache")
    # A hybrid whose linear-attention layers keep a state of their own
    # (Qwen3-Next): transformers' DynamicCache does not fit it.
    if not hasattr(T, "Qwen3NextConfig"):
        results.append(("qwen3_next", "refused", "skip", "transformers %s has no Qwen3-Next"
                        % T.__version__))
        return
    torch.manual_seed(0)
    cfg = T.Qwen3NextConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                            linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=8,
                            linear_value_head_dim=8, num_experts=4, num_experts_per_tok=2,
                            moe_intermediate_size=16, shared_expert_intermediate_size=16)
    refused(work, results, "qwen3_next", T.Qwen3NextForCausalLM(cfg).eval(),
            "not run with a key/value cache per layer")


def refused(work, results, name, model, words, **kw):
    """export_for_generation(**kw) refuses model with onnxc's error saying
    words."""
    import onnxc
    try:
        onnxc.export_for_generation(model, os.path.join(work, name), progress=False, **kw)
    except Exception as e:   # noqa: BLE001 (anything but onnxc's own refusal fails)
        ok = isinstance(e, onnxc.ConversionError) and words in str(e)
        results.append((name, "refused", "ok" if ok else "FAIL",
                        "" if ok else "unclear message: %s: %s" % (type(e).__name__, e)))
        return
    results.append((name, "refused", "FAIL", "exported without a word"))


def check_sliced_logits(work, results):
    """logits="last" on a model whose forward takes no logits_to_keep: the
    logits are sliced after the head, and the file still gives the last
    position's, [batch, 1, vocab], as generate() does; a bad value of
    logits is refused."""
    from onnxc.generation import _token_config
    model = build("llama")
    base = type(model)

    class NoLogitsToKeep(base):
        def forward(self, input_ids=None, attention_mask=None, position_ids=None,
                    past_key_values=None, use_cache=None, **kw):
            return base.forward(self, input_ids=input_ids, attention_mask=attention_mask,
                                position_ids=position_ids, past_key_values=past_key_values,
                                use_cache=use_cache)

    model.__class__ = NoLogitsToKeep
    check_form(results, "logits", "sliced-last", model, model, _token_config(model),
               os.path.join(work, "llama-sliced"), [], 21)
    refused(work, results, "logits", model, "the choices are", logits="first")


def check_cli(work, results):
    """python -m onnxc --checkpoint DIR on a save_pretrained directory."""
    import onnxruntime as ort
    from onnxc.generation import _token_config
    model = build("llama")
    ckpt = os.path.join(work, "llama-ckpt")
    model.save_pretrained(ckpt)
    out = os.path.join(work, "llama-cli")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    p = subprocess.run([sys.executable, "-m", "onnxc", "--checkpoint", ckpt, "-o", out],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        results.append(("cli", "--checkpoint", "FAIL", p.stderr.strip()[-300:]))
        return
    sess = ort.InferenceSession(os.path.join(out, "model.onnx"),
                                providers=["CPUExecutionProvider"])
    ids, mask = prompts(model, 3, PADS, seed=20)
    why = check_case(sess, model, ids, mask, _token_config(model))
    results.append(("cli", "--checkpoint", "FAIL" if why else "ok", why))


def check_example(results):
    """examples/generate.py: the documented greedy loop, end to end."""
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "generate.py")],
                       capture_output=True, text=True, env=env)
    ok = p.returncode == 0 and "same tokens as generate(): True" in p.stdout
    results.append(("example", "generate.py", "ok" if ok else "FAIL",
                    "" if ok else (p.stdout + p.stderr).strip()[-300:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnxc", help="the onnxc binary (default: $ONNXC, else build/onnxc)")
    ap.add_argument("-k", dest="pattern", action="append", help="only models containing PATTERN")
    ap.add_argument("--peer", action="store_true",
                    help="also torch.onnx.export(dynamo=True) of the same module")
    a = ap.parse_args()
    if a.onnxc:
        os.environ["ONNXC"] = os.path.abspath(a.onnxc)
    elif "ONNXC" not in os.environ:
        os.environ["ONNXC"] = os.path.join(REPO, "build", "onnxc")
    import torch
    torch.set_num_threads(1)
    import run_modern_zoo as Z
    names = [n for n in Z.LLMS if not a.pattern or any(p in n for p in a.pattern)]
    results = []
    with tempfile.TemporaryDirectory(prefix="onnxc-gen.") as work:
        for name in names:
            try:
                run_model(name, work, results, a.peer)
            except Exception as e:   # noqa: BLE001 (a crash in the check is a failure)
                results.append((name, "run", "FAIL", "%s: %s" % (type(e).__name__, e)))
        if not a.pattern:
            check_refusal(work, results)
            check_sliced_logits(work, results)
            check_cli(work, results)
            check_example(results)
    for name, case, status, why in results:
        print("%-12s %-18s %-5s %s" % (name, case, status, why))
    passed = sum(r[2] == "ok" for r in results)
    failed = sum(r[2] == "FAIL" for r in results)
    skipped = sum(r[2] == "skip" for r in results)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
