#!python
"""The `onnxc` command of a wheel: runs the compiled onnxc that the wheel
keeps inside the onnxc package (onnxc/bin/onnxc), without importing the
package (which imports torch)."""
import importlib.util
import os
import sys

spec = importlib.util.find_spec("onnxc")
if spec is None or not spec.submodule_search_locations:
    sys.exit("onnxc: the onnxc package is not importable from %s" % sys.executable)
for where in spec.submodule_search_locations:
    binary = os.path.join(where, "bin", "onnxc")
    if os.access(binary, os.X_OK):
        os.execv(binary, [binary] + sys.argv[1:])
sys.exit("onnxc: no compiled onnxc in the onnxc package (%s)"
         % ", ".join(spec.submodule_search_locations))
