"""Greedy text generation in ONNX Runtime with a decoder exported by onnxc.

    python examples/generate.py [OUT_DIR]

Builds a small Llama-architecture model from a config (random weights,
nothing downloaded), saves it as a checkpoint directory, exports it with
onnxc.export_for_generation, then generates 16 tokens for a left-padded
batch of three prompts with nothing but onnxruntime and numpy, and checks
them against transformers' generate().
"""

import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort
import torch
import transformers

import onnxc


def greedy(session, input_ids, attention_mask, max_new_tokens):
    """Greedy decoding with onnxc's decoder-with-past file."""
    inputs = {i.name: i for i in session.get_inputs()}
    batch = input_ids.shape[0]
    # The prefill: every layer's past is empty (length 0 on dim 2).
    past = {name: np.zeros([batch, i.shape[1], 0, i.shape[3]], np.float32)
            for name, i in inputs.items() if name.startswith("past_key_values.")}
    ids, mask, new = input_ids, attention_mask, []
    for _ in range(max_new_tokens):
        feed = dict(past, input_ids=ids, attention_mask=mask)
        if "position_ids" in inputs:
            # positions count the real tokens; pad positions get 1
            pos = np.cumsum(mask, axis=1) - 1
            feed["position_ids"] = np.where(mask == 0, 1, pos)[:, -ids.shape[1]:]
        outputs = session.run(None, feed)
        names = [o.name for o in session.get_outputs()]
        result = dict(zip(names, outputs))
        token = result["logits"][:, -1, :].argmax(-1)
        new.append(token)
        # present.N.key becomes next step's past_key_values.N.key
        past = {n.replace("present.", "past_key_values.", 1): v
                for n, v in result.items() if n.startswith("present.")}
        ids = token[:, None].astype(np.int64)
        mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], axis=1)
    return np.stack(new, axis=1)


def main(out_dir):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, pad_token_id=0, bos_token_id=1,
        eos_token_id=None)
    model = transformers.LlamaForCausalLM(config).eval()
    checkpoint = os.path.join(out_dir, "tiny-llama")
    model.save_pretrained(checkpoint)

    # One call: the checkpoint directory in, model.onnx (decoder with past) out.
    onnxc.export_for_generation(checkpoint, os.path.join(out_dir, "onnx"))
    session = ort.InferenceSession(os.path.join(out_dir, "onnx", "model.onnx"),
                                   providers=["CPUExecutionProvider"])

    # Three prompts, left-padded to one length as a tokenizer pads a batch.
    ids = torch.randint(3, 128, (3, 8))
    mask = torch.ones(3, 8, dtype=torch.long)
    ids[1, :2], mask[1, :2] = 0, 0
    ids[2, :4], mask[2, :4] = 0, 0

    tokens = greedy(session, ids.numpy(), mask.numpy(), 16)
    want = model.generate(ids, attention_mask=mask, max_new_tokens=16, do_sample=False)[:, 8:]
    print(tokens)
    same = np.array_equal(tokens, want.numpy())
    print("same tokens as generate():", same)
    return 0 if same else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1]))
    with tempfile.TemporaryDirectory() as d:
        sys.exit(main(d))
