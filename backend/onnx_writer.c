/* onnx_writer.c - IR to an ONNX ModelProto (IR version 10), and the file.
 *
 * onnx_build turns a module into protobuf-c structs held in a scratch arena;
 * tensor payloads are not copied: raw_data points at the IR's bytes or into
 * the mmap'd safetensors file.  onnx_write then moves large payloads to the
 * external-data side file if asked (or if the model would pass protobuf's
 * 2 GB limit), and packs the proto through a ProtobufCBuffer that appends
 * to a temporary file, renamed over the destination only on success.
 * Everything is visited in IR order, so the same IR gives the same bytes.
 *
 * This file holds the model and the helpers the parts share;
 * onnx_writer_tensors.c types, tensors and weights; onnx_writer_attrs.c
 * attributes; onnx_writer_meta.c provenance and the program's signature
 * as metadata_props; onnx_writer_names.c node names; onnx_writer_graphs.c
 * nodes and graphs; onnx_writer_funcs.c opset imports and local functions;
 * onnx_writer_file.c the files (temporary, renamed; external data).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- small helpers -------------------------------------------------------- */

char *afmt(Writer *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = arena_alloc(w->a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

const char *vname(Writer *w, ValueId v)
{
	if (v == VNONE)
		return "";
	Sym s = val(w->m, v)->name;
	return s ? sym_str(s) : afmt(w, "_v%u", v);
}

Onnx__StringStringEntryProto *kv(Writer *w, const char *k, const char *v)
{
	Onnx__StringStringEntryProto *e = NEW(w, Onnx__StringStringEntryProto,
		ONNX__STRING_STRING_ENTRY_PROTO__INIT);
	e->key = (char *)k;
	e->value = (char *)v;
	return e;
}

Onnx__StringStringEntryProto **meta_list(Writer *w, const MetaProp *mp, uint32_t n)
{
	Onnx__StringStringEntryProto **v = PTRS(w, Onnx__StringStringEntryProto, n);
	for (uint32_t i = 0; i < n; i++)
		v[i] = kv(w, arena_strndup(w->a, mp[i].key.s, mp[i].key.n),
			arena_strndup(w->a, mp[i].val.s, mp[i].val.n));
	return v;
}

/* ---- the model ------------------------------------------------------------- */

static void model_header(Writer *w, Onnx__ModelProto *p)
{
	p->has_ir_version = 1;
	p->ir_version = ONNXC_IR_VERSION;
	p->producer_name = "onnxc";
	p->producer_version = ONNXC_VERSION;
	p->doc_string = str_dup(w, w->m->doc);
	p->n_metadata_props = w->m->nmeta;
	p->metadata_props = meta_list(w, w->m->meta, w->m->nmeta);
	p->opset_import = model_opsets(w, &p->n_opset_import);
}

int onnx_build(Module *m, const OnnxWriteOptions *opt, int with_data, OnnxBuilt *out)
{
	*out = (OnnxBuilt){ 0 };
	Writer w = { .m = m, .opt = opt, .a = &out->arena, .out = out, .with_data = with_data,
		.s_onnx = S_onnx };
	if (m->graphs.n == 0) {
		diag_error(file_loc(sym_str(m->file)), "the module has no graph to write");
		return 1;
	}
	w.default_version = default_version(&w);
	Onnx__ModelProto *p = NEW(&w, Onnx__ModelProto, ONNX__MODEL_PROTO__INIT);
	model_header(&w, p);
	p->graph = graph_proto(&w, m->graphs.v[0]);
	signature_props(&w, m->graphs.v[0], p->graph);
	p->n_functions = m->funcs.n;
	p->functions = PTRS(&w, Onnx__FunctionProto, m->funcs.n);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		p->functions[i] = func_proto(&w, m->funcs.v[i]);
	out->model = p;
	return w.failed;
}

void onnx_built_free(OnnxBuilt *b)
{
	safetensors_close(b->weights);
	arena_free(&b->arena);
	*b = (OnnxBuilt){ 0 };
}
