"""Checks of the bridge (utils/fxir_export.py) at scale.

    bridge_scale.py memory DIR      export a model with 256 MB of parameters;
                                    print the peak RSS above the same process
                                    exporting a 1-parameter model, per weight byte
    bridge_scale.py names DIR       export 8- and 32-block GPTs counting FX's
                                    name probes, with and without the bridge's
                                    linear-time naming; print the growth and
                                    whether the texts are the same
"""
import os
import resource
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "utils"))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))

import torch  # noqa: E402

import fxir_export  # noqa: E402


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory(d):
    torch.manual_seed(0)
    small = torch.nn.Linear(1, 1, bias=False)
    fxir_export.export(small, (torch.ones(1, 1),), os.path.join(d, "s.fxir"))
    base = peak()
    big = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096, bias=False) for _ in range(4)])
    weights = sum(p.numel() * p.element_size() for p in big.parameters())
    fxir_export.export(big, (torch.ones(1, 4096),), os.path.join(d, "b.fxir"))
    print("weights %d MB" % (weights >> 20))
    print("peak above the model %.2f of the weights" % ((peak() - base - weights) / weights))
    print("safetensors size ok:", os.path.getsize(os.path.join(d, "b.safetensors")) > weights)


def names(d):
    import models
    ns = torch.fx.graph._Namespace
    orig_init = ns.__init__
    count = [0]

    class Counting(dict):
        def __contains__(self, k):
            count[0] += 1
            return dict.__contains__(self, k)

    def init(self, *a, **kw):
        orig_init(self, *a, **kw)
        self._used_names = Counting(self._used_names)

    class Plain:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    linear = fxir_export._LinearNames
    probes, texts = {}, {}
    ns.__init__ = init
    try:
        for mode in ("linear", "plain"):
            fxir_export._LinearNames = linear if mode == "linear" else Plain
            for n in (8, 32):
                models._seed()
                m = models.GPT(n_layers=n, embedding_dim=16, num_heads=2).eval()
                count[0] = 0
                text = fxir_export.export(m, (torch.randint(0, 1024, (1, 8)),), os.path.join(d, "g%d.fxir" % n))
                probes[mode, n] = count[0]
                texts[mode, n] = text
    finally:
        ns.__init__ = orig_init
        fxir_export._LinearNames = linear
    for mode in ("linear", "plain"):
        print("%s: name probes grow %.1fx from 8 to 32 blocks" % (mode, probes[mode, 32] / probes[mode, 8]))
    print("same text:", all(texts["linear", n] == texts["plain", n] for n in (8, 32)))


if __name__ == "__main__":
    {"memory": memory, "names": names}[sys.argv[1]](sys.argv[2])
