/* ir.c - building and editing modules, graphs, nodes and values. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

Module *module_new(Sym name)
{
	Module *m = xcalloc(1, sizeof *m);
	syms_init();
	m->name = name;
	value_new(m, 0, NULL, VK_NODE);     /* VNONE */
	return m;
}

/* The module's value names: a set of Syms (items are the Syms themselves). */
struct NameSet { HashMap map; };

static int names_has(const struct NameSet *ns, Sym s)
{
	return hashmap_get(&ns->map, hash_u64(s), NULL, (const void *)(uintptr_t)s) != 0;
}

static void names_add(struct NameSet *ns, Sym s)
{
	if (s)
		hashmap_intern(&ns->map, hash_u64(s), NULL, (const void *)(uintptr_t)s, s);
}

Sym value_fresh_name(Module *m, Sym base)
{
	if (!m->names) {
		m->names = xcalloc(1, sizeof *m->names);
		for (uint32_t i = 1; i < m->vals.n; i++)
			names_add(m->names, m->vals.v[i].name);
	}
	base = base ? base : S_v;
	Sym s = base;
	char buf[512];
	for (uint32_t k = 1; names_has(m->names, s); k++) {
		snprintf(buf, sizeof buf, "%.400s_%u", sym_str(base), k);
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
		hashmap_free(&m->names->map);
	free(m->names);
	hashmap_free(&m->outlined);
	free(m->vals.v);
	arena_free(&m->arena);
	mapped_drop(m);
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
		m->vals.v = xreallocarray(m->vals.v, cap, sizeof *m->vals.v);
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

Node *node_new_op(Module *m, OpId op, uint32_t nres, uint32_t nargs, uint32_t nkw)
{
	return node_new(m, op_domain(op), op_name_of(op), nres, nargs, nkw);
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

void value_to_const(Module *m, Graph *g, const Node *n, uint32_t i, Tensor *t)
{
	Value *v = val(m, n->res[i]);
	v->kind = VK_CONST;
	v->init = t;
	v->def = NULL;
	v->res = 0;
	v->loc = n->loc;
	v->prov = n->prov;
	if (!v->type || type_numel(v->type) < 0)
		v->type = t->type;      /* a literal's type has every dim known */
	VEC_PUSH(&m->arena, g->inits, n->res[i]);
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

void graph_each_use(const Graph *g, void (*f)(ValueId, void *), void *ctx)
{
	for (const Node *n = g->first; n; n = n->next)
		node_each_use(n, f, ctx);
	for (uint32_t i = 0; i < g->nout; i++)
		f(g->out[i], ctx);
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

int node_is_torch(const Node *n)
{
	if (n->domain == S_aten || n->domain == S__operator || n->domain == S_torchvision || n->domain == S_math ||
	    n->domain == S_torch)
		return 1;
	for (uint32_t i = 0; n->domain != S_onnx && i < n->nargs; i++)
		if (n->args[i].kind != A_VALUE && n->args[i].kind != A_NONE)
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

int graph_defines(Module *m, const Graph *g, ValueId v)
{
	const Value *x = val(m, v);
	if (x->kind == VK_NODE)
		return x->def && x->def->graph == g;
	for (uint32_t i = 0; i < g->nin; i++)
		if (g->in[i] == v)
			return 1;
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (g->inits.v[i] == v)
			return 1;
	return 0;
}

const Named *node_kw(const Node *n, Sym name)
{
	for (uint32_t i = 0; i < n->nkw; i++)
		if (n->kw[i].name == name)
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

/* Large payloads are compared and hashed a slice at a time, each slice
 * released once read (mapped_release), so a tensor left in a file mapping
 * is never resident whole. */
static int bytes_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i += MAPPED_SLICE) {
		size_t c = n - i < MAPPED_SLICE ? n - i : MAPPED_SLICE;
		int eq = memcmp(a + i, b + i, c) == 0;
		mapped_release(a + i, c);
		mapped_release(b + i, c);
		if (!eq)
			return 0;
	}
	return 1;
}

static uint64_t bytes_hash(const uint8_t *p, size_t n)
{
	if (n <= MAPPED_SLICE)
		return hash_mem(p, n);
	uint64_t h = 0;
	for (size_t i = 0; i < n; i += MAPPED_SLICE) {
		size_t c = n - i < MAPPED_SLICE ? n - i : MAPPED_SLICE;
		h = (h ^ hash_mem(p + i, c)) * 0xc4ceb9fe1a85ec53ull;
		mapped_release(p + i, c);
	}
	return h;
}

static int tensor_identical(const Tensor *a, const Tensor *b)
{
	if (!type_equal(a->type, b->type) || a->nbytes != b->nbytes || a->name != b->name)
		return 0;
	if (a->type->dtype != DT_STR)
		return bytes_equal(a->data, b->data, a->nbytes);
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
		/* elem is a hint for an empty list only: the same non-empty
		 * list may come from a parser (hinted) or a pass (not). */
		if (a->n != b->n || (a->n == 0 && a->elem != b->elem))
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
	case A_TENSOR: return h ^ (a->u.t->data ? bytes_hash(a->u.t->data, a->u.t->nbytes) : 0);
	case A_GRAPH: return h ^ (uint64_t)(uintptr_t)a->u.g;
	case A_LIST:
		for (uint32_t i = 0; i < a->n; i++)
			h = (h ^ arg_hash(&a->u.list[i])) * 0xc4ceb9fe1a85ec53ull;
		return h;
	default: return h;
	}
}

static void mark(ValueId v, void *ctx) { ((uint8_t *)ctx)[v] = 1; }

static Status mark_outputs(const GraphVisit *v, void *is_out)
{
	for (uint32_t i = 0; i < v->g->nout; i++)
		mark(v->g->out[i], is_out);
	return OK;
}

uint8_t *module_output_marks(Module *m)
{
	uint8_t *is_out = xcalloc(m->vals.n, 1);
	module_walk(m, WALK_PROGRAM, mark_outputs, is_out);
	return is_out;
}

/* ---- the FX node a node came from ------------------------------------------ */

static int str_is(Str s, const char *c) { return s.n == strlen(c) && !memcmp(s.s, c, s.n); }

static const char *find_in(const char *s, const char *end, const char *what)
{
	size_t n = strlen(what);
	for (; s + n <= end; s++)
		if (!memcmp(s, what, n))
			return s;
	return NULL;
}

int fx_node_leaf(const char *s, size_t n, Str *name, Str *target)
{
	const char *end = s + n;
	const char *sp = n && *s == '%' ? find_in(s, end, " : ") : NULL;
	const char *t = sp ? find_in(sp, end, "target=") : NULL;
	const char *te = t ? find_in(t, end, "](") : NULL;
	if (!te || sp == s + 1)
		return -1;
	t += strlen("target=");
	if ((size_t)(te - t) > strlen("torch.ops.") && !memcmp(t, "torch.ops.", strlen("torch.ops.")))
		t += strlen("torch.ops.");
	if (te == t)
		return -1;
	*name = (Str){ s + 1, (uint32_t)(sp - s - 1) };
	*target = (Str){ t, (uint32_t)(te - t) };
	return 0;
}

int prov_fx_leaf(const Prov *p, Str *name, Str *target)
{
	for (uint32_t i = 0; p && i < p->nmeta; i++)
		if (str_is(p->meta[i].key, "pkg.torch.onnx.fx_node"))
			return fx_node_leaf(p->meta[i].val.s, p->meta[i].val.n, name, target) ? -1 : (int)i;
	return -1;
}

/* ---- guard functions (GUARD_FNS) ----------------------------------------- */
#define X(id, name, arity) name,
const char *const guard_fn_name[GF_COUNT] = { GUARD_FNS(X) };
#undef X
#define X(id, name, arity) arity,
const uint8_t guard_fn_arity[GF_COUNT] = { GUARD_FNS(X) };
#undef X
