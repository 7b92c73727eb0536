import torch, torchvision, onnxc
model = torchvision.models.resnet18().eval()
x = torch.randn(1, 3, 224, 224)
onnx_model = onnxc.export(model, (x,), "resnet18.onnx")
print(torch.allclose(onnx_model(x)[0], model(x), atol=1e-4))
