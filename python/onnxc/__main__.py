"""python3 -m onnxc: export a PyTorch module class to ONNX from the shell.

    python3 -m onnxc --module mymodel.py:Net --input-shape 2,16 -o net.onnx
    python3 -m onnxc --module llm.py:LLM --input-shape 2,30 --input-dtype i64 \\
        --dynamic input_ids:0:batch --dynamic input_ids:1:seq -o llm.onnx
    python3 -m onnxc --checkpoint ./tiny-llama -o ./tiny-llama-onnx

--checkpoint takes a transformers model saved with save_pretrained and writes
its generation files into the -o directory (onnxc.export_for_generation):
model.onnx, the decoder with its key/value cache, or encoder.onnx and
decoder.onnx for an encoder-decoder.
"""

import argparse
import sys

from . import ConversionError, _bridge, export


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m onnxc",
                                description="Export a PyTorch module to ONNX with onnxc.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--module", metavar="FILE.py:CLASS",
                      help="a module class built with no constructor arguments")
    what.add_argument("--checkpoint", metavar="DIR",
                      help="a transformers checkpoint directory (save_pretrained): write its "
                           "generation files (decoder with key/value cache) into -o DIR")
    p.add_argument("--input-shape", action="append", metavar="D0,D1,...",
                   help="shape of one forward input (repeat for several; with --module)")
    p.add_argument("--input-dtype", action="append", metavar="DTYPE",
                   help="dtype of the matching --input-shape (f32, i64, ...); default f32")
    p.add_argument("--dynamic", action="append", metavar="INPUT:DIM:NAME",
                   help="name dim DIM of input INPUT as a dynamic dim (repeatable)")
    p.add_argument("--input-names", metavar="A,B", help="names of the graph inputs")
    p.add_argument("--output-names", metavar="A,B", help="names of the graph outputs")
    p.add_argument("-o", "--output", required=True, metavar="OUT.onnx",
                   help="the model file; with --checkpoint, a directory")
    p.add_argument("-O", dest="optimize", default="2", choices=("0", "1", "2"),
                   help="optimization level (default 2)")
    p.add_argument("--opset", type=int, default=None,
                   help="default-domain opset (default 20; 21 with --quantize at the onnx target)")
    p.add_argument("--target", default=None, choices=("onnx", "ort"),
                   help="onnx (default): standard ops; ort: also ONNX Runtime's contrib ops")
    p.add_argument("--ort-attention", default=None, choices=("matmul", "gqa"),
                   help="with --target ort, attention over a key/value cache: matmul (default) "
                        "or GroupQueryAttention")
    p.add_argument("--quantize", default=None, choices=("int4", "int8", "int8-dynamic"),
                   help="quantize MatMul and Gemm weights blockwise along K (int8-dynamic: "
                        "a scale a column, activations quantized at run time)")
    p.add_argument("--quantize-exclude", default=None, metavar="P[,Q]",
                   help="glob patterns of weight names, node names or module paths left float")
    p.add_argument("--quantize-embedding", action="store_true",
                   help="quantize the tables of Gather (embeddings) too, blockwise along each row")
    p.add_argument("--quantize-block", type=int, default=None, metavar="N",
                   help="values along K sharing a scale (default 32)")
    p.add_argument("--quantize-zero-points", action="store_true",
                   help="unsigned codes with a zero point a block (default: symmetric)")
    p.add_argument("--quantize-accuracy-level", type=int, default=None, choices=range(5),
                   metavar="N", help="with --target ort: MatMulNBits' accuracy_level (4: int8 compute)")
    p.add_argument("--outline", action="store_true", help="nn.Modules as ONNX local functions")
    p.add_argument("--external-data", action="store_true",
                   help="large tensors in OUT.onnx.data")
    p.add_argument("--report", action="store_true", help="write OUT_report.md")
    p.add_argument("--training", default="eval", choices=("eval", "train", "preserve"),
                   help="trace in eval mode (default), training mode (batch statistics, "
                        "updated running statistics as outputs, Dropout) or the module's own")
    from .bridge.capture import CAPTURES
    p.add_argument("--logits", default="last", choices=("last", "all"),
                   help="with --checkpoint: the decoder's logits output holds the last "
                        "position's (default; what generate() computes) or every position's")
    p.add_argument("--capture", default=None, choices=CAPTURES,
                   help="torch 2.x: trace with this capture only (default: each in turn "
                        "until one works)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-export-params", dest="export_params", action="store_false",
                   help="parameters and state_dict buffers as graph inputs (after the model's, "
                        "in state_dict order), not initializers")
    p.add_argument("--allow-custom-ops", action="store_true",
                   help="keep calls with no decomposition as nodes of their namespace's domain")
    p.add_argument("--operator-export-type", choices=["ONNX", "ONNX_ATEN_FALLBACK", "ONNX_FALLTHROUGH"],
                   help="ONNX_ATEN_FALLBACK: keep ATen calls with no decomposition as "
                        "org.pytorch.aten::ATen nodes (operator, overload_name)")
    p.add_argument("--custom-opset", action="append", metavar="DOMAIN:VERSION",
                   help="the opset version imported for a custom domain (default 1; repeatable)")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_const", const=True,
                       default=None, help="show each stage and its time on standard error "
                       "(default: only once the conversion has run 5 s)")
    shown.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                       help="never show the stages")
    a = p.parse_args(argv)
    if a.checkpoint:
        return _checkpoint(a)
    if not a.input_shape:
        p.error("--module needs --input-shape")

    import torch
    bridge = _bridge()
    torch.manual_seed(a.seed)
    model = bridge._load_class(a.module)().eval()
    try:
        inputs = bridge.example_inputs(a.input_shape, a.input_dtype)
    except ValueError as e:
        p.error(str(e))
    dyn = {}
    for spec in a.dynamic or []:
        try:
            name, dim, dname = spec.split(":")
            dyn.setdefault(name, {})[int(dim)] = dname
        except ValueError:
            p.error("--dynamic wants INPUT:DIM:NAME, not %r" % spec)
    opsets = {}
    for spec in a.custom_opset or []:
        dom, _, ver = spec.rpartition(":")
        if not dom or not ver.isdigit():
            p.error("--custom-opset wants DOMAIN:VERSION, not %r" % spec)
        opsets[dom] = int(ver)
    try:
        export(model, tuple(inputs), a.output, dynamic_shapes=dyn or None,
               input_names=a.input_names.split(",") if a.input_names else None,
               output_names=a.output_names.split(",") if a.output_names else None,
               opset=a.opset, optimize="O" + a.optimize, outline=a.outline,
               report=a.report or None, external_data=a.external_data or None,
               training=a.training, capture=a.capture, progress=a.progress,
               export_params=a.export_params, allow_custom_ops=a.allow_custom_ops,
               custom_opsets=opsets or None, operator_export_type=a.operator_export_type,
               **_quant_args(a))
    except ConversionError as e:
        print("onnxc: error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s" % a.output)
    return 0


def _quant_args(a):
    return dict(target=a.target, ort_attention=a.ort_attention, quantize=a.quantize,
                quantize_block=a.quantize_block,
                quantize_zero_points=a.quantize_zero_points,
                quantize_accuracy_level=a.quantize_accuracy_level,
                quantize_exclude=a.quantize_exclude.split(",") if a.quantize_exclude else None,
                quantize_embedding=a.quantize_embedding)


def _checkpoint(a):
    from .generation import export_for_generation
    try:
        g = export_for_generation(a.checkpoint, a.output, opset=a.opset,
                                  optimize="O" + a.optimize,
                                  external_data=a.external_data or None,
                                  progress=a.progress, report=a.report or None,
                                  capture=a.capture, logits=a.logits, **_quant_args(a))
    except ConversionError as e:
        print("onnxc: error: %s" % e, file=sys.stderr)
        return 1
    files = [m.path for m in (g.encoder, g.decoder) if m is not None]
    print("wrote %s" % ", ".join(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
