/* onnx_writer.c - IR to an ONNX ModelProto (IR version 10), and the file.
 *
 * onnx_build turns a module into protobuf-c structs held in a scratch arena;
 * tensor payloads are not copied: raw_data points at the IR's bytes or into
 * the mmap'd safetensors file.  onnx_write then moves large payloads to the
 * external-data side file if asked (or if the model would pass protobuf's
 * 2 GB limit), and packs the proto through a ProtobufCBuffer that appends
 * to a temporary file, renamed over the destination only on success.
 * Everything is visited in IR order, so the same IR gives the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "backend.h"

enum { DEFAULT_OPSET = 18 };
#define AUTO_EXTERNAL_BYTES ((uint64_t)2048 * 1024 * 1024 - (uint64_t)64 * 1024 * 1024)
#define EXTERNAL_ALIGN 4096
#define PAYLOAD_SLICE ((size_t)8 * 1024 * 1024)

typedef struct Writer {
	Module *m;
	const OnnxWriteOptions *opt;
	Arena *a;
	OnnxBuilt *out;
	int with_data;
	int failed;
	Sym s_onnx;
	int64_t default_version;    /* the model's default-domain opset */
	const Func *func;           /* the function whose body is being built */
} Writer;

/* ---- small helpers -------------------------------------------------------- */

static Loc file_loc(const char *path) { return (Loc){ sym_cstr(path), 0, 0 }; }

/* protobuf-c wants char *; the strings are never written through. */
static char *cs(Sym s) { return (char *)sym_str(s); }

static char *str_dup(Writer *w, Str s) { return s.n ? arena_strndup(w->a, s.s, s.n) : NULL; }

static char *afmt(Writer *w, const char *fmt, ...)
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

#define NEW(w, T, init) new_msg((w), sizeof(T), &(T)init)
static void *new_msg(Writer *w, size_t sz, const void *init) { return arena_dup(w->a, init, sz); }
#define PTRS(w, T, n) ARENA_ARRAY((w)->a, T *, (n) ? (n) : 1)

static const char *vname(Writer *w, ValueId v)
{
	if (v == VNONE)
		return "";
	Sym s = val(w->m, v)->name;
	return s ? sym_str(s) : afmt(w, "_v%u", v);
}

static Onnx__StringStringEntryProto *kv(Writer *w, const char *k, const char *v)
{
	Onnx__StringStringEntryProto *e = NEW(w, Onnx__StringStringEntryProto,
		ONNX__STRING_STRING_ENTRY_PROTO__INIT);
	e->key = (char *)k;
	e->value = (char *)v;
	return e;
}

static Onnx__StringStringEntryProto **meta_list(Writer *w, const MetaProp *mp, uint32_t n)
{
	Onnx__StringStringEntryProto **v = PTRS(w, Onnx__StringStringEntryProto, n);
	for (uint32_t i = 0; i < n; i++)
		v[i] = kv(w, arena_strndup(w->a, mp[i].key.s, mp[i].key.n),
			arena_strndup(w->a, mp[i].val.s, mp[i].val.n));
	return v;
}

/* ---- types and tensors ---------------------------------------------------- */

static Onnx__TypeProto *type_proto(Writer *w, const Type *t);

static Onnx__TensorShapeProto *shape_proto(Writer *w, const Type *t)
{
	Onnx__TensorShapeProto *s = NEW(w, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
	s->n_dim = (size_t)t->rank;
	s->dim = PTRS(w, Onnx__TensorShapeProto__Dimension, t->rank);
	for (int32_t i = 0; i < t->rank; i++) {
		Onnx__TensorShapeProto__Dimension *d = NEW(w, Onnx__TensorShapeProto__Dimension,
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
		if (t->dims[i].sym) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = cs(t->dims[i].sym);
		} else if (t->dims[i].v >= 0) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = t->dims[i].v;
		}
		s->dim[i] = d;
	}
	return s;
}

static Onnx__TypeProto *wrapped_type(Writer *w, const Type *t)
{
	Onnx__TypeProto *p = NEW(w, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
	if (t->kind == TY_SEQ) {
		p->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
		p->sequence_type = NEW(w, Onnx__TypeProto__Sequence, ONNX__TYPE_PROTO__SEQUENCE__INIT);
		p->sequence_type->elem_type = type_proto(w, t->elem);
	} else {
		p->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
		p->optional_type = NEW(w, Onnx__TypeProto__Optional, ONNX__TYPE_PROTO__OPTIONAL__INIT);
		p->optional_type->elem_type = type_proto(w, t->elem);
	}
	return p;
}

/* NULL for an unknown type: the ValueInfoProto then has no type field. */
static Onnx__TypeProto *type_proto(Writer *w, const Type *t)
{
	if (!t)
		return NULL;
	if (t->kind != TY_TENSOR)
		return wrapped_type(w, t);
	Onnx__TypeProto *p = NEW(w, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
	p->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	p->tensor_type = NEW(w, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
	if (t->dtype != DT_UNDEF) {
		p->tensor_type->has_elem_type = 1;
		p->tensor_type->elem_type = dtype_onnx((DType)t->dtype);
	}
	if (t->rank >= 0)
		p->tensor_type->shape = shape_proto(w, t);
	return p;
}

static Onnx__TensorProto *tensor_head(Writer *w, const Type *t, const char *name)
{
	Onnx__TensorProto *p = NEW(w, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
	p->name = (char *)name;
	p->has_data_type = 1;
	p->data_type = dtype_onnx((DType)t->dtype);
	p->n_dims = t->rank > 0 ? (size_t)t->rank : 0;
	p->dims = ARENA_ARRAY(w->a, int64_t, p->n_dims + 1);
	for (size_t i = 0; i < p->n_dims; i++)
		p->dims[i] = t->dims[i].v;
	return p;
}

static void set_payload(Writer *w, Onnx__TensorProto *p, const uint8_t *data, size_t nbytes)
{
	if (!w->with_data)
		return;
	p->has_raw_data = 1;
	p->raw_data.data = (uint8_t *)data;
	p->raw_data.len = nbytes;
	w->out->init_bytes += nbytes;
}

static Onnx__TensorProto *tensor_proto(Writer *w, const Tensor *t, const char *name)
{
	Onnx__TensorProto *p = tensor_head(w, t->type, name);
	if (t->type->dtype != DT_STR) {
		set_payload(w, p, t->data, t->nbytes);
		return p;
	}
	int64_t n = type_numel(t->type);
	p->n_string_data = n > 0 ? (size_t)n : 0;
	p->string_data = ARENA_ARRAY(w->a, ProtobufCBinaryData, p->n_string_data + 1);
	for (size_t i = 0; i < p->n_string_data; i++) {
		p->string_data[i].data = (uint8_t *)t->strs[i].s;
		p->string_data[i].len = t->strs[i].n;
	}
	return p;
}

/* ---- weights (param / buffer values) --------------------------------------- */

static SafeTensors *open_weights(Writer *w)
{
	if (w->out->weights)
		return w->out->weights;
	const char *file = sym_str(w->m->weights);
	const char *dir = w->opt && w->opt->weights_dir ? w->opt->weights_dir : ".";
	char *path = file[0] == '/' ? afmt(w, "%s", file) : afmt(w, "%s/%s", dir, file);
	w->out->weights = safetensors_open(path);
	return w->out->weights;
}

static int shape_matches(const Type *t, const SafeTensor *st)
{
	if (t->rank < 0)
		return 1;
	if (t->rank != st->rank)
		return 0;
	for (int32_t i = 0; i < t->rank; i++)
		if (!t->dims[i].sym && t->dims[i].v >= 0 && t->dims[i].v != st->shape[i])
			return 0;
	return 1;
}

/* The dims written are the file's: they are what the bytes hold. */
static Onnx__TensorProto *weight_proto(Writer *w, ValueId id)
{
	const Value *v = val(w->m, id);
	const char *key = sym_str(v->key ? v->key : v->name);
	Type hdr = { .kind = TY_TENSOR, .dtype = v->type ? v->type->dtype : DT_UNDEF, .rank = -1 };
	if (!w->with_data && v->type && v->type->kind == TY_TENSOR && type_numel(v->type) >= 0)
		return tensor_head(w, v->type, vname(w, id));
	if (!w->m->weights) {
		diag_error(v->loc, "'%s' names weight '%s' but the module has no weights file", vname(w, id), key);
		return NULL;
	}
	SafeTensors *st = open_weights(w);
	if (!st)
		return NULL;
	const SafeTensor *e = safetensors_find(st, key);
	if (!e) {
		diag_error(v->loc, "weights file '%s' has no tensor '%s'", sym_str(w->m->weights), key);
		return NULL;
	}
	if ((v->type && v->type->kind != TY_TENSOR) || (hdr.dtype && hdr.dtype != e->dtype)
	    || (v->type && !shape_matches(v->type, e))) {
		diag_error(v->loc, "tensor '%s' in '%s' is %s with %d dims, which does not match the type of '%s'",
			key, sym_str(w->m->weights), dtype_name(e->dtype), e->rank, vname(w, id));
		return NULL;
	}
	Dim *dims = ARENA_ARRAY(w->a, Dim, e->rank + 1);
	for (int32_t i = 0; i < e->rank; i++)
		dims[i].v = e->shape[i];
	hdr.dtype = (uint8_t)e->dtype;
	hdr.rank = e->rank;
	hdr.dims = dims;
	Onnx__TensorProto *p = tensor_head(w, &hdr, vname(w, id));
	set_payload(w, p, e->data, e->nbytes);
	return p;
}

static Onnx__TensorProto *init_proto(Writer *w, ValueId id)
{
	const Value *v = val(w->m, id);
	if (v->kind == VK_CONST) {
		if (!v->init || !v->init->type) {
			diag_error(v->loc, "constant '%s' has no tensor", vname(w, id));
			return NULL;
		}
		return tensor_proto(w, v->init, vname(w, id));
	}
	return weight_proto(w, id);
}

/* ---- attributes ------------------------------------------------------------- */

static Onnx__GraphProto *graph_proto(Writer *w, const Graph *g);

/* The ONNX attribute type a list's elements give (an empty list of unknown
 * kind is INTS, the commonest). */
static int list_type(const Arg *a)
{
	int k = a->n ? a->u.list[0].kind : a->elem;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->u.list[i].kind == A_FLOAT)
			k = A_FLOAT;
	switch (k) {
	case A_FLOAT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
	case A_STR: case A_IDENT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	case A_TENSOR: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
	case A_GRAPH: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
	case A_TYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
	default: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	}
}

static int scalar_type(int kind)
{
	switch (kind) {
	case A_INT: case A_BOOL: case A_DTYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	case A_FLOAT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	case A_STR: case A_IDENT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	case A_TENSOR: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	case A_GRAPH: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	case A_TYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
	default: return 0;
	}
}

static int64_t arg_int(const Arg *a)
{
	if (a->kind == A_DTYPE)
		return dtype_onnx((DType)a->u.i);
	if (a->kind == A_FLOAT)
		return (int64_t)a->u.f;
	return a->u.i;
}

static ProtobufCBinaryData arg_bytes(const Arg *a)
{
	if (a->kind == A_IDENT)
		return (ProtobufCBinaryData){ sym_len(a->u.sym), (uint8_t *)sym_str(a->u.sym) };
	return (ProtobufCBinaryData){ a->u.s.n, (uint8_t *)a->u.s.s };
}

static void list_payload(Writer *w, Onnx__AttributeProto *p, const Arg *a)
{
	size_t n = a->n;
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		p->n_floats = n;
		p->floats = ARENA_ARRAY(w->a, float, n + 1);
		for (size_t i = 0; i < n; i++)
			p->floats[i] = a->u.list[i].kind == A_FLOAT ? (float)a->u.list[i].u.f
				: (float)arg_int(&a->u.list[i]);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
		p->n_strings = n;
		p->strings = ARENA_ARRAY(w->a, ProtobufCBinaryData, n + 1);
		for (size_t i = 0; i < n; i++)
			p->strings[i] = arg_bytes(&a->u.list[i]);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
		p->n_tensors = n;
		p->tensors = PTRS(w, Onnx__TensorProto, n);
		for (size_t i = 0; i < n; i++)
			p->tensors[i] = tensor_proto(w, a->u.list[i].u.t, NULL);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
		p->n_graphs = n;
		p->graphs = PTRS(w, Onnx__GraphProto, n);
		for (size_t i = 0; i < n; i++)
			p->graphs[i] = graph_proto(w, a->u.list[i].u.g);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
		p->n_type_protos = n;
		p->type_protos = PTRS(w, Onnx__TypeProto, n);
		for (size_t i = 0; i < n; i++)
			p->type_protos[i] = type_proto(w, a->u.list[i].u.ty);
		break;
	default:
		p->n_ints = n;
		p->ints = ARENA_ARRAY(w->a, int64_t, n + 1);
		for (size_t i = 0; i < n; i++)
			p->ints[i] = arg_int(&a->u.list[i]);
	}
}

static void scalar_payload(Writer *w, Onnx__AttributeProto *p, const Arg *a)
{
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		p->has_i = 1;
		p->i = arg_int(a);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		p->has_f = 1;
		p->f = (float)a->u.f;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		p->has_s = 1;
		p->s = arg_bytes(a);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		p->t = tensor_proto(w, a->u.t, NULL);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		p->g = graph_proto(w, a->u.g);
		break;
	default:
		p->tp = type_proto(w, a->u.ty);
	}
}

/* The ONNX type of a kind of Arg, lists included. */
static int arg_attr_type(const Arg *a)
{
	return a->kind == A_LIST ? list_type(a) : scalar_type(a->kind);
}

/* An attribute reference must still carry the referenced attribute's type.
 * The importer keeps it in Arg.elem; otherwise it is taken from a call of
 * the function that sets the attribute. */
static int ref_type(Writer *w, const Func *f, Sym attr, const Arg *a)
{
	if (a->elem)
		return a->elem;
	for (uint32_t gi = 0; f && gi < w->m->graphs.n; gi++)
		for (const Node *n = w->m->graphs.v[gi]->first; n; n = n->next)
			if (n->domain == f->domain && n->name == f->name)
				for (uint32_t k = 0; k < n->nkw; k++)
					if (n->kw[k].name == attr && arg_attr_type(&n->kw[k].val))
						return arg_attr_type(&n->kw[k].val);
	return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static Onnx__AttributeProto *attr_proto(Writer *w, const Node *n, const Named *kw)
{
	const Arg *a = &kw->val;
	if (a->kind == A_NONE)
		return NULL;
	Onnx__AttributeProto *p = NEW(w, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
	p->name = cs(kw->name);
	p->has_type = 1;
	if (a->kind == A_ATTRREF) {
		p->ref_attr_name = cs(a->u.sym);
		p->type = ref_type(w, w->func, a->u.sym, a);
		return p;
	}
	p->type = arg_attr_type(a);
	if (!p->type) {
		diag_error(n->loc, "attribute '%s' of %s::%s cannot be written to ONNX (a %s)",
			sym_str(kw->name), sym_str(n->domain), sym_str(n->name),
			a->kind == A_VALUE ? "value" : a->kind == A_PARAM ? "decomposition parameter" : "literal");
		w->failed = 1;
		return NULL;
	}
	if (a->kind == A_LIST)
		list_payload(w, p, a);
	else
		scalar_payload(w, p, a);
	return p;
}

/* ---- provenance -> metadata_props ------------------------------------------ */

/* Python's repr of a str, which is how PyTorch writes its list-valued keys. */
static void py_repr(FILE *f, const char *s, size_t n)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	fputc(q, f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\' || c == (unsigned char)q)
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc(q, f);
}

typedef enum { PV_NAMESPACE, PV_CLASSES, PV_PATHS } ProvKey;

/* namespace: "path: class" per scope joined by "/", the root scope ("")
 * as its class alone; the other two are Python lists of strings.  Each
 * ends with the FX node's own entry when there is one (leaf >= 0). */
static char *prov_string(Writer *w, const Prov *p, ProvKey k, int leaf, Str lname, Str ltarget)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&buf, &len);
	if (k != PV_NAMESPACE)
		fputc('[', f);
	for (uint32_t i = 0; i < p->nscope + (leaf >= 0); i++) {
		int own = i == p->nscope;
		Str path = own ? lname : (Str){ sym_str(p->scope[i].path), sym_len(p->scope[i].path) };
		Str cls = own ? ltarget : (Str){ sym_str(p->scope[i].cls), sym_len(p->scope[i].cls) };
		fputs(i ? (k == PV_NAMESPACE ? "/" : ", ") : "", f);
		if (k == PV_NAMESPACE)
			fprintf(f, "%.*s%s%.*s", (int)path.n, path.s, path.n ? ": " : "", (int)cls.n, cls.s);
		else
			py_repr(f, k == PV_CLASSES ? cls.s : path.s, k == PV_CLASSES ? cls.n : path.n);
	}
	if (k != PV_NAMESPACE)
		fputc(']', f);
	fclose(f);
	char *s = arena_strndup(w->a, buf, len);
	free(buf);
	return s;
}

/* PyTorch's order: namespace, class_hierarchy, name_scopes, fx_node,
 * stack_trace; then onnxc's source location and the other entries. */
static void prov_props(Writer *w, const Prov *p, Onnx__NodeProto *np)
{
	Onnx__StringStringEntryProto **v = PTRS(w, Onnx__StringStringEntryProto, p->nmeta + 5);
	size_t n = 0;
	Str lname, ltarget;
	int leaf = prov_fx_leaf(p, &lname, &ltarget);
	if (p->nscope || leaf >= 0) {
		v[n++] = kv(w, "namespace", prov_string(w, p, PV_NAMESPACE, leaf, lname, ltarget));
		v[n++] = kv(w, "pkg.torch.onnx.class_hierarchy", prov_string(w, p, PV_CLASSES, leaf, lname, ltarget));
		v[n++] = kv(w, "pkg.torch.onnx.name_scopes", prov_string(w, p, PV_PATHS, leaf, lname, ltarget));
	}
	Onnx__StringStringEntryProto **rest = meta_list(w, p->meta, p->nmeta);
	if (leaf >= 0)
		v[n++] = rest[leaf];
	if (p->trace.n)
		v[n++] = kv(w, "pkg.torch.onnx.stack_trace", str_dup(w, p->trace));
	if (p->file)
		v[n++] = kv(w, "pkg.onnxc.source_location", p->col
			? afmt(w, "%s:%u:%u", sym_str(p->file), p->line, p->col)
			: afmt(w, "%s:%u", sym_str(p->file), p->line));
	for (uint32_t i = 0; i < p->nmeta; i++)
		if ((int)i != leaf)
			v[n++] = rest[i];
	np->n_metadata_props = n;
	np->metadata_props = v;
}

/* ---- node names ------------------------------------------------------------ */

typedef struct Suffix { Sym base; uint32_t next; } Suffix;

typedef struct Names {
	HashMap used;               /* names taken in this graph (items: Syms) */
	HashMap next;               /* base name -> Suffix *, the next suffix to try */
	Arena *a;                   /* where the Suffixes live */
} Names;

static int name_used(const Names *nm, Sym s)
{
	return hashmap_get(&nm->used, hash_u64(s), NULL, (const void *)(uintptr_t)s) != 0;
}

static void take_name(Names *nm, Sym s)
{
	hashmap_intern(&nm->used, hash_u64(s), NULL, (const void *)(uintptr_t)s, s);
}

static int suffix_of(uintptr_t item, const void *base)
{
	return ((const Suffix *)item)->base == (Sym)(uintptr_t)base;
}

static uint32_t *next_suffix(Names *nm, Sym b)
{
	const void *key = (const void *)(uintptr_t)b;
	Suffix *x = (Suffix *)hashmap_get(&nm->next, hash_u64(b), suffix_of, key);
	if (!x) {
		x = ARENA_NEW(nm->a, Suffix);
		x->base = b;
		hashmap_intern(&nm->next, hash_u64(b), suffix_of, key, (uintptr_t)x);
	}
	return &x->next;
}

/* The op type without an overload: "add.Tensor" -> "add". */
static Sym op_type(Sym name)
{
	const char *s = sym_str(name), *dot = strchr(s, '.');
	return dot ? sym_intern(s, (size_t)(dot - s)) : name;
}

/* "/layer1/conv": each scope's path made relative to the one before it,
 * the way PyTorch's TorchScript exporter names nodes; "" if no scopes. */
static void scope_prefix(FILE *f, const Prov *p)
{
	const char *prev = "";
	for (uint32_t i = 0; p && i < p->nscope; i++) {
		const char *s = sym_str(p->scope[i].path);
		size_t pl = strlen(prev);
		if (!s[0])
			continue;
		if (pl && strncmp(s, prev, pl) == 0 && s[pl] == '.')
			fprintf(f, "/%s", s + pl + 1);
		else
			fprintf(f, "/%s", s);
		prev = s;
	}
}

/* Unscoped names count from 0 (Add_0, Add_1); scoped ones are numbered
 * from the second on (/l/Mul, /l/Mul_1), as PyTorch does. */
static Sym unique_name(Names *nm, const char *base, int always_number)
{
	Sym b = sym_cstr(base);
	uint32_t *next = next_suffix(nm, b);
	if (!always_number && !name_used(nm, b)) {
		take_name(nm, b);
		return b;
	}
	char buf[64];
	for (;;) {
		size_t bl = strlen(base);
		char *s = bl + 24 > sizeof buf ? xmalloc(bl + 24) : buf;
		snprintf(s, bl + 24, "%s_%u", base, (*next)++ + (always_number ? 0 : 1));
		Sym c = sym_cstr(s);
		if (s != buf)
			free(s);
		if (!name_used(nm, c)) {
			take_name(nm, c);
			return c;
		}
	}
}

static Sym derive_name(Names *nm, const Node *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&buf, &len);
	scope_prefix(f, n->prov);
	int scoped = ftell(f) > 0;
	fprintf(f, "%s%s", scoped ? "/" : "", sym_str(op_type(n->name)));
	fclose(f);
	Sym s = unique_name(nm, buf, !scoped);
	free(buf);
	return s;
}

/* ---- nodes and graphs ------------------------------------------------------ */

static char *dom_str(Writer *w, Sym d) { return d == w->s_onnx ? "" : cs(d); }

static int node_io(Writer *w, const Node *n, Onnx__NodeProto *p)
{
	p->n_input = n->nargs;
	p->input = PTRS(w, char, n->nargs);
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Arg *a = &n->args[i];
		if (a->kind != A_VALUE && a->kind != A_NONE) {
			diag_error(n->loc, "argument %u of %s::%s is a literal, but ONNX inputs are values "
				"(decompose the node first)", i + 1, sym_str(n->domain), sym_str(n->name));
			return -1;
		}
		p->input[i] = (char *)(a->kind == A_VALUE ? vname(w, a->u.v) : "");
	}
	p->n_output = n->nres;
	p->output = PTRS(w, char, n->nres);
	for (uint32_t i = 0; i < n->nres; i++)
		p->output[i] = (char *)vname(w, n->res[i]);
	/* Omitted trailing optional inputs and outputs are left out rather than
	 * written as "": ONNX allows both, and ONNX Runtime's fusions (a
	 * BatchNormalization into a Conv without bias, MaxPool without
	 * indices) match only the shorter form. */
	while (p->n_input && !p->input[p->n_input - 1][0])
		p->n_input--;
	while (p->n_output && !p->output[p->n_output - 1][0])
		p->n_output--;
	return 0;
}

static void node_attrs(Writer *w, const Node *n, Onnx__NodeProto *p)
{
	p->attribute = PTRS(w, Onnx__AttributeProto, n->nkw);
	for (uint32_t i = 0; i < n->nkw; i++) {
		Onnx__AttributeProto *ap = attr_proto(w, n, &n->kw[i]);
		if (ap)
			p->attribute[p->n_attribute++] = ap;
	}
}

/* Where the IR's dotted spelling "op.overload" is an overload: in the ATen
 * domains, whose names are spelled that way.  Elsewhere a dot belongs to
 * the name (TorchScript names a second variant of a module's function
 * `Linear.1`), and splitting it would call another function. */
static const char *overload_dot(Sym domain, const char *name)
{
	return domain == S_aten || domain == S__operator ? strchr(name, '.') : NULL;
}

static void node_op(Writer *w, const Node *n, Onnx__NodeProto *p)
{
	const char *s = sym_str(n->name), *dot = overload_dot(n->domain, s);
	p->domain = dom_str(w, n->domain);
	p->op_type = dot ? arena_strndup(w->a, s, (size_t)(dot - s)) : (char *)s;
	if (dot)
		p->overload = (char *)dot + 1;
}

static Onnx__NodeProto *node_proto(Writer *w, const Node *n, Names *nm)
{
	Onnx__NodeProto *p = NEW(w, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
	node_op(w, n, p);
	p->name = cs(n->node_name ? n->node_name : derive_name(nm, n));
	if (node_io(w, n, p) != 0) {
		w->failed = 1;
		return p;
	}
	node_attrs(w, n, p);
	p->doc_string = str_dup(w, n->doc);
	if (n->prov)
		prov_props(w, n->prov, p);
	return p;
}

static Onnx__ValueInfoProto *value_info(Writer *w, ValueId v, const Type *t)
{
	Onnx__ValueInfoProto *p = NEW(w, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
	p->name = (char *)vname(w, v);
	p->type = type_proto(w, t ? t : val(w->m, v)->type);
	return p;
}

typedef VEC(Onnx__NodeProto *) NodeVec;
typedef VEC(Onnx__ValueInfoProto *) InfoVec;

/* Typed results of nodes that are not outputs: ONNX's value_info. */
static void collect_info(Writer *w, const Graph *g, InfoVec *iv)
{
	for (const Node *n = g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++) {
			ValueId v = n->res[i];
			int is_out = 0;
			for (uint32_t o = 0; o < g->nout && !is_out; o++)
				is_out = g->out[o] == v;
			if (v && val(w->m, v)->type && !is_out)
				VEC_PUSH(w->a, *iv, value_info(w, v, NULL));
		}
}

/* Explicit names are reserved first so derived ones never collide. */
static void graph_nodes(Writer *w, const Graph *g, NodeVec *nv)
{
	Names nm = { .a = w->a };
	for (const Node *n = g->first; n; n = n->next)
		if (n->node_name)
			take_name(&nm, n->node_name);
	for (const Node *n = g->first; n; n = n->next)
		VEC_PUSH(w->a, *nv, node_proto(w, n, &nm));
	hashmap_free(&nm.used);
	hashmap_free(&nm.next);
}

static int is_input(const Value *v) { return v->kind == VK_INPUT; }

static void add_init(Writer *w, Onnx__GraphProto *p, Onnx__TensorProto *t)
{
	if (!t)
		w->failed = 1;
	else
		p->initializer[p->n_initializer++] = t;
}

/* An input with a default is a graph input and an initializer of the same
 * name.  With keep_inits_as_inputs, every initializer of the main graph is
 * also listed as an input, after the inputs proper (as torch.onnx.export's
 * keep_initializers_as_inputs does). */
static void graph_inputs(Writer *w, const Graph *g, Onnx__GraphProto *p)
{
	int all = w->opt && w->opt->keep_inits_as_inputs && g == w->m->graphs.v[0];
	p->input = PTRS(w, Onnx__ValueInfoProto, g->nin + (all ? g->inits.n : 0));
	p->initializer = PTRS(w, Onnx__TensorProto, g->inits.n + g->nin);
	for (uint32_t i = 0; i < g->nin; i++) {
		const Value *v = val(w->m, g->in[i]);
		if (!is_input(v))
			continue;
		p->input[p->n_input++] = value_info(w, g->in[i], NULL);
		if (v->init)
			add_init(w, p, tensor_proto(w, v->init, vname(w, g->in[i])));
	}
	for (uint32_t i = 0; i < g->inits.n; i++) {
		if (all)
			p->input[p->n_input++] = value_info(w, g->inits.v[i], NULL);
		add_init(w, p, init_proto(w, g->inits.v[i]));
	}
}

/* A value returned twice gets an Identity per repeat: ONNX output names
 * must be distinct.  So does a subgraph's output that is an outer value,
 * and a function's output that is one of its inputs: ONNX Runtime refuses
 * a body that returns one directly. */
static const char *output_name(Writer *w, const Graph *g, uint32_t i, NodeVec *nv)
{
	const char *name = vname(w, g->out[i]);
	uint32_t j = 0;
	while (j < i && g->out[j] != g->out[i])
		j++;
	int outer = g->parent && !graph_defines(w->m, g, g->out[i]);
	int input = w->func && w->func->body == g && is_input(val(w->m, g->out[i]));
	if (j == i && !outer && !input)
		return name;
	Onnx__NodeProto *id = NEW(w, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
	id->op_type = "Identity";
	id->domain = "";
	id->name = afmt(w, "Identity_output_%u", i);
	id->n_input = id->n_output = 1;
	id->input = PTRS(w, char, 1);
	id->output = PTRS(w, char, 1);
	id->input[0] = (char *)name;
	id->output[0] = afmt(w, "%s__%u", name, i);
	VEC_PUSH(w->a, *nv, id);
	return id->output[0];
}

static void graph_outputs(Writer *w, const Graph *g, Onnx__GraphProto *p, NodeVec *nv)
{
	p->n_output = g->nout;
	p->output = PTRS(w, Onnx__ValueInfoProto, g->nout);
	for (uint32_t i = 0; i < g->nout; i++) {
		const Type *t = val(w->m, g->out[i])->type;
		if (!t && g->out_decl)
			t = g->out_decl[i];
		p->output[i] = value_info(w, g->out[i], t);
		p->output[i]->name = (char *)output_name(w, g, i, nv);
	}
}

static Onnx__GraphProto *graph_proto(Writer *w, const Graph *g)
{
	Onnx__GraphProto *p = NEW(w, Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
	p->name = g->name ? cs(g->name) : "graph";
	p->doc_string = str_dup(w, g->doc);
	graph_inputs(w, g, p);
	NodeVec nv = { 0 };
	InfoVec iv = { 0 };
	graph_nodes(w, g, &nv);
	graph_outputs(w, g, p, &nv);
	collect_info(w, g, &iv);
	p->n_node = nv.n;
	p->node = nv.v;
	p->n_value_info = iv.n;
	p->value_info = iv.v;
	p->n_metadata_props = g->nmeta;
	p->metadata_props = meta_list(w, g->meta, g->nmeta);
	return p;
}

/* ---- the program's signature on inputs, outputs and initializers ---------- */

/* What PyTorch's exporter writes on graph values: InputSpec kind and
 * persistent from the value's kind (a buffer is persistent), OutputSpec
 * kind from functionalize's graph_signature entry (else USER_OUTPUT), and
 * any graph `meta("input:NAME:KEY": "v")` entry (`initializer:`,
 * `output:`) as KEY on that input, initializer or output (the bridge's
 * original_node_name, a non-persistent buffer), in place of the graph
 * entry.  An input returned as an output has one name and two slots. */

#define SIG_IN_KIND "pkg.torch.export.graph_signature.InputSpec.kind"
#define SIG_IN_PERSISTENT "pkg.torch.export.graph_signature.InputSpec.persistent"
#define SIG_OUT_KIND "pkg.torch.export.graph_signature.OutputSpec.kind"
#define SIG_TEXT "pkg.torch.export.ExportedProgram.graph_signature"

typedef VEC(Onnx__StringStringEntryProto *) PropVec;
typedef struct SigSlot {
	const char *name;
	Sym sym;
	const char *role;           /* "input:", "initializer:" or "output:" */
	PropVec props;
	uint32_t next;              /* 1 + the next slot of the same name, or 0 */
	size_t *np;                 /* where the entries go in the proto */
	Onnx__StringStringEntryProto ***vp;
} SigSlot;
typedef struct SigKey { const void *base; Sym sym; } SigKey;

static void put_prop(Writer *w, PropVec *pv, const char *k, const char *v)
{
	for (uint32_t i = 0; i < pv->n; i++)
		if (!strcmp(pv->v[i]->key, k)) {
			pv->v[i]->value = (char *)v;
			return;
		}
	VEC_PUSH(w->a, *pv, kv(w, k, v));
}

static void input_kind(Writer *w, SigSlot *sl, const Value *v)
{
	static const char *const kinds[] = { [VK_INPUT] = "USER_INPUT", [VK_PARAM] = "PARAMETER",
		[VK_BUFFER] = "BUFFER" };
	if (v->kind == VK_NODE || v->kind == VK_CONST)
		return;
	put_prop(w, &sl->props, SIG_IN_KIND, kinds[v->kind]);
	put_prop(w, &sl->props, SIG_IN_PERSISTENT, v->kind == VK_BUFFER ? "True" : "None");
}

/* The outputs' kinds, in order, from the "output KIND ..." lines of the
 * signature text, upper-cased (user_output -> USER_OUTPUT); USER_OUTPUT
 * where there is no such line. */
static void output_kinds(Writer *w, const char *sig, SigSlot *out, size_t nout)
{
	size_t i = 0;
	for (const char *l = sig; l && *l && i < nout; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "output ", 7))
			continue;
		char *k = arena_strndup(w->a, l + 7, strcspn(l + 7, " \n"));
		for (char *c = k; *c; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
		put_prop(w, &out[i++].props, SIG_OUT_KIND, k);
	}
	for (; i < nout; i++)
		put_prop(w, &out[i].props, SIG_OUT_KIND, "USER_OUTPUT");
}

static int slot_is(uintptr_t item, const void *key)
{
	const SigKey *k = key;
	return ((const SigSlot *)k->base)[item - 1].sym == k->sym;
}

static int value_is(uintptr_t item, const void *key)
{
	const SigKey *k = key;
	return ((const Module *)k->base)->vals.v[item].name == k->sym;
}

/* Value entries of the graph meta go to the slots of that name; the rest
 * stay on the graph. */
static void value_meta(Writer *w, Onnx__GraphProto *p, SigSlot *sl, uint32_t ns)
{
	HashMap by_name = { 0 };
	for (uint32_t i = 0; i < ns; i++) {
		SigKey key = { sl, sl[i].sym };
		uint32_t first = (uint32_t)hashmap_intern(&by_name, hash_u64(key.sym), slot_is, &key, i + 1);
		if (first != i + 1) {
			sl[i].next = sl[first - 1].next;
			sl[first - 1].next = i + 1;
		}
	}
	size_t kept = 0;
	for (size_t i = 0; i < p->n_metadata_props; i++) {
		Onnx__StringStringEntryProto *e = p->metadata_props[i];
		size_t rl = strcspn(e->key, ":");
		const char *colon = e->key[rl] && (!strncmp(e->key, "input:", rl + 1)
			|| !strncmp(e->key, "initializer:", rl + 1) || !strncmp(e->key, "output:", rl + 1))
			? strrchr(e->key + rl + 1, ':') : NULL;
		if (!colon) {
			p->metadata_props[kept++] = e;
			continue;
		}
		SigKey key = { sl, sym_intern(e->key + rl + 1, (size_t)(colon - e->key - rl - 1)) };
		for (uint32_t at = (uint32_t)hashmap_get(&by_name, hash_u64(key.sym), slot_is, &key); at; at = sl[at - 1].next)
			if (!strncmp(sl[at - 1].role, e->key, rl + 1))
				put_prop(w, &sl[at - 1].props, colon + 1, e->value);
	}
	p->n_metadata_props = kept;
	hashmap_free(&by_name);
}

/* Slot i: the graph's inputs, then its initializers, then its outputs. */
static void slot_init(SigSlot *sl, Onnx__GraphProto *p, size_t i)
{
	size_t ni = p->n_input, nt = p->n_initializer;
	if (i < ni)
		*sl = (SigSlot){ p->input[i]->name, 0, "input:", { 0 }, 0,
			&p->input[i]->n_metadata_props, &p->input[i]->metadata_props };
	else if (i < ni + nt)
		*sl = (SigSlot){ p->initializer[i - ni]->name, 0, "initializer:", { 0 }, 0,
			&p->initializer[i - ni]->n_metadata_props, &p->initializer[i - ni]->metadata_props };
	else
		*sl = (SigSlot){ p->output[i - ni - nt]->name, 0, "output:", { 0 }, 0,
			&p->output[i - ni - nt]->n_metadata_props, &p->output[i - ni - nt]->metadata_props };
	sl->sym = sym_cstr(sl->name ? sl->name : "");
}

static void signature_props(Writer *w, const Graph *g, Onnx__GraphProto *p)
{
	uint32_t ns = (uint32_t)(p->n_input + p->n_initializer + p->n_output);
	uint32_t nin = (uint32_t)(p->n_input + p->n_initializer);
	SigSlot *sl = ARENA_ARRAY(w->a, SigSlot, ns + 1);
	HashMap values = { 0 };     /* graph inputs and initializers (ValueIds) by name */
	for (uint32_t i = 0; i < g->nin + g->inits.n; i++) {
		ValueId v = i < g->nin ? g->in[i] : g->inits.v[i - g->nin];
		SigKey key = { w->m, val(w->m, v)->name };
		if (key.sym && v)
			hashmap_intern(&values, hash_u64(key.sym), value_is, &key, v);
	}
	for (uint32_t i = 0; i < ns; i++) {
		slot_init(&sl[i], p, i);
		SigKey key = { w->m, sl[i].sym };
		ValueId v = i < nin ? (ValueId)hashmap_get(&values, hash_u64(key.sym), value_is, &key) : 0;
		if (v)
			input_kind(w, &sl[i], val(w->m, v));
	}
	hashmap_free(&values);
	const char *sig = NULL;
	for (uint32_t i = 0; i < g->nmeta; i++)
		if (g->meta[i].key.n == strlen(SIG_TEXT) && !memcmp(g->meta[i].key.s, SIG_TEXT, g->meta[i].key.n))
			sig = str_dup(w, g->meta[i].val);
	output_kinds(w, sig, sl + nin, p->n_output);
	value_meta(w, p, sl, ns);
	for (uint32_t i = 0; i < ns; i++) {
		*sl[i].np = sl[i].props.n;
		*sl[i].vp = sl[i].props.v;
	}
}

/* ---- opset imports --------------------------------------------------------- */

typedef VEC(Onnx__OperatorSetIdProto *) ProtoOpsets;

static int has_domain(const ProtoOpsets *v, const char *d)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i]->domain, d) == 0)
			return 1;
	return 0;
}

static void add_opset(Writer *w, ProtoOpsets *v, const char *dom, int64_t version)
{
	if (has_domain(v, dom))
		return;
	Onnx__OperatorSetIdProto *o = NEW(w, Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
	o->domain = (char *)dom;
	o->has_version = 1;
	o->version = version;
	VEC_PUSH(w->a, *v, o);
}

typedef struct DomainScan { Writer *w; ProtoOpsets *v; } DomainScan;

static Status scan_domains(const GraphVisit *gv, void *ctx)
{
	DomainScan *d = ctx;
	for (const Node *n = gv->g->first; n; n = n->next)
		add_opset(d->w, d->v, dom_str(d->w, n->domain), n->domain == d->w->s_onnx ? d->w->default_version : 1);
	return OK;
}

/* Every domain a graph's nodes use, subgraphs included: the graph's in
 * first-use order, then each subgraph's (module_walk's order). */
static void graph_domains(Writer *w, Graph *g, ProtoOpsets *v)
{
	graph_walk(g, scan_domains, &(DomainScan){ w, v });
}

static void declared_opsets(Writer *w, const Opset *o, uint32_t n, ProtoOpsets *v)
{
	for (uint32_t i = 0; i < n; i++)
		add_opset(w, v, dom_str(w, o[i].domain), o[i].version);
}

static Onnx__OperatorSetIdProto **model_opsets(Writer *w, size_t *n)
{
	ProtoOpsets v = { 0 };
	declared_opsets(w, w->m->opsets.v, w->m->opsets.n, &v);
	add_opset(w, &v, "", w->default_version);
	for (uint32_t i = 0; i < w->m->graphs.n && i < 1; i++)
		graph_domains(w, w->m->graphs.v[i], &v);
	for (uint32_t i = 0; i < w->m->funcs.n; i++) {
		add_opset(w, &v, dom_str(w, w->m->funcs.v[i]->domain), 1);
		graph_domains(w, w->m->funcs.v[i]->body, &v);
	}
	*n = v.n;
	return v.v;
}

static int64_t default_version(Writer *w)
{
	return opsets_onnx(&w->m->opsets, w->opt && w->opt->opset > 0 ? w->opt->opset : DEFAULT_OPSET);
}

/* ---- local functions -------------------------------------------------------- */

/* FunctionProto has no initializers: constants become Constant nodes. */
static Onnx__NodeProto *const_node(Writer *w, ValueId id)
{
	Onnx__TensorProto *t = init_proto(w, id);
	Onnx__NodeProto *p = NEW(w, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
	Onnx__AttributeProto *a = NEW(w, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
	if (!t) {
		w->failed = 1;
		return p;
	}
	t->name = NULL;
	a->name = "value";
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	a->t = t;
	p->op_type = "Constant";
	p->domain = "";
	p->name = afmt(w, "Constant_%s", vname(w, id));
	p->n_output = p->n_attribute = 1;
	p->output = PTRS(w, char, 1);
	p->output[0] = (char *)vname(w, id);
	p->attribute = PTRS(w, Onnx__AttributeProto, 1);
	p->attribute[0] = a;
	return p;
}

static void func_io(Writer *w, const Graph *g, Onnx__FunctionProto *p)
{
	p->input = PTRS(w, char, g->nin);
	for (uint32_t i = 0; i < g->nin; i++)
		if (is_input(val(w->m, g->in[i])))
			p->input[p->n_input++] = (char *)vname(w, g->in[i]);
}

static void func_body(Writer *w, const Graph *g, Onnx__FunctionProto *p)
{
	NodeVec nv = { 0 };
	InfoVec iv = { 0 };
	for (uint32_t i = 0; i < g->inits.n; i++)
		VEC_PUSH(w->a, nv, const_node(w, g->inits.v[i]));
	graph_nodes(w, g, &nv);
	p->n_output = g->nout;
	p->output = PTRS(w, char, g->nout);
	for (uint32_t i = 0; i < g->nout; i++)
		p->output[i] = (char *)output_name(w, g, i, &nv);
	collect_info(w, g, &iv);
	p->n_node = nv.n;
	p->node = nv.v;
	p->n_value_info = iv.n;
	p->value_info = iv.v;
}

static Onnx__FunctionProto *func_proto(Writer *w, const Func *f)
{
	Onnx__FunctionProto *p = NEW(w, Onnx__FunctionProto, ONNX__FUNCTION_PROTO__INIT);
	const char *s = sym_str(f->name), *dot = overload_dot(f->domain, s);
	p->domain = dom_str(w, f->domain);
	p->name = dot ? arena_strndup(w->a, s, (size_t)(dot - s)) : (char *)s;
	p->overload = dot ? (char *)dot + 1 : NULL;
	p->n_attribute = f->nattr;
	p->attribute = PTRS(w, char, f->nattr);
	for (uint32_t i = 0; i < f->nattr; i++)
		p->attribute[i] = cs(f->attrs[i]);
	w->func = f;
	func_io(w, f->body, p);
	func_body(w, f->body, p);
	w->func = NULL;
	p->doc_string = str_dup(w, f->body->doc);
	ProtoOpsets v = { 0 };
	declared_opsets(w, f->opsets.v, f->opsets.n, &v);
	graph_domains(w, f->body, &v);
	p->n_opset_import = v.n;
	p->opset_import = v.v;
	return p;
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

/* ---- files: temporary, then renamed ------------------------------------------ */

typedef struct OutFile {
	char *tmp;                  /* malloc'd; NULL once renamed */
	FILE *f;
	int err;                    /* errno of the first failed write */
} OutFile;

static int out_open(OutFile *o, const char *path)
{
	*o = (OutFile){ 0 };
	size_t n = strlen(path) + 16;
	o->tmp = xmalloc(n);
	snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		diag_error(file_loc(path), "cannot create output file: %s", strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	o->f = fdopen(fd, "wb");
	if (!o->f)
		ONNXC_BUG("fdopen: %s", strerror(errno));
	return 0;
}

static void out_write(OutFile *o, const void *p, size_t n)
{
	if (!o->err && n && fwrite(p, 1, n, o->f) != n)
		o->err = errno ? errno : EIO;
}

/* Tensor payloads go out in slices; a slice read from the weights mapping
 * (or an imported model's external data, ir/mapped.c) is dropped from the resident set once written, so peak memory stays near
 * one slice however large the weights are (mapped pages that were read
 * count in RSS until released, even though the kernel could reclaim them). */
static void out_payload(OutFile *o, const SafeTensors *st, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += PAYLOAD_SLICE) {
		size_t c = n - i < PAYLOAD_SLICE ? n - i : PAYLOAD_SLICE;
		out_write(o, p + i, c);
		safetensors_release(st, p + i, c);
		mapped_release(p + i, c);
		progress_add(c);
	}
}

/* Flushes and closes; 0 if every byte reached the file. */
static int out_finish(OutFile *o, const char *path)
{
	if (fclose(o->f) != 0 && !o->err)
		o->err = errno ? errno : EIO;
	o->f = NULL;
	if (o->err)
		diag_error(file_loc(path), "cannot write: %s", strerror(o->err));
	return o->err ? -1 : 0;
}

static void out_abort(OutFile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	*o = (OutFile){ 0 };
}

static int out_commit(OutFile *o, const char *path)
{
	if (rename(o->tmp, path) != 0) {
		diag_error(file_loc(path), "cannot rename the output into place: %s", strerror(errno));
		out_abort(o);
		return -1;
	}
	free(o->tmp);
	*o = (OutFile){ 0 };
	return 0;
}

typedef struct FileBuffer {
	ProtobufCBuffer base;
	OutFile *out;
	const SafeTensors *weights;
} FileBuffer;

/* protobuf-c hands bytes fields (raw_data) over whole, without a copy. */
static void filebuf_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	FileBuffer *fb = (FileBuffer *)b;
	out_payload(fb->out, fb->weights, data, len);
}

/* ---- external data ------------------------------------------------------------ */

typedef struct Ext {
	Writer *w;
	OutFile side;
	const char *location;       /* relative to the model's directory */
	uint64_t off;
	size_t threshold;
} Ext;

static void ext_tensor(Ext *e, Onnx__TensorProto *t)
{
	if (!t->has_raw_data || t->raw_data.len < e->threshold)
		return;
	static const uint8_t zeros[EXTERNAL_ALIGN];
	uint64_t pad = (EXTERNAL_ALIGN - e->off % EXTERNAL_ALIGN) % EXTERNAL_ALIGN;
	out_write(&e->side, zeros, (size_t)pad);
	e->off += pad;
	Writer *w = e->w;
	out_payload(&e->side, w->out->weights, t->raw_data.data, t->raw_data.len);
	t->n_external_data = 3;
	t->external_data = PTRS(w, Onnx__StringStringEntryProto, 3);
	t->external_data[0] = kv(w, "location", e->location);
	t->external_data[1] = kv(w, "offset", afmt(w, "%llu", (unsigned long long)e->off));
	t->external_data[2] = kv(w, "length", afmt(w, "%zu", t->raw_data.len));
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	e->off += t->raw_data.len;
	t->has_raw_data = 0;
	t->raw_data = (ProtobufCBinaryData){ 0, NULL };
}

static void ext_graph(Ext *e, Onnx__GraphProto *g);

static void ext_attr(Ext *e, Onnx__AttributeProto *a)
{
	if (a->g)
		ext_graph(e, a->g);
	for (size_t i = 0; i < a->n_graphs; i++)
		ext_graph(e, a->graphs[i]);
}

/* Initializers only: attribute tensors stay inline, as ONNX Runtime wants. */
static void ext_graph(Ext *e, Onnx__GraphProto *g)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		ext_tensor(e, g->initializer[i]);
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_attribute; k++)
			ext_attr(e, g->node[i]->attribute[k]);
}

static char *side_path(Writer *w, const char *path, const char **location)
{
	const char *file = w->opt ? w->opt->external_file : NULL;
	const char *slash = strrchr(path, '/');
	if (!file) {
		*location = afmt(w, "%s.data", slash ? slash + 1 : path);
		return afmt(w, "%s.data", path);
	}
	if (strchr(file, '/') || !strcmp(file, ".") || !strcmp(file, "..") || !file[0]) {
		diag_error(file_loc(path), "external data file '%s' must be a plain file name: it is written beside the model", file);
		return NULL;
	}
	*location = file;
	return slash ? afmt(w, "%.*s/%s", (int)(slash - path), path, file) : (char *)file;
}

/* The side file replaces whatever has its name, by rename; a symbolic
 * link there that leads out of the model's directory is refused rather
 * than replaced, since whoever put it there meant the data to go
 * elsewhere, and onnxc writes only beside the model. */
static Status side_link_ok(Writer *w, const char *path, const char *side)
{
	struct stat sb;
	if (lstat(side, &sb) != 0 || !S_ISLNK(sb.st_mode))
		return OK;
	const char *slash = strrchr(path, '/');
	const char *dirname = !slash ? "." : slash == path ? "/" : afmt(w, "%.*s", (int)(slash - path), path);
	char *real = path_inside(dirname, side);
	Status st = real ? OK : FAILED;
	if (st != OK)
		diag_error(file_loc(side), "the external data file is a symbolic link that leads outside the model's directory");
	free(real);
	return st;
}

static int want_external(const OnnxWriteOptions *opt, const OnnxBuilt *b)
{
	return (opt && opt->external) || b->init_bytes > AUTO_EXTERNAL_BYTES;
}

static int pack_model(OnnxBuilt *b, const char *path, OutFile *o)
{
	size_t size = protobuf_c_message_get_packed_size(&b->model->base);
	if (size > INT32_MAX) {
		diag_error(file_loc(path), "the model is %zu bytes, over protobuf's 2 GB limit; "
			"use -external-data", size);
		return -1;
	}
	FileBuffer fb = { { filebuf_append }, o, b->weights };
	protobuf_c_message_pack_to_buffer(&b->model->base, &fb.base);
	return out_finish(o, path);
}

/* Both files are complete before either is renamed; the side file goes
 * first so a model never names data that is not there. */
static int write_files(OnnxBuilt *b, const char *path, Ext *ext, const char *side)
{
	OutFile o;
	if (ext && out_open(&ext->side, side) != 0)
		return -1;
	if (out_open(&o, path) != 0) {
		if (ext)
			out_abort(&ext->side);
		return -1;
	}
	int rc = 0;
	if (ext) {
		ext_graph(ext, b->model->graph);
		if (ext->off == 0) {
			/* No initializer reached the threshold: the model names no
			 * side file, so none is written. */
			out_abort(&ext->side);
			diag_warning(file_loc(path), "no initializer has %zu bytes or more: no external data file written",
				ext->threshold);
			ext = NULL;
		} else {
			rc = out_finish(&ext->side, side);
		}
	}
	if (rc == 0)
		rc = pack_model(b, path, &o);
	if (rc == 0 && ext)
		rc = out_commit(&ext->side, side);
	if (rc == 0)
		return out_commit(&o, path);
	if (ext)
		out_abort(&ext->side);
	out_abort(&o);
	return -1;
}

/* Writing fewer bytes than this takes a moment: no progress shown. */
enum { PROGRESS_MIN_BYTES = 256 << 20 };

int onnx_write(Module *m, const char *path, const OnnxWriteOptions *opt)
{
	OnnxBuilt b;
	int rc = onnx_build(m, opt, 1, &b);
	Writer w = { .m = m, .opt = opt, .a = &b.arena, .out = &b };
	Ext ext = { .w = &w };
	const char *side = NULL;
	if (rc == 0 && want_external(opt, &b)) {
		side = side_path(&w, path, &ext.location);
		ext.threshold = opt && opt->external_threshold ? opt->external_threshold : 1024;
		rc = side == NULL || side_link_ok(&w, path, side) != OK;
	}
	if (rc == 0) {
		progress_begin("writing weights (bytes)", b.init_bytes, PROGRESS_MIN_BYTES);
		rc = write_files(&b, path, side ? &ext : NULL, side);
		progress_end();
	}
	onnx_built_free(&b);
	return rc != 0;
}
