/* parse.c - building the IR from the grammar's actions (parser.y).
 *
 * Name resolution happens as the text is read: a value is visible from its
 * definition to the end of its graph, and inside that graph's subgraphs.
 * A use that does not resolve is remembered and reported at the end of the
 * top-level graph, where "used before its definition" can be told apart
 * from "undefined". */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "frontend.h"
#include "parser.h"

int yyparse(Parser *p);

int fxir_fast_lex = 1;

/* ---- symbol table: the value bound to each name ----------------------
 * Names are interned, so the table is an array indexed by Sym, grown on
 * demand; scopes are an undo log.  A use or a definition costs no hashing. */
typedef struct Undo { Sym name; ValueId old; } Undo;
typedef struct Pending { Sym name; Loc loc; } Pending;

struct SymTab {
	ValueId *bind;              /* by Sym; VNONE when unbound */
	uint32_t nbind;
	VEC(Undo) undo;
	VEC(uint32_t) marks;        /* undo depth at each open scope */
	VEC(Pending) pending;
};

static ValueId tab_find(SymTab *t, Sym s) { return s < t->nbind ? t->bind[s] : VNONE; }

static void tab_add(Parser *p, SymTab *t, Sym s, ValueId v)
{
	if (s >= t->nbind) {
		uint32_t n = t->nbind ? t->nbind : 1024;
		while (n <= s)
			n *= 2;
		ValueId *nb = xrealloc(t->bind, n * sizeof *nb);
		memset(nb + t->nbind, 0, (n - t->nbind) * sizeof *nb);
		t->bind = nb;
		t->nbind = n;
	}
	VEC_PUSH(&p->pa, t->undo, ((Undo){ s, t->bind[s] }));
	t->bind[s] = v;
}

static void tab_open(Parser *p) { VEC_PUSH(&p->pa, p->tab->marks, p->tab->undo.n); }

static void tab_unwind(SymTab *t, uint32_t depth)
{
	while (t->undo.n > depth) {
		Undo *u = &t->undo.v[--t->undo.n];
		t->bind[u->name] = u->old;
	}
}

static void tab_close(SymTab *t)
{
	if (t->marks.n)
		tab_unwind(t, t->marks.v[--t->marks.n]);
}

static void tab_reset(SymTab *t)
{
	tab_unwind(t, 0);
	t->marks.n = 0;
	t->pending.n = 0;
}

/* ---- hash-consing: one copy of each type and scope list ---------------- */
typedef struct HcEntry { uint64_t h; const void *key; uint32_t len; void *val; } HcEntry;
struct HashCons { HcEntry *e; uint32_t n, cap; };

static void hc_grow(Parser *p, HashCons *hc)
{
	uint32_t cap = hc->cap ? hc->cap * 2 : 1024;
	HcEntry *e = ARENA_ARRAY(&p->pa, HcEntry, cap);
	for (uint32_t i = 0; i < hc->cap; i++) {
		if (!hc->e[i].key)
			continue;
		uint32_t j = (uint32_t)hc->e[i].h & (cap - 1);
		while (e[j].key)
			j = (j + 1) & (cap - 1);
		e[j] = hc->e[i];
	}
	hc->e = e;
	hc->cap = cap;
}

/* The entry holding key, or the empty one where it goes (key NULL; fill it
 * with hc_put before the next lookup in the same table). */
static HcEntry *hc_slot(Parser *p, HashCons *hc, const void *key, uint32_t len)
{
	if ((hc->n + 1) * 2 > hc->cap)
		hc_grow(p, hc);
	uint64_t h = hash_mem(key, len);
	uint32_t j = (uint32_t)h & (hc->cap - 1);
	for (; hc->e[j].key; j = (j + 1) & (hc->cap - 1))
		if (hc->e[j].h == h && hc->e[j].len == len && memcmp(hc->e[j].key, key, len) == 0)
			return &hc->e[j];
	hc->e[j].h = h;
	hc->e[j].len = len;
	return &hc->e[j];
}

static void hc_put(Parser *p, HashCons *hc, HcEntry *slot, const void *key, void *val)
{
	slot->key = arena_dup(&p->pa, key, slot->len);
	slot->val = val;
	hc->n++;
}

/* The one shared copy of len bytes at val, in the module's arena. */
static void *hc_share(Parser *p, const void *val, uint32_t len)
{
	HcEntry *e = hc_slot(p, p->hc, val, len);
	if (!e->key)
		hc_put(p, p->hc, e, val, arena_dup(p->a, val, len));
	return e->val;
}

/* The lexer's fast paths remember what each spelling they read built, so a
 * type or scope seen before costs one lookup.  The slot is NULL the first
 * time; the caller stores what it builds there, or leaves it NULL. */
void **b_memo(Parser *p, const char *text, uint32_t n)
{
	HcEntry *e = hc_slot(p, p->memo, text, n);
	if (!e->key)
		hc_put(p, p->memo, e, text, NULL);
	return &e->val;
}

/* A scope list as nodes keep it: one shared copy in the module's arena. */
ScopeEntry *b_scope_shared(Parser *p, const ScopeEntry *v, uint32_t n)
{
	return hc_share(p, v, (uint32_t)(n * sizeof *v));
}

/* ---- helpers ------------------------------------------------------------ */
Loc b_loc(Parser *p, YYLTYPE l)
{
	return (Loc){ p->file, (uint32_t)l.first_line, (uint32_t)l.first_column };
}

void yyerror(YYLTYPE *lloc, Parser *p, const char *msg)
{
	if (diag_too_many() || p->lex.too_deep)     /* the lexer ended the input on purpose */
		return;
	diag_error(b_loc(p, *lloc), "%s", msg);
	/* Skip the rest of the broken line unless the offending token already
	 * starts a new line (then it may well start the next statement). */
	int t = p->lex.last_tok;
	if (t != 0 && t != '}' && !lex_first_on_line(p, lloc)) {
		p->skipping = 1;
		p->skip_depth = t == '{';
	}
}

/* "%x" or "%\"odd name\"" for messages. */
static const char *vname(Sym s)
{
	static char buf[2][160];
	static int k;
	char *b = buf[k ^= 1];
	const char *n = sym_str(s);
	int plain = *n != 0;
	for (const char *c = n; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.'))
			plain = 0;
	snprintf(b, sizeof buf[0], plain ? "%%%.150s" : "%%\"%.150s\"", n);
	return b;
}

static Sym opname_sym(OpName op)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s::%s", sym_str(op.dom), sym_str(op.name));
	return sym_cstr(buf);
}

/* Defines a value in the current scope; a name may be defined once in a
 * graph and the graphs around it. */
static ValueId define(Parser *p, Sym name, Type *t, ValueKind kind, Loc loc)
{
	ValueId prev = tab_find(p->tab, name);
	if (prev) {
		diag_error(loc, "redefinition of value %s", vname(name));
		diag_note(val(p->m, prev)->loc, "previous definition is here");
	}
	ValueId v = value_new(p->m, name, t, kind);
	val(p->m, v)->loc = loc;
	tab_add(p, p->tab, name, v);
	return v;
}

static int in_body_check(Parser *p, YYLTYPE l)
{
	if (!p->g)
		return 0;
	if (p->returned == 1)
		b_stmt_after_return(p, l);
	return 1;
}

static MetaProp *meta_copy(Parser *p, const MetaVec *kv)
{
	MetaProp *m = ARENA_ARRAY(p->a, MetaProp, kv->n ? kv->n : 1);
	for (uint32_t i = 0; i < kv->n; i++)
		m[i] = (MetaProp){ str_copy(p->a, kv->v[i].key), str_copy(p->a, kv->v[i].val) };
	return m;
}

/* ---- module level ------------------------------------------------------- */
void b_module_name(Parser *p, Sym name) { p->m->name = name; }

void b_weights(Parser *p, Str file, YYLTYPE l)
{
	if (p->m->weights)
		diag_error(b_loc(p, l), "module already names a weights file");
	p->m->weights = sym_intern(file.s, file.n);
}

void b_opset(Parser *p, Sym dom, int64_t v, YYLTYPE l)
{
	if (v < 1 || v > 1000000) {
		diag_error(b_loc(p, l), "opset version %lld out of range", (long long)v);
		return;
	}
	for (uint32_t i = 0; i < p->opsets->n; i++)
		if (p->opsets->v[i].domain == dom) {
			diag_error(b_loc(p, l), "opset for domain '%s' given twice", sym_str(dom));
			return;
		}
	VEC_PUSH(p->a, *p->opsets, ((Opset){ dom, v }));
}

void b_module_meta(Parser *p, MetaVec *kv) { p->m->meta = meta_copy(p, kv); p->m->nmeta = kv->n; }
void b_module_doc(Parser *p, Str s) { p->m->doc = str_copy(p->a, s); }

/* ---- graphs -------------------------------------------------------------- */
static Graph *graph_begin(Parser *p, Sym name, Graph *parent, YYLTYPE l)
{
	Graph *g = graph_new(p->m, name, parent);
	g->loc = b_loc(p, l);
	p->incap = 0;
	p->g = g;
	p->returned = 0;
	tab_open(p);
	return g;
}

Graph *b_graph_begin(Parser *p, Sym name, YYLTYPE l)
{
	tab_reset(p->tab);
	p->func = NULL;
	p->decomp = NULL;
	p->opsets = &p->m->opsets;
	Graph *g = graph_begin(p, name, NULL, l);
	for (uint32_t i = 0; i < p->m->graphs.n; i++)
		if (p->m->graphs.v[i]->name == name) {
			diag_error(g->loc, "redefinition of graph @%s", sym_str(name));
			diag_note(p->m->graphs.v[i]->loc, "previous definition is here");
		}
	VEC_PUSH(p->a, p->m->graphs, g);
	return g;
}

/* Reports the uses that never resolved, now that the graph is complete. */
static void report_pending(Parser *p)
{
	SymTab *t = p->tab;
	for (uint32_t i = 0; i < t->pending.n; i++) {
		Pending *u = &t->pending.v[i];
		ValueId e = tab_find(t, u->name);
		if (e) {
			diag_error(u->loc, "value %s is used before its definition", vname(u->name));
			diag_note(val(p->m, e)->loc, "defined here");
		} else {
			diag_error(u->loc, "use of undefined value %s", vname(u->name));
		}
	}
	t->pending.n = 0;
}

static void graph_finish(Parser *p, Graph *g, YYLTYPE l)
{
	if (!p->returned)
		diag_error(b_loc(p, l), "graph @%s has no return", sym_str(g->name));
}

void b_graph_end(Parser *p, YYLTYPE l)
{
	graph_finish(p, p->g, l);
	report_pending(p);
	tab_reset(p->tab);
	p->g = NULL;
}

Graph *b_subgraph_begin(Parser *p, Sym name, YYLTYPE l)
{
	if (!p->g) {
		diag_error(b_loc(p, l), "a subgraph may only appear inside a graph");
		return graph_begin(p, name, NULL, l);
	}
	uint32_t depth = 1;
	for (const Graph *g = p->g; g->parent; g = g->parent)
		depth++;
	if (depth > IR_MAX_DEPTH) {     /* reported once: the input ends here */
		diag_error(b_loc(p, l), "subgraphs nest deeper than %d", IR_MAX_DEPTH);
		p->lex.too_deep = 1;
	}
	return graph_begin(p, name, p->g, l);
}

Graph *b_subgraph_end(Parser *p)
{
	Graph *g = p->g;
	Loc end = g->loc;
	graph_finish(p, g, (YYLTYPE){ (int)end.line, (int)end.col });
	tab_close(p->tab);
	p->g = g->parent;
	p->returned = 0;
	return g;
}

/* A graph whose text was broken: restore the enclosing state. */
void b_graph_abandon(Parser *p, Graph *g)
{
	if (g && g->parent && p->g == g) {
		tab_close(p->tab);
		p->g = g->parent;
		p->returned = 0;
	}
}

void b_input(Parser *p, Sym name, Type *t, YYLTYPE l)
{
	Graph *g = p->g;
	if (!g)
		return;
	ValueId v = define(p, name, t, VK_INPUT, b_loc(p, l));
	/* Inputs only grow while this graph's header is read, so one capacity
	 * in Parser serves (graph_begin resets it). */
	if (g->nin == p->incap)
		g->in = arena_grow(p->a, g->in, &p->incap, g->nin + 1, sizeof *g->in);
	g->in[g->nin++] = v;
}

/* An input with a default (`%w: f32[3] = [...]`): the user may feed it or
 * not.  Only a top-level graph has them (ONNX: an initializer that is also
 * a graph input). */
void b_input_default(Parser *p, Sym name, Type *t, Arg *data, YYLTYPE l, YYLTYPE ld)
{
	if (!p->g)
		return;
	b_input(p, name, t, l);
	if (p->g->parent || p->func || p->decomp) {
		diag_error(b_loc(p, l), "only the inputs of a top-level graph may have a default");
		return;
	}
	Arg a = b_tensor(p, t, data, l, ld);
	val(p->m, p->g->in[p->g->nin - 1])->init = a.kind == A_TENSOR ? a.u.t : NULL;
}

void b_outsig(Parser *p, TypeVec *t)
{
	if (!p->g)
		return;
	/* `-> ()` declares zero outputs: out_decl is non-NULL even then. */
	p->g->out_decl = t ? arena_dup(p->a, t->v, t->n * sizeof *t->v) : ARENA_ARRAY(p->a, Type *, 1);
	p->g->nout = t ? t->n : 0;
	p->g->out = NULL;           /* filled by return */
}

void b_graph_meta(Parser *p, MetaVec *kv) { if (p->g) { p->g->meta = meta_copy(p, kv); p->g->nmeta = kv->n; } }
void b_graph_doc(Parser *p, Str s) { if (p->g) p->g->doc = str_copy(p->a, s); }

void b_stmt_after_return(Parser *p, YYLTYPE l)
{
	diag_error(b_loc(p, l), "statement after return");
	p->returned = 2;        /* reported once; the graph does have a return */
}

static Prov *make_prov(Parser *p, Trailers *tr);
static void init_trailers(Parser *p, ValueId v, Trailers *tr, YYLTYPE l);

void b_init(Parser *p, int kind, Sym name, Type *t, Str key, Trailers *tr, YYLTYPE l)
{
	if (!in_body_check(p, l))
		return;
	if (p->decomp || p->func)
		diag_error(b_loc(p, l), "%s may not appear in a %s", kind == VK_PARAM ? "param" : "buffer",
			   p->decomp ? "decomposition" : "function");
	if (t->kind != TY_TENSOR)
		diag_error(b_loc(p, l), "a %s must have a tensor type", kind == VK_PARAM ? "param" : "buffer");
	ValueId v = define(p, name, t, (ValueKind)kind, b_loc(p, l));
	val(p->m, v)->key = sym_intern(key.s, key.n);
	init_trailers(p, v, tr, l);
	VEC_PUSH(p->a, p->g->inits, v);
}

void b_const(Parser *p, Sym name, Type *t, Arg *data, Trailers *tr, YYLTYPE l, YYLTYPE ld)
{
	if (!in_body_check(p, l))
		return;
	Arg a = b_tensor(p, t, data, l, ld);
	ValueId v = define(p, name, t, VK_CONST, b_loc(p, l));
	val(p->m, v)->init = a.kind == A_TENSOR ? a.u.t : NULL;
	init_trailers(p, v, tr, l);
	VEC_PUSH(p->a, p->g->inits, v);
}

/* ---- nodes --------------------------------------------------------------- */
void b_call_arg(Parser *p, Call *c, Sym kw, Arg a, YYLTYPE l)
{
	if (!kw) {
		if (c->kw.n)
			diag_error(b_loc(p, l), "positional argument after keyword argument");
		VEC_PUSH(&p->t, c->pos, a);
		return;
	}
	for (uint32_t i = 0; i < c->kw.n; i++)
		if (c->kw.v[i].name == kw)
			diag_error(b_loc(p, l), "keyword argument '%s' given twice", sym_str(kw));
	VEC_PUSH(&p->t, c->kw, ((Named){ kw, a }));
}

/* A node whose provenance is the same as the node before it shares that
 * node's Prov: nodes from one line of one module come in runs.  (A table of
 * every Prov seen would catch more, at a cache miss per node.)  The trace
 * text lives in the interner, so equal traces are one pointer and the
 * record compares as bytes. */
static Prov *make_prov(Parser *p, Trailers *tr)
{
	if (!tr->has_prov)
		return NULL;
	Prov key;
	memset(&key, 0, sizeof key);
	key.nscope = tr->scope.n;
	key.file = tr->prov.file;
	key.line = tr->prov.line;
	key.col = tr->prov.col;
	if (tr->prov.trace.n) {
		Sym t = sym_intern(tr->prov.trace.s, tr->prov.trace.n);
		key.trace = (Str){ sym_str(t), tr->prov.trace.n };
	}
	if (key.nscope)
		key.scope = tr->scope_shared ? tr->scope.v : b_scope_shared(p, tr->scope.v, key.nscope);
	if (tr->meta.n) {       /* rare: not shared */
		Prov *pv = arena_dup(p->a, &key, sizeof key);
		pv->meta = meta_copy(p, &tr->meta);
		pv->nmeta = tr->meta.n;
		return pv;
	}
	if (!p->last_prov || memcmp(p->last_prov, &key, sizeof key) != 0)
		p->last_prov = arena_dup(p->a, &key, sizeof key);
	return p->last_prov;
}

/* An initializer's provenance (scope, loc, trace, meta: what a pass that
 * made it recorded, pkg.onnxc.folded_from among them) is its
 * metadata_props; name() and doc() belong to nodes only. */
static void init_trailers(Parser *p, ValueId v, Trailers *tr, YYLTYPE l)
{
	if (tr->node_name || tr->doc.n)
		diag_error(b_loc(p, l), "an initializer takes no %s()", tr->node_name ? "name" : "doc");
	val(p->m, v)->prov = make_prov(p, tr);
}

void b_trailer_loc(Parser *p, Trailers *t, Str file, int64_t line, int64_t col)
{
	(void)p;
	t->prov.file = sym_intern(file.s, file.n);
	t->prov.line = line < 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
	t->prov.col = col < 0 || col > UINT32_MAX ? 0 : (uint32_t)col;
	t->has_prov = 1;
}

/* PyTorch's spelling onnx::Op.opsetN, "Op as of opset N": op->name
 * becomes Op and *opset N when Op is an ONNX op that exists at N.
 * Returns 0 (op untouched) when the name has no such suffix. */
static int opset_suffix(OpName *op, unsigned *opset, Loc loc)
{
	const char *s = sym_str(op->name), *dot = strrchr(s, '.');
	if (!dot || strncmp(dot + 1, "opset", 5) != 0 || !dot[6] || strspn(dot + 6, "0123456789") != strlen(dot + 6))
		return 0;
	OpId id = op_lookup(S_onnx, sym_intern(s, (size_t)(dot - s)));
	if (id == OP_GENERIC)
		return 0;
	unsigned long v = strlen(dot + 6) > 5 ? 100000 : strtoul(dot + 6, NULL, 10);
	op->name = op_name_of(id);
	if (v > UINT16_MAX) {
		diag_error(loc, "opset version %s out of range", dot + 6);
		return 1;
	}
	if (v < op_info[id].since) {
		diag_error(loc, "onnx::%s has no version at opset %s: it first appears in opset %d",
			   op_info[id].name, dot + 6, op_info[id].since);
		return 1;
	}
	*opset = (unsigned)v;
	return 1;
}

void b_node(Parser *p, SymVec *res, Call *c, TypeVec *types, Trailers *tr, YYLTYPE l, YYLTYPE lr)
{
	if (!in_body_check(p, lr))
		return;
	uint32_t nres = res ? res->n : 0;
	Loc loc = b_loc(p, l);
	unsigned opset = 0;
	if (c->op.dom == S_onnx && op_lookup(c->op.dom, c->op.name) == OP_GENERIC &&
	    !opset_suffix(&c->op, &opset, loc))
		diag_error(loc, "unknown ONNX operator '%s'", sym_str(c->op.name));
	if (types && types->n != nres)
		diag_error(b_loc(p, l), "%u result type%s given for %u result%s", types->n,
			   types->n == 1 ? "" : "s", nres, nres == 1 ? "" : "s");
	Node *n = node_new(p->m, c->op.dom, c->op.name, nres, c->pos.n, c->kw.n);
	for (uint32_t i = 0; i < c->pos.n; i++)
		n->args[i] = arg_copy(p->a, &c->pos.v[i]);
	for (uint32_t i = 0; i < c->kw.n; i++)
		n->kw[i] = (Named){ c->kw.v[i].name, arg_copy(p->a, &c->kw.v[i].val) };
	n->loc = loc;
	n->opset = (uint16_t)opset;
	n->prov = make_prov(p, tr);
	n->node_name = tr->node_name;
	n->doc = str_copy(p->a, tr->doc);
	for (uint32_t i = 0; i < nres; i++) {
		if (!res->v[i])
			continue;
		Type *t = types && i < types->n ? types->v[i] : NULL;
		n->res[i] = define(p, res->v[i], t, VK_NODE, b_loc(p, lr));
		val(p->m, n->res[i])->def = n;
		val(p->m, n->res[i])->res = i;
	}
	node_append(p->g, n);
}

void b_return(Parser *p, SymVec *vals, YYLTYPE l)
{
	if (!in_body_check(p, l))
		return;
	Graph *g = p->g;
	uint32_t n = vals ? vals->n : 0;
	if (g->out_decl && g->nout != n)
		diag_error(b_loc(p, l), "graph declares %u output%s but returns %u value%s", g->nout,
			   g->nout == 1 ? "" : "s", n, n == 1 ? "" : "s");
	Type **decl = g->out_decl;
	uint32_t ndecl = g->nout;
	g->out = ARENA_ARRAY(p->a, ValueId, n ? n : 1);
	g->out_decl = ARENA_ARRAY(p->a, Type *, n ? n : 1);
	for (uint32_t i = 0; i < n; i++) {
		Arg a = b_value_ref(p, vals->v[i], l);
		g->out[i] = a.kind == A_VALUE ? a.u.v : VNONE;
		g->out_decl[i] = decl && i < ndecl ? decl[i] : NULL;
		Type *t = g->out[i] ? val(p->m, g->out[i])->type : NULL;
		if (g->out[i] && !t)
			val(p->m, g->out[i])->type = g->out_decl[i];
		else if (t && g->out_decl[i] && !type_equal(t, g->out_decl[i]))
			diag_error(b_loc(p, l), "return value %s has a type other than the declared output %u",
				   vname(vals->v[i]), i);
	}
	g->nout = n;
	p->returned = 1;
}

/* ---- functions and decompositions --------------------------------------- */
Func *b_func_begin(Parser *p, OpName op, YYLTYPE l)
{
	Func *f = ARENA_NEW(p->a, Func);
	f->domain = op.dom;
	f->name = op.name;
	f->loc = b_loc(p, l);
	if (op.dom == S_onnx || op.dom == S_aten)
		diag_error(f->loc, "a function may not be defined in domain '%s'", sym_str(op.dom));
	for (uint32_t i = 0; i < p->m->funcs.n; i++) {
		Func *o = p->m->funcs.v[i];
		if (o->domain == op.dom && o->name == op.name) {
			diag_error(f->loc, "redefinition of function %s", sym_str(opname_sym(op)));
			diag_note(o->loc, "previous definition is here");
		}
	}
	VEC_PUSH(p->a, p->m->funcs, f);
	tab_reset(p->tab);
	p->decomp = NULL;
	f->body = graph_begin(p, op.name, NULL, l);
	p->func = f;
	p->opsets = &f->opsets;
	return f;
}

void b_func_attrs(Parser *p, SymVec *names)
{
	if (p->func) {
		p->func->attrs = arena_dup(p->a, names->v, names->n * sizeof *names->v);
		p->func->nattr = names->n;
	}
}

void b_func_end(Parser *p, YYLTYPE l)
{
	b_graph_end(p, l);
	p->func = NULL;
	p->opsets = &p->m->opsets;
}

Decomp *b_decomp_begin(Parser *p, OpName op, YYLTYPE l)
{
	Decomp *d = ARENA_NEW(p->a, Decomp);
	d->domain = op.dom;
	d->name = op.name;
	d->loc = b_loc(p, l);
	VEC_PUSH(p->a, p->m->decomps, d);
	tab_reset(p->tab);
	p->func = NULL;
	d->body = graph_begin(p, op.name, NULL, l);
	p->decomp = d;
	return d;
}

static DParam *find_dparam(Decomp *d, Sym name)
{
	for (uint32_t i = 0; i < d->nparam; i++)
		if (d->params[i].name == name)
			return &d->params[i];
	return NULL;
}

void b_dparam(Parser *p, int kind, Sym name, Arg *deflt, YYLTYPE l)
{
	Decomp *d = p->decomp;
	if (!d)
		return;
	if (find_dparam(d, name))
		diag_error(b_loc(p, l), "parameter '%s' given twice", sym_str(name));
	DParam *np = ARENA_ARRAY(p->a, DParam, d->nparam + 1);
	if (d->nparam)
		memcpy(np, d->params, d->nparam * sizeof *np);
	np[d->nparam] = (DParam){ .kind = (uint8_t)kind, .has_default = deflt != NULL, .name = name,
				   .deflt = deflt ? arg_copy(p->a, deflt) : (Arg){ 0 } };
	d->params = np;
	d->nparam++;
	if (kind == DP_TENSOR)
		b_input(p, name, NULL, l);
}

/* ---- guards ------------------------------------------------------------- */
/* Guard expressions are kept (module arena); every builder returns a
 * node, so one mistake is reported and parsing goes on. */
static GExpr *gx_new(Parser *p, int kind, uint32_t n, YYLTYPE l)
{
	GExpr *e = ARENA_NEW(p->a, GExpr);
	e->kind = (uint8_t)kind;
	e->n = n;
	e->sub = ARENA_ARRAY(p->a, GExpr *, n ? n : 1);
	e->loc = b_loc(p, l);
	return e;
}

GExpr *b_gx(Parser *p, int kind, GExpr *a, GExpr *b, YYLTYPE l)
{
	GExpr *e = gx_new(p, kind, b ? 2 : 1, l);
	e->sub[0] = a;
	if (b)
		e->sub[1] = b;
	return e;
}

GExpr *b_gx_lit(Parser *p, Arg lit, YYLTYPE l)
{
	GExpr *e = gx_new(p, GX_LIT, 0, l);
	e->lit = arg_copy(p->a, &lit);
	return e;
}

GExpr *b_gx_param(Parser *p, Sym name, int is_value, YYLTYPE l)
{
	Decomp *d = p->decomp;
	DParam *dp = d ? find_dparam(d, name) : NULL;
	if (d && (!dp || (dp->kind == DP_TENSOR) != is_value))
		diag_error(b_loc(p, l), "guard names %s%s, which is not a parameter of this decomposition",
			   is_value ? "%" : "$", sym_str(name));
	GExpr *e = gx_new(p, is_value ? GX_VALUE : GX_PARAM, 0, l);
	e->name = name;
	return e;
}

GExprVec *b_gxs(Parser *p, GExprVec *v, GExpr *e)
{
	if (!v)
		v = ARENA_NEW(&p->t, GExprVec);
	VEC_PUSH(&p->t, *v, e);
	return v;
}

/* A list of literals is one literal, compared without building it. */
GExpr *b_gx_list(Parser *p, GExprVec *v, YYLTYPE l)
{
	uint32_t n = v ? v->n : 0, lits = 0;
	for (uint32_t i = 0; i < n; i++)
		lits += v->v[i]->kind == GX_LIT;
	if (lits == n) {
		Arg a = { .kind = A_LIST, .n = n, .u.list = ARENA_ARRAY(p->a, Arg, n ? n : 1) };
		for (uint32_t i = 0; i < n; i++)
			a.u.list[i] = v->v[i]->lit;
		GExpr *e = gx_new(p, GX_LIT, 0, l);
		e->lit = a;
		return e;
	}
	GExpr *e = gx_new(p, GX_LIST, n, l);
	memcpy(e->sub, v->v, n * sizeof *e->sub);
	return e;
}

/* rank(%x), dtype(%x), dim(%x, i), static(%x, i), len(%x or $x). */
GExpr *b_gx_fn(Parser *p, Sym name, GExprVec *args, YYLTYPE l)
{
	GExpr *e = gx_new(p, GX_FN, args->n, l);
	memcpy(e->sub, args->v, args->n * sizeof *e->sub);
	int fn = -1;
	for (int i = 0; i < GF_COUNT; i++)
		if (strcmp(sym_str(name), guard_fn_name[i]) == 0)
			fn = i;
	if (fn < 0) {
		diag_error(e->loc, "unknown guard function '%s' (expected rank, dtype, dim, static or len)", sym_str(name));
		return e;
	}
	e->fn = (uint8_t)fn;
	if (args->n != guard_fn_arity[fn])
		diag_error(e->loc, "%s takes %u argument%s", guard_fn_name[fn], guard_fn_arity[fn],
			   guard_fn_arity[fn] == 1 ? "" : "s");
	else if (e->sub[0]->kind != GX_VALUE && !(fn == GF_LEN && e->sub[0]->kind == GX_PARAM))
		diag_error(e->sub[0]->loc, "the first argument of %s must be a %%parameter%s", guard_fn_name[fn],
			   fn == GF_LEN ? " or a $parameter" : "");
	return e;
}

GExpr *b_gx_in(Parser *p, GExpr *a, Sym w1, Sym w2, GExpr *list, YYLTYPE l)
{
	int neg = w2 != 0;
	if (strcmp(sym_str(neg ? w2 : w1), "in") != 0 || (neg && strcmp(sym_str(w1), "not") != 0))
		diag_error(b_loc(p, l), "expected an operator (==, !=, <, <=, >, >=, in, not in), found '%s'",
			   sym_str(w1));
	return b_gx(p, neg ? GX_NOTIN : GX_IN, a, list, l);
}

GExpr *b_gx_minus(Parser *p, GExpr *a, int64_t negint, YYLTYPE l)
{
	if (negint >= 0 || negint == INT64_MIN) {
		diag_error(b_loc(p, l), "expected an operator before %lld", (long long)negint);
		return a;
	}
	return b_gx(p, GX_SUB, a, b_gx_lit(p, (Arg){ .kind = A_INT, .u.i = -negint }, l), l);
}

/* A condition must say yes or no: a comparison, `in`, static(...) or a
 * $parameter (true or false).  A definition adds a literal parameter the
 * call cannot bind, visible to later guards and to the body. */
void b_guard(Parser *p, Sym def, GExpr *e, YYLTYPE l)
{
	Decomp *d = p->decomp;
	if (!d)
		return;
	int cond = (e->kind >= GX_EQ && e->kind <= GX_NOTIN) || e->kind == GX_PARAM ||
		   (e->kind == GX_FN && e->fn == GF_STATIC);
	if (def && find_dparam(d, def))
		diag_error(b_loc(p, l), "$%s is already a parameter of this decomposition", sym_str(def));
	else if (def) {
		b_dparam(p, DP_LITERAL, def, NULL, l);
		d->params[d->nparam - 1].defined = 1;
	} else if (!cond)
		diag_error(e->loc, "a guard must be a condition: a comparison, 'in', static(...) or a $parameter");
	Guard *ng = ARENA_ARRAY(p->a, Guard, d->nguard + 1);
	if (d->nguard)
		memcpy(ng, d->guards, d->nguard * sizeof *ng);
	ng[d->nguard++] = (Guard){ def, e, b_loc(p, l) };
	d->guards = ng;
}

void b_decomp_end(Parser *p, YYLTYPE l)
{
	b_graph_end(p, l);
	p->decomp = NULL;
}

/* ---- argument values ---------------------------------------------------- */
Arg b_value_ref(Parser *p, Sym name, YYLTYPE l)
{
	ValueId e = tab_find(p->tab, name);
	if (e)
		return (Arg){ .kind = A_VALUE, .u.v = e };
	VEC_PUSH(&p->pa, p->tab->pending, ((Pending){ name, b_loc(p, l) }));
	return (Arg){ .kind = A_NONE };
}

Arg b_param_ref(Parser *p, Sym name, YYLTYPE l)
{
	if (!p->decomp)
		diag_error(b_loc(p, l), "$%s: literal parameters exist only in decompositions", sym_str(name));
	else if (!find_dparam(p->decomp, name) || find_dparam(p->decomp, name)->kind != DP_LITERAL)
		diag_error(b_loc(p, l), "unknown literal parameter $%s", sym_str(name));
	return (Arg){ .kind = A_PARAM, .u.sym = name };
}

Arg b_attr_ref(Parser *p, Sym name, YYLTYPE l)
{
	Func *f = p->func;
	int ok = 0;
	for (uint32_t i = 0; f && i < f->nattr; i++)
		ok |= f->attrs[i] == name;
	if (!f)
		diag_error(b_loc(p, l), "@%s: attribute references exist only in functions", sym_str(name));
	else if (!ok)
		diag_error(b_loc(p, l), "@%s is not an attribute of function %s", sym_str(name), sym_str(f->name));
	return (Arg){ .kind = A_ATTRREF, .u.sym = name };
}

Arg b_list(Parser *p, ArgVec *v)
{
	(void)p;
	return (Arg){ .kind = A_LIST, .n = v->n, .u.list = v->v };
}

Arg b_empty_list(Parser *p, Sym kind, YYLTYPE l)
{
	static const struct { const char *name; uint8_t kind; } kinds[] = {
		{ "int", A_INT }, { "float", A_FLOAT }, { "string", A_STR },
		{ "tensor", A_TENSOR }, { "graph", A_GRAPH }, { "type", A_TYPE },
	};
	Arg a = { .kind = A_LIST };
	if (!kind)
		return a;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(sym_str(kind), kinds[i].name) == 0)
			a.elem = kinds[i].kind;
	if (!a.elem)
		diag_error(b_loc(p, l), "unknown list kind '%s' (expected int, float, string, tensor, graph or type)",
			   sym_str(kind));
	return a;
}

Arg b_hex(Parser *p, Str s)
{
	(void)p;
	return (Arg){ .kind = A_STR, .elem = 1, .u.s = s };  /* elem 1 marks hex bytes */
}

/* Types are immutable, so equal types share one Type. */
static Type *type_shared(Parser *p, int kind, int64_t dt, int32_t rank, const Dim *dims, Type *elem)
{
	int64_t key[4 + 2 * 64];
	uint32_t nd = rank > 0 ? (uint32_t)rank : 0;
	if (nd > 64)
		return kind == TY_TENSOR ? type_tensor(p->a, (DType)dt, rank, dims) : type_wrap(p->a, (TypeKind)kind, elem);
	key[0] = kind, key[1] = dt, key[2] = rank, key[3] = (int64_t)(intptr_t)elem;
	for (uint32_t i = 0; i < nd; i++)
		key[4 + 2 * i] = dims[i].v, key[5 + 2 * i] = dims[i].sym;
	uint32_t len = (uint32_t)((4 + 2 * nd) * sizeof key[0]);
	HcEntry *e = hc_slot(p, p->hc, key, len);
	if (!e->key)
		hc_put(p, p->hc, e, key, kind == TY_TENSOR ? type_tensor(p->a, (DType)dt, rank, dims)
							 : type_wrap(p->a, (TypeKind)kind, elem));
	return e->val;
}

Type *b_tensor_type(Parser *p, int64_t dt, DimVec *dims, int ranked)
{
	int32_t rank = !ranked ? -1 : dims ? (int32_t)dims->n : 0;
	return type_shared(p, TY_TENSOR, dt, rank, dims ? dims->v : NULL, NULL);
}

Type *b_wrap_type(Parser *p, int kind, Type *elem) { return type_shared(p, kind, 0, -1, NULL, elem); }

/* Scratch vectors start with room for a few elements, so the common
 * short list is filled without a call to grow it. */
#define VEC_START(a, T, vec, n) \
	((vec) = ARENA_NEW(a, T), (vec)->v = arena_alloc(a, (n) * sizeof *(vec)->v), (vec)->cap = (n))

DimVec *b_dims(Parser *p, DimVec *v, Dim d)
{
	if (!v)
		VEC_START(&p->t, DimVec, v, 6);
	VEC_PUSH(&p->t, *v, d);
	return v;
}

SymVec *b_syms(Parser *p, SymVec *v, Sym s)
{
	if (!v)
		VEC_START(&p->t, SymVec, v, 4);
	VEC_PUSH(&p->t, *v, s);
	return v;
}

Call *b_call_new(Parser *p)
{
	Call *c = ARENA_NEW(&p->t, Call);
	c->pos.v = ARENA_ARRAY(&p->t, Arg, 4);
	c->pos.cap = 4;
	return c;
}

Dim b_dim_int(Parser *p, int64_t v, YYLTYPE l)
{
	if (v < 0)
		diag_error(b_loc(p, l), "dimension must not be negative (use ? for unknown)");
	return (Dim){ v < 0 ? -1 : v, 0 };
}

Dim b_dim_str(Str s) { return (Dim){ -1, s.n ? sym_intern(s.s, s.n) : 0 }; }

TypeVec *b_types(Parser *p, TypeVec *v, Type *t)
{
	if (!v)
		VEC_START(&p->t, TypeVec, v, 4);
	VEC_PUSH(&p->t, *v, t);
	return v;
}

void b_reset(Parser *p)
{
	int live = p->lex.last_tok == STRING || p->lex.last_tok == HEXSTR;
	if (!live && (!p->g || !p->g->parent))
		arena_reset(&p->t);
}

/* ---- parse entry -------------------------------------------------------- */
Module *parse_fxir(const char *file, const char *text, size_t len)
{
	diag_add_source(sym_cstr(file), text, len);
	return parse_fxir_at(file, text, len, 1);
}

Module *parse_fxir_at(const char *file, const char *text, size_t len, uint32_t first_line)
{
	Parser p = { 0 };
	SymTab tab = { 0 };
	HashCons hc = { 0 }, memo = { 0 };
	char *copy = NULL;
	if (text[len] != 0) {   /* the lexer needs a NUL sentinel at the end */
		copy = xmalloc(len + 1);
		memcpy(copy, text, len);
		copy[len] = 0;
		text = copy;
	}
	int errors = diag_error_count();
	p.file = sym_cstr(file);
	p.m = module_new(0);
	p.m->file = p.file;
	p.a = &p.m->arena;
	p.tab = &tab;
	p.hc = &hc;
	p.memo = &memo;
	p.opsets = &p.m->opsets;
	p.fast = fxir_fast_lex;
	p.lex = (Lexer){ .cur = text, .lim = text + len, .bol = text, .line = first_line };
	int rc = yyparse(&p);
	free(copy);
	free(tab.bind);
	arena_free(&p.t);
	arena_free(&p.pa);
	if (rc == 0 && p.m->graphs.n + p.m->funcs.n + p.m->decomps.n == 0 && diag_error_count() == errors)
		diag_error((Loc){ p.file, first_line, 1 }, "no graph, function or decomposition in input");
	if (rc != 0 || diag_error_count() != errors) {
		module_free(p.m);
		return NULL;
	}
	return p.m;
}

char *read_file(const char *path, size_t *len)
{
	Sym f = sym_cstr(path);
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		diag_error((Loc){ f, 0, 0 }, fd < 0 ? "cannot open file" : "not a regular file");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	char *buf = malloc(n + 1);
	size_t got = 0;
	while (buf && got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!buf || got != n) {
		diag_error((Loc){ f, 0, 0 }, "cannot read file");
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* ---- tensor literals ---------------------------------------------------- */
static void flatten(Parser *p, const Arg *a, ArgVec *out)
{
	if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			flatten(p, &a->u.list[i], out);
	else
		VEC_PUSH(&p->t, *out, *a);
}

static int fill_strings(Parser *p, Tensor *t, ArgVec *el, Loc loc)
{
	t->strs = ARENA_ARRAY(p->a, Str, el->n ? el->n : 1);
	for (uint32_t i = 0; i < el->n; i++) {
		if (el->v[i].kind != A_STR || el->v[i].elem) {
			diag_error(loc, "a str tensor holds strings");
			return 0;
		}
		t->strs[i] = str_copy(p->a, el->v[i].u.s);
	}
	return 1;
}

static int fill_numbers(Parser *p, Tensor *t, ArgVec *el, Loc loc)
{
	DType dt = (DType)t->type->dtype;
	uint8_t *d = arena_alloc(p->a, t->nbytes ? t->nbytes : 1);
	if (!dtype_is_float(dt) && !dtype_is_int(dt)) {
		diag_error(loc, "%s tensors must be written as hex bytes (x\"...\")", dtype_name(dt));
		return 0;
	}
	for (uint32_t i = 0; i < el->n; i++) {
		Arg *e = &el->v[i];
		int is_int = e->kind == A_INT || e->kind == A_BOOL;
		if ((!is_int && e->kind != A_FLOAT) ||
		    !tensor_put(dt, d, i, e->u.f, e->u.i, is_int)) {
			diag_error(loc, "element %u does not fit element type %s", i, dtype_name(dt));
			return 0;
		}
	}
	t->data = d;
	return 1;
}

Arg b_tensor(Parser *p, Type *ty, Arg *data, YYLTYPE lt, YYLTYPE ld)
{
	Loc loc = b_loc(p, ld);
	int64_t numel, nbytes;
	if (type_size(ty, &numel, &nbytes) != OK) {
		diag_error(b_loc(p, lt), "the tensor type holds more than INT64_MAX bytes");
		return (Arg){ .kind = A_NONE };
	}
	if (ty->kind != TY_TENSOR || numel < 0) {
		diag_error(b_loc(p, lt), "a tensor literal needs a tensor type with every dimension known");
		return (Arg){ .kind = A_NONE };
	}
	Tensor *t = ARENA_NEW(p->a, Tensor);
	t->type = ty;
	DType dt = (DType)ty->dtype;
	t->nbytes = dt == DT_STR ? 0 : tensor_nbytes(dt, numel);
	if (data->kind == A_STR && data->elem) {         /* hex bytes */
		if (dt == DT_STR)
			diag_error(loc, "a str tensor cannot be given as hex bytes");
		else if (data->u.s.n != t->nbytes)
			diag_error(loc, "hex data has %u bytes, %s needs %zu", data->u.s.n, dtype_name(dt), t->nbytes);
		t->data = arena_dup(p->a, data->u.s.s, data->u.s.n);
		return (Arg){ .kind = A_TENSOR, .u.t = t };
	}
	ArgVec el = { 0 };
	flatten(p, data, &el);
	if ((int64_t)el.n != numel) {
		diag_error(loc, "tensor literal has %u element%s, its type needs %lld", el.n, el.n == 1 ? "" : "s",
			   (long long)numel);
		return (Arg){ .kind = A_NONE };
	}
	if (!(dt == DT_STR ? fill_strings(p, t, &el, loc) : fill_numbers(p, t, &el, loc)))
		return (Arg){ .kind = A_NONE };
	return (Arg){ .kind = A_TENSOR, .u.t = t };
}

char *read_stdin(size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, stdin)) > 0;) {
		n += r;
		if (cap - n - 1 == 0) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	if (!buf || ferror(stdin)) {
		diag_error((Loc){ sym_cstr("<stdin>"), 0, 0 }, "cannot read standard input");
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}
