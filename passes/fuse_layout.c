/* fuse_layout.c - -O2 rewrites of ops that only move data: a Reshape that
 * is a Flatten, and a Transpose whose size-1 dims hide what it does.
 *
 *   Reshape(x, s) -> Flatten(x, axis)
 *       the result 2-D, its first dim x's dims before the axis, its
 *       second the rest (flatten_axis).
 *   Transpose(y, p), y = Reshape/Unsqueeze/Squeeze/Flatten(x) that only
 *       adds or drops dims of size 1 (x and y have the same sizes other
 *       than 1, in the same order), or y itself when it does not:
 *       -> Reshape(x, shape)               if p keeps the order of the
 *                                          dims other than 1
 *       -> Transpose(x, p')                if x's transpose has the
 *                                          result's shape
 *       -> Reshape(Transpose(x, p'), shape)  otherwise (y read only here,
 *                                          x of no higher rank than y)
 *       p' moves x's dims other than 1 the way p moves y's, x's dims of
 *       size 1 first.
 *   Reshape(Add(Reshape(s, [1, d...]), m), [d...]), m [1, e...]
 *       -> Add(s, Reshape(m, [e...]))    (fuse_lead_one_add)
 *
 * Why they hold: Flatten(x, axis) is Reshape(x, [d0*...*d(axis-1),
 * d(axis)*...]).  A tensor's elements in row-major order do not depend on
 * where its dims of size 1 are, so a Transpose that keeps the order of the
 * other dims is a Reshape, and one that reorders them is the same
 * reordering of x's dims (the reshape-like y only inserted or removed 1s),
 * up to where the 1s go, which a Reshape to the result's shape fixes.
 * This is what einsum becomes when it is traced (Unsqueeze, a permute
 * that moves size-1 dims to the batch, view, bmm, view, permute back):
 * once the Transposes are Reshapes, simplify merges the chains and the
 * batched-matmul fusion (fuse.c) makes one MatMul of it, in a later round.
 *
 * A Transpose is not traded for one of higher rank: ONNX Runtime runs a
 * 5-D one generically, several times slower than the 4-D one (multi-query
 * attention's key, Expand [B, 1, H, S, E] then Reshape [B, H, S, E], whose
 * Transpose(0, 1, 3, 2) the MatMul after it even absorbs as transB).
 *
 * Static shapes are needed for the Transpose rewrite (which dims are 1);
 * the new nodes take the Transpose's provenance. */
#include <stdlib.h>
#include "fuse.h"

/* The axis Flatten(x, axis) would make y [a, b] of x with, or -1: every
 * dim known and a the product of the dims before the axis, or x's first
 * dim the same (size or symbol) as a and the others known, multiplying to
 * b. */
static int64_t flatten_axis(const Type *tx, const Type *ty)
{
	if (!tx || !ty || ty->rank != 2 || tx->rank < 1 || tx->dtype != ty->dtype || ty->dims[1].sym || ty->dims[1].v < 0)
		return -1;
	int64_t tail = 1;
	for (int32_t i = tx->rank - 1; i >= 1; i--) {
		if (tx->dims[i].sym || tx->dims[i].v < 0 || mul_i64(tail, tx->dims[i].v, &tail) != OK)
			return -1;
	}
	if (tail == ty->dims[1].v && dim_same(tx->dims[0], ty->dims[0]))
		return 1;
	if (ty->dims[0].sym || ty->dims[0].v < 0 || tx->dims[0].sym || tx->dims[0].v < 0)
		return -1;
	int64_t head = 1, all = tail * tx->dims[0].v;
	for (int32_t k = 0; k <= tx->rank; k++) {
		if (head == ty->dims[0].v && head * ty->dims[1].v == all)
			return k;
		if (k < tx->rank)
			head *= tx->dims[k].v;
	}
	return -1;
}

/* Reshape(x, s) to a 2-D result that keeps x's dims before some axis in
 * its first dim and the rest in its second -> Flatten(x, axis): the same
 * row-major data, without the shape operand (a Constant, or a shape
 * computed at run time). */
void fuse_flatten(Fuse *f, Node *n)
{
	ValueId x = operand(n, 0), s = operand(n, 1);
	int64_t axis = flatten_axis(fuse_ranked_type(f, x), fuse_ranked_type(f, n->res[0]));
	if (axis < 0 || fuse_attr_int(n, "allowzero", 0) != 0)
		return;
	if (s && s < f->nuses)
		f->uses[s]--;
	fuse_set_op(f, n, OP_ONNX_Flatten, 1, 1);
	n->args[0] = fuse_value_arg(x);
	n->kw[0] = (Named){ S_axis, { .kind = A_INT, .u.i = axis } };
}

enum { MAX_RANK = 16 };

/* The positions of t's dims other than 1, into idx; their count. */
static int32_t non_unit(const Type *t, int32_t *idx)
{
	int32_t k = 0;
	for (int32_t i = 0; i < t->rank; i++)
		if (t->dims[i].v != 1)
			idx[k++] = i;
	return k;
}

/* x and y have the same dims other than 1, in the same order. */
static int same_non_unit(const Type *tx, const Type *ty)
{
	int32_t ix[MAX_RANK], iy[MAX_RANK];
	int32_t kx = non_unit(tx, ix), ky = non_unit(ty, iy);
	if (kx != ky)
		return 0;
	for (int32_t j = 0; j < kx; j++)
		if (tx->dims[ix[j]].v != ty->dims[iy[j]].v)
			return 0;
	return 1;
}

/* A literal perm of n entries into p, each in range and used once. */
static int read_perm(const Node *t, int32_t n, int32_t *p)
{
	const Named *k = node_kw(t, S_perm);
	uint32_t seen = 0;
	if (!k || k->val.kind != A_LIST || k->val.n != (uint32_t)n)
		return 0;
	for (int32_t i = 0; i < n; i++) {
		const Arg *a = &k->val.u.list[i];
		if (a->kind != A_INT || a->u.i < 0 || a->u.i >= n || (seen & (1u << a->u.i)))
			return 0;
		p[i] = (int32_t)a->u.i;
		seen |= 1u << p[i];
	}
	return 1;
}

/* A constant i64 shape holding t's dims. */
static ValueId shape_const(Fuse *f, Graph *g, const Type *t, ValueId like)
{
	int64_t n = t->rank;
	RTensor *r = rt_new(val(f->m, like)->loc, DT_I64, 1, &n);
	if (!r)
		return VNONE;
	for (int32_t i = 0; i < t->rank; i++)
		rt_set_i(r, i, t->dims[i].v);
	ValueId v = fuse_new_const(f, g, r, like, "_shape");
	rt_free(r);
	return v;
}

static void set_reshape(Fuse *f, Node *n, ValueId x, ValueId shape)
{
	fuse_set_op(f, n, OP_ONNX_Reshape, 2, 0);
	n->args[0] = fuse_value_arg(x);
	n->args[1] = fuse_value_arg(shape);
}

static void set_transpose(Fuse *f, Node *n, ValueId x, const int32_t *p, int32_t rank)
{
	fuse_set_op(f, n, OP_ONNX_Transpose, 1, 1);
	n->args[0] = fuse_value_arg(x);
	Arg *l = ARENA_ARRAY(&f->m->arena, Arg, rank);
	for (int32_t i = 0; i < rank; i++)
		l[i] = (Arg){ .kind = A_INT, .u.i = p[i] };
	n->kw[0] = (Named){ S_perm, { .kind = A_LIST, .elem = A_INT, .n = (uint32_t)rank, .u.list = l } };
}

void fuse_unit_transpose(Fuse *f, Graph *g, Node *t)
{
	ValueId y = operand(t, 0), r = t->res[0];
	const Type *ty = fuse_static_type(f, y), *tr = fuse_static_type(f, r);
	int32_t p[MAX_RANK], iy[MAX_RANK], ix[MAX_RANK], ord[MAX_RANK];
	if (!ty || !tr || ty->rank > MAX_RANK || tr->rank != ty->rank || !read_perm(t, ty->rank, p))
		return;
	/* The source: past a reshape-like node that only moves 1s. */
	ValueId x = y;
	const Type *tx = ty;
	Node *d = def_of(f->m, y);
	if (d && d->nres == 1 && (d->op == OP_ONNX_Reshape || d->op == OP_ONNX_Unsqueeze || d->op == OP_ONNX_Squeeze ||
				  d->op == OP_ONNX_Flatten) && d->domain == S_onnx) {
		const Type *t0 = fuse_static_type(f, operand(d, 0));
		if (t0 && t0->rank <= MAX_RANK && t0->dtype == ty->dtype && same_non_unit(t0, ty)) {
			x = operand(d, 0);
			tx = t0;
		}
	}
	int32_t k = non_unit(ty, iy), moved = 0, j = 0;
	non_unit(tx, ix);
	/* ord: which of y's (and x's) dims other than 1 each output one is. */
	for (int32_t i = 0; i < tr->rank; i++) {
		if (ty->dims[p[i]].v == 1)
			continue;
		int32_t at = 0;
		while (iy[at] != p[i])
			at++;
		ord[j] = at;
		moved |= at != j;
		j++;
	}
	if (j != k)
		return;
	if (!moved) {
		ValueId s = shape_const(f, g, tr, r);
		if (!s)
			return;
		f->uses[y]--;
		if (x < f->nuses)
			f->uses[x]++;
		set_reshape(f, t, x, s);
		return;
	}
	if (x == y || !fuse_one_use(f, y) || tx->rank > ty->rank)
		return;
	/* p': x's 1s first, then its other dims in the output's order. */
	int32_t q[MAX_RANK], n = 0;
	for (int32_t i = 0; i < tx->rank; i++)
		if (tx->dims[i].v == 1)
			q[n++] = i;
	for (int32_t i = 0; i < k; i++)
		q[n++] = ix[ord[i]];
	int same = tx->rank == tr->rank;
	for (int32_t i = 0; same && i < tr->rank; i++)
		same = tx->dims[q[i]].v == tr->dims[i].v;
	ValueId s = same ? VNONE : shape_const(f, g, tr, r);
	if (!same && !s)
		return;
	f->uses[y]--;
	if (x < f->nuses)
		f->uses[x]++;
	if (same) {
		set_transpose(f, t, x, q, tx->rank);
		return;
	}
	Dim *dims = ARENA_ARRAY(&f->m->arena, Dim, tx->rank);
	for (int32_t i = 0; i < tx->rank; i++)
		dims[i] = tx->dims[q[i]];
	Node *nt = node_new_op(f->m, OP_ONNX_Transpose, 1, 1, 1);
	nt->prov = t->prov;
	nt->loc = t->loc;
	ValueId tv = value_new(f->m, value_fresh_name(f->m, val(f->m, r)->name),
			       type_tensor(&f->m->arena, (DType)tx->dtype, tx->rank, dims), VK_NODE);
	val(f->m, tv)->def = nt;
	nt->res[0] = tv;
	set_transpose(f, nt, x, q, tx->rank);
	node_insert_before(t->graph, t, nt);
	set_reshape(f, t, tv, s);
}

/* t is u with a leading 1: [1, u...]. */
static int lead_one(const Type *t, const Type *u)
{
	if (!t || !u || t->rank != u->rank + 1 || t->dims[0].v != 1 || t->dtype != u->dtype)
		return 0;
	for (int32_t i = 0; i < u->rank; i++)
		if (t->dims[i + 1].v != u->dims[i].v)
			return 0;
	return 1;
}

/* y = Reshape(Add(Reshape(s, [1, d...]), m), [d...]) with m [1, e...]
 * (the result [1, d...]: m broadcasts into it) -> Add(s, Reshape(m, [e...])):
 * the same sums, without the leading 1 on either side.  Swin's shifted
 * windows add their mask this way between the scores and the Softmax;
 * without the Reshapes the attention fusion sees Add(scores, mask). */
void fuse_lead_one_add(Fuse *f, Graph *g, Node *r2)
{
	Node *ad = match_operand(f->m, r2, 0, OP_ONNX_Add);
	if (!ad || ad->nargs != 2 || !fuse_one_use(f, ad->res[0]))
		return;
	const Type *ty = fuse_static_type(f, r2->res[0]), *ta = fuse_static_type(f, ad->res[0]);
	if (!lead_one(ta, ty))
		return;
	for (uint32_t side = 0; side < 2; side++) {
		Node *r1 = match_operand(f->m, ad, side, OP_ONNX_Reshape);
		ValueId m = operand(ad, 1 - side);
		const Type *tm = fuse_static_type(f, m);
		if (!r1 || !fuse_one_use(f, r1->res[0]) || !lead_one(fuse_static_type(f, r1->res[0]), ty) ||
		    !tm || tm->rank != ta->rank || tm->dims[0].v != 1 || tm->dtype != ta->dtype)
			continue;
		ValueId s = operand(r1, 0);
		const Type *ts = fuse_static_type(f, s);
		if (!ts || !type_equal(ts, ty))
			continue;
		Type *tm2 = type_tensor(&f->m->arena, (DType)tm->dtype, tm->rank - 1, tm->dims + 1);
		ValueId shape = shape_const(f, g, tm2, m);
		if (!shape)
			return;
		Node *rm = node_new_op(f->m, OP_ONNX_Reshape, 1, 2, 0);
		rm->prov = r2->prov;
		rm->loc = r2->loc;
		ValueId mv = value_new(f->m, value_fresh_name(f->m, val(f->m, m)->name), tm2, VK_NODE);
		val(f->m, mv)->def = rm;
		rm->res[0] = mv;
		rm->args[0] = fuse_value_arg(m);
		rm->args[1] = fuse_value_arg(shape);
		node_insert_before(r2->graph, r2, rm);
		f->uses[ad->res[0]]--;
		if (s < f->nuses)
			f->uses[s]++;
		fuse_set_op(f, r2, OP_ONNX_Add, 2, 0);
		r2->args[0] = fuse_value_arg(side ? mv : s);
		r2->args[1] = fuse_value_arg(side ? s : mv);
		return;
	}
}
