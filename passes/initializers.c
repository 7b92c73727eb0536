/* initializers.c - onnx::Constant nodes of a top-level graph become `const`
 * values of that graph (ONNX initializers).
 *
 *   %c = onnx::Constant(value = tensor(...))     -> const %c = tensor(...)
 *
 * An initializer and a Constant node hold the same tensor under the same
 * name, and ONNX Runtime turns Constant nodes into initializers when it
 * loads a model, so the program computes the same values; the file has one
 * node less for each, which is what a reader of the graph (and a node
 * count) sees.  fold leaves its small results (up to 1 KB) as Constant
 * nodes and decompositions write Constant nodes; at -O2 this runs last in
 * the fusion group, so cse then merges equal initializers.
 *
 * Left alone: a Constant whose result is an output of its graph (an
 * initializer named as an output is not a computed value ONNX Runtime
 * accepts everywhere), one written with another attribute than `value`
 * (value_float, value_ints, ...: fold turns those into `value` when it
 * reads them), and the Constants of subgraphs, function bodies and
 * decompositions (the writer writes a function's constants as Constant
 * nodes anyway).  With -outline nothing changes: a module's constants
 * stay Constant nodes of its instances, so outline keeps them in the
 * function's body instead of passing them in as inputs.
 *
 * Provenance: the value keeps the node's location and provenance
 * (value_to_const), as fold's large results do; the writer puts the
 * provenance on the initializer's metadata_props.  One walk over each top-level graph,
 * with a bitmap of its outputs: linear time. */
#include <stdlib.h>
#include "passes.h"

typedef struct Inits {
	Module *m;
	uint8_t *is_out;            /* by ValueId: outputs of the graph walked */
} Inits;

/* n's `value` tensor when n is a Constant written with it alone. */
static Tensor *value_tensor(const Node *n)
{
	if (n->op != OP_ONNX_Constant || n->nkw != 1 || n->nres != 1 || !n->res[0])
		return NULL;
	const Named *k = node_kw(n, S_value);
	return k && k->val.kind == A_TENSOR && k->val.u.t && k->val.u.t->type ? k->val.u.t : NULL;
}

static void to_init(Inits *s, Graph *g, Node *n, Tensor *t)
{
	value_to_const(s->m, g, n, 0, t);
	node_remove(g, n);
}

static Status inits_graph(const GraphVisit *v, void *ctx)
{
	Inits *s = ctx;
	Graph *g = v->g;
	if (v->depth || v->func || v->decomp)
		return OK;
	for (uint32_t i = 0; i < g->nout; i++)
		s->is_out[g->out[i]] = 1;
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		Tensor *t = value_tensor(n);
		if (t && !s->is_out[n->res[0]])
			to_init(s, g, n, t);
	}
	for (uint32_t i = 0; i < g->nout; i++)
		s->is_out[g->out[i]] = 0;
	return OK;
}

Status pass_initializers(Module *m, const PassOptions *opt)
{
	if (opt->outline)
		return OK;
	Inits s = { m, xcalloc(m->vals.n + 1, 1) };
	module_walk(m, WALK_PROGRAM, inits_graph, &s);
	free(s.is_out);
	return OK;
}
