/* infer_calls.c - function bodies typed from their call sites.
 *
 * A local function read from an .onnx file written by another producer has
 * untyped inputs (FunctionProto has no input types; value_info may be
 * absent), so nothing in its body is typed and -O2 cannot fuse there.  An
 * untyped input whose arguments have the same type at every call site
 * takes that type, and the body is inferred from it.  Callers come before
 * callees: the graphs first, then each function once every call made from
 * other function bodies has been seen (Kahn's order on the call graph), so
 * a function called from a function is typed from its caller's inferred
 * body.  Then, callees first, an untyped result of a call takes the type
 * of the callee's output and the caller's body is inferred again.  An
 * argument without a type counts as a disagreement.  Functions on a call
 * cycle (ONNX forbids them) are inferred as written.  Linear in the
 * program's size: each call is looked at twice, each body inferred at
 * most twice.
 */
#include <stdlib.h>
#include "infer.h"

typedef struct Site {
	Type **sig;                 /* the agreed type of each input, NULL: none yet */
	uint8_t *clash;             /* call sites disagree, or one omits the input */
	uint32_t nin, pending;      /* inputs; calls from bodies not yet seen */
} Site;

typedef struct Calls {
	Infer *I;
	HashMap funcs;              /* (domain, name) -> index + 1 */
	Site *site;
	uint32_t *ready, nready;    /* functions whose callers have all been seen */
	int counting;               /* 1: count calls from bodies; 0: merge types */
	int in_body;                /* the graph walked is (in) a function body */
} Calls;

typedef struct FKey { const Module *m; Sym domain, name; } FKey;

static int func_is(uintptr_t item, const void *key)
{
	const FKey *k = key;
	const Func *f = k->m->funcs.v[item - 1];
	return f->domain == k->domain && f->name == k->name;
}

static uint32_t callee(const Calls *c, const Node *n)
{
	if (n->op != OP_GENERIC || n->domain == S_onnx || n->domain == S_aten)
		return 0;
	FKey k = { c->I->m, n->domain, n->name };
	return (uint32_t)hashmap_get(&c->funcs, hash_u64((uint64_t)n->domain << 32 | n->name), func_is, &k);
}

static void merge(Calls *c, Site *s, const Node *n)
{
	for (uint32_t i = 0; i < s->nin; i++) {
		const Arg *a = i < n->nargs ? &n->args[i] : NULL;
		Type *t = a && a->kind == A_VALUE ? c->I->m->vals.v[a->u.v].type : NULL;
		if (!t)
			s->clash[i] = 1;
		else if (!s->sig[i])
			s->sig[i] = t;
		else if (!type_equal(s->sig[i], t))
			s->clash[i] = 1;
	}
}

static void each_call(Graph *g, void *ctx)
{
	Calls *c = ctx;
	for (const Node *n = g->first; n; n = n->next) {
		node_each_subgraph(n, each_call, c);
		uint32_t f = callee(c, n);
		if (!f)
			continue;
		Site *s = &c->site[f - 1];
		if (c->counting) {
			s->pending++;
			continue;
		}
		merge(c, s, n);
		if (c->in_body && s->pending && --s->pending == 0)
			c->ready[c->nready++] = f - 1;
	}
}

/* The untyped inputs of f that every call agrees on take that type. */
static void type_inputs(Calls *c, const Func *f, const Site *s)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < f->body->nin; i++) {
		Value *v = &c->I->m->vals.v[f->body->in[i]];
		if (v->kind != VK_INPUT)
			continue;
		if (k < s->nin && !v->type && s->sig[k] && !s->clash[k])
			v->type = s->sig[k];
		k++;
	}
}

/* Untyped results of calls in g take the types of the callee's outputs
 * when its body has been typed (done); g is then inferred again, which
 * types only what is still untyped. */
static void type_results(Calls *c, Graph *g, const uint8_t *done)
{
	Module *m = c->I->m;
	int changed = 0;
	for (const Node *n = g->first; n; n = n->next) {
		uint32_t f = callee(c, n);
		const Graph *body = f && done[f - 1] ? m->funcs.v[f - 1]->body : NULL;
		for (uint32_t i = 0; body && i < n->nres && i < body->nout; i++) {
			Value *v = n->res[i] ? &m->vals.v[n->res[i]] : NULL;
			if (v && !v->type && m->vals.v[body->out[i]].type) {
				v->type = m->vals.v[body->out[i]].type;
				changed = 1;
			}
		}
	}
	if (changed)
		infer_graph(c->I, g);
}

static uint32_t count_inputs(const Module *m, const Graph *g)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < g->nin; i++)
		k += m->vals.v[g->in[i]].kind == VK_INPUT;
	return k;
}

void infer_funcs(Infer *I)
{
	Module *m = I->m;
	uint32_t nf = m->funcs.n;
	Calls c = { .I = I, .site = xcalloc(nf + 1, sizeof *c.site), .ready = xcalloc(nf + 1, sizeof *c.ready) };
	uint8_t *done = xcalloc(nf + 1, 1);
	for (uint32_t i = 0; i < nf; i++) {
		const Func *f = m->funcs.v[i];
		FKey k = { m, f->domain, f->name };
		hashmap_intern(&c.funcs, hash_u64((uint64_t)f->domain << 32 | f->name), func_is, &k, i + 1);
		c.site[i].nin = count_inputs(m, f->body);
		c.site[i].sig = xcalloc(c.site[i].nin + 1, sizeof *c.site[i].sig);
		c.site[i].clash = xcalloc(c.site[i].nin + 1, 1);
	}
	c.counting = 1;
	for (uint32_t i = 0; i < nf; i++)
		each_call(m->funcs.v[i]->body, &c);
	c.counting = 0;
	for (uint32_t i = 0; i < nf; i++)
		if (!c.site[i].pending)
			c.ready[c.nready++] = i;
	for (uint32_t i = 0; i < m->graphs.n; i++)
		each_call(m->graphs.v[i], &c);
	/* ready only grows: a function is appended once, when its last
	 * caller in a body is seen. */
	for (uint32_t r = 0; r < c.nready; r++) {
		uint32_t i = c.ready[r];
		type_inputs(&c, m->funcs.v[i], &c.site[i]);
		infer_graph(I, m->funcs.v[i]->body);
		done[i] = 1;
		c.in_body = 1;
		each_call(m->funcs.v[i]->body, &c);
	}
	/* Back up the call graph: a callee's outputs type its calls' results
	 * in its callers' bodies, callees first. */
	for (uint32_t r = c.nready; r-- > 0;)
		type_results(&c, m->funcs.v[c.ready[r]]->body, done);
	for (uint32_t i = 0; i < m->graphs.n; i++)
		type_results(&c, m->graphs.v[i], done);
	for (uint32_t i = 0; i < nf; i++) {
		if (!done[i])
			infer_graph(I, m->funcs.v[i]->body);
		free(c.site[i].sig);
		free(c.site[i].clash);
	}
	hashmap_free(&c.funcs);
	free(c.site);
	free(c.ready);
	free(done);
}
