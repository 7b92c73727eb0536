/* simplify.c - local rewrites of ONNX ops that are provably no-ops or
 * chains that collapse.
 *
 *   Identity(x)                                  -> x
 *   Cast(x, to=T), CastLike(x, y)                -> x   when x is already T
 *   Reshape/Squeeze/Unsqueeze/Flatten/Expand(x)  -> x   when x's shape is
 *                                                       the result's
 *   Slice(x, starts, ends[, axes[, steps]])      -> x   when x's shape is the
 *                                                       result's and every
 *                                                       step is a constant 1
 *                                                       (`x[:, None]`'s full
 *                                                       slice)
 *   Concat(..., e, ...)                          -> Concat(...) in place, e of
 *                                                       size 0 along the axis
 *                                                       (splices at an end)
 *   Concat/Max/Min/Sum/Mean(x)                   -> x   (one operand: a copy;
 *                                                       torch.cat([x]), the
 *                                                       decompositions' Max of
 *                                                       an index list)
 *   r = Reshape(y, s), y a chain of Reshape/Squeeze/Unsqueeze/Flatten of x,
 *       s a constant without 0 entries           -> Reshape(x, s) in place
 *   Unsqueeze(Unsqueeze(x, a1), a2)              -> Unsqueeze(x, a) in place
 *                                                       (constant axes; a
 *                                                       is a2 and a1 mapped
 *                                                       past it)
 *   Transpose(Transpose(x, p1), p2)              -> Transpose(x, p1∘p2) in place
 *   Transpose(x, identity perm)                  -> x
 *   x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1,
 *   And(x, true), Or(x, false) (either order)    -> x   when x has the result's
 *                                                       shape and dtype
 *   GatherND(x, grid) of x [n0, n1] at every pair
 *       (i, j) of two aranges set side by side   -> Unsqueeze(x, the other
 *                                                       axes) in place (an
 *                                                       advanced index by
 *                                                       broadcast aranges,
 *                                                       transformers' padding
 *                                                       mask)
 *   SequenceAt(SequenceConstruct(x0..xn-1), k)   -> xk  for a constant k
 *   Dropout(x, ratio, training_mode)             -> x   in inference, or
 *                                                       with ratio 0
 *   Pad(x, pads, ...)                            -> x   every pad a
 *                                                       constant 0
 *
 * Why they hold: Reshape, Squeeze, Unsqueeze and Flatten keep the elements
 * in row-major order and change only the shape, so any chain of them from x
 * holds x's data; if the chain ends in x's own shape (and dtype) it is
 * x.  A Slice with steps of 1 takes a run of consecutive elements on each
 * axis it names; a run as long as the axis is the whole axis, in order.
 * Shapes are the same when every dim is the same known size or the
 * same symbol: a symbolic dim names one size wherever it appears, so
 * `f32[batch,16]` reshaped to `f32[batch,16]` (through a shape computed
 * from Shape(x) at run time) is x.  Reshape(y, s) with no 0 in s does not look at y's shape (-1 is
 * inferred from the element count, which the chain keeps), so it may read
 * x instead.  An Expand whose result has its input's shape broadcasts
 * nothing.
 *
 * Each graph is walked once, in order.  A replacement table by ValueId
 * rewrites every operand as the walk reaches it (as in cse.c), and a second
 * table records for each reshape-like result the value at the start of its
 * chain, so no use is ever searched for: linear time.  Replaced nodes stay
 * for dce to remove when nothing else reads them.  A value that is a graph,
 * function or subgraph output is never replaced (output names are the
 * interface); such a node may still have its operand rewritten in place,
 * keeping its name and provenance.  When the output r = op(x) reads x's
 * data and x is read by nothing else and made in the same graph, x's node
 * makes r itself and op goes (hand_outputs: `return x * 1` is one node
 * less).  Shape rules need known ranks on both
 * sides; a value without a type, or an unknown dim (`?`), is never assumed
 * to match.
 *
 * With -outline, chains are not followed into a node of another module
 * instance (its innermost scope(...) entry differs): the instance it
 * belongs to would gain an output and differ from its siblings.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "passes.h"

typedef struct Simplify {
	Module *m;
	int scoped;                 /* -outline: chains stay in one module instance */
	Rewriter rw;                /* what to read instead */
	ValueId *src;               /* by ValueId: start of its reshape chain (VNONE: itself) */
	uint8_t *is_out;            /* by ValueId: a graph, function or subgraph output */
	ValueId *keep;              /* outputs that read the same data as another value, */
	uint32_t nkeep, capkeep;    /* in pairs (output, that value): see hand_outputs */
	int64_t opset;              /* the module's default-domain opset */
	uint32_t edits;             /* replacements and nodes rewritten: with a
				     * node's fingerprint, says a rule fired (-stats) */
} Simplify;

/* ---- facts about values ---------------------------------------------- */

static const Type *tensor_type(const Simplify *s, ValueId v)
{
	const Type *t = val(s->m, v)->type;
	return t && t->kind == TY_TENSOR && t->dtype != DT_UNDEF ? t : NULL;
}

/* Same dtype and the same shape, every dim the same known size or the
 * same symbol. */
static int same_shape(const Simplify *s, ValueId a, ValueId b)
{
	const Type *ta = tensor_type(s, a), *tb = tensor_type(s, b);
	if (!ta || !tb || ta->rank < 0 || ta->dtype != tb->dtype || ta->rank != tb->rank)
		return 0;
	for (int32_t i = 0; i < ta->rank; i++)
		if (!dim_same(ta->dims[i], tb->dims[i]))
			return 0;
	return 1;
}

/* The result of a one-result node, or VNONE. */
static ValueId result(const Node *n)
{
	return n->nres == 1 ? n->res[0] : VNONE;
}

/* A constant 1-D integer shape with no 0 entry (0 copies an input dim). */
static int shape_without_zero(const Simplify *s, ValueId v)
{
	const Tensor *t = const_tensor(s->m, v);
	if (!t || !t->type || !dtype_is_int((DType)t->type->dtype) || t->type->rank != 1 ||
	    !t->data || t->type->dims[0].v < 0)
		return 0;
	for (int64_t i = 0; i < t->type->dims[0].v; i++)
		if (tensor_get_i((DType)t->type->dtype, t->data, (size_t)i) == 0)
			return 0;
	return 1;
}

/* An int attribute absent or literally 0 (a function's @ref is neither). */
static int attr_zero(const Node *n, Sym name)
{
	const Named *k = node_kw(n, name);
	return !k || ((k->val.kind == A_INT || k->val.kind == A_BOOL) && k->val.u.i == 0);
}

/* A literal list of ints, or NULL. */
static const Arg *int_list(const Node *n, Sym name)
{
	const Named *k = node_kw(n, name);
	if (!k || k->val.kind != A_LIST)
		return NULL;
	for (uint32_t i = 0; i < k->val.n; i++)
		if (k->val.u.list[i].kind != A_INT)
			return NULL;
	return &k->val;
}

/* ---- the rules --------------------------------------------------------- */

/* r reads the same data as x: later uses of r read x.  An output keeps
 * its value; the pair is noted for hand_outputs. */
static void replace(Simplify *s, ValueId r, ValueId x)
{
	if (!r || !x)
		return;
	s->edits++;
	if (!s->is_out[r]) {
		rw_set(&s->rw, r, x);
		return;
	}
	if (s->nkeep + 2 > s->capkeep) {
		s->capkeep = s->capkeep ? 2 * s->capkeep : 16;
		s->keep = xrealloc(s->keep, s->capkeep * sizeof *s->keep);
	}
	s->keep[s->nkeep++] = r;
	s->keep[s->nkeep++] = x;
}

/* Cast's result dtype is `to`, CastLike's that of its second operand; the
 * result's own type, when given, must agree. */
static void simplify_cast(Simplify *s, Node *n, ValueId x, ValueId r)
{
	const Type *tx = tensor_type(s, x), *tr = tensor_type(s, r);
	DType d = DT_UNDEF;
	if (n->op == OP_ONNX_Cast) {
		const Named *to = node_kw(n, S_to);
		if (to && to->val.kind == A_DTYPE)
			d = (DType)to->val.u.i;
		else if (to && to->val.kind == A_INT)
			d = dtype_from_onnx((int)to->val.u.i);
	} else {
		const Type *ty = tensor_type(s, operand(n, 1));
		d = ty ? (DType)ty->dtype : DT_UNDEF;
	}
	if (!tx || d == DT_UNDEF || tx->dtype != d || (val(s->m, r)->type && (!tr || tr->dtype != d)))
		return;
	replace(s, r, x);
}

/* Reshape(chain of x, s) reads x directly when s has no 0 entry. */
static void merge_reshape(Simplify *s, Node *n, ValueId y)
{
	ValueId x = s->src[y];
	if (!x || !attr_zero(n, S_allowzero) || !shape_without_zero(s, operand(n, 1)))
		return;
	n->args[0].u.v = x;
}

static ScopeEntry inner_scope(const Node *n)
{
	return n && n->prov && n->prov->nscope ? n->prov->scope[n->prov->nscope - 1] : (ScopeEntry){ 0, 0 };
}

/* n may look through the node that makes y. */
static int may_follow(const Simplify *s, const Node *n, ValueId y)
{
	const Node *d = def_of(s->m, y);
	if (!s->scoped || !d)
		return 1;
	ScopeEntry a = inner_scope(n), b = inner_scope(d);
	return a.path == b.path && a.cls == b.cls;
}

/* The constant axes of Unsqueeze u normalized against rank `rank` into
 * ax (at most 16); their count, or -1. */
static int unsqueeze_axes(const Simplify *s, const Node *u, int64_t rank, int64_t *ax)
{
	const Tensor *t = u->nargs == 2 ? const_tensor(s->m, operand(u, 1)) : NULL;
	int64_t k = t && t->type && t->data ? type_numel(t->type) : -1;
	if (k < 1 || k > 16 || t->type->dtype != DT_I64)
		return -1;
	for (int64_t i = 0; i < k; i++) {
		ax[i] = tensor_get_i(DT_I64, t->data, (size_t)i);
		ax[i] += ax[i] < 0 ? rank : 0;
		if (ax[i] < 0 || ax[i] >= rank)
			return -1;
	}
	return (int)k;
}

/* Unsqueeze(Unsqueeze(x, a1), a2) -> Unsqueeze(x, a): the result's dims
 * not in a2 are y's in order, so y's axis p is the p-th of them; a is a2
 * with a1 mapped so.  The inner node stays for dce.  Returns the value n
 * now reads. */
static ValueId merge_unsqueeze(Simplify *s, Node *n, ValueId y, ValueId r)
{
	Node *d = match_op(s->m, y, OP_ONNX_Unsqueeze);
	const Type *tr = tensor_type(s, r);
	if (!d || result(d) != y || !operand(d, 0) || !tr || tr->rank > 32)
		return y;
	int64_t a2[16], a1[16], a[32], free_[32];
	int k2 = unsqueeze_axes(s, n, tr->rank, a2), nf = 0;
	if (k2 < 0)
		return y;
	uint8_t in2[32] = { 0 };
	for (int i = 0; i < k2; i++)
		in2[a2[i]] = 1;
	for (int64_t i = 0; i < tr->rank; i++)
		if (!in2[i])
			free_[nf++] = i;
	int k1 = unsqueeze_axes(s, d, nf, a1);
	if (k1 < 0 || k1 + k2 > tr->rank)
		return y;
	uint8_t all[32] = { 0 };
	for (int i = 0; i < k2; i++)
		all[a2[i]] = 1;
	for (int i = 0; i < k1; i++)
		all[free_[a1[i]]] = 1;
	int k = 0;
	for (int64_t i = 0; i < tr->rank; i++)
		if (all[i])
			a[k++] = i;
	if (k != k1 + k2)
		return y;
	n->args[1].u.v = const_i64s(s->m, n->graph, a, k, r, "axes");
	n->args[0].u.v = operand(d, 0);
	return operand(d, 0);
}

static void simplify_reshape_like(Simplify *s, Node *n, ValueId y, ValueId r)
{
	if (n->op == OP_ONNX_Unsqueeze && may_follow(s, n, y))
		y = merge_unsqueeze(s, n, y, r);
	if (!may_follow(s, n, y)) {
		s->src[r] = y;
		if (same_shape(s, y, r))
			replace(s, r, y);
		return;
	}
	if (n->op == OP_ONNX_Reshape)
		merge_reshape(s, n, y);
	ValueId x = s->src[y] ? s->src[y] : y;
	s->src[r] = x;
	if (same_shape(s, x, r))
		replace(s, r, x);
	else if (same_shape(s, operand(n, 0), r))
		replace(s, r, operand(n, 0));
}

static int is_identity_perm(const Arg *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (p->u.list[i].u.i != (int64_t)i)
			return 0;
	return 1;
}

/* Transpose(Transpose(x, p1), p2) = Transpose(x, q), q[i] = p1[p2[i]]. */
static void simplify_transpose(Simplify *s, Node *n, ValueId y, ValueId r)
{
	const Arg *p2 = int_list(n, S_perm);
	if (!p2)
		return;
	Node *d = may_follow(s, n, y) ? match_op(s->m, y, OP_ONNX_Transpose) : NULL;
	const Arg *p1 = d && result(d) == y ? int_list(d, S_perm) : NULL;
	if (p1 && p1->n == p2->n && operand(d, 0)) {
		Arg *q = ARENA_ARRAY(&s->m->arena, Arg, p2->n);
		uint32_t i = 0;
		for (; i < p2->n; i++) {
			int64_t k = p2->u.list[i].u.i;
			if (k < 0 || k >= (int64_t)p1->n)
				break;
			q[i] = (Arg){ .kind = A_INT, .u.i = p1->u.list[k].u.i };
		}
		if (i == p2->n) {
			Named *perm = (Named *)node_kw(n, S_perm);
			perm->val.u.list = q;
			n->args[0].u.v = operand(d, 0);
			y = operand(d, 0);
		}
	}
	if (is_identity_perm(int_list(n, S_perm)))
		replace(s, r, y);
}

/* x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1, And(x, true), Or(x, false)
 * read x, when the constant broadcasts nothing (x has the result's shape
 * and dtype). */
static void simplify_identity_operand(Simplify *s, Node *n, ValueId r)
{
	double unit = n->op == OP_ONNX_Mul || n->op == OP_ONNX_Div || n->op == OP_ONNX_And ? 1.0 : 0.0;
	int commutes = n->op == OP_ONNX_Add || n->op == OP_ONNX_Mul || n->op == OP_ONNX_And || n->op == OP_ONNX_Or;
	for (uint32_t side = 0; side < (commutes ? 2u : 1u); side++) {
		ValueId x = operand(n, side), c = operand(n, 1 - side);
		if (x && c && match_const(s->m, c, unit) && same_shape(s, x, r)) {
			replace(s, r, x);
			return;
		}
	}
}

/* Pad(x, pads) with every pad a constant 0 adds nothing in any mode: x
 * itself, whatever x's shape says.  Before opset 11 pads were an
 * attribute (no such Pad is read here). */
static void simplify_zero_pad(Simplify *s, Node *n, ValueId x, ValueId r)
{
	ValueId pads = operand(n, 1);
	if (s->opset >= 11 && pads && match_const(s->m, pads, 0.0))
		replace(s, r, x);
}

/* SequenceAt(SequenceConstruct(x0, ..., xn-1), k) reads xk (k < 0 counts
 * from the end): the decompositions take lists of tensors apart this way. */
static void simplify_sequence_at(Simplify *s, Node *n, ValueId q, ValueId r)
{
	Node *d = may_follow(s, n, q) ? match_op(s->m, q, OP_ONNX_SequenceConstruct) : NULL;
	const Tensor *k = d ? const_tensor(s->m, operand(n, 1)) : NULL;
	if (!k || !k->data || !k->type || !dtype_is_int((DType)k->type->dtype) || type_numel(k->type) != 1)
		return;
	int64_t i = tensor_get_i((DType)k->type->dtype, k->data, 0);
	i += i < 0 ? (int64_t)d->nargs : 0;
	if (i >= 0 && i < (int64_t)d->nargs)
		replace(s, r, operand(d, (uint32_t)i));
}

/* Dropout(x, ratio, training_mode) is x in inference (training_mode
 * omitted or a constant false) and when the ratio is a constant 0 (the
 * mask is all true and the scale 1): a model's `F.dropout(p=0.0)`, which
 * defaults to training mode, traces as one.  The mask result, if read,
 * keeps the node. */
static void simplify_dropout(Simplify *s, Node *n)
{
	ValueId x = operand(n, 0), ratio = operand(n, 1), train = operand(n, 2);
	if (!x || !n->nres || !n->res[0] || node_kw(n, sym_cstr("ratio")) || node_kw(n, sym_cstr("is_test")))
		return;
	if (!train || match_const(s->m, train, 0.0) || (ratio && match_const(s->m, ratio, 0.0)))
		replace(s, n->res[0], x);
}

/* ---- sequences and slices ------------------------------------------------ */

/* n becomes op with a fresh argument array of nargs and nkw attributes; its
 * results, name and provenance stay. */
static void set_op(Simplify *s, Node *n, OpId op, uint32_t nargs, uint32_t nkw)
{
	s->edits++;
	n->op = op;
	n->domain = op_domain(op);
	n->name = op_name_of(op);
	n->nargs = nargs;
	n->nkw = nkw;
	n->args = ARENA_ARRAY(&s->m->arena, Arg, nargs);
	n->kw = nkw ? ARENA_ARRAY(&s->m->arena, Named, nkw) : NULL;
}

static Arg value_arg(ValueId v) { return (Arg){ .kind = A_VALUE, .u.v = v }; }

/* A new op(args[0..nargs)) before n, with n's provenance: its one result,
 * named after `like`, of type t (NULL: inference types it after the
 * pass). */
static ValueId node_before(Simplify *s, Node *n, OpId op, const ValueId *args, uint32_t nargs, ValueId like,
			   Type *t)
{
	Node *d = node_new_op(s->m, op, 1, nargs, 0);
	d->prov = n->prov;
	d->loc = n->loc;
	for (uint32_t i = 0; i < nargs; i++)
		d->args[i] = value_arg(args[i]);
	d->res[0] = value_new(s->m, value_fresh_name(s->m, val(s->m, like)->name), t, VK_NODE);
	val(s->m, d->res[0])->def = d;
	node_insert_before(n->graph, n, d);
	return d->res[0];
}

/* Unsqueeze(x, [a]) before n (a may count from the end of the result); its
 * result, or VNONE when x has no known rank. */
static ValueId unsqueeze_before(Simplify *s, Node *n, ValueId x, ValueId axes, int64_t a)
{
	const Type *tx = tensor_type(s, x);
	int32_t r = tx ? tx->rank : -1;
	int64_t p = a < 0 ? a + r + 1 : a;
	if (r < 0 || p < 0 || p > r)
		return VNONE;
	Arena *ar = &s->m->arena;
	Dim *d = ARENA_ARRAY(ar, Dim, r + 1);
	for (int32_t i = 0, j = 0; i <= r; i++)
		d[i] = i == p ? (Dim){ 1, 0 } : tx->dims[j++];
	ValueId args[2] = { x, axes };
	return node_before(s, n, OP_ONNX_Unsqueeze, args, 2, x, type_tensor(ar, (DType)tx->dtype, r + 1, d));
}

/* Concat's operands of size 0 along its axis add nothing: they go, and
 * the last one stays if all are (the result is then empty too).  Known
 * ranks on every operand and the result only. */
static void drop_empty_operands(Simplify *s, Node *n, ValueId r)
{
	const Named *ax = node_kw(n, S_axis);
	const Type *tr = tensor_type(s, r);
	if (!ax || ax->val.kind != A_INT || !tr || tr->rank <= 0)
		return;
	int64_t a = ax->val.u.i < 0 ? ax->val.u.i + tr->rank : ax->val.u.i;
	if (a < 0 || a >= tr->rank)
		return;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Type *t = n->args[i].kind == A_VALUE ? tensor_type(s, n->args[i].u.v) : NULL;
		if (!t || t->rank != tr->rank)
			return;
	}
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Dim d = tensor_type(s, n->args[i].u.v)->dims[a];
		if (!d.sym && d.v == 0 && (k || i + 1 < n->nargs))
			continue;
		n->args[k++] = n->args[i];
	}
	n->nargs = k;
}

/* ConcatFromSequence(SequenceConstruct(x0, ..., xk-1), axis, new_axis)
 * -> Concat(x0, ..., axis), or with new_axis=1 Concat(Unsqueeze(x0, [axis]),
 * ..., axis): torch.stack.  ConcatFromSequence's axis counts from the end
 * of the result when new_axis is 1, as Unsqueeze's and Concat's do.  From
 * opset 13 on (Unsqueeze's axes an input). */
static void simplify_concat_seq(Simplify *s, Node *n, ValueId q)
{
	Node *d = may_follow(s, n, q) ? match_op(s->m, q, OP_ONNX_SequenceConstruct) : NULL;
	const Named *ka = node_kw(n, S_axis), *kn = node_kw(n, sym_cstr("new_axis"));
	if (!d || !d->nargs || d->nargs > 4096 || !ka || ka->val.kind != A_INT || s->opset < 13 ||
	    (kn && (kn->val.kind != A_INT || (kn->val.u.i != 0 && kn->val.u.i != 1))))
		return;
	int64_t a = ka->val.u.i;
	uint32_t k = d->nargs;
	ValueId *xs = xmalloc(k * sizeof *xs);
	ValueId axes = VNONE;
	uint32_t i = 0;
	for (; i < k && operand(d, i); i++) {
		xs[i] = operand(d, i);
		if (!kn || !kn->val.u.i)
			continue;
		axes = axes ? axes : const_i64s(s->m, n->graph, &a, 1, result(n), "axes");
		if (!(xs[i] = unsqueeze_before(s, n, xs[i], axes, a)))
			break;
	}
	if (i == k) {
		set_op(s, n, OP_ONNX_Concat, k, 1);
		for (i = 0; i < k; i++)
			n->args[i] = value_arg(xs[i]);
		n->kw[0] = (Named){ S_axis, { .kind = A_INT, .u.i = a } };
	}
	free(xs);
}

enum { MAX_SLICE = 16 };

typedef struct SliceArgs {
	int k;                              /* axes named */
	int64_t st[MAX_SLICE], en[MAX_SLICE], ax[MAX_SLICE], sp[MAX_SLICE];
} SliceArgs;

/* The constant integer operand i of n into v (count k, or any count when
 * k < 0); its count, or -1.  An absent operand is -2. */
static int const_ints(Simplify *s, const Node *n, uint32_t i, int64_t *v, int k)
{
	if (i >= n->nargs || !operand(n, i))
		return -2;
	const Tensor *t = const_tensor(s->m, operand(n, i));
	int64_t c = t && t->type && t->data && dtype_is_int((DType)t->type->dtype) &&
		t->type->rank == 1 ? type_numel(t->type) : -1;
	if (c < 1 || c > MAX_SLICE || (k >= 0 && c != k))
		return -1;
	for (int64_t j = 0; j < c; j++)
		v[j] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)j);
	return (int)c;
}

/* Slice n's constant starts, ends, axes and steps, axes made non-negative
 * against `rank` (< 0: unknown, then negative axes fail); 0 if any is not
 * a constant. */
static int slice_args(Simplify *s, const Node *n, int32_t rank, SliceArgs *a)
{
	a->k = const_ints(s, n, 1, a->st, -1);
	if (a->k < 0 || const_ints(s, n, 2, a->en, a->k) != a->k)
		return 0;
	int c = const_ints(s, n, 3, a->ax, a->k);
	for (int i = 0; c == -2 && i < a->k; i++)
		a->ax[i] = i;
	if (c == -1)
		return 0;
	c = const_ints(s, n, 4, a->sp, a->k);
	for (int i = 0; c == -2 && i < a->k; i++)
		a->sp[i] = 1;
	if (c == -1)
		return 0;
	for (int i = 0; i < a->k; i++) {
		a->ax[i] += a->ax[i] < 0 && rank >= 0 ? rank : 0;
		if (a->ax[i] < 0 || (rank >= 0 && a->ax[i] >= rank) || !a->sp[i])
			return 0;
	}
	return 1;
}

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* A bound of a positive-step slice of an axis of size len (< 0: unknown)
 * made non-negative: negative ones count from the end.  0 if it cannot. */
static int bound(int64_t *b, int64_t len)
{
	if (*b < 0 && len < 0)
		return 0;
	if (*b < 0)
		*b = *b + len < 0 ? 0 : *b + len;
	if (len >= 0 && *b > len)
		*b = len;
	return 1;
}

/* x[s1:e1][s2:e2:k] on one axis (inner step 1, k > 0) is x[s1+s2 :
 * min(e1, s1+e2) : k] once the bounds are non-negative: the inner slice
 * is the run s1 .. min(e1, len)-1, and the outer one's elements in it sit
 * s1 further on; past the run both are empty.  len is the axis's size,
 * < 0 when unknown.  0 if the bounds cannot be made non-negative. */
static int merge_axis(int64_t *st, int64_t *en, int64_t s2, int64_t e2, int64_t len)
{
	if (!bound(st, len) || !bound(en, len))
		return 0;
	int64_t inner = len < 0 ? -1 : (*en > *st ? *en - *st : 0);
	if (!bound(&s2, inner) || !bound(&e2, inner))
		return 0;
	int64_t e = sat_add(*st, e2);
	*st = sat_add(*st, s2);
	*en = e < *en ? e : *en;
	return 1;
}

/* Slice(Slice(x, a1), a2) -> Slice(x, a): the two on different axes, or on
 * one axis with the inner step 1 and the outer step positive; constant
 * operands.  The inner node stays for dce. */
static void merge_slice(Simplify *s, Node *n, ValueId y)
{
	Node *d = may_follow(s, n, y) ? match_op(s->m, y, OP_ONNX_Slice) : NULL;
	ValueId x = d && result(d) == y ? operand(d, 0) : VNONE;
	const Type *tx = x ? tensor_type(s, x) : NULL;
	int32_t rank = tx ? tx->rank : -1;
	SliceArgs a1, a2;
	if (!x || !slice_args(s, d, rank, &a1) || !slice_args(s, n, rank, &a2))
		return;
	SliceArgs m = a1;
	for (int j = 0; j < a2.k; j++) {
		int i = 0;
		while (i < a1.k && a1.ax[i] != a2.ax[j])
			i++;
		if (i == a1.k) {
			if (m.k == MAX_SLICE)
				return;
			m.st[m.k] = a2.st[j], m.en[m.k] = a2.en[j], m.ax[m.k] = a2.ax[j], m.sp[m.k++] = a2.sp[j];
			continue;
		}
		int64_t len = rank >= 0 && !tx->dims[a1.ax[i]].sym ? tx->dims[a1.ax[i]].v : -1;
		if (a1.sp[i] != 1 || a2.sp[j] < 1 || !merge_axis(&m.st[i], &m.en[i], a2.st[j], a2.en[j], len))
			return;
		m.sp[i] = a2.sp[j];
	}
	ValueId r = result(n);
	Arg *args = ARENA_ARRAY(&s->m->arena, Arg, 5);
	args[0] = value_arg(x);
	args[1] = value_arg(const_i64s(s->m, n->graph, m.st, m.k, r, "starts"));
	args[2] = value_arg(const_i64s(s->m, n->graph, m.en, m.k, r, "ends"));
	args[3] = value_arg(const_i64s(s->m, n->graph, m.ax, m.k, r, "axes"));
	args[4] = value_arg(const_i64s(s->m, n->graph, m.sp, m.k, r, "steps"));
	n->args = args;
	n->nargs = 5;
}

/* u = Unsqueeze/Reshape chain of an i64 Range(0, n, 1) (n then slices x
 * with i64 bounds), its type all 1s but the one axis (returned) of length
 * len; *range set.  -1 otherwise. */
static int32_t arange_axis(const Simplify *s, ValueId u, Dim len, const Node **range)
{
	const Type *t = tensor_type(s, u);
	int32_t axis = -1;
	for (int32_t i = 0; t && i < t->rank; i++) {
		if (t->dims[i].sym || t->dims[i].v != 1) {
			if (axis >= 0 || !dim_same(t->dims[i], len))
				return -1;
			axis = i;
		}
	}
	for (int hops = 0; axis >= 0 && hops < 8; hops++) {
		Node *d = def_of(s->m, u);
		if (!d || d->domain != S_onnx)
			return -1;
		if (d->op == OP_ONNX_Range) {
			const Type *tr = tensor_type(s, u);
			*range = d;
			return tr && tr->rank == 1 && tr->dtype == DT_I64 && dim_same(tr->dims[0], len) &&
			       match_arange(s->m, u) && operand(d, 1) ? axis : -1;
		}
		if ((d->op != OP_ONNX_Unsqueeze && d->op != OP_ONNX_Reshape) || !operand(d, 0))
			return -1;
		u = operand(d, 0);
	}
	return -1;
}

/* x[:, :n] (axis 1) or x[:n] (axis 0) before `at`, n a 0-d or 1-element
 * value. */
static ValueId take_first(Simplify *s, Node *at, ValueId x, ValueId n, int64_t axis)
{
	static const int64_t one = 1, zero = 0;
	ValueId slice[4] = { x, const_i64s(s->m, at->graph, &zero, 1, x, "start"), VNONE,
			     const_i64s(s->m, at->graph, &axis, 1, x, "axis") };
	ValueId shape[2] = { n, const_i64s(s->m, at->graph, &one, 1, x, "one") };
	slice[2] = node_before(s, at, OP_ONNX_Reshape, shape, 2, x, NULL);
	return node_before(s, at, OP_ONNX_Slice, slice, 4, x, NULL);
}

/* GatherND(x, idx), x rank 2, idx = Concat(Unsqueeze(Expand(u0, s), [-1]),
 * Unsqueeze(Expand(u1, s), [-1]), axis = -1), u_i an arange Range(0, n_i,
 * 1) along axis k_i (k0 < k1) and 1 elsewhere: the result at (.., i at
 * k0, .., j at k1, ..) is x[i, j] for i < n0, j < n1 (GatherND refuses a
 * larger index), which is x[:n0, :n1] with unit axes inserted everywhere
 * else: n becomes that Unsqueeze (after a Slice of each dim n_i is not
 * known to be). */
static void simplify_gather_grid(Simplify *s, Node *n, ValueId x, ValueId r)
{
	const Type *tx = tensor_type(s, x), *tr = tensor_type(s, r);
	Node *cat = match_operand(s->m, n, 1, OP_ONNX_Concat);
	if (!attr_zero(n, sym_cstr("batch_dims")) || !tx || tx->rank != 2 || !tr || tr->rank < 2 || tr->rank > 16 ||
	    !cat || cat->nargs != 2)
		return;
	int64_t cax = 0;
	const Named *k = node_kw(cat, S_axis);
	if (k && k->val.kind == A_INT)
		cax = k->val.u.i;
	if (cax != -1 && cax != tr->rank)
		return;
	int32_t ax[2];
	const Node *range[2];
	for (uint32_t i = 0; i < 2; i++) {
		Node *uq = match_operand(s->m, cat, i, OP_ONNX_Unsqueeze);
		Node *ex = uq ? match_operand(s->m, uq, 0, OP_ONNX_Expand) : NULL;
		const Type *te = ex ? tensor_type(s, ex->res[0]) : NULL, *tu = ex ? tensor_type(s, operand(ex, 0)) : NULL;
		int64_t last;
		if (!ex || !te || !tu || te->rank != tr->rank || tu->rank != tr->rank ||
		    const_ints(s, uq, 1, &last, 1) != 1 || (last != -1 && last != tr->rank))
			return;
		for (int32_t d = 0; d < te->rank; d++)
			if (!dim_same(te->dims[d], tr->dims[d]))
				return;
		ax[i] = -1;
		for (int32_t d = 0; d < tu->rank && ax[i] < 0; d++)
			if (tu->dims[d].sym || tu->dims[d].v != 1)
				ax[i] = d;
		if (ax[i] < 0 || arange_axis(s, operand(ex, 0), tr->dims[ax[i]], &range[i]) != ax[i])
			return;
	}
	if (ax[0] >= ax[1])
		return;
	int64_t axes[16];
	int32_t na = 0;
	for (int32_t d = 0; d < tr->rank; d++) {
		if (d == ax[0] || d == ax[1])
			continue;
		if (tr->dims[d].sym || tr->dims[d].v != 1)
			return;
		axes[na++] = d;
	}
	for (int i = 0; i < 2; i++)
		if (!dim_same(tr->dims[ax[i]], tx->dims[i]))
			x = take_first(s, n, x, operand(range[i], 1), i);
	ValueId c = const_i64s(s->m, n->graph, axes, na, r, "axes");
	set_op(s, n, OP_ONNX_Unsqueeze, 2, 0);
	n->args[0] = value_arg(x);
	n->args[1] = value_arg(c);
}

static void simplify_node(Simplify *s, Node *n)
{
	ValueId x = operand(n, 0), r = result(n);
	if (n->domain == S_onnx && n->op == OP_ONNX_Dropout)
		simplify_dropout(s, n);
	if (n->domain != S_onnx || !x || !r)
		return;
	switch (n->op) {
	case OP_ONNX_Identity:
		replace(s, r, x);
		break;
	case OP_ONNX_Cast:
	case OP_ONNX_CastLike:
		simplify_cast(s, n, x, r);
		break;
	case OP_ONNX_Reshape:
	case OP_ONNX_Squeeze:
	case OP_ONNX_Unsqueeze:
	case OP_ONNX_Flatten:
		simplify_reshape_like(s, n, x, r);
		break;
	case OP_ONNX_Slice:
		merge_slice(s, n, x);
		x = operand(n, 0);
		if ((!operand(n, 4) || match_const(s->m, operand(n, 4), 1.0)) && same_shape(s, x, r))
			replace(s, r, x);
		break;
	case OP_ONNX_Expand:
		if (same_shape(s, x, r))
			replace(s, r, x);
		break;
	case OP_ONNX_Pad:
		simplify_zero_pad(s, n, x, r);
		break;
	case OP_ONNX_Concat:
		drop_empty_operands(s, n, r);
		x = operand(n, 0);
		/* fall through */
	case OP_ONNX_Max:
	case OP_ONNX_Min:
	case OP_ONNX_Sum:
	case OP_ONNX_Mean:
		if (n->nargs == 1 && same_shape(s, x, r))
			replace(s, r, x);
		break;
	case OP_ONNX_Transpose:
		simplify_transpose(s, n, x, r);
		break;
	case OP_ONNX_Add:
	case OP_ONNX_Sub:
	case OP_ONNX_Mul:
	case OP_ONNX_Div:
	case OP_ONNX_And:
	case OP_ONNX_Or:
		simplify_identity_operand(s, n, r);
		break;
	case OP_ONNX_GatherND:
		simplify_gather_grid(s, n, x, r);
		break;
	case OP_ONNX_SequenceAt:
		simplify_sequence_at(s, n, x, r);
		break;
	case OP_ONNX_ConcatFromSequence:
		simplify_concat_seq(s, n, x);
		break;
	default:
		break;
	}
}

/* The -stats name of the rules simplify_node applies to n's op. */
static const char *rule_name(const Node *n)
{
	switch (n->domain == S_onnx ? n->op : OP_GENERIC) {
	case OP_ONNX_Identity: return "identity";
	case OP_ONNX_Cast: case OP_ONNX_CastLike: return "cast_to_same_dtype";
	case OP_ONNX_Reshape: case OP_ONNX_Squeeze: case OP_ONNX_Unsqueeze: case OP_ONNX_Flatten: return "reshape_chain";
	case OP_ONNX_Slice: return "slice";
	case OP_ONNX_Expand: return "expand_to_same_shape";
	case OP_ONNX_Concat: return "concat";
	case OP_ONNX_Max: case OP_ONNX_Min: case OP_ONNX_Sum: case OP_ONNX_Mean: return "one_operand";
	case OP_ONNX_Transpose: return "transpose";
	case OP_ONNX_Add: case OP_ONNX_Sub: case OP_ONNX_Mul: case OP_ONNX_Div:
	case OP_ONNX_And: case OP_ONNX_Or: return "identity_operand";
	case OP_ONNX_GatherND: return "gather_nd_grid";
	case OP_ONNX_SequenceAt: return "sequence_at";
	case OP_ONNX_ConcatFromSequence: return "concat_from_sequence";
	case OP_ONNX_Dropout: return "dropout";
	default: return NULL;
	}
}

static Status simplify_graph(const GraphVisit *v, void *ctx)
{
	Simplify *s = ctx;
	for (Node *n = v->g->first; n; n = n->next) {
		rw_apply(&s->rw, n);
		const char *rule = rule_name(n);
		uint64_t fp = rule ? node_fingerprint(n) : 0;
		uint32_t ed = s->edits;
		simplify_node(s, n);
		if (rule && (s->edits != ed || node_fingerprint(n) != fp))
			rewrite_count("simplify", rule);
	}
	return OK;
}

/* An output r = op(x) that reads x's data, x an operand of that node only
 * and made by a node d of the same graph: d makes r itself and the node
 * goes (the output keeps its name, d its provenance).  Uses are counted
 * after the walk, so they include every operand it rewrote. */
static void hand_outputs(Simplify *s)
{
	if (!s->nkeep)
		return;
	uint32_t *uses = module_use_counts(s->m, WALK_PROGRAM);
	for (uint32_t i = 0; i < s->nkeep; i += 2) {
		ValueId r = s->keep[i], x = s->keep[i + 1];
		Node *n = def_of(s->m, r), *d = def_of(s->m, x);
		if (!n || !d || d == n || d->graph != n->graph || uses[x] != 1 || s->is_out[x] ||
		    !may_follow(s, n, x))
			continue;
		uint32_t k = 0;
		while (k < n->nargs && operand(n, k) != x)
			k++;
		int alone = k < n->nargs;
		for (uint32_t j = 0; j < n->nres; j++)
			alone &= n->res[j] == r || !n->res[j] || !uses[n->res[j]];
		if (!alone)
			continue;
		Value *vx = val(s->m, x), *vr = val(s->m, r);
		d->res[vx->res] = r;
		vr->def = d;
		vr->res = vx->res;
		vx->def = NULL;
		uses[x] = 0;
		node_remove(n->graph, n);
	}
	free(uses);
}

/* Graph outputs are never replaced, so they need no rewriting. */
Status pass_simplify(Module *m, const PassOptions *opt)
{
	Simplify s = { m, opt->outline, { 0 }, xcalloc(m->vals.n, sizeof(ValueId)), module_output_marks(m),
		       NULL, 0, 0, opsets_onnx(&m->opsets, 18), 0 };
	module_walk(m, WALK_PROGRAM, simplify_graph, &s);
	hand_outputs(&s);
	free(s.keep);
	rw_free(&s.rw);
	free(s.src);
	free(s.is_out);
	return OK;
}
