/* hoist_slice.c - -O2: a Slice that keeps some rows moves above the
 * computation that made the rows, so only the rows kept are computed.
 *
 *   Slice(op(a, b, ...), st, en, [axis], sp), axis not the last
 *       -> op(Slice(a, ...), b, ...)
 *
 * where op computes each row of its result from the same row of its
 * operands (a row: one index along `axis`):
 *   - an elementwise op (broadcasting; Cast too): every operand that has
 *     the axis at full size is sliced, one that broadcasts along it (size
 *     1, or of lower rank) is read whole;
 *   - MatMul(A, W) with W 2-D: A is sliced (axis is one of A's rows or
 *     batch dims, W is the same for every row);
 *   - a reduction with keepdims over other axes (ReduceMean of an RMS
 *     norm over the last), Softmax and LogSoftmax over a later axis,
 *     LayerNormalization and RMSNormalization over later axes (their
 *     scale and bias cover the normalized dims: read whole).
 * The moved Slice then looks at its new producer, and so on up: a
 * language model's last position (logits[:, -1:] before the LM head, a
 * generation export's logits_to_keep) takes the final norm, the last
 * layer's MLP and its attention's output projection down to one row, up
 * to the attention itself (a Reshape, Transpose or attention product
 * mixes rows: the Slice stops there).
 *
 * A value computed once and read several times moves only when every
 * read is a Slice with the same starts, ends, axis and steps: those are
 * merged into one first (an RMS norm reads its input twice, a residual
 * sum three times).  Otherwise the work would be done twice, whole and
 * sliced, and the Slice stays.  Starts, ends and steps must be constants
 * of one element (one axis); the new Slices get constants of their own,
 * the provenance of the Slice they move, and their types (the operand's,
 * the axis as long as the Slice's result's).
 *
 * Linear time: each value is moved past once, as its one Slice or its
 * merged Slices, and the work per move is its node's operands.
 *
 * Only a Slice that keeps a known number of rows (its result's dim along
 * the axis static), fewer than its input's, moves: one that drops a row or
 * two would only trade one copy for a copy of each operand.
 *
 * A Gather of one row (x[:, -1]: a constant 0-D index along an axis other
 * than the last) is such a Slice and a Squeeze:
 *
 *   Gather(x, c, axis)  ->  Squeeze(Slice(x, c, c + 1, axis), axis)
 *
 * written only when it moves (x read by it alone, made by a node that
 * computes row by row): the Squeeze keeps the Gather's result and both
 * take its provenance. */
#include <stdlib.h>
#include <string.h>
#include "fuse.h"

enum { MAX_AXES = RT_MAX_RANK };

typedef struct Sig { int64_t axis, start, end, step; } Sig;  /* axis within the data's rank */

typedef struct Rec { Node *s; Sig sig; uint32_t next; } Rec;  /* a Slice in its data's list */

typedef struct Hoist {
	Module *m;
	Graph *g;
	uint32_t *uses;             /* module_use_counts, for values made before the pass */
	uint32_t nuses;
	VEC(Rec) recs;              /* recs.v[0] unused: 0 ends a list */
	uint32_t *head, *count;     /* by ValueId: the Slices reading it with one Sig */
	uint8_t *mixed;             /* by ValueId: read by Slices of different Sigs */
	uint32_t cap;
	VEC(ValueId) touched;       /* the values the current graph's Slices read:
				     * their entries are cleared for the next graph */
	VEC(ValueId) work;          /* values whose reads are all their listed Slices */
	Rewriter rw;                /* merged Slices' results -> the kept one's */
	uint32_t merged;
} Hoist;

static int const_one(const Module *m, const Node *s, uint32_t i, int64_t *x)
{
	ValueId v = operand(s, i);
	const Tensor *t = v ? const_tensor(m, v) : NULL;
	if (!t || !dtype_is_int((DType)t->type->dtype) || type_numel(t->type) != 1)
		return 0;
	*x = tensor_get_i((DType)t->type->dtype, t->data, 0);
	return 1;
}

static int32_t rank_of(const Module *m, ValueId v)
{
	const Type *t = v ? val((Module *)m, v)->type : NULL;
	return t && t->kind == TY_TENSOR ? t->rank : -1;
}

/* s is a Slice of one axis other than the last of its data, with
 * constant starts, ends and steps: its Sig. */
static int slice_sig(const Module *m, const Node *s, Sig *sig)
{
	if (s->op != OP_ONNX_Slice || s->nargs < 3 || s->nkw || !operand(s, 0))
		return 0;
	int32_t r = rank_of(m, operand(s, 0));
	int64_t axis = 0;
	sig->step = 1;
	if (r < 2 || !const_one(m, s, 1, &sig->start) || !const_one(m, s, 2, &sig->end) ||
	    (s->nargs > 3 && s->args[3].kind != A_NONE && !const_one(m, s, 3, &axis)) ||
	    (s->nargs > 4 && s->args[4].kind != A_NONE && !const_one(m, s, 4, &sig->step)))
		return 0;
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r - 1 || sig->step == 0 || rank_of(m, s->res[0]) != r)
		return 0;
	/* It keeps a known number of rows, fewer than there are: moving it up
	 * then saves work (one that keeps most rows would copy each operand). */
	Dim kept = val((Module *)m, s->res[0])->type->dims[axis];
	Dim all = val((Module *)m, operand(s, 0))->type->dims[axis];
	if (kept.sym || kept.v < 0 || (!all.sym && (all.v < 0 || all.v <= kept.v)))
		return 0;
	sig->axis = axis;
	return 1;
}

static void grow(Hoist *h, ValueId v)
{
	if (v < h->cap)
		return;
	uint32_t c = h->cap;
	h->head = xgrow_index(h->head, &c, v, sizeof *h->head);
	c = h->cap;
	h->count = xgrow_index(h->count, &c, v, sizeof *h->count);
	c = h->cap;
	h->mixed = xgrow_index(h->mixed, &c, v, sizeof *h->mixed);
	h->cap = c;
}

static int sig_equal(const Sig *a, const Sig *b) { return !memcmp(a, b, sizeof *a); }

/* Adds Slice s (of Sig sig) to its data's list; queues the data when the
 * list holds every read of it. */
static void note(Hoist *h, Node *s, const Sig *sig)
{
	ValueId v = operand(s, 0);
	grow(h, v);
	if (h->mixed[v])
		return;
	if (!h->head[v])
		XVEC_PUSH(h->touched, v);
	else if (!sig_equal(&h->recs.v[h->head[v]].sig, sig)) {
		h->mixed[v] = 1;
		return;
	}
	XVEC_PUSH(h->recs, ((Rec){ s, *sig, h->head[v] }));
	h->head[v] = h->recs.n - 1;
	if (v < h->nuses && ++h->count[v] == h->uses[v])
		XVEC_PUSH(h->work, v);
}

/* Reduction n keeps its rank and leaves `axis` alone. */
static int reduces_elsewhere(const Module *m, const Node *n, int32_t r, int64_t axis)
{
	const Named *kd = node_kw(n, sym_cstr("keepdims"));
	if (kd && ((kd->val.kind != A_INT && kd->val.kind != A_BOOL) || kd->val.u.i != 1))
		return 0;
	const Named *ax = node_kw(n, sym_cstr("axes"));
	int64_t axes[MAX_AXES];
	uint32_t k = 0;
	if (ax) {
		if (ax->val.kind != A_LIST || ax->val.n > MAX_AXES)
			return 0;
		for (uint32_t i = 0; i < ax->val.n; i++) {
			if (ax->val.u.list[i].kind != A_INT)
				return 0;
			axes[k++] = ax->val.u.list[i].u.i;
		}
	} else {
		const Tensor *t = n->nargs > 1 && operand(n, 1) ? const_tensor(m, operand(n, 1)) : NULL;
		int64_t c = t ? type_numel(t->type) : -1;
		if (!t || c < 1 || c > MAX_AXES)
			return 0;
		for (int64_t i = 0; i < c; i++)
			axes[k++] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
	}
	if (k == 0)
		return 0;           /* every axis, or none (noop_with_empty_axes) */
	for (uint32_t i = 0; i < k; i++)
		if (axes[i] == axis || axes[i] + r == axis)
			return 0;
	return 1;
}

/* n's results past the first are absent or never read (LayerNormalization's
 * mean and inverse deviation, as a traced layer_norm leaves them). */
static int one_result(const Hoist *h, const Node *n)
{
	for (uint32_t i = 1; i < n->nres; i++)
		if (n->res[i] && (n->res[i] >= h->nuses || h->uses[n->res[i]]))
			return 0;
	return n->nres >= 1;
}

/* Which operands of n (producing rows along `axis` of its rank-r result
 * out) to slice: a bit each (at most 32 operands); 0 when n does not
 * compute row by row.  off[i]: how many leading dims operand i lacks. */
static uint32_t row_operands(const Hoist *h, const Node *n, ValueId out, int64_t axis, int32_t r, int32_t *off)
{
	const Module *m = h->m;
	if (n->domain != S_onnx || n->op == OP_GENERIC || !one_result(h, n) || n->nargs > 32)
		return 0;
	const Type *to = val((Module *)m, out)->type;
	uint32_t pick = 0;
	int elementwise = (op_info[n->op].flags & OPF_ELEMWISE) && n->op != OP_ONNX_SwiGLU;
	if (elementwise || n->op == OP_ONNX_Cast) {
		for (uint32_t i = 0; i < n->nargs; i++) {
			ValueId a = operand(n, i);
			if (!a) {
				if (n->args[i].kind != A_NONE)
					return 0;
				continue;
			}
			int32_t ra = rank_of(m, a);
			if (ra < 0 || ra > r)
				return 0;
			off[i] = r - ra;
			if (axis < off[i])
				continue;       /* broadcast: lacks the axis */
			Dim d = val((Module *)m, a)->type->dims[axis - off[i]];
			if (d.v == 1 && !d.sym)
				continue;       /* broadcast along it */
			if (!dim_same(d, to->dims[axis]))
				return 0;       /* might be 1 at run time */
			pick |= 1u << i;
		}
		return pick;
	}
	ValueId x = operand(n, 0);
	if (!x || rank_of(m, x) != r)
		return 0;
	off[0] = 0;
	switch (n->op) {
	case OP_ONNX_MatMul:
		return rank_of(m, operand(n, 1)) == 2 ? 1 : 0;
	case OP_ONNX_Softmax: case OP_ONNX_LogSoftmax: case OP_ONNX_LayerNormalization:
	case OP_ONNX_RMSNormalization: {
		int64_t a = fuse_attr_int(n, "axis", -1);
		return (a < 0 ? a + r : a) > axis ? 1 : 0;
	}
	case OP_ONNX_ReduceL1: case OP_ONNX_ReduceL2: case OP_ONNX_ReduceLogSum:
	case OP_ONNX_ReduceLogSumExp: case OP_ONNX_ReduceMax: case OP_ONNX_ReduceMean:
	case OP_ONNX_ReduceMin: case OP_ONNX_ReduceProd: case OP_ONNX_ReduceSum:
	case OP_ONNX_ReduceSumSquare:
		return reduces_elsewhere(m, n, r, axis) ? 1 : 0;
	default:
		return 0;
	}
}

/* A Slice of operand a (lacking `lead` leading dims of the result) with
 * s's Sig, before n, with s's provenance; its result. */
/* Slice(a, sig's rows along its axis, which keeps `kept` of them) before
 * `at` with the provenance of `from`, its result and constants named after
 * a + "_" + suffix; the Slice. */
static Node *new_slice(Hoist *h, Node *at, const Node *from, ValueId a, const Sig *sig, Dim kept, const char *suffix)
{
	Module *m = h->m;
	const Type *ta = val(m, a)->type;
	Dim *dims = ARENA_ARRAY(&m->arena, Dim, ta->rank);
	memcpy(dims, ta->dims, sizeof *dims * (size_t)ta->rank);
	dims[sig->axis] = kept;
	const int64_t *part[4] = { &sig->start, &sig->end, &sig->axis, &sig->step };
	static const char *const name[4] = { "start", "end", "axis", "step" };
	Node *ns = node_new_op(m, OP_ONNX_Slice, 1, 5, 0);
	ns->args[0] = fuse_value_arg(a);
	for (int i = 0; i < 4; i++) {
		char buf[32];
		snprintf(buf, sizeof buf, "%s_%s", suffix, name[i]);
		ns->args[1 + i] = fuse_value_arg(const_i64s(m, h->g, part[i], 1, a, buf));
	}
	fuse_place(m, h->g, ns, at, from, a, suffix, type_tensor(&m->arena, (DType)ta->dtype, ta->rank, dims));
	return ns;
}

static ValueId slice_operand(Hoist *h, Node *n, const Node *s, const Sig *sig, ValueId a, int32_t lead)
{
	Sig sub = *sig;
	sub.axis = sig->axis - lead;
	Node *ns = new_slice(h, n, s, a, &sub, val(h->m, s->res[0])->type->dims[sig->axis], "rows");
	note(h, ns, &sub);
	return ns->res[0];
}

/* Every read of v is a Slice of one Sig (its list): when v's producer
 * computes row by row, the Slices become one above it. */
static void hoist(Hoist *h, ValueId v)
{
	Module *m = h->m;
	Node *s = h->recs.v[h->head[v]].s;
	Sig sig = h->recs.v[h->head[v]].sig;
	int32_t off[32] = { 0 };
	if (rw_get(&h->rw, v) != v)
		return;         /* a merged Slice's result */
	/* The Slices of v are one: s, moved to just after v's definition
	 * (the top of the graph for an input or an outer value), before every
	 * reader of the others. */
	Node *n = def_of(m, v);
	uint32_t more = h->recs.v[h->head[v]].next;
	for (uint32_t i = more; i; i = h->recs.v[i].next) {
		Node *o = h->recs.v[i].s;
		rw_set(&h->rw, o->res[0], s->res[0]);
		node_remove(h->g, o);
		h->merged++;
	}
	h->recs.v[h->head[v]].next = 0;
	if (more) {
		Node *at = n && n->graph == h->g ? n->next : h->g->first;
		if (at != s) {
			node_remove(h->g, s);
			if (at)
				node_insert_before(h->g, at, s);
			else
				node_append(h->g, s);
		}
	}
	if (!n || n->graph != h->g || n->res[0] != v)
		return;
	uint32_t pick = row_operands(h, n, v, sig.axis, rank_of(m, v), off);
	if (!pick)
		return;
	/* n takes over s's result (its unread others go: their rows are gone). */
	for (uint32_t i = 0; i < n->nargs; i++)
		if (pick >> i & 1)
			n->args[i] = fuse_value_arg(slice_operand(h, n, s, &sig, operand(n, i), off[i]));
	for (uint32_t i = 1; i < n->nres; i++)
		n->res[i] = VNONE;
	n->res[0] = s->res[0];
	val(m, n->res[0])->def = n;
	val(m, n->res[0])->res = 0;
	node_remove(h->g, s);
	rewrite_count("hoist_slice", n->op == OP_ONNX_MatMul ? "matmul" : "row-wise");
}

/* n is Gather(x, c, axis) with c a constant 0-D integer, axis not x's
 * last, x read by n alone and made by a node computing its rows along the
 * axis: n becomes Squeeze(Slice(x, c, c + 1, axis), axis), the Slice's
 * Sig in *sig; 0 (n unchanged) otherwise. */
static Node *gather_row(Hoist *h, Node *n, Sig *sig)
{
	Module *m = h->m;
	ValueId x = operand(n, 0);
	int32_t r = rank_of(m, x), off[32];
	int64_t axis = fuse_attr_int(n, "axis", 0), c;
	const Tensor *t = n->nargs == 2 && operand(n, 1) ? const_tensor(m, operand(n, 1)) : NULL;
	if (n->domain != S_onnx || n->nres != 1 || !t || t->type->rank != 0 || r < 2 ||
	    !dtype_is_int((DType)t->type->dtype))
		return NULL;
	axis += axis < 0 ? r : 0;
	Node *d = def_of(m, x);
	Dim all = axis >= 0 && axis < r - 1 ? val(m, x)->type->dims[axis] : (Dim){ 0, 0 };
	if (axis < 0 || axis >= r - 1 || x >= h->nuses || h->uses[x] != 1 || !d || d->graph != h->g ||
	    d->res[0] != x || (!all.sym && all.v <= 1) || !row_operands(h, d, x, axis, r, off))
		return NULL;
	c = tensor_get_i((DType)t->type->dtype, t->data, 0);
	*sig = (Sig){ axis, c, c == -1 ? INT64_MAX : c + 1, 1 };
	Node *sl = new_slice(h, n, n, x, sig, (Dim){ 1, 0 }, "row");
	n->op = OP_ONNX_Squeeze;
	n->name = op_name_of(n->op);
	n->args = ARENA_ARRAY(&m->arena, Arg, 2);
	n->args[0] = fuse_value_arg(sl->res[0]);
	n->args[1] = sl->args[3];       /* the axis squeezed is the one sliced */
	n->nkw = 0;
	rewrite_count("hoist_slice", "gather-row");
	return sl;
}

static Status hoist_graph(const GraphVisit *gv, void *ctx)
{
	Hoist *h = ctx;
	h->g = gv->g;
	for (uint32_t i = 0; i < h->touched.n; i++) {
		ValueId v = h->touched.v[i];
		h->head[v] = h->count[v] = 0;
		h->mixed[v] = 0;
	}
	h->touched.n = 0;
	h->recs.n = 0;
	XVEC_PUSH(h->recs, ((Rec){ 0 }));
	h->work.n = 0;
	for (Node *n = gv->g->first; n; n = n->next) {
		Sig sig;
		Node *s;
		if (n->op == OP_ONNX_Slice && slice_sig(h->m, n, &sig))
			note(h, n, &sig);
		else if (n->op == OP_ONNX_Gather && (s = gather_row(h, n, &sig)))
			note(h, s, &sig);
	}
	while (h->work.n)
		hoist(h, h->work.v[--h->work.n]);
	return OK;
}

static Status apply(const GraphVisit *gv, void *ctx)
{
	Hoist *h = ctx;
	for (Node *n = gv->g->first; n; n = n->next)
		rw_apply(&h->rw, n);
	rw_apply_outputs(&h->rw, gv->g);
	return OK;
}

Status pass_hoist_slice(Module *m, const PassOptions *opt)
{
	(void)opt;
	Hoist h = { .m = m, .uses = module_use_counts(m, WALK_PROGRAM), .nuses = m->vals.n };
	module_walk(m, WALK_PROGRAM, hoist_graph, &h);
	if (h.merged)
		module_walk(m, WALK_PROGRAM, apply, &h);
	free(h.uses);
	free(h.recs.v);
	free(h.touched.v);
	free(h.work.v);
	free(h.head);
	free(h.count);
	free(h.mixed);
	rw_free(&h.rw);
	return OK;
}
