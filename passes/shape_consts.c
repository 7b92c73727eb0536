/* shape_consts.c - shapes computed at run time become constants when the
 * result's type already says them.
 *
 *   Reshape(x, s), s not a constant  -> Reshape(x, c)
 *       c[i] = the result's dim i when it is a known size (not 0),
 *              0 when it is the same symbol as x's dim i (0 copies it),
 *              -1 for at most one other dim (the rest of the elements)
 *   Expand(x, s), s not a constant   -> Expand(x, c)
 *       c[i] = 1 where the result's dim i is x's (aligned from the
 *              right: broadcasting keeps it), else its known size
 *
 * Why: a model exported with dynamic dims reads them with Shape, Gather,
 * Slice and Concat to build the target of every `view`, `flatten` or
 * `expand`; type inference follows those vectors (infer_dims.c), so the
 * result's type holds each dim as a size or a symbol.  A symbol names one
 * size wherever it appears, so where the result keeps x's symbolic dim at
 * the same position Reshape's 0 reproduces it, and where the result has
 * the symbol x has (right-aligned) Expand's 1 does.  With every other dim
 * known but one, -1 is that one: the element count is the same.  The shape
 * computation then has no reader left and dce removes it (a flatten of a
 * dynamic tensor is Shape, three Slices and a Concat before its Reshape).
 * Reshape with allowzero=1 is left (0 would be a size there), and so is a
 * result with a known 0 dim (0 is ambiguous in c).
 *
 * One walk over every graph in order, one node at a time: linear.  The
 * constant goes into the node's own graph, named after its result and
 * located where it is.
 */
#include <stdio.h>
#include <string.h>
#include "passes.h"

enum { MAX_SHAPE = 64 };

static const Type *ranked(Module *m, ValueId v)
{
	const Type *t = v ? val(m, v)->type : NULL;
	return t && t->kind == TY_TENSOR && t->rank >= 0 && t->rank <= MAX_SHAPE ? t : NULL;
}

static int known(Dim d) { return !d.sym && d.v >= 0; }

/* The constant target of Reshape n into c; its length, or -1. */
static int32_t reshape_target(Module *m, const Node *n, int64_t *c)
{
	const Type *tx = ranked(m, operand(n, 0)), *tr = ranked(m, n->res[0]);
	const Named *az = node_kw(n, S_allowzero);
	if (!tr || (az && !(az->val.kind == A_INT && az->val.u.i == 0)))
		return -1;
	int minus = 0;
	for (int32_t i = 0; i < tr->rank; i++) {
		Dim d = tr->dims[i];
		if (known(d) && d.v > 0)
			c[i] = d.v;
		else if (d.sym && tx && i < tx->rank && dim_same(d, tx->dims[i]))
			c[i] = 0;
		else if (!known(d) && !minus++)
			c[i] = -1;
		else
			return -1;
	}
	return tr->rank;
}

/* The constant target of Expand n into c; its length, or -1. */
static int32_t expand_target(Module *m, const Node *n, int64_t *c)
{
	const Type *tx = ranked(m, operand(n, 0)), *tr = ranked(m, n->res[0]);
	if (!tx || !tr || tx->rank > tr->rank)
		return -1;
	int32_t lead = tr->rank - tx->rank;
	for (int32_t i = 0; i < tr->rank; i++) {
		Dim d = tr->dims[i];
		if (i >= lead && dim_same(d, tx->dims[i - lead]))
			c[i] = 1;
		else if (known(d))
			c[i] = d.v;
		else
			return -1;
	}
	return tr->rank;
}

static void shape_node(Module *m, Graph *g, Node *n)
{
	if (n->domain != S_onnx || (n->op != OP_ONNX_Reshape && n->op != OP_ONNX_Expand) ||
	    n->nargs != 2 || n->nres != 1 || !n->res[0] || !operand(n, 0) || !operand(n, 1) ||
	    const_tensor(m, operand(n, 1)))
		return;
	int64_t c[MAX_SHAPE];
	int32_t k = n->op == OP_ONNX_Reshape ? reshape_target(m, n, c) : expand_target(m, n, c);
	if (k < 0)
		return;
	n->args[1] = (Arg){ .kind = A_VALUE, .u.v = const_i64s(m, g, c, k, n->res[0], "shape") };
}

static Status shape_graph(const GraphVisit *v, void *ctx)
{
	Module *m = ctx;
	for (Node *n = v->g->first; n; n = n->next)
		shape_node(m, v->g, n);
	return OK;
}

Status pass_shape_consts(Module *m, const PassOptions *opt)
{
	(void)opt;
	return module_walk(m, WALK_PROGRAM, shape_graph, m);
}
