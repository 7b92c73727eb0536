"""bench_decode.py - decoding with a key/value cache: onnxc's generation files against their peers.

    ~/.cache/onnxc/venv-torch2/bin/python bench/bench_decode.py [--arch llama,qwen2,phi3] [--1b]
        [--layers N] [--files onnxc,onnxc-ort,onnxc-int8,onnxc-int4,onnxc-int4-all,onnxc-int4-gqa,peer,genai-fp32,genai-int4]
        [--prompt 128] [--batch 1,4] [--past 128,2048] [--threads 1,2] [--new 32]
        [--rounds 9] [--sample-ms 40] [--budget 10] [--no-spin] [--no-prefill] [--no-decode]
        [--no-greedy] [--no-accuracy] [--no-encoders | --encoders-only] [--markdown FILE]
        [--keep DIR] [--onnxc PATH] [--timeout S]

For each architecture (Llama, Qwen2, Phi-3), a causal LM made from a config
with random weights (seeded; nothing is downloaded) is saved as a checkpoint
directory (save_pretrained) with a tokenizer built here with the
`tokenizers` package (a word-level vocabulary of the config's size, saved
as tokenizer.json and tokenizer_config.json, so ONNX Runtime GenAI's model
builder takes the directory).  The default size is small (hidden 512, 4
layers, 8 heads, 2 key/value heads, ffn 1376, vocabulary 32000); --1b is
bench_1b.py's TinyLlama-1.1B shape (hidden 2048, 22 layers, 32 heads, 4
key/value heads, ffn 5632), Llama only unless --arch says otherwise;
--layers overrides the depth of either.

The files, each built in a process of its own (external data for all):

  onnxc        onnxc.export_for_generation(checkpoint, dir): fp32, -O2; its
               logits the last position's (the default logits="last", what
               generate() computes: the LM head on one row of the prompt)
  onnxc-ort    the same with target="ort" (ONNX Runtime's contrib ops)
  onnxc-int8,  export_for_generation(..., target="ort", quantize="int8" /
  onnxc-int4   "int4", quantize_accuracy_level=4): MatMulNBits weights,
               int8 activations in the products (docs/weight_quantization.md)
  onnxc-int4-all  the int4 file with logits="all": every position's logits,
               the work of the builder's files
  onnxc-int4-gqa  the int4 file with ort_attention="gqa": GroupQueryAttention
               for the attention over the cache (not in the default set)
  peer         torch.onnx.export(dynamo=True) of the same with-past module
               (onnxc.bridge.with_past.decoder_spec: module, arguments,
               dynamic shapes, input and output names; the last position's
               logits, as onnxc's)
  genai-fp32,  python -m onnxruntime_genai.models.builder -i CHECKPOINT
  genai-int4   -o DIR -p fp32|int4 -e cpu (its GroupQueryAttention files;
               every position's logits)

Every file runs in a plain ONNX Runtime session (CPU, intra-op threads as
--threads, one inter-op thread, spinning as ONNX Runtime's default unless
--no-spin; not GenAI's generator), fed by one adapter
that reads each file's input names (the GenAI files' from their
genai_config.json), so the same timing code drives them all:

  prefill   batch 1, --prompt tokens, an empty cache
  decode    one new token on a cache of --past tokens (random values), at
            each --batch
  greedy    tokens/s of a --new-token greedy loop at batch 1 after a
            --prompt-token prompt (the prefill included), each file's own
            argmax fed back, the cache fed back as the file returns it;
            --greedy-reps loops a file, the files' loops interleaved
  accuracy  PyTorch (fp32, the checkpoint) decodes greedily --new tokens
            from the prompt; each file is fed the same tokens step by step
            with its own cache, and its last-position logits are compared
            with PyTorch's at every step: top-1 agreement and cosine; and
            the prompt left-padded by 5 beside itself in a batch of two
            (attention_mask 0 over the pads, as a batched generate()
            feeds it): the largest difference of that row's last logits
            from the prompt's own, run alone (0 up to rounding where the
            file honours the mask)

Timing: with the default size all files of an architecture are open at
once and rounds alternate among them (the order rotated each round), each
round timing a batch of runs lasting about --sample-ms.  --1b's fp32 files
are 4.4 GB each, so it opens each builder file with the onnxc files the
second table sets against it (the int4 files together; onnxc -target=ort
with builder fp32) and every other file alone: at most two fp32 files at
once.  A cell is the median over the rounds and its ratio to onnxc fp32
with a 95% bootstrap interval (rounds of each file resampled).  A second
table sets onnxc's files against the builder's of the same weights (onnxc
int4 / builder int4, onnxc -target=ort / builder fp32): the ratio of the
medians on every row and on the greedy loop's time, with its 95% interval,
and whether onnxc is faster, tied (the interval holds 1.00) or slower.

The encoder part (--no-encoders leaves it out): BERT-4L and DistilBERT-4L
(hidden 768, batch 1, sequence 128, random weights) as onnxc fp32 against
torch.onnx.export(dynamo=True), and onnxruntime.quantization.quantize_dynamic
(int8 weights) of the peer's file against onnxc int8 (MatMulNBits, accuracy
level 4) and onnxc int8-dynamic (quantize="int8-dynamic": MatMulInteger, and
DynamicQuantizeMatMul with target="ort"; with quantize_embedding too, the
embedding tables as GatherBlockQuantized).

The last lines give the versions and the machine's load average at the
start and the end: the figures are only comparable within one run.
"""

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
if os.path.join(REPO, "python") not in sys.path:
    sys.path.insert(0, os.path.join(REPO, "python"))

SIZES = {
    "small": dict(vocab=32000, dim=512, layers=4, heads=8, kv_heads=2, ffn=1376),
    # bench_1b.py's tinyllama: TinyLlama-1.1B's published shape
    "1b": dict(vocab=32000, dim=2048, layers=22, heads=32, kv_heads=4, ffn=5632),
}
ARCHS = ("llama", "qwen2", "phi3")
FILES = ("onnxc", "onnxc-ort", "onnxc-int8", "onnxc-int4", "onnxc-int4-all", "peer", "genai-fp32",
         "genai-int4")
EXTRA_FILES = ("onnxc-int4-gqa", "onnxc-int4-emb")   # built when --files names them
# the encoders' files; the last, quantize_dynamic of the peer's, is made from it
ENCODER_FILES = ("onnxc", "onnxc-int8", "onnxc-dyn", "onnxc-dyn-ort", "onnxc-dyn-ort-emb", "peer",
                 "peer-int8")
LABELS = {
    "onnxc": "onnxc fp32",
    "onnxc-ort": "onnxc fp32 -target=ort",
    "onnxc-int8": "onnxc int8",
    "onnxc-int4": "onnxc int4",
    "onnxc-int4-all": "onnxc int4 logits=all",
    "onnxc-int4-gqa": "onnxc int4 -ort-attention=gqa",
    "onnxc-int4-emb": "onnxc int4 -quantize-embedding",
    "peer": "torch.onnx.export(dynamo=True) fp32",
    "genai-fp32": "ORT GenAI builder fp32",
    "genai-int4": "ORT GenAI builder int4",
    "peer-int8": "quantize_dynamic(peer) int8",
    "onnxc-dyn": "onnxc int8-dynamic",
    "onnxc-dyn-ort": "onnxc int8-dynamic -target=ort",
    "onnxc-dyn-ort-emb": "onnxc int8-dynamic -target=ort -quantize-embedding",
}
MAX_POSITIONS = 4096
CHILD_ENV = dict(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TRANSFORMERS_VERBOSITY="error",
                 TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="2")


# -- the checkpoint -------------------------------------------------------------------

def make_config(arch, size, layers=None):
    import transformers
    s = dict(SIZES[size], **({"layers": layers} if layers else {}))
    common = dict(vocab_size=s["vocab"], hidden_size=s["dim"], intermediate_size=s["ffn"],
                  num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
                  num_key_value_heads=s["kv_heads"], max_position_embeddings=MAX_POSITIONS,
                  bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False)
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "qwen2":
        return transformers.Qwen2Config(**common)
    if arch == "phi3":
        return transformers.Phi3Config(original_max_position_embeddings=MAX_POSITIONS, **common)
    raise ValueError(arch)


def make_tokenizer(vocab_size):
    """A word-level tokenizer over a synthetic vocabulary of exactly
    vocab_size entries (<pad>, <s>, </s>, <unk>, then w4 ... ), split on
    whitespace, wrapped for save_pretrained."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    import transformers
    words = ["<pad>", "<s>", "</s>", "<unk>"]
    words += ["w%d" % i for i in range(len(words), vocab_size)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>",
                                                bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>")


def make_checkpoint(arch, size, path, layers=None):
    """Writes config, weights (seed 0) and tokenizer to `path`, unless a
    checkpoint of the same config is there already (--keep).  transformers
    initializes biases to 0 and norm weights to 1, which a trained model's
    are not, and an exporter may drop a zero bias (the builder does): the
    vectors are drawn too, biases from N(0, 0.02), norm weights from 1 +
    N(0, 0.02)."""
    import torch
    import transformers
    cfg = make_config(arch, size, layers)
    stamp = os.path.join(path, "bench_decode.json")
    want = {"arch": arch, "size": size, "layers": cfg.num_hidden_layers, "vectors": "drawn"}
    if os.path.isfile(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                return False
    shutil.rmtree(path, ignore_errors=True)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.normal_(0.0, 0.02)
                if not name.endswith(".bias"):
                    p.add_(1.0)
    model.save_pretrained(path)
    make_tokenizer(cfg.vocab_size).save_pretrained(path)
    del model
    gc.collect()
    with open(stamp, "w") as f:
        json.dump(want, f)
    return True


def prompt_ids(ckpt, n):
    """n token ids of a synthetic text through the checkpoint's tokenizer
    (its tokenizer.json as written: AutoTokenizer would pick the model
    type's own tokenizer class for some, Qwen2's, which reads it otherwise)."""
    import transformers
    tok = transformers.PreTrainedTokenizerFast.from_pretrained(ckpt, local_files_only=True)
    rng = random.Random(7)
    text = " ".join("w%d" % rng.randrange(4, tok.vocab_size) for _ in range(n))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == n, (len(ids), n)
    return np.asarray([ids], dtype=np.int64)


# -- building each file, in a child process -------------------------------------------

def build_onnxc(job):
    """onnxc's file of a row: fp32, -target=ort, or int8/int4 weights as
    MatMulNBits at -target=ort with accuracy level 4 (int8 activations in
    the products, as the builder's CPU int4 files compute)."""
    import onnxc
    kw = dict(external_data=True)
    kind = job["kind"]
    if kind == "onnxc-ort":
        kw["target"] = "ort"
    elif kind in ("onnxc-int8", "onnxc-int4", "onnxc-int4-all", "onnxc-int4-gqa", "onnxc-int4-emb"):
        kw.update(target="ort", quantize=kind.split("-")[1], quantize_accuracy_level=4)
        if kind.endswith("-gqa"):
            kw["ort_attention"] = "gqa"
        if kind.endswith("-emb"):
            kw["quantize_embedding"] = True
        if kind.endswith("-all"):
            kw["logits"] = "all"
    onnxc.export_for_generation(job["ckpt"], job["out"], **kw)
    return os.path.join(job["out"], "model.onnx")


def dims_for_peer(dyn):
    """with_past's dynamic shapes (dim names) as torch.export dims: every
    named dim Dim.DYNAMIC, so that torch.export finds the relations
    (total = past + sequence) itself."""
    from torch.export import Dim
    if isinstance(dyn, dict):
        return {k: (Dim.DYNAMIC if isinstance(v, str) else dims_for_peer(v))
                for k, v in dyn.items()}
    if isinstance(dyn, (list, tuple)):
        return type(dyn)(dims_for_peer(v) for v in dyn)
    return dyn


def build_peer(job):
    import torch
    import transformers
    from onnxc.bridge import with_past
    model = transformers.AutoModelForCausalLM.from_pretrained(job["ckpt"], local_files_only=True)
    spec = with_past.decoder_spec(model.eval())
    os.makedirs(job["out"], exist_ok=True)
    path = os.path.join(job["out"], "model.onnx")
    torch.onnx.export(spec.module, spec.args, path, dynamo=True,
                      dynamic_shapes=dims_for_peer(spec.dynamic_shapes),
                      input_names=spec.input_names, output_names=spec.output_names,
                      external_data=True, verbose=False)
    return path


def build_genai(job):
    precision = job["kind"].split("-")[1]
    cache = os.path.join(job["out"] + ".cache")
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", job["ckpt"],
           "-o", job["out"], "-p", precision, "-e", "cpu", "-c", cache]
    p = subprocess.run(cmd, capture_output=True, text=True)
    shutil.rmtree(cache, ignore_errors=True)
    if p.returncode != 0:
        tail = [l for l in (p.stderr or p.stdout).strip().splitlines() if l.strip()]
        raise RuntimeError("model builder: exit %d: %s" % (p.returncode, tail[-1] if tail else ""))
    return os.path.join(job["out"], "model.onnx")


def build_encoder(job):
    """An encoder's file: onnxc (fp32 or int8) or the peer."""
    import torch
    model, args = make_encoder(job["arch"])
    path = os.path.join(job["out"], "model.onnx")
    os.makedirs(job["out"], exist_ok=True)
    names = dict(input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"])
    if job["kind"] == "peer":
        torch.onnx.export(model, args, path, dynamo=True, external_data=True, verbose=False,
                          **names)
    else:
        import onnxc
        kw = dict(external_data=True)
        if job["kind"] == "onnxc-int8":
            kw.update(target="ort", quantize="int8", quantize_accuracy_level=4)
        elif job["kind"] == "onnxc-dyn":
            kw.update(quantize="int8-dynamic")
        elif job["kind"] in ("onnxc-dyn-ort", "onnxc-dyn-ort-emb"):
            kw.update(target="ort", quantize="int8-dynamic",
                      quantize_embedding=job["kind"].endswith("-emb"))
        onnxc.export(model, args, path, **names, **kw)
    return path


def node_count(path):
    """Nodes of the graph, local functions' bodies included."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    return len(m.graph.node) + sum(len(f.node) for f in m.functions)


def child_build(job):
    """Runs one build; prints BUILD {ok, seconds, path | error}."""
    import onnxc
    if job["onnxc"]:
        os.environ["ONNXC"] = job["onnxc"]
    t0 = time.perf_counter()
    res = {"ok": False}
    try:
        if job.get("encoder"):
            path = build_encoder(job)
        elif job["kind"].startswith("onnxc"):
            path = build_onnxc(job)
        elif job["kind"] == "peer":
            path = build_peer(job)
        else:
            path = build_genai(job)
        res.update(ok=True, path=path, nodes=node_count(path))
    except NotImplementedError as e:
        res.update(error=str(e), unavailable=True)
    except Exception as e:   # noqa: BLE001 (a failed build is a row of the table)
        msg = str(e).strip().splitlines()
        res.update(error="%s: %s" % (type(e).__name__, msg[0][:200] if msg else ""))
    res["seconds"] = time.perf_counter() - t0
    print("BUILD " + json.dumps(res), flush=True)


def build(job, timeout):
    env = dict(os.environ, **CHILD_ENV)
    env["PYTHONPATH"] = os.path.join(REPO, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--build-child",
                            json.dumps(job)], capture_output=True, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timed out after %d s" % timeout}
    lines = [l for l in p.stdout.splitlines() if l.startswith("BUILD ")]
    if lines:
        return json.loads(lines[-1][len("BUILD "):])
    tail = [l for l in (p.stderr or "").strip().splitlines() if l.strip()]
    return {"ok": False, "error": "exit %d: %s" % (p.returncode, tail[-1][:200] if tail else "")}


def file_bytes(path):
    d = os.path.dirname(path)
    base = os.path.basename(path)
    total = 0
    for f in os.listdir(d):
        if f.startswith(base) or f.endswith(".data"):
            total += os.path.getsize(os.path.join(d, f))
    return total


# -- the feeding adapter --------------------------------------------------------------

def positions(mask):
    pos = np.cumsum(mask, axis=-1) - 1
    return np.where(mask == 0, 1, pos).astype(np.int64)


def session_options(threads, spin=True):
    """intra-op threads as asked, one inter-op thread; spin=False stops the
    intra-op threads spinning while they wait for work (ONNX Runtime's
    default is to spin, which costs on cores other jobs hold)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if not spin:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return so


class Decoder:
    """A decoder-with-past file in a plain ONNX Runtime session, fed by
    name: input_ids, attention_mask, position_ids where the file takes
    them, and each layer's cache under the file's own names (GenAI's from
    its genai_config.json, else past_key_values.N.key/.value and
    present.N.key/.value)."""

    def __init__(self, path, threads, spin=True):
        import onnxruntime as ort
        self.session = ort.InferenceSession(path, session_options(threads, spin),
                                            providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]
        names = {"past_key_names": "past_key_values.%d.key",
                 "past_value_names": "past_key_values.%d.value",
                 "present_key_names": "present.%d.key",
                 "present_value_names": "present.%d.value",
                 "input_ids": "input_ids", "attention_mask": "attention_mask",
                 "position_ids": "position_ids", "logits": "logits"}
        gcfg = os.path.join(os.path.dirname(path), "genai_config.json")
        if os.path.isfile(gcfg):
            with open(gcfg) as f:
                dec = json.load(f)["model"]["decoder"]
            names.update(dec.get("inputs", {}))
            names.update(dec.get("outputs", {}))
        self.names = names
        self.layers = sum(1 for i in range(1000) if names["past_key_names"] % i in self.inputs)
        dtypes = {"tensor(float)": np.float32, "tensor(float16)": np.float16}
        first = self.session.get_inputs()[self.inputs.index(names["past_key_names"] % 0)]
        self.past_dtype = dtypes.get(first.type, np.float32)
        self.out_index = {n: k for k, n in enumerate(self.outputs)}

    def feed(self, ids, mask, past):
        """past: [(key, value)] a layer, [batch, kv heads, past, head dim]."""
        n = self.names
        f = {n["input_ids"]: ids, n["attention_mask"]: mask}
        if n["position_ids"] in self.inputs:
            f[n["position_ids"]] = positions(mask)[:, -ids.shape[1]:]
        for i, (k, v) in enumerate(past):
            f[n["past_key_names"] % i] = k.astype(self.past_dtype, copy=False)
            f[n["past_value_names"] % i] = v.astype(self.past_dtype, copy=False)
        return f

    def run(self, feed):
        """(logits, the present cache as [(key, value)])."""
        out = self.session.run(None, feed)
        n, ix = self.names, self.out_index
        present = [(out[ix[n["present_key_names"] % i]], out[ix[n["present_value_names"] % i]])
                   for i in range(self.layers)]
        return out[ix[n["logits"]]], present


def empty_past(cfg, batch, length, rng=None):
    heads = cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    shape = (batch, heads, length, hd)
    if rng is None:
        return [(np.zeros(shape, np.float32), np.zeros(shape, np.float32))
                for _ in range(cfg.num_hidden_layers)]
    return [(rng.standard_normal(shape, dtype=np.float32),
             rng.standard_normal(shape, dtype=np.float32)) for _ in range(cfg.num_hidden_layers)]


def greedy_steps(dec, cfg, prompt, new, forced=None):
    """Greedy decoding at batch 1: per-step last-position logits and the
    tokens (the file's own argmax, or `forced` fed instead)."""
    ids = prompt
    mask = np.ones_like(prompt)
    past = empty_past(cfg, prompt.shape[0], 0)
    logits_out, tokens = [], []
    for step in range(new):
        logits, past = dec.run(dec.feed(ids, mask, past))
        last = logits[:, -1, :]
        logits_out.append(last)
        nxt = last.argmax(-1).astype(np.int64)
        tokens.append(int(nxt[0]))
        if forced is not None:
            nxt = np.asarray([forced[step]], dtype=np.int64)
        ids = nxt[:, None]
        mask = np.concatenate([mask, np.ones((mask.shape[0], 1), np.int64)], axis=1)
    return logits_out, tokens


def torch_reference(ckpt, prompt, new):
    """PyTorch fp32's greedy decode: tokens and per-step logits."""
    import torch
    import transformers
    from transformers import DynamicCache
    model = transformers.AutoModelForCausalLM.from_pretrained(ckpt, local_files_only=True).eval()
    ids = torch.from_numpy(prompt)
    cache = DynamicCache()
    mask = torch.ones_like(ids)
    logits, tokens = [], []
    with torch.no_grad():
        for _ in range(new):
            out = model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            last = out.logits[:, -1, :].float().numpy()
            logits.append(last)
            nxt = last.argmax(-1)
            tokens.append(int(nxt[0]))
            ids = torch.from_numpy(nxt[:, None].astype(np.int64))
            mask = torch.cat([mask, torch.ones(1, 1, dtype=mask.dtype)], dim=1)
    del model
    gc.collect()
    return tokens, logits


def accuracy(dec, cfg, prompt, ref_tokens, ref_logits):
    """The file fed PyTorch's greedy tokens: top-1 agreement and the
    cosine of its logits with PyTorch's, step by step."""
    logits, tokens = greedy_steps(dec, cfg, prompt, len(ref_tokens), forced=ref_tokens)
    agree = sum(int(a == b) for a, b in zip(tokens, ref_tokens))
    cos = []
    for a, b in zip(logits, ref_logits):
        a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
        cos.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    diff = max(float(np.abs(a - b).max()) for a, b in zip(logits, ref_logits))
    return {"agree": agree, "steps": len(ref_tokens), "cos_mean": statistics.fmean(cos),
            "cos_min": min(cos), "max_diff": diff, "padded": padded_row(dec, cfg, prompt)}


def padded_row(dec, cfg, prompt, pads=5):
    """The prompt left-padded beside itself in a batch of two, as a batched
    generate() feeds it (attention_mask 0 over the pads): the largest
    difference of the padded row's last logits from the prompt's alone."""
    short = prompt[:, pads:]
    alone = dec.run(dec.feed(short, np.ones_like(short), empty_past(cfg, 1, 0)))[0][:, -1]
    ids = np.concatenate([prompt, np.concatenate([np.zeros((1, pads), np.int64), short], 1)])
    mask = np.ones_like(ids)
    mask[1, :pads] = 0
    both = dec.run(dec.feed(ids, mask, empty_past(cfg, 2, 0)))[0][1:, -1]
    return float(np.abs(both - alone).max())


# -- timing ---------------------------------------------------------------------------

def interleaved(runs, rounds, sample_ms, budget):
    """runs: {key: zero-argument callable}. Per-round seconds of each, the
    order rotated every round, each round a batch of calls lasting about
    sample_ms (the same batch for all)."""
    keys = list(runs)
    for k in keys:
        for _ in range(2):
            runs[k]()
    t0 = time.perf_counter()
    runs[keys[0]]()
    one = max(time.perf_counter() - t0, 1e-6)
    batch = max(1, int(sample_ms / 1000.0 / one))
    times = {k: [] for k in keys}
    start = time.perf_counter()
    for r in range(rounds):
        order = keys[r % len(keys):] + keys[:r % len(keys)]
        for k in order:
            fn = runs[k]
            t = time.perf_counter()
            for _ in range(batch):
                fn()
            times[k].append((time.perf_counter() - t) / batch)
        if r >= 4 and budget and time.perf_counter() - start > budget:
            break
    return times


def ratio_interval(a, b, draws=2000):
    """95% bootstrap interval of median(a) / median(b), the rounds of each
    resampled on their own."""
    rng = random.Random(1)
    q = []
    for _ in range(draws):
        xa = [a[rng.randrange(len(a))] for _ in a]
        xb = [b[rng.randrange(len(b))] for _ in b]
        q.append(statistics.median(xa) / statistics.median(xb))
    q.sort()
    return q[int(0.025 * draws)], q[int(0.975 * draws) - 1]


def measure_group(decs, cfg, a, prompt, rng_seed=0):
    """All timings of the open files `decs` ({key: Decoder}): returns
    {config: {key: [seconds per round]}}, {key: tokens/s} and {key: [seconds
    per greedy loop]} (the loops of the files interleaved, the order rotated
    every repetition)."""
    out = {}
    configs = []
    if not a.no_prefill:
        configs.append(("prefill", 1, 0, prompt.shape[1]))
    if not a.no_decode:
        for b in a.batch:
            for p in a.past:
                configs.append(("decode b%d p%d" % (b, p), b, p, 1))
    rng = np.random.default_rng(rng_seed)
    for name, b, p, s in configs:
        ids = np.repeat(prompt[:, :s], b, axis=0) if s > 1 else \
            rng.integers(4, cfg.vocab_size, (b, 1)).astype(np.int64)
        mask = np.ones((b, p + s), np.int64)
        past = empty_past(cfg, b, p, rng if p else None)
        feeds = {k: d.feed(ids, mask, past) for k, d in decs.items()}
        runs = {k: (lambda d=d, f=feeds[k]: d.session.run(None, f)) for k, d in decs.items()}
        out[name] = interleaved(runs, a.rounds, a.sample_ms, a.budget)
        del feeds, runs, past
    tps, loops = {}, {}
    if not a.no_greedy:
        keys = list(decs)
        loops = {k: [] for k in keys}
        for k in keys:
            greedy_steps(decs[k], cfg, prompt, 2)
        for r in range(a.greedy_reps):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                t0 = time.perf_counter()
                greedy_steps(decs[k], cfg, prompt, a.new)
                loops[k].append(time.perf_counter() - t0)
        tps = {k: a.new / statistics.median(v) for k, v in loops.items()}
    return out, tps, loops


# -- the encoders ---------------------------------------------------------------------

def make_encoder(arch):
    import torch
    import transformers
    torch.manual_seed(0)
    if arch == "bert-4l":
        m = transformers.BertModel(transformers.BertConfig(num_hidden_layers=4),
                                   add_pooling_layer=False)
    else:
        m = transformers.DistilBertModel(transformers.DistilBertConfig(n_layers=4))
    m.eval()

    class LastHidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    g = torch.Generator().manual_seed(3)
    ids = torch.randint(1000, m.config.vocab_size, (1, 128), generator=g)
    mask = torch.ones(1, 128, dtype=torch.long)
    return LastHidden(m).eval(), (ids, mask)


def run_encoders(a, work, results):
    import onnxruntime as ort
    import torch
    for arch in ("bert-4l", "distilbert-4l"):
        model, args = make_encoder(arch)
        with torch.no_grad():
            ref = model(*args).numpy()
        feed = {"input_ids": args[0].numpy(), "attention_mask": args[1].numpy()}
        del model
        files, rows = {}, {}
        for kind in ENCODER_FILES[:-1]:
            out = os.path.join(work, arch, kind)
            shutil.rmtree(out, ignore_errors=True)
            r = build({"kind": kind, "encoder": True, "arch": arch, "out": out,
                       "onnxc": a.onnxc}, a.timeout)
            rows[kind] = r
            log("%s %s: %s" % (arch, kind, "built in %.1f s" % r["seconds"] if r["ok"]
                                else r["error"]))
            if r["ok"]:
                files[kind] = r["path"]
        if "peer" in files:
            from onnxruntime.quantization import QuantType, quantize_dynamic
            out = os.path.join(work, arch, "peer-int8")
            shutil.rmtree(out, ignore_errors=True)     # its external data would be appended to
            os.makedirs(out)
            t0 = time.perf_counter()
            try:
                path = os.path.join(out, "model.onnx")
                quantize_dynamic(files["peer"], path, weight_type=QuantType.QInt8,
                                 use_external_data_format=True)
                files["peer-int8"] = path
                rows["peer-int8"] = {"ok": True, "path": path, "nodes": node_count(path),
                                     "seconds": time.perf_counter() - t0}
            except Exception as e:   # noqa: BLE001
                rows["peer-int8"] = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        for k, path in files.items():
            rows[k]["size"] = file_bytes(path)
        for t in a.threads:
            sessions = {}
            for k, path in files.items():
                sessions[k] = ort.InferenceSession(path, session_options(t, not a.no_spin),
                                                   providers=["CPUExecutionProvider"])
            if t == a.threads[0]:
                for k, s in sessions.items():
                    got = s.run(None, feed)[0]
                    x, y = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
                    rows[k]["max_diff"] = float(np.abs(got - ref).max())
                    rows[k]["cos"] = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
            runs = {k: (lambda s=s: s.run(None, feed)) for k, s in sessions.items()}
            if runs:
                for k, ts in interleaved(runs, a.rounds, a.sample_ms, a.budget).items():
                    rows[k].setdefault("times", {})[t] = ts
            del sessions, runs
            gc.collect()
        results[arch] = rows


# -- the report -----------------------------------------------------------------------

def log(msg):
    print(msg, file=sys.stderr, flush=True)


def cell(times, base):
    """'median ms ratio [lo..hi]' against the baseline's rounds."""
    if not times:
        return "-"
    m = statistics.median(times)
    s = "%.2f ms" % (m * 1e3) if m < 1 else "%.2f s" % m
    if base is None or base is times:
        return s
    lo, hi = ratio_interval(times, base)
    return "%s %.2fx [%.2f..%.2f]" % (s, m / statistics.median(base), lo, hi)


def table(head, rows):
    w = [max(len(head[i]), *(len(r[i]) for r in rows)) if rows else len(head[i])
         for i in range(len(head))]
    fmt = " | ".join("%%-%ds" % x for x in w)
    lines = ["| " + fmt % tuple(head) + " |", "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    lines += ["| " + fmt % tuple(r) + " |" for r in rows]
    return lines


def fmt_size(n):
    return "-" if not n else "%.0f MB" % (n / 1e6) if n >= 1e7 else "%.1f MB" % (n / 1e6)


# onnxc's file against the builder's of the same weights
PAIRS = (("onnxc-int4", "genai-int4"), ("onnxc-int4-all", "genai-int4"),
         ("onnxc-int4-gqa", "genai-int4"), ("onnxc-int4-emb", "genai-int4"),
         ("onnxc-ort", "genai-fp32"))


def pair_groups(files):
    """`files` in groups to open and time together, in the order of `files`:
    each builder file of PAIRS with the onnxc files set against it, every
    other file alone.  A pair's ratio is only fair when its rounds
    interleave (timings taken minutes apart drift more than the files
    differ); grouping no more than that keeps at most two fp32 files open."""
    partner = {ours: theirs for ours, theirs in PAIRS if ours in files and theirs in files}
    groups = {}
    for k in files:
        groups.setdefault(partner.get(k, k), []).append(k)
    return list(groups.values())


def verdict(lo, hi):
    return "faster" if hi < 1 else "slower" if lo > 1 else "tie"


def against_builder(res, a, configs):
    """The table of onnxc's time over the builder's for each pair of PAIRS
    both built: every latency row and the greedy loop (its time a loop),
    the ratio with its 95% bootstrap interval and what it says (a ratio
    whose interval holds 1.00 is a tie); and the count of each."""
    head = ["model", "onnxc / builder", "threads"] + configs + (
        ["greedy loop"] if not a.no_greedy else [])
    rows, tally = [], {"faster": 0, "tie": 0, "slower": 0}
    for arch, r in res.items():
        for ours, theirs in PAIRS:
            if not (r["builds"].get(ours, {}).get("ok") and r["builds"].get(theirs, {}).get("ok")):
                continue
            for t in a.threads:
                row = [arch, "%s / %s" % (LABELS[ours], LABELS[theirs]), str(t)]
                series = [r["times"].get(t, {}).get(c, {}) for c in configs]
                if not a.no_greedy:
                    series.append(r["loops"].get(t, {}))
                for per in series:
                    x, y = per.get(ours), per.get(theirs)
                    if not x or not y:
                        row.append("-")
                        continue
                    lo, hi = ratio_interval(x, y)
                    v = verdict(lo, hi)
                    tally[v] += 1
                    row.append("%.2fx [%.2f..%.2f] %s" % (statistics.median(x) / statistics.median(y),
                                                          lo, hi, v))
                rows.append(row)
    if not rows:
        return []
    return (["", "Against ONNX Runtime GenAI's builder (onnxc's median time over the builder's, "
             "95%% interval; below 1 onnxc is faster; an interval holding 1.00 is a tie): "
             "%d faster, %d ties, %d slower:" % (tally["faster"], tally["tie"], tally["slower"]), ""]
            + table(head, rows))


def report(res, enc, a, load0, load1, wall):
    lines = []
    configs = []
    for arch in res:
        for t in a.threads:
            for c in res[arch]["times"].get(t, {}):
                if c not in configs:
                    configs.append(c)
    head = ["model", "file", "threads"] + configs + (["greedy tok/s (x onnxc)"]
                                                      if not a.no_greedy else [])
    rows = []
    for arch, r in res.items():
        for t in a.threads:
            tt = r["times"].get(t, {})
            base_tps = r["tps"].get(t, {}).get("onnxc")
            for k in a.files:
                b = r["builds"].get(k, {})
                if not b.get("ok"):
                    if t == a.threads[0]:
                        rows.append([arch, LABELS[k], "-"] + [b.get("error", "not built")[:60]]
                                    + [""] * (len(head) - 4))
                    continue
                row = [arch, LABELS[k], str(t)]
                for c in configs:
                    times = tt.get(c, {})
                    row.append(cell(times.get(k), times.get("onnxc")))
                if not a.no_greedy:
                    tps = r["tps"].get(t, {}).get(k)
                    row.append("-" if tps is None else "%.1f" % tps + (
                        "" if k == "onnxc" or not base_tps else " (%.2fx)" % (tps / base_tps)))
                rows.append(row)
    lines += ["Latency (median over rounds; ratio to onnxc fp32 with its 95%% interval; "
              "decode = one token on a cache of p tokens at batch b; prefill = batch 1, "
              "%d tokens):" % a.prompt, ""]
    lines += table(head, rows)
    lines += against_builder(res, a, configs)
    if not a.no_accuracy:
        lines += ["", "Against PyTorch fp32 over a %d-token greedy sequence (the file fed "
                  "PyTorch's tokens; %d-token prompt); nodes, file size (external data "
                  "included) and build time:" % (a.new, a.prompt), ""]
        rows = []
        for arch, r in res.items():
            for k in a.files:
                b = r["builds"].get(k, {})
                acc = r["acc"].get(k)
                if not b.get("ok"):
                    continue
                rows.append([arch, LABELS[k],
                             "%d/%d" % (acc["agree"], acc["steps"]) if acc else "-",
                             "%.6f" % acc["cos_mean"] if acc else "-",
                             "%.6f" % acc["cos_min"] if acc else "-",
                             "%.2g" % acc["max_diff"] if acc else "-",
                             "%.2g" % acc["padded"] if acc else "-",
                             str(b.get("nodes", "-")), fmt_size(b.get("size")),
                             "%.1f s" % b["seconds"]])
        lines += table(["model", "file", "top-1 agree", "cos mean", "cos min",
                        "max abs diff", "left-padded row", "nodes", "size", "build"], rows)
    if enc:
        lines += ["", "Encoders (batch 1, sequence 128; latency median, ratio to onnxc fp32 "
                  "with its 95% interval; against PyTorch fp32):", ""]
        rows = []
        for arch, r in enc.items():
            for k in ENCODER_FILES:
                b = r.get(k)
                if b is None:
                    continue
                if not b.get("ok"):
                    rows.append([arch, LABELS.get(k, k), "-", b.get("error", "")[:60], "", "",
                                 "", "", ""])
                    continue
                for t in a.threads:
                    times = b.get("times", {}).get(t)
                    base = r.get("onnxc", {}).get("times", {}).get(t)
                    rows.append([arch, LABELS.get(k, k), str(t), cell(times, base),
                                 "%.2g" % b["max_diff"] if "max_diff" in b else "-",
                                 "%.6f" % b["cos"] if "cos" in b else "-",
                                 str(b.get("nodes", "-")), fmt_size(b.get("size")),
                                 "%.1f s" % b.get("seconds", 0)])
        lines += table(["model", "file", "threads", "latency", "max abs diff", "cos", "nodes",
                        "size", "build"], rows)
    import onnxruntime
    import torch
    try:
        import onnxruntime_genai
        gv = onnxruntime_genai.__version__
    except ImportError:
        gv = "not installed"
    size = dict(SIZES["1b" if a.one_b else "small"])
    if a.layers:
        size["layers"] = a.layers
    lines += ["", "Size %s (%s); %d rounds at most of about %.0f ms a file and "
              "configuration%s; greedy: %d tokens, median of %d loops.  torch %s, onnxruntime %s, "
              "onnxruntime-genai %s.  Load average (1 min) %.2f at the start, %.2f at the end; "
              "wall time %.0f s." % ("1b" if a.one_b else "small",
                                     ", ".join("%s %s" % (k, v) for k, v in size.items()),
                                     a.rounds, a.sample_ms,
                                     "; intra-op threads not spinning" if a.no_spin else "",
                                     a.new, a.greedy_reps,
                                     torch.__version__, onnxruntime.__version__, gv, load0,
                                     load1, wall)]
    return lines


# -- main -----------------------------------------------------------------------------

def run_arch(arch, a, work):
    size = "1b" if a.one_b else "small"
    tag = "%s-%s%s" % (arch, size, "-%dl" % a.layers if a.layers else "")
    ckpt = os.path.join(work, tag, "checkpoint")
    t0 = time.perf_counter()
    made = make_checkpoint(arch, size, ckpt, a.layers)
    log("%s: checkpoint %s (%.1f s)" % (arch, "written" if made else "reused",
                                        time.perf_counter() - t0))
    import transformers
    cfg = transformers.AutoConfig.from_pretrained(ckpt, local_files_only=True)
    builds = {}
    for k in a.files:
        out = os.path.join(work, tag, k)
        stamp = os.path.join(out, "bench_decode.json")
        if a.keep and os.path.isfile(stamp) and not made:
            with open(stamp) as f:
                builds[k] = json.load(f)
            log("%s %s: reused" % (arch, k))
            continue
        shutil.rmtree(out, ignore_errors=True)
        r = build({"kind": k, "ckpt": ckpt, "out": out, "onnxc": a.onnxc}, a.timeout)
        if r["ok"]:
            r["size"] = file_bytes(r["path"])
            with open(stamp, "w") as f:
                json.dump(r, f)
        builds[k] = r
        log("%s %s: %s" % (arch, k, "built in %.1f s, %s" % (r["seconds"], fmt_size(r["size"]))
                           if r["ok"] else r["error"]))
    prompt = prompt_ids(ckpt, a.prompt)
    ref = None
    if not a.no_accuracy:
        import torch
        torch.set_num_threads(max(a.threads))
        ref = torch_reference(ckpt, prompt, a.new)
    ok = [k for k in a.files if builds[k].get("ok")]
    res = {"builds": builds, "times": {}, "tps": {}, "loops": {}, "acc": {}}
    # the 1.1B files do not all fit in memory at once: open them by pair
    groups = pair_groups(ok) if a.one_b else [ok]
    for t in a.threads:
        res["times"][t], res["tps"][t], res["loops"][t] = {}, {}, {}
        for group in groups:
            if not group:
                continue
            decs = {k: Decoder(builds[k]["path"], t, not a.no_spin) for k in group}
            if ref is not None and t == a.threads[0]:
                for k, d in decs.items():
                    res["acc"][k] = accuracy(d, cfg, prompt, *ref)
            times, tps, loops = measure_group(decs, cfg, a, prompt)
            for c, per in times.items():
                res["times"][t].setdefault(c, {}).update(per)
            res["tps"][t].update(tps)
            res["loops"][t].update(loops)
            del decs
            gc.collect()
        summary = ", ".join("%s %.2f ms" % (c, statistics.median(v["onnxc"]) * 1e3)
                            for c, v in res["times"][t].items() if "onnxc" in v)
        log("%s threads %d: onnxc %s" % (arch, t, summary))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    csv = lambda s: [x for x in s.split(",") if x]        # noqa: E731
    ints = lambda s: [int(x) for x in csv(s)]              # noqa: E731
    ap.add_argument("--arch", type=csv, default=None,
                    help="llama,qwen2,phi3 (default: all three; llama alone with --1b)")
    ap.add_argument("--1b", dest="one_b", action="store_true",
                    help="bench_1b.py's TinyLlama-1.1B shape instead of the small one")
    ap.add_argument("--layers", type=int, help="override the depth of the size chosen")
    ap.add_argument("--files", type=csv, default=list(FILES),
                    help="files to build and time (default all: %s)" % ",".join(FILES))
    ap.add_argument("--prompt", type=int, default=128, help="prompt tokens (default 128)")
    ap.add_argument("--batch", type=ints, default=[1, 4], help="decode batches (default 1,4)")
    ap.add_argument("--past", type=ints, default=[128, 2048],
                    help="decode cache lengths (default 128,2048)")
    ap.add_argument("--threads", type=ints, default=[1, 2],
                    help="intra-op threads (default 1,2)")
    ap.add_argument("--new", type=int, default=32, help="greedy tokens (default 32)")
    ap.add_argument("--rounds", type=int, default=9, help="timed rounds at most (default 9)")
    ap.add_argument("--sample-ms", type=float, default=40,
                    help="a round times a batch of runs lasting about MS (default 40)")
    ap.add_argument("--budget", type=float, default=10,
                    help="seconds of rounds a configuration, at least 5 rounds (default 10)")
    ap.add_argument("--greedy-reps", type=int, default=5,
                    help="greedy loops a file, interleaved among the files, the median taken "
                         "(default 5)")
    ap.add_argument("--no-spin", action="store_true",
                    help="intra-op threads do not spin while waiting (for a loaded machine)")
    ap.add_argument("--no-prefill", action="store_true")
    ap.add_argument("--no-decode", action="store_true")
    ap.add_argument("--no-greedy", action="store_true")
    ap.add_argument("--no-accuracy", action="store_true")
    ap.add_argument("--no-encoders", action="store_true", help="leave out BERT and DistilBERT")
    ap.add_argument("--encoders-only", action="store_true")
    ap.add_argument("--markdown", metavar="FILE", help="write the tables to FILE too")
    ap.add_argument("--keep", metavar="DIR",
                    help="keep checkpoints and files in DIR, and reuse them when there")
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC") or os.path.join(REPO, "build",
                                                                               "onnxc"))
    ap.add_argument("--timeout", type=int, default=3600, help="seconds a build (default 3600)")
    ap.add_argument("--build-child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.build_child:
        child_build(json.loads(a.build_child))
        return 0
    a.onnxc = os.path.abspath(a.onnxc)
    if os.path.isdir(a.onnxc):
        a.onnxc = os.path.join(a.onnxc, "onnxc")
    if not os.access(a.onnxc, os.X_OK):
        ap.error("no onnxc at %s (build it, or give --onnxc)" % a.onnxc)
    os.environ["ONNXC"] = a.onnxc
    for k, v in CHILD_ENV.items():
        os.environ.setdefault(k, v)
    bad = [f for f in a.files if f not in FILES + EXTRA_FILES]
    if bad:
        ap.error("unknown file %s (the files: %s)" % (",".join(bad), ",".join(FILES + EXTRA_FILES)))
    if "onnxc" not in a.files:
        a.files = ["onnxc"] + a.files        # the baseline of every ratio
    a.files = [f for f in FILES + EXTRA_FILES if f in a.files]
    a.arch = a.arch or (["llama"] if a.one_b else list(ARCHS))
    if any(x not in ARCHS for x in a.arch):
        ap.error("--arch takes %s" % ",".join(ARCHS))
    work = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="onnxc-bench-decode.")
    os.makedirs(work, exist_ok=True)
    load0, t0 = os.getloadavg()[0], time.time()
    res, enc = {}, {}
    try:
        if not a.encoders_only:
            for arch in a.arch:
                res[arch] = run_arch(arch, a, work)
        if not a.no_encoders:
            run_encoders(a, work, enc)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    lines = report(res, enc, a, load0, os.getloadavg()[0], time.time() - t0)
    print("\n".join(lines))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
