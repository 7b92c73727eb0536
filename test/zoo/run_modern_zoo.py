#!/usr/bin/env python3
"""The modern zoo: transformers, timm and torchvision models on torch 2.x.

Models of the torch 2.x era, built from small configurations with random
weights (seeded; nothing is downloaded): decoder LLMs, encoders,
encoder-decoders and speech and vision models of transformers, the main
families of timm, and every torchvision builder but the quantized ones
(those over LARGE_PARAMS parameters only with --large).  Each goes
through `onnxc.export` (torch.export under the bridge, `onnxc -O2`), runs
in ONNX Runtime (CPUExecutionProvider, one thread) and is compared with
PyTorch's eager outputs: max abs diff <= 1e-4 on float outputs, times the
largest output magnitude when that is above 1 (or twice PyTorch's own f32
error against f64 when larger); exact for integers and bools.  A detector's
detections whose scores are that close (or closer than twice PyTorch's own
f32 error on its scores, when that is wider) are put in one order, by label
and box, before the comparison.  The LLMs are
exported with a dynamic batch and sequence and run again at two other sizes.
With --peer the same goes through `torch.onnx.export(..., dynamo=True)` for
comparison (its result does not count).  Run it with the torch 2.x
environment's Python:

    ~/.cache/onnxc/venv-torch2/bin/python test/zoo/run_modern_zoo.py
        [--onnxc PATH] [-k PATTERN] [--list] [-j N] [--timeout SECONDS]
        [--peer] [--large] [--markdown FILE] [--failures FILE]

Each model runs in its own process (a crash or a timeout is that model's
failure).  A model listed in KNOWN_FAILURES, with a substring of the message
it fails with, counts as a skip while it fails so; any other failure counts
as failed, and a listed model that passes counts as passed and is reported
so the list can shrink.  A torchvision builder over the test's time budget
(LARGE_PARAMS) is a counted skip unless --large, and one that
torchvision.models.list_models() names but the zoo neither runs nor skips
with a reason is a failure.  Prints one row a model and, alone on the last
line, `N passed, N failed, N skipped`.  Exit status 1 when a model fails.
--failures FILE writes onnxc's failure messages grouped, with the models
that stop on each.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

TOLERANCE = 1e-4

# name -> a substring of the message the model fails with.  A model that
# starts failing otherwise is a new failure.
KNOWN_FAILURES = {
    # They convert; their keypoints and masks differ from PyTorch's (max
    # diff 46 and 0.9), as on the torch 1.13 lane (run_zoo.py's reason: two
    # near-tied detections swap, and each is decoded with a box size read in
    # Python, specialized to PyTorch's order); not yet checked row by row
    # on torch 2.x.  Over the budget: --large runs them.
    "tv_keypointrcnn_resnet50_fpn": "max diff",
    "tv_maskrcnn_resnet50_fpn_v2": "max diff",
}


# -- the models -------------------------------------------------------------------

VOCAB = 128
# The export's (batch, sequence) and the two other sizes a dynamic LLM runs at.
LLM_SIZE = (2, 7)
LLM_OTHER_SIZES = [(1, 5), (3, 12)]

# Decoder LLMs: name -> (model class, config class, config fields beyond
# the shared ones).
_LLM_COMMON = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                   max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                   eos_token_id=2)
# DeepSeek-V2 and V3: multi-head latent attention (low-rank q and kv), 4
# routed experts in groups, a dense first layer.
_DEEPSEEK = dict(num_key_value_heads=4, moe_intermediate_size=16, kv_lora_rank=16, q_lora_rank=16,
                 qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, n_routed_experts=4,
                 num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1)
LLMS = {
    "llama": ("LlamaForCausalLM", "LlamaConfig", {}),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", {}),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", {"head_dim": 8}),
    "mistral": ("MistralForCausalLM", "MistralConfig", {"sliding_window": 4}),
    "mixtral": ("MixtralForCausalLM", "MixtralConfig",
                {"num_local_experts": 4, "num_experts_per_tok": 2}),
    # Mixtures of experts like Mixtral's; Qwen2-MoE adds a shared expert
    # (gated by a sigmoid) beside the routed ones.
    "qwen2_moe": ("Qwen2MoeForCausalLM", "Qwen2MoeConfig",
                  {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                   "shared_expert_intermediate_size": 32}),
    "qwen3_moe": ("Qwen3MoeForCausalLM", "Qwen3MoeConfig",
                  {"head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2,
                   "moe_intermediate_size": 16, "norm_topk_prob": True}),
    "olmoe": ("OlmoeForCausalLM", "OlmoeConfig",
              {"num_experts": 4, "num_experts_per_tok": 2}),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", {}),
    "gemma": ("GemmaForCausalLM", "GemmaConfig", {"head_dim": 8}),
    "gemma2": ("Gemma2ForCausalLM", "Gemma2Config",
               {"head_dim": 8, "sliding_window": 4, "query_pre_attn_scalar": 8}),
    "gemma3_text": ("Gemma3ForCausalLM", "Gemma3TextConfig",
                    {"head_dim": 8, "sliding_window": 4, "query_pre_attn_scalar": 8,
                     "layer_types": ["sliding_attention", "full_attention"]}),
    "gpt2": ("GPT2LMHeadModel", "GPT2Config",
             {"_only": dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                            bos_token_id=1, eos_token_id=2)}),
    "gpt_neox": ("GPTNeoXForCausalLM", "GPTNeoXConfig",
                 {"_only": dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                num_hidden_layers=2, num_attention_heads=4,
                                max_position_embeddings=64, bos_token_id=1, eos_token_id=2)}),
    "gptj": ("GPTJForCausalLM", "GPTJConfig",
             {"_only": dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, rotary_dim=4,
                            n_positions=64, bos_token_id=1, eos_token_id=2)}),
    "opt": ("OPTForCausalLM", "OPTConfig",
            {"_only": dict(vocab_size=VOCAB, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                           num_attention_heads=4, max_position_embeddings=64,
                           word_embed_proj_dim=32, pad_token_id=1, bos_token_id=2,
                           eos_token_id=2)}),
    "bloom": ("BloomForCausalLM", "BloomConfig",
              {"_only": dict(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4,
                             pad_token_id=0, bos_token_id=1, eos_token_id=2)}),
    "gpt_bigcode": ("GPTBigCodeForCausalLM", "GPTBigCodeConfig",
                    {"_only": dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                   multi_query=True, bos_token_id=1, eos_token_id=2)}),
    "falcon": ("FalconForCausalLM", "FalconConfig",
               {"_only": dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=4, max_position_embeddings=64,
                              bos_token_id=1, eos_token_id=2)}),
    # Partial rotary, parallel blocks, biases, q/k norms, logit scales,
    # mixtures with biased or grouped routing, short convolutions.
    "phi": ("PhiForCausalLM", "PhiConfig", {}),
    "stablelm": ("StableLmForCausalLM", "StableLmConfig", {}),
    "starcoder2": ("Starcoder2ForCausalLM", "Starcoder2Config", {"sliding_window": 4}),
    "granite": ("GraniteForCausalLM", "GraniteConfig", {}),
    "cohere": ("CohereForCausalLM", "CohereConfig", {}),
    "cohere2": ("Cohere2ForCausalLM", "Cohere2Config",
                {"sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]}),
    "olmo2": ("Olmo2ForCausalLM", "Olmo2Config", {}),
    "smollm3": ("SmolLM3ForCausalLM", "SmolLM3Config", {"no_rope_layers": [1, 0]}),
    "gpt_oss": ("GptOssForCausalLM", "GptOssConfig",
                {"num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 4,
                 "layer_types": ["sliding_attention", "full_attention"]}),
    "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepseekV3Config",
                    _DEEPSEEK),
    "glm4_moe": ("Glm4MoeForCausalLM", "Glm4MoeConfig",
                 {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                  "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1}),
    "lfm2": ("Lfm2ForCausalLM", "Lfm2Config", {"layer_types": ["conv", "full_attention"]}),
    # Rotary embeddings as complex products (torch.polar, view_as_complex).
    "deepseek_v2": ("DeepseekV2ForCausalLM", "DeepseekV2Config",
                    _DEEPSEEK),
    "llama4_text": ("Llama4ForCausalLM", "Llama4TextConfig",
                    {"head_dim": 8, "num_local_experts": 4, "num_experts_per_tok": 1,
                     "intermediate_size_mlp": 64, "interleave_moe_layer_step": 1,
                     "attention_chunk_size": 4, "no_rope_layers": [1, 0], "use_qk_norm": True}),
}

# Encoders: name -> (model class, config class, config fields).  Inputs:
# input_ids and an attention mask whose second row is padded.
_ENC_COMMON = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                   num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
ENCODERS = {
    "bert": ("BertModel", "BertConfig", dict(_ENC_COMMON)),
    "roberta": ("RobertaModel", "RobertaConfig",
                dict(_ENC_COMMON, max_position_embeddings=72, pad_token_id=1)),
    "albert": ("AlbertModel", "AlbertConfig", dict(_ENC_COMMON, embedding_size=16)),
    "electra": ("ElectraModel", "ElectraConfig", dict(_ENC_COMMON, embedding_size=16)),
    "deberta_v2": ("DebertaV2Model", "DebertaV2Config",
                   dict(_ENC_COMMON, relative_attention=True, pos_att_type=["p2c", "c2p"],
                        position_buckets=16, max_relative_positions=-1)),
    "distilbert": ("DistilBertModel", "DistilBertConfig",
                   dict(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                        max_position_embeddings=64)),
    "xlnet": ("XLNetModel", "XLNetConfig",
              dict(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=4, d_inner=64)),
    "funnel": ("FunnelModel", "FunnelConfig",
               dict(vocab_size=VOCAB, d_model=32, n_head=4, d_head=8, d_inner=64,
                    block_sizes=[1, 1], num_decoder_layers=1)),
    "modernbert": ("ModernBertModel", "ModernBertConfig",
                   dict(_ENC_COMMON, global_attn_every_n_layers=2, local_attention=4,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                        sep_token_id=2)),
    "squeezebert": ("SqueezeBertModel", "SqueezeBertConfig",
                    dict(_ENC_COMMON, embedding_size=32, q_groups=2, k_groups=2, v_groups=2,
                         post_attention_groups=2, intermediate_groups=2, output_groups=2)),
}

HF_OTHERS = ["t5", "bart", "whisper", "wav2vec2", "hubert", "vit", "deit", "clip", "siglip",
             "swin", "convnext", "segformer", "detr", "mobilevit", "mobilenet_v2", "convnext_v2"]
HF_FAMILY = {"t5": "enc-dec", "bart": "enc-dec", "whisper": "enc-dec", "wav2vec2": "speech",
             "hubert": "speech"}

# timm: name -> (model name, input size, create_model arguments).
TIMM = {
    "timm_resnet18": ("resnet18", 64, {}),
    "timm_efficientnet_b0": ("efficientnet_b0", 64, {}),
    "timm_mobilenetv3_small_050": ("mobilenetv3_small_050", 64, {}),
    "timm_convnext_atto": ("convnext_atto", 64, {}),
    "timm_vit_tiny": ("vit_tiny_patch16_224", 64, {"img_size": 64}),
    "timm_deit_tiny": ("deit_tiny_patch16_224", 64, {"img_size": 64}),
    "timm_swin_tiny": ("swin_tiny_patch4_window7_224", 64, {"img_size": 64, "window_size": 2}),
    "timm_regnetx_002": ("regnetx_002", 64, {}),
    "timm_efficientvit_b0": ("efficientvit_b0", 64, {}),
    "timm_levit_128s": ("levit_128s", 64, {"img_size": 64}),
    "timm_mobilevitv2_050": ("mobilevitv2_050", 64, {}),
    "timm_ghostnet_100": ("ghostnet_100", 64, {}),
}

# torchvision: every builder of torchvision.models.list_models() but the
# quantized ones (torchvision.models.quantization: test/python/test_quantized.py
# quantizes two of them itself), name -> family.  The first 32 were the zoo's first rows and keep
# run_zoo.py's inputs; TV_INPUTS gives others a smaller input where the
# architecture allows one.  check_torchvision() fails the run when
# list_models() names a builder that is neither here nor in TV_SKIPS.
TORCHVISION = {
    "alexnet": "classification", "convnext_tiny": "classification",
    "densenet121": "classification", "efficientnet_b0": "classification",
    "efficientnet_v2_s": "classification", "googlenet": "classification",
    "inception_v3": "classification", "mnasnet0_5": "classification",
    "mobilenet_v2": "classification", "mobilenet_v3_small": "classification",
    "regnet_x_400mf": "classification", "regnet_y_400mf": "classification",
    "resnet18": "classification", "resnet50": "classification",
    "resnext50_32x4d": "classification", "shufflenet_v2_x0_5": "classification",
    "squeezenet1_1": "classification", "swin_t": "classification",
    "maxvit_t": "classification",
    "deeplabv3_mobilenet_v3_large": "segmentation", "fcn_resnet50": "segmentation",
    "lraspp_mobilenet_v3_large": "segmentation",
    "r3d_18": "video", "r2plus1d_18": "video", "mc3_18": "video",
    "ssdlite320_mobilenet_v3_large": "detection",
    "fasterrcnn_mobilenet_v3_large_320_fpn": "detection",
    "fasterrcnn_resnet50_fpn": "detection", "retinanet_resnet50_fpn": "detection",
    "fcos_resnet50_fpn": "detection", "ssd300_vgg16": "detection",
    "maskrcnn_resnet50_fpn": "detection",
}
TORCHVISION.update({n: "classification" for n in """
    convnext_small convnext_base convnext_large densenet161 densenet169 densenet201
    efficientnet_b1 efficientnet_b2 efficientnet_b3 efficientnet_b4 efficientnet_b5
    efficientnet_b6 efficientnet_b7 efficientnet_v2_m efficientnet_v2_l
    mnasnet0_75 mnasnet1_0 mnasnet1_3 mobilenet_v3_large
    regnet_x_800mf regnet_x_1_6gf regnet_x_3_2gf regnet_x_8gf regnet_x_16gf regnet_x_32gf
    regnet_y_800mf regnet_y_1_6gf regnet_y_3_2gf regnet_y_8gf regnet_y_16gf regnet_y_32gf
    regnet_y_128gf resnet34 resnet101 resnet152 resnext101_32x8d resnext101_64x4d
    wide_resnet50_2 wide_resnet101_2 shufflenet_v2_x1_0 shufflenet_v2_x1_5
    shufflenet_v2_x2_0 squeezenet1_0 swin_s swin_b swin_v2_t swin_v2_s swin_v2_b
    vgg11 vgg11_bn vgg13 vgg13_bn vgg16 vgg16_bn vgg19 vgg19_bn
    vit_b_16 vit_b_32 vit_l_16 vit_l_32 vit_h_14""".split()})
TORCHVISION.update({n: "segmentation" for n in
                    "deeplabv3_resnet50 deeplabv3_resnet101 fcn_resnet101".split()})
TORCHVISION.update({n: "video" for n in
                    "mvit_v1_b mvit_v2_s s3d swin3d_t swin3d_s swin3d_b".split()})
TORCHVISION.update({n: "detection" for n in """
    fasterrcnn_mobilenet_v3_large_fpn fasterrcnn_resnet50_fpn_v2 keypointrcnn_resnet50_fpn
    maskrcnn_resnet50_fpn_v2 retinanet_resnet50_fpn_v2""".split()})
TORCHVISION.update({"raft_small": "optical_flow", "raft_large": "optical_flow"})

# name -> (builder arguments, input shape) where run_zoo.py's input is not
# the smallest the architecture takes: the ViTs at a 32-pixel image (28 for
# patches of 14: a 2x2 grid), the other Swins at 64 (windows are padded).
TV_INPUTS = {n: ({"image_size": 28 if n.endswith("_14") else 32},
                 (1, 3) + ((28, 28) if n.endswith("_14") else (32, 32)))
             for n in TORCHVISION if n.startswith("vit_")}
TV_INPUTS.update({n: ({}, (1, 3, 64, 64))
                  for n in ("swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b")})

# RAFT's iterations in the zoo (the builder's default is 12; each is the same
# update block again) and its images: 128 pixels, the least its correlation
# pyramid takes (16x16 feature maps).
RAFT_UPDATES = 3
RAFT_SIZE = 128

# Builders over the test's time budget run only with --large: those above
# LARGE_PARAMS parameters (torchvision's weights metadata), but AlexNet (61
# M parameters in three dense layers, quick to run, a row from the start).
# With the limit at 45 M the builders the zoo gained add about as much time
# to the default run as 60% of its first 79 rows.
LARGE_PARAMS = 45e6
BUDGET_KEEP = {"alexnet"}

# name -> why the zoo does not run it (a counted skip).
TV_SKIPS = {}


def tv_params(name):
    import torchvision.models as M
    weights = list(M.get_model_weights(name))
    return weights[0].meta.get("num_params", 0) if weights else 0


def tv_budget_skips():
    """{name: reason} of the builders --large alone runs."""
    out = {}
    for n in TORCHVISION:
        p = tv_params(n)
        if p > LARGE_PARAMS and n not in BUDGET_KEEP:
            out[n] = "over the test budget, %.1f M parameters; --large runs it" % (p / 1e6)
    return out


def check_torchvision():
    """[(name, message)] for each builder of torchvision.models.list_models()
    (but the quantized ones) that is neither a row nor in TV_SKIPS, and each
    row list_models() does not know."""
    import torchvision.models as M
    quantized = set(M.list_models(module=M.quantization))
    known = set(M.list_models()) - quantized
    out = [(n, "torchvision builder %s is neither a row of the zoo nor a skip with a reason "
               "(add it to TORCHVISION or TV_SKIPS)" % n)
           for n in sorted(known - set(TORCHVISION) - set(TV_SKIPS))]
    out += [(n, "torchvision has no builder %s" % n)
            for n in sorted((set(TORCHVISION) | set(TV_SKIPS)) - known)]
    return out


def all_models():
    """[(name, family, spec)]; spec is JSON for the child."""
    rows = [(n, "llm", ["hf", n]) for n in LLMS]
    rows += [(n, "encoder", ["hf", n]) for n in ENCODERS]
    rows += [(n, HF_FAMILY.get(n, "vision"), ["hf", n]) for n in HF_OTHERS]
    rows += [(n, "timm", ["timm", n]) for n in TIMM]
    rows += [("tv_" + n, "tv-" + f, ["torchvision", f, n]) for n, f in TORCHVISION.items()]
    return rows


class Case:
    """A built model: model(*args, **kwargs).  dynamic: the LLMs'
    dynamic_shapes (names as strings); make(batch, seq): (args, kwargs) at
    another size."""

    def __init__(self, model, args, kwargs=None, dynamic=None, make=None):
        self.model, self.args, self.kwargs = model, tuple(args), dict(kwargs or {})
        self.dynamic, self.make = dynamic, make


def _gen(seed=2):
    import torch
    return torch.Generator().manual_seed(seed)


def _tokens(batch, seq, g):
    import torch
    return torch.randint(3, VOCAB, (batch, seq), generator=g)


def _hf(cls_name, cfg_name, fields):
    import torch
    import transformers as T
    torch.manual_seed(0)
    config = getattr(T, cfg_name)(**fields)
    config.use_cache = False
    model = getattr(T, cls_name)(config).eval()
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    import models as e2e_models
    return e2e_models._lively(model)


def _build_llm(name):
    cls, cfg, extra = LLMS[name]
    fields = dict(extra["_only"]) if "_only" in extra else dict(_LLM_COMMON, **extra)
    model = _hf(cls, cfg, fields)
    g = _gen()

    def make(batch, seq):
        return (_tokens(batch, seq, g),), {}
    return Case(model, make(*LLM_SIZE)[0], dynamic={"input_ids": {0: "batch", 1: "seq"}},
                make=make)


def _build_encoder(name):
    import torch
    cls, cfg, fields = ENCODERS[name]
    model = _hf(cls, cfg, fields)
    g = _gen()
    ids = _tokens(2, 8, g)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    return Case(model, (ids, mask))


def _build_hf_other(name):
    import torch
    g = _gen()
    vision = dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, intermediate_size=64)
    text = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, max_position_embeddings=16)
    pixels = lambda s: torch.randn(1, 3, s, s, generator=g)    # noqa: E731
    if name == "t5":
        m = _hf("T5ForConditionalGeneration", "T5Config",
                dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                     num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                     decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))
    elif name == "bart":
        m = _hf("BartForConditionalGeneration", "BartConfig",
                dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                     decoder_ffn_dim=64, max_position_embeddings=64))
    if name in ("t5", "bart"):
        ids = _tokens(2, 8, g)
        mask = torch.ones(2, 8, dtype=torch.long)
        mask[1, 6:] = 0
        return Case(m, (), {"input_ids": ids, "attention_mask": mask,
                            "decoder_input_ids": _tokens(2, 5, g)})
    if name == "whisper":
        m = _hf("WhisperForConditionalGeneration", "WhisperConfig",
                dict(vocab_size=VOCAB, num_mel_bins=16, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=4, decoder_attention_heads=4, d_model=32,
                     encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=32,
                     max_target_positions=32, pad_token_id=0, bos_token_id=1,
                     eos_token_id=2, decoder_start_token_id=1))
        return Case(m, (), {"input_features": torch.randn(1, 16, 64, generator=g),
                            "decoder_input_ids": _tokens(1, 5, g)})
    if name in ("wav2vec2", "hubert"):
        m = _hf("Wav2Vec2Model" if name == "wav2vec2" else "HubertModel",
                "Wav2Vec2Config" if name == "wav2vec2" else "HubertConfig",
                dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                     conv_kernel=(10, 3, 2), num_conv_pos_embeddings=16,
                     num_conv_pos_embedding_groups=4, vocab_size=32))
        return Case(m, (torch.randn(1, 1600, generator=g),))
    if name in ("vit", "deit"):
        m = _hf("ViTModel" if name == "vit" else "DeiTModel",
                "ViTConfig" if name == "vit" else "DeiTConfig", vision)
        return Case(m, (pixels(32),))
    if name in ("clip", "siglip"):
        pre = "CLIP" if name == "clip" else "Siglip"
        m = _hf(pre + "Model", pre + "Config",
                dict(text_config=dict(text), vision_config=dict(vision),
                     **({"projection_dim": 16} if name == "clip" else {})))
        kw = {"input_ids": _tokens(2, 16 if name == "siglip" else 6, g),
              "pixel_values": torch.randn(2, 3, 32, 32, generator=g)}
        if name == "clip":
            kw["attention_mask"] = torch.ones(2, 6, dtype=torch.long)
            kw["attention_mask"][1, 4:] = 0
        return Case(m, (), kw)
    if name == "swin":
        m = _hf("SwinModel", "SwinConfig",
                dict(image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                     window_size=4))
        return Case(m, (pixels(32),))
    if name == "convnext":
        m = _hf("ConvNextModel", "ConvNextConfig",
                dict(hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1], image_size=32))
        return Case(m, (pixels(32),))
    if name == "segformer":
        m = _hf("SegformerForSemanticSegmentation", "SegformerConfig",
                dict(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                     patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2],
                     mlp_ratios=[2, 2], decoder_hidden_size=32, num_labels=4))
        return Case(m, (pixels(64),))
    if name == "detr":
        import transformers as T
        backbone = T.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 32, 64],
                                  depths=[1, 1, 1, 1], layer_type="basic",
                                  out_features=["stage4"])
        m = _hf("DetrForObjectDetection", "DetrConfig",
                dict(use_timm_backbone=False, use_pretrained_backbone=False,
                     backbone_config=backbone, d_model=32, encoder_layers=1, decoder_layers=1,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                     decoder_ffn_dim=64, num_queries=10, num_labels=5))
        return Case(m, (pixels(64),))
    if name == "mobilevit":
        m = _hf("MobileViTModel", "MobileViTConfig",
                dict(image_size=64, patch_size=2, hidden_sizes=[16, 24, 32],
                     neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_attention_heads=2,
                     expand_ratio=2.0))
        return Case(m, (pixels(64),))
    if name == "mobilenet_v2":
        m = _hf("MobileNetV2ForImageClassification", "MobileNetV2Config",
                dict(image_size=32, depth_multiplier=0.35, num_labels=8))
        return Case(m, (pixels(32),))
    if name == "convnext_v2":
        m = _hf("ConvNextV2Model", "ConvNextV2Config",
                dict(hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1], image_size=32))
        return Case(m, (pixels(32),))
    raise ValueError("unknown model %s" % name)


def _build_timm(name):
    import torch
    import timm
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    import models as e2e_models
    import run_zoo
    arch, size, kw = TIMM[name]
    torch.manual_seed(0)
    model = timm.create_model(arch, pretrained=False, num_classes=16, **kw).eval()
    e2e_models._lively(model)
    g = _gen()
    run_zoo._calibrate_batch_norm(model, (torch.randn(8, 3, size, size, generator=g),))
    return Case(model, (torch.randn(1, 3, size, size, generator=g),))


def _build_torchvision(family, name):
    import torch
    import torchvision.models as M
    import models as e2e_models
    import run_zoo
    if family == "optical_flow":
        return _build_raft(name)
    if name not in TV_INPUTS:
        model, args = run_zoo.build(("torchvision", family, name))
        return Case(model, args)
    kw, shape = TV_INPUTS[name]
    torch.manual_seed(0)
    model = e2e_models._lively(M.get_model(name, weights=None, **kw).eval())
    g = _gen()
    run_zoo._calibrate_batch_norm(model, (torch.randn((8,) + shape[1:], generator=g),))
    return Case(model, (torch.randn(shape, generator=g),))


def _build_raft(name):
    """RAFT on two images, RAFT_UPDATES iterations (a forward argument the
    wrapper fixes); outputs: the flow after each."""
    import torch
    import torchvision.models as M
    import models as e2e_models
    import run_zoo

    class Raft(torch.nn.Module):
        def __init__(self, raft):
            super().__init__()
            self.raft = raft

        def forward(self, image1, image2):
            return self.raft(image1, image2, num_flow_updates=RAFT_UPDATES)

    torch.manual_seed(0)
    model = Raft(e2e_models._lively(M.get_model(name, weights=None).eval())).eval()
    g = _gen()
    shape = (1, 3, RAFT_SIZE, RAFT_SIZE)
    run_zoo._calibrate_batch_norm(model, tuple(torch.rand((4,) + shape[1:], generator=g) * 2 - 1
                                               for _ in range(2)))
    return Case(model, tuple(torch.rand(shape, generator=g) * 2 - 1 for _ in range(2)))


def build(spec):
    if spec[0] == "hf":
        name = spec[1]
        if name in LLMS:
            return _build_llm(name)
        if name in ENCODERS:
            return _build_encoder(name)
        return _build_hf_other(name)
    if spec[0] == "timm":
        return _build_timm(spec[1])
    if spec[0] == "torchvision":
        return _build_torchvision(spec[1], spec[2])
    raise ValueError("unknown spec %r" % (spec,))


# -- one model, in a child process ------------------------------------------------

class Mismatch(Exception):
    pass


def flatten_outputs(value, out=None):
    """The tensors of a model's output, in order (a ModelOutput is a dict)."""
    import torch
    out = [] if out is None else out
    if isinstance(value, torch.Tensor):
        out.append(value.detach().numpy())
    elif isinstance(value, dict):
        for v in value.values():
            flatten_outputs(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            flatten_outputs(v, out)
    elif value is not None and not isinstance(value, (int, float, bool, str)):
        raise Mismatch("model output of type %s is not a tensor" % type(value).__name__)
    return out


def flatten_inputs(model, args, kwargs):
    """[(leaf name, numpy array)] in the bridge's order of the inputs."""
    import fxir_export
    leaves = []
    for name, value, _ in fxir_export._bind_inputs(model, args, kwargs):
        fxir_export._flatten(name, value, leaves)
    return [(n, t.detach().numpy()) for n, t in leaves]


def eager(model, args, kwargs):
    import torch
    with torch.no_grad():
        return flatten_outputs(model(*args, **kwargs))


def ort_session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_run(sess, leaves):
    """Runs sess on the model's flattened inputs, by name where the graph's
    inputs are named like them, else in order."""
    want = [i.name for i in sess.get_inputs()]
    named = dict(leaves)
    if all(w in named for w in want):
        feeds = {w: named[w] for w in want}
    else:
        if len(want) > len(leaves):
            raise Mismatch("the ONNX model has %d inputs, the model %d" % (len(want), len(leaves)))
        feeds = {w: v for w, (_, v) in zip(want, leaves)}
    return sess.run(None, feeds)


def compare(ref, got):
    """Max abs diff over float outputs; Mismatch on shapes, counts, NaNs or
    integer values."""
    import numpy as np
    if len(got) != len(ref):
        raise Mismatch("the ONNX model has %d outputs, PyTorch %d" % (len(got), len(ref)))
    worst = 0.0
    for i, (r, g) in enumerate(zip(ref, got)):
        g = np.asarray(g)
        if tuple(r.shape) != tuple(g.shape):
            raise Mismatch("output %d: shape %s, expected %s" % (i, tuple(g.shape), tuple(r.shape)))
        if r.dtype.kind == "f":
            if not np.array_equal(np.isnan(r), np.isnan(g)):
                raise Mismatch("output %d: NaNs differ" % i)
            ok = ~np.isnan(r)
            worst = max(worst, float(np.max(np.abs(r[ok].astype(np.float64)
                                                   - g[ok].astype(np.float64)), initial=0.0)))
        elif not np.array_equal(r, g.astype(r.dtype)):
            raise Mismatch("output %d: %s values differ" % (i, r.dtype))
    return worst


def tolerance(ref):
    scale = max([float(abs(o).max()) for o in ref if o.dtype.kind == "f" and o.size] + [1.0])
    return TOLERANCE * scale


def f64_outputs(spec, args, kwargs):
    """PyTorch's outputs of the model run in f64, or None when it does not
    run so."""
    import torch

    def dbl(v):
        if isinstance(v, (list, tuple)):
            return type(v)(dbl(x) for x in v)
        return v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
    try:
        model = build(spec).model.double()
        return eager(model, tuple(dbl(a) for a in args), {k: dbl(v) for k, v in kwargs.items()})
    except Exception:
        return None


def order_ties(want, got, tie=0.0):
    """A detector's outputs, PyTorch's and ONNX Runtime's, with detections
    of equal scores (within the tolerance, or tie) in one order (run_zoo.py's)."""
    import run_zoo
    return run_zoo._order_ties(want, tie=tie), run_zoo._order_ties(got, like=want, tie=tie)


def score_drift(spec, args, kwargs, ref):
    """Max |f32 - f64| of a detector's sorted scores (its first 1-D float
    output) as PyTorch computes them, or None (no f64 run, no scores, or
    not as many)."""
    import numpy as np
    ref64 = f64_outputs(spec, args, kwargs)
    k = next((i for i, o in enumerate(ref) if o.ndim == 1 and o.dtype.kind == "f"), None)
    if ref64 is None or k is None or len(ref64) != len(ref) or ref64[k].shape != ref[k].shape:
        return None
    s32 = np.sort(ref[k].astype(np.float64))
    return float(np.max(np.abs(s32 - np.sort(ref64[k])), initial=0.0))


def f64_drift(spec, args, kwargs, ref):
    """Max |f32 - f64| of PyTorch's own outputs, or None when the model does
    not run in f64."""
    import numpy as np
    ref64 = f64_outputs(spec, args, kwargs)
    if ref64 is None:
        return None
    worst = 0.0
    for a, b in zip(ref, ref64):
        if a.dtype.kind == "f" and a.size and a.shape == b.shape:
            worst = max(worst, float(np.max(np.abs(a.astype(np.float64) - b))))
    return worst


def node_count(path):
    import onnx
    return len(onnx.load(path, load_external_data=False).graph.node)


def short_message(e):
    """The line of an exception that says what stopped the conversion."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()
    # torch.onnx.export's errors: the exception under its summary heading.
    m = re.search(r"## Exception summary\s*\n\s*(\S[^\n]*)", text)
    if m:
        return re.sub(r"<class '(?:[\w.]*\.)?(\w+)'>", r"\1", m.group(1)).strip()[:240]
    m = re.search(r"no decomposition for (\S+)", text)
    if m:
        return "no decomposition for %s" % m.group(1)
    for line in text.splitlines():
        m = re.match(r"\S+?:\d+:\d+: error: (.*)", line.strip())
        if m:
            return m.group(1)[:240]
    for line in text.splitlines():
        if re.search(r"\berror\b", line, re.I) and not line.startswith("onnxc exited"):
            return line.strip()[:240]
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    first = lines[0] if lines else ""
    return ("%s: %s" % (type(e).__name__, first) if type(e).__name__ != "ConversionError"
            else first)[:240]


def check_file(r, path, case, ref, spec):
    """Runs the ONNX file at the example and, for a dynamic model, at the
    other sizes; fills r["detail"], r["diff"] and r["ok"]."""
    r["stage"] = "ort"
    sess = ort_session(path)
    runs = [(case.args, case.kwargs, ref)]
    if case.dynamic:
        for b, s in LLM_OTHER_SIZES:
            a, kw = case.make(b, s)
            runs.append((a, kw, eager(case.model, a, kw)))
    worst, tol_all, note = 0.0, True, ""
    for i, (a, kw, want) in enumerate(runs):
        r["stage"] = "compare" if i == 0 else "sizes"
        got = ort_run(sess, flatten_inputs(case.model, a, kw))
        detection = spec[0] == "torchvision" and spec[1] == "detection"
        try:
            if detection:
                want, got = order_ties(want, got)
            d = compare(want, got)
        except Mismatch as e:
            if i:
                shape = "x".join(map(str, a[0].shape))
                raise Mismatch("at %s: %s" % (shape, e))
            # Two detections whose scores are closer than PyTorch's own f32
            # error come in either order: ties are then scores within twice
            # that error (measured against the model run in f64).
            drift = score_drift(spec, a, kw, want) if detection else None
            tie = 2 * drift if drift is not None else 0.0
            if tie <= TOLERANCE:
                raise
            want, got = order_ties(want, got, tie)
            try:
                d = compare(want, got)
            except Mismatch:
                raise e
            note = " (ties within %.2g: twice PyTorch's f32 error on the scores)" % tie
        tol = tolerance(want)
        # Not for detectors: their f64 run may keep or order other
        # detections, which is no measure of f32 error.
        if d > tol and i == 0 and not detection:
            drift = f64_drift(spec, a, kw, want)
            if drift is not None and 2 * drift > tol:
                tol = 2 * drift
                note = " (tolerance %.2g: twice PyTorch's f32 error against f64)" % tol
        elif tol > TOLERANCE and not note:
            note = " (tolerance %.2g)" % tol
        worst = max(worst, d)
        tol_all = tol_all and d <= tol
    r["diff"] = worst
    r["detail"] = "max diff %.2g" % worst + note + (
        " at %d sizes" % len(runs) if len(runs) > 1 else "")
    r["ok"] = tol_all


def run_onnxc(spec, case, ref, onnxc_bin, workdir, r):
    import onnxc
    os.environ["ONNXC"] = onnxc_bin
    r["stage"] = "export"
    path = os.path.join(workdir, "onnxc.onnx")
    try:
        onnxc.export(case.model, case.args, path, kwargs=case.kwargs or None,
                     dynamic_shapes=case.dynamic)
    except onnxc.ConversionError as e:
        r["stage"] = "bridge" if e.returncode is None else "onnxc"
        raise
    r["nodes"] = node_count(path)
    check_file(r, path, case, ref, spec)


def run_peer(spec, case, ref, workdir, r):
    import torch
    r["stage"] = "export"
    path = os.path.join(workdir, "peer.onnx")
    dyn = None
    if case.dynamic:
        from torch.export import Dim
        dims = {}
        dyn = {k: {d: dims.setdefault(n, Dim(n)) for d, n in v.items()}
               for k, v in case.dynamic.items()}
    torch.onnx.export(case.model, case.args, path, kwargs=case.kwargs or None, dynamo=True,
                      dynamic_shapes=dyn, verbose=False)
    r["nodes"] = node_count(path)
    check_file(r, path, case, ref, spec)


def guarded(fn, r, *args):
    try:
        fn(*args, r)
    except Exception as e:
        r["ok"] = False
        r["detail"] = short_message(e)


def child(spec, onnxc_bin, peer):
    import shutil
    sys.path.insert(0, os.path.join(REPO, "utils"))
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
    sys.path.insert(0, HERE)
    workdir = tempfile.mkdtemp(prefix="onnxc-modern-zoo.")
    res = {"stage": "build", "ok": False, "detail": "", "nodes": None, "diff": None}
    out = {"onnxc": res}
    try:
        import torch
        torch.set_num_threads(1)
        try:
            case = build(spec)
            res["stage"] = "reference"
            ref = eager(case.model, case.args, case.kwargs)
            if not ref:
                raise Mismatch("the model has no tensor output")
            floats = [float(abs(o).max()) for o in ref if o.dtype.kind == "f" and o.size]
            if floats and max(floats) < 1e-3:
                raise Mismatch("the reference output is near zero (max |y| = %.2g): the "
                               "comparison would not test the model" % max(floats))
        except Exception as e:
            res["detail"] = short_message(e)
            return out
        guarded(run_onnxc, res, spec, case, ref, onnxc_bin, workdir)
        if peer:
            out["peer"] = p = {"stage": "build", "ok": False, "detail": "", "nodes": None,
                               "diff": None}
            guarded(run_peer, p, spec, case, ref, workdir)
        return out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        print("ZOO-RESULT " + json.dumps(out), flush=True)


# -- the parent ---------------------------------------------------------------------

def group_failures(results):
    """{message: [model, ...]} of onnxc's failures, the message without the
    numbers that differ between models."""
    groups = {}
    for name, r in results:
        if r["ok"]:
            continue
        key = "%s: %s" % (r["stage"], r["detail"])
        key = re.sub(r"max diff \S+.*", "max diff above the tolerance", key)
        key = re.sub(r"shape \([^)]*\), expected \([^)]*\)", "shape differs", key)
        groups.setdefault(key, []).append(name)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def fmt_result(r):
    if r is None:
        return "-"
    if r["ok"]:
        return "pass"
    return "%s: %s" % (r["stage"], r["detail"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC_BUILD",
                                                      os.path.join(REPO, "build", "onnxc")))
    ap.add_argument("-k", dest="pattern", action="append",
                    help="only models whose name or family contains PATTERN or matches it "
                         "as a glob (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("-j", dest="jobs", type=int, default=1, help="models run at once (default 1)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds a model (default 600)")
    ap.add_argument("--large", action="store_true",
                    help="also run the torchvision builders over LARGE_PARAMS parameters")
    ap.add_argument("--peer", action="store_true",
                    help="also export with torch.onnx.export(dynamo=True) and compare")
    ap.add_argument("--markdown", help="also write the table as Markdown to FILE")
    ap.add_argument("--failures", help="write onnxc's failure messages, grouped, to FILE")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()

    onnxc_bin = os.path.abspath(a.onnxc)
    if os.path.isdir(onnxc_bin):
        onnxc_bin = os.path.join(onnxc_bin, "onnxc")
    if a.child:
        child(json.loads(a.child), onnxc_bin, a.peer)
        return 0

    rows = [(n, f, s) for n, f, s in all_models()
            if not a.pattern or any(p in n or p == f or fnmatch.fnmatch(n, p) for p in a.pattern)]
    # Rows not run: [(name, family, status, reason)], counted.
    budget = {} if a.large else tv_budget_skips()
    unrun = [(n, f, "skip (budget)", budget[s[2]]) for n, f, s in rows
             if s[0] == "torchvision" and s[2] in budget]
    unrun += [("tv_" + n, "tv-" + TORCHVISION.get(n, "?"), "skip", TV_SKIPS[n])
              for n in TV_SKIPS if not a.pattern or any(p in "tv_" + n for p in a.pattern)]
    if not a.pattern:
        unrun += [("tv_" + n, "tv-?", "FAIL", msg) for n, msg in check_torchvision()]
    rows = [r for r in rows if not (r[2][0] == "torchvision" and r[2][2] in budget)]
    if a.list:
        for n, f, _ in rows:
            print("%-36s %s" % (n, f))
        for n, f, status, why in unrun:
            print("%-36s %-18s %s: %s" % (n, f, status, why))
        return 0
    if not os.access(onnxc_bin, os.X_OK):
        print("run_modern_zoo: no onnxc at %s (build it, or give --onnxc)" % onnxc_bin,
              file=sys.stderr)
        return 2

    def run(spec):
        t0 = time.time()
        cmd = [sys.executable, os.path.abspath(__file__), "--onnxc", onnxc_bin,
               "--child", json.dumps(spec)] + (["--peer"] if a.peer else [])
        env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", TRANSFORMERS_VERBOSITY="error",
                   TOKENIZERS_PARALLELISM="false")
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
            lines = [l for l in p.stdout.splitlines() if l.startswith("ZOO-RESULT ")]
            if lines:
                out = json.loads(lines[-1][len("ZOO-RESULT "):])
            else:
                tail = (p.stderr or "").strip().splitlines()
                out = {"onnxc": {"stage": "?", "ok": False, "nodes": None, "diff": None,
                                 "detail": "exit %d: %s" % (p.returncode,
                                                            tail[-1][:200] if tail else "")}}
        except subprocess.TimeoutExpired:
            out = {"onnxc": {"stage": "?", "ok": False, "nodes": None, "diff": None,
                             "detail": "timed out after %ds" % a.timeout}}
        return out, time.time() - t0

    counts = {"pass": 0, "fail": 0, "skip": 0, "budget": 0}
    peer_pass = 0
    table, results = [], []
    t_start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = [pool.submit(run, spec) for _, _, spec in rows]
        for (name, family, spec), fut in zip(rows, futures):
            out, secs = fut.result()
            r, p = out["onnxc"], out.get("peer")
            if a.peer and p is None:
                p = {"stage": r["stage"], "ok": False, "detail": "not reached", "nodes": None,
                     "diff": None}
            known = KNOWN_FAILURES.get(name)
            if r["ok"]:
                status = "pass" + (" (listed as failing: remove it from KNOWN_FAILURES)"
                                   if known else "")
                counts["pass"] += 1
            elif known and known in r["detail"]:
                status = "skip (known)"
                counts["skip"] += 1
            else:
                status = "FAIL"
                counts["fail"] += 1
            peer_pass += bool(p and p["ok"])
            results.append((name, r))
            both = [r, p] if a.peer else [r]
            nodes = " / ".join("-" if x["nodes"] is None else str(x["nodes"]) for x in both)
            diff = " / ".join("-" if x["diff"] is None else "%.2g" % x["diff"] for x in both)
            table.append((name, family, fmt_result(r), fmt_result(p), nodes, diff,
                          "%.0fs" % secs, status))
            print("%-32s %-16s %s%s  [%s, %.0fs]" % (
                name, family, fmt_result(r), "  | peer: " + fmt_result(p) if a.peer else "",
                status, secs), file=sys.stderr, flush=True)
    for name, family, status, why in unrun:
        counts["fail" if status == "FAIL" else "budget" if status == "skip (budget)"
               else "skip"] += 1
        table.append((name, family, why, "-", "-", "-", "-", status))
        print("%-32s %-16s %s  [%s]" % (name, family, why, status), file=sys.stderr, flush=True)
    wall = time.time() - t_start
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime

    head = ("model", "family", "onnxc", "peer (torch.onnx dynamo)", "nodes onnxc / peer",
            "max diff onnxc / peer", "time", "result")
    if not a.peer:
        keep = [0, 1, 2, 4, 5, 6, 7]
        head = ("model", "family", "onnxc", "-", "nodes", "max diff", "time", "result")
        head = tuple(head[i] for i in keep)
        table = [tuple(t[i] for i in keep) for t in table]
    w = [min(60, max(len(head[i]), *(len(t[i]) for t in table))) if table else len(head[i])
         for i in range(len(head))]
    fmt = "  ".join("%%-%ds" % x for x in w)
    print(fmt % head)
    print(fmt % tuple("-" * x for x in w))
    for t in table:
        print((fmt % tuple(x if len(x) <= 60 else x[:57] + "..." for x in t)).rstrip())
    total = len(table)
    summary = "onnxc: %d passed, %d failed, %d skipped (known), %d skipped (budget) of %d" % (
        counts["pass"], counts["fail"], counts["skip"], counts["budget"], total)
    if a.peer:
        summary += "; torch.onnx.export(dynamo=True): %d passed, %d failed of %d" % (
            peer_pass, total - counts["budget"] - peer_pass, total - counts["budget"])
    summary += "; wall time %.0fs at -j%d, CPU time %.0fs" % (wall, a.jobs, cpu)
    print(summary)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
            for t in table:
                f.write("| " + " | ".join(x.replace("|", "\\|") for x in t) + " |\n")
            f.write("\n| | passed | failed | skipped (known) | skipped (budget) |\n"
                    "|---|---|---|---|---|\n")
            f.write("| onnxc | %d | %d | %d | %d |\n" % (counts["pass"], counts["fail"],
                                                      counts["skip"], counts["budget"]))
            if a.peer:
                ran = total - counts["budget"]
                f.write("| torch.onnx.export(dynamo=True) | %d | %d | - | %d |\n"
                        % (peer_pass, ran - peer_pass, counts["budget"]))
            f.write("\n%d models; wall time %.0f s at -j%d, CPU time %.0f s.\n"
                    % (total, wall, a.jobs, cpu))
    if a.failures:
        with open(a.failures, "w") as f:
            f.write("# onnxc's failures in the modern zoo (test/zoo/run_modern_zoo.py), "
                    "grouped by message; %s\n" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
            f.write("# %s\n\n" % summary)
            for msg, names in group_failures(results):
                f.write("%s\n    %d: %s\n" % (msg, len(names), ", ".join(names)))
    sys.stderr.flush()
    print("%d passed, %d failed, %d skipped" % (counts["pass"], counts["fail"],
                                                counts["skip"] + counts["budget"]), flush=True)
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
