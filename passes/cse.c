/* cse.c - common subexpression elimination.
 *
 * Two nodes are the same computation when they call the same op with
 * identical arguments and attributes (arg_identical, after the merges made
 * so far); the later one's results are then read from the earlier one.
 * Each graph is walked once, in order, with a hash table of the nodes kept
 * so far; a replacement table by ValueId rewrites every use as the walk
 * reaches it, so no use is ever searched for: linear time.
 *
 * Not merged: nodes with side effects or in-place semantics, ops outside
 * the registry in domains other than onnx (they may have effects), nodes
 * with subgraph arguments, nodes with no results, and nodes with a result
 * that is a graph output (output names are the model's interface).  The
 * kept node keeps its own provenance.
 */
#include <stdlib.h>
#include <string.h>
#include "passes.h"

typedef struct Cse {
	Module *m;
	ValueId *repl;              /* by ValueId: what to read instead (VNONE: itself) */
	uint8_t *is_out;            /* by ValueId: a graph or function output */
} Cse;

typedef struct Table { Node **slot; uint64_t *hash; uint32_t n, cap; } Table;

static void cse_graph(Cse *c, Graph *g);

static void rewrite(Cse *c, Arg *a)
{
	if (a->kind == A_VALUE && c->repl[a->u.v])
		a->u.v = c->repl[a->u.v];
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			rewrite(c, &a->u.list[i]);
	else if (a->kind == A_GRAPH)
		cse_graph(c, a->u.g);
}

static int mergeable(const Cse *c, const Node *n)
{
	if (n->nres == 0 || node_has_flag(n, OPF_SIDE_EFFECT | OPF_INPLACE))
		return 0;
	if (n->op == OP_GENERIC && n->domain != dom_onnx())
		return 0;
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i] && c->is_out[n->res[i]])
			return 0;
	return !node_has_subgraph(n);
}

static uint64_t node_hash(const Node *n)
{
	uint64_t h = ((uint64_t)n->domain << 32 | n->name) * 0x9e3779b97f4a7c15ull ^ n->nres;
	for (uint32_t i = 0; i < n->nargs; i++)
		h = (h ^ arg_hash(&n->args[i])) * 0xc4ceb9fe1a85ec53ull;
	for (uint32_t i = 0; i < n->nkw; i++)
		h = (h ^ n->kw[i].name ^ arg_hash(&n->kw[i].val)) * 0xc4ceb9fe1a85ec53ull;
	return h;
}

static int same_node(const Node *a, const Node *b)
{
	if (a->domain != b->domain || a->name != b->name || a->nres != b->nres || a->nargs != b->nargs ||
	    a->nkw != b->nkw)
		return 0;
	for (uint32_t i = 0; i < a->nres; i++)
		if (b->res[i] && !a->res[i])
			return 0;       /* b needs a result a left out */
	for (uint32_t i = 0; i < a->nargs; i++)
		if (!arg_identical(&a->args[i], &b->args[i]))
			return 0;
	for (uint32_t i = 0; i < a->nkw; i++)
		if (a->kw[i].name != b->kw[i].name || !arg_identical(&a->kw[i].val, &b->kw[i].val))
			return 0;
	return 1;
}

/* Returns the earlier node that computes the same as n, or adds n. */
static Node *table_find_or_add(Table *t, Node *n)
{
	if ((t->n + 1) * 2 > t->cap) {
		Table old = *t;
		t->cap = old.cap ? old.cap * 2 : 256;
		t->slot = calloc(t->cap, sizeof *t->slot);
		t->hash = calloc(t->cap, sizeof *t->hash);
		if (!t->slot || !t->hash)
			ONNXC_BUG("out of memory");
		t->n = 0;
		for (uint32_t i = 0; i < old.cap; i++)
			if (old.slot[i])
				table_find_or_add(t, old.slot[i]);
		free(old.slot);
		free(old.hash);
	}
	uint64_t h = node_hash(n);
	uint32_t i = (uint32_t)h & (t->cap - 1);
	for (; t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (t->hash[i] == h && same_node(t->slot[i], n))
			return t->slot[i];
	t->slot[i] = n;
	t->hash[i] = h;
	t->n++;
	return n;
}

static void cse_graph(Cse *c, Graph *g)
{
	Table t = { 0 };
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		for (uint32_t i = 0; i < n->nargs; i++)
			rewrite(c, &n->args[i]);
		for (uint32_t i = 0; i < n->nkw; i++)
			rewrite(c, &n->kw[i].val);
		if (!mergeable(c, n))
			continue;
		Node *first = table_find_or_add(&t, n);
		if (first == n)
			continue;
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i])
				c->repl[n->res[i]] = first->res[i];
		node_remove(g, n);
	}
	free(t.slot);
	free(t.hash);
}

int pass_cse(Module *m, const PassOptions *opt)
{
	(void)opt;
	Cse c = { m, calloc(m->vals.n, sizeof(ValueId)), module_output_marks(m) };
	if (!c.repl)
		ONNXC_BUG("out of memory");
	for (uint32_t i = 0; i < m->graphs.n; i++)
		cse_graph(&c, m->graphs.v[i]);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		cse_graph(&c, m->funcs.v[i]->body);
	free(c.repl);
	free(c.is_out);
	return 0;
}
