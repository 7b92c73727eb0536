"""Writes a reference file for `onnxc verify` from ONNX Runtime: the model
run on seeded random inputs, saved as input.<name> and output.<name>.

    ort_make_ref.py MODEL.onnx OUT.safetensors [SCALE]

SCALE multiplies every expected output (1 by default), so a test can make
a reference the model does not match.  Needs onnx and onnxruntime."""
import os
import sys

import numpy as np
import onnx
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "utils"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "passes", "Inputs"))
import ortlib  # noqa: E402
from stwrite import write  # noqa: E402

model, out = sys.argv[1], sys.argv[2]
scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
rng = np.random.default_rng(5)
feeds = {}
for vi in onnx.load(model, load_external_data=False).graph.input:
    t = vi.type.tensor_type
    dt = helper.tensor_dtype_to_np_dtype(t.elem_type)
    feeds[vi.name] = rng.standard_normal([d.dim_value for d in t.shape.dim]).astype(dt)
got = ortlib.run(model, feeds)
arrays = {"input." + k: v for k, v in feeds.items()}
arrays.update({"output." + k: (v * scale).astype(v.dtype) for k, v in got.items()})
write(out, arrays)
