/* functionalize.c - in-place, out= and view mutations become functional.
 *
 * PyTorch graphs may mutate tensors: `aten::add_.Tensor(%x, %y)` writes into
 * %x, `aten::add.out(..., out = %buf)` into %buf, and a mutation of a view
 * (`%s = aten::slice.Tensor(%x, ...)`, then `aten::add_(%s, ...)`) writes
 * into the view's base.  ONNX has no mutation, so every storage gets SSA
 * versions instead.
 *
 * One walk over each graph, in order.  Per value (VState):
 *  - canon: an in-place or out= result names the storage it mutated, so
 *    every use of it is a use of that storage;
 *  - cur: the value that holds the storage's latest contents;
 *  - base/root/vdef: a view records the storage it aliases, the non-view
 *    storage at the end of the chain and the node that made it;
 *  - ver: a root counts its mutations; a view remembers the count its cur
 *    reflects.
 * Every operand is rewritten to the current version of its storage as the
 * walk reaches it, so reads before a mutation keep the old version.  A
 * mutation of a view is written back, link by link, to the root with the
 * inverse or scatter op of each view, and bumps the root's count; a view
 * whose count is behind is stale and is re-derived from its base's current
 * version when next read.  Each node, view link and stale read costs O(1)
 * amortised (a stale read costs its chain length once per mutation), so
 * the pass is linear in the graph.
 *
 * At the end, a mutated graph input, parameter or buffer has its latest
 * version returned as an extra output after the user outputs, and the
 * graph gets a `pkg.torch.export.ExportedProgram.graph_signature` metadata entry that says
 * which output is which (docs/functionalize.md).  Subgraphs are walked as
 * scopes of their own from the node that holds them (section "subgraphs"). */
#include <stdlib.h>
#include <string.h>
#include "passes.h"

typedef struct VState {
	ValueId canon;              /* in-place/out= result: the storage it names */
	ValueId cur;                /* latest contents of this storage; 0: itself */
	ValueId base;               /* view: the canonical value it aliases; 0: none */
	ValueId root;               /* view: the non-view storage under the chain */
	Node *vdef;                 /* view: its defining node */
	uint32_t ver;               /* root: mutations so far; view: count cur reflects */
} VState;

typedef struct Saved { ValueId v; VState old; } Saved;

/* A local function whose body mutates parameters returns their latest
 * versions after its own nout results, in parameter order. */
typedef struct FuncMut {
	uint32_t nout;              /* the results it had before the pass */
	uint32_t nmut;
	uint32_t *param;            /* indices of the mutated parameters */
	uint8_t state;              /* 0 new, 1 on the walk's stack, 2 done */
} FuncMut;

typedef struct Functionalize {
	Module *m;
	Graph *g;                   /* the graph or subgraph being walked */
	VState *st;
	uint32_t nst;               /* values that existed when the pass began */
	int err;                    /* in the graph being rewritten */
	int failed;                 /* in any graph */
	uint32_t depth;             /* subgraph nesting of g */
	VEC(Saved) log;             /* states changed inside subgraphs (see walk_sub) */
	uint32_t *mark, epoch;      /* per value: sets of values, one epoch a set */
	Sym s_then, s_else, s_body;
	HashMap funcs;              /* (domain, name) -> function index + 1 */
	FuncMut *fm;                /* per function: the parameters it mutates */
} Functionalize;

static const char SIG_KEY[] = "pkg.torch.export.ExportedProgram.graph_signature";

/* Graphs own disjoint values, so one table serves them all.  Only values
 * that existed before the pass are ever keys: new values are
 * versions (cur), never storages. */
static VState *st(Functionalize *f, ValueId v)
{
	ONNXC_ASSERT(v && v < f->nst);
	return &f->st[v];
}

/* A value the pass made is a version, its own storage. */
static ValueId canon(Functionalize *f, ValueId v)
{
	return v < f->nst && st(f, v)->canon ? st(f, v)->canon : v;
}

/* Inside a subgraph, a state about to change is saved first: leaving the
 * subgraph restores it (walk_sub). */
static void touch(Functionalize *f, ValueId v)
{
	if (f->depth)
		VEC_PUSH(&f->m->arena, f->log, ((Saved){ v, f->st[v] }));
}

static Arg varg(ValueId v) { return (Arg){ .kind = A_VALUE, .u.v = v }; }
static Arg iarg(int64_t i) { return (Arg){ .kind = A_INT, .u.i = i }; }

static int fail(Functionalize *f, const Node *n, const char *what)
{
	diag_error(n->loc, "functionalize: %s (in %s::%s)", what, sym_str(n->domain), sym_str(n->name));
	f->err = 1;
	return 1;
}

/* ---- building nodes ------------------------------------------------------ */

static ValueId new_result(Functionalize *f, Node *n, uint32_t i, Sym base, Type *ty)
{
	ValueId v = value_new(f->m, value_fresh_name(f->m, base), ty, VK_NODE);
	val(f->m, v)->def = n;
	val(f->m, v)->res = i;
	n->res[i] = v;
	return v;
}

/* An aten node with one result, carrying the provenance of `like` (the node
 * it stands for), inserted before `before` (NULL: at the end). */
static Node *make(Functionalize *f, OpId op, uint32_t nargs, uint32_t nkw, const Node *like,
		  Node *before, Sym rname, Type *rty)
{
	Node *n = node_new_op(f->m, op, 1, nargs, nkw);
	n->prov = like->prov;
	n->loc = like->loc;
	new_result(f, n, 0, rname, rty);
	node_insert_before(f->g, before, n);
	return n;
}

/* A copy of node d with fresh results, inserted before `before`. */
static Node *clone(Functionalize *f, const Node *d, Node *before)
{
	Arena *a = &f->m->arena;
	Node *n = node_new(f->m, d->domain, d->name, d->nres, d->nargs, d->nkw);
	for (uint32_t i = 0; i < d->nargs; i++)
		n->args[i] = arg_copy(a, &d->args[i]);
	for (uint32_t i = 0; i < d->nkw; i++)
		n->kw[i] = (Named){ d->kw[i].name, arg_copy(a, &d->kw[i].val) };
	for (uint32_t i = 0; i < d->nres; i++)
		if (d->res[i])
			new_result(f, n, i, val(f->m, d->res[i])->name, val(f->m, d->res[i])->type);
	n->prov = d->prov;
	n->loc = d->loc;
	node_insert_before(f->g, before, n);
	return n;
}

/* Turns n into a call of `op` with fresh, empty argument arrays. */
static void recall(Functionalize *f, Node *n, OpId op, uint32_t nargs, uint32_t nkw)
{
	n->domain = op_domain(op);
	n->name = op_name_of(op);
	n->op = op;
	n->nargs = nargs;
	n->nkw = nkw;
	n->args = nargs ? ARENA_ARRAY(&f->m->arena, Arg, nargs) : NULL;
	n->kw = nkw ? ARENA_ARRAY(&f->m->arena, Named, nkw) : NULL;
}

static void rename_op(Node *n, Sym name)
{
	n->name = name;
	n->op = op_lookup(n->domain, name);
}

/* ---- versions and views -------------------------------------------------- */

static ValueId current(Functionalize *f, ValueId c, Node *before);

/* View c is stale (its root was mutated after c was derived): apply its
 * view op again to its base's current version.  The siblings of a
 * multi-result view are re-derived by the same node. */
static void regen(Functionalize *f, ValueId c, Node *before)
{
	VState *s = st(f, c);
	const Node *d = s->vdef;
	ValueId b = current(f, s->base, before);
	Node *n = clone(f, d, before);
	n->args[0] = varg(b);
	uint32_t ver = st(f, s->root)->ver;
	for (uint32_t i = 0; i < d->nres; i++) {
		if (!d->res[i])
			continue;
		touch(f, d->res[i]);
		st(f, d->res[i])->cur = n->res[i];
		st(f, d->res[i])->ver = ver;
	}
}

/* The value holding canonical storage c's latest contents; re-derives a
 * stale view (before `before`).  Invariant: a fresh view's bases are fresh. */
static ValueId current(Functionalize *f, ValueId c, Node *before)
{
	if (c >= f->nst)
		return c;
	VState *s = st(f, c);
	if (s->base && s->ver != st(f, s->root)->ver)
		regen(f, c, before);
	return s->cur ? s->cur : c;
}

static void rewrite_arg(Functionalize *f, Arg *a, Node *before)
{
	if (a->kind == A_VALUE && a->u.v)
		a->u.v = current(f, canon(f, a->u.v), before);
	else if (a->kind == A_LIST)
		for (uint32_t i = 0; i < a->n; i++)
			rewrite_arg(f, &a->u.list[i], before);
}

/* Subgraph arguments are left alone (see the file comment). */
static void rewrite_operands(Functionalize *f, Node *n)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		rewrite_arg(f, &n->args[i], n);
	for (uint32_t i = 0; i < n->nkw; i++)
		rewrite_arg(f, &n->kw[i].val, n);
}

static int is_view(const Node *n)
{
	return node_has_flag(n, OPF_VIEW) && n->nargs >= 1 && n->args[0].kind == A_VALUE &&
	       n->args[0].u.v;
}

/* Records the results of view node n as aliases of canonical value c0. */
static void note_view(Functionalize *f, Node *n, ValueId c0)
{
	VState *b = st(f, c0);
	ValueId root = b->base ? b->root : c0;
	for (uint32_t i = 0; i < n->nres; i++) {
		if (!n->res[i])
			continue;
		VState *s = st(f, n->res[i]);
		s->base = c0;
		s->root = root;
		s->vdef = n;
		s->ver = st(f, root)->ver;
	}
}

/* ---- writing a mutated view back into its base ---------------------------- */

/* Argument `pos` of n, given positionally or as keyword `name`; NULL if
 * left out. */
static const Arg *arg_at(const Node *n, uint32_t pos, Sym name)
{
	if (pos < n->nargs)
		return &n->args[pos];
	const Named *k = node_kw(n, name);
	return k ? &k->val : NULL;
}

static int64_t int_at(const Node *n, uint32_t pos, Sym name, int64_t dflt, int *ok)
{
	const Arg *a = arg_at(n, pos, name);
	if (!a || a->kind == A_NONE)
		return dflt;
	if (a->kind != A_INT)
		*ok = 0;
	return a->kind == A_INT ? a->u.i : 0;
}

typedef struct WriteBack {             /* one write-back step */
	Functionalize *f;
	const Node *d;              /* the view node */
	uint32_t res;               /* which of its results was mutated */
	ValueId base;               /* the base's current version */
	ValueId src;                /* the view's new contents */
	Type *ty;                   /* the base's type */
	Sym name;                   /* the base's name, for the new value */
	const Node *at;             /* the mutating node (provenance) */
	Node *before;
} WriteBack;

/* op(base, src, <the view's own arguments after self>): the scatter ops
 * share the view ops' schemas. */
static ValueId wb_scatter(WriteBack *w, OpId op)
{
	const Node *d = w->d;
	Node *n = make(w->f, op, d->nargs + 1, d->nkw, w->at, w->before, w->name, w->ty);
	n->args[0] = varg(w->base);
	n->args[1] = varg(w->src);
	for (uint32_t i = 1; i < d->nargs; i++)
		n->args[i + 1] = arg_copy(&w->f->m->arena, &d->args[i]);
	for (uint32_t i = 0; i < d->nkw; i++)
		n->kw[i] = (Named){ d->kw[i].name, arg_copy(&w->f->m->arena, &d->kw[i].val) };
	return n->res[0];
}

/* op(src, a1, a2) with up to two copied or literal arguments. */
static ValueId wb_call(WriteBack *w, OpId op, uint32_t nargs, const Arg *a1, const Arg *a2)
{
	Node *n = make(w->f, op, nargs, 0, w->at, w->before, w->name, w->ty);
	n->args[0] = varg(w->src);
	if (nargs > 1)
		n->args[1] = arg_copy(&w->f->m->arena, a1);
	if (nargs > 2)
		n->args[2] = arg_copy(&w->f->m->arena, a2);
	return n->res[0];
}

/* slice_scatter(base, src, dim, start, end) with literal bounds. */
static ValueId wb_slice(WriteBack *w, int64_t dim, int64_t start, int64_t end)
{
	Node *n = make(w->f, OP_ATEN_slice_scatter_default, 5, 0, w->at, w->before, w->name, w->ty);
	n->args[0] = varg(w->base);
	n->args[1] = varg(w->src);
	n->args[2] = iarg(dim);
	n->args[3] = iarg(start);
	n->args[4] = iarg(end);
	return n->res[0];
}

/* The base's shape as an aten int list: known dims literally, the others
 * read with sym_size.int from the base's current version. */
static int shape_list(WriteBack *w, Arg *out)
{
	const Type *t = w->ty;
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return 0;
	Arg *l = ARENA_ARRAY(&w->f->m->arena, Arg, t->rank ? t->rank : 1);
	for (int32_t i = 0; i < t->rank; i++) {
		if (!t->dims[i].sym && t->dims[i].v >= 0) {
			l[i] = iarg(t->dims[i].v);
			continue;
		}
		Type *i64 = type_tensor(&w->f->m->arena, DT_I64, 0, NULL);
		Node *n = make(w->f, OP_ATEN_sym_size_int, 2, 0, w->at, w->before, S_sym_size, i64);
		n->args[0] = varg(w->base);
		n->args[1] = iarg(i);
		l[i] = varg(n->res[0]);
	}
	*out = (Arg){ .kind = A_LIST, .elem = A_INT, .n = (uint32_t)t->rank, .u.list = l };
	return 1;
}

/* Shape-only views: the contents keep their order, so view(src, shape). */
static ValueId wb_reshape(WriteBack *w)
{
	Arg shape;
	if (!shape_list(w, &shape))
		return fail(w->f, w->d, "writing back through a view needs the base's rank"), 0;
	return wb_call(w, OP_ATEN_view_default, 2, &shape, NULL);
}

static ValueId wb_permute(WriteBack *w)
{
	const Arg *p = arg_at(w->d, 1, S_dims);
	if (!p || p->kind != A_LIST)
		return fail(w->f, w->d, "permute needs a literal dims list"), 0;
	int64_t n = p->n;
	Arg *inv = ARENA_ARRAY(&w->f->m->arena, Arg, n ? n : 1);
	for (int64_t i = 0; i < n; i++)
		inv[i].kind = A_NONE;
	for (int64_t i = 0; i < n; i++) {
		int64_t d = p->u.list[i].kind == A_INT ? p->u.list[i].u.i : n;
		d = d < 0 ? d + n : d;
		if (d < 0 || d >= n || inv[d].kind != A_NONE)
			return fail(w->f, w->d, "permute dims are not a permutation"), 0;
		inv[d] = iarg(i);
	}
	Arg l = { .kind = A_LIST, .elem = A_INT, .n = (uint32_t)n, .u.list = inv };
	return wb_call(w, OP_ATEN_permute_default, 2, &l, NULL);
}

/* squeeze.dim undoes to unsqueeze when the dim was 1; otherwise it was a
 * no-op or the size is unknown, and the base's shape says it all. */
static ValueId wb_squeeze_dim(WriteBack *w)
{
	int ok = 1;
	int64_t d = int_at(w->d, 1, S_dim, 0, &ok);
	const Type *t = w->ty;
	if (ok && t && t->kind == TY_TENSOR && t->rank > 0) {
		int64_t k = d < 0 ? d + t->rank : d;
		if (k >= 0 && k < t->rank && !t->dims[k].sym && t->dims[k].v == 1)
			return wb_call(w, OP_ATEN_unsqueeze_default, 2, arg_at(w->d, 1, S_dim), NULL);
	}
	return wb_reshape(w);
}

static ValueId wb_narrow(WriteBack *w)
{
	int ok = 1;
	int64_t dim = int_at(w->d, 1, S_dim, 0, &ok);
	int64_t start = int_at(w->d, 2, S_start, 0, &ok);
	int64_t len = int_at(w->d, 3, S_length, 0, &ok);
	if (!ok)
		return fail(w->f, w->d, "narrow needs literal dim, start and length"), 0;
	return wb_slice(w, dim, start, start + len);
}

/* Result i of split.Tensor / split_with_sizes is a slice of its base. */
static ValueId wb_split(WriteBack *w, int sizes)
{
	int ok = 1;
	const Arg *s = arg_at(w->d, 1, sizes ? S_split_sizes : S_split_size);
	int64_t dim = int_at(w->d, 2, S_dim, 0, &ok);
	int64_t start = 0, len = 0;
	if (!sizes) {
		len = int_at(w->d, 1, S_split_size, 0, &ok);
		start = len * w->res;
	} else if (s && s->kind == A_LIST && w->res < s->n) {
		for (uint32_t i = 0; i <= w->res && ok; i++) {
			ok = s->u.list[i].kind == A_INT;
			start += len;
			len = ok ? s->u.list[i].u.i : 0;
		}
	} else {
		ok = 0;
	}
	if (!ok)
		return fail(w->f, w->d, "split needs literal sizes and dim"), 0;
	return wb_slice(w, dim, start, start + len);
}

static ValueId wb_unbind(WriteBack *w)
{
	int ok = 1;
	int64_t dim = int_at(w->d, 1, S_dim, 0, &ok);
	if (!ok)
		return fail(w->f, w->d, "unbind needs a literal dim"), 0;
	Node *n = make(w->f, OP_ATEN_select_scatter_default, 4, 0, w->at, w->before, w->name, w->ty);
	n->args[0] = varg(w->base);
	n->args[1] = varg(w->src);
	n->args[2] = iarg(dim);
	n->args[3] = iarg(w->res);
	return n->res[0];
}

/* The base's new version given the view's new contents; 0 on error. */
static ValueId write_link(WriteBack *w)
{
	const Node *d = w->d;
	switch (d->op) {
	case OP_ATEN_slice_Tensor: return wb_scatter(w, OP_ATEN_slice_scatter_default);
	case OP_ATEN_select_int: return wb_scatter(w, OP_ATEN_select_scatter_default);
	case OP_ATEN_diagonal_default: return wb_scatter(w, OP_ATEN_diagonal_scatter_default);
	case OP_ATEN_as_strided_default: return wb_scatter(w, OP_ATEN_as_strided_scatter_default);
	case OP_ATEN_narrow_default: return wb_narrow(w);
	case OP_ATEN_split_Tensor: return wb_split(w, 0);
	case OP_ATEN_split_with_sizes_default: return wb_split(w, 1);
	case OP_ATEN_unbind_int: return wb_unbind(w);
	case OP_ATEN_transpose_int:
		return wb_call(w, OP_ATEN_transpose_int, 3, arg_at(d, 1, S_dim0), arg_at(d, 2, S_dim1));
	case OP_ATEN_t_default: return wb_call(w, OP_ATEN_t_default, 1, NULL, NULL);
	case OP_ATEN_permute_default: return wb_permute(w);
	case OP_ATEN_movedim_int:
		return wb_call(w, OP_ATEN_movedim_int, 3, arg_at(d, 2, S_destination), arg_at(d, 1, S_source));
	case OP_ATEN_unsqueeze_default: return wb_call(w, OP_ATEN_squeeze_dim, 2, arg_at(d, 1, S_dim), NULL);
	case OP_ATEN_squeeze_dim: return wb_squeeze_dim(w);
	case OP_ATEN_view_as_real_default: return wb_call(w, OP_ATEN_view_as_complex_default, 1, NULL, NULL);
	case OP_ATEN_view_as_complex_default: return wb_call(w, OP_ATEN_view_as_real_default, 1, NULL, NULL);
	case OP_ATEN_alias_default:
	case OP_ATEN_detach_default: return w->src;
	case OP_ATEN_view_default:
	case OP_ATEN__unsafe_view_default:
	case OP_ATEN__reshape_alias_default:
	case OP_ATEN_view_as_default:
	case OP_ATEN_squeeze_default:
	case OP_ATEN_squeeze_dims:
	case OP_ATEN_unflatten_int: return wb_reshape(w);
	default:
		return fail(w->f, d, "cannot write a mutation back through this view"), 0;
	}
}

/* Storage c now holds v.  A view passes its new contents on to its base,
 * up to the root, whose mutation count goes up; returns that count (every
 * link of the chain reflects it). */
static uint32_t write_back(Functionalize *f, ValueId c, ValueId v, const Node *at, Node *before)
{
	touch(f, c);
	VState *s = st(f, c);
	s->cur = v;
	if (!s->base)
		return ++s->ver;
	Value *bv = val(f->m, s->base);
	WriteBack w = { f, s->vdef, val(f->m, c)->res, current(f, s->base, before), v, bv->type, bv->name,
		 at, before };
	ValueId nb = write_link(&w);
	if (!nb)
		return s->ver;
	s->ver = write_back(f, s->base, nb, at, before);
	return s->ver;
}

/* ---- mutating ops -------------------------------------------------------- */

/* `name_.ovl` -> `name.ovl`, `__iand__.Tensor` -> `__and__.Tensor` (the
 * in-place dunders ATen has); 0 if not in place. */
static Sym functional_name(Sym name)
{
	const char *s = sym_str(name);
	const char *dot = strchr(s, '.');
	size_t n = dot ? (size_t)(dot - s) : strlen(s);
	char buf[256];
	if (n + 1 > sizeof buf || strlen(s) >= sizeof buf)
		return 0;
	static const char *const dunder[] = { "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__" };
	for (size_t i = 0; i < sizeof dunder / sizeof *dunder; i++)
		if (strlen(dunder[i]) == n && !strncmp(s, dunder[i], n)) {
			snprintf(buf, sizeof buf, "__%s", s + 3);
			return sym_cstr(buf);
		}
	if (n < 2 || s[n - 1] != '_' || s[n - 2] == '_')
		return 0;
	snprintf(buf, sizeof buf, "%.*s%s", (int)(n - 1), s, s + n);
	return sym_cstr(buf);
}

/* `add.out` -> `add` or `add.Tensor` (whichever the registry knows),
 * `sum.IntList_out` -> `sum.IntList`. */
static Sym functional_out_name(Sym name)
{
	const char *s = sym_str(name);
	const char *dot = strchr(s, '.');
	size_t n = dot ? (size_t)(dot - s) : strlen(s);
	const char *ovl = dot ? dot + 1 : "";
	size_t on = strlen(ovl);
	char buf[256];
	if (n + on + 8 > sizeof buf)
		return name;
	if (on > 4 && !strcmp(ovl + on - 4, "_out")) {
		snprintf(buf, sizeof buf, "%.*s.%.*s", (int)n, s, (int)(on - 4), ovl);
		return sym_cstr(buf);
	}
	snprintf(buf, sizeof buf, "%.*s", (int)n, s);
	if (op_lookup(S_aten, sym_cstr(buf)) == OP_GENERIC) {
		snprintf(buf, sizeof buf, "%.*s.Tensor", (int)n, s);
		if (op_lookup(S_aten, sym_cstr(buf)) == OP_GENERIC)
			snprintf(buf, sizeof buf, "%.*s", (int)n, s);
	}
	return sym_cstr(buf);
}

/* FX always names the result of a mutating op; give one if the text did
 * not, so there is a value to be the new version. */
static ValueId result_of(Functionalize *f, Node *n, ValueId c)
{
	if (n->nres >= 1 && n->res[0])
		return n->res[0];
	if (n->nres == 0) {
		n->nres = 1;
		n->res = ARENA_ARRAY(&f->m->arena, ValueId, 1);
	}
	return new_result(f, n, 0, val(f->m, c)->name, val(f->m, c)->type);
}

/* n (now functional) computed storage c's new contents. */
static void mutated(Functionalize *f, Node *n, ValueId c, Node *next)
{
	ValueId r = result_of(f, n, c);
	if (r < f->nst)
		st(f, r)->canon = c;
	write_back(f, c, r, n, next);
}

static int same_shape(const Type *a, const Type *b)
{
	if (a->rank < 0 || a->rank != b->rank)
		return 0;
	for (int32_t i = 0; i < a->rank; i++)
		if (a->dims[i].v < 0 || a->dims[i].v != b->dims[i].v || a->dims[i].sym != b->dims[i].sym)
			return 0;
	return 1;
}

/* copy_(dst, src): dst's new contents are src cast to dst's dtype
 * (_to_copy) and broadcast to its shape (expand).  Each step is skipped
 * when the types show it is not needed; with neither, src itself is the
 * new version and n goes away.  dst is the current version of c0. */
static int copy_inplace(Functionalize *f, Node *n, ValueId c0, Node *next)
{
	if (n->nargs < 2 || n->args[1].kind != A_VALUE)
		return fail(f, n, "copy_ needs a tensor source");
	ValueId dst = n->args[0].u.v, src = n->args[1].u.v;
	Type *D = val(f->m, dst)->type, *S = val(f->m, src)->type;
	int tensors = D && D->kind == TY_TENSOR && (!S || S->kind == TY_TENSOR);
	int cast = tensors && D->dtype && (!S || S->dtype != D->dtype);
	int expand = tensors && D->rank >= 0 && !(S && same_shape(S, D));
	Arg dt = { .kind = A_DTYPE, .u.i = tensors ? D->dtype : 0 };
	if (cast && expand) {
		Type *t = S ? type_tensor(&f->m->arena, D->dtype, S->rank, S->dims) : NULL;
		Node *c = make(f, OP_ATEN__to_copy_default, 1, 1, n, n, S__to_copy, t);
		c->args[0] = varg(src);
		c->kw[0] = (Named){ S_dtype, dt };
		src = c->res[0];
	}
	if (expand) {
		WriteBack w = { f, n, 0, dst, src, D, 0, n, n };
		Arg shape;
		if (!shape_list(&w, &shape))
			return fail(f, n, "copy_ needs the destination's rank");
		recall(f, n, OP_ATEN_expand_default, 2, 0);
		n->args[0] = varg(src);
		n->args[1] = shape;
	} else if (cast) {
		recall(f, n, OP_ATEN__to_copy_default, 1, 1);
		n->args[0] = varg(src);
		n->kw[0] = (Named){ S_dtype, dt };
	} else {
		node_remove(f->g, n);
		if (n->nres && n->res[0] && n->res[0] < f->nst)
			st(f, n->res[0])->canon = c0;
		write_back(f, c0, src, n, next);
		return 0;
	}
	mutated(f, n, c0, next);
	return 0;
}

/* n = aten::NAME_.OVL(%a, ...) with operands rewritten; c0 is the storage
 * %a named. */
static int inplace(Functionalize *f, Node *n, ValueId c0, Sym fname, Node *next)
{
	switch (n->op) {
	case OP_ATEN_copy__default: return copy_inplace(f, n, c0, next);
	case OP_ATEN_fill__Scalar: rename_op(n, op_name_of(OP_ATEN_full_like_default)); break;
	case OP_ATEN_zero__default: rename_op(n, op_name_of(OP_ATEN_zeros_like_default)); break;
	default: rename_op(n, fname); break;
	}
	mutated(f, n, c0, next);
	return 0;
}

/* out = %buf: drop the keyword; the result is buf's new version. */
static int out_variant(Functionalize *f, Node *n, uint32_t k, Node *next)
{
	if (n->kw[k].val.kind != A_VALUE)
		return fail(f, n, "out= must name one tensor");
	ValueId c = canon(f, n->kw[k].val.u.v);
	memmove(&n->kw[k], &n->kw[k + 1], (n->nkw - k - 1) * sizeof *n->kw);
	n->nkw--;
	rewrite_operands(f, n);
	rename_op(n, functional_out_name(n->name));
	mutated(f, n, c, next);
	return 0;
}

typedef struct OutVariant {
	const char *name, *functional;
	uint32_t npos;              /* positional arguments before the outputs */
	const char *out[2];
} OutVariant;

static const OutVariant out_variants[] = {
#define OUTV(name, functional, npos, out0, out1) { name, functional, npos, { out0, out1 } },
#include "out_variants.def"
#undef OUTV
};

static const OutVariant *out_variant_of(const Node *n)
{
	if (n->domain != S_aten)
		return NULL;
	const char *s = sym_str(n->name);
	for (size_t i = 0; i < sizeof out_variants / sizeof *out_variants; i++)
		if (!strcmp(s, out_variants[i].name))
			return &out_variants[i];
	return NULL;
}

/* Argument k of n removed (positional first, then keywords). */
static void drop_arg(Node *n, uint32_t k)
{
	if (k < n->nargs) {
		memmove(&n->args[k], &n->args[k + 1], (n->nargs - k - 1) * sizeof *n->args);
		n->nargs--;
		return;
	}
	k -= n->nargs;
	memmove(&n->kw[k], &n->kw[k + 1], (n->nkw - k - 1) * sizeof *n->kw);
	n->nkw--;
}

/* `aten::max.dim_max(%x, 1, false, max = %a, max_values = %b)` (or with
 * %a, %b positional): the functional op, whose result k is the new
 * version of output k. */
/* Output k of named-output node n: its tensor (0 if it is not one) and
 * its argument index (positional, then keywords) in *at. */
static ValueId named_out(const Node *n, const OutVariant *ov, uint32_t k, uint32_t *at)
{
	Sym name = sym_cstr(ov->out[k]);
	const Arg *a = NULL;
	*at = ov->npos + k;
	if (n->nargs > ov->npos)
		a = *at < n->nargs ? &n->args[*at] : NULL;
	for (uint32_t i = 0; n->nargs <= ov->npos && i < n->nkw; i++)
		if (n->kw[i].name == name) {
			*at = n->nargs + i;
			a = &n->kw[i].val;
		}
	return a && a->kind == A_VALUE ? a->u.v : VNONE;
}

static int named_outs(Functionalize *f, Node *n, const OutVariant *ov, Node *next)
{
	uint32_t at[2];
	ValueId c[2];
	for (uint32_t k = 0; k < 2; k++) {
		ValueId v = named_out(n, ov, k, &at[k]);
		if (!v) {
			char what[128];
			snprintf(what, sizeof what, "output %s must name one tensor", ov->out[k]);
			return fail(f, n, what);
		}
		c[k] = canon(f, v);
	}
	drop_arg(n, at[0] > at[1] ? at[0] : at[1]);
	drop_arg(n, at[0] > at[1] ? at[1] : at[0]);
	rewrite_operands(f, n);
	rename_op(n, sym_cstr(ov->functional));
	if (n->nres < 2) {
		ValueId *res = ARENA_ARRAY(&f->m->arena, ValueId, 2);
		res[0] = n->nres ? n->res[0] : VNONE;
		res[1] = VNONE;
		n->res = res;
		n->nres = 2;
	}
	for (uint32_t k = 0; k < 2; k++) {
		ValueId r = n->res[k] ? n->res[k] :
			    new_result(f, n, k, val(f->m, c[k])->name, val(f->m, c[k])->type);
		if (r < f->nst)
			st(f, r)->canon = c[k];
		write_back(f, c[k], r, n, next);
	}
	return 0;
}

/* The view op an in-place op stands for when it changes only its tensor's
 * shape and strides (transpose_ -> transpose.int, t_, squeeze_.dim,
 * unsqueeze_, as_strided_...); OP_GENERIC when it writes data. */
static OpId shape_view(Sym fname)
{
	char buf[256];
	const char *s = sym_str(fname);
	if (!strcmp(s, "swapaxes") || !strcmp(s, "swapdims"))   /* transpose's aliases */
		return OP_ATEN_transpose_int;
	OpId op = op_lookup(S_aten, fname);
	if (op == OP_GENERIC && snprintf(buf, sizeof buf, "%s.int", sym_str(fname)) < (int)sizeof buf)
		op = op_lookup(S_aten, sym_cstr(buf));
	return op != OP_GENERIC && (op_info[op].flags & OPF_VIEW) ? op : OP_GENERIC;
}

static int subgraphs(Functionalize *f, Node *n, Node *next);

/* Static element count of t; -1 when a dim is unknown. */
static int64_t static_numel(const Type *t)
{
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return -1;
	int64_t k = 1;
	for (int32_t i = 0; i < t->rank; i++) {
		if (t->dims[i].sym || t->dims[i].v < 0)
			return -1;
		k *= t->dims[i].v;
	}
	return k;
}

/* resize_(%x, [sizes]) with literal sizes and a static %x.  To as many
 * elements it is a shape change, a view(%x, sizes) of the same storage
 * (as transpose_); to fewer, the storage keeps its first elements:
 * view(slice(view(%x, [n]), 0, 0, k), sizes) is its new contents.  To more
 * it returns -1: the caller makes it the functional resize like any other
 * in-place op (the library fills the new elements with zeros). */
static int resize_inplace(Functionalize *f, Node *n, ValueId c0, Node *next)
{
	const Arg *size = n->nargs >= 2 ? &n->args[1] : NULL;
	int64_t k = 1;
	for (uint32_t i = 0; size && size->kind == A_LIST && i < size->n; i++)
		k = size->u.list[i].kind == A_INT && size->u.list[i].u.i >= 0 && k < (INT64_C(1) << 40) ?
			    k * size->u.list[i].u.i : -1;
	if (!size || size->kind != A_LIST || k < 0)
		return fail(f, n, "resize_ needs literal sizes");
	ValueId x = n->args[0].u.v;
	Type *t = val(f->m, c0)->type;
	int64_t m = static_numel(t);
	if (m < 0)
		return fail(f, n, "resize_ needs the tensor's static shape");
	if (k > m)
		return -1;              /* grows: the functional resize, new elements zero */
	if (k < m && st(f, c0)->base)
		return fail(f, n, "resize_ to fewer elements of a view");
	Arg sz = arg_copy(&f->m->arena, size);
	if (k < m) {
		Dim dm = { m, 0 }, dk = { k, 0 };
		Node *flat = make(f, OP_ATEN_view_default, 2, 0, n, n, val(f->m, c0)->name,
				  type_tensor(&f->m->arena, t->dtype, 1, &dm));
		Arg *l = ARENA_ARRAY(&f->m->arena, Arg, 1);
		l[0] = iarg(m);
		flat->args[0] = varg(x);
		flat->args[1] = (Arg){ .kind = A_LIST, .elem = A_INT, .n = 1, .u.list = l };
		Node *part = make(f, OP_ATEN_slice_Tensor, 4, 0, n, n, val(f->m, c0)->name,
				  type_tensor(&f->m->arena, t->dtype, 1, &dk));
		part->args[0] = varg(flat->res[0]);
		part->args[1] = iarg(0);
		part->args[2] = iarg(0);
		part->args[3] = iarg(k);
		x = part->res[0];
	}
	recall(f, n, OP_ATEN_view_default, 2, 0);
	n->args[0] = varg(x);
	n->args[1] = sz;
	if (k < m) {
		mutated(f, n, c0, next);
	} else if (n->nres && n->res[0]) {
		note_view(f, n, c0);
	}
	return 0;
}

static const FuncMut *callee_mut(Functionalize *f, const Node *n);
static int call_mutates(Functionalize *f, Node *n, const FuncMut *fm, Node *next);

static int visit(Functionalize *f, Node *n, Node *next)
{
	if (node_has_subgraph(n)) {
		rewrite_operands(f, n);
		return subgraphs(f, n, next);
	}
	if (n->domain != S_aten) {
		const FuncMut *fm = callee_mut(f, n);
		if (fm)
			return call_mutates(f, n, fm, next);
		rewrite_operands(f, n);
		return 0;
	}
	const OutVariant *ov = out_variant_of(n);
	if (ov)
		return named_outs(f, n, ov, next);
	for (uint32_t k = 0; k < n->nkw; k++)
		if (n->kw[k].name == S_out)
			return out_variant(f, n, k, next);
	ValueId c0 = n->nargs && n->args[0].kind == A_VALUE && n->args[0].u.v ?
			     canon(f, n->args[0].u.v) : VNONE;
	Sym fname = functional_name(n->name);
	rewrite_operands(f, n);
	if (fname && !c0)
		return fail(f, n, "an in-place op needs a tensor first argument");
	int rs = fname && !strcmp(sym_str(fname), "resize") ? resize_inplace(f, n, c0, next) : -1;
	if (rs >= 0)
		return rs;
	/* A shape-changing in-place op writes nothing: its result (which later
	 * nodes use for the tensor, as make_fx records them) is a new view of
	 * the same storage, and views taken before keep their shapes. */
	if (fname && shape_view(fname) != OP_GENERIC) {
		rename_op(n, op_name_of(shape_view(fname)));
		if (n->nres && n->res[0])
			note_view(f, n, c0);
		return 0;
	}
	if (fname)
		return inplace(f, n, c0, fname, next);
	if (is_view(n))
		note_view(f, n, c0);
	return 0;
}

/* ---- mutated inputs become outputs --------------------------------------- */

typedef VEC(char) Buf;

static void buf_add(Functionalize *f, Buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		VEC_PUSH(&f->m->arena, *b, s[i]);
}

/* A name as is, or quoted when it holds a space, quote or backslash. */
static void buf_name(Functionalize *f, Buf *b, Sym name)
{
	const char *s = sym_str(name);
	if (!strpbrk(s, " \"\\\n\t")) {
		buf_add(f, b, s, strlen(s));
		return;
	}
	buf_add(f, b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_add(f, b, "\\", 1);
		buf_add(f, b, *s == '\n' ? "n" : *s == '\t' ? "t" : s, 1);
	}
	buf_add(f, b, "\"", 1);
}

/* "<input|output> <kind> <name>[ <target>]\n" */
static void sig_line(Functionalize *f, Buf *b, const char *io, const char *kind, Sym name, Sym target)
{
	buf_add(f, b, io, strlen(io));
	buf_add(f, b, " ", 1);
	buf_add(f, b, kind, strlen(kind));
	buf_add(f, b, " ", 1);
	buf_name(f, b, name);
	if (target) {
		buf_add(f, b, " ", 1);
		buf_name(f, b, target);
	}
	buf_add(f, b, "\n", 1);
}

static int user_output(const Graph *g, uint32_t nuser, ValueId v)
{
	for (uint32_t i = 0; i < nuser; i++)
		if (g->out[i] == v)
			return 1;
	return 0;
}

static void push_output_to(Functionalize *f, Graph *g, ValueId v)
{
	ValueId *out = ARENA_ARRAY(&f->m->arena, ValueId, g->nout + 1);
	Type **decl = ARENA_ARRAY(&f->m->arena, Type *, g->nout + 1);
	if (g->nout) {
		memcpy(out, g->out, g->nout * sizeof *out);
		if (g->out_decl)
			memcpy(decl, g->out_decl, g->nout * sizeof *decl);
	}
	out[g->nout] = v;
	decl[g->nout] = val(f->m, v)->type;
	g->out = out;
	g->out_decl = decl;
	g->nout++;
}

static void push_output(Functionalize *f, ValueId v)
{
	push_output_to(f, f->g, v);
}

/* Storage v (an input, parameter or buffer) was mutated: return its latest
 * version, named `<v>_updated` when it is a version this pass made or
 * renamed, i.e. a node result not otherwise returned. */
static void add_mutation(Functionalize *f, Buf *b, ValueId v)
{
	static const char *const kinds[] = {
		[VK_INPUT] = "user_input_mutation", [VK_PARAM] = "parameter_mutation",
		[VK_BUFFER] = "buffer_mutation",
	};
	Value *in = val(f->m, v);
	ValueId nv = current(f, v, NULL);
	Value *x = val(f->m, nv);
	if (x->kind == VK_NODE && !user_output(f->g, f->g->nout, nv)) {
		char name[512];
		snprintf(name, sizeof name, "%.400s_updated", sym_str(in->name));
		x->name = value_fresh_name(f->m, sym_cstr(name));
	}
	push_output(f, nv);
	sig_line(f, b, "output", kinds[in->kind], x->name, in->kind == VK_INPUT ? in->name : in->key);
}

static int is_mutated(Functionalize *f, ValueId v)
{
	VState *s = st(f, v);
	return s->ver > 0 && s->cur && s->cur != v;
}

static void set_meta(Functionalize *f, Buf *b)
{
	Graph *g = f->g;
	Str s = { arena_strndup(&f->m->arena, b->v, b->n), b->n };
	for (uint32_t i = 0; i < g->nmeta; i++)
		if (g->meta[i].key.n == sizeof SIG_KEY - 1 && !memcmp(g->meta[i].key.s, SIG_KEY, g->meta[i].key.n)) {
			g->meta[i].val = s;
			return;
		}
	MetaProp *mp = ARENA_ARRAY(&f->m->arena, MetaProp, g->nmeta + 1);
	if (g->nmeta)
		memcpy(mp, g->meta, g->nmeta * sizeof *mp);
	mp[g->nmeta].key = (Str){ SIG_KEY, sizeof SIG_KEY - 1 };
	mp[g->nmeta].val = s;
	g->meta = mp;
	g->nmeta++;
}

/* The graph's storages in signature order: inputs, then params and
 * buffers (consts are inline and never outputs). */
static uint32_t nstorage(const Graph *g) { return g->nin + g->inits.n; }

static ValueId storage_at(const Graph *g, uint32_t i)
{
	return i < g->nin ? g->in[i] : g->inits.v[i - g->nin];
}

static int is_storage(Functionalize *f, uint32_t i)
{
	const Value *v = val(f->m, storage_at(f->g, i));
	return i < f->g->nin ? v->kind == VK_INPUT : v->kind == VK_PARAM || v->kind == VK_BUFFER;
}

static void describe_inputs(Functionalize *f, Buf *b)
{
	static const char *const kinds[] = {
		[VK_INPUT] = "user_input", [VK_PARAM] = "parameter", [VK_BUFFER] = "buffer",
	};
	for (uint32_t i = 0; i < nstorage(f->g); i++) {
		Value *v = val(f->m, storage_at(f->g, i));
		if (is_storage(f, i))
			sig_line(f, b, "input", kinds[v->kind], v->name, v->kind == VK_INPUT ? 0 : v->key);
	}
}

/* User outputs read the latest versions; mutated storages are appended. */
static void finish_graph(Functionalize *f)
{
	Graph *g = f->g;
	uint32_t nuser = g->nout, nmut = 0;
	for (uint32_t i = 0; i < nuser; i++)
		if (g->out[i])
			g->out[i] = current(f, canon(f, g->out[i]), NULL);
	for (uint32_t i = 0; i < nstorage(g); i++)
		nmut += is_storage(f, i) && is_mutated(f, storage_at(g, i));
	if (!nmut)
		return;
	Buf b = { 0 };
	describe_inputs(f, &b);
	for (uint32_t i = 0; i < nuser; i++)
		sig_line(f, &b, "output", "user_output",
			 g->out[i] ? val(f->m, g->out[i])->name : S_underscore, 0);
	for (uint32_t i = 0; i < nstorage(g); i++)
		if (is_storage(f, i) && is_mutated(f, storage_at(g, i)))
			add_mutation(f, &b, storage_at(g, i));
	set_meta(f, &b);
}

/* ---- subgraphs ------------------------------------------------------------ */

/* A subgraph is walked as a scope of its own, when the walk reaches the
 * node that holds it: its in-place ops become functional, and its reads of
 * the graphs around it see their latest versions (a stale view is derived
 * again inside it).  ONNX subgraphs cannot write into outer values, so a
 * mutation of an outer storage inside one becomes a new output of the
 * subgraph and a new result of the node: an If's other branch returns the
 * storage unchanged; a Loop carries the storage as one more loop value,
 * which the body reads instead of the outer value.  The outer state the
 * scope changed is restored when it ends (touch saves it), so each
 * subgraph costs its own size. */

static int first_time(Functionalize *f, ValueId v)
{
	if (f->mark[v] == f->epoch)
		return 0;
	f->mark[v] = f->epoch;
	return 1;
}

/* Outer roots a scope mutated, with their latest versions inside it. */
typedef struct Escapes { uint32_t n; ValueId *root, *ver; } Escapes;

/* Walks subgraph s, which first sees outer root pre[i] as value
 * param[i] (a Loop's carried copy); *out gets the outer roots s mutated. */
static void walk_sub(Functionalize *f, Graph *s, const ValueId *pre, const ValueId *param,
		     uint32_t npre, Escapes *out)
{
	Graph *outer = f->g;
	uint32_t start = f->log.n;
	f->g = s;
	f->depth++;
	for (uint32_t i = 0; i < npre; i++)
		write_back(f, pre[i], param[i], NULL, s->first);
	for (Node *n = s->first, *next; n; n = next) {
		next = n->next;
		visit(f, n, next);
	}
	for (uint32_t i = 0; i < s->nout; i++)
		if (s->out[i])
			s->out[i] = current(f, canon(f, s->out[i]), NULL);
	out->n = 0;
	out->root = ARENA_ARRAY(&f->m->arena, ValueId, f->log.n - start + 1);
	out->ver = ARENA_ARRAY(&f->m->arena, ValueId, f->log.n - start + 1);
	f->epoch++;
	for (uint32_t i = start; i < f->log.n; i++) {      /* the first save is the oldest */
		ValueId v = f->log.v[i].v;
		if (!first_time(f, v) || f->st[v].base || f->st[v].ver == f->log.v[i].old.ver ||
		    graph_defines(f->m, s, v))
			continue;
		out->root[out->n] = v;
		out->ver[out->n++] = current(f, v, NULL);
	}
	for (uint32_t i = f->log.n; i-- > start;)
		f->st[f->log.v[i].v] = f->log.v[i].old;
	f->log.n = start;
	f->depth--;
	f->g = outer;
}

/* v as an output of subgraph g: through an Identity when g does not
 * define it (ONNX subgraphs may not return an outer value as is). */
static ValueId own_value(Functionalize *f, Graph *g, ValueId v, const Node *like)
{
	if (graph_defines(f->m, g, v))
		return v;
	Graph *keep = f->g;
	f->g = g;
	Node *n = make(f, OP_ONNX_Identity, 1, 0, like, NULL, val(f->m, v)->name, val(f->m, v)->type);
	n->args[0] = varg(v);
	f->g = keep;
	return n->res[0];
}

/* Result `at` of n, inserted, is root's new version after n. */
static ValueId insert_result(Functionalize *f, Node *n, uint32_t at, ValueId root)
{
	ValueId *res = ARENA_ARRAY(&f->m->arena, ValueId, n->nres + 1);
	memcpy(res, n->res, at * sizeof *res);
	memcpy(res + at + 1, n->res + at, (n->nres - at) * sizeof *res);
	n->res = res;
	n->nres++;
	for (uint32_t i = at + 1; i < n->nres; i++)
		if (n->res[i])
			val(f->m, n->res[i])->res = i;
	return new_result(f, n, at, val(f->m, root)->name, val(f->m, root)->type);
}

static void insert_output(Functionalize *f, Graph *g, uint32_t at, ValueId v)
{
	push_output_to(f, g, v);
	for (uint32_t i = g->nout - 1; i > at; i--) {
		g->out[i] = g->out[i - 1];
		g->out_decl[i] = g->out_decl[i - 1];
	}
	g->out[at] = v;
	g->out_decl[at] = val(f->m, v)->type;
}

static Graph *graph_kw(const Node *n, Sym name)
{
	const Named *k = node_kw(n, name);
	return k && k->val.kind == A_GRAPH ? k->val.u.g : NULL;
}

/* Both branches return each outer root either branch mutated (the other
 * its version from before the If); the If's new results are the roots'
 * versions after it. */
static int sub_if(Functionalize *f, Node *n, Node *next)
{
	Graph *g[2] = { graph_kw(n, f->s_then), graph_kw(n, f->s_else) };
	Escapes e[2] = { 0 };
	for (int k = 0; k < 2; k++)
		if (g[k])
			walk_sub(f, g[k], NULL, NULL, 0, &e[k]);
	if (!g[0] || !g[1])
		return e[0].n || e[1].n ? fail(f, n, "If without both branches mutates an outer value") : 0;
	f->epoch++;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < e[k].n; i++) {
			ValueId c = e[k].root[i];
			if (!first_time(f, c))
				continue;
			for (int b = 0; b < 2; b++) {
				ValueId v = current(f, c, n);
				for (uint32_t j = 0; j < e[b].n; j++)
					if (e[b].root[j] == c)
						v = e[b].ver[j];
				push_output_to(f, g[b], own_value(f, g[b], v, n));
			}
			write_back(f, c, insert_result(f, n, n->nres, c), n, next);
		}
	return 0;
}

typedef VEC(ValueId) Ids;

/* Context of the walks over a node's subgraphs (node_each_subgraph). */
typedef struct Scan {
	Functionalize *f;
	Ids *roots;                 /* find_writes: the outer roots written */
	const Node *at;             /* sub_other: the node holding them */
} Scan;

/* Values defined in g and the subgraphs in it get the current mark. */
static void mark_inside(Graph *g, void *ctx)
{
	Functionalize *f = ((Scan *)ctx)->f;
	for (uint32_t i = 0; i < g->nin; i++)
		if (g->in[i] < f->nst)
			f->mark[g->in[i]] = f->epoch;
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (g->inits.v[i] < f->nst)
			f->mark[g->inits.v[i]] = f->epoch;
	for (const Node *n = g->first; n; n = n->next) {
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i] && n->res[i] < f->nst)
				f->mark[n->res[i]] = f->epoch;
		node_each_subgraph(n, mark_inside, ctx);
	}
}

/* The value an in-place, out= or copy_ node writes into (the second
 * output of a named-output node in *second); 0 otherwise. */
static ValueId write_target(const Node *n, ValueId *second)
{
	*second = VNONE;
	if (n->domain != S_aten)
		return 0;
	const OutVariant *ov = out_variant_of(n);
	uint32_t at;
	if (ov) {
		*second = named_out(n, ov, 1, &at);
		return named_out(n, ov, 0, &at);
	}
	const Named *o = node_kw(n, S_out);
	if (o)
		return o->val.kind == A_VALUE ? o->val.u.v : 0;
	Sym fname = functional_name(n->name);
	if (!fname || shape_view(fname) != OP_GENERIC || !n->nargs || n->args[0].kind != A_VALUE)
		return 0;
	return n->args[0].u.v;
}

/* Adds to roots the outer root write target t stands for, if any. */
static void outer_root(Functionalize *f, ValueId t, Ids *roots)
{
	ValueId second;
	while (t && t < f->nst && f->mark[t] == f->epoch) {
		const Value *x = val(f->m, t);
		const Node *d = x->kind == VK_NODE ? x->def : NULL;
		int alias = d && d->nargs && d->args[0].kind == A_VALUE &&
			    (is_view(d) || write_target(d, &second) == d->args[0].u.v);
		t = alias ? d->args[0].u.v : 0;
	}
	if (!t || t >= f->nst)
		return;
	ValueId c = canon(f, t);
	ValueId root = st(f, c)->base ? st(f, c)->root : c;
	if (f->mark[root] != f->epoch + 1) {
		f->mark[root] = f->epoch + 1;
		VEC_PUSH(&f->m->arena, *roots, root);
	}
}

/* The outer roots that nodes of g (and of its subgraphs) write into:
 * a target made inside (a view, an in-place result) is followed to its
 * first argument until it is an outer value.  Values inside carry the
 * current mark; roots found get mark epoch + 1. */
static void find_writes(Graph *g, void *ctx)
{
	Functionalize *f = ((Scan *)ctx)->f;
	Ids *roots = ((Scan *)ctx)->roots;
	for (const Node *n = g->first; n; n = n->next) {
		node_each_subgraph(n, find_writes, ctx);
		ValueId t[2];
		t[0] = write_target(n, &t[1]);
		for (int k = 0; k < 2; k++)
			outer_root(f, t[k], roots);
	}
}

/* A Loop body that writes into outer roots gets each as one more carried
 * value: a body input read instead of the root, a body output after the
 * other carried ones, a Loop input (the root's version before) and a
 * result (its version after). */
static int sub_loop(Functionalize *f, Node *n, Node *next)
{
	Graph *b = graph_kw(n, f->s_body);
	if (!b || n->nargs < 2)
		return fail(f, n, "Loop without a body");
	Ids roots = { 0 };
	Scan scan = { f, &roots, NULL };
	f->epoch++;
	mark_inside(b, &scan);
	find_writes(b, &scan);
	f->epoch++;                 /* past the roots' marks */
	uint32_t ncar = n->nargs - 2;
	if (b->nout < 1 + ncar || n->nres < ncar)
		return fail(f, n, "Loop body outputs and results do not match its carried values");
	ValueId *param = ARENA_ARRAY(&f->m->arena, ValueId, roots.n + 1);
	ValueId *init = ARENA_ARRAY(&f->m->arena, ValueId, roots.n + 1);
	ValueId *in = ARENA_ARRAY(&f->m->arena, ValueId, b->nin + roots.n + 1);
	memcpy(in, b->in, b->nin * sizeof *in);
	for (uint32_t i = 0; i < roots.n; i++) {
		Value *r = val(f->m, roots.v[i]);
		init[i] = current(f, roots.v[i], n);
		param[i] = value_new(f->m, value_fresh_name(f->m, r->name), r->type, VK_INPUT);
		in[b->nin + i] = param[i];
	}
	b->in = in;
	b->nin += roots.n;
	Escapes e;
	walk_sub(f, b, roots.v, param, roots.n, &e);
	if (e.n != roots.n)
		return fail(f, n, "a Loop body writes into an outer value through an alias the pass "
			       "cannot follow");
	Arg *args = ARENA_ARRAY(&f->m->arena, Arg, n->nargs + roots.n);
	memcpy(args, n->args, n->nargs * sizeof *args);
	n->args = args;
	for (uint32_t i = 0; i < roots.n; i++) {
		n->args[n->nargs++] = varg(init[i]);
		insert_output(f, b, 1 + ncar + i, own_value(f, b, e.ver[i], n));
		write_back(f, roots.v[i], insert_result(f, n, ncar + i, roots.v[i]), n, next);
	}
	return 0;
}

/* Any other node with subgraphs (Scan, a custom op): they are
 * functionalized, but may not write into outer values. */
static void sub_other(Graph *g, void *ctx)
{
	Scan *sc = ctx;
	Escapes e;
	walk_sub(sc->f, g, NULL, NULL, 0, &e);
	if (e.n)
		fail(sc->f, sc->at, "a subgraph of this node writes into an outer value");
}

static int subgraphs(Functionalize *f, Node *n, Node *next)
{
	if (n->op == OP_ONNX_If)
		return sub_if(f, n, next);
	if (n->op == OP_ONNX_Loop)
		return sub_loop(f, n, next);
	Scan sc = { f, NULL, n };
	node_each_subgraph(n, sub_other, &sc);
	return 0;
}

/* ---- local functions ------------------------------------------------------ */

/* A function body is functionalized like a graph, callees before their
 * callers.  A parameter the body mutates becomes one more result of the
 * function (after its own, in parameter order), and each call becomes a
 * mutation of the value it passes there: the call gets the matching new
 * result, which is that storage's next version (written back through a
 * view like any in-place result).  Each body and each call is visited
 * once: linear in the module. */

typedef struct FnKey { const Module *m; Sym domain, name; } FnKey;

static int fn_is(uintptr_t item, const void *key)
{
	const FnKey *k = key;
	const Func *fn = k->m->funcs.v[item - 1];
	return fn->domain == k->domain && fn->name == k->name;
}

static uint64_t fn_hash(Sym d, Sym n) { return hash_u64((uint64_t)d << 32 | n); }

/* The index + 1 of the local function n calls, or 0. */
static uint32_t callee(const Functionalize *f, const Node *n)
{
	if (n->op != OP_GENERIC || n->domain == S_onnx || n->domain == S_aten || !f->m->funcs.n)
		return 0;
	FnKey k = { f->m, n->domain, n->name };
	return (uint32_t)hashmap_get(&f->funcs, fn_hash(n->domain, n->name), fn_is, &k);
}

static const FuncMut *callee_mut(Functionalize *f, const Node *n)
{
	uint32_t i = callee(f, n);
	return i && f->fm[i - 1].nmut ? &f->fm[i - 1] : NULL;
}

/* Call n of a function that mutates parameters: the storages passed there
 * get n's new results as their next versions. */
static int call_mutates(Functionalize *f, Node *n, const FuncMut *fm, Node *next)
{
	ValueId *c = xcalloc(fm->nmut, sizeof *c);
	for (uint32_t j = 0; j < fm->nmut; j++) {
		uint32_t k = fm->param[j];
		if (k >= n->nargs || n->args[k].kind != A_VALUE || !n->args[k].u.v) {
			free(c);
			return fail(f, n, "a mutated parameter of the called function needs a tensor argument");
		}
		c[j] = canon(f, n->args[k].u.v);
	}
	rewrite_operands(f, n);
	uint32_t want = fm->nout + fm->nmut;
	if (n->nres < want) {
		ValueId *res = ARENA_ARRAY(&f->m->arena, ValueId, want);
		if (n->nres)
			memcpy(res, n->res, n->nres * sizeof *res);
		n->res = res;
		n->nres = want;
	}
	for (uint32_t j = 0; j < fm->nmut; j++) {
		const Value *a = val(f->m, c[j]);
		ValueId r = new_result(f, n, fm->nout + j, a->name, val(f->m, current(f, c[j], n))->type);
		write_back(f, c[j], r, n, next);
	}
	free(c);
	return 0;
}

/* The body's outputs read the latest versions; each mutated parameter's
 * latest version is returned after them. */
static void finish_func(Functionalize *f, FuncMut *fm)
{
	Graph *g = f->g;
	fm->nout = g->nout;
	for (uint32_t i = 0; i < g->nout; i++)
		if (g->out[i])
			g->out[i] = current(f, canon(f, g->out[i]), NULL);
	for (uint32_t i = 0; i < g->nin; i++)
		fm->nmut += g->in[i] && is_mutated(f, g->in[i]);
	if (!fm->nmut)
		return;
	fm->param = xcalloc(fm->nmut, sizeof *fm->param);
	uint32_t j = 0;
	for (uint32_t i = 0; i < g->nin; i++)
		if (g->in[i] && is_mutated(f, g->in[i])) {
			fm->param[j++] = i;
			push_output(f, current(f, g->in[i], NULL));
		}
}

static void run_func(Functionalize *f, uint32_t i)
{
	f->g = f->m->funcs.v[i]->body;
	f->err = 0;
	for (Node *n = f->g->first, *next; n; n = next) {
		next = n->next;
		visit(f, n, next);
	}
	if (!f->err)
		finish_func(f, &f->fm[i]);
	f->failed |= f->err;
}

typedef VEC(uint32_t) Order;

/* Pushes the functions the nodes of g (and of its subgraphs) call. */
typedef struct Callees { Functionalize *f; Order *todo; } Callees;

static void push_callees(Graph *g, void *ctx)
{
	Callees *cs = ctx;
	for (const Node *n = g->first; n; n = n->next) {
		uint32_t k = callee(cs->f, n);
		if (k && cs->f->fm[k - 1].state == 0)
			XVEC_PUSH(*cs->todo, k - 1);
		node_each_subgraph(n, push_callees, ctx);
	}
}

/* Every function, each after the functions it calls (a depth-first walk
 * with an explicit stack; a cycle, which inline reports, is cut where the
 * walk meets it again). */
static void run_funcs(Functionalize *f)
{
	Module *m = f->m;
	f->fm = xcalloc(m->funcs.n ? m->funcs.n : 1, sizeof *f->fm);
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		FnKey k = { m, m->funcs.v[i]->domain, m->funcs.v[i]->name };
		hashmap_intern(&f->funcs, fn_hash(k.domain, k.name), fn_is, &k, i + 1);
	}
	Order todo = { 0 };
	Callees cs = { f, &todo };
	for (uint32_t i = 0; i < m->funcs.n; i++) {
		if (f->fm[i].state)
			continue;
		XVEC_PUSH(todo, i);
		while (todo.n) {
			uint32_t j = todo.v[todo.n - 1];
			FuncMut *fm = &f->fm[j];
			if (fm->state == 2) {
				todo.n--;
			} else if (fm->state == 1) {
				todo.n--;
				fm->state = 2;
				run_func(f, j);
			} else {
				fm->state = 1;
				push_callees(m->funcs.v[j]->body, &cs);
			}
		}
	}
	free(todo.v);
}

/* Subgraphs are walked from the node that holds them (walk_sub); function
 * bodies before the graphs (section "local functions"); decomposition
 * bodies are not entered, and a mutation left in one is reported by
 * decompose, which has no decomposition for in-place ops. */
static Status run_graph(const GraphVisit *v, void *ctx)
{
	Functionalize *f = ctx;
	Graph *g = v->g;
	if (v->depth)
		return OK;
	f->g = g;
	f->err = 0;
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		visit(f, n, next);
	}
	if (!f->err)
		finish_graph(f);
	f->failed |= f->err;
	return OK;                  /* the other graphs are still reported on */
}

Status pass_functionalize(Module *m, const PassOptions *opt)
{
	(void)opt;
	Functionalize f = { .m = m, .st = xcalloc(m->vals.n, sizeof(VState)), .nst = m->vals.n };
	f.mark = xcalloc(m->vals.n, sizeof *f.mark);
	f.s_then = sym_cstr("then_branch");
	f.s_else = sym_cstr("else_branch");
	f.s_body = sym_cstr("body");
	run_funcs(&f);
	module_walk(m, WALK_GRAPHS, run_graph, &f);
	hashmap_free(&f.funcs);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		free(f.fm[i].param);
	free(f.fm);
	free(f.mark);
	free(f.st);
	return f.failed ? FAILED : OK;
}
