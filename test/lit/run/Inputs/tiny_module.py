"""A tiny module for the bridge's --save-reference test: a Linear, a
relu, an in-place add of a buffer, a LayerNorm and a softmax."""
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.lin = torch.nn.Linear(8, 6)
        self.norm = torch.nn.LayerNorm(6)
        self.register_buffer("shift", torch.linspace(-1, 1, 6))

    def forward(self, x):
        h = torch.relu(self.lin(x))
        h.add_(self.shift)
        return torch.softmax(self.norm(h), dim=-1)
