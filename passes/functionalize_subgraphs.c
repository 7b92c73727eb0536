/* functionalize_subgraphs.c - subgraphs (If, Loop and the others) as scopes of their own (see functionalize.c). */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

/* A subgraph is walked as a scope of its own, when the walk reaches the
 * node that holds it: its in-place ops become functional, and its reads of
 * the graphs around it see their latest versions (a stale view is derived
 * again inside it).  ONNX subgraphs cannot write into outer values, so a
 * mutation of an outer storage inside one becomes a new output of the
 * subgraph and a new result of the node: an If's other branch returns the
 * storage unchanged; a Loop carries the storage as one more loop value,
 * which the body reads instead of the outer value.  The outer state the
 * scope changed is restored when it ends (touch saves it), so each
 * subgraph costs its own size. */

static int first_time(Functionalize *f, ValueId v)
{
	if (f->mark[v] == f->epoch)
		return 0;
	f->mark[v] = f->epoch;
	return 1;
}

/* Outer roots a scope mutated, with their latest versions inside it. */
typedef struct Escapes { uint32_t n; ValueId *root, *ver; } Escapes;

/* Walks subgraph s, which first sees outer root pre[i] as value
 * param[i] (a Loop's carried copy); *out gets the outer roots s mutated. */
static void walk_sub(Functionalize *f, Graph *s, const ValueId *pre, const ValueId *param,
		     uint32_t npre, Escapes *out)
{
	Graph *outer = f->g;
	uint32_t start = f->log.n;
	f->g = s;
	f->depth++;
	for (uint32_t i = 0; i < npre; i++)
		fz_write_back(f, pre[i], param[i], NULL, s->first);
	for (Node *n = s->first, *next; n; n = next) {
		next = n->next;
		fz_visit(f, n, next);
	}
	for (uint32_t i = 0; i < s->nout; i++)
		if (s->out[i])
			s->out[i] = fz_current(f, fz_canon(f, s->out[i]), NULL);
	out->n = 0;
	out->root = ARENA_ARRAY(&f->m->arena, ValueId, f->log.n - start + 1);
	out->ver = ARENA_ARRAY(&f->m->arena, ValueId, f->log.n - start + 1);
	f->epoch++;
	for (uint32_t i = start; i < f->log.n; i++) {      /* the first save is the oldest */
		ValueId v = f->log.v[i].v;
		if (!first_time(f, v) || f->st[v].base || f->st[v].ver == f->log.v[i].old.ver ||
		    graph_defines(f->m, s, v))
			continue;
		out->root[out->n] = v;
		out->ver[out->n++] = fz_current(f, v, NULL);
	}
	for (uint32_t i = f->log.n; i-- > start;)
		f->st[f->log.v[i].v] = f->log.v[i].old;
	f->log.n = start;
	f->depth--;
	f->g = outer;
}

/* v as an output of subgraph g: through an Identity when g does not
 * define it (ONNX subgraphs may not return an outer value as is). */
static ValueId own_value(Functionalize *f, Graph *g, ValueId v, const Node *like)
{
	if (graph_defines(f->m, g, v))
		return v;
	Graph *keep = f->g;
	f->g = g;
	Node *n = fz_make(f, OP_ONNX_Identity, 1, 0, like, NULL, val(f->m, v)->name, val(f->m, v)->type);
	n->args[0] = fz_varg(v);
	f->g = keep;
	return n->res[0];
}

/* Result `at` of n, inserted, is root's new version after n. */
static ValueId insert_result(Functionalize *f, Node *n, uint32_t at, ValueId root)
{
	ValueId *res = ARENA_ARRAY(&f->m->arena, ValueId, n->nres + 1);
	memcpy(res, n->res, at * sizeof *res);
	memcpy(res + at + 1, n->res + at, (n->nres - at) * sizeof *res);
	n->res = res;
	n->nres++;
	for (uint32_t i = at + 1; i < n->nres; i++)
		if (n->res[i])
			val(f->m, n->res[i])->res = i;
	return fz_new_result(f, n, at, val(f->m, root)->name, val(f->m, root)->type);
}

static void insert_output(Functionalize *f, Graph *g, uint32_t at, ValueId v)
{
	fz_push_output_to(f, g, v);
	for (uint32_t i = g->nout - 1; i > at; i--) {
		g->out[i] = g->out[i - 1];
		g->out_decl[i] = g->out_decl[i - 1];
	}
	g->out[at] = v;
	g->out_decl[at] = val(f->m, v)->type;
}

static Graph *graph_kw(const Node *n, Sym name)
{
	const Named *k = node_kw(n, name);
	return k && k->val.kind == A_GRAPH ? k->val.u.g : NULL;
}

/* Both branches return each outer root either branch mutated (the other
 * its version from before the If); the If's new results are the roots'
 * versions after it. */
static int sub_if(Functionalize *f, Node *n, Node *next)
{
	Graph *g[2] = { graph_kw(n, f->s_then), graph_kw(n, f->s_else) };
	Escapes e[2] = { 0 };
	for (int k = 0; k < 2; k++)
		if (g[k])
			walk_sub(f, g[k], NULL, NULL, 0, &e[k]);
	if (!g[0] || !g[1])
		return e[0].n || e[1].n ? fz_fail(f, n, "If without both branches mutates an outer value") : 0;
	f->epoch++;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < e[k].n; i++) {
			ValueId c = e[k].root[i];
			if (!first_time(f, c))
				continue;
			for (int b = 0; b < 2; b++) {
				ValueId v = fz_current(f, c, n);
				for (uint32_t j = 0; j < e[b].n; j++)
					if (e[b].root[j] == c)
						v = e[b].ver[j];
				fz_push_output_to(f, g[b], own_value(f, g[b], v, n));
			}
			fz_write_back(f, c, insert_result(f, n, n->nres, c), n, next);
		}
	return 0;
}

typedef VEC(ValueId) Ids;

/* Context of the walks over a node's subgraphs (node_each_subgraph). */
typedef struct Scan {
	Functionalize *f;
	Ids *roots;                 /* find_writes: the outer roots written */
	const Node *at;             /* sub_other: the node holding them */
} Scan;

/* Values defined in g and the subgraphs in it get the current mark. */
static void mark_inside(Graph *g, void *ctx)
{
	Functionalize *f = ((Scan *)ctx)->f;
	for (uint32_t i = 0; i < g->nin; i++)
		if (g->in[i] < f->nst)
			f->mark[g->in[i]] = f->epoch;
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (g->inits.v[i] < f->nst)
			f->mark[g->inits.v[i]] = f->epoch;
	for (const Node *n = g->first; n; n = n->next) {
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i] && n->res[i] < f->nst)
				f->mark[n->res[i]] = f->epoch;
		node_each_subgraph(n, mark_inside, ctx);
	}
}

/* The value an in-place, out= or copy_ node writes into (the second
 * output of a named-output node in *second); 0 otherwise. */
static ValueId write_target(const Node *n, ValueId *second)
{
	*second = VNONE;
	if (n->domain != S_aten)
		return 0;
	const OutVariant *ov = fz_out_variant_of(n);
	uint32_t at;
	if (ov) {
		*second = fz_named_out(n, ov, 1, &at);
		return fz_named_out(n, ov, 0, &at);
	}
	const Named *o = node_kw(n, S_out);
	if (o)
		return o->val.kind == A_VALUE ? o->val.u.v : 0;
	Sym fname = fz_functional_name(n->name);
	if (!fname || fz_shape_view(fname) != OP_GENERIC || !n->nargs || n->args[0].kind != A_VALUE)
		return 0;
	return n->args[0].u.v;
}

/* Adds to roots the outer root write target t stands for, if any. */
static void outer_root(Functionalize *f, ValueId t, Ids *roots)
{
	ValueId second;
	while (t && t < f->nst && f->mark[t] == f->epoch) {
		const Value *x = val(f->m, t);
		const Node *d = x->kind == VK_NODE ? x->def : NULL;
		int alias = d && d->nargs && d->args[0].kind == A_VALUE &&
			    (fz_is_view(d) || write_target(d, &second) == d->args[0].u.v);
		t = alias ? d->args[0].u.v : 0;
	}
	if (!t || t >= f->nst)
		return;
	ValueId c = fz_canon(f, t);
	ValueId root = fz_st(f, c)->base ? fz_st(f, c)->root : c;
	if (f->mark[root] != f->epoch + 1) {
		f->mark[root] = f->epoch + 1;
		VEC_PUSH(&f->m->arena, *roots, root);
	}
}

/* The outer roots that nodes of g (and of its subgraphs) write into:
 * a target made inside (a view, an in-place result) is followed to its
 * first argument until it is an outer value.  Values inside carry the
 * current mark; roots found get mark epoch + 1. */
static void find_writes(Graph *g, void *ctx)
{
	Functionalize *f = ((Scan *)ctx)->f;
	Ids *roots = ((Scan *)ctx)->roots;
	for (const Node *n = g->first; n; n = n->next) {
		node_each_subgraph(n, find_writes, ctx);
		ValueId t[2];
		t[0] = write_target(n, &t[1]);
		for (int k = 0; k < 2; k++)
			outer_root(f, t[k], roots);
	}
}

/* A Loop body that writes into outer roots gets each as one more carried
 * value: a body input read instead of the root, a body output after the
 * other carried ones, a Loop input (the root's version before) and a
 * result (its version after). */
static int sub_loop(Functionalize *f, Node *n, Node *next)
{
	Graph *b = graph_kw(n, f->s_body);
	if (!b || n->nargs < 2)
		return fz_fail(f, n, "Loop without a body");
	Ids roots = { 0 };
	Scan scan = { f, &roots, NULL };
	f->epoch++;
	mark_inside(b, &scan);
	find_writes(b, &scan);
	f->epoch++;                 /* past the roots' marks */
	uint32_t ncar = n->nargs - 2;
	if (b->nout < 1 + ncar || n->nres < ncar)
		return fz_fail(f, n, "Loop body outputs and results do not match its carried values");
	ValueId *param = ARENA_ARRAY(&f->m->arena, ValueId, roots.n + 1);
	ValueId *init = ARENA_ARRAY(&f->m->arena, ValueId, roots.n + 1);
	ValueId *in = ARENA_ARRAY(&f->m->arena, ValueId, b->nin + roots.n + 1);
	memcpy(in, b->in, b->nin * sizeof *in);
	for (uint32_t i = 0; i < roots.n; i++) {
		Value *r = val(f->m, roots.v[i]);
		init[i] = fz_current(f, roots.v[i], n);
		param[i] = value_new(f->m, value_fresh_name(f->m, r->name), r->type, VK_INPUT);
		in[b->nin + i] = param[i];
	}
	b->in = in;
	b->nin += roots.n;
	Escapes e;
	walk_sub(f, b, roots.v, param, roots.n, &e);
	if (e.n != roots.n)
		return fz_fail(f, n, "a Loop body writes into an outer value through an alias the pass "
			       "cannot follow");
	Arg *args = ARENA_ARRAY(&f->m->arena, Arg, n->nargs + roots.n);
	memcpy(args, n->args, n->nargs * sizeof *args);
	n->args = args;
	for (uint32_t i = 0; i < roots.n; i++) {
		n->args[n->nargs++] = fz_varg(init[i]);
		insert_output(f, b, 1 + ncar + i, own_value(f, b, e.ver[i], n));
		fz_write_back(f, roots.v[i], insert_result(f, n, ncar + i, roots.v[i]), n, next);
	}
	return 0;
}

/* Any other node with subgraphs (Scan, a custom op): they are
 * functionalized, but may not write into outer values. */
static void sub_other(Graph *g, void *ctx)
{
	Scan *sc = ctx;
	Escapes e;
	walk_sub(sc->f, g, NULL, NULL, 0, &e);
	if (e.n)
		fz_fail(sc->f, sc->at, "a subgraph of this node writes into an outer value");
}

int fz_subgraphs(Functionalize *f, Node *n, Node *next)
{
	if (n->op == OP_ONNX_If)
		return sub_if(f, n, next);
	if (n->op == OP_ONNX_Loop)
		return sub_loop(f, n, next);
	Scan sc = { f, NULL, n };
	node_each_subgraph(n, sub_other, &sc);
	return 0;
}
