/* dot.c - the program as a Graphviz graph (-emit=dot).
 *
 * Nodes are boxes labelled by their op; inputs are ellipses, params,
 * buffers and constants notes; an edge carries the value's name and type.
 * Within a graph, nodes are grouped into nested clusters by their module
 * scope (the nn.Module path of scope(...)).  A call of a local function is
 * a 3-D box, and each function body is a cluster of its own; subgraphs
 * (If, Loop, Scan bodies) are clusters next to the node that holds them,
 * joined to it by a dotted edge.  Output depends only on the IR.
 *
 * Identifiers are v<ValueId> for graph inputs and constants, n<k> for
 * nodes in the order written; a value's producer is found by its ValueId,
 * which is unique in the module, so captures by subgraphs become edges
 * like any other use.
 */
#include <stdlib.h>
#include <string.h>
#include "backend.h"

/* One module scope in a graph: a cluster holding nodes and sub-clusters. */
typedef struct Scope {
	Sym path, cls;
	uint32_t parent;
	VEC(uint32_t) kids;         /* indices into Dot.scopes */
	VEC(const Node *) nodes;
	VEC(uint32_t) ids;          /* the nodes' identifiers, n<id> */
} Scope;

typedef struct Dot {
	FILE *f;
	FILE *edges;                /* written after every node: an edge inside a
				     * cluster would pull its ends into it */
	Module *m;
	char **prod;                /* by ValueId: the producer's identifier */
	uint32_t nid;               /* nodes written so far */
	uint32_t ncluster;
	VEC(Scope) scopes;          /* of the graph being written; [0] is its root */
	HashMap by_key;             /* (parent scope, path) -> index + 1 */
	HashMap funcs;              /* the module's functions, by (domain, name) */
	VEC(char *) holders;        /* ids of the graph's nodes that hold subgraphs */
	VEC(const Node *) held_by;
} Dot;

static uint32_t write_graph(Dot *d, Graph *g, const char *label);

/* A DOT string: quotes and backslashes escaped, newlines as \n. */
static void dot_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void type_text(FILE *f, const Type *t)
{
	char *buf = NULL;
	size_t n;
	FILE *mf = xmemstream(&buf, &n);
	if (t)
		print_type(mf, t);
	else
		fputc('?', mf);
	fclose(mf);
	dot_text(f, buf);
	free(buf);
}

static void set_prod(Dot *d, ValueId v, const char *id)
{
	free(d->prod[v]);
	d->prod[v] = xstrdup(id);
}

/* ---- module scopes --------------------------------------------------------- */

typedef struct ScopeKey { const Dot *d; uint32_t parent; Sym path; } ScopeKey;

static int scope_eq(uintptr_t item, const void *key)
{
	const ScopeKey *k = key;
	const Scope *s = &k->d->scopes.v[item - 1];
	return s->parent == k->parent && s->path == k->path;
}

/* The cluster of entry e under parent, made on first use. */
static uint32_t scope_child(Dot *d, uint32_t parent, const ScopeEntry *e)
{
	ScopeKey k = { d, parent, e->path };
	uint64_t h = hash_u64(((uint64_t)parent << 32) ^ e->path);
	uintptr_t i = hashmap_intern(&d->by_key, h, scope_eq, &k, (uintptr_t)d->scopes.n + 1);
	if (i == (uintptr_t)d->scopes.n + 1) {
		XVEC_PUSH(d->scopes, ((Scope){ e->path, e->cls, parent, { 0 }, { 0 }, { 0 } }));
		XVEC_PUSH(d->scopes.v[parent].kids, (uint32_t)(i - 1));
	}
	return (uint32_t)(i - 1);
}

/* Sorts g's nodes into the scope tree; the root module's own entry (path
 * "") is the graph itself, not a cluster. */
static void build_scopes(Dot *d, const Graph *g)
{
	Sym root = sym_cstr("");
	XVEC_PUSH(d->scopes, ((Scope){ 0 }));
	for (const Node *n = g->first; n; n = n->next) {
		uint32_t at = 0;
		for (uint32_t i = 0; n->prov && i < n->prov->nscope; i++)
			if (i > 0 || n->prov->scope[i].path != root)
				at = scope_child(d, at, &n->prov->scope[i]);
		XVEC_PUSH(d->scopes.v[at].nodes, n);
		XVEC_PUSH(d->scopes.v[at].ids, d->nid++);
	}
}

static void free_scopes(Dot *d)
{
	for (uint32_t i = 0; i < d->scopes.n; i++) {
		free(d->scopes.v[i].kids.v);
		free(d->scopes.v[i].nodes.v);
		free(d->scopes.v[i].ids.v);
	}
	free(d->scopes.v);
	memset(&d->scopes, 0, sizeof d->scopes);
	hashmap_free(&d->by_key);
	memset(&d->by_key, 0, sizeof d->by_key);
}

/* ---- nodes and edges --------------------------------------------------------- */

typedef struct Edge { Dot *d; const char *to; } Edge;

static void edge_from(ValueId v, void *ctx)
{
	Edge *e = ctx;
	Dot *d = e->d;
	if (!d->prod[v])
		return;
	fprintf(d->edges, "  %s -> %s [label=\"%%", d->prod[v], e->to);
	dot_text(d->edges, sym_str(val(d->m, v)->name));
	fputs("\\n", d->edges);
	type_text(d->edges, val(d->m, v)->type);
	fputs("\"];\n", d->edges);
}

static uint64_t func_hash(Sym domain, Sym name)
{
	return hash_u64(((uint64_t)domain << 32) | name);
}

static int func_eq(uintptr_t item, const void *key)
{
	const Func *f = (const Func *)item;
	const Node *n = key;
	return f->domain == n->domain && f->name == n->name;
}

static int is_call(const Dot *d, const Node *n)
{
	return hashmap_get(&d->funcs, func_hash(n->domain, n->name), func_eq, n) != 0;
}

static int func_same(uintptr_t item, const void *key)
{
	const Func *f = (const Func *)item, *g = key;
	return f->domain == g->domain && f->name == g->name;
}

/* The node's declaration, in its scope's cluster. */
static void write_node(Dot *d, const Node *n, uint32_t id)
{
	fprintf(d->f, "  n%u [label=\"", id);
	if (n->domain != S_onnx) {
		dot_text(d->f, sym_str(n->domain));
		fputs("::", d->f);
	}
	dot_text(d->f, sym_str(n->name));
	fprintf(d->f, "\"%s];\n", is_call(d, n) ? ", shape=box3d, style=\"filled,bold\", fillcolor=lightyellow" : "");
}

/* Its edges, in node order (producers are known before their uses). */
static void link_node(Dot *d, const Node *n, uint32_t id)
{
	char name[32];
	snprintf(name, sizeof name, "n%u", id);
	Edge e = { d, name };
	node_each_use(n, edge_from, &e);
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i])
			set_prod(d, n->res[i], name);
	if (node_has_subgraph(n)) {
		XVEC_PUSH(d->holders, xstrdup(name));
		XVEC_PUSH(d->held_by, n);
	}
}

static void write_scope(Dot *d, uint32_t at)
{
	const Scope *s = &d->scopes.v[at];
	if (at) {
		const char *cls = strrchr(sym_str(s->cls), '.');
		fprintf(d->f, "subgraph cluster_%u {\n  label=\"", d->ncluster++);
		dot_text(d->f, sym_str(s->path));
		fputs("\\n", d->f);
		dot_text(d->f, cls ? cls + 1 : sym_str(s->cls));
		fputs("\"; style=rounded; color=gray50;\n", d->f);
	}
	for (uint32_t i = 0; i < s->nodes.n; i++)
		write_node(d, s->nodes.v[i], s->ids.v[i]);
	for (uint32_t i = 0; i < s->kids.n; i++)
		write_scope(d, s->kids.v[i]);
	if (at)
		fputs("}\n", d->f);
}

static void write_inputs(Dot *d, const Graph *g)
{
	static const char *const kind[] = { "", "", "param ", "buffer ", "const " };
	for (uint32_t i = 0; i < g->nin + g->inits.n; i++) {
		ValueId v = i < g->nin ? g->in[i] : g->inits.v[i - g->nin];
		const Value *x = val(d->m, v);
		char id[32];
		snprintf(id, sizeof id, "v%u", v);
		fprintf(d->f, "  %s [shape=%s, label=\"%s%%", id, x->kind == VK_INPUT ? "ellipse" : "note", kind[x->kind]);
		dot_text(d->f, sym_str(x->name));
		fputs("\\n", d->f);
		type_text(d->f, x->type);
		fputs("\"];\n", d->f);
		set_prod(d, v, id);
	}
}

typedef struct Held { Dot *d; const char *owner; } Held;

/* A subgraph's cluster, joined to the node holding it by a dotted edge to
 * the cluster's anchor point. */
static void write_held(Graph *g, void *ctx)
{
	Held *h = ctx;
	char label[256];
	snprintf(label, sizeof label, "subgraph %s", *sym_str(g->name) ? sym_str(g->name) : "(unnamed)");
	uint32_t c = write_graph(h->d, g, label);
	fprintf(h->d->edges, "  %s -> sg%u [style=dotted, arrowhead=none];\n", h->owner, c);
}

/* A graph as a cluster: its inputs, its nodes by module scope, its
 * outputs; then, outside it, the subgraphs its nodes hold.  Recursion is
 * bounded by the verifier's nesting limit (IR_MAX_DEPTH). */
static uint32_t write_graph(Dot *d, Graph *g, const char *label)
{
	uint32_t me = d->ncluster++;
	fprintf(d->f, "subgraph cluster_%u {\n  label=\"", me);
	dot_text(d->f, label);
	fputs("\";\n", d->f);
	/* An invisible point that stands for the cluster (dotted edges). */
	fprintf(d->f, "  sg%u [shape=point, style=invis];\n", me);
	write_inputs(d, g);
	uint32_t nheld = d->holders.n, first = d->nid;
	build_scopes(d, g);
	write_scope(d, 0);
	free_scopes(d);
	for (const Node *n = g->first; n; n = n->next)
		link_node(d, n, first++);
	for (uint32_t i = 0; i < g->nout; i++) {
		char id[32];
		snprintf(id, sizeof id, "o%u_%u", me, i);
		fprintf(d->f, "  %s [shape=ellipse, style=dashed, label=\"output %u\"];\n", id, i);
		Edge e = { d, id };
		edge_from(g->out[i], &e);
	}
	fputs("}\n", d->f);
	/* A subgraph pushes its own holders after ours and pops them again. */
	uint32_t end = d->holders.n;
	for (uint32_t i = nheld; i < end; i++) {
		Held h = { d, d->holders.v[i] };
		node_each_subgraph(d->held_by.v[i], write_held, &h);
		free(d->holders.v[i]);
	}
	d->holders.n = d->held_by.n = nheld;
	return me;
}

int dot_write(Module *m, FILE *out)
{
	char *edges = NULL;
	size_t nedges;
	Dot d = { out, xmemstream(&edges, &nedges), m, xcalloc(m->vals.n + 1, sizeof *d.prod), 0, 0, { 0 }, { 0 }, { 0 },
		  { 0 }, { 0 } };
	for (uint32_t i = 0; i < m->funcs.n; i++)
		hashmap_intern(&d.funcs, func_hash(m->funcs.v[i]->domain, m->funcs.v[i]->name), func_same, m->funcs.v[i],
			       (uintptr_t)m->funcs.v[i]);
	fputs("digraph \"", out);
	dot_text(out, *sym_str(m->name) ? sym_str(m->name) : "module");
	fputs("\" {\n  compound=true;\n  node [shape=box, fontname=\"Helvetica\"];\n"
	      "  edge [fontname=\"Helvetica\", fontsize=9];\n", out);
	for (uint32_t i = 0; i < m->graphs.n; i++) {
		char label[256];
		snprintf(label, sizeof label, "graph @%s", sym_str(m->graphs.v[i]->name));
		write_graph(&d, m->graphs.v[i], label);
	}
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		const Func *fn = m->funcs.v[i];
		char label[256];
		snprintf(label, sizeof label, "func %s::%s", sym_str(fn->domain), sym_str(fn->name));
		write_graph(&d, fn->body, label);
	}
	fclose(d.edges);
	fputs(edges, out);
	fputs("}\n", out);
	free(edges);
	for (uint32_t i = 0; i < m->vals.n; i++)
		free(d.prod[i]);
	free(d.prod);
	free(d.holders.v);
	free(d.held_by.v);
	hashmap_free(&d.funcs);
	return ferror(out) ? 1 : 0;
}
