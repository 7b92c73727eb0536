"""What every part of the bridge shares: dtypes, the error type, tensors
as bytes and the safetensors writer, and how literals are printed.
"""

import json
import math
import os
import re
import struct
import sys
import sysconfig

import torch
import torch.fx

_BRIDGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


def _torch_version():
    parts = []
    for p in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


# ---------------------------------------------------------------------------
# dtypes

def _dtype_table():
    # (torch attribute, .fxir name, safetensors name)
    rows = [
        ("float32", "f32", "F32"), ("float16", "f16", "F16"),
        ("bfloat16", "bf16", "BF16"), ("float64", "f64", "F64"),
        ("int8", "i8", "I8"), ("int16", "i16", "I16"), ("int32", "i32", "I32"),
        ("int64", "i64", "I64"), ("uint8", "u8", "U8"), ("uint16", "u16", "U16"),
        ("uint32", "u32", "U32"), ("uint64", "u64", "U64"), ("bool", "bool", "BOOL"),
        ("complex64", "c64", "C64"), ("complex128", "c128", "C128"),
        ("float8_e4m3fn", "f8e4m3fn", "F8_E4M3"),
        ("float8_e4m3fnuz", "f8e4m3fnuz", "F8_E4M3FNUZ"),
        ("float8_e5m2", "f8e5m2", "F8_E5M2"),
        ("float8_e5m2fnuz", "f8e5m2fnuz", "F8_E5M2FNUZ"),
        ("float8_e8m0fnu", "f8e8m0", "F8_E8M0"),
    ]
    fx, st = {}, {}
    for attr, fxname, stname in rows:
        dt = getattr(torch, attr, None)
        if isinstance(dt, torch.dtype):
            fx[dt] = fxname
            st[dt] = stname
    return fx, st


_FX_DTYPE, _ST_DTYPE = _dtype_table()


def _fx_dtype(dt):
    try:
        return _FX_DTYPE[dt]
    except KeyError:
        raise ExportError("dtype %s has no .fxir spelling" % dt) from None


class ExportError(Exception):
    pass


class CaptureFailed(ExportError):
    """PyTorch could not trace the model: every capture tried failed (torch
    2.x), or make_fx did (torch 1.13).  The capture's own error, when there
    is one, is the __cause__."""


# ---------------------------------------------------------------------------
# tensors as bytes; safetensors

def _tensor_array(t):
    """A numpy array over a tensor's bytes in row-major order, little-endian:
    a view of the tensor's own storage when it is a contiguous CPU tensor
    (no copy), else a copy of that one tensor."""
    if sys.byteorder != "little":
        raise ExportError("big-endian hosts are not supported")
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    elif t.dtype == torch.bool:
        t = t.to(torch.uint8)
    elif t.dtype not in (torch.float32, torch.float64, torch.float16, torch.int8,
                         torch.int16, torch.int32, torch.int64, torch.uint8,
                         torch.complex64, torch.complex128):
        # float8 and unsigned types without numpy support: reinterpret bytes.
        t = t.view(torch.uint8)
    return t.numpy()


def _tensor_bytes(t):
    """Little-endian bytes of a tensor in row-major order."""
    return _tensor_array(t).tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} as a safetensors file with the standard library.

    Layout: u64 little-endian header size, a JSON header padded with spaces
    to a multiple of 8, then the tensors packed without holes.  Tensors are
    ordered by element size (largest first), then name, so that every tensor
    starts at an offset aligned to its element size.  Each tensor is written
    straight from its storage, one at a time: no copy of the weights is
    gathered (a non-contiguous tensor is copied alone, then dropped).
    """
    items = []
    for name, t in tensors.items():
        if t.dtype not in _ST_DTYPE:
            raise ExportError("tensor %r: dtype %s has no safetensors name" % (name, t.dtype))
        items.append((name, t))
    items.sort(key=lambda kv: (-kv[1].element_size(), kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name, t in items:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": _ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, t in items:
            a = _tensor_array(t)
            if a.size:
                f.write(a.reshape(-1).view("u1"))
            del a
    os.replace(tmp, path)


def read_safetensors_header(path):
    """The JSON header of a safetensors file, without reading its data."""
    with open(path, "rb") as f:
        head = f.read(8)
        n = struct.unpack("<Q", head)[0] if len(head) == 8 else None
        if n is None or n > (100 << 20):
            raise ExportError("%s: not a safetensors file" % path)
        return json.loads(f.read(n))


def checkpoint_name(path, tensors, fxir_dir):
    """How the .fxir names the existing safetensors file `path` holding
    `tensors` ({state_dict key: tensor, real, fake or meta}): relative to
    the .fxir's directory when inside it, else absolute.  Every key must be
    in the file with the tensor's dtype and shape."""
    header = read_safetensors_header(path)
    for name, t in tensors.items():
        e = header.get(name)
        want = (_ST_DTYPE.get(t.dtype), list(t.shape))
        if e is None:
            raise ExportError("%s has no tensor %r" % (path, name))
        if (e.get("dtype"), e.get("shape")) != want:
            raise ExportError("%s: tensor %r is %s %s in the file, %s %s in the model"
                              % (path, name, e.get("dtype"), e.get("shape"), want[0], want[1]))
    full = os.path.abspath(path)
    rel = os.path.relpath(full, fxir_dir)
    return full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel

def _quote_table():
    table = {ord('"'): '\\"', ord("\\"): "\\\\", ord("\n"): "\\n", ord("\t"): "\\t",
             ord("\r"): "\\r"}
    for o in list(range(0x20)) + [0x7f]:
        table.setdefault(o, "\\x%02x" % o)
    for o in range(0xd800, 0xe000):
        table[o] = "?"   # lone surrogate: not valid UTF-8
    return table


_QUOTE_TABLE = _quote_table()


def _quote(s):
    """s as a .fxir string literal (one C-level pass: str.translate)."""
    return '"' + s.translate(_QUOTE_TABLE) + '"'


def _float(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(x)
    if "e" in r:
        mant, exp = r.split("e")
        exp = exp.lstrip("+")
        return mant + "e" + exp
    if "." not in r:
        r += ".0"
    return r


_ENUM_NAMES = {}
for _attr in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
              "sparse_bsc", "_mkldnn", "contiguous_format", "channels_last",
              "channels_last_3d", "preserve_format"):
    _v = getattr(torch, _attr, None)
    if _v is not None:
        _ENUM_NAMES[_v] = _attr.lstrip("_")


_PLAIN_NAME = re.compile(r"[0-9A-Za-z_.]+\Z")


def _value_name(name):
    if _PLAIN_NAME.match(name):
        return "%" + name
    return "%" + _quote(name)
_RNN_NS = "onnxc_rnn"
