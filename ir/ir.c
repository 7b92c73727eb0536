/* ir.c - building and editing modules, graphs, nodes and values. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

Module *module_new(Sym name)
{
	Module *m = calloc(1, sizeof *m);
	if (!m)
		ONNXC_BUG("out of memory");
	m->name = name;
	value_new(m, 0, NULL, VK_NODE);     /* VNONE */
	return m;
}

/* An open-addressing set of Syms; the module's value names. */
struct NameSet { Sym *slot; uint32_t n, cap; };

static void names_add(struct NameSet *ns, Sym s);

static void names_grow(struct NameSet *ns)
{
	struct NameSet old = *ns;
	ns->cap = old.cap ? old.cap * 2 : 1024;
	ns->slot = calloc(ns->cap, sizeof *ns->slot);
	if (!ns->slot)
		ONNXC_BUG("out of memory");
	ns->n = 0;
	for (uint32_t i = 0; i < old.cap; i++)
		if (old.slot[i])
			names_add(ns, old.slot[i]);
	free(old.slot);
}

/* Returns through the set; adding a present name is a no-op. */
static int names_has(const struct NameSet *ns, Sym s)
{
	for (uint32_t h = (s * 2654435761u) & (ns->cap - 1); ns->slot[h]; h = (h + 1) & (ns->cap - 1))
		if (ns->slot[h] == s)
			return 1;
	return 0;
}

static void names_add(struct NameSet *ns, Sym s)
{
	if (!s)
		return;
	if ((ns->n + 1) * 2 > ns->cap)
		names_grow(ns);
	uint32_t h = (s * 2654435761u) & (ns->cap - 1);
	for (; ns->slot[h]; h = (h + 1) & (ns->cap - 1))
		if (ns->slot[h] == s)
			return;
	ns->slot[h] = s;
	ns->n++;
}

Sym value_fresh_name(Module *m, Sym base)
{
	if (!m->names) {
		m->names = calloc(1, sizeof *m->names);
		if (!m->names)
			ONNXC_BUG("out of memory");
		names_grow(m->names);
		for (uint32_t i = 1; i < m->vals.n; i++)
			names_add(m->names, m->vals.v[i].name);
	}
	Sym s = base ? base : sym_cstr("v");
	char buf[512];
	for (uint32_t k = 1; names_has(m->names, s); k++) {
		snprintf(buf, sizeof buf, "%.400s_%u", sym_str(base ? base : sym_cstr("v")), k);
		s = sym_cstr(buf);
	}
	names_add(m->names, s);
	return s;
}

void module_free(Module *m)
{
	if (!m)
		return;
	if (m->names)
		free(m->names->slot);
	free(m->names);
	free(m->vals.v);
	arena_free(&m->arena);
	free(m);
}

Graph *graph_new(Module *m, Sym name, Graph *parent)
{
	Graph *g = ARENA_NEW(&m->arena, Graph);
	g->name = name;
	g->parent = parent;
	return g;
}

ValueId value_new(Module *m, Sym name, Type *type, ValueKind kind)
{
	Value v = { 0 };
	v.name = name;
	v.type = type;
	v.kind = (uint8_t)kind;
	/* The value table is the one array that grows with the graph: it is
	 * realloc'd, not in the arena, so growth leaves no dead copies. */
	if (m->vals.n == m->vals.cap) {
		uint32_t cap = m->vals.cap ? m->vals.cap * 2 : 256;
		Value *nv = realloc(m->vals.v, cap * sizeof *nv);
		if (!nv)
			ONNXC_BUG("out of memory");
		m->vals.v = nv;
		m->vals.cap = cap;
	}
	m->vals.v[m->vals.n++] = v;
	if (m->names)
		names_add(m->names, name);
	return m->vals.n - 1;
}

Node *node_new(Module *m, Sym domain, Sym name, uint32_t nres, uint32_t nargs, uint32_t nkw)
{
	Node *n = ARENA_NEW(&m->arena, Node);
	n->domain = domain;
	n->name = name;
	n->op = op_lookup(domain, name);
	n->nres = nres;
	n->nargs = nargs;
	n->nkw = nkw;
	n->res = nres ? ARENA_ARRAY(&m->arena, ValueId, nres) : NULL;
	n->args = nargs ? ARENA_ARRAY(&m->arena, Arg, nargs) : NULL;
	n->kw = nkw ? ARENA_ARRAY(&m->arena, Named, nkw) : NULL;
	return n;
}

void node_append(Graph *g, Node *n)
{
	n->graph = g;
	n->prev = g->last;
	n->next = NULL;
	if (g->last)
		g->last->next = n;
	else
		g->first = n;
	g->last = n;
	g->nnodes++;
}

void node_insert_before(Graph *g, Node *before, Node *n)
{
	if (!before) {
		node_append(g, n);
		return;
	}
	n->graph = g;
	n->next = before;
	n->prev = before->prev;
	if (before->prev)
		before->prev->next = n;
	else
		g->first = n;
	before->prev = n;
	g->nnodes++;
}

void node_remove(Graph *g, Node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		g->first = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		g->last = n->prev;
	n->prev = n->next = NULL;
	g->nnodes--;
}

void arg_each_value(const Arg *a, void (*f)(ValueId, void *), void *ctx)
{
	if (a->kind == A_VALUE)
		f(a->u.v, ctx);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			arg_each_value(&a->u.list[i], f, ctx);
}

void node_each_use(const Node *n, void (*f)(ValueId, void *), void *ctx)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		arg_each_value(&n->args[i], f, ctx);
	for (uint32_t i = 0; i < n->nkw; i++)
		arg_each_value(&n->kw[i].val, f, ctx);
}

int node_has_flag(const Node *n, uint32_t flag)
{
	return (op_info[n->op].flags & flag) != 0;
}

int arg_contains(const Arg *a, ArgKind k)
{
	if (a->kind == k)
		return 1;
	for (uint32_t i = 0; a->kind == A_LIST && i < a->n; i++)
		if (arg_contains(&a->u.list[i], k))
			return 1;
	return 0;
}

int node_has_subgraph(const Node *n)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		if (arg_contains(&n->args[i], A_GRAPH))
			return 1;
	for (uint32_t i = 0; i < n->nkw; i++)
		if (arg_contains(&n->kw[i].val, A_GRAPH))
			return 1;
	return 0;
}

const Named *node_kw(const Node *n, const char *name)
{
	Sym s = sym_cstr(name);
	for (uint32_t i = 0; i < n->nkw; i++)
		if (n->kw[i].name == s)
			return &n->kw[i];
	return NULL;
}

Str str_copy(Arena *a, Str s)
{
	return (Str){ s.n ? arena_strndup(a, s.s, s.n) : "", s.n };
}

Arg arg_copy(Arena *a, const Arg *src)
{
	Arg d = *src;
	if (src->kind == A_STR)
		d.u.s = str_copy(a, src->u.s);
	else if (src->kind == A_LIST && src->n) {
		d.u.list = ARENA_ARRAY(a, Arg, src->n);
		for (uint32_t i = 0; i < src->n; i++)
			d.u.list[i] = arg_copy(a, &src->u.list[i]);
	}
	return d;
}

static int tensor_identical(const Tensor *a, const Tensor *b)
{
	if (!type_equal(a->type, b->type) || a->nbytes != b->nbytes || a->name != b->name)
		return 0;
	if (a->type->dtype != DT_STR)
		return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
	int64_t n = type_numel(a->type);
	for (int64_t i = 0; i < n; i++)
		if (a->strs[i].n != b->strs[i].n || memcmp(a->strs[i].s, b->strs[i].s, a->strs[i].n) != 0)
			return 0;
	return 1;
}

int arg_identical(const Arg *a, const Arg *b)
{
	if (a->kind != b->kind)
		return 0;
	switch ((ArgKind)a->kind) {
	case A_NONE: return 1;
	case A_INT: case A_BOOL: case A_DTYPE: return a->u.i == b->u.i;
	case A_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
	case A_STR: return a->u.s.n == b->u.s.n && memcmp(a->u.s.s, b->u.s.s, a->u.s.n) == 0;
	case A_IDENT: case A_ATTRREF: case A_PARAM: return a->u.sym == b->u.sym;
	case A_VALUE: return a->u.v == b->u.v;
	case A_TENSOR: return tensor_identical(a->u.t, b->u.t);
	case A_GRAPH: return a->u.g == b->u.g;
	case A_TYPE: return type_equal(a->u.ty, b->u.ty);
	case A_LIST:
		if (a->n != b->n || a->elem != b->elem)
			return 0;
		for (uint32_t i = 0; i < a->n; i++)
			if (!arg_identical(&a->u.list[i], &b->u.list[i]))
				return 0;
		return 1;
	}
	return 0;
}

uint64_t arg_hash(const Arg *a)
{
	uint64_t h = (uint64_t)a->kind * 0x9e3779b97f4a7c15ull;
	switch ((ArgKind)a->kind) {
	case A_INT: case A_BOOL: case A_DTYPE: return h ^ hash_mem(&a->u.i, sizeof a->u.i);
	case A_FLOAT: return h ^ hash_mem(&a->u.f, sizeof a->u.f);
	case A_STR: return h ^ hash_mem(a->u.s.s, a->u.s.n);
	case A_IDENT: case A_ATTRREF: case A_PARAM: return h ^ a->u.sym;
	case A_VALUE: return h ^ ((uint64_t)a->u.v * 0xff51afd7ed558ccdull);
	case A_TENSOR: return h ^ (a->u.t->data ? hash_mem(a->u.t->data, a->u.t->nbytes) : 0);
	case A_GRAPH: return h ^ (uint64_t)(uintptr_t)a->u.g;
	case A_LIST:
		for (uint32_t i = 0; i < a->n; i++)
			h = (h ^ arg_hash(&a->u.list[i])) * 0xc4ceb9fe1a85ec53ull;
		return h;
	default: return h;
	}
}

static void replace_in_arg(Arg *a, ValueId from, ValueId to);
static void replace_in_graph(Graph *g, ValueId from, ValueId to);

static void replace_in_arg(Arg *a, ValueId from, ValueId to)
{
	if (a->kind == A_VALUE && a->u.v == from)
		a->u.v = to;
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			replace_in_arg(&a->u.list[i], from, to);
	else if (a->kind == A_GRAPH)
		replace_in_graph(a->u.g, from, to);
}

static void replace_in_graph(Graph *g, ValueId from, ValueId to)
{
	for (Node *n = g->first; n; n = n->next) {
		for (uint32_t i = 0; i < n->nargs; i++)
			replace_in_arg(&n->args[i], from, to);
		for (uint32_t i = 0; i < n->nkw; i++)
			replace_in_arg(&n->kw[i].val, from, to);
	}
	for (uint32_t i = 0; i < g->nout; i++)
		if (g->out[i] == from)
			g->out[i] = to;
}

void graph_replace_uses(Graph *g, ValueId from, ValueId to)
{
	replace_in_graph(g, from, to);
}

static void mark_outputs(uint8_t *is_out, const Graph *g);

static void mark_arg_outputs(uint8_t *is_out, const Arg *a)
{
	if (a->kind == A_GRAPH)
		mark_outputs(is_out, a->u.g);
	for (uint32_t i = 0; a->kind == A_LIST && i < a->n; i++)
		mark_arg_outputs(is_out, &a->u.list[i]);
}

static void mark_outputs(uint8_t *is_out, const Graph *g)
{
	for (uint32_t i = 0; i < g->nout; i++)
		is_out[g->out[i]] = 1;
	for (const Node *n = g->first; n; n = n->next) {
		for (uint32_t i = 0; i < n->nargs; i++)
			mark_arg_outputs(is_out, &n->args[i]);
		for (uint32_t i = 0; i < n->nkw; i++)
			mark_arg_outputs(is_out, &n->kw[i].val);
	}
}

uint8_t *module_output_marks(const Module *m)
{
	uint8_t *is_out = calloc(m->vals.n, 1);
	if (!is_out)
		ONNXC_BUG("out of memory");
	for (uint32_t i = 0; i < m->graphs.n; i++)
		mark_outputs(is_out, m->graphs.v[i]);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		mark_outputs(is_out, m->funcs.v[i]->body);
	return is_out;
}
