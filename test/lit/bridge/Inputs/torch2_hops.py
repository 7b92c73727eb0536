"""Models whose torch.export graphs hold higher-order ops, assertion ops
and Tensor.item(), exported through the bridge on torch 2.x.

    torch2_hops.py DIR     write DIR/NAME.fxir for each model below and
                           print `NAME capture=...` per model
    torch2_hops.py errors  print the bridge's error for each model it
                           refuses
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "utils"))
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402

import fxir_export  # noqa: E402
import onnxc  # noqa: E402


class NoGrad(torch.nn.Module):
    """A torch.no_grad() block (rotary embeddings compute theirs so):
    torch.export keeps it as wrap_with_set_grad_enabled."""
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.arange(1, 5, dtype=torch.float32))

    def forward(self, x):
        with torch.no_grad():
            freqs = self.inv_freq[None, :] * x.float()
            cos = freqs.cos()
        return cos * 2


class Autocast(torch.nn.Module):
    """An autocast region that is off: wrap_with_autocast."""
    def forward(self, x):
        with torch.autocast("cpu", enabled=False):
            y = x.to(torch.float32) * 3
        return y + 1


class TorchCond(torch.nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos() + 1, (x,))


class TorchWhile(torch.nn.Module):
    def forward(self, x):
        from torch._higher_order_ops.while_loop import while_loop
        i0 = torch.zeros((), dtype=torch.int64)
        _, y = while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 0.5), (i0, x))
        return y


class OnnxcCond(torch.nn.Module):
    """onnxc.cond under torch.export is torch.cond."""
    def forward(self, x):
        return onnxc.cond(x.sum() > 0, lambda x: x + 1, lambda x: x - 1, (x,))


class Map(torch.nn.Module):
    def forward(self, xs, y):
        from torch._higher_order_ops.map import map as torch_map
        return torch_map(lambda x, y: x.sin() + y, xs, y)


class Scan(torch.nn.Module):
    def forward(self, init, xs):
        from torch._higher_order_ops.scan import scan
        return scan(lambda c, x: (c + x, (c * x).cos()), init, xs)


class Item(torch.nn.Module):
    """Tensor.item() returned: a Python float, the tensor's f32 in ONNX."""
    def forward(self, x):
        return x.sum().item()


MODELS = [("nograd", NoGrad(), (torch.randn(2, 4),)),
          ("autocast", Autocast(), (torch.randn(2, 4),)),
          ("cond", TorchCond(), (torch.randn(2, 3),)),
          ("while", TorchWhile(), (torch.randn(2, 3),)),
          ("onnxc_cond", OnnxcCond(), (torch.randn(2, 3),)),
          ("map", Map(), (torch.randn(3, 4), torch.randn(4))),
          ("scan", Scan(), (torch.randn(4), torch.randn(3, 4))),
          ("item", Item(), (torch.randn(3, 4),))]

def errors():
    try:    # a map over a dynamic dim is not unrolled
        fxir_export.export(Map(), (torch.randn(3, 4), torch.randn(4)), os.devnull + ".fxir",
                           dynamic_shapes={"xs": {0: "n"}}, capture="torch.export")
    except fxir_export.ExportError as e:
        print("error:", e)


if __name__ == "__main__":
    if sys.argv[1] == "errors":
        errors()
        sys.exit(0)
    out = sys.argv[1]
    for name, model, args in MODELS:
        fxir_export.export(model.eval(), args, os.path.join(out, name + ".fxir"))
        print("%s capture=%s" % (name, fxir_export.last_capture))
