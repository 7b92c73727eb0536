"""The model zoo for the end-to-end tests.

Each entry of ZOO is a function returning (model, example_inputs,
dynamic_shapes or None).  example_inputs is a tuple of positional arguments
(dicts and lists allowed).  Every model is in eval mode and built from a fixed
seed, so two calls give the same weights and inputs.
"""

import os
import sys

import torch
import torch.nn as nn


def _seed(n=0):
    torch.manual_seed(n)


# -- the small LLM of the "modules as local functions" tutorial -------------
# The bundled example's classes (examples/make_examples.py), at the
# tutorial's sizes.

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from make_examples import LLM, DecoderLayer, Embedding  # noqa: E402


def llm():
    _seed()
    model = LLM(vocab_size=1024, context_size=256).eval()
    input_ids = torch.randint(0, 1024, (1, 30), dtype=torch.int64)
    return model, (input_ids,), None


def llm_dynamic_seq():
    """The same LLM with a dynamic batch and sequence length (the attention
    mask is sliced to the sequence length: mask[:T, :T])."""
    _seed()
    model = LLM(vocab_size=1024, context_size=256).eval()
    input_ids = torch.randint(0, 1024, (2, 30), dtype=torch.int64)
    return model, (input_ids,), {"input_ids": {0: "batch", 1: "seq"}}


class GPT(nn.Module):
    """The tutorial's LLM with a stack of identical decoder layers: with
    -outline, one DecoderLayer function called once a layer."""

    def __init__(self, n_layers=6, vocab_size=1024, embedding_dim=16, num_heads=2,
                 context_size=256, ff_dim=128):
        super().__init__()
        self.embedding = Embedding(vocab_size, embedding_dim)
        self.layers = nn.ModuleList(
            [DecoderLayer(embedding_dim, num_heads, context_size, ff_dim) for _ in range(n_layers)])

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return x


def gpt_blocks():
    _seed()
    model = GPT().eval()
    input_ids = torch.randint(0, 1024, (1, 30), dtype=torch.int64)
    return model, (input_ids,), None


# -- an MLP taking a dict and a list -----------------------------------------

class DictListMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, inputs, extras):
        h = torch.relu(self.fc1(inputs["a"]) + inputs["b"])
        return self.fc2(h) * extras[0] + extras[1]


def mlp_dict_list():
    _seed()
    model = DictListMLP().eval()
    inputs = {"a": torch.randn(2, 8), "b": torch.randn(2, 32)}
    extras = [torch.randn(2, 4), torch.randn(4)]
    return model, (inputs, extras), None


# -- a small CNN --------------------------------------------------------------

class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.conv2(x))
        x = torch.flatten(self.gap(x), 1)
        return self.fc(x)


def small_cnn():
    _seed()
    model = SmallCNN().eval()
    # Give batch norm non-trivial statistics.
    with torch.no_grad():
        model.bn1.running_mean.uniform_(-0.5, 0.5)
        model.bn1.running_var.uniform_(0.5, 1.5)
    return model, (torch.randn(2, 3, 32, 32),), None


# -- torchvision ---------------------------------------------------------------

def _lively(model):
    """Freshly initialised classifiers can output ~1e-9 (mobilenet_v2) or
    exact zeros (vit_b_16's zero head), against which any comparison passes.
    Give BatchNorm the statistics and affine terms a trained model has, and
    zero-initialised weights small random values, so outputs are O(0.1)."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                c = mod.num_features
                mod.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                mod.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.5)
                mod.weight.copy_(torch.rand(c, generator=g) + 0.5)
                mod.bias.copy_(torch.randn(c, generator=g) * 0.1)
        for p in model.parameters():
            if p.dim() >= 2 and float(p.abs().max()) == 0.0:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return model


def _tv(name, size):
    """A torchvision classifier (no pretrained weights, seeded) at size x size."""
    def build():
        import torchvision
        _seed()
        model = _lively(getattr(torchvision.models, name)(weights=None).eval())
        return model, (torch.randn(1, 3, size, size),), None
    build.__name__ = name
    return build


resnet18 = _tv("resnet18", 224)
mobilenet_v2 = _tv("mobilenet_v2", 224)


# Small resolutions keep the run quick.  vgg11 at 64x64 pools a 2x2 map to
# 7x7 (the general adaptive average pool); convnext_tiny's head holds an
# as_strided that only reinterprets; swin_t needs roll, constant_pad_nd,
# index.Tensor and the slice_scatter/fill of its attention mask; maxvit_t
# index.Tensor.  swin_t and maxvit_t need 224x224 (their window sizes).
mobilenet_v3_small = _tv("mobilenet_v3_small", 64)
efficientnet_b0 = _tv("efficientnet_b0", 64)
regnet_y_400mf = _tv("regnet_y_400mf", 64)
densenet121 = _tv("densenet121", 64)
squeezenet1_0 = _tv("squeezenet1_0", 64)
shufflenet_v2_x0_5 = _tv("shufflenet_v2_x0_5", 64)
vgg11 = _tv("vgg11", 64)
convnext_tiny = _tv("convnext_tiny", 64)
swin_t = _tv("swin_t", 224)
vit_b_16 = _tv("vit_b_16", 224)
maxvit_t = _tv("maxvit_t", 224)


# -- a transformer encoder -----------------------------------------------------

def transformer_encoder():
    _seed()
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64,
                                       dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    return model, (torch.randn(2, 7, 32),), None


# -- an LSTM -----------------------------------------------------------------------

class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=8, hidden_size=16, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out), h, c


def lstm():
    _seed()
    return LSTMModel().eval(), (torch.randn(2, 5, 8),), None


class RecurrentStack(nn.Module):
    """Two-layer bidirectional GRU (batch first) feeding a two-layer LSTM
    given its initial state, and a ReLU RNN without biases: one ONNX node a
    layer, the layers chained by the bridge."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.lstm = nn.LSTM(24, 10, num_layers=2)
        self.rnn = nn.RNN(10, 6, nonlinearity="relu", bias=False)

    def forward(self, x, h0, c0):
        y, hg = self.gru(x)
        z, (h, c) = self.lstm(y.transpose(0, 1), (h0, c0))
        w, hr = self.rnn(z)
        return w, hg, h, c, hr


def recurrent_stack():
    _seed()
    return (RecurrentStack().eval(),
            (torch.randn(3, 7, 8), torch.randn(2, 3, 10), torch.randn(2, 3, 10)), None)


# -- a model that mutates a buffer -------------------------------------------

class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        self.count.add_(1)
        return self.fc(x) * self.count


def buffer_mutation():
    _seed()
    return Counter().eval(), (torch.randn(3, 4),), None


# -- a dynamic batch dim ---------------------------------------------------------

class BatchMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 5)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h.view(x.shape[0], -1)
        return torch.softmax(self.fc2(h), dim=-1)


def dynamic_batch():
    _seed()
    return BatchMLP().eval(), (torch.randn(3, 10),), {"x": {0: "batch"}}


# -- integer arithmetic: PyTorch's type promotion ------------------------------------

class IntArith(nn.Module):
    """True division of integers is float, floor division stays integer,
    a Python float promotes an integer tensor to f32, comparisons of
    mixed dtypes compare in the common one."""

    def forward(self, a, b, f):
        return (a / b, a + 0.5, a // b, a < f, a * 2, torch.where(a > 2, a, 0.5),
                a % b + f, torch.maximum(a.int(), b), (a.int() - b) * f)


def int_arith():
    _seed()
    return IntArith().eval(), (torch.randint(-8, 9, (2, 3)), torch.randint(1, 4, (2, 3)),
                               torch.randn(2, 3)), None


# -- control flow kept in the graph: onnxc.cond, onnxc.fori_loop, onnxc.while_loop --

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import onnxc  # noqa: E402


class CondBranch(nn.Module):
    """A branch on a tensor's value (an If), whose branches read a weight
    and return two results, one of them an operand unchanged."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x, y):
        a, b = onnxc.cond(x.mean() > 0,
                          lambda x, y: (torch.relu(self.fc(x)) + y, y),
                          lambda x, y: (x * y - 1.0, y.flip(0)),
                          (x, y))
        return a * 2.0, b


def cond_branch():
    _seed()
    return CondBranch().eval(), (torch.randn(3, 6).abs() + 0.1, torch.randn(3, 6)), None


def cond_dynamic():
    """CondBranch with a dynamic batch: the symbolic tracer traces the
    branches on fake tensors."""
    _seed()
    return (CondBranch().eval(), (torch.randn(3, 6).abs() + 0.1, torch.randn(3, 6)),
            {"x": {0: "batch"}, "y": {0: "batch"}})


class ForiLoop(nn.Module):
    """A loop whose trip count is an input (an ONNX Loop with a dynamic
    count): a recurrent cell applied n times, with the step index."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, h, n):
        def step(i, h, total):
            h = torch.tanh(self.cell(h)) + i.to(h.dtype) * 0.1
            return h, total + h.sum(1)
        return onnxc.fori_loop(n, step, (h, torch.zeros(h.shape[0])))


def fori_loop():
    _seed()
    return ForiLoop().eval(), (torch.randn(2, 8), torch.tensor(3)), None


class WhileLoop(nn.Module):
    """Newton's iteration for sqrt until it converges: the trip count
    depends on the data (an ONNX Loop with only a condition), then a
    branch inside a loop body."""

    def forward(self, a):
        def body(x, k):
            x = 0.5 * (x + a / x)
            x = onnxc.cond(k > 100, lambda x: x * 0.0, lambda x: x, (x,))
            return x, k + 1
        return onnxc.while_loop(lambda x, k: ((x * x - a).abs().max() > 1e-4) & (k < 50),
                                body, (a.clone(), torch.zeros((), dtype=torch.int64)))


def while_loop():
    return WhileLoop().eval(), (torch.tensor([2.0, 9.0, 0.5]),), None


class CondInPlace(nn.Module):
    """Branches and a loop body that write into their operands in place:
    functionalize makes the writes new results of the If and Loop."""

    def forward(self, x, y):
        buf = x.clone()

        def grow(b, y):
            b.mul_(2.0).add_(y)
            return b.sum(0)

        s = onnxc.cond(y.sum() > 0, grow, lambda b, y: b.sum(0) - 1.0, (buf, y))

        def body(i, h):
            h[0].add_(1.0)
            return h * 0.5

        h = onnxc.fori_loop(3, body, x.clone())
        return s, buf + 1.0, h


def cond_inplace():
    _seed()
    return CondInPlace().eval(), (torch.randn(2, 5), torch.rand(2, 5)), None


class OutVariants(nn.Module):
    """out= calls that fill two named tensors (one of them a row of a
    buffer), and in-place shape changes: functionalize rewrites them."""

    def forward(self, x):
        v, i = torch.empty(4), torch.empty(4, dtype=torch.long)
        torch.max(x, 1, out=(v, i))
        rows = torch.zeros(2, 6)
        idx = torch.empty(6, dtype=torch.long)
        torch.sort(x[1], descending=True, out=(rows[1], idx))
        flat = x.clone().resize_(2, 12)
        part = x.clone().resize_(3, 5)
        return v + 1.0, i, rows * 2.0, idx, flat.swapaxes_(0, 1) * 3.0, part


def out_variants():
    _seed()
    return OutVariants().eval(), (torch.randn(4, 6),), None


# -- torchvision's batched NMS past its loop threshold ------------------------------

class BatchedNms(nn.Module):
    """1200 boxes (4800 coordinates, past the 4000 where torchvision's
    batched_nms runs one NMS a class present, a Python loop over
    torch.unique): the bridge keeps one NMS over class-offset boxes, so
    inputs with another set of classes give PyTorch's result too."""

    def forward(self, boxes, scores, idxs):
        import torchvision
        keep = torchvision.ops.batched_nms(boxes, scores, idxs, 0.5)
        return keep, scores[keep], boxes[keep]


def _nms_inputs(seed, classes):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(1200, 2, generator=g) * 100
    wh = torch.rand(1200, 2, generator=g) * 30 + 1
    return (torch.cat([xy, xy + wh], 1), torch.rand(1200, generator=g),
            classes[torch.randint(0, len(classes), (1200,), generator=g)])


def batched_nms():
    return BatchedNms().eval(), _nms_inputs(0, torch.tensor([0, 1, 2, 3, 4])), None


# name -> builder, in the order the tests run
ZOO = {
    "llm": llm,
    "llm_dynamic_seq": llm_dynamic_seq,
    "gpt_blocks": gpt_blocks,
    "mlp_dict_list": mlp_dict_list,
    "small_cnn": small_cnn,
    "resnet18": resnet18,
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_b0": efficientnet_b0,
    "regnet_y_400mf": regnet_y_400mf,
    "densenet121": densenet121,
    "squeezenet1_0": squeezenet1_0,
    "shufflenet_v2_x0_5": shufflenet_v2_x0_5,
    "vgg11": vgg11,
    "convnext_tiny": convnext_tiny,
    "swin_t": swin_t,
    "vit_b_16": vit_b_16,
    "maxvit_t": maxvit_t,
    "transformer_encoder": transformer_encoder,
    "lstm": lstm,
    "recurrent_stack": recurrent_stack,
    "buffer_mutation": buffer_mutation,
    "dynamic_batch": dynamic_batch,
    "int_arith": int_arith,
    "cond_branch": cond_branch,
    "cond_dynamic": cond_dynamic,
    "fori_loop": fori_loop,
    "while_loop": while_loop,
    "cond_inplace": cond_inplace,
    "out_variants": out_variants,
    "batched_nms": batched_nms,
}

# Models whose export the installed PyTorch may not manage (an older
# torchvision or tracer): an export failure is a skip, with its reason.
EXPORT_MAY_FAIL = {"swin_t", "vit_b_16", "maxvit_t", "convnext_tiny"}

# Other input sizes a model with dynamic dims must also run with.
EXTRA_INPUTS = {
    "dynamic_batch": lambda: (torch.randn(5, 10),),
    "llm_dynamic_seq": lambda: (torch.randint(0, 1024, (3, 7), dtype=torch.int64),),
    # a list: several cases.  The other branch; other trip counts.
    "cond_branch": lambda: [(-torch.randn(3, 6).abs() - 0.1, torch.randn(3, 6))],
    "cond_dynamic": lambda: [(-torch.randn(5, 6).abs() - 0.1, torch.randn(5, 6)),
                             (torch.randn(2, 6).abs() + 0.1, torch.randn(2, 6))],
    "fori_loop": lambda: [(torch.randn(2, 8), torch.tensor(0)), (torch.randn(2, 8), torch.tensor(7))],
    "while_loop": lambda: [(torch.tensor([1.0, 1.0, 1.0]),), (torch.tensor([400.0, 1e-3, 7.0]),)],
    "cond_inplace": lambda: [(torch.randn(2, 5), -torch.rand(2, 5))],
    # other boxes, classes that the example has not (and not all it has)
    "batched_nms": lambda: [_nms_inputs(1, torch.tensor([2, 7, 9])),
                            _nms_inputs(2, torch.tensor([0, 1, 2, 3, 4, 5, 6, 7]))],
}
