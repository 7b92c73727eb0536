#!/usr/bin/python3
"""Regenerate the bundled examples: simple, mlp, llm and dynamic_mlp (.fxir + .safetensors).

    /usr/bin/python3 examples/make_examples.py

The weights and inputs come from fixed seeds and file paths in the provenance
are relative to this directory, so running it twice gives identical files.
"""

import os
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "utils"))

from fxir_export import export  # noqa: E402


# -- simple: the conversion report's SimpleModel -------------------------------
# (The report's model ends with scaled_dot_product_attention, which torch 1.13
# does not have; this one returns the product.)

class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, 3, 1, 10))

    def forward(self, x, y):
        a = torch.sin(x)
        a.add_(y)
        b = a * self.weight
        return b


# -- mlp: two linear layers --------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


# -- llm: the tutorial's small LLM (embedding + one decoder layer) ------------

class Embedding(nn.Module):
    def __init__(self, vocab_size, embedding_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.pe = nn.Embedding(vocab_size, embedding_dim)

    def forward(self, x):
        word_emb = self.embedding(x)
        word_pe = self.pe(x)
        return word_emb + word_pe


class AttentionBlock(nn.Module):
    def __init__(self, embedding_dim, context_size):
        super().__init__()
        self.query = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.key = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.value = nn.Linear(embedding_dim, embedding_dim, bias=False)
        ones = torch.ones(size=[context_size, context_size], dtype=torch.float)
        self.register_buffer(name="mask", tensor=torch.tril(input=ones))

    def forward(self, x):
        B, T, C = x.size()
        query = self.query(x)
        key = self.key(x)
        value = self.value(x)
        qk = query @ key.transpose(-2, -1) * C**-0.5
        attention = qk.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        attention = torch.nn.functional.softmax(input=attention, dim=-1)
        out = attention @ value
        return out


class MultiAttentionBlock(nn.Module):
    def __init__(self, embedding_dim, num_heads, context_size):
        super().__init__()
        self.attention = nn.ModuleList(
            modules=[AttentionBlock(embedding_dim, context_size) for _ in range(num_heads)])
        self.linear = nn.Linear(in_features=embedding_dim * num_heads, out_features=embedding_dim)

    def forward(self, x):
        out = torch.cat(tensors=[attention(x) for attention in self.attention], dim=-1)
        x = self.linear(out)
        return x


class FeedForward(nn.Module):
    def __init__(self, embedding_dim, ff_dim):
        super().__init__()
        self.linear_1 = nn.Linear(embedding_dim, ff_dim)
        self.relu = nn.ReLU()
        self.linear_2 = nn.Linear(ff_dim, embedding_dim)

    def forward(self, x):
        x = self.linear_1(x)
        x = self.relu(x)
        x = self.linear_2(x)
        return x


class DecoderLayer(nn.Module):
    def __init__(self, embedding_dim, num_heads, context_size, ff_dim):
        super().__init__()
        self.attention = MultiAttentionBlock(embedding_dim, num_heads, context_size)
        self.feed_forward = FeedForward(embedding_dim, ff_dim)
        self.norm_1 = nn.LayerNorm(normalized_shape=embedding_dim)
        self.norm_2 = nn.LayerNorm(normalized_shape=embedding_dim)

    def forward(self, x):
        x_norm = self.norm_1(x)
        attention = self.attention(x_norm)
        attention = attention + x
        attention_norm = self.norm_2(attention)
        ff = self.feed_forward(attention_norm)
        ff = ff + attention
        return ff


class LLM(nn.Module):
    # The tutorial uses vocab_size=1024 and context_size=256; smaller tables
    # keep the bundled weights under 100 KB.
    def __init__(self, vocab_size=256, embedding_dim=16, num_heads=2,
                 context_size=64, ff_dim=128):
        super().__init__()
        self.embedding = Embedding(vocab_size, embedding_dim)
        self.decoder = DecoderLayer(embedding_dim, num_heads, context_size, ff_dim)

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        y = self.decoder(x)
        return y


# -- dynamic_mlp: the exporter documentation's first example ----------------------
# Five linear layers over three inputs passed as a tensor, a dict and a list,
# with a dynamic batch dim.

class DynamicMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 8, bias=True)
        self.fc1 = nn.Linear(8, 4, bias=True)
        self.fc2 = nn.Linear(4, 2, bias=True)
        self.fc3 = nn.Linear(2, 2, bias=True)
        self.fc_combined = nn.Linear(8 + 8 + 8, 8, bias=True)

    def forward(self, tensor_x, input_dict, input_list):
        combined = torch.cat([tensor_x, input_dict["tensor_x"], input_list[0]], dim=1)
        combined = torch.sigmoid(self.fc_combined(combined))
        combined = torch.sigmoid(self.fc0(combined))
        combined = torch.sigmoid(self.fc1(combined))
        combined = torch.sigmoid(self.fc2(combined))
        return self.fc3(combined)


def main():
    out = HERE
    torch.manual_seed(0)
    simple = SimpleModel().eval()
    x, y = torch.randn(2, 3, 10, 10), torch.randn(2, 3, 10, 10)
    export(simple, (x, y), os.path.join(out, "simple.fxir"), source_root=HERE)

    torch.manual_seed(1)
    mlp = MLP().eval()
    export(mlp, (torch.randn(4, 16),), os.path.join(out, "mlp.fxir"), source_root=HERE)

    torch.manual_seed(2)
    llm = LLM().eval()
    input_ids = torch.randint(0, 256, (1, 30), dtype=torch.int64)
    export(llm, (input_ids,), os.path.join(out, "llm.fxir"), source_root=HERE)

    torch.manual_seed(3)
    dmlp = DynamicMLP().eval()
    x = torch.rand((97, 8), dtype=torch.float32)
    args = (x, {"tensor_x": torch.rand((97, 8))}, [torch.rand((97, 8))])
    dyn = ({0: "batch_size"}, {"tensor_x": {0: "batch_size"}}, [{0: "batch_size"}])
    export(dmlp, args, os.path.join(out, "dynamic_mlp.fxir"), dynamic_shapes=dyn, source_root=HERE)

    for name in ("simple", "mlp", "llm", "dynamic_mlp"):
        for ext in (".fxir", ".safetensors"):
            p = os.path.join(out, name + ext)
            print("%-20s %7d bytes" % (name + ext, os.path.getsize(p)))


if __name__ == "__main__":
    main()
