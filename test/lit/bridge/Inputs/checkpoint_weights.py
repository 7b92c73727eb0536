"""The bridge on a model built on fake tensors, its weights named in an
existing safetensors checkpoint (bridge.export(weights=...)).

    checkpoint_weights.py DIR      write DIR/ck.safetensors from a real
                                   model, DIR/m.fxir from the same model
                                   traced on fake tensors, DIR/ids.npy and
                                   DIR/ref.npy (the real model's output)
    checkpoint_weights.py errors   print the bridge's error for a checkpoint
                                   missing a tensor and for one whose
                                   tensor has another dtype
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
# This checkout's onnxc, even where an editable install of another is set up.
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable_")]

import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from onnxc import bridge  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], dtype=torch.float32)[:, None]
        return self.proj(self.emb(ids)) + pos.cos()


def fake_export(d, ck, fxir):
    with FakeTensorMode(allow_non_fake_inputs=True):
        m = Net()
        return bridge.export(m, (torch.zeros(1, 6, dtype=torch.int64),), fxir, weights=ck)


def main(d):
    torch.manual_seed(0)
    real = Net().eval()
    ck = os.path.join(d, "ck.safetensors")
    bridge.write_safetensors(ck, real.state_dict())
    ids = torch.randint(0, 50, (1, 6))
    np.save(os.path.join(d, "ids.npy"), ids.numpy())
    with torch.no_grad():
        np.save(os.path.join(d, "ref.npy"), real(ids).numpy())
    fake_export(d, ck, os.path.join(d, "m.fxir"))
    print("capture", bridge.last_capture)
    print("m.safetensors written:", os.path.exists(os.path.join(d, "m.safetensors")))
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    fake_export(d, ck, os.path.join(d, "sub", "m.fxir"))


def errors(d):
    real = Net()
    cases = {"missing": {k: v for k, v in real.state_dict().items() if k != "proj.bias"},
             "dtype": dict(real.state_dict(), **{"proj.weight": real.proj.weight.detach().double()})}
    for name, sd in cases.items():
        ck = os.path.join(d, name + ".safetensors")
        bridge.write_safetensors(ck, sd)
        try:
            fake_export(d, ck, os.path.join(d, name + ".fxir"))
            print(name, "exported")
        except bridge.ExportError as e:
            print(name, "error:", os.path.basename(str(e)))


if __name__ == "__main__":
    (errors if sys.argv[1] == "errors" else main)(sys.argv[2] if sys.argv[1] == "errors" else sys.argv[1])
