/* verifier.c - structural checks on a module, run after parsing, after
 * import and (with -verify-each) after every pass.
 *
 * Dominance: nodes are in order, so a value dominates its uses exactly when
 * it is defined earlier on the walk.  A subgraph sees what is defined before
 * its node; its own definitions are forgotten when it ends.  One walk, so
 * the check is linear in the size of the module. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct Vf {
	Module *m;
	uint8_t *defined;           /* by ValueId */
	Loc loc;                    /* of the node being checked */
	int errors;
} Vf;

static void verify_graph(Vf *v, Graph *g);

static const char *opname(const Node *n, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s::%s", sym_str(n->domain), sym_str(n->name));
	return buf;
}

static void err(Vf *v, Loc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_emitv(DIAG_ERROR, loc, fmt, ap);
	va_end(ap);
	v->errors++;
}

static const char *vn(Vf *v, ValueId id)
{
	static char buf[2][200];
	static int k;
	char *b = buf[k ^= 1];
	snprintf(b, sizeof buf[0], "%%%s", sym_str(v->m->vals.v[id].name));
	return b;
}

static void define(Vf *v, ValueId id, Loc loc)
{
	if (id == VNONE)
		return;
	if (id >= v->m->vals.n) {
		err(v, loc, "result refers to no value");
		return;
	}
	if (v->defined[id])
		err(v, loc, "value %s is defined twice", vn(v, id));
	v->defined[id] = 1;
}

static void use(ValueId id, void *ctx)
{
	Vf *v = ctx;
	if (id == VNONE || id >= v->m->vals.n)
		err(v, v->loc, "use of a missing value");
	else if (!v->defined[id])
		err(v, v->loc, "value %s is used before its definition or outside its scope", vn(v, id));
}

static void forget(Vf *v, Graph *g)
{
	for (uint32_t i = 0; i < g->nin; i++)
		v->defined[g->in[i]] = 0;
	for (uint32_t i = 0; i < g->inits.n; i++)
		v->defined[g->inits.v[i]] = 0;
	for (Node *n = g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++)
			v->defined[n->res[i]] = 0;
}

static void visit_subgraphs(Vf *v, const Arg *a)
{
	if (a->kind == A_GRAPH) {
		verify_graph(v, a->u.g);
		forget(v, a->u.g);
	} else if (a->kind == A_LIST) {
		for (uint32_t i = 0; i < a->n; i++)
			visit_subgraphs(v, &a->u.list[i]);
	}
}

static int count_in_range(int64_t n, int lo, int hi) { return n >= lo && (hi < 0 || n <= hi); }

static void check_arity(Vf *v, const Node *n)
{
	const OpInfo *oi = &op_info[n->op];
	char name[256];
	if (n->op == OP_GENERIC)
		return;
	int64_t nin = oi->dom == DOM_ONNX ? n->nargs : (int64_t)n->nargs + n->nkw;
	if (!count_in_range(nin, oi->min_in, oi->max_in))
		err(v, n->loc, "%s expects %s %d %s, got %lld", opname(n, name, sizeof name),
		    nin < oi->min_in ? "at least" : "at most", nin < oi->min_in ? oi->min_in : oi->max_in,
		    oi->dom == DOM_ONNX ? "inputs" : "arguments", (long long)nin);
	if (!count_in_range(n->nres, oi->min_out, oi->max_out))
		err(v, n->loc, "%s expects %s %d result%s, got %u", opname(n, name, sizeof name),
		    n->nres < (uint32_t)oi->min_out ? "at least" : "at most",
		    n->nres < (uint32_t)oi->min_out ? oi->min_out : oi->max_out,
		    (n->nres < (uint32_t)oi->min_out ? oi->min_out : oi->max_out) == 1 ? "" : "s", n->nres);
}

/* ONNX inputs are values (or none for an omitted optional one);
 * attributes are never values. */
static void check_onnx_operands(Vf *v, const Node *n)
{
	char name[256];
	for (uint32_t i = 0; i < n->nargs; i++)
		if (n->args[i].kind != A_VALUE && n->args[i].kind != A_NONE)
			err(v, n->loc, "%s: input %u is not a value", opname(n, name, sizeof name), i);
	for (uint32_t i = 0; i < n->nkw; i++)
		if (n->kw[i].val.kind == A_VALUE || n->kw[i].val.kind == A_NONE)
			err(v, n->loc, "%s: attribute '%s' must be a constant", opname(n, name, sizeof name),
			    sym_str(n->kw[i].name));
}

static const Type *arg_type(Vf *v, const Arg *a)
{
	return a->kind == A_VALUE && a->u.v < v->m->vals.n ? v->m->vals.v[a->u.v].type : NULL;
}

static void check_sametype(Vf *v, const Node *n)
{
	int dt = -1;
	char name[256];
	for (uint32_t i = 0; i < n->nargs + n->nres; i++) {
		const Type *t = i < n->nargs ? arg_type(v, &n->args[i])
			: n->res[i - n->nargs] ? v->m->vals.v[n->res[i - n->nargs]].type : NULL;
		if (!t || t->kind != TY_TENSOR)
			continue;
		if (dt >= 0 && t->dtype != dt) {
			err(v, n->loc, "%s: operands must share one element type, found %s", opname(n, name, sizeof name),
			    dtype_name((DType)t->dtype));
			return;
		}
		dt = t->dtype;
	}
}

static void verify_node(Vf *v, Node *n)
{
	v->loc = n->loc;
	node_each_use(n, use, v);
	for (uint32_t i = 0; i < n->nargs; i++)
		visit_subgraphs(v, &n->args[i]);
	for (uint32_t i = 0; i < n->nkw; i++)
		visit_subgraphs(v, &n->kw[i].val);
	check_arity(v, n);
	if (n->domain == S_onnx)
		check_onnx_operands(v, n);
	if (node_has_flag(n, OPF_SAMETYPE))
		check_sametype(v, n);
	for (uint32_t i = 0; i < n->nres; i++)
		define(v, n->res[i], n->loc);
}

static void verify_graph(Vf *v, Graph *g)
{
	for (uint32_t i = 0; i < g->nin; i++)
		define(v, g->in[i], g->loc);
	for (uint32_t i = 0; i < g->inits.n; i++)
		define(v, g->inits.v[i], g->loc);
	uint32_t count = 0;
	for (Node *n = g->first; n; n = n->next, count++) {
		if (n->graph != g)
			err(v, n->loc, "node is linked into a graph it does not belong to");
		verify_node(v, n);
	}
	if (count != g->nnodes)
		err(v, g->loc, "graph node count is stale");
	v->loc = g->loc;
	for (uint32_t i = 0; i < g->nout; i++)
		use(g->out[i], v);
}

int verify_module(Module *m)
{
	Vf v = { m, calloc(m->vals.n + 1, 1), { 0 }, 0 };
	if (!v.defined)
		ONNXC_BUG("out of memory");
	for (uint32_t i = 0; i < m->graphs.n; i++) {
		verify_graph(&v, m->graphs.v[i]);
		memset(v.defined, 0, m->vals.n);
	}
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		verify_graph(&v, m->funcs.v[i]->body);
		memset(v.defined, 0, m->vals.n);
	}
	for (uint32_t i = 0; i < m->decomps.n; i++) {
		verify_graph(&v, m->decomps.v[i]->body);
		memset(v.defined, 0, m->vals.n);
	}
	free(v.defined);
	return v.errors;
}
