/* walk.c - visiting every graph of a module.
 *
 * The one place that knows where graphs live: the module's graphs,
 * function bodies and decomposition bodies, and graph-valued attributes of
 * nodes (alone or in lists, at any depth).  A pass that walks with
 * module_walk cannot miss a subgraph.
 *
 * The stack is explicit so that deep nesting in a hostile model costs heap,
 * not C stack.  Children are pushed in reverse so they pop in node order. */
#include <stdlib.h>
#include "ir.h"

typedef VEC(GraphVisit) Stack;

static void arg_each_graph(const Arg *a, void (*f)(Graph *, void *), void *ctx)
{
	if (a->kind == A_GRAPH)
		f(a->u.g, ctx);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			arg_each_graph(&a->u.list[i], f, ctx);
}

void node_each_subgraph(const Node *n, void (*f)(Graph *, void *), void *ctx)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		arg_each_graph(&n->args[i], f, ctx);
	for (uint32_t i = 0; i < n->nkw; i++)
		arg_each_graph(&n->kw[i].val, f, ctx);
}

static void arg_map_graphs(Arg *a, Graph *(*f)(Graph *, void *), void *ctx)
{
	if (a->kind == A_GRAPH)
		a->u.g = f(a->u.g, ctx);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			arg_map_graphs(&a->u.list[i], f, ctx);
}

void node_map_subgraphs(Node *n, Graph *(*f)(Graph *g, void *ctx), void *ctx)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		arg_map_graphs(&n->args[i], f, ctx);
	for (uint32_t i = 0; i < n->nkw; i++)
		arg_map_graphs(&n->kw[i].val, f, ctx);
}

typedef struct Push {
	Stack *st;
	GraphVisit child;           /* the fields every child shares */
} Push;

static void push_child(Graph *g, void *ctx)
{
	Push *p = ctx;
	GraphVisit v = p->child;
	v.g = g;
	XVEC_PUSH(*p->st, v);
}

/* The subgraphs of v's graph, pushed so they pop in node order. */
static void push_children(Stack *st, const GraphVisit *v)
{
	uint32_t first = st->n;
	Push p = { st, { NULL, v->g, NULL, v->func, v->decomp, v->depth + 1 } };
	for (Node *n = v->g->first; n; n = n->next)
		if (node_has_subgraph(n)) {
			p.child.owner = n;
			node_each_subgraph(n, push_child, &p);
		}
	for (uint32_t i = first, j = st->n; i + 1 < j; i++, j--) {
		GraphVisit t = st->v[i];
		st->v[i] = st->v[j - 1];
		st->v[j - 1] = t;
	}
}

static Status run(Stack *st, GraphFn f, void *ctx)
{
	while (st->n) {
		GraphVisit v = st->v[--st->n];
		if (f(&v, ctx) != OK)
			return FAILED;
		push_children(st, &v);
	}
	return OK;
}

static Status walk_one(Stack *st, GraphVisit top, GraphFn f, void *ctx)
{
	st->n = 0;
	XVEC_PUSH(*st, top);
	return run(st, f, ctx);
}

Status graph_walk(Graph *g, GraphFn f, void *ctx)
{
	Stack st = { 0 };
	Status s = walk_one(&st, (GraphVisit){ .g = g }, f, ctx);
	free(st.v);
	return s;
}

Status module_walk(Module *m, unsigned what, GraphFn f, void *ctx)
{
	Stack st = { 0 };
	Status s = OK;
	for (uint32_t i = 0; s == OK && (what & WALK_GRAPHS) && i < m->graphs.n; i++)
		s = walk_one(&st, (GraphVisit){ .g = m->graphs.v[i] }, f, ctx);
	for (uint32_t i = 0; s == OK && (what & WALK_FUNCS) && i < m->funcs.n; i++)
		s = walk_one(&st, (GraphVisit){ .g = m->funcs.v[i]->body, .func = m->funcs.v[i] }, f, ctx);
	for (uint32_t i = 0; s == OK && (what & WALK_DECOMPS) && i < m->decomps.n; i++)
		s = walk_one(&st, (GraphVisit){ .g = m->decomps.v[i]->body, .decomp = m->decomps.v[i] }, f, ctx);
	free(st.v);
	return s;
}
