/* infer.c - type and shape inference for ONNX ops.
 *
 * infer_node computes the types of a node's results from its operands'
 * types, its attributes and its constant operands; infer_module gives every
 * untyped result in the program its inferred type, in one walk in node
 * order (a subgraph before the node that holds it).  Inference never
 * replaces a written type: the verifier compares the two instead
 * (infer_conflict).
 *
 * A dim that cannot be derived is unknown (`?`), not a reason to drop the
 * type: an Add of f32[batch,8] and f32[?,8] is f32[?,8], a Reshape to a
 * shape computed at run time keeps its dtype and, when the shape's length
 * is known, its rank.  Symbolic dims survive where they are carried through
 * unchanged (broadcasting equal names, transposing, gathering, concatenating
 * along another axis...).  Small int64 vectors whose elements are dims
 * (Shape, and Gather/Slice/Concat/Unsqueeze/Squeeze/Cast of it, constants)
 * are tracked during infer_module, so a Reshape or Expand to a shape
 * assembled from Shape keeps the symbolic dims it copies.
 */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

enum { MAXR = 64 };             /* ranks past this are left unknown */

static const Dim UNK = { -1, 0 };
/* An element of a tracked int vector that is not known: unlike UNK it
 * cannot be mistaken for the constant -1 (Reshape's "the rest"). */
static const Dim NOTCONST = { INT64_MIN, 0 };

typedef struct DimVec { Dim *d; int32_t n; } DimVec;   /* n < 0: unknown */

typedef struct Infer {
	Module *m;
	DimVec *sv;                 /* by ValueId: the elements of small int vectors, or NULL */
	uint32_t nsv;
	uint32_t typed;
} Infer;

/* ---- small helpers --------------------------------------------------------- */
static int known(Dim d) { return !d.sym && d.v >= 0; }
static Dim stat(int64_t v) { return (Dim){ v, 0 }; }
/* Sizes from attributes and constants may be anything: arithmetic that
 * overflows, or gives a negative size, gives an unknown dim. */
static Dim sum_dim(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) || r < 0 ? UNK : stat(r);
}
static Dim prod_dim(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) || r < 0 ? UNK : stat(r);
}

static const Type *ty(const Module *m, const Node *n, uint32_t i)
{
	ValueId v = operand(n, i);
	const Type *t = v ? m->vals.v[v].type : NULL;
	return t && t->kind == TY_TENSOR ? t : NULL;
}

static int shaped(const Type *t) { return t && t->rank >= 0 && t->rank <= MAXR; }

static Type *mk(Infer *I, int dt, int32_t rank, const Dim *d)
{
	if (!dt)
		return NULL;
	return type_tensor(&I->m->arena, (DType)dt, rank > MAXR ? -1 : rank, d);
}

static Type *like(Infer *I, int dt, const Type *shape)
{
	return mk(I, dt, shaped(shape) ? shape->rank : -1, shaped(shape) ? shape->dims : NULL);
}

/* dtype dt, rank `rank` (-1: unknown), every dim unknown. */
static Type *unknown_dims(Infer *I, int dt, int32_t rank)
{
	Dim d[MAXR];
	for (int32_t i = 0; i < rank && i < MAXR; i++)
		d[i] = UNK;
	return mk(I, dt, rank, d);
}

static Sym S(const char *s) { return sym_cstr(s); }

static int kw_int(const Node *n, const char *name, int64_t *v)
{
	const Named *k = node_kw(n, S(name));
	if (!k)
		return 0;
	if (k->val.kind == A_INT || k->val.kind == A_BOOL) {
		*v = k->val.u.i;
		return 1;
	}
	if (k->val.kind == A_DTYPE) {
		*v = dtype_onnx((DType)k->val.u.i);
		return 1;
	}
	return 0;
}

static int64_t kw_int_or(const Node *n, const char *name, int64_t dflt)
{
	int64_t v;
	return kw_int(n, name, &v) ? v : dflt;
}

/* An ints attribute (or one int): its length, or -1 if absent or not ints. */
static int kw_ints(const Node *n, const char *name, int64_t *buf, int cap)
{
	const Named *k = node_kw(n, S(name));
	if (!k)
		return -1;
	if (k->val.kind == A_INT) {
		buf[0] = k->val.u.i;
		return 1;
	}
	if (k->val.kind != A_LIST || k->val.n > (uint32_t)cap)
		return -1;
	for (uint32_t i = 0; i < k->val.n; i++) {
		if (k->val.u.list[i].kind != A_INT)
			return -1;
		buf[i] = k->val.u.list[i].u.i;
	}
	return (int)k->val.n;
}

static const char *kw_str(const Node *n, const char *name, uint32_t *len)
{
	const Named *k = node_kw(n, S(name));
	if (!k || k->val.kind != A_STR)
		return NULL;
	*len = k->val.u.s.n;
	return k->val.u.s.s;
}

static int dtype_attr(const Node *n, const char *name)
{
	const Named *k = node_kw(n, S(name));
	if (!k)
		return 0;
	if (k->val.kind == A_DTYPE)
		return (int)k->val.u.i;
	return k->val.kind == A_INT ? dtype_from_onnx((int)k->val.u.i) : 0;
}

/* The elements of a constant integer operand (rank 0 or 1): its length,
 * or -1. */
static int const_ints(const Module *m, ValueId v, int64_t *buf, int cap)
{
	const Tensor *t = v ? const_tensor(m, v) : NULL;
	if (!t || !t->type || !t->data || !dtype_is_int((DType)t->type->dtype) || t->type->rank > 1)
		return -1;
	int64_t cnt = type_numel(t->type);
	if (cnt < 0 || cnt > cap)
		return -1;
	for (int64_t i = 0; i < cnt; i++)
		buf[i] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
	return (int)cnt;
}

/* The elements of an integer vector operand as dims: a vector tracked by
 * infer_module (unknown elements NOTCONST) or a constant.  Its length, or
 * -1. */
static int int_vec(Infer *I, ValueId v, Dim *buf, int cap)
{
	if (!v)
		return -1;
	if (I->sv && v < I->nsv && I->sv[v].n >= 0 && I->sv[v].d) {
		if (I->sv[v].n > cap)
			return -1;
		memcpy(buf, I->sv[v].d, sizeof *buf * (size_t)I->sv[v].n);
		return I->sv[v].n;
	}
	int64_t c[MAXR];
	int n = const_ints(I->m, v, c, cap < MAXR ? cap : MAXR);
	for (int i = 0; i < n; i++)
		buf[i] = stat(c[i]);
	return n;
}

/* The same as integers (negative ones included); -1 when an element is
 * symbolic or unknown. */
static int int_consts(Infer *I, ValueId v, int64_t *buf, int cap)
{
	int n = const_ints(I->m, v, buf, cap);
	if (n >= 0)
		return n;
	Dim d[MAXR];
	n = int_vec(I, v, d, cap < MAXR ? cap : MAXR);
	for (int i = 0; i < n; i++) {
		if (d[i].sym || (d[i].v == NOTCONST.v))
			return -1;
		buf[i] = d[i].v;
	}
	return n;
}

/* A constant int vector: attribute `name` if present, else operand i. */
static int ints_attr_or_input(Infer *I, const Node *n, const char *name, uint32_t i, int64_t *buf, int cap)
{
	int k = kw_ints(n, name, buf, cap);
	return k >= 0 ? k : int_consts(I, operand(n, i), buf, cap);
}

static int norm_axis(int64_t a, int32_t rank, int32_t *out)
{
	if (a < 0)
		a += rank;
	if (a < 0 || a >= rank)
		return 0;
	*out = (int32_t)a;
	return 1;
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
static int bcast_into(int32_t *rank, Dim *d, const Type *t)
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

static Type *bcast_all(Infer *I, const Node *n, int dt, uint32_t from)
{
	Dim d[MAXR];
	int32_t rank = 0;
	int ok = 1;
	for (uint32_t i = from; i < n->nargs; i++)
		if (operand(n, i))
			ok &= bcast_into(&rank, d, ty(I->m, n, i));
	return mk(I, dt, ok ? rank : -1, d);
}

static int is_compare(OpId op)
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

static int dt_of(const Type *t) { return t ? t->dtype : 0; }

/* ---- shape arithmetic ---------------------------------------------------------- */
/* The product of d[lo..hi): static, a single symbolic dim times ones, or unknown. */
static Dim dims_product(const Dim *d, int32_t lo, int32_t hi)
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
static Dim reshape_rest(const Type *in, const Dim *to, int32_t n, int32_t skip)
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
static Dim slice_dim(Dim d, int64_t s, int64_t e, int64_t st)
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

/* ---- op families -------------------------------------------------------------- */
static Type *infer_matmul(Infer *I, const Type *a, const Type *b, int dt)
{
	if (!shaped(a) || !shaped(b) || a->rank == 0 || b->rank == 0)
		return mk(I, dt, -1, NULL);
	Dim ad[MAXR], bd[MAXR], d[MAXR];
	int32_t ar = a->rank, br = b->rank;
	memcpy(ad, a->dims, sizeof *ad * (size_t)ar);
	memcpy(bd, b->dims, sizeof *bd * (size_t)br);
	int a1 = ar == 1, b1 = br == 1;
	if (a1) {
		ad[1] = ad[0];
		ad[0] = stat(1);
		ar = 2;
	}
	if (b1) {
		bd[1] = stat(1);
		br = 2;
	}
	/* batch dims broadcast */
	int32_t r = 0;
	Type ta = { TY_TENSOR, 0, ar - 2, ad, NULL }, tb = { TY_TENSOR, 0, br - 2, bd, NULL };
	bcast_into(&r, d, &ta);
	bcast_into(&r, d, &tb);
	if (!a1)
		d[r++] = ad[ar - 2];
	if (!b1)
		d[r++] = bd[br - 1];
	return mk(I, dt, r, d);
}

/* Spatial output sizes of Conv, ConvTranspose and the pools. */
static Dim window_dim(Dim in, int64_t k, int64_t s, int64_t dl, int64_t pb, int64_t pe,
		      const char *ap, uint32_t apn, int ceil_mode, int transpose, int64_t outpad)
{
	/* beyond these bounds no real model lies, and no step overflows */
	const int64_t big = (int64_t)1 << 40, small = 1 << 20;
	if (!known(in) || in.v > big || k < 0 || k > small || s <= 0 || s > small || dl <= 0 || dl > small
	    || pb < -big || pb > big || pe < -big || pe > big || outpad < -big || outpad > big)
		return UNK;
	int64_t ek = (k - 1) * dl + 1, x = in.v;
	int same = ap && apn > 4 && memcmp(ap, "SAME", 4) == 0;
	int valid = ap && apn == 5 && memcmp(ap, "VALID", 5) == 0;
	if (transpose) {
		if (same)
			return stat(x * s);
		if (valid)
			pb = pe = 0;
		return sum_dim(s * (x - 1) + outpad + ek - pb - pe, 0);
	}
	if (same)
		return stat((x + s - 1) / s);
	if (valid)
		pb = pe = 0;
	int64_t span = x + pb + pe - ek;
	if (span < 0)
		return UNK;
	int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
	if (ceil_mode && (o - 1) * s >= x + pb)
		o--;
	return stat(o);
}

static Type *infer_window(Infer *I, const Node *n, const Type *x, const Type *w, Dim channels, int transpose)
{
	int dt = dt_of(x);
	if (!shaped(x) || x->rank < 2)
		return mk(I, dt, -1, NULL);
	int32_t sp = x->rank - 2;
	int64_t k[MAXR], s[MAXR], dl[MAXR], p[2 * MAXR], op[MAXR], os[MAXR];
	int nk = kw_ints(n, "kernel_shape", k, MAXR);
	if (nk < 0 && shaped(w) && w->rank == x->rank) {
		nk = sp;
		for (int32_t i = 0; i < sp; i++)
			k[i] = known(w->dims[i + 2]) ? w->dims[i + 2].v : -1;
	}
	Dim d[MAXR];
	d[0] = x->dims[0];
	d[1] = channels;
	int nos = transpose ? kw_ints(n, "output_shape", os, MAXR) : -1;
	int ns = kw_ints(n, "strides", s, MAXR), nd = kw_ints(n, "dilations", dl, MAXR);
	int np = kw_ints(n, "pads", p, 2 * MAXR), nop = kw_ints(n, "output_padding", op, MAXR);
	uint32_t apn = 0;
	const char *ap = kw_str(n, "auto_pad", &apn);
	int ceil_mode = (int)kw_int_or(n, "ceil_mode", 0);
	for (int32_t i = 0; i < sp; i++) {
		if (nos == sp) {
			d[i + 2] = stat(os[i]);
			continue;
		}
		d[i + 2] = nk != sp ? UNK
			: window_dim(x->dims[i + 2], k[i], ns == sp ? s[i] : 1, nd == sp ? dl[i] : 1,
				     np == 2 * sp ? p[i] : 0, np == 2 * sp ? p[i + sp] : 0, ap, apn,
				     ceil_mode, transpose, nop == sp ? op[i] : 0);
	}
	return mk(I, dt, x->rank, d);
}

/* Reduce*: axes from the attribute or the second operand. */
static Type *infer_reduce(Infer *I, const Node *n, const Type *x, int dt)
{
	int64_t keep = kw_int_or(n, "keepdims", 1), noop = kw_int_or(n, "noop_with_empty_axes", 0);
	int64_t ax[MAXR];
	int na = kw_ints(n, "axes", ax, MAXR);
	if (na < 0 && operand(n, 1)) {
		na = int_consts(I, operand(n, 1), ax, MAXR);
		if (na < 0)
			return unknown_dims(I, dt, shaped(x) && keep ? x->rank : -1);
	}
	if (na < 0)
		na = 0;
	if (!shaped(x))
		return mk(I, dt, -1, NULL);
	if (na == 0 && noop)
		return like(I, dt, x);
	uint8_t red[MAXR] = { 0 };
	for (int i = 0; i < na; i++) {
		int32_t a;
		if (!norm_axis(ax[i], x->rank, &a))
			return mk(I, dt, -1, NULL);
		red[a] = 1;
	}
	Dim d[MAXR];
	int32_t r = 0;
	for (int32_t i = 0; i < x->rank; i++) {
		if (na && !red[i])
			d[r++] = x->dims[i];
		else if (keep)
			d[r++] = stat(1);
	}
	return mk(I, dt, r, d);
}

static Type *infer_reshape(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	Dim to[MAXR];
	int cnt = int_vec(I, operand(n, 1), to, MAXR);
	if (cnt < 0) {
		const Type *st = ty(I->m, n, 1);
		int rank = shaped(st) && st->rank == 1 && known(st->dims[0]) && st->dims[0].v <= MAXR
			? (int)st->dims[0].v : -1;
		Dim u[MAXR];
		for (int i = 0; i < rank; i++)
			u[i] = UNK;
		return mk(I, dt, rank, u);
	}
	int64_t allowzero = kw_int_or(n, "allowzero", 0);
	int32_t minus = -1;
	for (int i = 0; i < cnt; i++) {
		if (known(to[i]) && to[i].v == 0 && !allowzero)
			to[i] = shaped(x) && i < x->rank ? x->dims[i] : UNK;
		else if (!to[i].sym && to[i].v == -1)
			minus = i;
		else if (!to[i].sym && to[i].v < -1)
			to[i] = UNK;
	}
	if (minus >= 0)
		to[minus] = shaped(x) ? reshape_rest(x, to, cnt, minus) : UNK;
	return mk(I, dt, cnt, to);
}

static Type *infer_slice(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	if (!shaped(x))
		return mk(I, dt, -1, NULL);
	int64_t s[MAXR], e[MAXR], ax[MAXR], st[MAXR];
	int ns = ints_attr_or_input(I, n, "starts", 1, s, MAXR);
	int ne = ints_attr_or_input(I, n, "ends", 2, e, MAXR);
	int na = ints_attr_or_input(I, n, "axes", 3, ax, MAXR);
	int nst = operand(n, 4) ? int_consts(I, operand(n, 4), st, MAXR) : -1;
	Dim d[MAXR];
	memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
	if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (operand(n, 4) && nst != ns)) {
		/* which axes change is not known */
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = UNK;
		return mk(I, dt, x->rank, d);
	}
	if (na < 0 && !operand(n, 3))
		for (int i = 0; i < ns; i++)
			ax[i] = i;
	else if (na < 0)
		return like(I, dt, NULL);
	for (int i = 0; i < ns; i++) {
		int32_t a;
		if (!norm_axis(ax[i], x->rank, &a))
			return mk(I, dt, -1, NULL);
		d[a] = slice_dim(x->dims[a], s[i], e[i], nst == ns ? st[i] : 1);
	}
	return mk(I, dt, x->rank, d);
}

static Type *infer_concat(Infer *I, const Node *n)
{
	const Type *t0 = NULL;
	for (uint32_t i = 0; i < n->nargs && !t0; i++)
		t0 = ty(I->m, n, i);
	int dt = dt_of(t0);
	int32_t rank = -1, a;
	for (uint32_t i = 0; i < n->nargs; i++)
		if (shaped(ty(I->m, n, i)))
			rank = ty(I->m, n, i)->rank;
	if (rank < 0 || !norm_axis(kw_int_or(n, "axis", 0), rank, &a))
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	for (int32_t k = 0; k < rank; k++)
		d[k] = k == a ? stat(0) : UNK;
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Type *t = ty(I->m, n, i);
		if (!operand(n, i))
			continue;
		if (!shaped(t) || t->rank != rank) {
			d[a] = UNK;
			continue;
		}
		for (int32_t k = 0; k < rank; k++) {
			if (k == a)
				d[a] = known(d[a]) && known(t->dims[k]) ? sum_dim(d[a].v, t->dims[k].v)
					: n->nargs == 1 ? t->dims[k] : UNK;
			else if (!known(d[k]) && !d[k].sym)
				d[k] = t->dims[k];
		}
	}
	return mk(I, dt, rank, d);
}

static void infer_split(Infer *I, const Node *n, const Type *x, Type **out)
{
	int dt = dt_of(x);
	int32_t a;
	if (!shaped(x) || !norm_axis(kw_int_or(n, "axis", 0), x->rank, &a)) {
		for (uint32_t i = 0; i < n->nres; i++)
			out[i] = mk(I, dt, -1, NULL);
		return;
	}
	int64_t sz[MAXR];
	int ns = n->nres <= MAXR ? ints_attr_or_input(I, n, "split", 1, sz, MAXR) : -1;
	/* equal parts: num_outputs (opset 18), else one per result */
	int64_t parts = kw_int_or(n, "num_outputs", n->nres);
	Dim d[MAXR];
	memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
	for (uint32_t i = 0; i < n->nres; i++) {
		if (ns == (int)n->nres)
			d[a] = stat(sz[i]);
		else if (ns < 0 && !operand(n, 1) && known(x->dims[a]) && parts > 0) {
			int64_t k = x->dims[a].v / parts + (x->dims[a].v % parts != 0);
			int64_t before, rest;
			if (__builtin_mul_overflow(k, (int64_t)i, &before))
				before = INT64_MAX;
			rest = x->dims[a].v - before;
			d[a] = stat(rest < 0 ? 0 : rest < k ? rest : k);
		} else
			d[a] = UNK;
		out[i] = mk(I, dt, x->rank, d);
	}
}

static Type *infer_gather(Infer *I, const Node *n, const Type *x, const Type *idx)
{
	int dt = dt_of(x);
	int32_t a;
	if (!shaped(x) || !shaped(idx) || !norm_axis(kw_int_or(n, "axis", 0), x->rank, &a)
	    || x->rank + idx->rank - 1 > MAXR)
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	int32_t r = 0;
	for (int32_t i = 0; i < a; i++)
		d[r++] = x->dims[i];
	for (int32_t i = 0; i < idx->rank; i++)
		d[r++] = idx->dims[i];
	for (int32_t i = a + 1; i < x->rank; i++)
		d[r++] = x->dims[i];
	return mk(I, dt, r, d);
}

static Type *infer_gather_nd(Infer *I, const Node *n, const Type *x, const Type *idx)
{
	int dt = dt_of(x);
	int64_t b = kw_int_or(n, "batch_dims", 0);
	if (!shaped(x) || !shaped(idx) || idx->rank < 1 || !known(idx->dims[idx->rank - 1]))
		return mk(I, dt, -1, NULL);
	int64_t last = idx->dims[idx->rank - 1].v;
	if (b < 0 || last > x->rank || b > x->rank - last)
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	int32_t r = 0;
	for (int32_t i = 0; i < idx->rank - 1; i++)
		d[r++] = idx->dims[i];
	for (int64_t i = b + last; i < x->rank && r < MAXR; i++)
		d[r++] = x->dims[i];
	return mk(I, dt, r, d);
}

static Type *infer_squeeze(Infer *I, const Node *n, const Type *x, int un)
{
	int dt = dt_of(x);
	int64_t ax[MAXR];
	int na = ints_attr_or_input(I, n, "axes", 1, ax, MAXR);
	if (!shaped(x) || (na < 0 && (un || operand(n, 1))))
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	int32_t r = 0;
	if (un) {
		int32_t out = x->rank + na, k = 0;
		uint8_t ins[MAXR] = { 0 };
		if (out > MAXR)
			return mk(I, dt, -1, NULL);
		for (int i = 0; i < na; i++) {
			int32_t a;
			if (!norm_axis(ax[i], out, &a))
				return mk(I, dt, -1, NULL);
			ins[a] = 1;
		}
		for (int32_t i = 0; i < out; i++)
			d[r++] = ins[i] ? stat(1) : x->dims[k++];
		return mk(I, dt, r, d);
	}
	uint8_t drop[MAXR] = { 0 };
	for (int i = 0; i < na; i++) {
		int32_t a;
		if (!norm_axis(ax[i], x->rank, &a))
			return mk(I, dt, -1, NULL);
		drop[a] = 1;
	}
	for (int32_t i = 0; i < x->rank; i++) {
		if (na <= 0 && !known(x->dims[i]))
			return mk(I, dt, -1, NULL);
		if (na > 0 ? !drop[i] : x->dims[i].v != 1)
			d[r++] = x->dims[i];
	}
	return mk(I, dt, r, d);
}

static Type *infer_transpose(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	if (!shaped(x))
		return mk(I, dt, -1, NULL);
	int64_t p[MAXR];
	int np = kw_ints(n, "perm", p, MAXR);
	Dim d[MAXR];
	for (int32_t i = 0; i < x->rank; i++) {
		int64_t k = np == x->rank ? p[i] : x->rank - 1 - i;
		if (k < 0)
			k += x->rank;
		if (k < 0 || k >= x->rank)
			return mk(I, dt, -1, NULL);
		d[i] = x->dims[k];
	}
	return mk(I, dt, x->rank, d);
}

static Type *infer_einsum(Infer *I, const Node *n)
{
	int dt = dt_of(ty(I->m, n, 0));
	uint32_t len;
	const char *eq = kw_str(n, "equation", &len);
	const char *arrow = eq ? memchr(eq, '>', len) : NULL;
	if (!eq || memchr(eq, '.', len))
		return mk(I, dt, -1, NULL);
	/* implicit output: the letters used once, in alphabetical order */
	char implicit[128];
	if (!arrow) {
		int count[128] = { 0 };
		uint32_t k = 0;
		for (uint32_t i = 0; i < len; i++)
			if ((unsigned char)eq[i] < 128)
				count[(int)eq[i]]++;
		for (int c = 'A'; c <= 'z'; c++)
			if (count[c] == 1 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
				implicit[k++] = (char)c;
		implicit[k] = 0;
	}
	const char *end_in = arrow ? arrow - 1 : eq + len;
	Dim letter[128];
	for (int i = 0; i < 128; i++)
		letter[i] = UNK;
	uint32_t op = 0, pos = 0;
	for (const char *p = eq; p < end_in; p++) {
		if (*p == ',') {
			op++;
			pos = 0;
		} else if (*p != ' ' && (unsigned char)*p < 128) {
			const Type *t = ty(I->m, n, op);
			if (shaped(t) && pos < (uint32_t)t->rank && !known(letter[(int)*p]))
				letter[(int)*p] = t->dims[pos];
			pos++;
		}
	}
	Dim d[MAXR];
	int32_t r = 0;
	const char *o = arrow ? arrow + 1 : implicit, *oe = arrow ? eq + len : implicit + strlen(implicit);
	for (const char *p = o; p < oe && r < MAXR; p++)
		if (*p != ' ' && (unsigned char)*p < 128)
			d[r++] = letter[(int)*p];
	return mk(I, dt, r, d);
}

/* If's results: the branches' output types where they agree. */
static Type *merge_types(Infer *I, const Type *a, const Type *b)
{
	if (!a || !b || a->kind != TY_TENSOR || b->kind != TY_TENSOR)
		return a && b && type_equal(a, b) ? (Type *)a : NULL;
	if (a->dtype != b->dtype)
		return NULL;
	if (!shaped(a) || !shaped(b) || a->rank != b->rank)
		return mk(I, a->dtype, -1, NULL);
	Dim d[MAXR];
	for (int32_t i = 0; i < a->rank; i++)
		d[i] = dim_same(a->dims[i], b->dims[i]) ? a->dims[i] : UNK;
	return mk(I, a->dtype, a->rank, d);
}

static const Graph *graph_attr(const Node *n, const char *name)
{
	const Named *k = node_kw(n, S(name));
	return k && k->val.kind == A_GRAPH ? k->val.u.g : NULL;
}

static const Type *graph_out_type(const Module *m, const Graph *g, uint32_t i)
{
	if (!g || i >= g->nout)
		return NULL;
	const Type *t = g->out[i] ? m->vals.v[g->out[i]].type : NULL;
	return t ? t : g->out_decl ? g->out_decl[i] : NULL;
}

/* ---- the dispatcher ------------------------------------------------------------- */
/* DFT: the signal [..., N, 1|2] keeps its shape but for the transformed
 * axis (dft_length if given, N/2+1 when onesided) and a last dim of 2.
 * The axis is an attribute (opset 17, default 1) or input 2 (opset 20,
 * default -2). */
static Type *infer_dft(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	if (!shaped(x) || x->rank < 2)
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
	d[x->rank - 1] = stat(2);
	int64_t ax, len;
	int k = ints_attr_or_input(I, n, "axis", 2, &ax, 1);
	if (k != 1 && (operand(n, 2) || node_kw(n, S("axis")))) {
		/* an axis that is not a constant: which dim changes is not known */
		for (int32_t i = 0; i < x->rank - 1; i++)
			d[i] = UNK;
		return mk(I, dt, x->rank, d);
	}
	if (k != 1)
		ax = opsets_onnx(&I->m->opsets, 18) >= 20 ? -2 : 1;
	int32_t a;
	if (!norm_axis(ax, x->rank, &a) || a == x->rank - 1)
		return mk(I, dt, -1, NULL);
	if (operand(n, 1))
		d[a] = int_consts(I, operand(n, 1), &len, 1) == 1 ? stat(len) : UNK;
	if (kw_int_or(n, "onesided", 0))
		d[a] = known(d[a]) ? stat(d[a].v / 2 + 1) : UNK;
	return mk(I, dt, x->rank, d);
}

/* STFT: [batch, frames, bins, 2] from the signal [batch, L, 1|2], the frame
 * step (input 1) and the frame length (the window's, or input 3). */
static Type *infer_stft(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	int64_t step, len = -1;
	const Type *w = ty(I->m, n, 2);
	if (operand(n, 3))
		int_consts(I, operand(n, 3), &len, 1);
	else if (shaped(w) && w->rank == 1 && known(w->dims[0]))
		len = w->dims[0].v;
	Dim d[4] = { shaped(x) && x->rank == 3 ? x->dims[0] : UNK, UNK, UNK, stat(2) };
	if (len > 0 && int_consts(I, operand(n, 1), &step, 1) == 1 && step > 0 && shaped(x) && x->rank == 3) {
		if (known(x->dims[1]) && x->dims[1].v >= len)
			d[1] = stat((x->dims[1].v - len) / step + 1);
		d[2] = stat(kw_int_or(n, "onesided", 1) ? len / 2 + 1 : len);
	}
	return mk(I, dt, 4, d);
}

static void infer_onnx(Infer *I, const Node *n, Type **out)
{
	Module *m = I->m;
	const Type *x = ty(m, n, 0), *y = ty(m, n, 1);
	int dx = dt_of(x);
	Dim d[MAXR];
	int64_t iv[MAXR];
	int32_t a;
	if (op_info[n->op].flags & OPF_ELEMWISE) {
		int dt = is_compare(n->op) ? DT_BOOL : n->op == OP_ONNX_Where ? dt_of(y ? y : ty(m, n, 2)) : dx;
		/* one type for all: any typed operand gives it */
		for (uint32_t i = 1; !dt && (op_info[n->op].flags & OPF_SAMETYPE) && i < n->nargs; i++)
			dt = dt_of(ty(m, n, i));
		out[0] = bcast_all(I, n, dt, 0);
		return;
	}
	switch (n->op) {
	case OP_ONNX_Cast:
		out[0] = like(I, dtype_attr(n, "to"), x);
		return;
	case OP_ONNX_CastLike:
		out[0] = like(I, dt_of(y), x);
		return;
	case OP_ONNX_Identity: case OP_ONNX_Softmax: case OP_ONNX_LogSoftmax: case OP_ONNX_Hardmax:
	case OP_ONNX_LRN: case OP_ONNX_LpNormalization: case OP_ONNX_MeanVarianceNormalization:
	case OP_ONNX_InstanceNormalization: case OP_ONNX_GroupNormalization: case OP_ONNX_CumSum:
	case OP_ONNX_Trilu: case OP_ONNX_RotaryEmbedding: case OP_ONNX_RMSNormalization:
	case OP_ONNX_ScatterElements: case OP_ONNX_ScatterND: case OP_ONNX_Scatter:
	case OP_ONNX_ReverseSequence: case OP_ONNX_TensorScatter:
		out[0] = like(I, dx, x);
		return;
	case OP_ONNX_Dropout:
		out[0] = like(I, dx, x);
		if (n->nres > 1)
			out[1] = like(I, DT_BOOL, x);
		return;
	case OP_ONNX_Bernoulli: case OP_ONNX_RandomNormalLike: case OP_ONNX_RandomUniformLike:
	case OP_ONNX_EyeLike: {
		int dt = dtype_attr(n, "dtype");
		out[0] = like(I, dt ? dt : dx, x);
		return;
	}
	case OP_ONNX_BatchNormalization:
		out[0] = like(I, dx, x);
		for (uint32_t i = 1; i < n->nres && i < 3; i++)
			out[i] = like(I, dt_of(ty(m, n, i + 2)), ty(m, n, i + 2));
		return;
	case OP_ONNX_LayerNormalization: {
		out[0] = like(I, dx, x);
		int st = dtype_attr(n, "stash_type");
		if (n->nres < 2 || !shaped(x) || !norm_axis(kw_int_or(n, "axis", -1), x->rank, &a)) {
			for (uint32_t i = 1; i < n->nres; i++)
				out[i] = mk(I, st ? st : DT_F32, -1, NULL);
			return;
		}
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = i < a ? x->dims[i] : stat(1);
		for (uint32_t i = 1; i < n->nres; i++)
			out[i] = mk(I, st ? st : DT_F32, x->rank, d);
		return;
	}
	case OP_ONNX_Attention: {
		const Type *v = ty(m, n, 2);
		if (shaped(x) && x->rank == 4 && shaped(v) && v->rank == 4) {
			d[0] = x->dims[0], d[1] = x->dims[1], d[2] = x->dims[2], d[3] = v->dims[3];
			out[0] = mk(I, dx, 4, d);
		} else if (shaped(x) && x->rank == 3 && shaped(v) && v->rank == 3) {
			int64_t qh = kw_int_or(n, "q_num_heads", 0), kh = kw_int_or(n, "kv_num_heads", 0);
			d[0] = x->dims[0], d[1] = x->dims[1];
			d[2] = qh > 0 && kh > 0 && known(v->dims[2]) && v->dims[2].v % kh == 0
				? prod_dim(qh, v->dims[2].v / kh) : UNK;
			out[0] = mk(I, dx, 3, d);
		} else {
			out[0] = mk(I, dx, -1, NULL);
		}
		for (uint32_t i = 1; i < n->nres; i++)
			out[i] = mk(I, dx, -1, NULL);
		return;
	}
	case OP_ONNX_DFT:
		out[0] = infer_dft(I, n, x);
		return;
	case OP_ONNX_STFT:
		out[0] = infer_stft(I, n, x);
		return;
	case OP_ONNX_MatMul:
		out[0] = infer_matmul(I, x, y, dx);
		return;
	case OP_ONNX_MatMulInteger:
		out[0] = infer_matmul(I, x, y, DT_I32);
		return;
	case OP_ONNX_Gemm: {
		if (!shaped(x) || !shaped(y) || x->rank != 2 || y->rank != 2) {
			out[0] = mk(I, dx, 2, (Dim[]){ UNK, UNK });
			return;
		}
		d[0] = x->dims[kw_int_or(n, "transA", 0) ? 1 : 0];
		d[1] = y->dims[kw_int_or(n, "transB", 0) ? 0 : 1];
		out[0] = mk(I, dx, 2, d);
		return;
	}
	case OP_ONNX_Conv:
		out[0] = infer_window(I, n, x, y, shaped(y) && y->rank >= 1 ? y->dims[0] : UNK, 0);
		return;
	case OP_ONNX_ConvTranspose: {
		int64_t g = kw_int_or(n, "group", 1);
		Dim c = shaped(y) && y->rank >= 2 && known(y->dims[1]) ? stat(y->dims[1].v * g) : UNK;
		out[0] = infer_window(I, n, x, y, c, 1);
		return;
	}
	case OP_ONNX_AveragePool: case OP_ONNX_MaxPool: case OP_ONNX_LpPool:
		out[0] = infer_window(I, n, x, NULL, shaped(x) && x->rank >= 2 ? x->dims[1] : UNK, 0);
		if (n->nres > 1)
			out[1] = like(I, DT_I64, out[0]);
		return;
	case OP_ONNX_GlobalAveragePool: case OP_ONNX_GlobalMaxPool: case OP_ONNX_GlobalLpPool:
		if (!shaped(x) || x->rank < 2) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = i < 2 ? x->dims[i] : stat(1);
		out[0] = mk(I, dx, x->rank, d);
		return;
	case OP_ONNX_Reshape:
		out[0] = infer_reshape(I, n, x);
		return;
	case OP_ONNX_Transpose:
		out[0] = infer_transpose(I, n, x);
		return;
	case OP_ONNX_Concat:
		out[0] = infer_concat(I, n);
		return;
	case OP_ONNX_Split:
		infer_split(I, n, x, out);
		return;
	case OP_ONNX_Slice:
		out[0] = infer_slice(I, n, x);
		return;
	case OP_ONNX_Gather:
		out[0] = infer_gather(I, n, x, y);
		return;
	case OP_ONNX_GatherElements:
		out[0] = like(I, dx, y);
		return;
	case OP_ONNX_GatherND:
		out[0] = infer_gather_nd(I, n, x, y);
		return;
	case OP_ONNX_Squeeze:
		out[0] = infer_squeeze(I, n, x, 0);
		return;
	case OP_ONNX_Unsqueeze:
		out[0] = infer_squeeze(I, n, x, 1);
		return;
	case OP_ONNX_Flatten: {
		int32_t r = shaped(x) ? x->rank : -1;
		int64_t ax = kw_int_or(n, "axis", 1);
		if (r < 0 || ax < -r || ax > r) {
			out[0] = mk(I, dx, 2, (Dim[]){ UNK, UNK });
			return;
		}
		a = (int32_t)(ax < 0 ? ax + r : ax);
		d[0] = dims_product(x->dims, 0, a);
		d[1] = dims_product(x->dims, a, r);
		out[0] = mk(I, dx, 2, d);
		return;
	}
	case OP_ONNX_Expand: {
		int cnt = int_vec(I, operand(n, 1), d, MAXR);
		if (cnt < 0) {
			/* the shape's length alone gives the rank */
			cnt = shaped(y) && y->rank == 1 && known(y->dims[0]) && y->dims[0].v <= MAXR
				? (int)y->dims[0].v : -1;
			out[0] = unknown_dims(I, dx, shaped(x) && cnt >= 0 ? (cnt > x->rank ? cnt : x->rank) : -1);
			return;
		}
		for (int i = 0; i < cnt; i++)
			if (!d[i].sym && d[i].v < 0)
				d[i] = UNK;
		Type sh = { TY_TENSOR, 0, cnt, d, NULL };
		int32_t r = 0;
		Dim o[MAXR];
		int ok = bcast_into(&r, o, &sh) && bcast_into(&r, o, x);
		out[0] = mk(I, dx, ok ? r : -1, o);
		return;
	}
	case OP_ONNX_Tile: {
		int cnt = int_consts(I, operand(n, 1), iv, MAXR);
		if (!shaped(x) || cnt != x->rank) {
			out[0] = unknown_dims(I, dx, shaped(x) ? x->rank : -1);
			return;
		}
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = iv[i] == 1 ? x->dims[i] : known(x->dims[i]) ? prod_dim(x->dims[i].v, iv[i]) : UNK;
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_ReduceL1: case OP_ONNX_ReduceL2: case OP_ONNX_ReduceLogSum:
	case OP_ONNX_ReduceLogSumExp: case OP_ONNX_ReduceMax: case OP_ONNX_ReduceMean:
	case OP_ONNX_ReduceMin: case OP_ONNX_ReduceProd: case OP_ONNX_ReduceSum:
	case OP_ONNX_ReduceSumSquare:
		out[0] = infer_reduce(I, n, x, dx);
		return;
	case OP_ONNX_ArgMax: case OP_ONNX_ArgMin: {
		int64_t keep = kw_int_or(n, "keepdims", 1);
		if (!shaped(x) || !norm_axis(kw_int_or(n, "axis", 0), x->rank, &a)) {
			out[0] = mk(I, DT_I64, -1, NULL);
			return;
		}
		int32_t r = 0;
		for (int32_t i = 0; i < x->rank; i++)
			if (i != a)
				d[r++] = x->dims[i];
			else if (keep)
				d[r++] = stat(1);
		out[0] = mk(I, DT_I64, r, d);
		return;
	}
	case OP_ONNX_Shape: {
		int64_t r = shaped(x) ? x->rank : -1, s = kw_int_or(n, "start", 0), e = kw_int_or(n, "end", r);
		if (r < 0) {
			out[0] = mk(I, DT_I64, 1, &UNK);
			return;
		}
		s = s < 0 ? s + r : s;
		e = e < 0 ? e + r : e;
		s = s < 0 ? 0 : s > r ? r : s;
		e = e < 0 ? 0 : e > r ? r : e;
		out[0] = mk(I, DT_I64, 1, (Dim[]){ stat(e > s ? e - s : 0) });
		return;
	}
	case OP_ONNX_Size:
		out[0] = mk(I, DT_I64, 0, NULL);
		return;
	case OP_ONNX_NonZero:
		out[0] = mk(I, DT_I64, 2, (Dim[]){ shaped(x) ? stat(x->rank) : UNK, UNK });
		return;
	case OP_ONNX_ConstantOfShape: {
		const Named *v = node_kw(n, S_value);
		int dt = v && v->val.kind == A_TENSOR && v->val.u.t->type ? v->val.u.t->type->dtype : DT_F32;
		int cnt = int_vec(I, operand(n, 0), d, MAXR);
		if (cnt < 0 && shaped(x) && x->rank == 1 && known(x->dims[0]) && x->dims[0].v <= MAXR) {
			cnt = (int)x->dims[0].v;
			for (int i = 0; i < cnt; i++)
				d[i] = UNK;
		}
		for (int i = 0; i < cnt; i++)
			if (!d[i].sym && d[i].v < 0)
				d[i] = UNK;
		out[0] = mk(I, dt, cnt, d);
		return;
	}
	case OP_ONNX_Range: {
		const Tensor *ts = const_tensor(m, operand(n, 0)), *tl = const_tensor(m, operand(n, 1)),
			*td = const_tensor(m, operand(n, 2));
		Dim len = UNK;
		if (ts && tl && td && ts->data && tl->data && td->data && type_numel(ts->type) == 1
		    && type_numel(tl->type) == 1 && type_numel(td->type) == 1) {
			DType t = (DType)ts->type->dtype;
			double s = tensor_get_f(t, ts->data, 0), l = tensor_get_f(t, tl->data, 0),
				dl = tensor_get_f(t, td->data, 0);
			double k = dl != 0 ? (l - s) / dl : 0;
			if (dl != 0 && k == k && k < 1e18) {
				int64_t c = k > 0 ? (int64_t)k + ((double)(int64_t)k < k) : 0;
				len = stat(c);
			}
		}
		out[0] = mk(I, dx, 1, &len);
		return;
	}
	case OP_ONNX_Constant: {
		/* by the attribute's name, so that a function's `value_float =
		 * @alpha` is typed too */
		const Named *v = n->nkw == 1 ? &n->kw[0] : NULL;
		const char *k = v ? sym_str(v->name) : "";
		uint32_t cnt = v && v->val.kind == A_LIST ? v->val.n : 0;
		Dim len = v && v->val.kind == A_LIST ? stat(cnt) : UNK;
		if (v && v->name == S_value && v->val.kind == A_TENSOR && v->val.u.t->type) {
			const Type *t = v->val.u.t->type;
			out[0] = mk(I, t->dtype, t->rank, t->dims);
		} else if (!strcmp(k, "value_float"))
			out[0] = mk(I, DT_F32, 0, NULL);
		else if (!strcmp(k, "value_int"))
			out[0] = mk(I, DT_I64, 0, NULL);
		else if (!strcmp(k, "value_string"))
			out[0] = mk(I, DT_STR, 0, NULL);
		else if (!strcmp(k, "value_floats"))
			out[0] = mk(I, DT_F32, 1, &len);
		else if (!strcmp(k, "value_ints"))
			out[0] = mk(I, DT_I64, 1, &len);
		else if (!strcmp(k, "value_strings"))
			out[0] = mk(I, DT_STR, 1, &len);
		return;
	}
	case OP_ONNX_Pad: {
		int64_t p[2 * MAXR], ax[MAXR];
		int np = ints_attr_or_input(I, n, "pads", 1, p, 2 * MAXR);
		int na = operand(n, 3) ? int_consts(I, operand(n, 3), ax, MAXR) : -2;
		if (!shaped(x)) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
		if (na == -2) {
			na = x->rank;
			for (int i = 0; i < na; i++)
				ax[i] = i;
		}
		if (na < 0 || np != 2 * na) {
			for (int32_t i = 0; i < x->rank; i++)
				d[i] = UNK;
		} else {
			for (int i = 0; i < na; i++) {
				if (!norm_axis(ax[i], x->rank, &a))
					return;
				int64_t both;
				if (__builtin_add_overflow(p[i], p[i + na], &both))
					d[a] = UNK;
				else
					d[a] = known(d[a]) ? sum_dim(d[a].v, both) : p[i] == 0 && p[i + na] == 0 ? d[a] : UNK;
			}
		}
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_Resize: case OP_ONNX_Upsample: {
		Dim sz[MAXR];
		int ns = n->op == OP_ONNX_Resize ? int_vec(I, operand(n, 3), sz, MAXR) : -1;
		if (shaped(x) && ns == x->rank && !node_kw(n, S_axes)) {
			for (int i = 0; i < ns; i++)
				if (!known(sz[i]) && !sz[i].sym)
					sz[i] = UNK;
			out[0] = mk(I, dx, ns, sz);
			return;
		}
		const Tensor *sc = const_tensor(m, operand(n, n->op == OP_ONNX_Resize ? 2 : 1));
		if (shaped(x) && sc && sc->data && type_numel(sc->type) == x->rank && !node_kw(n, S_axes)
		    && dtype_is_float((DType)sc->type->dtype)) {
			for (int32_t i = 0; i < x->rank; i++) {
				double f = tensor_get_f((DType)sc->type->dtype, sc->data, (size_t)i);
				double o = known(x->dims[i]) ? (double)x->dims[i].v * f : -1;
				d[i] = f == 1.0 ? x->dims[i] : o >= 0 && o < 1e18 ? stat((int64_t)o) : UNK;
			}
			out[0] = mk(I, dx, x->rank, d);
			return;
		}
		out[0] = unknown_dims(I, dx, shaped(x) ? x->rank : -1);
		return;
	}
	case OP_ONNX_TopK: {
		Dim k[1];
		int nk = int_vec(I, operand(n, 1), k, 1);
		if (!shaped(x) || !norm_axis(kw_int_or(n, "axis", -1), x->rank, &a)) {
			out[0] = mk(I, dx, -1, NULL);
		} else {
			memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
			d[a] = nk == 1 && (known(k[0]) || k[0].sym) ? k[0] : UNK;
			out[0] = mk(I, dx, x->rank, d);
		}
		if (n->nres > 1)
			out[1] = like(I, DT_I64, out[0]);
		return;
	}
	case OP_ONNX_Einsum:
		out[0] = infer_einsum(I, n);
		return;
	case OP_ONNX_OneHot: {
		const Type *vt = ty(m, n, 2);
		Dim depth[1];
		int nd = int_vec(I, operand(n, 1), depth, 1);
		if (!shaped(x) || x->rank + 1 > MAXR || !norm_axis(kw_int_or(n, "axis", -1), x->rank + 1, &a)) {
			out[0] = mk(I, dt_of(vt), -1, NULL);
			return;
		}
		for (int32_t i = 0, k = 0; i <= x->rank; i++)
			d[i] = i == a ? (nd == 1 && known(depth[0]) ? depth[0] : UNK) : x->dims[k++];
		out[0] = mk(I, dt_of(vt), x->rank + 1, d);
		return;
	}
	case OP_ONNX_DepthToSpace: case OP_ONNX_SpaceToDepth: {
		int64_t b = kw_int_or(n, "blocksize", 0);
		if (!shaped(x) || x->rank != 4 || b <= 0 || b > 1 << 20) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		int up = n->op == OP_ONNX_DepthToSpace;
		d[0] = x->dims[0];
		for (int i = 1; i < 4; i++) {
			Dim v = x->dims[i];
			int64_t f = i == 1 ? b * b : b;
			int div = (i == 1) == up;
			d[i] = !known(v) ? UNK : div ? (v.v % f ? UNK : stat(v.v / f)) : prod_dim(v.v, f);
		}
		out[0] = mk(I, dx, 4, d);
		return;
	}
	case OP_ONNX_Det: {
		if (!shaped(x) || x->rank < 2) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		out[0] = mk(I, dx, x->rank - 2, x->dims);
		return;
	}
	case OP_ONNX_ConvInteger:
		out[0] = infer_window(I, n, x, y, shaped(y) && y->rank >= 1 ? y->dims[0] : UNK, 0);
		if (out[0])
			out[0]->dtype = DT_I32;
		return;
	case OP_ONNX_GridSample: {
		if (!shaped(x) || !shaped(y) || x->rank < 3 || y->rank != x->rank) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		d[0] = x->dims[0];
		d[1] = x->dims[1];
		for (int32_t i = 2; i < x->rank; i++)
			d[i] = y->dims[i - 1];
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_Compress: {
		int64_t ax;
		if (!kw_int(n, "axis", &ax) || !shaped(x)) {
			out[0] = mk(I, dx, 1, &UNK);
			return;
		}
		if (!norm_axis(ax, x->rank, &a)) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
		d[a] = UNK;
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_DynamicQuantizeLinear:
		out[0] = like(I, DT_U8, x);
		if (n->nres > 1)
			out[1] = mk(I, DT_F32, 0, NULL);
		if (n->nres > 2)
			out[2] = mk(I, DT_U8, 0, NULL);
		return;
	case OP_ONNX_NegativeLogLikelihoodLoss: case OP_ONNX_SoftmaxCrossEntropyLoss: {
		uint32_t len;
		const char *red = kw_str(n, "reduction", &len);
		int none = red && len == 4 && memcmp(red, "none", 4) == 0;
		out[0] = none ? like(I, dx, y) : mk(I, dx, 0, NULL);
		if (n->nres > 1)
			out[1] = like(I, dx, x);
		return;
	}
	case OP_ONNX_RNN: case OP_ONNX_GRU: case OP_ONNX_LSTM: {
		/* X [seq, batch, input] (layout 0) or [batch, seq, input] */
		const Type *w = y;
		int64_t layout = kw_int_or(n, "layout", 0), hs = kw_int_or(n, "hidden_size", -1);
		if (!shaped(x) || x->rank != 3 || !shaped(w) || w->rank != 3) {
			for (uint32_t i = 0; i < n->nres; i++)
				out[i] = mk(I, dx, -1, NULL);
			return;
		}
		Dim seq = x->dims[layout ? 1 : 0], batch = x->dims[layout ? 0 : 1], dir = w->dims[0];
		Dim hid = hs >= 0 ? stat(hs) : UNK;
		Dim y4[4] = { seq, dir, batch, hid }, yl[4] = { batch, seq, dir, hid };
		Dim h3[3] = { dir, batch, hid }, hl[3] = { batch, dir, hid };
		out[0] = mk(I, dx, 4, layout ? yl : y4);
		for (uint32_t i = 1; i < n->nres && i < 3; i++)
			out[i] = mk(I, dx, 3, layout ? hl : h3);
		return;
	}
	case OP_ONNX_NonMaxSuppression:
		out[0] = mk(I, DT_I64, 2, (Dim[]){ UNK, stat(3) });
		return;
	case OP_ONNX_RoiAlign: {
		/* [num_rois, C, output_height, output_width] */
		const Type *b = ty(m, n, 2);
		d[0] = shaped(b) && b->rank == 1 ? b->dims[0] : UNK;
		d[1] = shaped(x) && x->rank == 4 ? x->dims[1] : UNK;
		d[2] = stat(kw_int_or(n, "output_height", 1));
		d[3] = stat(kw_int_or(n, "output_width", 1));
		out[0] = mk(I, dx, 4, d);
		return;
	}
	case OP_ONNX_QLinearMatMul: {
		/* a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point */
		Type *t = infer_matmul(I, x, ty(m, n, 3), dt_of(ty(m, n, 7)));
		out[0] = t;
		return;
	}
	case OP_ONNX_QLinearConv: {
		const Type *w = ty(m, n, 3);
		out[0] = infer_window(I, n, x, w, shaped(w) && w->rank >= 1 ? w->dims[0] : UNK, 0);
		if (out[0])
			out[0]->dtype = (uint8_t)dt_of(ty(m, n, 7));
		if (out[0] && !out[0]->dtype)
			out[0] = NULL;
		return;
	}
	case OP_ONNX_BlackmanWindow: case OP_ONNX_HannWindow: case OP_ONNX_HammingWindow: {
		int dt = dtype_attr(n, "output_datatype");
		Dim len[1];
		if (int_vec(I, operand(n, 0), len, 1) != 1 || (!known(len[0]) && !len[0].sym))
			len[0] = UNK;
		out[0] = mk(I, dt ? dt : DT_F32, 1, len);
		return;
	}
	case OP_ONNX_Unique: {
		int64_t ax;
		int has_axis = kw_int(n, "axis", &ax);
		if (has_axis && shaped(x) && norm_axis(ax, x->rank, &a)) {
			memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
			d[a] = UNK;
			out[0] = mk(I, dx, x->rank, d);
		} else {
			out[0] = has_axis ? mk(I, dx, -1, NULL) : mk(I, dx, 1, &UNK);
		}
		for (uint32_t i = 1; i < n->nres; i++)
			out[i] = mk(I, DT_I64, 1, &UNK);
		return;
	}
	case OP_ONNX_DequantizeLinear:
		out[0] = like(I, dt_of(y), x);
		return;
	case OP_ONNX_QuantizeLinear: {
		int dt = dtype_attr(n, "output_dtype");
		out[0] = like(I, dt ? dt : ty(m, n, 2) ? dt_of(ty(m, n, 2)) : DT_U8, x);
		return;
	}
	case OP_ONNX_If: {
		const Graph *t = graph_attr(n, "then_branch"), *e = graph_attr(n, "else_branch");
		for (uint32_t i = 0; i < n->nres; i++)
			out[i] = merge_types(I, graph_out_type(m, t, i), graph_out_type(m, e, i));
		return;
	}
	case OP_ONNX_Loop: {
		const Graph *b = graph_attr(n, "body");
		uint32_t carried = n->nargs > 2 ? n->nargs - 2 : 0;
		for (uint32_t i = 0; i < n->nres; i++) {
			const Type *t = graph_out_type(m, b, i + 1);
			if (i < carried) {
				const Type *init = ty(m, n, i + 2);
				out[i] = t && init ? merge_types(I, t, init) : NULL;
			} else if (t && t->kind == TY_TENSOR) {
				if (shaped(t) && t->rank < MAXR) {
					d[0] = UNK;
					if (t->rank > 0)
						memcpy(d + 1, t->dims, sizeof *d * (size_t)t->rank);
				}
				out[i] = mk(I, t->dtype, shaped(t) && t->rank < MAXR ? t->rank + 1 : -1, d);
			}
		}
		return;
	}
	default:
		if (op_info[n->op].flags & OPF_SAMETYPE)
			for (uint32_t i = 0; i < n->nres; i++)
				out[i] = mk(I, dx, -1, NULL);
		return;
	}
}

/* ---- dim vectors (Shape and what is computed from it) ---------------------------- */
static void set_vec(Infer *I, ValueId v, const Dim *d, int n)
{
	if (!I->sv || v >= I->nsv || n < 0 || n > MAXR)
		return;
	I->sv[v].d = arena_dup(&I->m->arena, d, sizeof *d * (size_t)(n ? n : 1));
	I->sv[v].n = n;
}

static void track_vec(Infer *I, const Node *n)
{
	Module *m = I->m;
	ValueId r = n->nres ? n->res[0] : VNONE;
	const Type *rt = r ? m->vals.v[r].type : NULL;
	if (!r || !rt || rt->kind != TY_TENSOR || !dtype_is_int((DType)rt->dtype) || rt->rank > 1)
		return;
	const Type *x = ty(m, n, 0);
	Dim d[MAXR], e[MAXR];
	int cnt;
	switch (n->op) {
	case OP_ONNX_Shape: {
		if (!shaped(x) || rt->rank != 1 || !known(rt->dims[0]))
			return;
		int64_t s = kw_int_or(n, "start", 0);
		s = s < 0 ? s + x->rank : s;
		s = s < 0 ? 0 : s;
		if (rt->dims[0].v > x->rank - s)
			return;
		cnt = (int)rt->dims[0].v;
		for (int i = 0; i < cnt; i++)
			d[i] = known(x->dims[s + i]) || x->dims[s + i].sym ? x->dims[s + i] : NOTCONST;
		set_vec(I, r, d, cnt);
		return;
	}
	case OP_ONNX_Identity: case OP_ONNX_Cast: case OP_ONNX_Squeeze: case OP_ONNX_Unsqueeze:
		if ((cnt = int_vec(I, operand(n, 0), d, MAXR)) >= 0)
			set_vec(I, r, d, cnt);
		return;
	case OP_ONNX_Concat: {
		int tot = 0;
		for (uint32_t i = 0; i < n->nargs; i++) {
			cnt = int_vec(I, operand(n, i), e, MAXR - tot);
			if (cnt < 0)
				return;
			memcpy(d + tot, e, sizeof *d * (size_t)cnt);
			tot += cnt;
		}
		set_vec(I, r, d, tot);
		return;
	}
	case OP_ONNX_Gather: {
		int64_t idx[MAXR];
		int ni = int_consts(I, operand(n, 1), idx, MAXR);
		cnt = int_vec(I, operand(n, 0), d, MAXR);
		if (cnt < 0 || ni < 0)
			return;
		for (int i = 0; i < ni; i++) {
			int64_t k = idx[i] < 0 ? idx[i] + cnt : idx[i];
			if (k < 0 || k >= cnt)
				return;
			e[i] = d[k];
		}
		set_vec(I, r, e, ni);
		return;
	}
	case OP_ONNX_Slice: {
		int64_t s, en, ax = 0, st = 1;
		cnt = int_vec(I, operand(n, 0), d, MAXR);
		if (cnt < 0 || int_consts(I, operand(n, 1), &s, 1) != 1 || int_consts(I, operand(n, 2), &en, 1) != 1
		    || (operand(n, 3) && (int_consts(I, operand(n, 3), &ax, 1) != 1 || (ax != 0 && ax != -1)))
		    || (operand(n, 4) && (int_consts(I, operand(n, 4), &st, 1) != 1 || st != 1)))
			return;
		Dim len = slice_dim(stat(cnt), s, en, 1);
		s = s < 0 ? s + cnt : s;
		s = s < 0 ? 0 : s > cnt ? cnt : s;
		if (known(len))
			set_vec(I, r, d + s, (int)len.v);
		return;
	}
	case OP_ONNX_Mul: case OP_ONNX_Add: case OP_ONNX_Sub: case OP_ONNX_Div: {
		int na = int_vec(I, operand(n, 0), d, MAXR), nb = int_vec(I, operand(n, 1), e, MAXR);
		if (na < 0 || nb < 0 || (na != nb && na != 1 && nb != 1) || rt->rank != 1)
			return;
		int k = na > nb ? na : nb;
		Dim o[MAXR];
		for (int i = 0; i < k; i++) {
			Dim p = d[na == 1 ? 0 : i], q = e[nb == 1 ? 0 : i];
			o[i] = NOTCONST;
			if (known(p) && known(q)) {
				int64_t v;
				int bad = n->op == OP_ONNX_Add ? __builtin_add_overflow(p.v, q.v, &v)
					: n->op == OP_ONNX_Sub ? __builtin_sub_overflow(p.v, q.v, &v)
					: n->op == OP_ONNX_Mul ? __builtin_mul_overflow(p.v, q.v, &v)
					: q.v > 0 ? (v = p.v / q.v, 0) : 1;
				if (!bad && v >= 0)
					o[i] = stat(v);
			} else if ((n->op == OP_ONNX_Mul || n->op == OP_ONNX_Div) && known(q) && q.v == 1) {
				o[i] = p;
			} else if (n->op == OP_ONNX_Mul && known(p) && p.v == 1) {
				o[i] = q;
			}
		}
		set_vec(I, r, o, k);
		return;
	}
	default:
		return;
	}
}

/* ---- entry points ------------------------------------------------------------------ */
void infer_node(Module *m, const Node *n, Type **out)
{
	for (uint32_t i = 0; i < n->nres; i++)
		out[i] = NULL;
	if (n->domain != S_onnx || n->op == OP_GENERIC || op_info[n->op].dom != DOM_ONNX || !n->nres)
		return;
	Infer I = { .m = m };
	infer_onnx(&I, n, out);
}

static void infer_graph(Infer *I, Graph *g);

/* A value with no type, or a tensor whose rank or some dim is not known
 * (`f32`, `f32[?,4]`, as a pass writes it before its operands are typed):
 * inference may tell more. */
static int vague(const Type *t)
{
	if (!t)
		return 1;
	if (t->kind != TY_TENSOR)
		return 0;
	for (int32_t i = 0; i < t->rank; i++)
		if (!t->dims[i].sym && t->dims[i].v < 0)
			return 1;
	return t->rank < 0;
}

/* `got` says more than the tensor type `had` and nothing against it: the
 * same dtype, a rank where `had` has none, or the same rank with every dim
 * `had` knows kept and one more known. */
static int refines(const Type *got, const Type *had)
{
	if (got->kind != TY_TENSOR || got->rank < 0 || got->dtype != had->dtype)
		return 0;
	if (had->rank < 0)
		return 1;
	if (got->rank != had->rank)
		return 0;
	int more = 0;
	for (int32_t i = 0; i < had->rank; i++) {
		Dim h = had->dims[i], g = got->dims[i];
		if (h.sym || h.v >= 0) {
			if (!dim_same(h, g))
				return 0;
		} else {
			more |= g.sym || g.v >= 0;
		}
	}
	return more;
}

static void sub(Graph *g, void *ctx) { infer_graph(ctx, g); }

/* Types n's untyped or vague results (an ONNX node of the registry). */
static void infer_one(Infer *I, const Node *n)
{
	Module *m = I->m;
	Type *buf[16], **out;
	int need = 0;
	for (uint32_t i = 0; i < n->nres; i++)
		need |= n->res[i] && vague(m->vals.v[n->res[i]].type);
	if (!need)
		return;
	out = n->nres <= 16 ? buf : xcalloc(n->nres, sizeof *out);
	for (uint32_t i = 0; i < n->nres; i++)
		out[i] = NULL;
	infer_onnx(I, n, out);
	for (uint32_t i = 0; i < n->nres; i++) {
		Type **t = n->res[i] ? &m->vals.v[n->res[i]].type : NULL;
		if (t && out[i] && (!*t || (vague(*t) && refines(out[i], *t)))) {
			*t = out[i];
			I->typed++;
		}
	}
	if (out != buf)
		free(out);
}

static int inferable(const Node *n)
{
	return n->domain == S_onnx && n->op != OP_GENERIC && op_info[n->op].dom == DOM_ONNX && n->nres;
}

static void infer_graph(Infer *I, Graph *g)
{
	for (Node *n = g->first; n; n = n->next) {
		node_each_subgraph(n, sub, I);
		if (!inferable(n))
			continue;
		infer_one(I, n);
		track_vec(I, n);
	}
}

uint32_t infer_nodes(Module *m, Node *first, const Node *end)
{
	Infer I = { .m = m };
	for (Node *n = first; n && n != end; n = n->next)
		if (inferable(n))
			infer_one(&I, n);
	return I.typed;
}

uint32_t infer_module(Module *m, unsigned what)
{
	Infer I = { .m = m, .nsv = m->vals.n };
	I.sv = xcalloc(I.nsv, sizeof *I.sv);
	for (uint32_t i = 0; i < I.nsv; i++)
		I.sv[i].n = -1;
	for (uint32_t i = 0; (what & WALK_GRAPHS) && i < m->graphs.n; i++)
		infer_graph(&I, m->graphs.v[i]);
	for (uint32_t i = 0; (what & WALK_FUNCS) && i < m->funcs.n; i++)
		infer_graph(&I, m->funcs.v[i]->body);
	free(I.sv);
	return I.typed;
}

int infer_conflict(const Type *written, const Type *inferred)
{
	const Type *w = written, *t = inferred;
	if (!w || !t || w->kind != TY_TENSOR || t->kind != TY_TENSOR)
		return 0;
	if (w->dtype && t->dtype && w->dtype != t->dtype)
		return 1;
	if (w->rank < 0 || t->rank < 0)
		return 0;
	if (w->rank != t->rank)
		return 1;
	for (int32_t i = 0; i < w->rank; i++)
		if (known(w->dims[i]) && known(t->dims[i]) && w->dims[i].v != t->dims[i].v)
			return 1;
	return 0;
}
