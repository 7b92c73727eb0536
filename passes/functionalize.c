/* functionalize.c - in-place, out= and view mutations become functional.
 *
 * PyTorch graphs may mutate tensors: `aten::add_.Tensor(%x, %y)` writes into
 * %x, `aten::add.out(..., out = %buf)` into %buf, and a mutation of a view
 * (`%s = aten::slice.Tensor(%x, ...)`, then `aten::add_(%s, ...)`) writes
 * into the view's base.  ONNX has no mutation, so every storage gets SSA
 * versions instead.
 *
 * One walk over each graph, in order.  Per value (VState):
 *  - canon: an in-place or out= result names the storage it mutated, so
 *    every use of it is a use of that storage;
 *  - cur: the value that holds the storage's latest contents;
 *  - base/root/vdef: a view records the storage it aliases, the non-view
 *    storage at the end of the chain and the node that made it;
 *  - ver: a root counts its mutations; a view remembers the count its cur
 *    reflects.
 * Every operand is rewritten to the current version of its storage as the
 * walk reaches it, so reads before a mutation keep the old version.  A
 * mutation of a view is written back, link by link, to the root with the
 * inverse or scatter op of each view, and bumps the root's count; a view
 * whose count is behind is stale and is re-derived from its base's current
 * version when next read.  Each node, view link and stale read costs O(1)
 * amortised (a stale read costs its chain length once per mutation), so
 * the pass is linear in the graph.
 *
 * At the end, a mutated graph input, parameter or buffer has its latest
 * version returned as an extra output after the user outputs, and every
 * top-level graph gets a `pkg.torch.export.ExportedProgram.graph_signature`
 * metadata entry that says which input and output is which
 * (docs/functionalize.md); one already there (read from a model) is kept
 * when nothing is mutated.  Subgraphs are walked as
 * scopes of their own from the node that holds them, and local function
 * bodies before the graphs, callees first.
 *
 * This file holds the state, the versions and views and the walk; the
 * jobs it dispatches to have files of their own (functionalize.h lists
 * them): mutating ops, write-backs through views, mutated inputs as
 * outputs, subgraphs, local functions. */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

/* Graphs own disjoint values, so one table serves them all.  Only values
 * that existed before the pass are ever keys: new values are
 * versions (cur), never storages. */
VState *fz_st(Functionalize *f, ValueId v)
{
	ONNXC_ASSERT(v && v < f->nst);
	return &f->st[v];
}

/* A value the pass made is a version, its own storage. */
ValueId fz_canon(Functionalize *f, ValueId v)
{
	return v < f->nst && fz_st(f, v)->canon ? fz_st(f, v)->canon : v;
}

/* Inside a subgraph, a state about to change is saved first: leaving the
 * subgraph restores it (walk_sub). */
void fz_touch(Functionalize *f, ValueId v)
{
	if (f->depth)
		VEC_PUSH(&f->m->arena, f->log, ((Saved){ v, f->st[v] }));
}

int fz_fail(Functionalize *f, const Node *n, const char *what)
{
	diag_error(n->loc, "functionalize: %s (in %s::%s)", what, sym_str(n->domain), sym_str(n->name));
	f->err = 1;
	return 1;
}

/* ---- building nodes ------------------------------------------------------ */

ValueId fz_new_result(Functionalize *f, Node *n, uint32_t i, Sym base, Type *ty)
{
	ValueId v = value_new(f->m, value_fresh_name(f->m, base), ty, VK_NODE);
	val(f->m, v)->def = n;
	val(f->m, v)->res = i;
	n->res[i] = v;
	return v;
}

/* An aten node with one result, carrying the provenance of `like` (the node
 * it stands for), inserted before `before` (NULL: at the end). */
Node *fz_make(Functionalize *f, OpId op, uint32_t nargs, uint32_t nkw, const Node *like,
	      Node *before, Sym rname, Type *rty)
{
	Node *n = node_new_op(f->m, op, 1, nargs, nkw);
	n->prov = like->prov;
	n->loc = like->loc;
	fz_new_result(f, n, 0, rname, rty);
	node_insert_before(f->g, before, n);
	return n;
}

/* A copy of node d with fresh results, inserted before `before`. */
static Node *clone(Functionalize *f, const Node *d, Node *before)
{
	Arena *a = &f->m->arena;
	Node *n = node_new(f->m, d->domain, d->name, d->nres, d->nargs, d->nkw);
	for (uint32_t i = 0; i < d->nargs; i++)
		n->args[i] = arg_copy(a, &d->args[i]);
	for (uint32_t i = 0; i < d->nkw; i++)
		n->kw[i] = (Named){ d->kw[i].name, arg_copy(a, &d->kw[i].val) };
	for (uint32_t i = 0; i < d->nres; i++)
		if (d->res[i])
			fz_new_result(f, n, i, val(f->m, d->res[i])->name, val(f->m, d->res[i])->type);
	n->prov = d->prov;
	n->loc = d->loc;
	node_insert_before(f->g, before, n);
	return n;
}

/* Turns n into a call of `op` with fresh, empty argument arrays. */
void fz_recall(Functionalize *f, Node *n, OpId op, uint32_t nargs, uint32_t nkw)
{
	n->domain = op_domain(op);
	n->name = op_name_of(op);
	n->op = op;
	n->nargs = nargs;
	n->nkw = nkw;
	n->args = nargs ? ARENA_ARRAY(&f->m->arena, Arg, nargs) : NULL;
	n->kw = nkw ? ARENA_ARRAY(&f->m->arena, Named, nkw) : NULL;
}

void fz_rename_op(Node *n, Sym name)
{
	n->name = name;
	n->op = op_lookup(n->domain, name);
}

/* ---- versions and views -------------------------------------------------- */

/* View c is stale (its root was mutated after c was derived): apply its
 * view op again to its base's current version.  The siblings of a
 * multi-result view are re-derived by the same node. */
static void regen(Functionalize *f, ValueId c, Node *before)
{
	VState *s = fz_st(f, c);
	const Node *d = s->vdef;
	ValueId b = fz_current(f, s->base, before);
	Node *n = clone(f, d, before);
	n->args[0] = fz_varg(b);
	uint32_t ver = fz_st(f, s->root)->ver;
	for (uint32_t i = 0; i < d->nres; i++) {
		if (!d->res[i])
			continue;
		fz_touch(f, d->res[i]);
		fz_st(f, d->res[i])->cur = n->res[i];
		fz_st(f, d->res[i])->ver = ver;
	}
}

/* The value holding canonical storage c's latest contents; re-derives a
 * stale view (before `before`).  Invariant: a fresh view's bases are fresh. */
ValueId fz_current(Functionalize *f, ValueId c, Node *before)
{
	if (c >= f->nst)
		return c;
	VState *s = fz_st(f, c);
	if (s->base && s->ver != fz_st(f, s->root)->ver)
		regen(f, c, before);
	return s->cur ? s->cur : c;
}

static void rewrite_arg(Functionalize *f, Arg *a, Node *before)
{
	if (a->kind == A_VALUE && a->u.v)
		a->u.v = fz_current(f, fz_canon(f, a->u.v), before);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			rewrite_arg(f, &a->u.list[i], before);
}

/* Subgraph arguments are left alone (see the file comment). */
void fz_rewrite_operands(Functionalize *f, Node *n)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		rewrite_arg(f, &n->args[i], n);
	for (uint32_t i = 0; i < n->nkw; i++)
		rewrite_arg(f, &n->kw[i].val, n);
}

int fz_is_view(const Node *n)
{
	return node_has_flag(n, OPF_VIEW) && n->nargs >= 1 && n->args[0].kind == A_VALUE &&
	       n->args[0].u.v;
}

/* Records the results of view node n as aliases of canonical value c0. */
void fz_note_view(Functionalize *f, Node *n, ValueId c0)
{
	VState *b = fz_st(f, c0);
	ValueId root = b->base ? b->root : c0;
	for (uint32_t i = 0; i < n->nres; i++) {
		if (!n->res[i])
			continue;
		VState *s = fz_st(f, n->res[i]);
		s->base = c0;
		s->root = root;
		s->vdef = n;
		s->ver = fz_st(f, root)->ver;
	}
}

/* One node of the graph being walked, in order. */
int fz_visit(Functionalize *f, Node *n, Node *next)
{
	if (node_has_subgraph(n)) {
		fz_rewrite_operands(f, n);
		return fz_subgraphs(f, n, next);
	}
	if (n->domain != S_aten) {
		const FuncMut *fm = fz_callee_mut(f, n);
		if (fm)
			return fz_call_mutates(f, n, fm, next);
		fz_rewrite_operands(f, n);
		return 0;
	}
	return fz_visit_aten(f, n, next);
}

/* Subgraphs are walked from the node that holds them (walk_sub); function
 * bodies before the graphs (functionalize_funcs.c); decomposition
 * bodies are not entered, and a mutation left in one is reported by
 * decompose, which has no decomposition for in-place ops. */
static Status run_graph(const GraphVisit *v, void *ctx)
{
	Functionalize *f = ctx;
	Graph *g = v->g;
	if (v->depth)
		return OK;
	f->g = g;
	f->err = 0;
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		fz_visit(f, n, next);
	}
	if (!f->err)
		fz_finish_graph(f);
	f->failed |= f->err;
	return OK;                  /* the other graphs are still reported on */
}

Status pass_functionalize(Module *m, const PassOptions *opt)
{
	(void)opt;
	Functionalize f = { .m = m, .st = xcalloc(m->vals.n, sizeof(VState)), .nst = m->vals.n };
	f.mark = xcalloc(m->vals.n, sizeof *f.mark);
	f.s_then = sym_cstr("then_branch");
	f.s_else = sym_cstr("else_branch");
	f.s_body = sym_cstr("body");
	fz_run_funcs(&f);
	module_walk(m, WALK_GRAPHS, run_graph, &f);
	hashmap_free(&f.funcs);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		free(f.fm[i].param);
	free(f.fm);
	free(f.mark);
	free(f.st);
	return f.failed ? FAILED : OK;
}
