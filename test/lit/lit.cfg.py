# lit configuration for onnxc's tests.
#
# Run with:  /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv test/lit
# Substitutions: %onnxc %decomps %examples %inputs %python %vpython %ort_run %ort_python.
# Features: asan (ONNXC_SANITIZE=1), ort (the onnxruntime Python package), dot
# (Graphviz installed), torch2 (the torch 2.x lane's virtual environment,
# $ONNXC_VENV or ~/.cache/onnxc/venv-torch2, whose python is %vpython).
# The binary under test is $ONNXC_BUILD (the onnxc binary, or a build
# directory holding it), by default <repo>/build/onnxc.
# Every compile runs the verifier after every pass (-verify-each, through
# ONNXC_VERIFY_EACH=1 in the tests' environment), so a pass that writes a
# wrong type fails the test where it does it; ONNXC_VERIFY_EACH=0 in lit's
# own environment turns that off.

import os

import lit.formats

config.name = "onnxc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".fxir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "README.md", "CMakeLists.txt"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(config.test_source_root))

onnxc = os.environ.get("ONNXC_BUILD", os.path.join(repo, "build", "onnxc"))
if os.path.isdir(onnxc):
    onnxc = os.path.join(onnxc, "onnxc")
onnxc = os.path.abspath(onnxc)
build_dir = os.path.dirname(onnxc)
config.test_exec_root = os.path.join(build_dir, "test", "lit")

llvm_bin = "/usr/lib/llvm-19/bin"
for tool in ("FileCheck", "not"):
    if not os.path.exists(os.path.join(llvm_bin, tool)):
        lit_config.warning("%s not found in %s (install llvm-19-tools)" % (tool, llvm_bin))
if not os.path.exists(onnxc):
    lit_config.warning("onnxc not found at %s: build it first" % onnxc)

# FileCheck and not come from LLVM 19 whatever else is on PATH.
config.environment["PATH"] = os.pathsep.join(
    [llvm_bin, build_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.environment["ONNXC_VERIFY_EACH"] = "0" if os.environ.get("ONNXC_VERIFY_EACH") == "0" else "1"

config.substitutions.append(("%onnxc", onnxc))
config.substitutions.append(("%decomps", os.path.join(repo, "decomps")))
config.substitutions.append(("%examples", os.path.join(repo, "examples")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%python", "/usr/bin/python3"))
# %ort_run: utils/ortlib.py's command line under the Python that has the
# onnxruntime package (utils/ortlib.py's ort_python(): the torch 2.x
# environment's, or $ONNXC_ORT_PYTHON).
import subprocess
import sys
sys.path.insert(0, os.path.join(repo, "utils"))
import ortlib  # noqa: E402
ort_python = ortlib.ort_python()
config.substitutions.append(("%ort_run", "%s %s" % (ort_python, os.path.join(repo, "utils",
                                                                            "ortlib.py"))))
# %ort_python: that Python itself, for a test's own script (onnx, onnxruntime, numpy).
config.substitutions.append(("%ort_python", ort_python))
for var in ("ONNXC_ORT_PYTHON", "ONNXC_VENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# `REQUIRES: ort` for tests that run a model in ONNX Runtime (utils/install-deps.sh).
if os.access(ort_python, os.X_OK) and subprocess.run(
        [ort_python, "-c", "import onnxruntime"], capture_output=True).returncode == 0:
    config.available_features.add("ort")

# `REQUIRES: dot` for tests that render a graph with Graphviz.
import shutil
if shutil.which("dot"):
    config.available_features.add("dot")

# `REQUIRES: torch2` for tests of the bridge on torch 2.x (torch.export).
venv = os.environ.get("ONNXC_VENV") or os.path.join(os.path.expanduser("~"), ".cache", "onnxc",
                                                    "venv-torch2")
vpython = os.path.join(venv, "bin", "python")
config.substitutions.append(("%vpython", vpython))
if os.access(vpython, os.X_OK):
    config.available_features.add("torch2")

if os.environ.get("ONNXC_SANITIZE") == "1":
    config.available_features.add("asan")
