/* functionalize_funcs.c - local function bodies, and calls that mutate what they pass (see functionalize.c). */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

/* A function body is functionalized like a graph, callees before their
 * callers.  A parameter the body mutates becomes one more result of the
 * function (after its own, in parameter order), and each call becomes a
 * mutation of the value it passes there: the call gets the matching new
 * result, which is that storage's next version (written back through a
 * view like any in-place result).  Each body and each call is visited
 * once: linear in the module. */

typedef struct FnKey { const Module *m; Sym domain, name; } FnKey;

static int fn_is(uintptr_t item, const void *key)
{
	const FnKey *k = key;
	const Func *fn = k->m->funcs.v[item - 1];
	return fn->domain == k->domain && fn->name == k->name;
}

static uint64_t fn_hash(Sym d, Sym n) { return hash_u64((uint64_t)d << 32 | n); }

/* The index + 1 of the local function n calls, or 0. */
static uint32_t callee(const Functionalize *f, const Node *n)
{
	if (n->op != OP_GENERIC || n->domain == S_onnx || n->domain == S_aten || !f->m->funcs.n)
		return 0;
	FnKey k = { f->m, n->domain, n->name };
	return (uint32_t)hashmap_get(&f->funcs, fn_hash(n->domain, n->name), fn_is, &k);
}

const FuncMut *fz_callee_mut(Functionalize *f, const Node *n)
{
	uint32_t i = callee(f, n);
	return i && f->fm[i - 1].nmut ? &f->fm[i - 1] : NULL;
}

/* Call n of a function that mutates parameters: the storages passed there
 * get n's new results as their next versions. */
int fz_call_mutates(Functionalize *f, Node *n, const FuncMut *fm, Node *next)
{
	ValueId *c = xcalloc(fm->nmut, sizeof *c);
	for (uint32_t j = 0; j < fm->nmut; j++) {
		uint32_t k = fm->param[j];
		if (k >= n->nargs || n->args[k].kind != A_VALUE || !n->args[k].u.v) {
			free(c);
			return fz_fail(f, n, "a mutated parameter of the called function needs a tensor argument");
		}
		c[j] = fz_canon(f, n->args[k].u.v);
	}
	fz_rewrite_operands(f, n);
	uint32_t want = fm->nout + fm->nmut;
	if (n->nres < want) {
		ValueId *res = ARENA_ARRAY(&f->m->arena, ValueId, want);
		if (n->nres)
			memcpy(res, n->res, n->nres * sizeof *res);
		n->res = res;
		n->nres = want;
	}
	for (uint32_t j = 0; j < fm->nmut; j++) {
		const Value *a = val(f->m, c[j]);
		ValueId r = fz_new_result(f, n, fm->nout + j, a->name, val(f->m, fz_current(f, c[j], n))->type);
		fz_write_back(f, c[j], r, n, next);
	}
	free(c);
	return 0;
}

/* The body's outputs read the latest versions; each mutated parameter's
 * latest version is returned after them. */
static void finish_func(Functionalize *f, FuncMut *fm)
{
	Graph *g = f->g;
	fm->nout = g->nout;
	for (uint32_t i = 0; i < g->nout; i++)
		if (g->out[i])
			g->out[i] = fz_current(f, fz_canon(f, g->out[i]), NULL);
	for (uint32_t i = 0; i < g->nin; i++)
		fm->nmut += g->in[i] && fz_is_mutated(f, g->in[i]);
	if (!fm->nmut)
		return;
	fm->param = xcalloc(fm->nmut, sizeof *fm->param);
	uint32_t j = 0;
	for (uint32_t i = 0; i < g->nin; i++)
		if (g->in[i] && fz_is_mutated(f, g->in[i])) {
			fm->param[j++] = i;
			fz_push_output(f, fz_current(f, g->in[i], NULL));
		}
}

static void run_func(Functionalize *f, uint32_t i)
{
	f->g = f->m->funcs.v[i]->body;
	f->err = 0;
	for (Node *n = f->g->first, *next; n; n = next) {
		next = n->next;
		fz_visit(f, n, next);
	}
	if (!f->err)
		finish_func(f, &f->fm[i]);
	f->failed |= f->err;
}

typedef VEC(uint32_t) Order;

/* Pushes the functions the nodes of g (and of its subgraphs) call. */
typedef struct Callees { Functionalize *f; Order *todo; } Callees;

static void push_callees(Graph *g, void *ctx)
{
	Callees *cs = ctx;
	for (const Node *n = g->first; n; n = n->next) {
		uint32_t k = callee(cs->f, n);
		if (k && cs->f->fm[k - 1].state == 0)
			XVEC_PUSH(*cs->todo, k - 1);
		node_each_subgraph(n, push_callees, ctx);
	}
}

/* Every function, each after the functions it calls (a depth-first walk
 * with an explicit stack; a cycle, which inline reports, is cut where the
 * walk meets it again). */
void fz_run_funcs(Functionalize *f)
{
	Module *m = f->m;
	f->fm = xcalloc(m->funcs.n ? m->funcs.n : 1, sizeof *f->fm);
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		FnKey k = { m, m->funcs.v[i]->domain, m->funcs.v[i]->name };
		hashmap_intern(&f->funcs, fn_hash(k.domain, k.name), fn_is, &k, i + 1);
	}
	Order todo = { 0 };
	Callees cs = { f, &todo };
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		if (f->fm[i].state)
			continue;
		XVEC_PUSH(todo, i);
		while (todo.n) {
			uint32_t j = todo.v[todo.n - 1];
			FuncMut *fm = &f->fm[j];
			if (fm->state == 2) {
				todo.n--;
			} else if (fm->state == 1) {
				todo.n--;
				fm->state = 2;
				run_func(f, j);
			} else {
				fm->state = 1;
				push_callees(m->funcs.v[j]->body, &cs);
			}
		}
	}
	free(todo.v);
}
