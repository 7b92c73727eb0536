/* fuse_ort_heads.c - -target=ort (the pass fuse_ort, after
 * fuse_ort_products): the heads of a joined product laid out once, where
 * each part of its Split was laid out on its own.
 *
 *   y_1, ..., y_m = Split(x, [h_1 * D, ..., h_m * D], axis = -1)
 *   t_i = Transpose(Reshape(y_i, [B, S, h_i, D]), [0, 2, 1, 3])
 *       -> t_1, ..., t_m = Split(Transpose(Reshape(x, [0, 0, H, D]),
 *                                          [0, 2, 1, 3]),
 *                                [h_1, ..., h_m], axis = 1)
 *
 * with x [B, S, H * D], H = h_1 + ... + h_m: the Q, K and V projections
 * of an attention joined into one product, each then split into its heads
 * [B, h_i, S, D].  3 nodes where there were 2m + 1 (7 for Q, K and V).
 *
 * Why it holds: Reshape(x, [B, S, H, D]) puts columns j*D .. j*D + D - 1
 * of x in head j, so y_i, columns o_i .. o_i + h_i*D - 1 (o_i = (h_1 + ...
 * + h_(i-1)) * D), is heads o_i/D .. o_i/D + h_i - 1 of it, and moving the
 * head axis before S and then taking those heads is taking them and then
 * moving it.  Only data moves: the result is the same bit for bit.
 *
 * The parts may also be Slices of x along its last axis, with constant
 * starts and ends and step 1, that together read all of x, contiguous
 * from 0, and are its only readers (Phi-3 takes q, k and v from one
 * projection so).
 *
 * Legality: x of rank 3 with a static last dim; the Split along its last
 * axis; each y_i read only by a Reshape to [B, S, h_i, D] (B and S x's
 * own, h_i and D static, D the same for all) read only by that Transpose;
 * the sizes cover x.  A Split whose parts are read otherwise (the gate
 * and up projections of a gated MLP) is left as it is.
 *
 * The new Split stands where the old one (the first Slice) stood, with
 * its provenance; the Reshape and the Transpose take those of the first
 * part's.  Linear: one walk notes each value's reader and chains the
 * Slices of each value, then each Split and each value's Slices are
 * looked at once (ordering at most HEADS_MAX Slices by their starts is a
 * scan of them a part). */
#include <stdlib.h>
#include "fuse.h"

enum { HEADS_MAX = 16 };

static const int64_t swap12[4] = { 0, 2, 1, 3 };

typedef struct Heads {
	Module *m;
	Graph *g;
	uint32_t *uses;             /* module_use_counts */
	Node **reader;              /* fuse_readers */
	uint32_t nv;
} Heads;

/* The one node reading v, when it is op (of the default domain) reading
 * v as its first operand. */
static Node *sole_reader(const Heads *h, ValueId v, OpId op)
{
	Node *r = v < h->nv && h->uses[v] == 1 ? h->reader[v] : NULL;
	return r && r->op == op && r->domain == S_onnx && operand(r, 0) == v ? r : NULL;
}

static const Type *tensor_rank(const Module *m, ValueId v, int32_t rank)
{
	const Type *t = v ? val((Module *)m, v)->type : NULL;
	return t && t->kind == TY_TENSOR && t->rank == rank ? t : NULL;
}

/* A node op(a[, b]) with one result named after like + suffix, of type t,
 * before `at` with the provenance of `from`. */
static Node *make(Heads *h, OpId op, ValueId a, ValueId b, uint32_t nkw, Node *at, const Node *from, ValueId like,
		  const char *suffix, Type *t)
{
	Module *m = h->m;
	Node *n = node_new_op(m, op, 1, b ? 2 : 1, nkw);
	n->args[0] = fuse_value_arg(a);
	if (b)
		n->args[1] = fuse_value_arg(b);
	fuse_place(m, h->g, n, at, from, like, suffix, t);
	return n;
}

/* The parts y[0..k) of x, in order along its last dim, each split into
 * heads (Reshape, Transpose): one head split of x, before `at` (the
 * parts' first maker); 1 when it was made. */
static int split_heads(Heads *h, ValueId x, const ValueId *y, uint32_t k, Node *at)
{
	Module *m = h->m;
	const Type *tx = tensor_rank(m, x, 3);
	if (k < 2 || k > HEADS_MAX || !tx || tx->dims[2].sym)
		return 0;
	Node *r[HEADS_MAX], *t[HEADS_MAX];
	int64_t hs[HEADS_MAX], d = 0, total = 0;
	for (uint32_t i = 0; i < k; i++) {
		r[i] = sole_reader(h, y[i], OP_ONNX_Reshape);
		t[i] = r[i] ? sole_reader(h, r[i]->res[0], OP_ONNX_Transpose) : NULL;
		if (!t[i] || !fuse_perm_is(t[i], swap12, 4))
			return 0;
		const Type *ty = tensor_rank(m, y[i], 3), *tr = tensor_rank(m, r[i]->res[0], 4);
		if (!ty || !tr || ty->dims[2].sym || tr->dims[2].sym || tr->dims[3].sym ||
		    ty->dims[2].v != tr->dims[2].v * tr->dims[3].v || (i && tr->dims[3].v != d))
			return 0;
		for (int32_t j = 0; j < 2; j++)
			if (!dim_same(tr->dims[j], tx->dims[j]) || !dim_same(ty->dims[j], tx->dims[j]))
				return 0;
		d = tr->dims[3].v;
		hs[i] = tr->dims[2].v;
		total += ty->dims[2].v;
	}
	if (d < 1 || total != tx->dims[2].v)
		return 0;

	Dim bshd[4] = { tx->dims[0], tx->dims[1], { total / d, 0 }, { d, 0 } };
	Dim bhsd[4] = { tx->dims[0], { total / d, 0 }, tx->dims[1], { d, 0 } };
	int64_t shape[4] = { 0, 0, total / d, d };
	Node *rn = make(h, OP_ONNX_Reshape, x, const_i64s(m, h->g, shape, 4, x, "heads"), 0, at, r[0], x, "heads",
			type_tensor(&m->arena, tx->dtype, 4, bshd));
	Node *tn = make(h, OP_ONNX_Transpose, rn->res[0], VNONE, 1, at, t[0], x, "bhsd",
			type_tensor(&m->arena, tx->dtype, 4, bhsd));
	tn->kw[0] = (Named){ S_perm, fuse_int_list(m, swap12, 4) };
	Node *sn = node_new_op(m, OP_ONNX_Split, k, 2, 1);
	sn->args[0] = fuse_value_arg(tn->res[0]);
	sn->args[1] = fuse_value_arg(const_i64s(m, h->g, hs, (int32_t)k, x, "split_heads"));
	sn->kw[0] = (Named){ S_axis, { .kind = A_INT, .u.i = 1 } };
	sn->prov = at->prov;
	sn->loc = at->loc;
	for (uint32_t i = 0; i < k; i++) {
		ValueId ti = t[i]->res[0];
		sn->res[i] = ti;
		val(m, ti)->def = sn;
		val(m, ti)->res = i;
		node_remove(h->g, t[i]);
		node_remove(h->g, r[i]);
	}
	node_insert_before(h->g, at, sn);
	rewrite_count("fuse_ort", "Split of heads");
	return 1;
}

/* A Split along x's last axis. */
static void split_parts(Heads *h, Node *s)
{
	int64_t axis = fuse_attr_int(s, "axis", 0);
	if ((axis == -1 || axis == 2) && split_heads(h, operand(s, 0), s->res, s->nres, s))
		node_remove(h->g, s);
}

/* A one-element i64 constant: its value in *v. */
static int const_int(const Module *m, ValueId c, int64_t *v)
{
	const Tensor *t = c ? const_tensor(m, c) : NULL;
	if (!t || !t->type || t->type->dtype != DT_I64 || type_numel(t->type) != 1 || !t->data)
		return 0;
	*v = tensor_get_i(DT_I64, t->data, 0);
	return 1;
}

/* Slice(x, start, end, axes = [-1], steps = [1]) with constant start and
 * end, x of rank 3 and static last dim n: [*lo, *hi) clamped to [0, n). */
static int last_slice(const Module *m, const Node *n, int64_t *lo, int64_t *hi)
{
	const Type *tx = tensor_rank(m, operand(n, 0), 3);
	int64_t axis, step = 1;
	if (!tx || tx->dims[2].sym || n->nargs < 4 || !const_int(m, operand(n, 1), lo) ||
	    !const_int(m, operand(n, 2), hi) || !const_int(m, operand(n, 3), &axis) || (axis != -1 && axis != 2) ||
	    (n->nargs > 4 && operand(n, 4) && !const_int(m, operand(n, 4), &step)) || step != 1)
		return 0;
	int64_t w = tx->dims[2].v;
	*lo = *lo < 0 ? *lo + w : *lo;
	*hi = *hi < 0 ? *hi + w : *hi > w ? w : *hi;
	return *lo >= 0 && *lo < *hi;
}

/* The Slices sl[0..k) of one x, in graph order, that read it whole,
 * contiguous from 0 to its last dim (Phi-3's q, k and v of one
 * projection): the parts in order of their starts, split where the first
 * Slice stands. */
static void slice_parts(Heads *h, ValueId x, Node **sl, uint32_t k)
{
	Module *m = h->m;
	const Type *tx = tensor_rank(m, x, 3);
	if (k < 2 || k > HEADS_MAX || !tx || h->uses[x] != k)
		return;
	ValueId y[HEADS_MAX];
	int64_t at = 0;
	for (uint32_t i = 0; i < k; i++) {     /* k <= HEADS_MAX: a short scan a part */
		Node *next = NULL;
		for (uint32_t j = 0; j < k && !next; j++) {
			int64_t lo, hi;
			if (last_slice(m, sl[j], &lo, &hi) && lo == at) {
				next = sl[j];
				at = hi;
			}
		}
		if (!next)
			return;
		y[i] = next->res[0];
	}
	if (at == tx->dims[2].v && split_heads(h, x, y, k, sl[0]))
		for (uint32_t j = 0; j < k; j++)
			node_remove(h->g, sl[j]);
}

void fuse_ort_heads(Module *m, Graph *g)
{
	uint32_t n = 0;
	for (Node *x = g->first; x; x = x->next)
		n += x->domain == S_onnx && (x->op == OP_ONNX_Split || x->op == OP_ONNX_Slice);
	if (n < 1)
		return;
	Heads h = { m, g, module_use_counts(m, WALK_PROGRAM), fuse_readers(m, g), m->vals.n };
	/* The Splits and Slices first (a rewrite removes nodes after its
	 * own), the Slices of one x chained in graph order (by ValueId:
	 * first[x], then more[i]). */
	Node **found = xmalloc(n * sizeof *found);
	uint32_t *first = xmalloc(h.nv * sizeof *first), *last = xmalloc(h.nv * sizeof *last);
	uint32_t *more = xmalloc(n * sizeof *more);
	for (uint32_t v = 0; v < h.nv; v++)
		first[v] = UINT32_MAX;
	n = 0;
	for (Node *x = g->first; x; x = x->next) {
		if (x->domain != S_onnx || (x->op != OP_ONNX_Split && x->op != OP_ONNX_Slice))
			continue;
		ValueId in = operand(x, 0);
		more[n] = UINT32_MAX;
		if (x->op == OP_ONNX_Slice && in && in < h.nv) {
			if (first[in] == UINT32_MAX)
				first[in] = n;
			else
				more[last[in]] = n;
			last[in] = n;
		}
		found[n++] = x;
	}
	Node *sl[HEADS_MAX];
	for (uint32_t i = 0; i < n; i++) {
		Node *x = found[i];
		if (x->op == OP_ONNX_Split) {
			split_parts(&h, x);
			continue;
		}
		ValueId in = operand(x, 0);
		if (!in || in >= h.nv || first[in] != i)
			continue;       /* a group is looked at from its first Slice */
		uint32_t k = 0;         /* HEADS_MAX + 1: too many, slice_parts refuses */
		for (uint32_t j = i; j != UINT32_MAX && k <= HEADS_MAX; j = more[j], k++)
			if (k < HEADS_MAX)
				sl[k] = found[j];
		slice_parts(&h, in, sl, k);
	}
	free(found);
	free(first);
	free(last);
	free(more);
	free(h.reader);
	free(h.uses);
}
