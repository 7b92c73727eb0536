/* types.c - element types (dtypes.def), tensor types and the op registry
 * (ops.def). */
#include <string.h>
#include "ir.h"

static const struct {
	const char *name, *torch, *st;
	int onnx, bits;
} dtypes[DT_COUNT] = {
	[DT_UNDEF] = { "undef", "", "", 0, 0 },
#define DTYPE(e, name, onnx, bits, torch, st) [e] = { name, torch, st, onnx, bits },
#include "dtypes.def"
};

const char *dtype_name(DType t) { return t < DT_COUNT ? dtypes[t].name : "undef"; }
int dtype_onnx(DType t) { return t < DT_COUNT ? dtypes[t].onnx : 0; }
int dtype_bits(DType t) { return t < DT_COUNT ? dtypes[t].bits : 0; }
const char *dtype_torch(DType t) { return t < DT_COUNT ? dtypes[t].torch : ""; }
const char *dtype_safetensors(DType t) { return t < DT_COUNT ? dtypes[t].st : ""; }

DType dtype_from_onnx(int onnx)
{
	for (int t = 1; t < DT_COUNT; t++)
		if (dtypes[t].onnx == onnx)
			return (DType)t;
	return DT_UNDEF;
}

DType dtype_from_name(const char *s, size_t n)
{
	for (int t = 1; t < DT_COUNT; t++)
		if (strlen(dtypes[t].name) == n && memcmp(dtypes[t].name, s, n) == 0)
			return (DType)t;
	return DT_UNDEF;
}

DType dtype_from_safetensors(const char *s)
{
	for (int t = 1; t < DT_COUNT; t++)
		if (dtypes[t].st[0] && strcmp(dtypes[t].st, s) == 0)
			return (DType)t;
	return DT_UNDEF;
}

int type_equal(const Type *a, const Type *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->kind != b->kind)
		return 0;
	if (a->kind != TY_TENSOR)
		return type_equal(a->elem, b->elem);
	if (a->dtype != b->dtype || a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i].v != b->dims[i].v || a->dims[i].sym != b->dims[i].sym)
			return 0;
	return 1;
}

int dim_same(Dim a, Dim b)
{
	return a.sym ? a.sym == b.sym : !b.sym && a.v >= 0 && a.v == b.v;
}

Status mul_i64(int64_t a, int64_t b, int64_t *r)
{
	if (a && b > INT64_MAX / a)
		return FAILED;
	*r = a * b;
	return OK;
}

/* numel / 8 * bits first, so no step passes the result's own size. */
Status dtype_nbytes(DType t, int64_t numel, int64_t *r)
{
	int64_t bits = dtype_bits(t), whole;
	if (mul_i64(numel / 8, bits, &whole) != OK)
		return FAILED;
	int64_t rest = (numel % 8 * bits + 7) / 8;
	if (whole > INT64_MAX - rest)
		return FAILED;
	*r = whole + rest;
	return OK;
}

Status type_size(const Type *t, int64_t *numel, int64_t *nbytes)
{
	*numel = *nbytes = -1;
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return OK;
	int64_t n = 1;
	int over = 0;
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i].sym || t->dims[i].v < 0)
			return OK;
		if (t->dims[i].v == 0)
			n = 0, over = 0;        /* zero elements, whatever came before */
		else if (n && mul_i64(n, t->dims[i].v, &n) != OK)
			over = 1;
	}
	if (over || dtype_nbytes((DType)t->dtype, n, nbytes) != OK)
		return FAILED;
	*numel = n;
	return OK;
}

int64_t type_numel(const Type *t)
{
	int64_t n, b;
	return type_size(t, &n, &b) == OK ? n : -1;
}

Type *type_tensor(Arena *a, DType dt, int32_t rank, const Dim *dims)
{
	Type *t = ARENA_NEW(a, Type);
	t->kind = TY_TENSOR;
	t->dtype = (uint8_t)dt;
	t->rank = rank;
	if (rank > 0)
		t->dims = arena_dup(a, dims, sizeof *dims * (size_t)rank);
	return t;
}

Type *type_wrap(Arena *a, TypeKind k, Type *elem)
{
	Type *t = ARENA_NEW(a, Type);
	t->kind = (uint8_t)k;
	t->rank = -1;
	t->elem = elem;
	return t;
}

/* ---- op registry -------------------------------------------------------- */
const OpInfo op_info[OP_COUNT] = {
	[OP_GENERIC] = { "", 0, 0, -1, 0, -1, 0, 0 },
#define OP(e, dom, name, mi, ma, mo, mx, since, fl) [OP_##e] = { name, DOM_##dom, mi, ma, mo, mx, fl, since },
#include "ops.def"
};

/* Op names are interned right after syms.def (op_registry_init), so
 * every registry name is a Sym below op_sym_end and op_lookup indexes an
 * array by name: one load, no hashing.  A name may belong to an ONNX op
 * and an ATen op at once; each domain has its own slot. */
static Sym op_sym[OP_COUNT];
static Sym op_sym_end;
static OpId *by_name[2];            /* [0] onnx, [1] aten; by Sym */

void op_registry_init(void)
{
	for (int i = 1; i < OP_COUNT; i++) {
		op_sym[i] = sym_cstr(op_info[i].name);
		if (op_sym[i] >= op_sym_end)
			op_sym_end = op_sym[i] + 1;
	}
	by_name[0] = xcalloc(op_sym_end, sizeof(OpId));
	by_name[1] = xcalloc(op_sym_end, sizeof(OpId));
	for (int i = 1; i < OP_COUNT; i++)
		by_name[op_info[i].dom == DOM_ATEN][op_sym[i]] = (OpId)i;
}

Sym op_domain(OpId op) { return op_info[op].dom == DOM_ONNX ? S_onnx : S_aten; }

Sym op_name_of(OpId op)
{
	syms_init();
	return op_sym[op];
}

OpId op_lookup(Sym domain, Sym name)
{
	syms_init();
	if (name >= op_sym_end || (domain != S_onnx && domain != S_aten))
		return OP_GENERIC;
	return by_name[domain == S_aten][name];
}

/* ---- attribute kinds (attrs.def) ------------------------------------------ */
static const struct { OpId op; const char *name; AttrKind kind; } attr_table[] = {
#define ATTR_OP(e)
#define ATTR(e, name, kind) { OP_##e, name, AK_##kind },
#include "attrs.def"
#undef ATTR
#undef ATTR_OP
};
enum { N_ATTRS = sizeof attr_table / sizeof *attr_table };

/* The ops attrs.def lists in full (ATTR_OP). */
static const OpId attr_ops[] = {
#define ATTR_OP(e) OP_##e,
#define ATTR(e, name, kind)
#include "attrs.def"
#undef ATTR
#undef ATTR_OP
};

/* attr_row[attr_first[op] .. attr_first[op + 1]]: op's rows of attr_table
 * (a counting sort, so the table's order does not matter); attr_listed[op]:
 * op is listed in full. */
static uint16_t attr_first[OP_COUNT + 1], attr_row[N_ATTRS];
static unsigned char attr_listed[OP_COUNT];

static void attr_index(void)
{
	static int done;
	if (done)
		return;
	uint16_t next[OP_COUNT + 1] = { 0 };
	for (size_t i = 0; i < N_ATTRS; i++)
		attr_first[attr_table[i].op + 1]++;
	for (size_t op = 0; op < OP_COUNT; op++)
		attr_first[op + 1] = (uint16_t)(attr_first[op + 1] + attr_first[op]);
	memcpy(next, attr_first, sizeof next);
	for (size_t i = 0; i < N_ATTRS; i++)
		attr_row[next[attr_table[i].op]++] = (uint16_t)i;
	for (size_t i = 0; i < sizeof attr_ops / sizeof *attr_ops; i++)
		attr_listed[attr_ops[i]] = 1;
	done = 1;
}

const char *attr_kind_name(AttrKind k)
{
	static const char *const names[] = {
		"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS", "STRINGS",
		"TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
	};
	return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

AttrKind op_attr_kind(OpId op, Sym name)
{
	attr_index();
	if ((unsigned)op >= OP_COUNT)
		return AK_UNDEFINED;
	const char *s = sym_str(name);
	for (size_t i = attr_first[op]; i < attr_first[op + 1]; i++)
		if (strcmp(attr_table[attr_row[i]].name, s) == 0)
			return attr_table[attr_row[i]].kind;
	return AK_UNDEFINED;
}

int op_attrs_known(OpId op)
{
	attr_index();
	return (unsigned)op < OP_COUNT && attr_listed[op];
}
