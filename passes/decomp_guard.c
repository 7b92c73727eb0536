/* decomp_guard.c - a decomposition's where clause, on the arguments a call
 * binds.
 *
 * Guards are evaluated in text order.  A condition holds when it evaluates
 * to true; a definition (`$n = expr`) gives its parameter the value.  An
 * expression is unknown when it needs what the call does not tell: a rank,
 * dtype or dim its type leaves out, a size known only at run time, an
 * integer too large; a condition that is unknown does not hold (whether it
 * is written `==` or `!=`), and neither does a definition that is unknown,
 * so the next decomposition is tried.  The comparison with none is the
 * exception: any argument is known to be none or not.
 *
 * Evaluation is linear in the size of the expressions; lists it builds go
 * in a scratch arena the caller resets. */
#include <math.h>
#include <string.h>
#include "passes.h"

typedef struct Eval {
	Module *m;
	const Decomp *d;
	Arg *vals;                  /* by parameter index */
	Arena *tmp;
	Type *const *shapes;        /* rank and dims of untyped body values */
	uint32_t nshapes;
} Eval;

enum { UNKNOWN = 0, KNOWN = 1 };
/* Integers in guard arithmetic stay below 2^31 in magnitude, so no sum or
 * product overflows; lists built by arithmetic stay below 2^16 entries. */
#define SMALL (INT64_C(1) << 31)
enum { MAX_LIST = 1 << 16 };

static int is_num(const Arg *a) { return a->kind == A_INT || a->kind == A_FLOAT || a->kind == A_BOOL; }
static int is_small(const Arg *a) { return a->kind == A_INT && a->u.i > -SMALL && a->u.i < SMALL; }
static double num(const Arg *a) { return a->kind == A_FLOAT ? a->u.f : (double)a->u.i; }
static Arg int_arg(int64_t v) { return (Arg){ .kind = A_INT, .u.i = v }; }
static Arg bool_arg(int v) { return (Arg){ .kind = A_BOOL, .u.i = v != 0 }; }

Str decomp_arg_text(const Arg *a)
{
	if (a->kind == A_STR)
		return a->u.s;
	return (Str){ sym_str(a->u.sym), (uint32_t)sym_len(a->u.sym) };
}

int decomp_lit_eq(const Arg *a, const Arg *b)
{
	if (is_num(a) && is_num(b)) {
		if (a->kind == A_FLOAT || b->kind == A_FLOAT)
			return num(a) == num(b);
		return a->u.i == b->u.i;
	}
	if ((a->kind == A_STR || a->kind == A_IDENT) && (b->kind == A_STR || b->kind == A_IDENT)) {
		Str s = decomp_arg_text(a), t = decomp_arg_text(b);
		return s.n == t.n && memcmp(s.s, t.s, s.n) == 0;
	}
	if (a->kind != b->kind)
		return 0;
	if (a->kind == A_NONE)
		return 1;
	if (a->kind == A_DTYPE)
		return a->u.i == b->u.i;
	if (a->kind != A_LIST || a->n != b->n)
		return 0;
	for (uint32_t i = 0; i < a->n; i++)
		if (!decomp_lit_eq(&a->u.list[i], &b->u.list[i]))
			return 0;
	return 1;
}

/* ---- what an argument's type tells ------------------------------------------ */
/* a's tensor type; for an untyped value a body made, the shape found for
 * it (decompose.c), unless the dtype is asked for: that one the library's
 * bodies expect unknown where they did not write it. */
static const Type *tensor_type_for(const Eval *ev, const Arg *a, int dtype)
{
	const Type *t = a->kind == A_VALUE ? val(ev->m, a->u.v)->type : NULL;
	if (!t && !dtype && a->kind == A_VALUE && a->u.v < ev->nshapes)
		t = ev->shapes[a->u.v];
	return t && t->kind == TY_TENSOR ? t : NULL;
}

static const Type *tensor_type(const Eval *ev, const Arg *a) { return tensor_type_for(ev, a, 0); }

/* The rank (what = 0) or dtype (what = 1) of a tensor, of a number (rank
 * 0, dtype unknown), or shared by every tensor of a list (its nones, as in
 * index.Tensor's optional indices, left out). */
static int type_fact(const Eval *ev, const Arg *a, int what, int64_t *out)
{
	if (is_num(a) && what == 0) {
		*out = 0;
		return KNOWN;
	}
	uint32_t n = a->kind == A_LIST ? a->n : 1, seen = 0;
	const Arg *v = a->kind == A_LIST ? a->u.list : a;
	for (uint32_t i = 0; i < n; i++) {
		if (a->kind == A_LIST && v[i].kind == A_NONE)
			continue;
		const Type *t = tensor_type_for(ev, &v[i], what == 1);
		int64_t f = !t ? -1 : what == 0 ? t->rank : t->dtype == DT_UNDEF ? -1 : t->dtype;
		if (f < 0 || (seen++ && f != *out))
			return UNKNOWN;
		*out = f;
	}
	return seen ? KNOWN : UNKNOWN;
}

/* Dim i (negative: from the end) of a tensor of known rank. */
static const Dim *dim_at(const Eval *ev, const Arg *a, const Arg *i)
{
	const Type *t = tensor_type(ev, a);
	if (!t || t->rank < 0 || i->kind != A_INT || i->u.i < -(int64_t)t->rank || i->u.i >= t->rank)
		return NULL;
	return &t->dims[i->u.i < 0 ? i->u.i + t->rank : i->u.i];
}

/* The static size of dim i of a tensor, or the one shared by every tensor
 * of a list (its nones left out), as rank and dtype are. */
static int static_dim(const Eval *ev, const Arg *a, const Arg *i, int64_t *out)
{
	uint32_t n = a->kind == A_LIST ? a->n : 1, seen = 0;
	const Arg *v = a->kind == A_LIST ? a->u.list : a;
	for (uint32_t k = 0; k < n; k++) {
		if (a->kind == A_LIST && v[k].kind == A_NONE)
			continue;
		const Dim *d = dim_at(ev, &v[k], i);
		if (!d || d->sym || d->v < 0 || (seen++ && d->v != *out))
			return UNKNOWN;
		*out = d->v;
	}
	return seen ? KNOWN : UNKNOWN;
}

/* ---- evaluation ---------------------------------------------------------------- */
static int eval(const Eval *ev, const GExpr *e, Arg *out);

static Arg *param(const Eval *ev, Sym name)
{
	for (uint32_t i = 0; i < ev->d->nparam; i++)
		if (ev->d->params[i].name == name)
			return &ev->vals[i];
	ONNXC_BUG("guard names an unknown parameter %s", sym_str(name));
}

static int fn(const Eval *ev, const GExpr *e, Arg *out)
{
	const Arg *a = param(ev, e->sub[0]->name);
	Arg i = { 0 };
	int64_t f;
	const Dim *d;
	if (e->n > 1 && !eval(ev, e->sub[1], &i))
		return UNKNOWN;
	switch ((GuardFn)e->fn) {
	case GF_RANK:
		if (!type_fact(ev, a, 0, &f))
			return UNKNOWN;
		*out = int_arg(f);
		return KNOWN;
	case GF_DTYPE:
		if (!type_fact(ev, a, 1, &f))
			return UNKNOWN;
		*out = (Arg){ .kind = A_DTYPE, .u.i = f };
		return KNOWN;
	case GF_DIM:
		if (!static_dim(ev, a, &i, &f))
			return UNKNOWN;
		*out = int_arg(f);
		return KNOWN;
	case GF_STATIC:
		if (!(d = dim_at(ev, a, &i)))
			return UNKNOWN;
		*out = bool_arg(!d->sym && d->v >= 0);
		return KNOWN;
	case GF_LEN:
		if (a->kind != A_LIST)
			return UNKNOWN;
		*out = int_arg(a->n);
		return KNOWN;
	default:
		return UNKNOWN;
	}
}

static Arg new_list(const Eval *ev, uint32_t n)
{
	return (Arg){ .kind = A_LIST, .n = n, .u.list = ARENA_ARRAY(ev->tmp, Arg, n ? n : 1) };
}

/* + - * / on small integers (/ rounds down, as Python's //); + joins two
 * lists, * repeats a list (Python's [1] * 3). */
static int arith(const Eval *ev, int op, const Arg *a, const Arg *b, Arg *out)
{
	if (op == GX_ADD && a->kind == A_LIST && b->kind == A_LIST && a->n + (uint64_t)b->n < MAX_LIST) {
		*out = new_list(ev, a->n + b->n);
		memcpy(out->u.list, a->u.list, a->n * sizeof *a->u.list);
		memcpy(out->u.list + a->n, b->u.list, b->n * sizeof *b->u.list);
		return KNOWN;
	}
	if (op == GX_MUL && (a->kind == A_LIST) != (b->kind == A_LIST)) {
		const Arg *l = a->kind == A_LIST ? a : b, *k = a->kind == A_LIST ? b : a;
		int64_t times = is_small(k) && k->u.i > 0 ? k->u.i : 0;
		if (k->kind != A_INT || (uint64_t)times * l->n >= MAX_LIST)
			return UNKNOWN;
		*out = new_list(ev, (uint32_t)(times * l->n));
		for (int64_t t = 0; t < times; t++)
			memcpy(out->u.list + t * l->n, l->u.list, l->n * sizeof *l->u.list);
		return KNOWN;
	}
	if (!is_small(a) || !is_small(b))
		return UNKNOWN;
	int64_t x = a->u.i, y = b->u.i, q;
	switch (op) {
	case GX_ADD: *out = int_arg(x + y); return KNOWN;
	case GX_SUB: *out = int_arg(x - y); return KNOWN;
	case GX_MUL: *out = int_arg(x * y); return KNOWN;
	default:
		if (y == 0)
			return UNKNOWN;
		q = x / y;
		*out = int_arg(q * y != x && (x < 0) != (y < 0) ? q - 1 : q);
		return KNOWN;
	}
}

/* Equality: none against anything is known; otherwise an argument that
 * holds a run-time value is unknown. */
static int equal(const Arg *a, const Arg *b, int *eq)
{
	if (a->kind == A_NONE || b->kind == A_NONE) {
		*eq = a->kind == b->kind;
		return KNOWN;
	}
	if (arg_contains(a, A_VALUE) || arg_contains(b, A_VALUE))
		return UNKNOWN;
	*eq = decomp_lit_eq(a, b);
	return KNOWN;
}

static int member(const Arg *a, const Arg *l, int *in)
{
	if (l->kind != A_LIST)
		return UNKNOWN;
	*in = 0;
	for (uint32_t i = 0; i < l->n && !*in; i++)
		if (!equal(a, &l->u.list[i], in))
			return UNKNOWN;
	return KNOWN;
}

static int compare(int op, const Arg *a, const Arg *b, Arg *out)
{
	int r;
	if (op == GX_EQ || op == GX_NE) {
		if (!equal(a, b, &r))
			return UNKNOWN;
		*out = bool_arg(op == GX_EQ ? r : !r);
		return KNOWN;
	}
	if (op == GX_IN || op == GX_NOTIN) {
		if (!member(a, b, &r))
			return UNKNOWN;
		*out = bool_arg(op == GX_IN ? r : !r);
		return KNOWN;
	}
	if ((a->kind != A_INT && a->kind != A_FLOAT) || (b->kind != A_INT && b->kind != A_FLOAT) ||
	    isnan(num(a)) || isnan(num(b)))
		return UNKNOWN;
	if (a->kind == A_INT && b->kind == A_INT)      /* exact past 2^53 */
		r = (a->u.i > b->u.i) - (a->u.i < b->u.i);
	else
		r = (num(a) > num(b)) - (num(a) < num(b));
	*out = bool_arg(op == GX_LT ? r < 0 : op == GX_LE ? r <= 0 : op == GX_GT ? r > 0 : r >= 0);
	return KNOWN;
}

static int eval(const Eval *ev, const GExpr *e, Arg *out)
{
	Arg a, b;
	switch ((GExprKind)e->kind) {
	case GX_LIT:
		*out = e->lit;
		return KNOWN;
	case GX_PARAM: case GX_VALUE:
		*out = *param(ev, e->name);
		return KNOWN;
	case GX_FN:
		return fn(ev, e, out);
	case GX_LIST:
		*out = new_list(ev, e->n);
		for (uint32_t i = 0; i < e->n; i++)
			if (!eval(ev, e->sub[i], &out->u.list[i]))
				return UNKNOWN;
		return KNOWN;
	case GX_NEG:
		if (!eval(ev, e->sub[0], &a) || !is_small(&a))
			return UNKNOWN;
		*out = int_arg(-a.u.i);
		return KNOWN;
	case GX_INDEX:      /* Python's: a negative index counts from the end */
		if (!eval(ev, e->sub[0], &a) || !eval(ev, e->sub[1], &b) || a.kind != A_LIST ||
		    b.kind != A_INT || b.u.i < -(int64_t)a.n || b.u.i >= (int64_t)a.n)
			return UNKNOWN;
		*out = a.u.list[b.u.i < 0 ? b.u.i + a.n : b.u.i];
		return KNOWN;
	default:
		break;
	}
	if (!eval(ev, e->sub[0], &a) || !eval(ev, e->sub[1], &b))
		return UNKNOWN;
	if (e->kind >= GX_ADD && e->kind <= GX_DIV)
		return arith(ev, e->kind, &a, &b, out);
	return compare(e->kind, &a, &b, out);
}

int decomp_where(Module *m, const Decomp *d, Arg *vals, Arena *tmp, Type *const *shapes, uint32_t nshapes)
{
	Eval ev = { m, d, vals, tmp, shapes, nshapes };
	for (uint32_t i = 0; i < d->nguard; i++) {
		const Guard *g = &d->guards[i];
		Arg r;
		if (!eval(&ev, g->e, &r))
			return 0;
		if (g->def)
			*param(&ev, g->def) = r;
		else if (r.kind != A_BOOL || !r.u.i)
			return 0;
	}
	return 1;
}
