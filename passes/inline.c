/* inline.c - calls of local functions become the functions' nodes.
 *
 * Every call of a module function in the module's graphs (subgraphs
 * included) is replaced by a copy of the body: the body's inputs read the
 * call's arguments (an omitted one is none), its nodes get fresh values
 * named after the body's (value_fresh_name), its outputs are the call's
 * results, attribute references (@name) take the call's attributes (an
 * attribute the call does not set is left out, as in ONNX), and nodes keep
 * the body's provenance.  A body output that is an input, a constant or an
 * output already is given to the call's result through an Identity.
 * Calls inside the copy are inlined in turn: the walk goes on from the
 * first node inserted.  Functions that were inlined are removed.
 *
 * A call made by outline in the same run puts back the nodes it replaced
 * (OutlineRecord, passes.h), so -passes=outline,inline changes nothing.
 *
 * A function that calls itself, directly or not, is an error (ONNX forbids
 * it, and inlining it would never end).
 */
#include <stdlib.h>
#include <string.h>
#include "passes.h"

typedef struct Inliner {
	Module *m;
	HashMap funcs;              /* (domain, name) -> index in m->funcs + 1 */
	uint8_t *inlined;           /* by index in m->funcs */
	uint8_t *live;              /* by ValueId: defined in the graph being inlined */
	uint32_t nlive;
	ValueId *to;                /* body value -> value + 1; 0: not mapped */
	uint32_t *stamp;            /* to[v] is valid when stamp[v] == serial */
	uint32_t cap, serial;
	Rewriter rw;
} Inliner;

typedef struct FKey { Sym domain, name; } FKey;

typedef struct FKeyIn { const Module *m; FKey k; } FKeyIn;

static int func_is(uintptr_t item, const void *key)
{
	const FKeyIn *k = key;
	const Func *f = k->m->funcs.v[item - 1];
	return f->domain == k->k.domain && f->name == k->k.name;
}

static uint64_t fkey_hash(Sym d, Sym n) { return hash_u64((uint64_t)d << 32 | n); }

/* The index + 1 of the function n calls, or 0. */
static uint32_t callee(const Inliner *in, const Node *n)
{
	if (n->op != OP_GENERIC || n->domain == S_onnx || n->domain == S_aten)
		return 0;
	FKeyIn k = { in->m, { n->domain, n->name } };
	return (uint32_t)hashmap_get(&in->funcs, fkey_hash(n->domain, n->name), func_is, &k);
}

/* ---- the map from body values to graph values -------------------------------- */
static void map_set(Inliner *in, ValueId from, ValueId to)
{
	if (from >= in->cap) {
		uint32_t cap = in->cap ? in->cap : 256;
		while (cap <= from)
			cap *= 2;
		in->to = xreallocarray(in->to, cap, sizeof *in->to);
		in->stamp = xreallocarray(in->stamp, cap, sizeof *in->stamp);
		memset(in->stamp + in->cap, 0, (cap - in->cap) * sizeof *in->stamp);
		in->cap = cap;
	}
	in->stamp[from] = in->serial;
	in->to[from] = to + 1;
}

/* What v reads as in the copy; values not of the body read as themselves. */
static ValueId map_get(const Inliner *in, ValueId v, int *mapped)
{
	*mapped = v < in->cap && in->stamp[v] == in->serial;
	return *mapped ? in->to[v] - 1 : v;
}

static void remap_arg(const Inliner *in, Arg *a)
{
	int mapped;
	if (a->kind == A_VALUE) {
		a->u.v = map_get(in, a->u.v, &mapped);
		if (mapped && a->u.v == VNONE)
			*a = (Arg){ .kind = A_NONE };
	} else if (a->kind == A_LIST) {
		for (uint32_t i = 0; i < a->n; i++)
			remap_arg(in, &a->u.list[i]);
	}
}

/* ---- copying a body ------------------------------------------------------------ */
static Graph *copy_graph(Inliner *in, const Node *call, const Graph *src, Graph *parent);

static ValueId fresh(Inliner *in, ValueId from, ValueKind k)
{
	Module *m = in->m;
	Value *s = val(m, from);
	Sym name = s->name;
	Type *ty = s->type;
	Loc loc = s->loc;
	ValueId v = value_new(m, value_fresh_name(m, name), ty, k);
	val(m, v)->loc = loc;
	map_set(in, from, v);
	return v;
}

/* The subgraphs of a copied node are copied too, as children of g. */
typedef struct SubCopy { Inliner *in; const Node *call; Graph *g; } SubCopy;

static Graph *copy_sub(Graph *src, void *ctx)
{
	SubCopy *sc = ctx;
	return copy_graph(sc->in, sc->call, src, sc->g);
}

/* A copy of body node n for `call`: attribute references resolved. */
static Node *copy_node(Inliner *in, const Node *call, const Node *n, Graph *g)
{
	Module *m = in->m;
	uint32_t nkw = 0;
	Named *kw = ARENA_ARRAY(&m->arena, Named, n->nkw + 1);
	for (uint32_t i = 0; i < n->nkw; i++) {
		const Arg *v = &n->kw[i].val;
		if (v->kind == A_ATTRREF) {
			const Named *c = node_kw(call, v->u.sym);
			if (!c)
				continue;       /* not set by the call: omitted */
			v = &c->val;
		}
		kw[nkw].name = n->kw[i].name;
		kw[nkw].val = arg_copy(&m->arena, v);
		remap_arg(in, &kw[nkw++].val);
	}
	Node *c = node_new(m, n->domain, n->name, n->nres, n->nargs, 0);
	c->op = n->op;
	c->nkw = nkw;
	c->kw = kw;
	for (uint32_t i = 0; i < n->nargs; i++) {
		c->args[i] = arg_copy(&m->arena, &n->args[i]);
		remap_arg(in, &c->args[i]);
	}
	SubCopy sc = { in, call, g };
	node_map_subgraphs(c, copy_sub, &sc);
	c->prov = n->prov;
	c->doc = n->doc;
	c->loc = n->loc;
	c->opset = n->opset;
	for (uint32_t i = 0; i < n->nres; i++) {
		if (!n->res[i])
			continue;
		int mapped;
		c->res[i] = map_get(in, n->res[i], &mapped);    /* a call result */
		if (!mapped)
			c->res[i] = fresh(in, n->res[i], VK_NODE);
		val(m, c->res[i])->def = c;
		val(m, c->res[i])->res = i;
	}
	return c;
}

/* A subgraph of a body node: its own values are fresh too.  Recursion over
 * the subgraph nesting of one function body. */
static Graph *copy_graph(Inliner *in, const Node *call, const Graph *src, Graph *parent)
{
	Module *m = in->m;
	Graph *g = graph_new(m, src->name, parent);
	g->loc = src->loc;
	g->doc = src->doc;
	g->nmeta = src->nmeta;
	g->meta = src->meta;
	g->nin = src->nin;
	g->in = ARENA_ARRAY(&m->arena, ValueId, src->nin + 1);
	for (uint32_t i = 0; i < src->nin; i++)
		g->in[i] = fresh(in, src->in[i], VK_INPUT);
	for (uint32_t i = 0; i < src->inits.n; i++) {
		ValueId s = src->inits.v[i], v = fresh(in, s, (ValueKind)val(m, s)->kind);
		val(m, v)->key = val(m, s)->key;
		val(m, v)->init = val(m, s)->init;
		VEC_PUSH(&m->arena, g->inits, v);
	}
	for (const Node *n = src->first; n; n = n->next)
		node_append(g, copy_node(in, call, n, g));
	g->nout = src->nout;
	g->out = ARENA_ARRAY(&m->arena, ValueId, src->nout + 1);
	int mapped;
	for (uint32_t i = 0; i < src->nout; i++)
		g->out[i] = map_get(in, src->out[i], &mapped);
	if (src->out_decl)
		g->out_decl = arena_dup(&m->arena, src->out_decl, (src->nout + 1) * sizeof *src->out_decl);
	return g;
}

static Node *identity(Inliner *in, const Node *call, ValueId from, ValueId res)
{
	Node *c = node_new_op(in->m, OP_ONNX_Identity, 1, 1, 0);
	c->args[0] = from ? (Arg){ .kind = A_VALUE, .u.v = from } : (Arg){ .kind = A_NONE };
	c->res[0] = res;
	c->prov = call->prov;
	c->loc = call->loc;
	val(in->m, res)->def = c;
	val(in->m, res)->res = 0;
	return c;
}

/* Inserts a copy of f's body before call; returns the first node inserted. */
static Node *inline_copy(Inliner *in, Graph *g, Node *call, const Func *f)
{
	Module *m = in->m;
	const Graph *b = f->body;
	Node *first = NULL;
	in->serial++;
	for (uint32_t i = 0; i < b->nin; i++) {
		ValueId a = operand(call, i);
		map_set(in, b->in[i], a);
	}
	for (uint32_t i = 0; i < b->inits.n; i++) {
		ValueId s = b->inits.v[i];
		const Value *sv = val(m, s);
		ValueId v = fresh(in, s, VK_NODE);
		Node *c = node_new_op(m, OP_ONNX_Constant, 1, 0, 1);
		c->kw[0] = (Named){ S_value, { .kind = A_TENSOR, .u.t = sv->init } };
		c->res[0] = v;
		c->prov = call->prov;
		c->loc = call->loc;
		val(m, v)->def = c;
		node_insert_before(g, call, c);
		first = first ? first : c;
	}
	/* Result k of the call is defined by the node that makes body output k,
	 * the first time that value is returned: mapped before the copy. */
	uint32_t nout = b->nout < call->nres ? b->nout : call->nres;
	uint8_t *given = xcalloc(nout + 1, 1);
	for (uint32_t k = 0; k < nout; k++) {
		const Node *d = def_of(m, b->out[k]);
		int mapped;
		map_get(in, b->out[k], &mapped);
		if (d && d->graph == b && call->res[k] && !mapped) {
			map_set(in, b->out[k], call->res[k]);
			given[k] = 1;
		}
	}
	for (const Node *n = b->first; n; n = n->next) {
		Node *c = copy_node(in, call, n, g);
		node_insert_before(g, call, c);
		first = first ? first : c;
	}
	for (uint32_t k = 0; k < nout; k++) {
		if (given[k] || !call->res[k])
			continue;
		int mapped;
		Node *c = identity(in, call, map_get(in, b->out[k], &mapped), call->res[k]);
		node_insert_before(g, call, c);
		first = first ? first : c;
	}
	free(given);
	return first;
}

/* ---- putting back what outline replaced -------------------------------------- */
static int free_const(const Node *n) { return n->op == OP_ONNX_Constant && n->nargs == 0 && n->nres == 1; }

static int record_usable(const Inliner *in, const OutlineRecord *r, const Node *call, const Func *f)
{
	if (r->func != f || f->body->nnodes != r->nbody || r->nin != call->nargs)
		return 0;
	for (uint32_t i = 0; i < r->nconst; i++)
		if (r->consts[i] >= in->nlive || !in->live[r->consts[i]])
			return 0;
	for (uint32_t k = 0; k < r->nnodes; k++)
		if (free_const(r->nodes[k]) && !in->live[r->nodes[k]->res[0]])
			return 0;
	return 1;
}

static Node *restore(Inliner *in, Graph *g, Node *call, const OutlineRecord *r)
{
	Module *m = in->m;
	for (uint32_t i = 0; i < r->nin; i++)
		if (operand(call, i) != r->in[i])
			rw_set(&in->rw, r->in[i], operand(call, i));
	for (uint32_t k = 0; k < r->nnodes; k++) {
		Node *n = r->nodes[k];
		if (free_const(n)) {            /* left in the graph by outline */
			node_remove(g, n);
			node_insert_before(g, call, n);
			continue;
		}
		rw_apply(&in->rw, n);
		node_insert_before(g, call, n);
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i]) {
				val(m, n->res[i])->def = n;
				val(m, n->res[i])->res = i;
				if (n->res[i] < in->nlive)
					in->live[n->res[i]] = 1;
			}
	}
	for (uint32_t i = 0; i < r->nin; i++)
		rw_set(&in->rw, r->in[i], VNONE);
	return r->nnodes ? r->nodes[0] : call->next;
}

/* ---- the walk ------------------------------------------------------------------ */
static void mark_live(Inliner *in, const Graph *g)
{
	free(in->live);
	in->nlive = in->m->vals.n;
	in->live = xcalloc(in->nlive, 1);
	for (uint32_t i = 0; i < g->nin; i++)
		in->live[g->in[i]] = 1;
	for (uint32_t i = 0; i < g->inits.n; i++)
		in->live[g->inits.v[i]] = 1;
	for (const Node *n = g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++)
			in->live[n->res[i]] = 1;
}

static Status inline_graph(const GraphVisit *v, void *ctx)
{
	Inliner *in = ctx;
	Graph *g = v->g;
	if (!v->parent)
		mark_live(in, g);
	for (Node *n = g->first; n;) {
		uint32_t fi = callee(in, n);
		if (!fi) {
			n = n->next;
			continue;
		}
		Func *f = in->m->funcs.v[fi - 1];
		in->inlined[fi - 1] = 1;
		const OutlineRecord *r = (const OutlineRecord *)hashmap_get(&in->m->outlined,
			hash_u64((uintptr_t)n), outline_record_is, n);
		Node *next = n->next, *start;
		if (r && !v->parent && record_usable(in, r, n, f))
			start = restore(in, g, n, r);
		else
			start = inline_copy(in, g, n, f);
		node_remove(g, n);
		n = start ? start : next;
	}
	return OK;
}

/* ---- calls between functions must not loop ----------------------------------- */
typedef struct Frame { uint32_t f; const Node *n; } Frame;

/* Depth-first over the functions' calls, with an explicit stack; colour 1
 * is on the stack, 2 done.  Each function's nodes are scanned once. */
static Status check_cycles(Inliner *in)
{
	Module *m = in->m;
	uint8_t *colour = xcalloc(m->funcs.n + 1, 1);
	VEC(Frame) st = { 0 };
	Status s = OK;
	for (uint32_t i = 0; i < m->funcs.n && s == OK; i++) {
		if (colour[i])
			continue;
		colour[i] = 1;
		XVEC_PUSH(st, ((Frame){ i, m->funcs.v[i]->body->first }));
		while (st.n && s == OK) {
			Frame *t = &st.v[st.n - 1];
			if (!t->n) {
				colour[t->f] = 2;
				st.n--;
				continue;
			}
			const Node *n = t->n;
			t->n = n->next;
			uint32_t fi = callee(in, n);
			if (!fi)
				continue;
			uint32_t j = fi - 1;
			const Func *f = m->funcs.v[j];
			if (colour[j] == 1) {
				diag_error(n->loc, "function %s::%s calls itself", sym_str(f->domain), sym_str(f->name));
				s = FAILED;
			} else if (!colour[j]) {
				colour[j] = 1;
				XVEC_PUSH(st, ((Frame){ j, f->body->first }));
			}
		}
		st.n = 0;
	}
	free(st.v);
	free(colour);
	return s;
}

Status pass_inline(Module *m, const PassOptions *opt)
{
	(void)opt;
	if (!m->funcs.n)
		return OK;
	Inliner in = { .m = m };
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		Func *f = m->funcs.v[i];
		FKeyIn k = { m, { f->domain, f->name } };
		hashmap_intern(&in.funcs, fkey_hash(f->domain, f->name), func_is, &k, i + 1);
	}
	Status s = check_cycles(&in);
	in.inlined = xcalloc(m->funcs.n, 1);
	if (s == OK)
		s = module_walk(m, WALK_GRAPHS, inline_graph, &in);
	uint32_t k = 0;
	for (uint32_t i = 0; i < m->funcs.n; i++)
		if (s != OK || !in.inlined[i])
			m->funcs.v[k++] = m->funcs.v[i];
	m->funcs.n = k;
	hashmap_free(&in.funcs);
	free(in.inlined);
	free(in.live);
	free(in.to);
	free(in.stamp);
	rw_free(&in.rw);
	return s;
}
