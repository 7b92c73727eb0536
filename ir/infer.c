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
 *
 * This file holds the entry points and the walk; infer_onnx.c the
 * dispatcher, infer_ops.c the op-family rules, infer_shape.c broadcasting
 * and shape arithmetic, infer_attrs.c attributes and constant operands,
 * infer_dims.c the dim vectors; infer.h what they share.
 */
#include <stdlib.h>
#include <string.h>
#include "infer.h"

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

void infer_graph(Infer *I, Graph *g)
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
	if (what & WALK_FUNCS)
		infer_funcs(&I);
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
