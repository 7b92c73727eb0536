"""The result of onnxc.export: an ONNX model one keeps working with.

    m = onnxc.export(model, (x,))          # or export(model, (x,), "m.onnx")
    y, = m(x)                              # ONNX Runtime, on torch tensors or numpy arrays
    m.save("m.onnx", external_data=True)   # m.onnx + m.onnx.data
    proto = m.model_proto                  # an onnx.ModelProto (the onnx package)
    print(m.report)                        # the conversion report, markdown

The model lives in one file (`path`): the one export wrote, or a file in a
temporary directory the object owns and removes when it is collected.
"""

import os
import shutil
import subprocess
import weakref

__all__ = ["ExportedModel"]


class ExportedModel:
    """An exported ONNX model: `path`, `model_proto`, `save()`, `run()` /
    calling it, `report` (and `report_path` when export wrote one)."""

    def __init__(self, path, onnxc, report, report_path=None, owned_dir=None):
        self.path = os.path.abspath(path)
        self.report = report
        self.report_path = report_path
        self._onnxc = onnxc
        self._session = None
        self._proto = None
        if owned_dir is not None:
            self._cleanup = weakref.finalize(self, shutil.rmtree, owned_dir, True)

    def __repr__(self):
        return "ExportedModel(%r)" % self.path

    def __fspath__(self):
        return self.path

    # ---- the model ----

    @property
    def model_proto(self):
        """The model as an onnx.ModelProto, external data loaded (needs the
        onnx package)."""
        if self._proto is None:
            try:
                import onnx
            except ImportError as e:
                raise ImportError("ExportedModel.model_proto needs the onnx package "
                                  "(pip install onnx): %s" % e) from None
            self._proto = onnx.load(self.path, load_external_data=True)
        return self._proto

    def save(self, path, external_data=None):
        """Write the model to `path`.  external_data: None (as onnxc
        decides: a side file only past 2 GB), True (large tensors in
        `<path>.data`) or a file name beside `path`.  Written by onnxc, which
        streams the weights: no protobuf size limit, nothing held in memory."""
        from . import _external_flag
        if os.path.abspath(path) == self.path and external_data is None:
            return path
        cmd = [self._onnxc, self.path, "-passes=", "-emit=onnx", "-o", os.path.abspath(path)]
        p = subprocess.run(cmd + _external_flag(external_data), capture_output=True, text=True)
        if p.returncode != 0:
            from . import ConversionError
            raise ConversionError("saving %s failed:\n%s" % (path, p.stderr.rstrip()),
                                  diagnostics=p.stderr, returncode=p.returncode)
        return path

    # ---- running it ----

    @property
    def session(self):
        """The onnxruntime.InferenceSession (CPU) that run() uses, made on
        first use."""
        if self._session is None:
            try:
                import onnxruntime
            except ImportError as e:
                raise ImportError("running an exported model needs the onnxruntime package "
                                  "(pip install onnxruntime): %s" % e) from None
            self._session = onnxruntime.InferenceSession(
                self.path, providers=["CPUExecutionProvider"])
        return self._session

    def run(self, *args, **kwargs):
        """Run the model in ONNX Runtime.  Positional arguments are the
        graph's inputs in order (nested lists, tuples and dicts flattened as
        export flattened them), keyword arguments name inputs.  Tensors may
        be torch tensors or numpy arrays; the outputs come back as a list of
        torch tensors when any input was one, else of numpy arrays."""
        import numpy as np
        names = [i.name for i in self.session.get_inputs()]
        flat = []
        _flatten(args, flat)
        if len(flat) > len(names):
            raise TypeError("the model takes %d inputs (%s), given %d"
                            % (len(names), ", ".join(names), len(flat)))
        feeds = dict(zip(names, flat))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError("the model has no input %r (its inputs: %s)"
                                % (k, ", ".join(names)))
            if k in feeds:
                raise TypeError("input %r given twice" % k)
            feeds[k] = v
        missing = [n for n in names if n not in feeds]
        if missing:
            raise TypeError("missing inputs: %s" % ", ".join(missing))
        as_torch = any(_is_torch(v) for v in feeds.values())
        feeds = {k: _to_numpy(v) for k, v in feeds.items()}
        outs = self.session.run(None, feeds)
        if not as_torch:
            return outs
        import torch
        return [torch.from_numpy(np.ascontiguousarray(o)) if isinstance(o, np.ndarray) else o
                for o in outs]

    __call__ = run


def _flatten(value, out):
    """The tensors of value, in export's order.  A str, bool, int, float or
    None argument is a constant of the trace, not a graph input: left out."""
    if isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten(v, out)
    elif value is not None and not isinstance(value, (str, bool, int, float)):
        out.append(value)


def _is_torch(v):
    return type(v).__module__.startswith("torch")


def _to_numpy(v):
    import numpy as np
    if _is_torch(v):
        return v.detach().cpu().contiguous().numpy()
    return np.asarray(v)
