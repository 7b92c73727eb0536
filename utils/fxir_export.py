#!/usr/bin/python3
"""Command-line entry of the exporter bridge (the onnxc.bridge package in
python/onnxc/bridge): trace a PyTorch model and write onnxc's .fxir and a
.safetensors file.  See `fxir_export.py --help`.

As a module it is onnxc.bridge under this name (scripts that load it by
path keep working): `fxir_export.export(...)`, and any other name of the
bridge's modules.
"""
import os
import sys

_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
if _PYTHON not in sys.path:
    sys.path.insert(0, _PYTHON)

from onnxc import bridge as _bridge  # noqa: E402
from onnxc.bridge import capture, common, dims, make_fx, meta, writer  # noqa: E402

from onnxc.bridge import ExportError, export, main, write_safetensors  # noqa: E402,F401

_MODULES = (_bridge, capture, make_fx, writer, meta, dims, common)


def __getattr__(name):
    """Names of the bridge's modules, read through (last_capture changes
    with each export)."""
    for mod in _MODULES:
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError("module 'fxir_export' has no attribute %r" % name)


if __name__ == "__main__":
    sys.exit(main())
