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
 * Legality: x of rank 3 with a static last dim; the Split along its last
 * axis; each y_i read only by a Reshape to [B, S, h_i, D] (B and S x's
 * own, h_i and D static, D the same for all) read only by that Transpose;
 * the sizes cover x.  A Split whose parts are read otherwise (the gate
 * and up projections of a gated MLP) is left as it is.
 *
 * The new Split takes the old one's provenance, the Reshape and the
 * Transpose those of the first part's.  Linear: one walk notes each
 * value's reader, then each Split is looked at once. */
#include <stdlib.h>
#include "fuse.h"

enum { HEADS_MAX = 16 };

static const int64_t swap12[4] = { 0, 2, 1, 3 };

typedef struct Heads {
	Module *m;
	Graph *g;
	uint32_t *uses;             /* module_use_counts */
	Node **reader;              /* by ValueId: a node of g reading it */
	uint32_t nv;
	Node *cur;
} Heads;

static void note_reader(ValueId v, void *ctx)
{
	Heads *h = ctx;
	if (v < h->nv)
		h->reader[v] = h->cur;
}

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
	char buf[300];
	snprintf(buf, sizeof buf, "%.250s_%s", sym_str(val(m, like)->name), suffix);
	n->res[0] = value_new(m, value_fresh_name(m, sym_cstr(buf)), t, VK_NODE);
	val(m, n->res[0])->def = n;
	val(m, n->res[0])->res = 0;
	n->prov = from->prov;
	n->loc = from->loc;
	node_insert_before(h->g, at, n);
	return n;
}

static void heads(Heads *h, Node *s)
{
	Module *m = h->m;
	ValueId x = operand(s, 0);
	const Type *tx = tensor_rank(m, x, 3);
	int64_t axis = fuse_attr_int(s, "axis", 0);
	if (s->nres < 2 || s->nres > HEADS_MAX || !tx || tx->dims[2].sym || (axis != -1 && axis != 2))
		return;
	Node *r[HEADS_MAX], *t[HEADS_MAX];
	int64_t hs[HEADS_MAX], d = 0, total = 0;
	for (uint32_t i = 0; i < s->nres; i++) {
		r[i] = sole_reader(h, s->res[i], OP_ONNX_Reshape);
		t[i] = r[i] ? sole_reader(h, r[i]->res[0], OP_ONNX_Transpose) : NULL;
		if (!t[i] || !fuse_perm_is(t[i], swap12, 4))
			return;
		const Type *ty = tensor_rank(m, s->res[i], 3), *tr = tensor_rank(m, r[i]->res[0], 4);
		if (!ty || !tr || ty->dims[2].sym || tr->dims[2].sym || tr->dims[3].sym ||
		    ty->dims[2].v != tr->dims[2].v * tr->dims[3].v || (i && tr->dims[3].v != d))
			return;
		for (int32_t j = 0; j < 2; j++)
			if (!dim_same(tr->dims[j], tx->dims[j]) || !dim_same(ty->dims[j], tx->dims[j]))
				return;
		d = tr->dims[3].v;
		hs[i] = tr->dims[2].v;
		total += ty->dims[2].v;
	}
	if (d < 1 || total != tx->dims[2].v)
		return;

	Dim bshd[4] = { tx->dims[0], tx->dims[1], { total / d, 0 }, { d, 0 } };
	Dim bhsd[4] = { tx->dims[0], { total / d, 0 }, tx->dims[1], { d, 0 } };
	int64_t shape[4] = { 0, 0, total / d, d };
	Node *rn = make(h, OP_ONNX_Reshape, x, const_i64s(m, h->g, shape, 4, x, "heads"), 0, s, r[0], x, "heads",
			type_tensor(&m->arena, tx->dtype, 4, bshd));
	Node *tn = make(h, OP_ONNX_Transpose, rn->res[0], VNONE, 1, s, t[0], x, "bhsd",
			type_tensor(&m->arena, tx->dtype, 4, bhsd));
	tn->kw[0] = (Named){ S_perm, fuse_int_list(m, swap12, 4) };
	Node *sn = node_new_op(m, OP_ONNX_Split, s->nres, 2, 1);
	sn->args[0] = fuse_value_arg(tn->res[0]);
	sn->args[1] = fuse_value_arg(const_i64s(m, h->g, hs, (int32_t)s->nres, x, "split_heads"));
	sn->kw[0] = (Named){ S_axis, { .kind = A_INT, .u.i = 1 } };
	sn->prov = s->prov;
	sn->loc = s->loc;
	for (uint32_t i = 0; i < s->nres; i++) {
		ValueId ti = t[i]->res[0];
		sn->res[i] = ti;
		val(m, ti)->def = sn;
		val(m, ti)->res = i;
		node_remove(h->g, t[i]);
		node_remove(h->g, r[i]);
	}
	node_insert_before(h->g, s, sn);
	node_remove(h->g, s);
	rewrite_count("fuse_ort", "Split of heads");
}

void fuse_ort_heads(Module *m, Graph *g)
{
	Heads h = { .m = m, .g = g, .uses = module_use_counts(m, WALK_PROGRAM), .nv = m->vals.n };
	h.reader = xcalloc(h.nv ? h.nv : 1, sizeof *h.reader);
	uint32_t n = 0;
	for (Node *x = g->first; x; x = x->next) {
		h.cur = x;
		node_each_use(x, note_reader, &h);
		n += x->op == OP_ONNX_Split && x->domain == S_onnx;
	}
	/* the Splits first: a rewrite removes nodes after its Split */
	Node **splits = xmalloc((n ? n : 1) * sizeof *splits);
	n = 0;
	for (Node *x = g->first; x; x = x->next)
		if (x->op == OP_ONNX_Split && x->domain == S_onnx)
			splits[n++] = x;
	for (uint32_t i = 0; i < n; i++)
		heads(&h, splits[i]);
	free(splits);
	free(h.reader);
	free(h.uses);
}
