/* onnx_import.c - a binary ONNX model (ModelProto) into the IR.
 *
 * protobuf-c unpacks with an allocator that draws from the module's arena,
 * so tensor payloads (raw_data, typed fields, strings) are already where
 * the IR keeps them and are never copied a second time.  External data
 * is not copied at all: its file stays mapped read-only for the module's
 * life (ir/mapped.c) and tensors point into the mapping.  Names resolve
 * through one table indexed by Sym: a graph's names are entered as they
 * are defined and removed when the graph ends, so a subgraph sees the
 * names of the graphs around it (ONNX outer-scope capture) and a use
 * before the definition is caught in the order the nodes come.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "frontend.h"
#include "onnx.pb-c.h"

typedef struct ExtFile {        /* an external-data file, mapped once for the module's life */
	Sym location;
	const uint8_t *map;
	size_t size;
} ExtFile;

typedef struct Imp {
	Module *m;
	Arena *a;
	const char *path;
	Loc loc;                    /* the model file, no line */
	char *dir;                  /* the model's directory, for external data */
	ValueId *bysym;             /* Sym -> value defined under that name */
	uint32_t nbysym;
	VEC(ExtFile) ext;
	uint32_t depth;             /* graphs open around the one being read */
	int failed;
} Imp;

/* Reports an error about the model; returns -1 for `return fail(...)`. */
static int fail(Imp *imp, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_emitv(DIAG_ERROR, imp->loc, fmt, ap);
	va_end(ap);
	imp->failed = 1;
	return -1;
}

/* ---- the name table --------------------------------------------------------- */

static ValueId *slot(Imp *imp, Sym s)
{
	if (s >= imp->nbysym) {
		uint32_t n = imp->nbysym ? imp->nbysym : 1024;
		while (n <= s)
			n *= 2;
		imp->bysym = xrealloc(imp->bysym, n * sizeof *imp->bysym);
		memset(imp->bysym + imp->nbysym, 0, (n - imp->nbysym) * sizeof *imp->bysym);
		imp->nbysym = n;
	}
	return &imp->bysym[s];
}

typedef VEC(Sym) SymVec;

/* Enters a new value under name; SSA: a name is defined once in a graph
 * and the graphs around it. */
static ValueId define(Imp *imp, SymVec *defs, const char *name, ValueKind k, Type *t)
{
	Sym s = sym_cstr(name);
	if (!name[0]) {
		fail(imp, "a value has an empty name");
		return VNONE;
	}
	ValueId *p = slot(imp, s);
	if (*p) {
		fail(imp, "value '%s' is defined more than once", name);
		return VNONE;
	}
	*p = value_new(imp->m, s, t, k);
	val(imp->m, *p)->loc = imp->loc;
	VEC_PUSH(imp->a, *defs, s);
	return *p;
}

static void undefine_all(Imp *imp, SymVec *defs)
{
	for (uint32_t i = 0; i < defs->n; i++)
		imp->bysym[defs->v[i]] = VNONE;
}

static ValueId lookup(Imp *imp, const char *name)
{
	Sym s = sym_cstr(name);
	return s < imp->nbysym ? imp->bysym[s] : VNONE;
}

/* ---- reading the file ---------------------------------------------------------- */

static void *arena_palloc(void *data, size_t n) { return arena_alloc(data, n ? n : 1); }
static void arena_pfree(void *data, void *p) { (void)data; (void)p; }

/* protobuf-c unpacks nested messages by recursion, so bytes nested deeper
 * than the stack can take would crash it.  Its descriptors say which
 * fields are messages: this walks the wire format with its own stack
 * first and refuses deep nesting.  A model of IR_MAX_DEPTH nested graphs
 * (three messages each: attribute, graph, node) with seq<> types
 * IR_MAX_DEPTH deep inside (two each) stays under PB_MAX_DEPTH.  Bytes
 * that do not parse are left for the unpacker to report. */
#define PB_MAX_DEPTH (6 * IR_MAX_DEPTH)

typedef struct PbFrame { const ProtobufCMessageDescriptor *d; size_t end; } PbFrame;

static int pb_varint(const uint8_t *p, size_t *i, size_t end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && *i < end; shift += 7) {
		uint8_t b = p[(*i)++];
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

/* Enters a length-delimited field: a message field is pushed, anything
 * else skipped.  -1 when the bytes do not parse. */
static int pb_field(PbFrame *st, int *top, const uint8_t *p, size_t *i, uint64_t tag)
{
	uint64_t len;
	size_t end = st[*top].end;
	if (pb_varint(p, i, end, &len) || len > end - *i)
		return -1;
	const ProtobufCFieldDescriptor *f = tag >> 3 <= UINT32_MAX
		? protobuf_c_message_descriptor_get_field(st[*top].d, (unsigned)(tag >> 3)) : NULL;
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
		*i += (size_t)len;
		return 0;
	}
	st[++*top] = (PbFrame){ f->descriptor, *i + (size_t)len };
	return 0;
}

static int pb_skip(const uint8_t *p, size_t *i, size_t end, unsigned wire)
{
	uint64_t v;
	size_t w = wire == 1 ? 8 : 4;
	if (wire == 0)
		return pb_varint(p, i, end, &v);
	if ((wire != 1 && wire != 5) || end - *i < w)
		return -1;
	*i += w;
	return 0;
}

static Status pb_nesting_ok(Imp *imp, const uint8_t *p, size_t n)
{
	PbFrame *st = xreallocarray(NULL, PB_MAX_DEPTH + 1, sizeof *st);
	int top = 0, bad = 0;
	size_t i = 0;
	st[0] = (PbFrame){ &onnx__model_proto__descriptor, n };
	while (!bad && top < PB_MAX_DEPTH) {
		while (top >= 0 && i == st[top].end)
			top--;
		if (top < 0)
			break;
		uint64_t tag;
		if (pb_varint(p, &i, st[top].end, &tag))
			bad = 1;
		else if ((tag & 7) == 2)
			bad = pb_field(st, &top, p, &i, tag) != 0;
		else
			bad = pb_skip(p, &i, st[top].end, (unsigned)(tag & 7)) != 0;
	}
	free(st);
	if (top < PB_MAX_DEPTH)
		return OK;
	fail(imp, "protobuf messages nest deeper than %d (subgraphs may nest %d deep)", PB_MAX_DEPTH, IR_MAX_DEPTH);
	return FAILED;
}

static const uint8_t *map_file(Imp *imp, const char *path, size_t *size, int flags)
{
	int fd = open(path, O_RDONLY | flags);
	struct stat sb;
	const uint8_t *p = NULL;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		diag_error((Loc){ sym_cstr(path), 0, 0 }, "cannot open: %s", strerror(errno));
	} else if (!S_ISREG(sb.st_mode)) {
		diag_error((Loc){ sym_cstr(path), 0, 0 }, "not a regular file");
	} else if (sb.st_size == 0) {
		p = (const uint8_t *)"";
	} else {
		p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			diag_error((Loc){ sym_cstr(path), 0, 0 }, "cannot map: %s", strerror(errno));
			p = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	*size = p ? (size_t)sb.st_size : 0;
	if (!p)
		imp->failed = 1;
	return p;
}

static void unmap(const uint8_t *p, size_t size)
{
	if (p && size)
		munmap((void *)p, size);
}

/* ---- types ---------------------------------------------------------------------- */

static Type *tensor_type(Imp *imp, int32_t elem, const Onnx__TensorShapeProto *shape)
{
	DType dt = DT_UNDEF;
	if (elem && (dt = dtype_from_onnx(elem)) == DT_UNDEF) {
		fail(imp, "unknown tensor element type %d", elem);
		return NULL;
	}
	if (!shape)
		return type_tensor(imp->a, dt, -1, NULL);
	Dim *dims = ARENA_ARRAY(imp->a, Dim, shape->n_dim + 1);
	for (size_t i = 0; i < shape->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
		dims[i].v = -1;
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0)
			dims[i].v = d->dim_value;
		else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param[0])
			dims[i].sym = sym_cstr(d->dim_param);
	}
	return type_tensor(imp->a, dt, (int32_t)shape->n_dim, dims);
}

/* seq<> and opt<> nest at most IR_MAX_DEPTH deep.  NULL for no type (or
 * after an error, which sets imp->failed). */
static Type *import_type_at(Imp *imp, const Onnx__TypeProto *t, int depth)
{
	if (!t)
		return NULL;
	if (depth > IR_MAX_DEPTH) {
		fail(imp, "types nest deeper than %d", IR_MAX_DEPTH);
		return NULL;
	}
	switch (t->value_case) {
	case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
		return tensor_type(imp, t->tensor_type->elem_type, t->tensor_type->shape);
	case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: {
		Type *e = import_type_at(imp, t->sequence_type->elem_type, depth + 1);
		return e ? type_wrap(imp->a, TY_SEQ, e) : NULL;
	}
	case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: {
		Type *e = import_type_at(imp, t->optional_type->elem_type, depth + 1);
		return e ? type_wrap(imp->a, TY_OPT, e) : NULL;
	}
	case ONNX__TYPE_PROTO__VALUE__NOT_SET:
		return NULL;
	default:
		fail(imp, "map and sparse tensor types are not supported");
		return NULL;
	}
}

static Type *import_type(Imp *imp, const Onnx__TypeProto *t)
{
	return import_type_at(imp, t, 0);
}

/* ---- tensors ---------------------------------------------------------------------- */

static int parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Locations are relative to the model and must stay inside its directory. */
static int bad_location(const char *loc)
{
	if (!loc[0] || loc[0] == '/')
		return 1;
	for (const char *p = loc; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
		if (strncmp(p, "..", 2) == 0 && (p[2] == '/' || p[2] == 0))
			return 1;
	return 0;
}

/* A location without `..` can still leave the directory through a
 * symbolic link (the file itself or a directory on the way): the real path
 * must lie inside the directory's real path.  The real path is what gets
 * opened, so a link swapped in after the check is not followed either. */
/* The real path is what gets opened (without following a final link),
 * so a link swapped in after the check is not followed either. */
static char *resolve_inside(Imp *imp, const char *path, const char *loc)
{
	char *real = path_inside(imp->dir, path);
	if (!real && errno == EXDEV)
		fail(imp, "external data location '%s' leads outside the model's directory through a symbolic link", loc);
	else if (!real) {
		diag_error((Loc){ sym_cstr(path), 0, 0 }, "cannot open: %s", strerror(errno));
		imp->failed = 1;
	}
	char *r = real ? arena_strndup(imp->a, real, strlen(real)) : NULL;
	free(real);
	return r;
}

static const ExtFile *ext_file(Imp *imp, const char *loc)
{
	Sym s = sym_cstr(loc);
	for (uint32_t i = 0; i < imp->ext.n; i++)
		if (imp->ext.v[i].location == s)
			return &imp->ext.v[i];
	size_t n = strlen(imp->dir) + strlen(loc) + 2;
	char *path = arena_alloc(imp->a, n);
	snprintf(path, n, "%s/%s", imp->dir, loc);
	char *real = resolve_inside(imp, path, loc);
	if (!real)
		return NULL;
	ExtFile f = { s, NULL, 0 };
	/* O_NONBLOCK: a FIFO named as data must not hang the run before the
	 * regular-file check refuses it. */
	f.map = map_file(imp, real, &f.size, O_NOFOLLOW | O_NONBLOCK);
	if (!f.map)
		return NULL;
	mapped_add(imp->m, f.map, f.size);  /* the module's tensors point into it */
	VEC_PUSH(imp->a, imp->ext, f);
	return &imp->ext.v[imp->ext.n - 1];
}

static int external_data(Imp *imp, const Onnx__TensorProto *p, Tensor *t)
{
	const char *loc = NULL, *off = "0", *len = NULL;
	for (size_t i = 0; i < p->n_external_data; i++) {
		const char *k = p->external_data[i]->key, *v = p->external_data[i]->value;
		if (k && v && !strcmp(k, "location")) loc = v;
		else if (k && v && !strcmp(k, "offset")) off = v;
		else if (k && v && !strcmp(k, "length")) len = v;
	}
	uint64_t o, l = t->nbytes;
	if (!loc || bad_location(loc))
		return fail(imp, "tensor '%s': external data location '%s' must be a relative path inside the model's directory",
			p->name ? p->name : "", loc ? loc : "");
	if (parse_size(off, &o) || (len && parse_size(len, &l)) || l != t->nbytes)
		return fail(imp, "tensor '%s': bad external data offset/length (needs %zu bytes)", p->name ? p->name : "", t->nbytes);
	const ExtFile *f = ext_file(imp, loc);
	if (!f)
		return -1;
	if (o > f->size || l > f->size - o)
		return fail(imp, "tensor '%s': external data [%llu, +%llu) lies outside '%s' (%zu bytes)",
			p->name ? p->name : "", (unsigned long long)o, (unsigned long long)l, loc, f->size);
	t->data = f->map + o;       /* left in the mapping: never copied */
	return 0;
}

/* Elements narrower than 32 bits travel one per int32_data entry (4-bit
 * types two per entry); they are narrowed to their width, little-endian. */
static int narrow_ints(Imp *imp, const Onnx__TensorProto *p, Tensor *t, int64_t numel)
{
	int bits = dtype_bits((DType)t->type->dtype);
	size_t want = bits == 4 ? (size_t)(numel + 1) / 2 : (size_t)numel;
	int width = bits == 4 ? 1 : bits / 8;
	if (p->n_int32_data != want)
		return fail(imp, "tensor '%s': %zu int32_data entries, %zu expected", p->name ? p->name : "", p->n_int32_data, want);
	uint8_t *d = arena_alloc(imp->a, want * (size_t)width + 1);
	for (size_t i = 0; i < want; i++)
		for (int b = 0; b < width; b++)
			d[i * (size_t)width + (size_t)b] = (uint8_t)((uint32_t)p->int32_data[i] >> (8 * b));
	t->data = d;
	return 0;
}

static int wide_uints(Imp *imp, const Onnx__TensorProto *p, Tensor *t, int64_t numel)
{
	if (p->n_uint64_data != (size_t)numel)
		return fail(imp, "tensor '%s': %zu uint64_data entries, %lld expected", p->name ? p->name : "", p->n_uint64_data, (long long)numel);
	if (t->type->dtype == DT_U64) {
		t->data = (const uint8_t *)p->uint64_data;
		return 0;
	}
	uint32_t *d = ARENA_ARRAY(imp->a, uint32_t, numel + 1);
	for (int64_t i = 0; i < numel; i++)
		d[i] = (uint32_t)p->uint64_data[i];
	t->data = (const uint8_t *)d;
	return 0;
}

/* Typed payloads already sit in the arena in the IR's packed layout, except
 * the narrow and uint32 ones. */
static int typed_data(Imp *imp, const Onnx__TensorProto *p, Tensor *t, int64_t numel)
{
	size_t n = 0, want = (size_t)numel;
	const void *src = NULL;
	switch (t->type->dtype) {
	case DT_F32: n = p->n_float_data; src = p->float_data; break;
	case DT_C64: n = p->n_float_data; src = p->float_data; want *= 2; break;
	case DT_F64: n = p->n_double_data; src = p->double_data; break;
	case DT_C128: n = p->n_double_data; src = p->double_data; want *= 2; break;
	case DT_I64: n = p->n_int64_data; src = p->int64_data; break;
	case DT_I32: n = p->n_int32_data; src = p->int32_data; break;
	case DT_U32: case DT_U64: return wide_uints(imp, p, t, numel);
	default: return narrow_ints(imp, p, t, numel);
	}
	if (n != want)
		return fail(imp, "tensor '%s': %zu data entries, %zu expected", p->name ? p->name : "", n, want);
	t->data = src;
	return 0;
}

/* protobuf-c leaves data NULL for empty bytes; the IR's strings always
 * point somewhere (printer and writer take pointer + length). */
static Str bytes_str(ProtobufCBinaryData b)
{
	return (Str){ b.data ? (const char *)b.data : "", (uint32_t)b.len };
}

static int string_data(Imp *imp, const Onnx__TensorProto *p, Tensor *t, int64_t numel)
{
	if (p->n_string_data != (size_t)numel)
		return fail(imp, "tensor '%s': %zu strings, %lld expected", p->name ? p->name : "", p->n_string_data, (long long)numel);
	t->strs = ARENA_ARRAY(imp->a, Str, numel + 1);
	for (int64_t i = 0; i < numel; i++)
		t->strs[i] = bytes_str(p->string_data[i]);
	return 0;
}

static int tensor_shape(Imp *imp, const Onnx__TensorProto *p, Tensor *t, int64_t *numel)
{
	DType dt = dtype_from_onnx(p->data_type);
	if (dt == DT_UNDEF)
		return fail(imp, "tensor '%s': unknown data type %d", p->name ? p->name : "", p->data_type);
	Dim *dims = ARENA_ARRAY(imp->a, Dim, p->n_dims + 1);
	for (size_t i = 0; i < p->n_dims; i++) {
		if (p->dims[i] < 0)
			return fail(imp, "tensor '%s': bad dimension %lld", p->name ? p->name : "", (long long)p->dims[i]);
		dims[i].v = p->dims[i];
	}
	if (p->n_dims > INT32_MAX)
		return fail(imp, "tensor '%s': too many dimensions", p->name ? p->name : "");
	t->type = type_tensor(imp->a, dt, (int32_t)p->n_dims, dims);
	int64_t nbytes;
	if (type_size(t->type, numel, &nbytes) != OK)
		return fail(imp, "tensor '%s' holds more than INT64_MAX bytes", p->name ? p->name : "");
	t->nbytes = (size_t)nbytes;
	return 0;
}

static Tensor *import_tensor(Imp *imp, const Onnx__TensorProto *p)
{
	Tensor *t = ARENA_NEW(imp->a, Tensor);
	int64_t numel;
	if (p->segment)
		return fail(imp, "tensor '%s': segmented tensors are not supported", p->name ? p->name : ""), NULL;
	if (tensor_shape(imp, p, t, &numel) != 0)
		return NULL;
	t->name = p->name && p->name[0] ? sym_cstr(p->name) : 0;
	int rc;
	if (t->type->dtype == DT_STR)
		rc = string_data(imp, p, t, numel);
	else if (p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		rc = external_data(imp, p, t);
	else if (p->has_raw_data) {
		rc = p->raw_data.len == t->nbytes ? 0
			: fail(imp, "tensor '%s': raw_data has %zu bytes, its type needs %zu", p->name ? p->name : "",
				p->raw_data.len, t->nbytes);
		t->data = p->raw_data.data;
	} else
		rc = typed_data(imp, p, t, numel);
	if (rc == 0 && !t->data && t->type->dtype != DT_STR)
		t->data = arena_alloc(imp->a, 1);   /* zero elements */
	return rc == 0 ? t : NULL;
}

/* ---- provenance from metadata_props ------------------------------------------------ */

/* Parses a Python list of plain strings, "['a', 'b']", as PyTorch writes
 * it.  Strings with quotes or backslashes are refused: the caller keeps the
 * text verbatim instead, so nothing is lost. */
static int parse_pylist(const char *s, Sym *out, uint32_t max, uint32_t *n)
{
	*n = 0;
	if (*s++ != '[')
		return -1;
	while (*s == '\'') {
		const char *e = strpbrk(s + 1, "'\\\"");
		if (!e || *e != '\'' || *n == max)
			return -1;
		out[(*n)++] = sym_intern(s + 1, (size_t)(e - s - 1));
		s = e + 1;
		if (s[0] == ',' && s[1] == ' ' && s[2] == '\'')
			s += 2;
	}
	return strcmp(s, "]") == 0 ? 0 : -1;
}

static int namespace_matches(const char *ns, const ScopeEntry *sc, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *path = sym_str(sc[i].path), *cls = sym_str(sc[i].cls);
		if (i && *ns++ != '/')
			return 0;
		size_t pl = strlen(path), cl = strlen(cls);
		if (pl && (strncmp(ns, path, pl) || strncmp(ns + pl, ": ", 2)))
			return 0;
		ns += pl ? pl + 2 : 0;
		if (strncmp(ns, cls, cl))
			return 0;
		ns += cl;
	}
	return *ns == 0;
}

typedef struct MetaIn { const char *key, *val; } MetaIn;

/* Scopes are taken only if all three keys are there and the writer would
 * write them back identically: when the node has an fx_node entry, each
 * key must end with the entry the writer derives from it, which is left out
 * of the scopes. */
static int take_scopes(Imp *imp, Prov *p, const char *ns, const char *cls, const char *paths,
	const char *fx_node)
{
	if (!ns || !cls || !paths)
		return 0;
	uint32_t max = (uint32_t)strlen(cls) + 1, nc, np;
	Sym *c = ARENA_ARRAY(imp->a, Sym, max), *q = ARENA_ARRAY(imp->a, Sym, max);
	if (parse_pylist(cls, c, max, &nc) || parse_pylist(paths, q, max, &np) || nc != np || nc == 0)
		return 0;
	p->scope = ARENA_ARRAY(imp->a, ScopeEntry, nc);
	for (uint32_t i = 0; i < nc; i++)
		p->scope[i] = (ScopeEntry){ q[i], c[i] };
	if (!namespace_matches(ns, p->scope, nc))
		return 0;
	Str ln, lt;
	if (fx_node && !fx_node_leaf(fx_node, strlen(fx_node), &ln, &lt)) {
		const ScopeEntry *own = &p->scope[nc - 1];
		if (sym_len(own->path) != ln.n || memcmp(sym_str(own->path), ln.s, ln.n)
		    || sym_len(own->cls) != lt.n || memcmp(sym_str(own->cls), lt.s, lt.n))
			return 0;
		nc--;
	}
	p->nscope = nc;
	return 1;
}

/* "file:line" or "file:line:col", as the writer prints it. */
static int take_location(Prov *p, const char *s)
{
	const char *c1 = s ? strrchr(s, ':') : NULL;
	if (!c1)
		return 0;
	char *end;
	unsigned long a = strtoul(c1 + 1, &end, 10), b = 0;
	const char *c0 = c1;
	if (*end || c1[1] < '1' || c1[1] > '9' || a > UINT32_MAX)
		return 0;
	while (c0 > s && c0[-1] >= '0' && c0[-1] <= '9')
		c0--;
	if (c0 > s + 1 && c0[-1] == ':' && c0[0] >= '1' && c0[0] <= '9' && (b = strtoul(c0, NULL, 10)) <= UINT32_MAX) {
		p->file = sym_intern(s, (size_t)(c0 - 1 - s));
		p->line = (uint32_t)b;
		p->col = (uint32_t)a;
	} else {
		p->file = sym_intern(s, (size_t)(c1 - s));
		p->line = (uint32_t)a;
	}
	return p->file != 0;
}

static const char *meta_get(const MetaIn *mi, size_t n, const char *key, size_t *at)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(mi[i].key, key)) {
			*at = i;
			return mi[i].val;
		}
	*at = (size_t)-1;
	return NULL;
}

static Prov *import_prov(Imp *imp, Onnx__StringStringEntryProto **e, size_t n)
{
	if (!n)
		return NULL;
	MetaIn *mi = ARENA_ARRAY(imp->a, MetaIn, n);
	for (size_t i = 0; i < n; i++)
		mi[i] = (MetaIn){ e[i]->key ? e[i]->key : "", e[i]->value ? e[i]->value : "" };
	Prov *p = ARENA_NEW(imp->a, Prov);
	size_t ins, icl, ipa, itr, ilo;
	const char *ns = meta_get(mi, n, "namespace", &ins);
	const char *cl = meta_get(mi, n, "pkg.torch.onnx.class_hierarchy", &icl);
	const char *pa = meta_get(mi, n, "pkg.torch.onnx.name_scopes", &ipa);
	const char *tr = meta_get(mi, n, "pkg.torch.onnx.stack_trace", &itr);
	const char *lo = meta_get(mi, n, "pkg.onnxc.source_location", &ilo);
	size_t ifx;
	int scoped = take_scopes(imp, p, ns, cl, pa, meta_get(mi, n, "pkg.torch.onnx.fx_node", &ifx));
	if (tr)
		p->trace = (Str){ tr, (uint32_t)strlen(tr) };
	int located = take_location(p, lo);
	p->meta = ARENA_ARRAY(imp->a, MetaProp, n);
	for (size_t i = 0; i < n; i++) {
		if ((scoped && (i == ins || i == icl || i == ipa)) || i == itr || (located && i == ilo))
			continue;
		p->meta[p->nmeta++] = (MetaProp){ { mi[i].key, (uint32_t)strlen(mi[i].key) },
			{ mi[i].val, (uint32_t)strlen(mi[i].val) } };
	}
	return p;
}

static void import_meta(Imp *imp, Onnx__StringStringEntryProto **e, size_t n, MetaProp **out, uint32_t *nout)
{
	*out = ARENA_ARRAY(imp->a, MetaProp, n + 1);
	*nout = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		const char *k = e[i]->key ? e[i]->key : "", *v = e[i]->value ? e[i]->value : "";
		(*out)[i] = (MetaProp){ { k, (uint32_t)strlen(k) }, { v, (uint32_t)strlen(v) } };
	}
}

static Str str_of(const char *s) { return s ? (Str){ s, (uint32_t)strlen(s) } : (Str){ NULL, 0 }; }

/* ---- attributes --------------------------------------------------------------------- */

static Graph *import_graph(Imp *imp, const Onnx__GraphProto *p, Graph *parent);

static int list_of(Imp *imp, Arg *a, size_t n, uint8_t elem)
{
	a->kind = A_LIST;
	a->elem = elem;
	a->n = (uint32_t)n;
	a->u.list = ARENA_ARRAY(imp->a, Arg, n + 1);
	for (size_t i = 0; i < n; i++)
		a->u.list[i].kind = elem;
	return 0;
}

static int list_attr(Imp *imp, Graph *g, const Onnx__AttributeProto *p, Arg *a)
{
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
		list_of(imp, a, p->n_ints, A_INT);
		for (size_t i = 0; i < p->n_ints; i++)
			a->u.list[i].u.i = p->ints[i];
		return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		list_of(imp, a, p->n_floats, A_FLOAT);
		for (size_t i = 0; i < p->n_floats; i++)
			a->u.list[i].u.f = p->floats[i];
		return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
		list_of(imp, a, p->n_strings, A_STR);
		for (size_t i = 0; i < p->n_strings; i++)
			a->u.list[i].u.s = bytes_str(p->strings[i]);
		return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
		list_of(imp, a, p->n_tensors, A_TENSOR);
		for (size_t i = 0; i < p->n_tensors; i++)
			if (!(a->u.list[i].u.t = import_tensor(imp, p->tensors[i])))
				return -1;
		return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
		list_of(imp, a, p->n_graphs, A_GRAPH);
		for (size_t i = 0; i < p->n_graphs; i++)
			if (!(a->u.list[i].u.g = import_graph(imp, p->graphs[i], g)))
				return -1;
		return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
		list_of(imp, a, p->n_type_protos, A_TYPE);
		for (size_t i = 0; i < p->n_type_protos; i++)
			a->u.list[i].u.ty = import_type(imp, p->type_protos[i]);
		return imp->failed ? -1 : 0;
	default:
		return fail(imp, "attribute '%s': sparse tensors are not supported", p->name);
	}
}

static int import_attr(Imp *imp, Graph *g, const Onnx__AttributeProto *p, Arg *a)
{
	if (p->ref_attr_name && p->ref_attr_name[0]) {
		/* Arg.elem keeps the referenced attribute's ONNX type for the writer. */
		a->kind = A_ATTRREF;
		a->u.sym = sym_cstr(p->ref_attr_name);
		a->elem = (uint8_t)p->type;
		return 0;
	}
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: a->kind = A_FLOAT; a->u.f = p->f; return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: a->kind = A_INT; a->u.i = p->i; return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		a->kind = A_STR;
		a->u.s = bytes_str(p->s);
		return 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		a->kind = A_TENSOR;
		if (!p->t)
			return fail(imp, "attribute '%s': no tensor", p->name);
		return (a->u.t = import_tensor(imp, p->t)) ? 0 : -1;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		a->kind = A_GRAPH;
		if (!p->g)
			return fail(imp, "attribute '%s': no graph", p->name);
		return (a->u.g = import_graph(imp, p->g, g)) ? 0 : -1;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
		a->kind = A_TYPE;
		a->u.ty = import_type(imp, p->tp);
		return imp->failed ? -1 : 0;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
		return fail(imp, "attribute '%s' has no type", p->name ? p->name : "");
	default:
		return list_attr(imp, g, p, a);
	}
}

/* ---- nodes -------------------------------------------------------------------------- */

static Sym map_domain(const char *d)
{
	return !d || !d[0] || !strcmp(d, "ai.onnx") ? S_onnx : sym_cstr(d);
}

static Sym op_name(const char *op, const char *overload)
{
	if (!overload || !overload[0])
		return sym_cstr(op);
	size_t a = strlen(op), b = strlen(overload);
	char *s = xmalloc(a + b + 2);
	snprintf(s, a + b + 2, "%s.%s", op, overload);
	Sym r = sym_cstr(s);
	free(s);
	return r;
}

/* A missing name is either never defined or defined by a later node. */
static int undefined_use(Imp *imp, const Onnx__NodeProto *np, const char *name, Onnx__NodeProto **rest, size_t nrest)
{
	for (size_t i = 0; i < nrest; i++)
		for (size_t k = 0; k < rest[i]->n_output; k++)
			if (!strcmp(rest[i]->output[k], name))
				return fail(imp, "node '%s' (%s) uses '%s' before the node that defines it: "
					"the graph is not in topological order", np->name ? np->name : "", np->op_type, name);
	return fail(imp, "node '%s' (%s) uses '%s', which is not defined", np->name ? np->name : "", np->op_type, name);
}

static int node_inputs(Imp *imp, const Onnx__NodeProto *np, Node *n, Onnx__NodeProto **rest, size_t nrest)
{
	for (size_t i = 0; i < np->n_input; i++) {
		const char *s = np->input[i];
		if (!s[0]) {
			n->args[i].kind = A_NONE;
			continue;
		}
		n->args[i].kind = A_VALUE;
		if (!(n->args[i].u.v = lookup(imp, s)))
			return undefined_use(imp, np, s, rest, nrest);
	}
	return 0;
}

static int node_attrs(Imp *imp, Graph *g, const Onnx__NodeProto *np, Node *n)
{
	for (size_t i = 0; i < np->n_attribute; i++) {
		const Onnx__AttributeProto *ap = np->attribute[i];
		if (!ap->name || !ap->name[0])
			return fail(imp, "node '%s' (%s) has an attribute without a name", np->name ? np->name : "", np->op_type);
		n->kw[i].name = sym_cstr(ap->name);
		if (import_attr(imp, g, ap, &n->kw[i].val) != 0)
			return -1;
	}
	return 0;
}

/* rest: the nodes after this one, to tell a forward use from a bad name. */
static int import_node(Imp *imp, Graph *g, SymVec *defs, Onnx__NodeProto **rest, size_t nrest)
{
	const Onnx__NodeProto *np = rest[0];
	if (!np->op_type || !np->op_type[0])
		return fail(imp, "node '%s' has no op_type", np->name ? np->name : "");
	Node *n = node_new(imp->m, map_domain(np->domain), op_name(np->op_type, np->overload),
		(uint32_t)np->n_output, (uint32_t)np->n_input, (uint32_t)np->n_attribute);
	n->loc = imp->loc;
	n->node_name = np->name && np->name[0] ? sym_cstr(np->name) : 0;
	n->doc = str_of(np->doc_string);
	n->prov = import_prov(imp, np->metadata_props, np->n_metadata_props);
	if (node_inputs(imp, np, n, rest + 1, nrest - 1) != 0 || node_attrs(imp, g, np, n) != 0)
		return -1;
	for (size_t i = 0; i < np->n_output; i++) {
		if (!np->output[i][0])
			continue;
		ValueId v = define(imp, defs, np->output[i], VK_NODE, NULL);
		if (!v)
			return -1;
		val(imp->m, v)->def = n;
		val(imp->m, v)->res = (uint32_t)i;
		n->res[i] = v;
	}
	node_append(g, n);
	return 0;
}

static int import_nodes(Imp *imp, Graph *g, SymVec *defs, Onnx__NodeProto **nodes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (import_node(imp, g, defs, nodes + i, n - i) != 0)
			return -1;
	return 0;
}

/* ---- graphs --------------------------------------------------------------------------- */

static int graph_inits(Imp *imp, Graph *g, SymVec *defs, const Onnx__GraphProto *p)
{
	if (p->n_sparse_initializer)
		return fail(imp, "graph '%s': sparse initializers are not supported", p->name ? p->name : "");
	for (size_t i = 0; i < p->n_initializer; i++) {
		Tensor *t = import_tensor(imp, p->initializer[i]);
		if (!t)
			return -1;
		ValueId v = define(imp, defs, p->initializer[i]->name ? p->initializer[i]->name : "", VK_CONST, t->type);
		if (!v)
			return -1;
		val(imp->m, v)->init = t;
		VEC_PUSH(imp->a, g->inits, v);
	}
	return 0;
}

/* An initializer that is also an input of the main graph is an input with
 * a default (a VK_INPUT value with `init`), which the user may override:
 * models of IR version < 4 list every initializer so, and ONNX gives the
 * pair that meaning at every version.  In a subgraph the pair is a
 * constant. */
static int graph_inputs(Imp *imp, Graph *g, SymVec *defs, const Onnx__GraphProto *p)
{
	uint32_t ninit = defs->n, ndefault = 0;
	g->in = ARENA_ARRAY(imp->a, ValueId, p->n_input + 1);
	for (size_t i = 0; i < p->n_input; i++) {
		const char *name = p->input[i]->name ? p->input[i]->name : "";
		ValueId v = lookup(imp, name);
		int is_init = 0;
		for (uint32_t k = 0; v && k < ninit && !is_init; k++)
			is_init = defs->v[k] == sym_cstr(name);
		if (is_init && !g->parent) {
			if (val(imp->m, v)->kind == VK_INPUT)
				return fail(imp, "graph '%s': input '%s' is listed twice", p->name ? p->name : "", name);
			val(imp->m, v)->kind = VK_INPUT;
			g->in[g->nin++] = v;
			ndefault++;
		}
		if (is_init)
			continue;
		Type *t = import_type(imp, p->input[i]->type);
		if (imp->failed || !(v = define(imp, defs, name, VK_INPUT, t)))
			return -1;
		g->in[g->nin++] = v;
	}
	uint32_t k = 0;
	for (uint32_t i = 0; ndefault && i < g->inits.n; i++)
		if (val(imp->m, g->inits.v[i])->kind == VK_CONST)
			g->inits.v[k++] = g->inits.v[i];
	if (ndefault)
		g->inits.n = k;
	return 0;
}

static int graph_outputs(Imp *imp, Graph *g, const Onnx__GraphProto *p)
{
	g->nout = (uint32_t)p->n_output;
	g->out = ARENA_ARRAY(imp->a, ValueId, p->n_output + 1);
	g->out_decl = ARENA_ARRAY(imp->a, Type *, p->n_output + 1);
	for (size_t i = 0; i < p->n_output; i++) {
		const char *name = p->output[i]->name ? p->output[i]->name : "";
		if (!(g->out[i] = lookup(imp, name)))
			return fail(imp, "graph '%s': output '%s' is not defined", p->name ? p->name : "", name);
		g->out_decl[i] = import_type(imp, p->output[i]->type);
		Value *v = val(imp->m, g->out[i]);
		if (!v->type)
			v->type = g->out_decl[i];
	}
	return imp->failed ? -1 : 0;
}

/* value_info gives types to intermediate values; entries naming nothing
 * are dropped (they carry no information about this graph). */
static void value_infos(Imp *imp, Onnx__ValueInfoProto **vi, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ValueId v = vi[i]->name ? lookup(imp, vi[i]->name) : VNONE;
		if (v && !val(imp->m, v)->type)
			val(imp->m, v)->type = import_type(imp, vi[i]->type);
	}
}

static void value_entries(Imp *imp, MetaProp *mp, uint32_t *k, const char *role, const char *name,
	Onnx__StringStringEntryProto **e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *key = e[i]->key ? e[i]->key : "", *v = e[i]->value ? e[i]->value : "";
		size_t len = strlen(role) + 1 + strlen(name ? name : "") + 1 + strlen(key);
		char *s = arena_alloc(imp->a, len + 1);
		snprintf(s, len + 1, "%s:%s:%s", role, name ? name : "", key);
		mp[(*k)++] = (MetaProp){ { s, (uint32_t)len }, { v, (uint32_t)strlen(v) } };
	}
}

/* Metadata on the main graph's inputs, initializers and outputs becomes
 * the graph's `input:NAME:KEY` (`initializer:`, `output:`) entries, which
 * the writer puts back on those values (docs/onnx.md): nothing is lost. */
static void value_meta(Imp *imp, const Onnx__GraphProto *p, Graph *g)
{
	size_t n = g->nmeta;
	for (size_t i = 0; i < p->n_input; i++)
		n += p->input[i]->n_metadata_props;
	for (size_t i = 0; i < p->n_initializer; i++)
		n += p->initializer[i]->n_metadata_props;
	for (size_t i = 0; i < p->n_output; i++)
		n += p->output[i]->n_metadata_props;
	if (n == g->nmeta || n > UINT32_MAX)
		return;
	MetaProp *mp = ARENA_ARRAY(imp->a, MetaProp, n);
	memcpy(mp, g->meta, g->nmeta * sizeof *mp);
	uint32_t k = g->nmeta;
	for (size_t i = 0; i < p->n_input; i++)
		value_entries(imp, mp, &k, "input", p->input[i]->name, p->input[i]->metadata_props, p->input[i]->n_metadata_props);
	for (size_t i = 0; i < p->n_initializer; i++)
		value_entries(imp, mp, &k, "initializer", p->initializer[i]->name, p->initializer[i]->metadata_props,
			p->initializer[i]->n_metadata_props);
	for (size_t i = 0; i < p->n_output; i++)
		value_entries(imp, mp, &k, "output", p->output[i]->name, p->output[i]->metadata_props, p->output[i]->n_metadata_props);
	g->meta = mp;
	g->nmeta = k;
}

static Graph *import_graph_body(Imp *imp, const Onnx__GraphProto *p, Graph *parent)
{
	Graph *g = graph_new(imp->m, sym_cstr(p->name ? p->name : ""), parent);
	g->loc = imp->loc;
	g->doc = str_of(p->doc_string);
	import_meta(imp, p->metadata_props, p->n_metadata_props, &g->meta, &g->nmeta);
	if (!parent)
		value_meta(imp, p, g);
	SymVec defs = { 0 };
	int rc = graph_inits(imp, g, &defs, p);
	if (rc == 0)
		rc = graph_inputs(imp, g, &defs, p);
	if (rc == 0)
		rc = import_nodes(imp, g, &defs, p->node, p->n_node);
	if (rc == 0)
		rc = graph_outputs(imp, g, p);
	if (rc == 0)
		value_infos(imp, p->value_info, p->n_value_info);
	undefine_all(imp, &defs);
	return rc == 0 && !imp->failed ? g : NULL;
}

/* Subgraphs nest at most IR_MAX_DEPTH deep (the top graph is depth 0). */
static Graph *import_graph(Imp *imp, const Onnx__GraphProto *p, Graph *parent)
{
	if (parent && imp->depth >= IR_MAX_DEPTH) {
		fail(imp, "graph '%s': subgraphs nest deeper than %d", p->name ? p->name : "", IR_MAX_DEPTH);
		return NULL;
	}
	imp->depth += parent != NULL;
	Graph *g = import_graph_body(imp, p, parent);
	imp->depth -= parent != NULL;
	return g;
}

/* ---- functions and the model ------------------------------------------------------------ */

static void import_opsets(Imp *imp, Onnx__OperatorSetIdProto **o, size_t n, OpsetVec *v)
{
	for (size_t i = 0; i < n; i++)
		VEC_PUSH(imp->a, *v, ((Opset){ map_domain(o[i]->domain), o[i]->version }));
}

static int func_io(Imp *imp, Graph *g, SymVec *defs, const Onnx__FunctionProto *p)
{
	g->nin = (uint32_t)p->n_input;
	g->in = ARENA_ARRAY(imp->a, ValueId, p->n_input + 1);
	for (size_t i = 0; i < p->n_input; i++)
		if (!(g->in[i] = define(imp, defs, p->input[i], VK_INPUT, NULL)))
			return -1;
	if (import_nodes(imp, g, defs, p->node, p->n_node) != 0)
		return -1;
	g->nout = (uint32_t)p->n_output;
	g->out = ARENA_ARRAY(imp->a, ValueId, p->n_output + 1);
	for (size_t i = 0; i < p->n_output; i++)
		if (!(g->out[i] = lookup(imp, p->output[i])))
			return fail(imp, "function '%s': output '%s' is not defined", p->name, p->output[i]);
	value_infos(imp, p->value_info, p->n_value_info);
	return imp->failed ? -1 : 0;
}

static Func *import_func(Imp *imp, const Onnx__FunctionProto *p)
{
	if (!p->name || !p->name[0])
		return fail(imp, "a local function has no name"), NULL;
	Func *f = ARENA_NEW(imp->a, Func);
	f->domain = map_domain(p->domain);
	f->name = op_name(p->name, p->overload);
	f->loc = imp->loc;
	f->body = graph_new(imp->m, f->name, NULL);
	f->body->doc = str_of(p->doc_string);
	f->nattr = (uint32_t)(p->n_attribute + p->n_attribute_proto);
	f->attrs = ARENA_ARRAY(imp->a, Sym, f->nattr + 1);
	for (size_t i = 0; i < p->n_attribute; i++)
		f->attrs[i] = sym_cstr(p->attribute[i]);
	for (size_t i = 0; i < p->n_attribute_proto; i++)
		f->attrs[p->n_attribute + i] = sym_cstr(p->attribute_proto[i]->name ? p->attribute_proto[i]->name : "");
	import_opsets(imp, p->opset_import, p->n_opset_import, &f->opsets);
	SymVec defs = { 0 };
	int rc = func_io(imp, f->body, &defs, p);
	undefine_all(imp, &defs);
	return rc == 0 ? f : NULL;
}

static Sym module_name(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	const char *e = strrchr(b, '.');
	return sym_intern(b, e && e != b ? (size_t)(e - b) : strlen(b));
}

static int import_model(Imp *imp, const Onnx__ModelProto *mp)
{
	Module *m = imp->m;
	if (!mp->graph)
		return fail(imp, "the model has no graph");
	import_opsets(imp, mp->opset_import, mp->n_opset_import, &m->opsets);
	import_meta(imp, mp->metadata_props, mp->n_metadata_props, &m->meta, &m->nmeta);
	m->doc = str_of(mp->doc_string);
	Graph *g = import_graph(imp, mp->graph, NULL);
	if (!g)
		return -1;
	VEC_PUSH(imp->a, m->graphs, g);
	for (size_t i = 0; i < mp->n_functions; i++) {
		Func *f = import_func(imp, mp->functions[i]);
		if (!f)
			return -1;
		VEC_PUSH(imp->a, m->funcs, f);
	}
	return 0;
}

static char *model_dir(Arena *a, const char *path)
{
	const char *s = strrchr(path, '/');
	if (!s)
		return arena_strndup(a, ".", 1);
	return arena_strndup(a, path, s == path ? 1 : (size_t)(s - path));
}

/* External-data mappings stay: the module owns them (module_free). */
static void imp_free(Imp *imp)
{
	free(imp->bysym);
}

Module *onnx_import_buffer(const char *name, const void *data, size_t size)
{
	Imp imp = { .path = name, .loc = { sym_cstr(name), 0, 0 } };
	imp.m = module_new(module_name(name));
	imp.m->file = sym_cstr(name);
	imp.a = &imp.m->arena;
	imp.dir = model_dir(imp.a, name);
	/* protobuf-c copies every string and bytes field into the arena, so
	 * nothing in the module points into data. */
	ProtobufCAllocator alloc = { arena_palloc, arena_pfree, imp.a };
	if (pb_nesting_ok(&imp, data, size) == OK) {
		Onnx__ModelProto *mp = onnx__model_proto__unpack(&alloc, size, data);
		if (!mp)
			fail(&imp, "not an ONNX model: malformed or truncated protobuf");
		else
			import_model(&imp, mp);
	}
	imp_free(&imp);
	if (imp.failed) {
		module_free(imp.m);
		return NULL;
	}
	/* value_info is optional: what it leaves out is inferred. */
	infer_module(imp.m, WALK_GRAPHS);
	return imp.m;
}

Module *onnx_import(const char *path)
{
	Imp imp = { .path = path, .loc = { sym_cstr(path), 0, 0 } };
	size_t size;
	const uint8_t *data = map_file(&imp, path, &size, 0);
	if (!data)
		return NULL;
	Module *m = onnx_import_buffer(path, data, size);
	unmap(data, size);
	return m;
}

/* A model starts with a protobuf tag (ir_version is field 1, a varint:
 * 0x08); .fxir text never starts with a control byte. */
int looks_like_onnx(const char *path, const char *data, size_t len)
{
	size_t n = strlen(path);
	if (n >= 5 && !strcmp(path + n - 5, ".onnx"))
		return 1;
	if (n >= 5 && !strcmp(path + n - 5, ".fxir"))
		return 0;
	for (size_t i = 0; i < len && i < 16; i++) {
		unsigned char c = (unsigned char)data[i];
		if (c < 0x20 && c != '\n' && c != '\r' && c != '\t')
			return 1;
	}
	return 0;
}
