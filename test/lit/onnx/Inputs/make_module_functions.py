#!/usr/bin/python3
"""Writes module_functions.onnx: a TorchScript export (torch.onnx.export)
with export_modules_as_functions=True, for test/lit/onnx/module-functions.test.

    /usr/bin/python3 test/lit/onnx/Inputs/make_module_functions.py

Two Linear layers, one without a bias, trace to two different functions,
which the exporter names `Linear` and `Linear.1` in the domain
`torch.nn.modules.linear`; the file has no overload fields.  Also writes
module_functions.expected, PyTorch's output for the input [[1, 2, 3]].
"""
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 4)
        self.l1 = torch.nn.Linear(4, 2)
        self.l2 = torch.nn.Linear(4, 2, bias=False)

    def forward(self, x):
        e = self.emb(x)
        return self.l1(e) + self.l2(e)


def main():
    torch.manual_seed(0)
    net = Net().eval()
    x = torch.tensor([[1, 2, 3]])
    torch.onnx.export(net, (x,), os.path.join(HERE, "module_functions.onnx"),
                      input_names=["x"], output_names=["y"], opset_version=15,
                      export_modules_as_functions=True)
    with torch.no_grad():
        y = net(x)
    with open(os.path.join(HERE, "module_functions.expected"), "w") as f:
        f.write(" ".join("%.4f" % v for v in y.reshape(-1).tolist()) + "\n")


if __name__ == "__main__":
    main()
