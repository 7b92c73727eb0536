/* verifier.c - structural checks on a module, run after parsing, after
 * import and (with -verify-each) after every pass.
 *
 * Dominance: nodes are in order, so a value dominates its uses exactly when
 * it is defined earlier in its graph.  A subgraph sees what its enclosing
 * graphs define before the node that holds it.  Each definition records
 * its graph and position; a use looks up the chain of enclosing graphs
 * (module_walk visits a graph before its subgraphs, so the chain is known),
 * which costs the nesting depth per use, not the graph size: linear in the
 * size of the module for any fixed depth. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

/* Where a graph sits: its enclosing graph and the position there of the
 * node that holds it. */
typedef struct Scope {
	const Graph *g;
	const struct Scope *up;     /* the parent's scope, NULL at the top */
	uint32_t owner_pos;
} Scope;

typedef struct Owner { const Node *n; uint32_t pos; } Owner;

static int scope_is(uintptr_t item, const void *g) { return ((const Scope *)item)->g == g; }
static int owner_is(uintptr_t item, const void *n) { return ((const Owner *)item)->n == n; }

typedef struct Verifier {
	Module *m;
	const Graph **def_graph;    /* by ValueId: where it is defined, NULL: nowhere yet */
	uint32_t *def_pos;          /* by ValueId: 0 for inputs and inits, k + 1 for node k */
	HashMap scopes;             /* Graph * -> Scope * */
	HashMap owners;             /* Node * holding a subgraph -> Owner * */
	VEC(void *) all;            /* the Scopes and Owners, for freeing */
	const Scope *scope;         /* of the graph being checked */
	uint32_t pos;               /* of the node being checked */
	Loc loc;                    /* of the node being checked */
	int errors;
} Verifier;

static const char *opname(const Node *n, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s::%s", sym_str(n->domain), sym_str(n->name));
	return buf;
}

static void err(Verifier *v, Loc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_emitv(DIAG_ERROR, loc, fmt, ap);
	va_end(ap);
	v->errors++;
}

static const char *vn(Verifier *v, ValueId id)
{
	static char buf[2][200];
	static int k;
	char *b = buf[k ^= 1];
	snprintf(b, sizeof buf[0], "%%%s", sym_str(v->m->vals.v[id].name));
	return b;
}

/* The printed form of t, malloc'd. */
static char *type_str(const Type *t)
{
	char *s;
	size_t n;
	FILE *f = xmemstream(&s, &n);
	print_type(f, t);
	fclose(f);
	return s;
}

/* A static shape whose byte size passes INT64_MAX cannot exist; every
 * size computed later (writer, folding, runtime) may rely on that. */
static void check_size(Verifier *v, const Type *t, Loc loc)
{
	while (t && t->kind != TY_TENSOR)
		t = t->elem;
	int64_t numel, nbytes;
	if (!t || type_size(t, &numel, &nbytes) == OK)
		return;
	char *s = type_str(t);
	err(v, loc, "type %s holds more than INT64_MAX bytes", s);
	free(s);
}

static void define(Verifier *v, ValueId id, Loc loc)
{
	if (id == VNONE)
		return;
	if (id >= v->m->vals.n) {
		err(v, loc, "result refers to no value");
		return;
	}
	check_size(v, v->m->vals.v[id].type, v->m->vals.v[id].loc.file ? v->m->vals.v[id].loc : loc);
	if (v->def_graph[id])
		err(v, loc, "value %s is defined twice", vn(v, id));
	v->def_graph[id] = v->scope->g;
	v->def_pos[id] = v->pos;
}

/* Defined in the current graph before this node, or in an enclosing graph
 * before the node that holds the current one.  A loop over the nesting
 * depth, not over nodes. */
static int visible(const Verifier *v, ValueId id)
{
	uint32_t limit = v->pos;
	for (const Scope *s = v->scope; s; limit = s->owner_pos, s = s->up)
		if (v->def_graph[id] == s->g)
			return v->def_pos[id] <= limit;
	return 0;
}

static void use(ValueId id, void *ctx)
{
	Verifier *v = ctx;
	if (id == VNONE || id >= v->m->vals.n)
		err(v, v->loc, "use of a missing value");
	else if (!visible(v, id))
		err(v, v->loc, "value %s is used before its definition or outside its scope", vn(v, id));
}

static int count_in_range(int64_t n, int lo, int hi) { return n >= lo && (hi < 0 || n <= hi); }

static void check_arity(Verifier *v, const Node *n)
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
static void check_onnx_operands(Verifier *v, const Node *n)
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

static const Type *arg_type(Verifier *v, const Arg *a)
{
	return a->kind == A_VALUE && a->u.v < v->m->vals.n ? v->m->vals.v[a->u.v].type : NULL;
}

static void check_sametype(Verifier *v, const Node *n)
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

/* A written result type must agree with what the operands give
 * (infer.c); only what both say is compared. */
static void check_inferred(Verifier *v, const Node *n)
{
	if (n->op == OP_GENERIC || op_info[n->op].dom != DOM_ONNX || !n->nres)
		return;
	int typed = 0;
	for (uint32_t i = 0; i < n->nres; i++)
		typed |= n->res[i] && n->res[i] < v->m->vals.n && v->m->vals.v[n->res[i]].type;
	for (uint32_t i = 0; i < n->nargs; i++)
		if (n->args[i].kind == A_VALUE && n->args[i].u.v >= v->m->vals.n)
			return;
	if (!typed)
		return;
	Type *buf[8], **out = n->nres <= 8 ? buf : xcalloc(n->nres, sizeof *out);
	infer_node(v->m, n, out);
	for (uint32_t i = 0; i < n->nres; i++) {
		const Type *w = n->res[i] && n->res[i] < v->m->vals.n ? v->m->vals.v[n->res[i]].type : NULL;
		if (!infer_conflict(w, out[i]))
			continue;
		char name[256], *tw = type_str(w), *ti = type_str(out[i]);
		err(v, n->loc, "%s: result %s is written %s, but its operands give %s",
		    opname(n, name, sizeof name), vn(v, n->res[i]), tw, ti);
		free(tw);
		free(ti);
		break;
	}
	if (out != buf)
		free(out);
}

static void verify_node(Verifier *v, Node *n)
{
	int before = v->errors;
	v->loc = n->loc;
	node_each_use(n, use, v);
	check_arity(v, n);
	if (n->domain == S_onnx)
		check_onnx_operands(v, n);
	if (node_has_flag(n, OPF_SAMETYPE))
		check_sametype(v, n);
	if (node_has_subgraph(n)) {
		Owner *o = xmalloc(sizeof *o);
		*o = (Owner){ n, v->pos };
		hashmap_intern(&v->owners, hash_u64((uintptr_t)n), owner_is, n, (uintptr_t)o);
		XVEC_PUSH(v->all, o);
	}
	v->pos++;
	for (uint32_t i = 0; i < n->nres; i++)
		define(v, n->res[i], n->loc);
	/* one error a node: a node already reported is not compared */
	if (n->domain == S_onnx && v->errors == before)
		check_inferred(v, n);
}

static const Scope *enter(Verifier *v, const GraphVisit *gv)
{
	Scope *s = xcalloc(1, sizeof *s);
	s->g = gv->g;
	if (gv->parent) {
		const Owner *o = (const Owner *)hashmap_get(&v->owners, hash_u64((uintptr_t)gv->owner), owner_is, gv->owner);
		s->up = (const Scope *)hashmap_get(&v->scopes, hash_u64((uintptr_t)gv->parent), scope_is, gv->parent);
		s->owner_pos = o ? o->pos : 0;
	}
	hashmap_intern(&v->scopes, hash_u64((uintptr_t)gv->g), scope_is, gv->g, (uintptr_t)s);
	XVEC_PUSH(v->all, s);
	return s;
}

static Status verify_graph(const GraphVisit *gv, void *ctx)
{
	Verifier *v = ctx;
	Graph *g = gv->g;
	/* A graph shared by two attributes (arg_copy shares graphs) is checked once. */
	if (hashmap_get(&v->scopes, hash_u64((uintptr_t)g), scope_is, g))
		return OK;
	v->scope = enter(v, gv);
	v->pos = 0;
	/* The recursive code after the verifier (printer, writer) relies on it. */
	if (gv->depth == IR_MAX_DEPTH + 1)
		err(v, g->loc, "subgraphs nest deeper than %d", IR_MAX_DEPTH);
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
	v->pos = count + 1;
	for (uint32_t i = 0; i < g->nout; i++) {
		use(g->out[i], v);
		if (g->out_decl)
			check_size(v, g->out_decl[i], g->loc);
	}
	return OK;
}

int verify_module(Module *m)
{
	Verifier v = { .m = m };
	v.def_graph = xcalloc(m->vals.n + 1, sizeof *v.def_graph);
	v.def_pos = xcalloc(m->vals.n + 1, sizeof *v.def_pos);
	module_walk(m, WALK_ALL, verify_graph, &v);
	for (uint32_t i = 0; i < v.all.n; i++)
		free(v.all.v[i]);
	free(v.all.v);
	hashmap_free(&v.scopes);
	hashmap_free(&v.owners);
	free(v.def_graph);
	free(v.def_pos);
	return v.errors;
}
