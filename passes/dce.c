/* dce.c - dead code elimination.
 *
 * A node is live if it has side effects, if it has no results (it exists
 * for its effect, e.g. an assertion), or if one of its results is used by
 * a live node or returned.  Use counts are computed once; removing a dead
 * node decrements the counts of its operands, and the walk goes backwards
 * so one pass over each graph removes whole dead chains: linear time.
 * Subgraphs are walked too; values they capture count as uses. */
#include <stdlib.h>
#include "passes.h"

typedef struct Dce { Module *m; uint32_t *uses; } Dce;

static void count(ValueId v, void *ctx) { ((Dce *)ctx)->uses[v]++; }
static void uncount(ValueId v, void *ctx) { ((Dce *)ctx)->uses[v]--; }

static void count_graph(Dce *d, Graph *g, void (*f)(ValueId, void *));

static void count_arg(Dce *d, const Arg *a, void (*f)(ValueId, void *))
{
	if (a->kind == A_GRAPH)
		count_graph(d, a->u.g, f);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			count_arg(d, &a->u.list[i], f);
	else
		arg_each_value(a, f, d);
}

static void count_node(Dce *d, Node *n, void (*f)(ValueId, void *))
{
	for (uint32_t i = 0; i < n->nargs; i++)
		count_arg(d, &n->args[i], f);
	for (uint32_t i = 0; i < n->nkw; i++)
		count_arg(d, &n->kw[i].val, f);
}

static void count_graph(Dce *d, Graph *g, void (*f)(ValueId, void *))
{
	for (Node *n = g->first; n; n = n->next)
		count_node(d, n, f);
	for (uint32_t i = 0; i < g->nout; i++)
		f(g->out[i], d);
}

static int dead(Dce *d, const Node *n)
{
	if (n->nres == 0 || node_has_flag(n, OPF_SIDE_EFFECT | OPF_INPLACE))
		return 0;
	if (n->domain != dom_onnx() && n->op == OP_GENERIC)
		return 0;               /* unknown ops may have effects */
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i] && d->uses[n->res[i]])
			return 0;
	return 1;
}

static void sweep(Dce *d, Graph *g)
{
	for (Node *n = g->last, *prev; n; n = prev) {
		prev = n->prev;
		if (dead(d, n)) {
			count_node(d, n, uncount);
			node_remove(g, n);
		}
	}
}

static void sweep_all(Dce *d, Graph *g);

static void sweep_arg(Dce *d, const Arg *a)
{
	if (a->kind == A_GRAPH)
		sweep_all(d, a->u.g);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			sweep_arg(d, &a->u.list[i]);
}

/* Unused params, buffers and constants go too. */
static void sweep_inits(Dce *d, Graph *g)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (d->uses[g->inits.v[i]])
			g->inits.v[k++] = g->inits.v[i];
	g->inits.n = k;
}

/* Outer graph first: a node removed there takes its subgraphs' uses with
 * it; then each surviving node's subgraphs. */
static void sweep_all(Dce *d, Graph *g)
{
	sweep(d, g);
	sweep_inits(d, g);
	for (Node *n = g->first; n; n = n->next) {
		for (uint32_t i = 0; i < n->nargs; i++)
			sweep_arg(d, &n->args[i]);
		for (uint32_t i = 0; i < n->nkw; i++)
			sweep_arg(d, &n->kw[i].val);
	}
}

int pass_dce(Module *m, const PassOptions *opt)
{
	(void)opt;
	Dce d = { m, calloc(m->vals.n, sizeof(uint32_t)) };
	if (!d.uses)
		ONNXC_BUG("out of memory");
	for (uint32_t i = 0; i < m->graphs.n; i++)
		count_graph(&d, m->graphs.v[i], count);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		count_graph(&d, m->funcs.v[i]->body, count);
	for (uint32_t i = 0; i < m->graphs.n; i++)
		sweep_all(&d, m->graphs.v[i]);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		sweep_all(&d, m->funcs.v[i]->body);
	free(d.uses);
	return 0;
}
