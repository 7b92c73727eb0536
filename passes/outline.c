/* outline.c - nn.Module calls become ONNX local functions.
 *
 * The nodes of one module instance are those whose scope(...) holds that
 * instance's (path, class) entry.  Innermost instances go first, one scope
 * depth at a time, so an instance's body holds the calls its children
 * became: nested modules become nested functions.  An instance becomes a
 * call to a function of domain pkg.onnxc.modules; its inputs are the values
 * it reads from outside (activations and weights, in order of first use),
 * its outputs the values it defines that are read outside (in order).
 *
 * Identical instances share one function.  A body is encoded as a stream of
 * tokens (class, ops, attributes, result types, operands as positions
 * relative to the body's inputs and results; onnx::Constant operands by
 * value at their first use), hashed once and looked up in a HashMap:
 * linear time.  Bodies that differ get their own function: Linear, then
 * Linear_2, Linear_3.
 *
 * Instances that differ only in literal attributes (a LeakyRelu's alpha, a
 * LayerNormalization's epsilon, a child call's attributes) or in the value
 * of a constant they read (an eps written out) share one function too,
 * with those literals as its attributes: the body reads
 * `@"inferred::alpha"`, and each call passes its own value, as a
 * TorchScript export of a module with constant attributes does.  Literal tokens that may become attributes
 * hash by their kind only, so such instances meet in one bucket; the
 * instances of one depth are encoded first and grouped, a literal that
 * differs within a group becomes an attribute (named after the module
 * attribute the bridge matched the literal to, else after the node's
 * attribute with the prefix "inferred::", `inferred::value` for a
 * constant), and the others stay in the body.  A function made earlier is
 * reused when every literal it fixed is the group's too.
 *
 * The instance's annotated module attributes (the bridge's table in the
 * graph's meta "pkg.onnxc.module_attributes", read once into a map by
 * path) that the body does not read are declared on the function as well,
 * and each call passes its instance's values; they are not in the tokens,
 * so instances differing only in them share the function.
 *
 * An onnx::Constant without operands belongs to no instance: every body
 * that reads one gets its own copy, so instances stay identical when cse
 * merged their constants.  The copies in the graph are left for dce.
 *
 * An instance stays inline, with a note saying why, when its nodes cannot
 * become one call: a node holds a subgraph; nothing it computes is used;
 * it is interleaved with another instance of its depth; or a node outside
 * it reads one of its values and feeds one of its later nodes.  Outside
 * nodes between its first and last node that read its values move after
 * the call (they cannot feed it: that was checked); the others stay.
 */
#include <stdlib.h>
#include <string.h>
#include "passes.h"

typedef struct Tok {
	uint64_t x;
	const Arg *lit;             /* compared with arg_identical, or NULL */
	const Type *ty;             /* compared with type_equal when typed */
	uint8_t typed;
	uint8_t param;              /* lit may become a function attribute: x is its kind */
} Tok;

/* Where a param token's literal is: attribute kw of member k of the
 * instance, or of its free constant -1-k. */
typedef struct Site { int32_t k; uint32_t kw; } Site;

typedef VEC(Tok) TokVec;
typedef VEC(ValueId) IdVec;
typedef VEC(uint32_t) PosVec;

typedef struct Inst {
	Sym path, cls;
	PosVec mem;                 /* member positions, in order */
	const char *why;            /* why it stays inline, or NULL */
	int selected;
} Inst;

typedef struct Body {           /* a function made by this pass */
	Func *f;
	uint64_t hash;
	Tok *tok;
	uint32_t ntok;
	Sym *attr;                  /* by param token: the attribute it became, or 0 */
	Sym *extra;                 /* declared module attributes the body does not read */
	uint32_t *extra_at;         /* by extra: its place in the first instance's list */
	uint32_t nextra;
	struct Body *next;          /* same structure, other fixed literals */
} Body;

/* An instance's annotated module attributes, from the graph's table. */
typedef struct Annot { Sym path; uint32_t n; Named *v; } Annot;

typedef struct Enc {            /* an instance encoded, waiting for its call */
	uint32_t inst, group;       /* group: the index of its group's first Enc */
	Tok *tok;
	uint32_t ntok, nin, nout, nconst, nsite;
	ValueId *in, *out, *consts;
	Site *site;
	uint8_t *vary;              /* first of a group: by param, differs in the group */
	Body *body;                 /* first of a group: the function it calls */
} Enc;

typedef struct Outline {
	Module *m;
	Graph *g;
	const char *classes;
	/* by position in the graph (1-based) at the start of a level */
	Node **node;
	int32_t *inst;
	uint8_t *taint;
	uint32_t npos;
	/* by ValueId, sized at the start of a level (only graph values are asked) */
	uint32_t *defpos;
	uint8_t *is_out;
	uint32_t *stamp, *code;
	ValueId *bmap;
	uint32_t nvals, serial;
	VEC(Inst) insts;
	HashMap keys;               /* (path, cls) -> instance index + 1 */
	HashMap bodies;             /* token hash -> Body * */
	HashMap fnames;             /* function names in use (Syms) */
	VEC(Body *) all;
	VEC(Annot) annots;          /* the graph's table (pkg.onnxc.module_attributes) */
	HashMap annot_at;           /* path -> annots index + 1 */
	/* the instance being encoded */
	TokVec tok;
	IdVec in, out, consts;
	VEC(Site) sites;
	uint32_t nlocal;
	uint32_t done, left;        /* instances outlined and left inline */
} Outline;

/* A malloc'd copy of n elements of size sz at p (p may be NULL when n is 0). */
static void *dup_n(const void *p, size_t n, size_t sz)
{
	void *d = xreallocarray(NULL, n + 1, sz);
	if (n)
		memcpy(d, p, n * sz);
	return d;
}

/* ---- tokens -------------------------------------------------------------- */
enum { T_VAL = 1, T_CONST, T_LIST, T_LIT, T_NODE, T_KW, T_TYPE, T_NONE, T_CREF };
enum { CONST_BIT = 1u << 31 };  /* code of a free constant: CONST_BIT | its number */

static uint64_t type_hash(const Type *t)
{
	if (!t)
		return 0x5bd1e995u;
	uint64_t h = hash_u64((uint64_t)t->kind << 40 | (uint64_t)t->dtype << 32 | (uint32_t)t->rank);
	for (int32_t i = 0; t->kind == TY_TENSOR && i < t->rank; i++)
		h = hash_u64(h ^ (uint64_t)t->dims[i].v ^ (uint64_t)t->dims[i].sym << 32);
	return t->elem ? hash_u64(h ^ type_hash(t->elem)) : h;
}

static void push(Outline *o, uint64_t x) { XVEC_PUSH(o->tok, ((Tok){ x, NULL, NULL, 0, 0 })); }
static void push_lit(Outline *o, const Arg *a) { XVEC_PUSH(o->tok, ((Tok){ arg_hash(a), a, NULL, 0, 0 })); }
static void push_type(Outline *o, const Type *t) { XVEC_PUSH(o->tok, ((Tok){ type_hash(t), NULL, t, 1, 0 })); }

/* A literal ONNX can pass as a function attribute: INT, FLOAT, STRING,
 * TENSOR and their lists. */
static int attr_literal(const Arg *a)
{
	switch (a->kind) {
	case A_INT: case A_BOOL: case A_FLOAT: case A_STR: case A_IDENT: case A_TENSOR:
		return 1;
	case A_LIST:
		for (uint32_t i = 0; i < a->n; i++)
			if (a->u.list[i].kind != A_INT && a->u.list[i].kind != A_FLOAT && a->u.list[i].kind != A_STR)
				return 0;
		return 1;
	default:
		return 0;
	}
}

/* Attribute kw of site k: a param token when it can be an attribute. */
static void push_attr(Outline *o, const Arg *a, int32_t k, uint32_t kw)
{
	if (!attr_literal(a)) {
		push_lit(o, a);
		return;
	}
	uint64_t kind = (uint64_t)a->kind << 8 | (a->kind == A_LIST && a->n ? a->u.list[0].kind : a->elem);
	XVEC_PUSH(o->tok, ((Tok){ hash_u64(kind ^ 0xa77u), a, NULL, 0, 1 }));
	XVEC_PUSH(o->sites, ((Site){ k, kw }));
}

static int free_const(const Node *n) { return n && n->op == OP_ONNX_Constant && n->nargs == 0 && n->nres == 1; }

/* Free constant j, at its first use: its attributes and type. */
static void enc_const(Outline *o, ValueId v, uint32_t j)
{
	const Node *c = def_of(o->m, v);
	push(o, T_CONST);
	push(o, c->nkw);
	for (uint32_t i = 0; i < c->nkw; i++) {
		push(o, c->kw[i].name);
		push_attr(o, &c->kw[i].val, -1 - (int32_t)j, i);
	}
	push_type(o, val(o->m, v)->type);
}

/* v is a graph value being encoded: a result of the body, an input
 * (numbered at its first use) or a free constant (by value at its first
 * use, by number after). */
static void enc_value(Outline *o, ValueId v)
{
	if (v == VNONE) {
		push(o, T_NONE);
		return;
	}
	if (o->stamp[v] != o->serial) {
		Node *d = def_of(o->m, v);
		o->stamp[v] = o->serial;
		if (free_const(d)) {
			o->code[v] = CONST_BIT | o->consts.n;
			XVEC_PUSH(o->consts, v);
			enc_const(o, v, o->consts.n - 1);
			return;
		}
		o->code[v] = 2 * o->in.n + 2;
		XVEC_PUSH(o->in, v);
	}
	push(o, o->code[v] & CONST_BIT ? T_CREF : T_VAL);
	push(o, o->code[v]);
}

static void enc_arg(Outline *o, const Arg *a)
{
	if (a->kind == A_VALUE) {
		enc_value(o, a->u.v);
	} else if (a->kind == A_LIST && arg_contains(a, A_VALUE)) {
		push(o, T_LIST);
		push(o, (uint64_t)a->n << 8 | a->elem);
		for (uint32_t i = 0; i < a->n; i++)
			enc_arg(o, &a->u.list[i]);
	} else {
		push(o, T_LIT);
		push_lit(o, a);
	}
}

/* Member k of the instance.  Its attributes may become the function's,
 * but not an ATen call's arguments (they are not ONNX attributes). */
static void enc_node(Outline *o, const Node *n, uint32_t k)
{
	push(o, T_NODE);
	push(o, (uint64_t)n->domain << 32 | n->name);
	push(o, (uint64_t)n->nres << 40 | (uint64_t)n->nargs << 20 | n->nkw);
	for (uint32_t i = 0; i < n->nargs; i++)
		enc_arg(o, &n->args[i]);
	for (uint32_t i = 0; i < n->nkw; i++) {
		push(o, T_KW);
		push(o, n->kw[i].name);
		if (n->domain != S_aten && attr_literal(&n->kw[i].val)) {
			push(o, T_LIT);
			push_attr(o, &n->kw[i].val, (int32_t)k, i);
		} else {
			enc_arg(o, &n->kw[i].val);
		}
	}
	for (uint32_t i = 0; i < n->nres; i++) {
		ValueId r = n->res[i];
		push(o, r ? T_TYPE : T_NONE);
		if (!r)
			continue;
		push_type(o, val(o->m, r)->type);
		o->stamp[r] = o->serial;
		o->code[r] = 2 * o->nlocal++ + 1;
	}
}

static int is_weight(Module *m, ValueId v)
{
	uint8_t k = val(m, v)->kind;
	return k == VK_PARAM || k == VK_BUFFER || k == VK_CONST;
}

/* Encodes instance x: fills o->tok, o->in, o->out and o->consts. */
static void encode(Outline *o, const Inst *x)
{
	o->tok.n = o->in.n = o->out.n = o->consts.n = o->sites.n = 0;
	o->nlocal = 0;
	o->serial++;
	push(o, x->cls);
	for (uint32_t k = 0; k < x->mem.n; k++) {
		const Node *n = o->node[x->mem.v[k]];
		enc_node(o, n, k);
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i] && o->is_out[n->res[i]])
				XVEC_PUSH(o->out, n->res[i]);
	}
	push(o, o->out.n);
	for (uint32_t i = 0; i < o->out.n; i++)
		push(o, o->code[o->out.v[i]]);
	push(o, o->in.n);
	for (uint32_t i = 0; i < o->in.n; i++) {
		push(o, is_weight(o->m, o->in.v[i]));
		push_type(o, val(o->m, o->in.v[i])->type);
	}
	/* Activations first, then weights, each in order of first use; the
	 * kinds are in the tokens, so identical bodies order alike. */
	uint32_t k = 0;
	IdVec w = { 0 };
	for (uint32_t i = 0; i < o->in.n; i++)
		if (is_weight(o->m, o->in.v[i]))
			XVEC_PUSH(w, o->in.v[i]);
		else
			o->in.v[k++] = o->in.v[i];
	if (w.n)
		memcpy(o->in.v + k, w.v, w.n * sizeof *w.v);
	free(w.v);
}

static uint64_t tok_hash(const Tok *t, uint32_t n)
{
	uint64_t h = n;
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ t[i].x) * 0x9e3779b97f4a7c15ull;
	return hash_u64(h);
}

/* The same structure: param literals are not compared (their kinds are). */
static int tok_same(const Tok *a, const Tok *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (a[i].x != b[i].x || a[i].typed != b[i].typed || a[i].param != b[i].param)
			return 0;
		if (a[i].lit && !a[i].param && !arg_identical(a[i].lit, b[i].lit))
			return 0;
		if (a[i].typed && !type_equal(a[i].ty, b[i].ty))
			return 0;
	}
	return 1;
}

static int body_is(uintptr_t item, const void *key)
{
	const Body *b = (const Body *)item;
	const Enc *e = key;
	return b->ntok == e->ntok && tok_same(b->tok, e->tok, e->ntok);
}

typedef struct EKey { const Enc *base, *e; } EKey;

/* item: 1 + the index of an Enc in key->base. */
static int enc_is(uintptr_t item, const void *key)
{
	const EKey *k = key;
	const Enc *a = &k->base[item - 1], *b = k->e;
	return a->ntok == b->ntok && tok_same(a->tok, b->tok, b->ntok);
}

int outline_record_is(uintptr_t item, const void *call) { return ((const OutlineRecord *)item)->call == call; }

/* ---- names --------------------------------------------------------------- */
static int has_name(const HashMap *h, Sym s) { return hashmap_get(h, hash_u64(s), NULL, (const void *)(uintptr_t)s) != 0; }
static void add_name(HashMap *h, Sym s) { hashmap_intern(h, hash_u64(s), NULL, (const void *)(uintptr_t)s, s); }

/* base, else base_2, base_3 ... not in h; added to h. */
static Sym unique_name(HashMap *h, Sym base, uint32_t from)
{
	char buf[512];
	Sym s = base;
	for (uint32_t k = from; has_name(h, s); k++) {
		snprintf(buf, sizeof buf, "%.400s_%u", sym_str(base), k);
		s = sym_cstr(buf);
	}
	add_name(h, s);
	return s;
}

/* "torch.nn.modules.linear.Linear" -> "Linear". */
static Sym short_class(Sym cls)
{
	const char *s = sym_str(cls), *dot = strrchr(s, '.');
	return dot && dot[1] ? sym_cstr(dot + 1) : cls;
}

/* What flows in, seen from inside: "decoder.norm_1.weight" in module
 * "decoder.norm_1" is "weight". */
static Sym local_name(Sym name, Sym path)
{
	const char *s = sym_str(name), *p = sym_str(path);
	size_t n = strlen(p);
	if (n && strncmp(s, p, n) == 0 && s[n] == '.' && s[n + 1])
		return sym_cstr(s + n + 1);
	return name ? name : S_v;
}

/* -outline=A,B: cls is A or B, whole or its last dotted part. */
static int selected(const Outline *o, Sym cls)
{
	if (!o->classes)
		return 1;
	const char *full = sym_str(cls), *dot = strrchr(full, '.');
	const char *shrt = dot ? dot + 1 : full;
	for (const char *s = o->classes; *s;) {
		size_t n = strcspn(s, ",");
		if ((strlen(full) == n && strncmp(full, s, n) == 0) || (strlen(shrt) == n && strncmp(shrt, s, n) == 0))
			return 1;
		s += n + (s[n] == ',');
	}
	return 0;
}

/* ---- module attributes ---------------------------------------------------- */
typedef struct AKey { const Outline *o; Sym path; } AKey;

static int annot_is(uintptr_t item, const void *key)
{
	const AKey *k = key;
	return k->o->annots.v[item - 1].path == k->path;
}

/* "name TAB kind value" (b1, i3, f0.5, stanh) as a call attribute. */
static int annot_value(Str t, Named *out)
{
	const char *tab = memchr(t.s, '\t', t.n);
	if (!tab || tab == t.s || tab + 1 == t.s + t.n)
		return 0;
	const char *v = tab + 1;
	size_t vn = (size_t)(t.s + t.n - v) - 1;
	char buf[64], *end;
	out->name = sym_intern(t.s, (size_t)(tab - t.s));
	if (*v == 's') {
		out->val = (Arg){ .kind = A_STR, .u.s = { v + 1, (uint32_t)vn } };
		return 1;
	}
	if (vn == 0 || vn >= sizeof buf)
		return 0;
	memcpy(buf, v + 1, vn);
	buf[vn] = 0;
	if (*v == 'b' || *v == 'i') {
		long long x = strtoll(buf, &end, 10);
		out->val = (Arg){ .kind = *v == 'b' ? A_BOOL : A_INT, .u.i = x };
	} else if (*v == 'f') {
		out->val = (Arg){ .kind = A_FLOAT, .u.f = strtod(buf, &end) };
	} else {
		return 0;
	}
	return *end == 0;
}

/* Reads the graph's table of module attributes (the bridge's
 * pkg.onnxc.module_attributes: a line for each instance, its path, then a
 * tab-separated name and value for each attribute), in one pass over it.
 * Entries it cannot read are skipped. */
static void read_annots(Outline *o, const Graph *g)
{
	static const char key[] = "pkg.onnxc.module_attributes";
	Arena *a = &o->m->arena;
	for (uint32_t i = 0; i < g->nmeta; i++) {
		const MetaProp *mp = &g->meta[i];
		if (mp->key.n != sizeof key - 1 || memcmp(mp->key.s, key, mp->key.n))
			continue;
		const char *s = mp->val.s, *end = s + mp->val.n;
		while (s < end) {
			const char *nl = memchr(s, '\n', (size_t)(end - s));
			const char *eol = nl ? nl : end;
			const char *t = memchr(s, '\t', (size_t)(eol - s));
			uint32_t cap = 0;
			for (const char *c = s; c < eol; c++)
				cap += *c == '\t';
			if (t && t > s) {
				Annot x = { sym_intern(s, (size_t)(t - s)), 0, ARENA_ARRAY(a, Named, cap / 2 + 1) };
				/* name TAB value pairs after the path */
				for (const char *c = t + 1; c < eol;) {
					const char *t1 = memchr(c, '\t', (size_t)(eol - c));
					const char *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(eol - t1 - 1)) : NULL;
					const char *stop = t2 ? t2 : eol;
					if (annot_value((Str){ c, (uint32_t)(stop - c) }, &x.v[x.n]))
						x.n++;
					c = stop + 1;
				}
				AKey k = { o, x.path };
				if (x.n && !hashmap_get(&o->annot_at, hash_u64(x.path), annot_is, &k)) {
					XVEC_PUSH(o->annots, x);
					hashmap_intern(&o->annot_at, hash_u64(x.path), annot_is, &k, o->annots.n);
				}
			}
			s = eol + 1;
		}
	}
}

/* The module attributes of the instance at path, or NULL. */
static const Annot *annots_of(const Outline *o, Sym path)
{
	AKey k = { o, path };
	uintptr_t it = hashmap_get(&o->annot_at, hash_u64(path), annot_is, &k);
	return it ? &o->annots.v[it - 1] : NULL;
}

/* ---- one scope depth ------------------------------------------------------ */
typedef struct IKey { const Outline *o; Sym path, cls; } IKey;

static int inst_is(uintptr_t item, const void *key)
{
	const IKey *k = key;
	const Inst *x = &k->o->insts.v[item - 1];
	return x->path == k->path && x->cls == k->cls;
}

typedef struct UseCtx { Outline *o; uint32_t pos; } UseCtx;

/* A value read at position pos, by the node there or inside its subgraphs. */
static void mark_use(ValueId v, void *ctx)
{
	UseCtx *u = ctx;
	Outline *o = u->o;
	if (v == VNONE || v >= o->nvals || !o->defpos[v])
		return;
	int32_t di = o->inst[o->defpos[v]];
	if (di >= 0 && di != o->inst[u->pos])
		o->is_out[v] = 1;
}

static Status mark_sub_uses(const GraphVisit *gv, void *ctx)
{
	graph_each_use(gv->g, mark_use, ctx);
	return OK;
}

static void walk_sub(Graph *g, void *ctx) { graph_walk(g, mark_sub_uses, ctx); }

static void level_reset(Outline *o)
{
	for (uint32_t i = 0; i < o->insts.n; i++)
		free(o->insts.v[i].mem.v);
	o->insts.n = 0;
	hashmap_free(&o->keys);
}

/* Numbers the graph's nodes and groups them by their scope entry at depth d. */
static void level_build(Outline *o, uint32_t d)
{
	Graph *g = o->g;
	level_reset(o);
	if (o->npos < g->nnodes + 1) {
		o->npos = g->nnodes + 1;
		o->node = xreallocarray(o->node, o->npos, sizeof *o->node);
		o->inst = xreallocarray(o->inst, o->npos, sizeof *o->inst);
		o->taint = xreallocarray(o->taint, o->npos, sizeof *o->taint);
	}
	if (o->nvals < o->m->vals.n) {
		o->nvals = o->m->vals.n;
		o->defpos = xreallocarray(o->defpos, o->nvals, sizeof *o->defpos);
		o->is_out = xreallocarray(o->is_out, o->nvals, 1);
		o->stamp = xreallocarray(o->stamp, o->nvals, sizeof *o->stamp);
		o->code = xreallocarray(o->code, o->nvals, sizeof *o->code);
		o->bmap = xreallocarray(o->bmap, o->nvals, sizeof *o->bmap);
		o->serial = 0;
	}
	if (o->serial == 0)
		memset(o->stamp, 0, o->nvals * sizeof *o->stamp);
	memset(o->defpos, 0, o->nvals * sizeof *o->defpos);
	memset(o->is_out, 0, o->nvals);
	uint32_t pos = 0;
	for (Node *n = g->first; n; n = n->next) {
		pos++;
		o->node[pos] = n;
		o->inst[pos] = -1;
		o->taint[pos] = 0;
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i])
				o->defpos[n->res[i]] = pos;
		const Prov *p = n->prov;
		if (free_const(n) || !p || p->nscope <= d || !sym_len(p->scope[d].path))
			continue;           /* the root module ("") is the graph itself */
		IKey k = { o, p->scope[d].path, p->scope[d].cls };
		uint64_t h = hash_u64((uint64_t)k.path << 32 | k.cls);
		uintptr_t it = hashmap_get(&o->keys, h, inst_is, &k);
		if (!it) {
			XVEC_PUSH(o->insts, ((Inst){ k.path, k.cls, { 0 }, NULL, selected(o, k.cls) }));
			it = hashmap_intern(&o->keys, h, inst_is, &k, o->insts.n);
		}
		o->inst[pos] = (int32_t)it - 1;
		XVEC_PUSH(o->insts.v[it - 1].mem, pos);
	}
	/* Values read outside the instance that defines them are its outputs. */
	pos = 0;
	for (Node *n = g->first; n; n = n->next) {
		UseCtx u = { o, ++pos };
		node_each_use(n, mark_use, &u);
		if (node_has_subgraph(n))
			node_each_subgraph(n, walk_sub, &u);
	}
	for (uint32_t i = 0; i < g->nout; i++) {
		ValueId v = g->out[i];
		if (v && v < o->nvals && o->defpos[v] && o->inst[o->defpos[v]] >= 0)
			o->is_out[v] = 1;
	}
}

typedef struct Taint { Outline *o; int32_t self; uint32_t first; int hit; } Taint;

/* Reads a value defined at or after `first` by the instance or a tainted node. */
static void taint_use(ValueId v, void *ctx)
{
	Taint *t = ctx;
	uint32_t q = v && v < t->o->nvals ? t->o->defpos[v] : 0;
	if (q >= t->first && (t->o->inst[q] == t->self || t->o->taint[q]))
		t->hit = 1;
}

static void taint_reads(Taint *t, const Node *n)
{
	t->hit = 0;
	node_each_use(n, taint_use, t);
}

/* Why instance i cannot become one call, or NULL.  Marks the outside
 * nodes in its span that depend on it (o->taint).  The span sweeps of one
 * depth are over disjoint spans (overlaps are refused before), so a depth
 * costs one pass over the graph. */
static const char *check(Outline *o, uint32_t i)
{
	Inst *x = &o->insts.v[i];
	uint32_t first = x->mem.v[0], last = x->mem.v[x->mem.n - 1];
	Taint t = { o, (int32_t)i, first, 0 };
	int outs = 0;
	for (uint32_t p = first; p <= last; p++) {
		const Node *n = o->node[p];
		if (o->inst[p] == (int32_t)i) {
			if (node_has_subgraph(n))
				return "a node holds a subgraph";
			for (uint32_t r = 0; r < n->nres; r++)
				outs |= n->res[r] && o->is_out[n->res[r]];
			t.self = -2;            /* only tainted nodes count here */
			taint_reads(&t, n);
			t.self = (int32_t)i;
			if (t.hit)
				return "a node outside it reads its values and feeds it";
		} else if (!free_const(n)) {
			taint_reads(&t, n);
			if (!t.hit && node_has_subgraph(n))
				t.hit = 1;          /* captures are not traced: keep it after */
			o->taint[p] = (uint8_t)t.hit;
		}
	}
	return outs ? NULL : "nothing it computes is used";
}

/* ---- functions ------------------------------------------------------------ */
static ValueId bmapped(Outline *o, ValueId v) { return v && v < o->nvals && o->stamp[v] == o->serial ? o->bmap[v] : v; }

static void remap_arg(Outline *o, Arg *a)
{
	if (a->kind == A_VALUE)
		a->u.v = bmapped(o, a->u.v);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			remap_arg(o, &a->u.list[i]);
}

static ValueId body_value(Outline *o, HashMap *names, Graph *b, ValueId from, ValueKind k, Sym name)
{
	Type *ty = val(o->m, from)->type;
	ValueId v = value_new(o->m, unique_name(names, name ? name : S_v, 1), ty, k);
	val(o->m, v)->loc = b->loc;
	o->stamp[from] = o->serial;
	o->bmap[from] = v;
	return v;
}

static Node *clone_into(Outline *o, HashMap *names, Graph *b, const Node *n)
{
	Node *c = node_new(o->m, n->domain, n->name, n->nres, n->nargs, n->nkw);
	c->op = n->op;
	for (uint32_t i = 0; i < n->nargs; i++) {
		c->args[i] = arg_copy(&o->m->arena, &n->args[i]);
		remap_arg(o, &c->args[i]);
	}
	for (uint32_t i = 0; i < n->nkw; i++) {
		c->kw[i].name = n->kw[i].name;
		c->kw[i].val = arg_copy(&o->m->arena, &n->kw[i].val);
		remap_arg(o, &c->kw[i].val);
	}
	c->prov = n->prov;
	c->node_name = n->node_name;
	c->doc = n->doc;
	c->loc = n->loc;
	c->opset = n->opset;
	for (uint32_t i = 0; i < n->nres; i++) {
		if (!n->res[i])
			continue;
		c->res[i] = body_value(o, names, b, n->res[i], VK_NODE, val(o->m, n->res[i])->name);
		val(o->m, c->res[i])->def = c;
		val(o->m, c->res[i])->res = i;
	}
	node_append(b, c);
	return c;
}

typedef struct ConstCtx { Outline *o; HashMap *names; Graph *b; } ConstCtx;

/* A free constant the body reads gets its copy before its first reader. */
static void copy_const(ValueId v, void *ctx)
{
	ConstCtx *c = ctx;
	Outline *o = c->o;
	if (v && v < o->nvals && o->stamp[v] != o->serial && free_const(def_of(o->m, v)))
		clone_into(o, c->names, c->b, def_of(o->m, v));
}

/* Param tokens' literals of e, in order. */
static const Arg **param_lits(const Enc *e)
{
	const Arg **v = xreallocarray(NULL, e->nsite + 1, sizeof *v);
	uint32_t p = 0;
	for (uint32_t i = 0; i < e->ntok; i++)
		if (e->tok[i].param)
			v[p++] = e->tok[i].lit;
	return v;
}

/* The body node of site s (after make_func cloned e's nodes). */
static Node *site_node(Outline *o, Node **memc, const Enc *e, Site s)
{
	return s.k >= 0 ? memc[s.k] : def_of(o->m, bmapped(o, e->consts[-1 - s.k]));
}

/* The function for instance x, made from its nodes (o->in, o->out filled);
 * the literals of e's param tokens marked in b->attr read the function's
 * attributes. */
static Func *make_func(Outline *o, const Inst *x, const Enc *e, Body *b)
{
	Module *m = o->m;
	Func *f = ARENA_NEW(&m->arena, Func);
	f->domain = S_modules;
	f->name = unique_name(&o->fnames, short_class(x->cls), 2);
	f->loc = o->node[x->mem.v[0]]->loc;
	Graph *g = graph_new(m, f->name, NULL);
	g->loc = f->loc;
	f->body = g;
	HashMap names = { 0 };
	o->serial++;
	g->nin = o->in.n;
	g->in = ARENA_ARRAY(&m->arena, ValueId, o->in.n + 1);
	for (uint32_t i = 0; i < o->in.n; i++)
		g->in[i] = body_value(o, &names, g, o->in.v[i], VK_INPUT, local_name(val(m, o->in.v[i])->name, x->path));
	ConstCtx cc = { o, &names, g };
	Node **memc = xreallocarray(NULL, x->mem.n + 1, sizeof *memc);
	for (uint32_t k = 0; k < x->mem.n; k++) {
		const Node *n = o->node[x->mem.v[k]];
		node_each_use(n, copy_const, &cc);
		memc[k] = clone_into(o, &names, g, n);
	}
	g->nout = o->out.n;
	g->out = ARENA_ARRAY(&m->arena, ValueId, o->out.n + 1);
	for (uint32_t i = 0; i < o->out.n; i++)
		g->out[i] = bmapped(o, o->out.v[i]);
	hashmap_free(&names);
	f->attrs = ARENA_ARRAY(&m->arena, Sym, e->nsite + b->nextra + 1);
	for (uint32_t p = 0; p < e->nsite; p++) {
		if (!b->attr[p])
			continue;
		Node *n = site_node(o, memc, e, e->site[p]);
		n->kw[e->site[p].kw].val = (Arg){ .kind = A_ATTRREF, .u.sym = b->attr[p] };
		f->attrs[f->nattr++] = b->attr[p];
	}
	for (uint32_t i = 0; i < b->nextra; i++)
		f->attrs[f->nattr++] = b->extra[i];
	free(memc);
	VEC_PUSH(&m->arena, m->funcs, f);
	return f;
}

/* b fixes no literal of the group of r that differs from its own. */
static int body_fits(const Body *b, const Enc *r)
{
	uint32_t p = 0;
	for (uint32_t i = 0; i < b->ntok; i++) {
		if (!b->tok[i].param)
			continue;
		if (!b->attr[p] && (r->vary[p] || !arg_identical(b->tok[i].lit, r->tok[i].lit)))
			return 0;
		p++;
	}
	return 1;
}

/* The name of a function attribute made from attribute kw of n: the
 * module attribute the bridge found the literal to be
 * (`meta("pkg.onnxc.module_attribute": "factor")`); a child call's own
 * attribute name (already one of these); else kw's name after
 * "inferred::", as TorchScript's export names an attribute inferred from
 * the ops ("inferred::alpha"). */
static Sym attr_name(const Node *n, uint32_t kw)
{
	static const char key[] = "pkg.onnxc.module_attribute";
	for (uint32_t i = 0; n->prov && i < n->prov->nmeta; i++) {
		const MetaProp *mp = &n->prov->meta[i];
		if (mp->key.n == sizeof key - 1 && !memcmp(mp->key.s, key, mp->key.n) && mp->val.n)
			return sym_intern(mp->val.s, mp->val.n);
	}
	if (n->domain == S_modules)
		return n->kw[kw].name;
	char buf[512];
	snprintf(buf, sizeof buf, "inferred::%.480s", sym_str(n->kw[kw].name));
	return sym_cstr(buf);
}

/* The function the group whose first instance is r calls: one made before
 * that fits it, or a new one whose attributes are the literals that vary
 * in the group, named after the module attribute or the op attribute they
 * were. */
static Body *func_for(Outline *o, const Inst *x, Enc *r)
{
	uint64_t h = tok_hash(r->tok, r->ntok);
	Body *first = (Body *)hashmap_get(&o->bodies, h, body_is, r);
	for (Body *b = first; b; b = b->next)
		if (body_fits(b, r))
			return b;
	Body *b = xcalloc(1, sizeof *b);
	b->hash = h;
	b->ntok = r->ntok;
	b->tok = dup_n(r->tok, r->ntok, sizeof *b->tok);
	b->attr = xcalloc(r->nsite + 1, sizeof *b->attr);
	HashMap names = { 0 };
	for (uint32_t p = 0; p < r->nsite; p++) {
		if (!r->vary[p])
			continue;
		Site s = r->site[p];
		const Node *n = s.k >= 0 ? o->node[x->mem.v[s.k]] : def_of(o->m, r->consts[-1 - s.k]);
		b->attr[p] = unique_name(&names, attr_name(n, s.kw), 2);
	}
	/* The instance's module attributes the body does not read are
	 * declared too (each call passes its own). */
	const Annot *an = annots_of(o, x->path);
	b->extra = xreallocarray(NULL, (an ? an->n : 0) + 1, sizeof *b->extra);
	b->extra_at = xreallocarray(NULL, (an ? an->n : 0) + 1, sizeof *b->extra_at);
	for (uint32_t i = 0; an && i < an->n; i++)
		if (!has_name(&names, an->v[i].name)) {
			add_name(&names, an->v[i].name);
			b->extra_at[b->nextra] = i;
			b->extra[b->nextra++] = an->v[i].name;
		}
	hashmap_free(&names);
	XVEC_PUSH(o->all, b);
	b->f = make_func(o, x, r, b);
	if (first) {
		b->next = first->next;
		first->next = b;
	} else {
		hashmap_intern(&o->bodies, h, body_is, r, (uintptr_t)b);
	}
	return b;
}

/* ---- replacing an instance by a call ---------------------------------------- */
/* The value an instance gives module attribute name, or NULL; at is
 * where it usually is (instances of one class list their attributes in
 * one order), so the search is a scan only when it is not there. */
static const Arg *annot_value_of(const Annot *an, Sym name, uint32_t at)
{
	if (an && at < an->n && an->v[at].name == name)
		return &an->v[at].val;
	for (uint32_t i = 0; an && i < an->n; i++)
		if (an->v[i].name == name)
			return &an->v[i].val;
	return NULL;
}

/* The call passes e's own literal for each attribute of b's function read
 * by the body, and the instance's value of each module attribute it
 * declares besides (when the instance has it). */
static void replace(Outline *o, uint32_t i, const Body *b, const Enc *e)
{
	Module *m = o->m;
	Graph *g = o->g;
	Func *f = b->f;
	Inst *x = &o->insts.v[i];
	uint32_t first = x->mem.v[0], last = x->mem.v[x->mem.n - 1];
	Node *n0 = o->node[first];
	const Annot *an = b->nextra ? annots_of(o, x->path) : NULL;
	uint32_t nkw = f->nattr - b->nextra;
	for (uint32_t k = 0; k < b->nextra; k++)
		nkw += annot_value_of(an, b->extra[k], b->extra_at[k]) != NULL;
	Node *call = node_new(m, f->domain, f->name, o->out.n, o->in.n, nkw);
	for (uint32_t k = 0; k < o->in.n; k++)
		call->args[k] = (Arg){ .kind = A_VALUE, .u.v = o->in.v[k] };
	const Arg **lits = param_lits(e);
	uint32_t a = 0;
	for (uint32_t p = 0; p < e->nsite; p++)
		if (b->attr[p]) {
			call->kw[a].name = b->attr[p];
			call->kw[a++].val = arg_copy(&m->arena, lits[p]);
		}
	free(lits);
	for (uint32_t k = 0; k < b->nextra; k++) {
		const Arg *v = annot_value_of(an, b->extra[k], b->extra_at[k]);
		if (v) {
			call->kw[a].name = b->extra[k];
			call->kw[a++].val = *v;
		}
	}
	Prov *p = ARENA_NEW(&m->arena, Prov);
	uint32_t depth = 0;
	while (n0->prov->scope[depth].path != x->path || n0->prov->scope[depth].cls != x->cls)
		depth++;                    /* the entry is there: n0 is a member */
	p->nscope = depth + 1;
	p->scope = n0->prov->scope;     /* a prefix, shared */
	call->prov = p;
	call->loc = n0->loc;
	node_insert_before(g, o->node[last]->next, call);
	/* Outside nodes of the span that read the instance go after the call. */
	Node *after = call;
	for (uint32_t q = first; q <= last; q++)
		if (o->inst[q] != (int32_t)i && o->taint[q]) {
			node_remove(g, o->node[q]);
			node_insert_before(g, after->next, o->node[q]);
			after = o->node[q];
		}
	/* The record: the members, and when nothing else lies between them,
	 * the constants among them too, so that inline puts back that order. */
	int whole = 1;
	for (uint32_t q = first; q <= last && whole; q++)
		whole = o->inst[q] == (int32_t)i || free_const(o->node[q]);
	OutlineRecord *r = ARENA_NEW(&m->arena, OutlineRecord);
	r->call = call;
	r->func = f;
	r->nbody = f->body->nnodes;
	r->nnodes = whole ? last - first + 1 : x->mem.n;
	r->nodes = ARENA_ARRAY(&m->arena, Node *, r->nnodes);
	for (uint32_t k = 0; k < r->nnodes; k++) {
		r->nodes[k] = o->node[whole ? first + k : x->mem.v[k]];
		if (!free_const(r->nodes[k]))
			node_remove(g, r->nodes[k]);
	}
	r->nin = o->in.n;
	r->in = arena_dup(&m->arena, o->in.v, o->in.n * sizeof *o->in.v);
	r->nconst = o->consts.n;
	r->consts = arena_dup(&m->arena, o->consts.v, o->consts.n * sizeof *o->consts.v);
	hashmap_intern(&m->outlined, hash_u64((uintptr_t)call), outline_record_is, call, (uintptr_t)r);
	for (uint32_t k = 0; k < o->out.n; k++) {
		call->res[k] = o->out.v[k];
		val(m, o->out.v[k])->def = call;
		val(m, o->out.v[k])->res = k;
	}
}

static void leave(Outline *o, Inst *x, const char *why)
{
	const Node *n = o->node[x->mem.v[0]];
	diag_note(n->loc, "module '%s' (%s) left inline: %s", sym_str(x->path), sym_str(x->cls), why);
	o->left++;
}

/* Instances of one depth whose spans overlap are both left inline. */
static void refuse_overlaps(Outline *o)
{
	uint32_t maxlast = 0;
	int32_t owner = -1;
	for (uint32_t i = 0; i < o->insts.n; i++) {
		Inst *x = &o->insts.v[i];
		if (!x->selected)
			continue;
		uint32_t first = x->mem.v[0], last = x->mem.v[x->mem.n - 1];
		if (owner >= 0 && first < maxlast) {
			x->why = "its nodes are interleaved with another module's";
			if (!o->insts.v[owner].why)
				o->insts.v[owner].why = x->why;
		}
		if (last > maxlast) {
			maxlast = last;
			owner = (int32_t)i;
		}
	}
}

/* The encoding just made (o->tok, in, out, consts, sites), kept for instance i. */
static Enc save(Outline *o, uint32_t i)
{
	Enc e = { .inst = i, .ntok = o->tok.n, .nin = o->in.n, .nout = o->out.n,
		.nconst = o->consts.n, .nsite = o->sites.n };
	e.tok = dup_n(o->tok.v, e.ntok, sizeof *e.tok);
	e.in = dup_n(o->in.v, e.nin, sizeof *e.in);
	e.out = dup_n(o->out.v, e.nout, sizeof *e.out);
	e.consts = dup_n(o->consts.v, e.nconst, sizeof *e.consts);
	e.site = dup_n(o->sites.v, e.nsite, sizeof *e.site);
	return e;
}

/* o->in, out and consts become e's again (replace and make_func read them). */
static void restore(Outline *o, const Enc *e)
{
	o->in.n = o->out.n = o->consts.n = 0;
	for (uint32_t k = 0; k < e->nin; k++)
		XVEC_PUSH(o->in, e->in[k]);
	for (uint32_t k = 0; k < e->nout; k++)
		XVEC_PUSH(o->out, e->out[k]);
	for (uint32_t k = 0; k < e->nconst; k++)
		XVEC_PUSH(o->consts, e->consts[k]);
}

static void enc_free(Enc *e)
{
	free(e->tok);
	free(e->in);
	free(e->out);
	free(e->consts);
	free(e->site);
	free(e->vary);
}

/* Instances of one structure form a group (its first Enc); a param
 * literal that differs from the first's anywhere in the group varies. */
static void group(Enc *e, uint32_t ne)
{
	HashMap groups = { 0 };
	for (uint32_t j = 0; j < ne; j++) {
		EKey k = { e, &e[j] };
		uint32_t r = (uint32_t)hashmap_intern(&groups, tok_hash(e[j].tok, e[j].ntok), enc_is, &k, j + 1) - 1;
		e[j].group = r;
		if (r == j) {
			e[j].vary = xcalloc(e[j].nsite + 1, 1);
			continue;
		}
		for (uint32_t i = 0, p = 0; i < e[j].ntok; i++)
			if (e[j].tok[i].param)
				e[r].vary[p++] |= !arg_identical(e[j].tok[i].lit, e[r].tok[i].lit);
	}
	hashmap_free(&groups);
}

static void outline_depth(Outline *o, uint32_t d)
{
	level_build(o, d);
	refuse_overlaps(o);
	Enc *e = xcalloc(o->insts.n + 1, sizeof *e);
	uint32_t ne = 0;
	for (uint32_t i = 0; i < o->insts.n; i++) {
		Inst *x = &o->insts.v[i];
		if (!x->selected)
			continue;
		if (!x->why)
			x->why = check(o, i);
		if (x->why) {
			leave(o, x, x->why);
			continue;
		}
		encode(o, x);
		e[ne++] = save(o, i);
	}
	group(e, ne);
	for (uint32_t j = 0; j < ne; j++) {
		Enc *r = &e[e[j].group];
		if (!r->body) {
			restore(o, r);
			r->body = func_for(o, &o->insts.v[r->inst], r);
		}
		restore(o, &e[j]);
		replace(o, e[j].inst, r->body, &e[j]);
		o->done++;
	}
	for (uint32_t j = 0; j < ne; j++)
		enc_free(&e[j]);
	free(e);
}

static void outline_graph(Outline *o, Graph *g)
{
	uint32_t maxd = 0;
	for (const Node *n = g->first; n; n = n->next)
		if (n->prov && n->prov->nscope > maxd)
			maxd = n->prov->nscope;
	o->g = g;
	read_annots(o, g);
	/* Deepest first: a parent's body holds its children's calls.  One pass
	 * over the graph per depth. */
	for (uint32_t d = maxd; d-- > 0;)
		outline_depth(o, d);
}

Status pass_outline(Module *m, const PassOptions *opt)
{
	Outline o = { .m = m, .classes = opt->outline_classes };
	for (uint32_t i = 0; i < m->funcs.n; i++)
		if (m->funcs.v[i]->domain == S_modules)
			add_name(&o.fnames, m->funcs.v[i]->name);
	for (uint32_t i = 0; i < m->graphs.n; i++)
		outline_graph(&o, m->graphs.v[i]);
	level_reset(&o);
	for (uint32_t i = 0; i < o.all.n; i++) {
		free(o.all.v[i]->tok);
		free(o.all.v[i]->attr);
		free(o.all.v[i]->extra);
		free(o.all.v[i]->extra_at);
		free(o.all.v[i]);
	}
	free(o.all.v);
	free(o.insts.v);
	free(o.annots.v);
	hashmap_free(&o.annot_at);
	hashmap_free(&o.bodies);
	hashmap_free(&o.fnames);
	free(o.tok.v);
	free(o.in.v);
	free(o.out.v);
	free(o.consts.v);
	free(o.sites.v);
	free(o.node);
	free(o.inst);
	free(o.taint);
	free(o.defpos);
	free(o.is_out);
	free(o.stamp);
	free(o.code);
	free(o.bmap);
	return OK;
}
