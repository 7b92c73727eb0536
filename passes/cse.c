/* cse.c - common subexpression elimination.
 *
 * Two nodes are the same computation when they call the same op with
 * identical arguments and attributes (arg_identical, after the merges made
 * so far); the later one's results are then read from the earlier one.
 * Each graph is walked once, in order, with a hash map of the nodes kept
 * so far; the replacement table (Rewriter) rewrites every use as the walk
 * reaches it, subgraphs included, so no use is ever searched for: linear
 * time.
 *
 * With -outline, nodes of different module instances (their innermost
 * scope(...) entries differ) are not merged, constants apart: a merge would
 * make one instance read another's inner values, and identical instances
 * could no longer share one function.
 *
 * A graph's `const` values with the same type and bytes merge the same
 * way (the first one is kept; dce drops the others).
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
	int scoped;                 /* -outline: merge within one module instance */
	Rewriter rw;                /* what to read instead */
	uint8_t *is_out;            /* by ValueId: a graph or function output */
} Cse;

static int mergeable(const Cse *c, const Node *n)
{
	if (n->nres == 0 || node_has_flag(n, OPF_SIDE_EFFECT | OPF_RANDOM | OPF_INPLACE))
		return 0;
	if (n->op == OP_GENERIC && n->domain != S_onnx)
		return 0;
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i] && c->is_out[n->res[i]])
			return 0;
	return !node_has_subgraph(n);
}

/* The innermost scope entry, or {0, 0}. */
static ScopeEntry inner_scope(const Node *n)
{
	return n->prov && n->prov->nscope ? n->prov->scope[n->prov->nscope - 1] : (ScopeEntry){ 0, 0 };
}

static int scoped(const Cse *c, const Node *n)
{
	return c->scoped && !(n->op == OP_ONNX_Constant && n->nargs == 0);
}

typedef struct Key { const Node *n; int scoped; } Key;

static uint64_t node_hash(const Node *n, int by_scope)
{
	uint64_t h = ((uint64_t)n->domain << 32 | n->name) * 0x9e3779b97f4a7c15ull ^ n->nres;
	if (by_scope)
		h ^= hash_u64((uint64_t)inner_scope(n).path << 32 | inner_scope(n).cls);
	for (uint32_t i = 0; i < n->nargs; i++)
		h = (h ^ arg_hash(&n->args[i])) * 0xc4ceb9fe1a85ec53ull;
	for (uint32_t i = 0; i < n->nkw; i++)
		h = (h ^ n->kw[i].name ^ arg_hash(&n->kw[i].val)) * 0xc4ceb9fe1a85ec53ull;
	return h;
}

/* A node kept in the table (item) computes what n (key) does. */
static int same_node(uintptr_t item, const void *key)
{
	const Key *k = key;
	const Node *a = (const Node *)item, *b = k->n;
	if (k->scoped && (inner_scope(a).path != inner_scope(b).path || inner_scope(a).cls != inner_scope(b).cls))
		return 0;
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

/* A stored `const` value (item) holds the same tensor as the key's: type
 * and bytes.  Tensor.name is not compared: an initializer read from ONNX
 * carries its value's name there, text does not, and both must merge
 * alike. */
static int same_const(uintptr_t item, const void *key)
{
	const Tensor *a = ((const Value *)item)->init, *b = ((const Value *)key)->init;
	Tensor t = *b;
	t.name = a->name;
	Arg x = { .kind = A_TENSOR, .u.t = (Tensor *)a }, y = { .kind = A_TENSOR, .u.t = &t };
	return arg_identical(&x, &y);
}

/* `const` values of g with equal type and bytes become one (the first):
 * later reads of the others read it, and dce drops them.  Outputs keep
 * their names. */
static void merge_consts(Cse *c, Graph *g)
{
	HashMap seen = { 0 };
	for (uint32_t i = 0; i < g->inits.n; i++) {
		ValueId id = g->inits.v[i];
		Value *v = val(c->m, id);
		if (v->kind != VK_CONST || !v->init || v->overridable || c->is_out[id])
			continue;   /* an overridable const is an input of its own */
		Arg a = { .kind = A_TENSOR, .u.t = v->init };
		Value *first = (Value *)hashmap_intern(&seen, arg_hash(&a), same_const, v, (uintptr_t)v);
		if (first != v)
			rw_set(&c->rw, id, (ValueId)(first - c->m->vals.v));
	}
	hashmap_free(&seen);
}

static Status cse_graph(const GraphVisit *v, void *ctx)
{
	Cse *c = ctx;
	HashMap seen = { 0 };
	merge_consts(c, v->g);
	for (Node *n = v->g->first, *next; n; n = next) {
		next = n->next;
		rw_apply(&c->rw, n);
		if (!mergeable(c, n))
			continue;
		Key k = { n, scoped(c, n) };
		Node *first = (Node *)hashmap_intern(&seen, node_hash(n, k.scoped), same_node, &k, (uintptr_t)n);
		if (first == n)
			continue;
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i])
				rw_set(&c->rw, n->res[i], first->res[i]);
		node_remove(v->g, n);
	}
	hashmap_free(&seen);
	return OK;
}

Status pass_cse(Module *m, const PassOptions *opt)
{
	Cse c = { m, opt->outline, { 0 }, module_output_marks(m) };
	module_walk(m, WALK_PROGRAM, cse_graph, &c);
	rw_free(&c.rw);
	free(c.is_out);
	return OK;
}
