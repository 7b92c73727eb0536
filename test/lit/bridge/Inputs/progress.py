"""Checks of onnxc.bridge.progress: what a conversion shows of its stages.

    progress.py units          Progress on its own: shown always, never, and
                               by default only once `after` seconds passed
    progress.py bridge DIR     the bridge's stages of a small model's export
    progress.py cli DIR        `python -m onnxc --progress` and --no-progress
"""
import io
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

from onnxc.bridge.progress import Progress  # noqa: E402

MODEL = """
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
    def forward(self, x):
        return torch.relu(self.fc(x))
"""


def shown(show, after, sleeps):
    out = io.StringIO()
    p = Progress(show=show, after=after, stream=out)
    for i, s in enumerate(sleeps):
        with p.stage("stage%d" % i) as st:
            time.sleep(s)
            st.name = "stage%d (renamed)" % i
    p.done()
    # The times vary: only the names and what follows them.
    return [" ".join(re.sub(r"\d+\.\d+", "T", l).split()) for l in out.getvalue().splitlines()]


def units():
    print("always:", shown(True, 5.0, [0, 0]))
    print("never:", shown(False, 0.0, [0.3]))
    print("short:", shown(None, 5.0, [0, 0]))
    for line in shown(None, 0.2, [0, 0.6, 0]):
        print("long:", line)
    p = Progress(show=False)
    with p.stage("a"):
        pass
    p.add("onnxc -O2", 1.5, 1.0)
    print("recorded:", [n for n, _, _ in p.stages], p.seconds("onnxc"))


def bridge(d):
    import torch
    from onnxc import bridge as b
    ns = {}
    exec(MODEL, ns)
    out = io.StringIO()
    p = Progress(show=True, stream=out)
    b.export(ns["Net"]().eval(), (torch.randn(2, 4),), os.path.join(d, "net.fxir"), progress=p)
    p.done()
    for line in out.getvalue().splitlines():
        print("bridge:", line.split("  ")[0])


def cli(d):
    d = os.path.abspath(d)
    with open(os.path.join(d, "net.py"), "w") as f:
        f.write(MODEL)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    for flag in (["--progress"], ["--no-progress"]):
        r = subprocess.run([sys.executable, "-m", "onnxc", "--module", os.path.join(d, "net.py:Net"),
                            "--input-shape", "2,4", "-o", os.path.join(d, "net.onnx")] + flag,
                           capture_output=True, text=True, env=env, cwd=d)
        for line in r.stderr.splitlines():
            if line.startswith("onnxc: "):
                print("cli%s:" % "".join(flag), line.split("  ")[0])
        print("cli%s: exit %d" % ("".join(flag), r.returncode))
        if r.returncode:
            print(r.stderr[-2000:])


if __name__ == "__main__":
    {"units": lambda: units(), "bridge": lambda: bridge(sys.argv[2]),
     "cli": lambda: cli(sys.argv[2])}[sys.argv[1]]()
