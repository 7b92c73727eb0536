/* promote.c - PyTorch's type promotion (torch.result_type), for the
 * decompositions' $promoted literal.
 *
 * An ATen arithmetic op computes in one common dtype, chosen from its
 * operands in three tiers: tensors with dims, 0-d tensors, then Python
 * numbers.  A lower tier only counts when it is of a higher category
 * (bool < integer < float < complex) than the tiers above it, and a Python
 * float then gives the default dtype (f32), not f64.  ONNX ops take one
 * dtype for all operands, so the decompositions cast to this one.
 */
#include "passes.h"

enum { CAT_NONE, CAT_BOOL, CAT_INT, CAT_FLOAT, CAT_COMPLEX };

/* The dtypes PyTorch promotes; the others (u16..u64, f8, 4-bit) it
 * refuses in arithmetic, so they have no category. */
static int category(DType t)
{
	switch (t) {
	case DT_BOOL: return CAT_BOOL;
	case DT_U8: case DT_I8: case DT_I16: case DT_I32: case DT_I64: return CAT_INT;
	case DT_F16: case DT_BF16: case DT_F32: case DT_F64: return CAT_FLOAT;
	case DT_C64: case DT_C128: return CAT_COMPLEX;
	default: return CAT_NONE;
	}
}

/* Two dtypes of one category: integers take the smallest signed type that
 * holds both (u8 with i8 is i16), f16 with bf16 is f32, else the wider. */
static DType promote_same(DType a, DType b)
{
	if (category(a) == CAT_INT && (a == DT_U8 || b == DT_U8)) {
		DType s = a == DT_U8 ? b : a;
		return s == DT_I8 ? DT_I16 : s;
	}
	if ((a == DT_F16 && b == DT_BF16) || (a == DT_BF16 && b == DT_F16))
		return DT_F32;
	return dtype_bits(a) >= dtype_bits(b) ? a : b;
}

/* torch.promote_types; DT_UNDEF when either has no category.  A
 * complex with f64 is c128 (the float's precision is kept). */
DType dtype_promote(DType a, DType b)
{
	int ca = category(a), cb = category(b);
	if (!ca || !cb)
		return DT_UNDEF;
	if (ca == cb)
		return promote_same(a, b);
	if (ca < cb)
		return dtype_promote(b, a);
	if (ca == CAT_COMPLEX && b == DT_F64)
		return DT_C128;
	return a;
}

/* DT_UNDEF stands for an empty tier. */
static DType promote_skip(DType a, DType b)
{
	return a == DT_UNDEF ? b : b == DT_UNDEF ? a : dtype_promote(a, b);
}

/* A lower tier only wins by category (c10's combine_categories). */
static DType combine(DType higher, DType lower)
{
	int ch = category(higher), cl = category(lower);
	if (ch == CAT_COMPLEX)
		return higher;
	if (cl == CAT_COMPLEX)
		return ch == CAT_FLOAT ? (higher == DT_F64 ? DT_C128 : DT_C64) : lower;
	if (ch == CAT_FLOAT)
		return higher;
	if (higher == DT_BOOL || cl == CAT_FLOAT)
		return promote_skip(higher, lower);
	return higher != DT_UNDEF ? higher : lower;
}

typedef struct Tiers { DType dim, zero, num; int unknown; } Tiers;

static void add_operand(const Module *m, const Arg *a, Tiers *t)
{
	if (a->kind == A_INT)
		t->num = promote_skip(t->num, DT_I64);
	else if (a->kind == A_FLOAT)
		t->num = promote_skip(t->num, DT_F32);
	else if (a->kind == A_BOOL)
		t->num = promote_skip(t->num, DT_BOOL);
	else if (a->kind == A_VALUE) {
		const Type *ty = m->vals.v[a->u.v].type;
		if (!ty || ty->kind != TY_TENSOR || !category((DType)ty->dtype)) {
			t->unknown = 1;
			return;
		}
		DType *tier = ty->rank == 0 ? &t->zero : &t->dim;
		*tier = promote_skip(*tier, (DType)ty->dtype);
	}
}

/* The common dtype of the operands (tensors and numbers; none, lists and
 * the like are not operands); DT_UNDEF when an operand's dtype is unknown
 * or not one PyTorch promotes. */
DType result_type(const Module *m, const Arg *const *ops, uint32_t n)
{
	Tiers t = { DT_UNDEF, DT_UNDEF, DT_UNDEF, 0 };
	for (uint32_t i = 0; i < n; i++)
		add_operand(m, ops[i], &t);
	if (t.unknown)
		return DT_UNDEF;
	return combine(t.dim, combine(t.zero, t.num));
}
