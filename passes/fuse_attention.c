/* fuse_attention.c - scaled dot-product attention written out becomes
 * onnx::Attention (opset >= 23).
 *
 *   MatMul(Softmax(mask(scale(MatMul(q, Transpose(k, swap last two)))), axis=-1), v)
 *       -> Attention(q, k, v[, m], scale = c)
 *
 *   scale(s): Mul(s, c) or Mul(c, s) (c a scalar constant), Div(s, d)
 *             (c = 1/d), or s itself (c = 1);
 *   mask(s):  Where(b, -inf, s) with b a bool constant (m = not b, a new
 *             constant), Where(b, s, -inf) (m = b), Add(s, f) or Add(f, s)
 *             with f floating (m = f), Add(Add(s, f1), f2) for 4-D
 *             inputs (m = a new Add(f1, f2), broadcast like the two), or
 *             s itself (no m).
 *
 * Legal only where Attention computes the same: q [B, H, L, E], k [B, H,
 * S, E], v [B, H, S, Ev] (4-D: the batch and head dims equal, nothing
 * broadcast by the MatMuls) or the same without H (3-D: Attention reads
 * [B, L, E] with q_num_heads = kv_num_heads = 1, written out); static
 * shapes, one floating dtype; the mask adds or selects nothing beyond s's
 * shape, and has rank <= 2 for 3-D inputs (a 3-D mask would broadcast
 * against Attention's head dim; leading 1s are dropped from a constant
 * one).  Every node of the pattern but the mask feeds nothing else; the
 * scale is positive (Attention may scale q and k by its square root).
 * Attention then computes softmax(q k^T * scale + bias) v with bias 0 where
 * a bool mask is true and -inf where it is false, or the float mask, which
 * is the pattern.  The Attention replaces the last MatMul in place
 * (result, name, scope, location); the rest is left for dce. */
#include <math.h>
#include "fuse.h"

int fuse_key_perm(const Node *t, int32_t rank, int64_t *p1)
{
	const Named *p = node_kw(t, S_perm);
	uint32_t seen = 0;
	int ident = 1;
	if (!p || p->val.kind != A_LIST || p->val.n != (uint32_t)rank || rank < 2 || rank > 16)
		return -1;
	for (int32_t i = 0; i < rank; i++) {
		const Arg *e = &p->val.u.list[i < rank - 2 ? i : 2 * rank - 3 - i];
		if (e->kind != A_INT || e->u.i < 0 || e->u.i >= rank || (seen & (1u << e->u.i)))
			return -1;
		seen |= 1u << e->u.i;
		p1[i] = e->u.i;
		ident &= p1[i] == i;
	}
	return ident;
}

/* k = Transpose(x, p1), a new node before n with the provenance of the
 * Transpose `like` it comes from. */
static ValueId new_transpose(Fuse *f, Node *n, const Node *like, ValueId x, const int64_t *p1, int32_t rank)
{
	const Type *tx = val(f->m, x)->type;
	Arena *a = &f->m->arena;
	Node *t = node_new_op(f->m, OP_ONNX_Transpose, 1, 1, 1);
	Dim *dims = ARENA_ARRAY(a, Dim, rank);
	Arg *perm = ARENA_ARRAY(a, Arg, rank);
	for (int32_t i = 0; i < rank; i++) {
		dims[i] = tx->dims[p1[i]];
		perm[i] = (Arg){ .kind = A_INT, .u.i = p1[i] };
	}
	t->prov = like->prov;
	t->loc = like->loc;
	t->args[0] = fuse_value_arg(x);
	t->kw[0] = (Named){ S_perm, { .kind = A_LIST, .n = (uint32_t)rank, .u.list = perm } };
	ValueId k = value_new(f->m, value_fresh_name(f->m, val(f->m, like->res[0])->name),
			      type_tensor(a, (DType)tx->dtype, rank, dims), VK_NODE);
	val(f->m, k)->def = t;
	t->res[0] = k;
	node_insert_before(n->graph, n, t);
	return k;
}

static int is_neg_inf(const Fuse *f, ValueId v)
{
	double x;
	return fuse_scalar(f, v, &x) && isinf(x) && x < 0;
}

/* The dims of q, k and v fit one Attention: [B, (H,) L, E], [.., S, E],
 * [.., S, Ev], batch (and head) dims equal, one floating dtype. */
static int qkv_ok(const Type *q, const Type *k, const Type *v)
{
	if (!q || !k || !v || (q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank ||
	    !dtype_is_float((DType)q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
		return 0;
	int32_t r = q->rank;
	for (int32_t i = 0; i < r - 2; i++)
		if (k->dims[i].v != q->dims[i].v || v->dims[i].v != q->dims[i].v)
			return 0;
	return k->dims[r - 1].v == q->dims[r - 1].v && v->dims[r - 2].v == k->dims[r - 2].v;
}

/* Which operand of Add(x, y) holds the scores: the one a scale or the
 * MatMul makes (the first if both). */
static int makes_scores(const Fuse *f, ValueId v)
{
	const Node *d = def_of(f->m, v);
	return d && (d->op == OP_ONNX_Mul || d->op == OP_ONNX_Div || d->op == OP_ONNX_MatMul);
}

static uint32_t scores_side(const Fuse *f, const Node *add)
{
	return makes_scores(f, operand(add, 0)) ? 0 : 1;
}

/* add is Add(Add(s, f1), f2) (either order at each level) with the scores
 * s made by a scale or the MatMul: the inner Add. */
static Node *inner_mask_add(const Fuse *f, const Node *add)
{
	for (uint32_t side = 0; side < 2; side++) {
		Node *in = match_operand(f->m, add, side, OP_ONNX_Add);
		if (in && in->nres == 1 && in->nargs == 2 && fuse_one_use(f, in->res[0]) &&
		    makes_scores(f, operand(in, scores_side(f, in))))
			return in;
	}
	return NULL;
}

/* The attention mask found between the scores and the Softmax: the value
 * (VNONE: none), and whether it must become a new constant, negated (a
 * bool mask that selected -inf) and without its first `lead` dims. */
typedef struct Mask { ValueId v, v2; int negate; int32_t lead; } Mask;

/* The mask node at in: *mk and the scores into *s; 0 if in is a mask of
 * none of the forms (nothing is made yet: see make_mask). */
static int match_mask(const Fuse *f, ValueId in, int32_t rank, ValueId *s, Mask *mk)
{
	Node *n = def_of(f->m, in);
	*mk = (Mask){ VNONE, VNONE, 0, 0 };
	*s = in;
	if (!n || n->domain != S_onnx || n->nres != 1 || (n->op != OP_ONNX_Where && n->op != OP_ONNX_Add))
		return 1;
	mk->v = operand(n, 0);
	Node *in2 = n->op == OP_ONNX_Add && rank >= 4 ? inner_mask_add(f, n) : NULL;
	if (in2) {
		/* Two float masks (swin's relative position bias, then its
		 * shifted-window mask): Attention takes their sum. */
		uint32_t side = scores_side(f, in2);
		*s = operand(in2, side);
		mk->v2 = operand(in2, 1 - side);
		mk->v = operand(n, operand(n, 0) == in2->res[0] ? 1 : 0);
		const Type *t2 = fuse_static_type(f, mk->v2), *tn = fuse_static_type(f, in);
		if (!t2 || !tn || t2->dtype != tn->dtype || !type_equal(fuse_static_type(f, in2->res[0]), tn))
			return 0;
	} else if (n->op == OP_ONNX_Add) {
		uint32_t side = scores_side(f, n);
		*s = operand(n, side);
		mk->v = operand(n, 1 - side);
	} else if (is_neg_inf(f, operand(n, 1))) {
		*s = operand(n, 2);
		mk->negate = 1;
	} else if (is_neg_inf(f, operand(n, 2))) {
		*s = operand(n, 1);
	} else {
		return 0;
	}
	const Type *tn = fuse_static_type(f, in), *tm = fuse_static_type(f, mk->v);
	if (!tn || !tm || !fuse_one_use(f, in) || !type_equal(fuse_static_type(f, *s), tn) ||
	    (n->op == OP_ONNX_Add ? tm->dtype != tn->dtype : tm->dtype != DT_BOOL))
		return 0;
	while (rank == 3 && tm->rank - mk->lead > 2 && tm->dims[mk->lead].v == 1)
		mk->lead++;
	const Tensor *t = const_tensor(f->m, mk->v);
	return !(rank == 3 && tm->rank - mk->lead > 2) && (!(mk->negate || mk->lead) || (t && t->data));
}

/* A new Add(v2, v) before the node that makes `like` (the outer mask
 * Add, whose provenance it takes), typed with the broadcast of the two. */
static ValueId mask_sum(Fuse *f, const Mask *mk, ValueId like)
{
	const Type *a = fuse_static_type(f, mk->v2), *b = fuse_static_type(f, mk->v);
	if (!a || !b)
		return VNONE;
	int32_t r = a->rank > b->rank ? a->rank : b->rank;
	Dim *dims = ARENA_ARRAY(&f->m->arena, Dim, r ? r : 1);
	for (int32_t i = 0; i < r; i++) {
		int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
		int64_t da = ia >= 0 ? a->dims[ia].v : 1, db = ib >= 0 ? b->dims[ib].v : 1;
		if (da != db && da != 1 && db != 1)
			return VNONE;
		dims[i] = (Dim){ da == 1 ? db : da, 0 };
	}
	Node *at = def_of(f->m, like);
	Node *add = node_new_op(f->m, OP_ONNX_Add, 1, 2, 0);
	add->prov = at->prov;
	add->loc = at->loc;
	add->args[0] = fuse_value_arg(mk->v2);
	add->args[1] = fuse_value_arg(mk->v);
	ValueId v = value_new(f->m, value_fresh_name(f->m, val(f->m, like)->name),
			      type_tensor(&f->m->arena, (DType)a->dtype, r, dims), VK_NODE);
	val(f->m, v)->def = add;
	add->res[0] = v;
	node_insert_before(at->graph, at, add);
	return v;
}

/* The mask value Attention takes: mk's value, or a new constant of g made
 * from it (named after `like`). */
static ValueId make_mask(Fuse *f, Graph *g, const Mask *mk, ValueId like, Loc loc)
{
	if (mk->v2)
		return mask_sum(f, mk, like);
	if (!mk->v || !(mk->negate || mk->lead))
		return mk->v;
	RTensor *r = rt_from_ir(loc, const_tensor(f->m, mk->v));
	RTensor *out = r ? rt_new(loc, r->dtype, r->rank - mk->lead, r->shape + mk->lead) : NULL;
	for (int64_t i = 0; out && i < out->numel; i++) {
		if (mk->negate)
			rt_set_i(out, i, !rt_get_i(r, i));
		else
			rt_set_f(out, i, rt_get_f(r, i));
	}
	ValueId m = out ? fuse_new_const(f, g, out, like, "_mask") : VNONE;
	rt_free(r);
	rt_free(out);
	return m;
}

/* in = Mul(s, c), Mul(c, s), Div(s, d) or s: the scale into *c, s into *s. */
static void match_scale(const Fuse *f, ValueId in, ValueId *s, double *c)
{
	Node *n = def_of(f->m, in);
	*s = in;
	*c = 1.0;
	if (!n || n->domain != S_onnx || n->nres != 1 || !fuse_one_use(f, in))
		return;
	double d;
	for (uint32_t side = 0; n->op == OP_ONNX_Mul && side < 2; side++)
		if (fuse_scalar(f, operand(n, 1 - side), c)) {
			*s = operand(n, side);
			return;
		}
	if (n->op == OP_ONNX_Div && fuse_scalar(f, operand(n, 1), &d) && d != 0) {
		*s = operand(n, 0);
		*c = 1.0 / d;
	}
}

void fuse_attention(Fuse *f, Graph *g, Node *n)
{
	if (f->opset < 23)
		return;
	Node *sm = match_operand(f->m, n, 0, OP_ONNX_Softmax);
	const Type *tp = sm ? fuse_static_type(f, sm->res[0]) : NULL;
	const Named *ax = sm ? node_kw(sm, S_axis) : NULL;
	if (!tp || !fuse_one_use(f, sm->res[0]) || !ax || ax->val.kind != A_INT ||
	    (ax->val.u.i != -1 && ax->val.u.i != tp->rank - 1))
		return;
	ValueId scaled, v = operand(n, 1), qk, m;
	Mask mk;
	double scale;
	if (!match_mask(f, operand(sm, 0), tp->rank, &scaled, &mk))
		return;
	match_scale(f, scaled, &qk, &scale);
	Node *mm = match_op(f->m, qk, OP_ONNX_MatMul);
	Node *tr = mm ? match_operand(f->m, mm, 1, OP_ONNX_Transpose) : NULL;
	int64_t p1[16];
	int ident = tr ? fuse_key_perm(tr, tp->rank, p1) : -1;
	if (ident < 0 || !fuse_one_use(f, qk) || !fuse_one_use(f, tr->res[0]))
		return;
	ValueId q = operand(mm, 0), k = operand(tr, 0);
	const Type *tq = fuse_static_type(f, q), *tk = fuse_static_type(f, tr->res[0]);
	if (!tk || !isfinite(scale) || !(scale > 0))
		return;
	/* k's dims are the Transpose's with the last two swapped. */
	Dim kd[16];
	for (int32_t i = 0; i < tk->rank; i++)
		kd[i] = tk->dims[i < tk->rank - 2 ? i : 2 * tk->rank - 3 - i];
	Type kt = *tk;
	kt.dims = kd;
	if (!qkv_ok(tq, &kt, fuse_static_type(f, v)))
		return;
	if (!(m = make_mask(f, g, &mk, operand(sm, 0), n->loc)) && mk.v)
		return;
	if (!ident)
		k = new_transpose(f, n, tr, k, p1, tp->rank);
	uint32_t nkw = tq->rank == 3 ? 3 : 1;
	f->uses[sm->res[0]]--;
	fuse_set_op(f, n, OP_ONNX_Attention, m ? 4 : 3, nkw);
	n->args[0] = fuse_value_arg(q);
	n->args[1] = fuse_value_arg(k);
	n->args[2] = fuse_value_arg(v);
	if (m)
		n->args[3] = fuse_value_arg(m);
	n->kw[0] = (Named){ sym_cstr("scale"), { .kind = A_FLOAT, .u.f = scale } };
	if (nkw == 3) {
		n->kw[1] = (Named){ sym_cstr("q_num_heads"), { .kind = A_INT, .u.i = 1 } };
		n->kw[2] = (Named){ sym_cstr("kv_num_heads"), { .kind = A_INT, .u.i = 1 } };
	}
}
