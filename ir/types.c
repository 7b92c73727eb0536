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

int64_t type_numel(const Type *t)
{
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return -1;
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i].sym || t->dims[i].v < 0)
			return -1;
		if (t->dims[i].v && n > INT64_MAX / t->dims[i].v)
			return -1;
		n *= t->dims[i].v;
	}
	return n;
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
	[OP_GENERIC] = { "", 0, 0, -1, 0, -1, 0 },
#define OP(e, dom, name, mi, ma, mo, mx, fl) [OP_##e] = { name, DOM_##dom, mi, ma, mo, mx, fl },
#include "ops.def"
};

static Sym s_onnx, s_aten;
Sym dom_onnx(void) { return s_onnx ? s_onnx : (s_onnx = sym_cstr("onnx")); }
Sym dom_aten(void) { return s_aten ? s_aten : (s_aten = sym_cstr("aten")); }

/* Sym -> OpId, built on first use.  Indexed by Sym modulo a power of two;
 * collisions chain linearly.  Keys pair the domain with the name. */
enum { OPMAP = 4096 };
static struct { Sym dom, name; OpId op; } opmap[OPMAP];
static int opmap_ready;

static uint32_t opslot(Sym dom, Sym name) { return (name * 2654435761u + dom) & (OPMAP - 1); }

static void opmap_build(void)
{
	for (int i = 1; i < OP_COUNT; i++) {
		Sym dom = op_info[i].dom == DOM_ONNX ? dom_onnx() : dom_aten();
		Sym name = sym_cstr(op_info[i].name);
		uint32_t h = opslot(dom, name);
		while (opmap[h].name)
			h = (h + 1) & (OPMAP - 1);
		opmap[h].dom = dom;
		opmap[h].name = name;
		opmap[h].op = (OpId)i;
	}
	opmap_ready = 1;
}

OpId op_lookup(Sym domain, Sym name)
{
	if (!opmap_ready)
		opmap_build();
	for (uint32_t h = opslot(domain, name); opmap[h].name; h = (h + 1) & (OPMAP - 1))
		if (opmap[h].dom == domain && opmap[h].name == name)
			return opmap[h].op;
	return OP_GENERIC;
}
