#!/usr/bin/python3
"""Writes the small binary inputs of the tests in test/lit/onnx.

    /usr/bin/python3 test/lit/onnx/Inputs/make_inputs.py

Everything is written by hand or with onnx.helper from fixed values, so the
files come out byte-identical on every run; the generated files are checked
in next to this script.
"""
import json
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def out(name):
    return os.path.join(HERE, name)


# ---- safetensors ------------------------------------------------------------

def safetensors_bytes(entries, data, metadata=None, pad=True):
    """entries: name -> (dtype, shape, [begin, end]); data: the data region."""
    hdr = {}
    if metadata is not None:
        hdr["__metadata__"] = metadata
    for name, (dtype, shape, offs) in entries.items():
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": offs}
    h = json.dumps(hdr, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def tensors_file(arrays, metadata=None):
    """A valid file holding the numpy arrays, in the order given."""
    kinds = {np.float32: "F32", np.float16: "F16", np.int64: "I64",
             np.int32: "I32", np.uint8: "U8", np.bool_: "BOOL"}
    entries, data = {}, b""
    for name, a in arrays:
        b = a.tobytes()
        entries[name] = (kinds[a.dtype.type], list(a.shape), [len(data), len(data) + len(b)])
        data += b
    return safetensors_bytes(entries, data, metadata)


def write(name, blob):
    with open(out(name), "wb") as f:
        f.write(blob)


def make_safetensors():
    write("weights.safetensors", tensors_file([
        ("linear.weight", np.arange(1, 7, dtype=np.float32).reshape(2, 3)),
        ("linear.bias", np.array([0.5, -0.5, 1.5], dtype=np.float32)),
        ("bn.running_mean", np.array([10, 20, 30], dtype=np.int64)),
        ("half", np.array([1.0, -2.0], dtype=np.float16)),
        ("big", np.arange(1024, dtype=np.float32)),        # 4096 bytes
        ("small", np.arange(16, dtype=np.float32)),        # 64 bytes
    ], metadata={"format": "pt"}))
    f32x2 = np.array([1.0, 2.0], dtype=np.float32).tobytes()
    # The header length points past the end of the file.
    good = tensors_file([("w", np.array([1.0, 2.0], dtype=np.float32))])
    write("bad_header_length.safetensors", struct.pack("<Q", 1 << 40) + good[8:])
    # Fewer than the 8 bytes of the length.
    write("too_short.safetensors", b"\x10\x00\x00")
    # The header is not JSON.
    write("bad_json.safetensors", struct.pack("<Q", 8) + b"{not js}" + f32x2)
    # Two tensors share bytes.
    write("overlap.safetensors", safetensors_bytes({
        "a": ("F32", [2], [0, 8]), "b": ("F32", [2], [4, 12])}, f32x2 * 2))
    # Eight bytes for a tensor of three floats.
    write("wrong_length.safetensors", safetensors_bytes({
        "w": ("F32", [3], [0, 8])}, f32x2))
    # A dtype safetensors does not have.
    write("unknown_dtype.safetensors", safetensors_bytes({
        "w": ("Q7", [2], [0, 8])}, f32x2))
    # An end offset past the data region.
    write("past_end.safetensors", safetensors_bytes({
        "w": ("F32", [4], [0, 16])}, f32x2))
    # A negative dim.
    write("negative_dim.safetensors", safetensors_bytes({
        "w": ("F32", [-2], [0, 8])}, f32x2))


# ---- ONNX models ------------------------------------------------------------

def save(model, name):
    with open(out(name), "wb") as f:
        f.write(model.SerializeToString())


def make_features_model():
    """What the importer reads from a model another tool wrote: typed data
    fields, initializers also listed as inputs, ai.onnx as the default domain,
    value_info, an If with subgraphs using outer values, a local function with
    an attribute reference, metadata and doc strings."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    inits = [
        helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0]),      # float_data
        helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 3]),          # int64_data
        helper.make_tensor("h", TensorProto.FLOAT16, [2], [1.0, 0.5]),      # int32_data bits
        helper.make_tensor("names", TensorProto.STRING, [2], [b"left", b"right"]),
    ]
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["sum"], ["t"], name="then_relu")],
        "then_body", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["batch", 3])])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["sum"], ["e"], name="else_neg")],
        "else_body", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["batch", 3])])
    nodes = [
        helper.make_node("Add", ["x", "w"], ["sum"], name="add", doc_string="adds w"),
        helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Reshape", ["branch", "shape"], ["r"], name="reshape"),
        helper.make_node("ScaleBy", ["r"], ["y"], domain="pkg.custom", name="scale", factor=2.0),
    ]
    graph = helper.make_graph(nodes, "features", [x, cond, w], [y], inits, doc_string="graph doc")
    graph.value_info.append(helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["batch", 3]))
    fn_const = helper.make_node("Constant", [], ["f"])
    ref = fn_const.attribute.add()
    ref.name = "value_float"
    ref.type = onnx.AttributeProto.FLOAT
    ref.ref_attr_name = "factor"
    fn = helper.make_function(
        "pkg.custom", "ScaleBy", ["a"], ["b"],
        [fn_const, helper.make_node("Mul", ["a", "f"], ["b"])],
        [helper.make_opsetid("", 17)], ["factor"])
    model = helper.make_model(graph, producer_name="maker", functions=[fn],
                              opset_imports=[helper.make_opsetid("ai.onnx", 17),
                                             helper.make_opsetid("pkg.custom", 1)])
    model.ir_version = 8
    model.doc_string = "model doc"
    helper.set_model_props(model, {"author": "tests"})
    save(model, "features.onnx")


def make_external_model():
    """A model with its initializer in a side file, as onnx.save writes it."""
    w = numpy_helper.from_array(np.arange(256, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    if os.path.exists(out("external.onnx.data")):
        os.unlink(out("external.onnx.data"))    # onnx.save_model appends to it
    onnx.save_model(model, out("external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external.onnx.data",
                    size_threshold=0)
    # The same model pointing outside its directory, and past the file's end.
    for name, entries in (("external_escape.onnx", {"location": "../external.onnx.data"}),
                          ("external_past_end.onnx", {"location": "external.onnx.data",
                                                      "offset": "512"})):
        m = onnx.load_model(out("external.onnx"), load_external_data=False)
        t = m.graph.initializer[0]
        for e in t.external_data:
            if e.key in entries:
                e.value = entries[e.key]
        save(m, name)


def make_broken_models():
    """Bytes that are not a ModelProto, and a model cut short."""
    write("garbage.onnx", bytes([0x08, 0x0a, 0x3a, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0x01, 0x00]))
    data = open(out("features.onnx"), "rb").read()
    write("truncated.onnx", data[: len(data) // 2])
    write("empty.onnx", b"")
    model = helper.make_model(helper.make_graph([], "g", [], []))
    m = model.SerializeToString()
    write("no_graph.onnx", m[:2])            # ir_version alone


if __name__ == "__main__":
    make_safetensors()
    make_features_model()
    make_external_model()
    make_broken_models()
