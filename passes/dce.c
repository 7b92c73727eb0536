/* dce.c - dead code elimination.
 *
 * A node is live if it has side effects, if it has no results (it exists
 * for its effect, e.g. an assertion), or if one of its results is used by
 * a live node or returned.  A random op (OPF_RANDOM) nothing reads is dead
 * like any other: drawing values no one reads changes no result.  Use counts are computed once; removing a dead
 * node decrements the counts of its operands, and the walk goes backwards
 * so one pass over each graph removes whole dead chains: linear time.
 * Subgraphs are walked too; values they capture count as uses.  A live
 * ONNX node keeps its required results and loses the optional ones nothing
 * reads. */
#include <stdlib.h>
#include "passes.h"

typedef struct Dce { Module *m; uint32_t *uses; } Dce;

static void uncount(ValueId v, void *ctx) { ((Dce *)ctx)->uses[v]--; }

static Status uncount_graph(const GraphVisit *v, void *ctx)
{
	graph_each_use(v->g, uncount, ctx);
	return OK;
}

/* A removed node's subgraphs take their uses with them. */
static void uncount_subgraph(Graph *g, void *ctx) { graph_walk(g, uncount_graph, ctx); }

static int dead(Dce *d, const Node *n)
{
	if (n->nres == 0 || node_has_flag(n, OPF_SIDE_EFFECT | OPF_INPLACE))
		return 0;
	if (n->domain != S_onnx && n->op == OP_GENERIC)
		return 0;               /* unknown ops may have effects */
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i] && d->uses[n->res[i]])
			return 0;
	return 1;
}

/* An optional result of a registry ONNX op that nothing reads is left out
 * (`_`): MaxPool without its indices, for one, is a cheaper kernel.  The
 * results of If, Loop and Scan pair with their subgraphs' outputs by
 * position, and a variadic op's (Split's) count is its meaning (Split's
 * `split` has one length per result), so they all stay. */
static void drop_unused_results(const Dce *d, Node *n)
{
	if (n->domain != S_onnx || n->op == OP_GENERIC || node_has_subgraph(n) ||
	    op_info[n->op].max_out < 0)
		return;
	for (uint32_t i = (uint32_t)op_info[n->op].min_out; i < n->nres; i++)
		if (n->res[i] && !d->uses[n->res[i]])
			n->res[i] = VNONE;
}

/* Unused params, buffers and constants go too.  The walk visits a graph
 * before its subgraphs and only those of nodes still there, so a node
 * removed here takes its subgraphs' uses with it before they are swept. */
static Status sweep(const GraphVisit *v, void *ctx)
{
	Dce *d = ctx;
	Graph *g = v->g;
	for (Node *n = g->last, *prev; n; n = prev) {
		prev = n->prev;
		if (dead(d, n)) {
			node_each_use(n, uncount, d);
			node_each_subgraph(n, uncount_subgraph, d);
			node_remove(g, n);
		} else {
			drop_unused_results(d, n);
		}
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (d->uses[g->inits.v[i]])
			g->inits.v[k++] = g->inits.v[i];
	g->inits.n = k;
	return OK;
}

Status pass_dce(Module *m, const PassOptions *opt)
{
	(void)opt;
	Dce d = { m, module_use_counts(m, WALK_PROGRAM) };
	module_walk(m, WALK_PROGRAM, sweep, &d);
	free(d.uses);
	return OK;
}
