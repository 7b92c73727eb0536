/* rewrite.c - the replacement table and the pattern helpers passes share. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

/* ---- the replacement table ------------------------------------------------ */
void rw_free(Rewriter *rw)
{
	free(rw->to);
	*rw = (Rewriter){ 0 };
}

/* Values made after the table was sized (by the pass itself) grow it. */
void rw_set(Rewriter *rw, ValueId from, ValueId to)
{
	rw->to = xgrow_index(rw->to, &rw->cap, from, sizeof *rw->to);
	rw->to[from] = to;
}

ValueId rw_get(const Rewriter *rw, ValueId v)
{
	while (v < rw->cap && rw->to[v])
		v = rw->to[v];
	return v;
}

static uint32_t apply_arg(const Rewriter *rw, Arg *a)
{
	uint32_t k = 0;
	if (a->kind == A_VALUE) {
		ValueId v = rw_get(rw, a->u.v);
		k = v != a->u.v;
		a->u.v = v;
	} else if (a->kind == A_LIST) {
		for (uint32_t i = 0; i < a->n; i++)
			k += apply_arg(rw, &a->u.list[i]);
	}
	return k;
}

uint32_t rw_apply(const Rewriter *rw, Node *n)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->nargs; i++)
		k += apply_arg(rw, &n->args[i]);
	for (uint32_t i = 0; i < n->nkw; i++)
		k += apply_arg(rw, &n->kw[i].val);
	return k;
}

void rw_apply_outputs(const Rewriter *rw, Graph *g)
{
	for (uint32_t i = 0; i < g->nout; i++)
		g->out[i] = rw_get(rw, g->out[i]);
}

/* ---- use counts ----------------------------------------------------------- */
static void count_use(ValueId v, void *ctx) { ((uint32_t *)ctx)[v]++; }

static Status count_graph(const GraphVisit *v, void *ctx)
{
	graph_each_use(v->g, count_use, ctx);
	return OK;
}

uint32_t *module_use_counts(Module *m, unsigned what)
{
	uint32_t *uses = xcalloc(m->vals.n, sizeof *uses);
	module_walk(m, what, count_graph, uses);
	return uses;
}

static Status add_nodes(const GraphVisit *v, void *ctx)
{
	*(uint32_t *)ctx += v->g->nnodes;
	return OK;
}

uint32_t module_node_count(Module *m)
{
	uint32_t n = 0;
	module_walk(m, WALK_PROGRAM, add_nodes, &n);
	return n;
}

static uint64_t digest_mix(uint64_t h, uint64_t x)
{
	return (h ^ x) * 0x100000001b3ull;
}

/* Each node's op, its result and the values it reads (lists included),
 * and the graph's initializer count: what the passes of a pipeline group
 * change when they change anything. */
static Status digest_graph(const GraphVisit *v, void *ctx)
{
	uint64_t h = *(uint64_t *)ctx;
	h = digest_mix(h, v->g->inits.n);
	for (const Node *n = v->g->first; n; n = n->next) {
		h = digest_mix(digest_mix(h, n->op), n->nres ? n->res[0] : 0);
		for (uint32_t i = 0; i < n->nargs; i++) {
			const Arg *a = &n->args[i];
			if (a->kind == A_VALUE)
				h = digest_mix(h, a->u.v);
			for (uint32_t j = 0; a->kind == A_LIST && j < a->n; j++)
				if (a->u.list[j].kind == A_VALUE)
					h = digest_mix(h, a->u.list[j].u.v);
			h = digest_mix(h, a->kind);
		}
	}
	*(uint64_t *)ctx = h;
	return OK;
}

uint64_t module_digest(Module *m)
{
	uint64_t h = 0xcbf29ce484222325ull;
	module_walk(m, WALK_PROGRAM, digest_graph, &h);
	return h;
}

/* ---- pattern helpers ------------------------------------------------------ */
Node *def_of(const Module *m, ValueId v)
{
	const Value *x = v ? &m->vals.v[v] : NULL;
	return x && x->kind == VK_NODE ? x->def : NULL;
}

Node *match_op(const Module *m, ValueId v, OpId op)
{
	Node *d = def_of(m, v);
	return d && d->op == op && d->domain == op_domain(op) && d->nres && d->res[0] == v ? d : NULL;
}

ValueId operand(const Node *n, uint32_t i)
{
	return i < n->nargs && n->args[i].kind == A_VALUE ? n->args[i].u.v : VNONE;
}

Node *match_operand(const Module *m, const Node *n, uint32_t i, OpId op)
{
	return match_op(m, operand(n, i), op);
}

const Tensor *const_tensor(const Module *m, ValueId v)
{
	const Value *x = v ? &m->vals.v[v] : NULL;
	if (x && x->overridable)
		return NULL;            /* its value is the user's, not this tensor */
	if (x && x->kind == VK_CONST)
		return x->init;
	const Node *d = match_op(m, v, OP_ONNX_Constant);
	const Named *k = d ? node_kw(d, S_value) : NULL;
	return k && k->val.kind == A_TENSOR ? k->val.u.t : NULL;
}

/* A new `const` of g holding t, named `<like>_<suffix>`, at like's location. */
static ValueId new_const(Module *m, Graph *g, Tensor *t, ValueId like, const char *suffix)
{
	char buf[300];
	snprintf(buf, sizeof buf, "%.250s_%s", sym_str(val(m, like)->name), suffix);
	ValueId c = value_new(m, value_fresh_name(m, sym_cstr(buf)), t->type, VK_CONST);
	val(m, c)->init = t;
	val(m, c)->loc = val(m, like)->loc;
	VEC_PUSH(&m->arena, g->inits, c);
	return c;
}

ValueId const_i64s(Module *m, Graph *g, const int64_t *v, int32_t n, ValueId like, const char *suffix)
{
	Arena *a = &m->arena;
	Dim *d = ARENA_NEW(a, Dim);
	*d = (Dim){ n, 0 };
	Tensor *t = ARENA_NEW(a, Tensor);
	t->type = type_tensor(a, DT_I64, 1, d);
	t->nbytes = (size_t)n * 8;
	uint8_t *b = arena_alloc(a, t->nbytes ? t->nbytes : 1);
	if (t->nbytes)
		memcpy(b, v, t->nbytes);
	t->data = b;
	return new_const(m, g, t, like, suffix);
}

ValueId const_0d(Module *m, Graph *g, DType dt, double x, int64_t i, ValueId like, const char *suffix)
{
	Arena *a = &m->arena;
	Tensor *t = ARENA_NEW(a, Tensor);
	t->type = type_tensor(a, dt, 0, NULL);
	t->nbytes = tensor_nbytes(dt, 1);
	uint8_t *b = arena_alloc(a, 8);
	tensor_put(dt, b, 0, x, i, dtype_is_int(dt));
	t->data = b;
	return new_const(m, g, t, like, suffix);
}

ValueId const_reshaped(Module *m, Graph *g, ValueId c, const int64_t *dims, int32_t rank, ValueId like,
		       const char *suffix)
{
	const Tensor *src = const_tensor(m, c);
	if (!src || !src->type || !src->data)
		return VNONE;
	Arena *a = &m->arena;
	Dim *d = ARENA_ARRAY(a, Dim, rank ? rank : 1);
	int64_t n = 1;
	for (int32_t i = 0; i < rank; i++) {
		d[i] = (Dim){ dims[i], 0 };
		n *= dims[i];
	}
	if (n != type_numel(src->type))
		return VNONE;
	Tensor *t = ARENA_NEW(a, Tensor);
	*t = *src;
	t->type = type_tensor(a, (DType)src->type->dtype, rank, d);
	t->name = 0;
	return new_const(m, g, t, like, suffix);
}

int match_const(const Module *m, ValueId v, double x)
{
	const Tensor *t = const_tensor(m, v);
	int64_t n = t && t->type ? type_numel(t->type) : -1;
	if (n <= 0 || !t->data || t->type->dtype == DT_STR)
		return 0;
	DType dt = (DType)t->type->dtype;
	for (int64_t i = 0; i < n; i++)
		if (tensor_get_f(dt, t->data, (size_t)i) != x)
			return 0;
	return 1;
}

Node *match_arange(const Module *m, ValueId v)
{
	Node *r = match_op(m, v, OP_ONNX_Range);
	return r && match_const(m, operand(r, 0), 0) && match_const(m, operand(r, 2), 1) ? r : NULL;
}

/* ---- provenance of computed constants ------------------------------------ */
typedef struct NameList { char *s; size_t len, cap; uint32_t n; int full; } NameList;

static int is_key(const MetaProp *mp, Sym key)
{
	return mp->key.n == sym_len(key) && !memcmp(mp->key.s, sym_str(key), mp->key.n);
}

/* The provenance a constant source carries: an initializer's own, an
 * onnx::Constant's node's; NULL with *ok 0 when v is no constant. */
static const Prov *source_prov(const Module *m, ValueId v, int *ok)
{
	const Value *x = &m->vals.v[v];
	*ok = x->kind == VK_PARAM || x->kind == VK_BUFFER || x->kind == VK_CONST;
	if (*ok)
		return x->prov;
	const Node *d = match_op(m, v, OP_ONNX_Constant);
	*ok = d != NULL;
	return d ? d->prov : NULL;
}

/* Appends one name unless the list has it: a scan of a list of at most
 * PROV_SOURCES_MAX names, so constant time a name. */
static void list_add(NameList *l, const char *s, size_t k)
{
	if (!k || l->full)
		return;
	for (size_t i = 0; i < l->len;) {
		const char *c = memchr(l->s + i, ',', l->len - i);
		size_t e = c ? (size_t)(c - l->s) : l->len;
		if (e - i == k && !memcmp(l->s + i, s, k))
			return;
		i = e + 1;
	}
	if (l->n == PROV_SOURCES_MAX) {
		s = "...", k = 3;
		l->full = 1;
	}
	if (l->len + k + 2 > l->cap) {
		l->cap = (l->len + k + 2) * 2;
		l->s = xrealloc(l->s, l->cap);
	}
	if (l->len)
		l->s[l->len++] = ',';
	memcpy(l->s + l->len, s, k);
	l->len += k;
	l->n++;
}

/* Adds v's name, or the names v was itself folded from. */
static void add_source(const Module *m, NameList *l, ValueId v)
{
	int ok;
	const Prov *p = source_prov(m, v, &ok);
	if (!ok)
		return;
	for (uint32_t i = 0; p && i < p->nmeta; i++)
		if (is_key(&p->meta[i], S_folded_from)) {
			const char *s = p->meta[i].val.s, *end = s + p->meta[i].val.n;
			while (s < end) {
				const char *c = memchr(s, ',', (size_t)(end - s));
				const char *e = c ? c : end;
				list_add(l, s, (size_t)(e - s));
				s = e + 1;
			}
			return;
		}
	Sym name = m->vals.v[v].name;
	list_add(l, sym_str(name), sym_len(name));
}

Prov *prov_folded(Module *m, const Prov *base, const char *op, const ValueId *src, uint32_t n)
{
	Arena *a = &m->arena;
	NameList l = { 0 };
	for (uint32_t i = 0; i < n; i++)
		if (src[i])
			add_source(m, &l, src[i]);
	Prov *p = ARENA_NEW(a, Prov);
	if (base)
		*p = *base;
	p->meta = ARENA_ARRAY(a, MetaProp, p->nmeta + 2);
	p->nmeta = 0;
	for (uint32_t i = 0; base && i < base->nmeta; i++)
		if (!is_key(&base->meta[i], S_folded_from) && !is_key(&base->meta[i], S_folded_op))
			p->meta[p->nmeta++] = base->meta[i];
	if (op) {
		p->meta[p->nmeta].key = (Str){ sym_str(S_folded_op), (uint32_t)sym_len(S_folded_op) };
		p->meta[p->nmeta++].val = str_copy(a, (Str){ op, (uint32_t)strlen(op) });
	}
	if (l.len) {
		p->meta[p->nmeta].key = (Str){ sym_str(S_folded_from), (uint32_t)sym_len(S_folded_from) };
		p->meta[p->nmeta++].val = str_copy(a, (Str){ l.s, (uint32_t)l.len });
	}
	free(l.s);
	return p;
}

Prov *prov_merged(Module *m, const Prov *base, const ValueId *src, uint32_t n)
{
	Arena *a = &m->arena;
	NameList l = { 0 };
	for (uint32_t i = 0; i < n; i++)
		list_add(&l, sym_str(m->vals.v[src[i]].name), sym_len(m->vals.v[src[i]].name));
	Prov *p = ARENA_NEW(a, Prov);
	if (base)
		*p = *base;
	p->meta = ARENA_ARRAY(a, MetaProp, p->nmeta + 1);
	p->nmeta = 0;
	for (uint32_t i = 0; base && i < base->nmeta; i++)
		if (!is_key(&base->meta[i], S_merged_from))
			p->meta[p->nmeta++] = base->meta[i];
	if (l.len) {
		p->meta[p->nmeta].key = (Str){ sym_str(S_merged_from), (uint32_t)sym_len(S_merged_from) };
		p->meta[p->nmeta++].val = str_copy(a, (Str){ l.s, (uint32_t)l.len });
	}
	free(l.s);
	return p;
}

uint64_t node_fingerprint(const Node *n)
{
	uint64_t h = hash_u64((uint64_t)n->op << 32 | n->name);
	h = hash_u64(h ^ ((uint64_t)n->domain << 32 | (uint64_t)n->nargs << 16 | n->nkw));
	h = hash_u64(h ^ (uint64_t)(uintptr_t)n->args ^ (uint64_t)(uintptr_t)n->kw << 1);
	for (uint32_t i = 0; i < n->nargs; i++)
		h = hash_u64(h ^ ((uint64_t)n->args[i].kind << 32 | (n->args[i].kind == A_VALUE ? n->args[i].u.v : 0)));
	return h;
}
