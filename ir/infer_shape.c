/* infer_shape.c - type inference: the dims and types it builds,
 * broadcasting and shape arithmetic (products, the rest of a Reshape, slices).
 */
#include <stdlib.h>
#include <string.h>
#include "infer.h"

/* ---- small helpers --------------------------------------------------------- */
/* Sizes from attributes and constants may be anything: arithmetic that
 * overflows, or gives a negative size, gives an unknown dim. */
Dim sum_dim(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) || r < 0 ? UNK : stat(r);
}
Dim prod_dim(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) || r < 0 ? UNK : stat(r);
}

const Type *ty(const Module *m, const Node *n, uint32_t i)
{
	ValueId v = operand(n, i);
	const Type *t = v ? m->vals.v[v].type : NULL;
	return t && t->kind == TY_TENSOR ? t : NULL;
}

Type *mk(Infer *I, int dt, int32_t rank, const Dim *d)
{
	if (!dt)
		return NULL;
	return type_tensor(&I->m->arena, (DType)dt, rank > MAXR ? -1 : rank, d);
}

Type *like(Infer *I, int dt, const Type *shape)
{
	return mk(I, dt, shaped(shape) ? shape->rank : -1, shaped(shape) ? shape->dims : NULL);
}

/* dtype dt, rank `rank` (-1: unknown), every dim unknown. */
Type *unknown_dims(Infer *I, int dt, int32_t rank)
{
	Dim d[MAXR];
	for (int32_t i = 0; i < rank && i < MAXR; i++)
		d[i] = UNK;
	return mk(I, dt, rank, d);
}

/* ---- broadcasting ------------------------------------------------------------ */
/* numpy rules: a static 1 gives way to the other dim; equal dims stay; a
 * static size other than 1 wins over a symbolic or unknown one (the other
 * must equal it or be 1). */
static Dim bcast_dim(Dim a, Dim b)
{
	if (known(a) && a.v == 1)
		return b;
	if (known(b) && b.v == 1)
		return a;
	if (dim_same(a, b))
		return a;
	if (known(a) && !known(b))
		return a;
	if (known(b) && !known(a))
		return b;
	return UNK;
}

/* Broadcasts t into (rank, d); 0 when t's shape is unknown. */
int bcast_into(int32_t *rank, Dim *d, const Type *t)
{
	if (!shaped(t))
		return 0;
	int32_t r = t->rank > *rank ? t->rank : *rank;
	Dim tmp[MAXR];
	for (int32_t i = 0; i < r; i++) {
		int32_t ia = i - (r - *rank), ib = i - (r - t->rank);
		Dim a = ia >= 0 ? d[ia] : stat(1), b = ib >= 0 ? t->dims[ib] : stat(1);
		tmp[i] = bcast_dim(a, b);
	}
	memcpy(d, tmp, sizeof *d * (size_t)r);
	*rank = r;
	return 1;
}

Type *bcast_all(Infer *I, const Node *n, int dt, uint32_t from)
{
	Dim d[MAXR];
	int32_t rank = 0;
	int ok = 1;
	for (uint32_t i = from; i < n->nargs; i++)
		if (operand(n, i))
			ok &= bcast_into(&rank, d, ty(I->m, n, i));
	return mk(I, dt, ok ? rank : -1, d);
}

int is_compare(OpId op)
{
	switch (op) {
	case OP_ONNX_Equal: case OP_ONNX_Less: case OP_ONNX_LessOrEqual: case OP_ONNX_Greater:
	case OP_ONNX_GreaterOrEqual: case OP_ONNX_IsNaN: case OP_ONNX_IsInf: case OP_ONNX_And:
	case OP_ONNX_Or: case OP_ONNX_Xor: case OP_ONNX_Not: case OP_ONNX_RegexFullMatch:
		return 1;
	default:
		return 0;
	}
}

/* ---- shape arithmetic ---------------------------------------------------------- */
/* The product of d[lo..hi): static, a single symbolic dim times ones, or unknown. */
Dim dims_product(const Dim *d, int32_t lo, int32_t hi)
{
	int64_t p = 1;
	Dim sym = { 0, 0 };
	int nsym = 0;
	for (int32_t i = lo; i < hi; i++) {
		if (known(d[i])) {
			if (mul_i64(p, d[i].v, &p) != OK)
				return UNK;
		} else if (d[i].sym && !nsym++) {
			sym = d[i];
		} else {
			return UNK;
		}
	}
	if (!nsym)
		return stat(p);
	return nsym == 1 && p == 1 ? sym : UNK;
}

/* Reshape's -1: the input's dims divided by the other target dims, where
 * symbolic dims cancel by name. */
Dim reshape_rest(const Type *in, const Dim *to, int32_t n, int32_t skip)
{
	Sym left[MAXR];
	int nleft = 0;
	int64_t pin = 1, pto = 1;
	for (int32_t i = 0; i < in->rank; i++) {
		if (known(in->dims[i])) {
			if (mul_i64(pin, in->dims[i].v, &pin) != OK)
				return UNK;
		} else if (in->dims[i].sym) {
			left[nleft++] = in->dims[i].sym;
		} else {
			return UNK;
		}
	}
	for (int32_t i = 0; i < n; i++) {
		if (i == skip)
			continue;
		if (known(to[i])) {
			if (mul_i64(pto, to[i].v, &pto) != OK)
				return UNK;
			continue;
		}
		int j = 0;
		while (j < nleft && left[j] != to[i].sym)
			j++;
		if (!to[i].sym || j == nleft)
			return UNK;
		left[j] = left[--nleft];
	}
	if (nleft == 0)
		return pto > 0 && pin % pto == 0 ? stat(pin / pto) : UNK;
	return nleft == 1 && pin == pto ? (Dim){ -1, left[0] } : UNK;
}

/* Slice of a dim: start, end, step normalised as ONNX does. */
Dim slice_dim(Dim d, int64_t s, int64_t e, int64_t st)
{
	if (st == 0 || st == INT64_MIN)
		return UNK;
	if (!known(d)) {
		/* the whole axis, forwards */
		if (d.sym && st == 1 && s == 0 && e >= INT32_MAX)
			return d;
		return UNK;
	}
	int64_t n = d.v;
	if (s < 0)
		s += n;
	if (e < 0 && e > INT64_MIN + n)
		e += n;
	else if (e < 0)
		e = -1;
	if (st > 0) {
		s = s < 0 ? 0 : s > n ? n : s;
		e = e < 0 ? 0 : e > n ? n : e;
		return stat(e > s ? (e - s - 1) / st + 1 : 0);
	}
	s = s < 0 ? -1 : s > n - 1 ? n - 1 : s;
	e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
	return stat(s > e ? (s - e - 1) / (-st) + 1 : 0);
}
