/* fuse_ort_gqa.c - -target=ort (the pass fuse_ort, before its walk):
 * attention over a key/value cache in ONNX Runtime's forms (com.microsoft,
 * version 1).  By default (-ort-attention=matmul) the attention stays, and
 * a rotary embedding of its q and k (rotary() below) becomes
 * RotaryEmbedding, one node where transformers' form is seven:
 *
 *   y = rot(x0), x0 [B, H, S, D]
 *     -> y = RotaryEmbedding(x0, positions, cos_cache, sin_cache)
 *
 * (the kernel's 4-D form: x0's head split stays the program's, which
 * fuse_ort_heads then shares among q, k and v).
 *
 * With -ort-attention=gqa the attention becomes GroupQueryAttention: one
 * kernel appends the step's keys and values to the cache and attends over
 * it, where there were two Concats, a transposed key, two MatMuls, the
 * scale, the mask's Tile and Add, a Softmax and the head reshapes (ONNX
 * Runtime 1.30's CPU kernel is the slower one: docs/passes.md):
 *
 *   K = Concat(pk, k, axis = -2)               present key    [B, Hkv, T, D]
 *   V = Concat(pv, v, axis = -2)               present value  (T = P + S)
 *   a = MatMul(Softmax(Add(scale(MatMul(group(q), Transpose(K, [0,1,3,2]))),
 *                          tile(b)), axis = -1), V)
 *   y = rows(ungroup(a))                                      [B, Hq, S, D]
 *     -> o, K, V = GroupQueryAttention(bsh(q), bsh(k), bsh(v), pk, pv,
 *                                      seqlens_k, T, , , , b')
 *        y = Transpose(Reshape(rows(o), [0, 0, Hq, D]), [0, 2, 1, 3])
 *
 * which is attention.fxir's lowering of scaled_dot_product_attention over
 * a cache the program concatenates (transformers' DynamicCache), after
 * the -O2 pipeline: group(q) = Reshape(q, [0, Hkv, -1, 0]) and ungroup(a)
 * = Reshape(a, [0, Hq, -1, 0]) when G = Hq / Hkv > 1 (q itself and a
 * itself when G = 1), tile(b) = Tile(b, [1, 1, G, 1]) (b when G = 1),
 * scale(s) = Mul(s, c) or Div(s, c) with c a positive one-element constant
 * (or s), rows(x) = Where(Equal(ReduceMax(b, [-1]), -inf), 0, x) (the
 * rows whose keys are all masked give 0 where the Softmax alone gives NaN:
 * required, as the kernel gives 0 there).  bsh(x) reads x [B, H, S,
 * D] as [B, S, H * D]: a Reshape of the Transpose the program made it by
 * when there is one, else Transpose and Reshape.  When y is only
 * transposed back and reshaped to [B, S, Hq * D] (the attention output's
 * usual road to o_proj), rows(o) takes that Reshape's place instead.
 *
 * The contrib op's semantics (ONNX Runtime's CPU kernel): batch row i
 * holds seqlens_k[i] + 1 valid positions of the total T, the new ones
 * after the past; query position s sees keys 0 .. past + s (causal) and
 * adds attention_bias before a softmax over those.  seqlens_k = T - 1 for
 * every row makes the whole cache valid as the program's Concat has it
 * (a left-padded batch's pads included), and b' carries the program's
 * mask: b = Where(m, 0, -inf) becomes Where(m, 0, lowest f32), finite so
 * that a row with every key masked (a pad position of a left-padded
 * prompt) stays finite (rows() still zeroes it, as before).  The kernel's
 * causal cut changes nothing when m itself allows no key past the query:
 * m is an And of terms one of which is LessOrEqual(j, i) with j the key
 * index (Range(0, T, 1) along the last dim) and i = Range(0, S, 1) + P
 * along the query dim, P read off a past cache input of K's past length
 * (Gather(Shape(x), 2)): the mask transformers builds for a cache, sliding
 * windows and padding being further terms.  A mask not seen to be within
 * the causal one leaves the attention as it is.
 *
 * Legality besides: f32 throughout; q [B, Hq, S, D], k and v [B, Hkv, S,
 * D], pk and pv graph inputs [B, Hkv, P, D], Hq, Hkv and D static, Hq a
 * multiple of Hkv; b [B or 1, 1, S, T]; every node of the pattern feeds
 * only the next (K and V are also graph outputs, the present cache).
 * ONNX Runtime's kernel takes S > 1 after a non-empty past only at batch
 * 1 (docs/passes.md).
 *
 * Either form fires only on an attention that matches as a whole
 * (match()): the rotations are rewritten where the kernel could take them.
 *
 * The nodes the masks share (b', seqlens_k, T) are made once a mask,
 * after it, and the rotary tables once a pair of tables, before their
 * first read; a layer's nodes stand before its attention's last MatMul
 * (a rotation's where its Add stood) and carry the provenance of the
 * attention's last node (of that Add).  The Concats and
 * the pattern's nodes are removed here (GroupQueryAttention defines K and
 * V now); dce takes the rest.  Linear: a few producer links a Softmax,
 * and a short scan of the masks seen (a model has one or two). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "fuse.h"

enum { GQA_MASKS = 8, GQA_AND_TERMS = 32 };

typedef struct Shared {         /* what the layers of one mask share */
	ValueId b, bias, seqlens, total;
} Shared;

typedef struct Rotary {        /* a rotary embedding's tables, as the kernels read them */
	ValueId cos, sin;           /* [B, S, D], the program's */
	ValueId pos, cos_cache, sin_cache;
} Rotary;

typedef struct Gqa {
	Fuse *f;
	Graph *g;
	Sym ms;
	int gqa;                    /* GroupQueryAttention; else the rotations only */
	uint8_t *is_out;            /* by ValueId: a graph output */
	Node **reader;              /* fuse_readers (values before the pass) */
	int delta;                  /* recount's */
	Shared masks[GQA_MASKS];
	uint32_t nmasks;
	Rotary rots[GQA_MASKS];
	uint32_t nrots;
	ValueId dead[GQA_MASKS][2]; /* a rows mask [B, 1, S, 1] and its [B, S, 1] */
	uint32_t ndead;
} Gqa;

typedef struct Match {
	Node *kcat, *vcat, *kt, *s, *ss, *sm, *soft, *a, *qg, *ya, *rows, *end;
	ValueId q, k, v, pk, pv, b, dead, zero;
	ValueId q0, k0, cos, sin;   /* q and k before a rotary embedding (else VNONE) */
	ValueId un[2];              /* cos and sin unsqueezed, as q's rotation reads them */
	int64_t hq, hkv, d;
	double scale;
} Match;

/* ---- recognizing ---------------------------------------------------------- */

/* The one node reading v, when it is op (of the default domain). */
static Node *sole_reader(const Gqa *q, ValueId v, OpId op)
{
	Node *r = v && v < q->f->nuses && fuse_one_use(q->f, v) ? q->reader[v] : NULL;
	return r && r->op == op && r->domain == S_onnx ? r : NULL;
}

static const Type *f32_rank(const Module *m, ValueId v, int32_t rank)
{
	const Type *t = v ? val((Module *)m, v)->type : NULL;
	return t && t->kind == TY_TENSOR && t->dtype == DT_F32 && t->rank == rank ? t : NULL;
}

static int dim_is(Dim d, int64_t v) { return !d.sym && d.v == v; }

/* v is a one-dim i64 constant holding exactly want[0..n). */
static int ints_are(const Module *m, ValueId v, const int64_t *want, int32_t n)
{
	const Tensor *t = const_tensor(m, v);
	if (!t || !t->type || t->type->dtype != DT_I64 || type_numel(t->type) != n || !t->data)
		return 0;
	for (int32_t i = 0; i < n; i++)
		if (tensor_get_i(DT_I64, t->data, (size_t)i) != want[i])
			return 0;
	return 1;
}

static const int64_t swap12[4] = { 0, 2, 1, 3 };

/* A Concat(past, new) along dim 2 of rank-4 values, past a graph input:
 * the node, with *past and *now set. */
static Node *cache_concat(const Module *m, ValueId c, ValueId *past, ValueId *now)
{
	Node *n = match_op(m, c, OP_ONNX_Concat);
	int64_t axis = n ? fuse_attr_int(n, "axis", 99) : 99;
	if (!n || n->nargs != 2 || (axis != 2 && axis != -2) || !operand(n, 0) || !operand(n, 1) ||
	    val((Module *)m, operand(n, 0))->kind != VK_INPUT)
		return NULL;
	*past = operand(n, 0);
	*now = operand(n, 1);
	return n;
}

/* x through Unsqueeze and Reshape nodes back to a 1-D value; x's type has
 * every dim 1 but dim `at` (counted from the end, -1 or -2), which is
 * `len`.  VNONE otherwise. */
static ValueId along(const Module *m, ValueId x, int32_t at, Dim len)
{
	const Type *t = x ? val((Module *)m, x)->type : NULL;
	if (!t || t->kind != TY_TENSOR || t->rank < 2)
		return VNONE;
	for (int32_t i = 0; i < t->rank; i++)
		if (i == t->rank + at ? !dim_same(t->dims[i], len) : !dim_is(t->dims[i], 1))
			return VNONE;
	for (int hops = 0; hops < 8; hops++) {
		const Type *u = val((Module *)m, x)->type;
		if (u && u->kind == TY_TENSOR && u->rank == 1)
			return x;
		Node *d = match_op(m, x, OP_ONNX_Unsqueeze);
		if (!d)
			d = match_op(m, x, OP_ONNX_Reshape);
		if (!d || !operand(d, 0))
			return VNONE;
		x = operand(d, 0);
	}
	return VNONE;
}

/* p is the past length of the cache pk: dim 2 of a rank-4 graph input
 * whose dim 2 is pk's (Gather(Shape(x), 2 or -2)). */
static int past_len(const Module *m, ValueId p, ValueId pk)
{
	Node *gth = match_op(m, p, OP_ONNX_Gather);
	Node *sh = gth ? match_operand(m, gth, 0, OP_ONNX_Shape) : NULL;
	ValueId x = sh ? operand(sh, 0) : VNONE;
	const Type *tx = x ? val((Module *)m, x)->type : NULL, *tk = val((Module *)m, pk)->type;
	return sh && !node_kw(sh, S_start) && !node_kw(sh, S_end) && fuse_attr_int(gth, "axis", 0) == 0 &&
	       (match_const(m, operand(gth, 1), 2) || match_const(m, operand(gth, 1), -2)) &&
	       val((Module *)m, x)->kind == VK_INPUT && tx && tx->kind == TY_TENSOR && tx->rank == 4 &&
	       dim_same(tx->dims[2], tk->dims[2]);
}

/* The query index i = Range(0, S, 1) + P (either order), P the past length
 * or 0: no larger than the kernel's past + s. */
static int query_index(const Module *m, ValueId i, ValueId pk)
{
	Node *add = match_op(m, i, OP_ONNX_Add);
	if (!add)
		return match_arange(m, i) != NULL;
	ValueId x = operand(add, 0), y = operand(add, 1);
	if (!match_arange(m, x)) {
		ValueId t = x;
		x = y;
		y = t;
	}
	return match_arange(m, x) && (match_const(m, y, 0) || past_len(m, y, pk));
}

/* The bool mask mk is an And of terms one of which is LessOrEqual(j, i)
 * (or GreaterOrEqual(i, j)): key index j along the last dim (T), query
 * index i along dim -2 (S). */
static int within_causal(const Module *m, ValueId mk, ValueId pk, Dim s, Dim t)
{
	ValueId stack[GQA_AND_TERMS];
	uint32_t n = 0, seen = 0;
	stack[n++] = mk;
	while (n && seen++ < GQA_AND_TERMS) {
		ValueId x = stack[--n];
		Node *d = def_of(m, x);
		if (!d || d->domain != S_onnx || d->nargs != 2)
			continue;
		if (d->op == OP_ONNX_And) {
			for (uint32_t i = 0; i < 2 && n < GQA_AND_TERMS; i++)
				if (operand(d, i))
					stack[n++] = operand(d, i);
			continue;
		}
		uint32_t jk = d->op == OP_ONNX_LessOrEqual ? 0 : d->op == OP_ONNX_GreaterOrEqual ? 1 : 2;
		if (jk == 2)
			continue;
		ValueId j = along(m, operand(d, jk), -1, t), i = along(m, operand(d, 1 - jk), -2, s);
		if (j && i && match_arange(m, j) && query_index(m, i, pk))
			return 1;
	}
	return 0;
}

/* b = Where(m, 0, -inf) with m a bool mask within the causal one. */
static int causal_bias(Gqa *q, ValueId b, ValueId pk, Dim s, Dim t, ValueId *zero)
{
	Module *m = q->f->m;
	Node *w = match_op(m, b, OP_ONNX_Where);
	const Type *tm = w && operand(w, 0) ? val(m, operand(w, 0))->type : NULL;
	if (!w || !tm || tm->kind != TY_TENSOR || tm->dtype != DT_BOOL || !match_const(m, operand(w, 1), 0) ||
	    !match_const(m, operand(w, 2), -INFINITY))
		return 0;
	*zero = operand(w, 1);
	return within_causal(m, operand(w, 0), pk, s, t);
}

/* n = op(x, c) or op(c, x) (c a one-element positive constant): x, *c set. */
static ValueId scaled(const Fuse *f, const Node *n, double *c)
{
	if (n->nargs != 2)
		return VNONE;
	for (uint32_t i = 0; i < 2; i++)
		if (fuse_scalar(f, operand(n, 1 - i), c) && *c > 0 && (n->op == OP_ONNX_Mul || i == 0)) {
			if (n->op == OP_ONNX_Div)
				*c = 1.0 / *c;
			return operand(n, i);
		}
	return VNONE;
}

/* n = Slice(x, [start], [end], [axis], [1]) along the last dim of a rank-4
 * x, end at least `end` (the rest). */
static int slice_is(const Module *m, const Node *n, ValueId x, int64_t start, int64_t end)
{
	const int64_t want[4] = { start, end, 0, 1 };
	if (!n || operand(n, 0) != x || n->nargs < 3 || n->nargs > 5)
		return 0;
	for (uint32_t i = 1; i < n->nargs; i++) {
		const Tensor *t = const_tensor(m, operand(n, i));
		if (!t || !t->type || t->type->dtype != DT_I64 || type_numel(t->type) != 1 || !t->data)
			return 0;
		int64_t v = tensor_get_i(DT_I64, t->data, 0);
		if (i == 2 ? v < end : i == 3 ? (v != -1 && v != 3) : v != want[i - 1])
			return 0;
	}
	return n->nargs >= 4;
}

/* c [B, S, D] is op(Concat(f, f, axis = -1)), or that times a one-element
 * constant: its two halves along D are equal. */
static int halves_equal(const Fuse *f, ValueId c, OpId op)
{
	Node *n = match_op(f->m, c, OP_ONNX_Mul);
	double k;
	if (n && !(c = scaled(f, n, &k)))
		return 0;
	Node *t = match_op(f->m, c, op);
	Node *cat = t ? match_operand(f->m, t, 0, OP_ONNX_Concat) : NULL;
	int64_t axis = cat ? fuse_attr_int(cat, "axis", 0) : 0;
	return cat && cat->nargs == 2 && operand(cat, 0) && operand(cat, 0) == operand(cat, 1) &&
	       (axis == -1 || axis == 2);
}

/* u = Unsqueeze(c, [1]) with c [B, S, D] f32 whose halves along D are
 * equal (op Cos or Sin): c, else VNONE. */
static ValueId table(const Fuse *f, ValueId u, OpId op, int64_t d)
{
	static const int64_t one[1] = { 1 };
	Node *n = match_op(f->m, u, OP_ONNX_Unsqueeze);
	ValueId c = n ? operand(n, 0) : VNONE;
	const Type *t = f32_rank(f->m, c, 3);
	return t && ints_are(f->m, operand(n, 1), one, 1) && dim_is(t->dims[2], d) && halves_equal(f, c, op) ?
		c : VNONE;
}

/* x = Add(Mul(x0, Unsqueeze(cos)), Mul(Concat(Neg(x0[.., h:]), x0[.., :h]), Unsqueeze(sin)))
 * (either order of every Add and Mul), h = D/2: rotate_half's rotary
 * embedding of x0 [B, H, S, D], transformers' form.  x0, cos and sin set,
 * and un[] to the two unsqueezed tables. */
static int rotary(const Fuse *f, ValueId x, int64_t d, ValueId *x0, ValueId *cos, ValueId *sin, ValueId *un)
{
	Module *m = f->m;
	Node *add = match_op(m, x, OP_ONNX_Add);
	if (!add || d % 2)
		return 0;
	for (uint32_t i = 0; i < 2; i++) {
		Node *mc = match_operand(m, add, i, OP_ONNX_Mul), *ms = match_operand(m, add, 1 - i, OP_ONNX_Mul);
		if (!mc || !ms)
			continue;
		for (uint32_t j = 0; j < 4; j++) {
			Node *cat = match_operand(m, ms, j & 1, OP_ONNX_Concat);
			ValueId su = operand(ms, 1 - (j & 1)), a0 = operand(mc, j >> 1), cu = operand(mc, 1 - (j >> 1));
			Node *neg = cat && cat->nargs == 2 ? match_operand(m, cat, 0, OP_ONNX_Neg) : NULL;
			Node *hi = neg ? match_operand(m, neg, 0, OP_ONNX_Slice) : NULL;
			Node *lo = hi ? match_operand(m, cat, 1, OP_ONNX_Slice) : NULL;
			int64_t axis = cat ? fuse_attr_int(cat, "axis", 0) : 0;
			if (!lo || (axis != -1 && axis != 3) || !f32_rank(m, a0, 4) || !slice_is(m, hi, a0, d / 2, d) ||
			    !slice_is(m, lo, a0, 0, d / 2))
				continue;
			ValueId c = table(f, cu, OP_ONNX_Cos, d), s = table(f, su, OP_ONNX_Sin, d);
			if (c && s) {
				*x0 = a0;
				*cos = c;
				*sin = s;
				un[0] = cu;
				un[1] = su;
				return 1;
			}
		}
	}
	return 0;
}

/* The pattern ending at the Softmax n. */
static int match(Gqa *q, Node *n, Match *x)
{
	Fuse *f = q->f;
	Module *m = f->m;
	memset(x, 0, sizeof *x);
	x->soft = n;
	if (fuse_attr_int(n, "axis", -1) != -1 && fuse_attr_int(n, "axis", -1) != 3)
		return 0;
	/* after: a = MatMul(p, V), ungroup, rows */
	ValueId p = n->res[0];
	Node *a = sole_reader(q, p, OP_ONNX_MatMul);
	if (!a || operand(a, 0) != p || !(x->vcat = cache_concat(m, operand(a, 1), &x->pv, &x->v)))
		return 0;
	x->a = a;
	/* before: sm = Add(ss, tile(b)) */
	Node *sm = match_operand(m, n, 0, OP_ONNX_Add);
	if (!sm || !fuse_one_use(f, sm->res[0]))
		return 0;
	x->sm = sm;
	ValueId ss = operand(sm, 0), bg = operand(sm, 1);
	Node *sd = def_of(m, ss);
	if (!sd || (sd->op != OP_ONNX_Mul && sd->op != OP_ONNX_Div && sd->op != OP_ONNX_MatMul) ||
	    sd->domain != S_onnx) {
		ValueId t = ss;
		ss = bg;
		bg = t;
		sd = def_of(m, ss);
	}
	if (!sd || sd->domain != S_onnx || !fuse_one_use(f, ss))
		return 0;
	x->scale = 1.0;
	ValueId sv = ss;
	if (sd->op == OP_ONNX_Mul || sd->op == OP_ONNX_Div) {
		if (!(sv = scaled(f, sd, &x->scale)) || !fuse_one_use(f, sv))
			return 0;
		x->ss = sd;
	}
	Node *s = match_op(m, sv, OP_ONNX_MatMul);
	Node *kt = s ? match_operand(m, s, 1, OP_ONNX_Transpose) : NULL;
	static const int64_t swap23[4] = { 0, 1, 3, 2 };
	if (!kt || !fuse_perm_is(kt, swap23, 4) || !fuse_one_use(f, kt->res[0]) ||
	    !(x->kcat = cache_concat(m, operand(kt, 0), &x->pk, &x->k)))
		return 0;
	x->s = s;
	x->kt = kt;
	/* K and V: read by the pattern, else only graph outputs */
	ValueId kv[2] = { x->kcat->res[0], x->vcat->res[0] };
	for (int i = 0; i < 2; i++)
		if (kv[i] >= f->nuses || f->uses[kv[i]] != 1u + q->is_out[kv[i]])
			return 0;
	/* heads */
	ValueId qv = operand(s, 0);
	Node *qg = match_op(m, qv, OP_ONNX_Reshape);
	const Type *tk = f32_rank(m, x->k, 4), *tpk = f32_rank(m, x->pk, 4);
	if (!tk || !tpk || !f32_rank(m, x->v, 4) || !f32_rank(m, x->pv, 4) || tk->dims[1].sym || tk->dims[3].sym)
		return 0;
	x->hkv = tk->dims[1].v;
	x->d = tk->dims[3].v;
	int64_t grouped[4] = { 0, x->hkv, -1, 0 };
	if (qg && ints_are(m, operand(qg, 1), grouped, 4) && fuse_one_use(f, qv)) {
		x->qg = qg;
		qv = operand(qg, 0);
	}
	const Type *tq = f32_rank(m, qv, 4), *tv = val(m, x->v)->type, *tkc = val(m, kv[0])->type;
	if (!tq || tq->dims[1].sym || !dim_is(tq->dims[3], x->d) || x->hkv < 1 || tq->dims[1].v % x->hkv)
		return 0;
	x->q = qv;
	x->hq = tq->dims[1].v;
	int64_t g = x->hq / x->hkv;
	if ((g > 1) != (x->qg != NULL) || !dim_is(tv->dims[1], x->hkv) || !dim_is(tv->dims[3], x->d) ||
	    !dim_same(tk->dims[2], tq->dims[2]) || !dim_same(tv->dims[2], tq->dims[2]) ||
	    !dim_same(tk->dims[0], tq->dims[0]) || !dim_same(tpk->dims[0], tq->dims[0]) ||
	    !dim_is(tpk->dims[1], x->hkv) || !dim_is(tpk->dims[3], x->d) || !type_equal(tpk, val(m, x->pv)->type))
		return 0;
	/* q and k rotated alike: the rotation goes before the kernel as
	 * RotaryEmbedding, reading the step's own tables */
	ValueId kc, ks, kun[2];
	if (!rotary(f, x->q, x->d, &x->q0, &x->cos, &x->sin, x->un) || !rotary(f, x->k, x->d, &x->k0, &kc, &ks, kun) ||
	    kc != x->cos || ks != x->sin || !dim_same(val(m, x->cos)->type->dims[0], tq->dims[0]) ||
	    !dim_same(val(m, x->cos)->type->dims[1], tq->dims[2]))
		x->q0 = x->k0 = VNONE;
	/* the mask */
	x->b = bg;
	if (g > 1) {
		Node *tile = match_op(m, bg, OP_ONNX_Tile);
		int64_t reps[4] = { 1, 1, g, 1 };
		if (!tile || !ints_are(m, operand(tile, 1), reps, 4))
			return 0;
		x->b = operand(tile, 0);
	}
	const Type *tb = f32_rank(m, x->b, 4);
	if (!tb || !dim_is(tb->dims[1], 1) || !dim_same(tb->dims[2], tq->dims[2]) ||
	    !dim_same(tb->dims[3], tkc->dims[2]) || !(dim_is(tb->dims[0], 1) || dim_same(tb->dims[0], tq->dims[0])) ||
	    !causal_bias(q, x->b, x->pk, tq->dims[2], tkc->dims[2], &x->zero))
		return 0;
	/* after a: ungroup, rows */
	ValueId y = a->res[0];
	x->end = a;
	if (g > 1) {
		int64_t heads[4] = { 0, x->hq, -1, 0 };
		Node *ya = sole_reader(q, y, OP_ONNX_Reshape);
		if (!ya || operand(ya, 0) != y || !ints_are(m, operand(ya, 1), heads, 4))
			return 0;
		x->ya = x->end = ya;
		y = ya->res[0];
	}
	if (!fuse_one_use(f, a->res[0]))
		return 0;
	Node *u = sole_reader(q, y, OP_ONNX_Where);
	Node *eq = u && operand(u, 2) == y ? match_operand(m, u, 0, OP_ONNX_Equal) : NULL;
	Node *top = eq ? match_operand(m, eq, 0, OP_ONNX_ReduceMax) : NULL;
	if (top && operand(top, 0) == x->b && match_const(m, operand(eq, 1), -INFINITY) &&
	    match_const(m, operand(u, 1), 0)) {
		x->rows = x->end = u;
		x->dead = eq->res[0];
	}
	/* without rows() a row with every key masked is NaN, which the
	 * kernel would make 0 */
	return x->rows != NULL;
}

/* ---- building ------------------------------------------------------------- */

/* The use counts of the values n reads, by delta (the later rewrites of
 * fuse_ort read them). */
static void count_one(ValueId v, void *ctx)
{
	Gqa *q = ctx;
	if (v < q->f->nuses)
		q->f->uses[v] += (uint32_t)q->delta;
}

static void recount(Gqa *q, Node *n, int delta)
{
	q->delta = delta;
	node_each_use(n, count_one, q);
}

/* n, made with one result, stands before `at` with the provenance of
 * `from`; its result is a new value named after `like` + suffix, of type
 * t (NULL: inference types it after the pass). */
static ValueId place(Gqa *q, Node *n, Node *at, const Node *from, ValueId like, const char *suffix, Type *t)
{
	ValueId r = fuse_place(q->f->m, q->g, n, at, from, like, suffix, t);
	recount(q, n, 1);
	return r;
}

/* A new node op(args) before `at`, one result named after `like` +
 * suffix (untyped: inference types it after the pass), with the
 * provenance of `from`. */
static ValueId emit(Gqa *q, Node *at, const Node *from, OpId op, const Arg *args, uint32_t nargs,
		    const Named *kw, uint32_t nkw, ValueId like, const char *suffix)
{
	Node *n = node_new_op(q->f->m, op, 1, nargs, nkw);
	memcpy(n->args, args, nargs * sizeof *args);
	if (nkw)
		memcpy(n->kw, kw, nkw * sizeof *kw);
	return place(q, n, at, from, like, suffix, NULL);
}

static ValueId emit1(Gqa *q, Node *at, const Node *from, OpId op, ValueId x, ValueId y, const char *suffix)
{
	Arg args[2] = { fuse_value_arg(x), fuse_value_arg(y) };
	return emit(q, at, from, op, args, y ? 2 : 1, NULL, 0, x, suffix);
}

static ValueId shape_slice(Gqa *q, Node *at, const Node *from, ValueId x, int64_t start, int64_t end)
{
	Arg args[1] = { fuse_value_arg(x) };
	Named kw[2] = { fuse_int_kw("start", start), fuse_int_kw("end", end) };
	return emit(q, at, from, OP_ONNX_Shape, args, 1, kw, 2, x, "dim");
}

static ValueId cast(Gqa *q, Node *at, const Node *from, ValueId x, DType to)
{
	Arg args[1] = { fuse_value_arg(x) };
	Named kw[1] = { fuse_int_kw("to", dtype_onnx(to)) };
	return emit(q, at, from, OP_ONNX_Cast, args, 1, kw, 1, x, "i32");
}

/* The nodes the attentions of mask b share, made once after b. */
static const Shared *shared(Gqa *q, const Match *x)
{
	for (uint32_t i = 0; i < q->nmasks; i++)
		if (q->masks[i].b == x->b)
			return &q->masks[i];
	if (q->nmasks == GQA_MASKS)
		return NULL;
	Module *m = q->f->m;
	Node *w = def_of(m, x->b), *at = w->next;
	Shared *sh = &q->masks[q->nmasks++];
	sh->b = x->b;
	ValueId low = const_0d(m, q->g, DT_F32, -3.4028234663852886e38, 0, x->b, "lowest");
	Arg wa[3] = { w->args[0], fuse_value_arg(x->zero), fuse_value_arg(low) };
	sh->bias = emit(q, at, w, OP_ONNX_Where, wa, 3, NULL, 0, x->b, "finite");
	/* T from the mask's last dim, B from the past cache's first */
	ValueId t = shape_slice(q, at, w, x->b, 3, 4);
	int64_t one = 1;
	ValueId t1 = emit1(q, at, w, OP_ONNX_Sub, t, const_i64s(m, q->g, &one, 1, x->b, "one"), "past");
	ValueId batch = shape_slice(q, at, w, x->pk, 0, 1);
	sh->seqlens = cast(q, at, w, emit1(q, at, w, OP_ONNX_Expand, t1, batch, "rows"), DT_I32);
	ValueId scalar = emit1(q, at, w, OP_ONNX_Reshape, t, const_i64s(m, q->g, NULL, 0, x->b, "scalar"), "total");
	sh->total = cast(q, at, w, scalar, DT_I32);
	return sh;
}

/* The angles f of a table t = op(Concat(f, f)) [times c] (halves_equal). */
static ValueId angles(const Fuse *f, ValueId t, OpId op)
{
	Node *mul = match_op(f->m, t, OP_ONNX_Mul);
	double k;
	ValueId c = mul ? scaled(f, mul, &k) : t;
	return operand(match_operand(f->m, match_op(f->m, c, op), 0, OP_ONNX_Concat), 0);
}

/* The first half along D of the table t = op(Concat(f, f)) [times c]:
 * op(a) [times c], a being f or the same angles as rows, made before at. */
static ValueId half_table(Gqa *q, Node *at, const Node *from, ValueId t, OpId op, ValueId a)
{
	Module *m = q->f->m;
	Node *mul = match_op(m, t, OP_ONNX_Mul);
	double k;
	ValueId c = mul ? scaled(q->f, mul, &k) : t;
	ValueId h = emit1(q, at, from, op, a, VNONE, op == OP_ONNX_Cos ? "cos" : "sin");
	if (!mul)
		return h;
	ValueId s = operand(mul, 0) == c ? operand(mul, 1) : operand(mul, 0);
	return emit1(q, at, from, OP_ONNX_Mul, h, s, "scaled");
}

/* transformers' angles, f [B, S, K] = Transpose(MatMul(E, X), [0, 2, 1])
 * with E = c or Expand(c, shape), c a constant [1, K, 1] (or [K, 1]), and
 * X = [Cast(]Unsqueeze(p, [1])[)] [B, 1, S] of the MatMul's batch, p [B,
 * S]: (inv_freq[None, :, None].expand(B, -1, 1) @ p[:, None, :].float())
 * .transpose(1, 2).  Each element is one product, c[j] * p[b, s] (K = 1
 * in the MatMul), so the rows [B * S, K] the caches want are Mul(
 * [Cast(]Reshape(p, [-1, 1])[)], c as [1, K]): the same products, with no
 * Expand, MatMul, Transpose nor Reshape of the tables.  Made before f's
 * Transpose, so before both tables' first reads; *pos = p (its shape is
 * [B, S]).  VNONE when f is otherwise. */
static ValueId angle_rows(Gqa *q, ValueId f, ValueId *pos)
{
	Module *m = q->f->m;
	static const int64_t swap12_3[3] = { 0, 2, 1 }, unsq[1] = { 1 };
	Node *t = match_op(m, f, OP_ONNX_Transpose);
	Node *mm = t && fuse_perm_is(t, swap12_3, 3) ? match_operand(m, t, 0, OP_ONNX_MatMul) : NULL;
	if (!mm)
		return VNONE;
	Node *ex = match_operand(m, mm, 0, OP_ONNX_Expand);
	ValueId c = ex ? operand(ex, 0) : operand(mm, 0), x = operand(mm, 1);
	const Tensor *ct = const_tensor(m, c);
	const Type *tf = f32_rank(m, f, 3), *tm = f32_rank(m, mm->res[0], 3), *tx = f32_rank(m, x, 3);
	if (!ct || !ct->data || !ct->type || ct->type->dtype != DT_F32 || ct->type->rank < 2 || !tf || !tm || !tx ||
	    tf->dims[2].sym)
		return VNONE;
	int64_t k = tf->dims[2].v;
	const Type *tc = ct->type;
	if (type_numel(tc) != k || !dim_is(tc->dims[tc->rank - 1], 1) || !dim_is(tc->dims[tc->rank - 2], k) ||
	    !dim_is(tx->dims[1], 1) || !dim_same(tm->dims[0], tx->dims[0]))
		return VNONE;
	Node *cast = match_op(m, x, OP_ONNX_Cast);
	Node *un = match_op(m, cast ? operand(cast, 0) : x, OP_ONNX_Unsqueeze);
	ValueId p = un && ints_are(m, operand(un, 1), unsq, 1) ? operand(un, 0) : VNONE;
	const Type *tp = p ? val(m, p)->type : NULL;
	if (!tp || tp->kind != TY_TENSOR || tp->rank != 2 || (cast && cast->nkw != 1))
		return VNONE;
	*pos = p;
	int64_t col[2] = { -1, 1 }, row[2] = { 1, k };
	ValueId r = emit1(q, t, t, OP_ONNX_Reshape, p, const_i64s(m, q->g, col, 2, p, "column"), "column");
	if (cast) {
		Arg a[1] = { fuse_value_arg(r) };
		r = emit(q, t, cast, OP_ONNX_Cast, a, 1, cast->kw, 1, p, "angle");
	}
	return emit1(q, t, t, OP_ONNX_Mul, r, const_reshaped(m, q->g, c, row, 2, c, "row"), "angles");
}

/* The tables of the rotary embedding of x (cos, sin [B, S, D]) as
 * RotaryEmbedding reads them, made once: a row a token, cos_cache and
 * sin_cache [B * S, D/2] (the first halves, op(f) of op(Concat(f, f)):
 * the second ones are equal; op of angle_rows' rows where f is
 * transformers' form, else op(f) reshaped), and position_ids [B, S] = 0 ..
 * B*S-1 reading them in order, so each token is turned by its own angles
 * whatever positions gave them.  The nodes carry the tables' provenance. */
static const Rotary *rotary_tables(Gqa *q, const Match *x)
{
	Module *m = q->f->m;
	const Node *from = def_of(m, x->cos) ? def_of(m, x->cos) : x->end;
	for (uint32_t i = 0; i < q->nrots; i++)
		if (q->rots[i].cos == x->cos && q->rots[i].sin == x->sin)
			return &q->rots[i];
	if (q->nrots == GQA_MASKS)
		return NULL;
	Rotary *r = &q->rots[q->nrots++];
	r->cos = x->cos;
	r->sin = x->sin;
	/* before the reads of the tables by the rotations (both before any) */
	Node *at = def_of(m, x->un[0]), *at_sin = def_of(m, x->un[1]);
	ValueId f = angles(q->f, x->cos, OP_ONNX_Cos), fs = angles(q->f, x->sin, OP_ONNX_Sin), p = VNONE;
	ValueId rows = f == fs ? angle_rows(q, f, &p) : VNONE, bs;
	if (rows) {
		r->cos_cache = half_table(q, at, from, x->cos, OP_ONNX_Cos, rows);
		r->sin_cache = half_table(q, at_sin, from, x->sin, OP_ONNX_Sin, rows);
		bs = shape_slice(q, at, from, p, 0, 2);
	} else {
		int64_t half[2] = { -1, x->d / 2 };
		ValueId shp = const_i64s(m, q->g, half, 2, x->cos, "rows");
		ValueId cos_half = half_table(q, at, from, x->cos, OP_ONNX_Cos, f);
		r->cos_cache = emit1(q, at, from, OP_ONNX_Reshape, cos_half, shp, "cache");
		r->sin_cache = emit1(q, at_sin, from, OP_ONNX_Reshape, half_table(q, at_sin, from, x->sin, OP_ONNX_Sin, fs),
				     shp, "cache");
		bs = shape_slice(q, at, from, cos_half, 0, 2);
	}
	Arg pa[1] = { fuse_value_arg(bs) };
	Named pk[1] = { fuse_int_kw("keepdims", 0) };
	ValueId n = emit(q, at, from, OP_ONNX_ReduceProd, pa, 1, pk, 1, x->cos, "tokens");
	Arg ra[3] = { fuse_value_arg(const_0d(m, q->g, DT_I64, 0, 0, x->cos, "first")), fuse_value_arg(n),
		      fuse_value_arg(const_0d(m, q->g, DT_I64, 0, 1, x->cos, "step")) };
	ValueId each = emit(q, at, from, OP_ONNX_Range, ra, 3, NULL, 0, x->cos, "token");
	r->pos = emit1(q, at, from, OP_ONNX_Reshape, each, bs, "positions");
	return r;
}

/* RotaryEmbedding(x, ...) (com.microsoft), before at: x [B, S, H * D]
 * with h = H (num_heads), or x [B, H, S, D] with h = 0 (the 4-D form). */
static ValueId rotate(Gqa *q, Node *at, const Node *from, const Rotary *r, ValueId x, int64_t h)
{
	Module *m = q->f->m;
	Node *n = node_new(m, q->ms, sym_cstr("RotaryEmbedding"), 1, 4, h ? 1 : 0);
	ValueId ins[4] = { x, r->pos, r->cos_cache, r->sin_cache };
	for (uint32_t i = 0; i < 4; i++)
		n->args[i] = fuse_value_arg(ins[i]);
	if (h)
		n->kw[0] = fuse_int_kw("num_heads", h);
	return place(q, n, at, from, x, "rotary", val(m, x)->type);
}

/* dead [B, 1, S, 1] as [B, S, 1], made once. */
static ValueId dead_rows(Gqa *q, Node *at, const Node *from, ValueId dead)
{
	for (uint32_t i = 0; i < q->ndead; i++)
		if (q->dead[i][0] == dead)
			return q->dead[i][1];
	int64_t bs1[3] = { 0, -1, 1 };
	ValueId r = emit1(q, at, from, OP_ONNX_Reshape, dead, const_i64s(q->f->m, q->g, bs1, 3, dead, "rows"), "bs1");
	if (q->ndead < GQA_MASKS) {
		q->dead[q->ndead][0] = dead;
		q->dead[q->ndead++][1] = r;
	}
	return r;
}

/* Transpose(x, [0, 2, 1, 3]). */
static ValueId swap_heads(Gqa *q, Node *at, const Node *from, ValueId x, const char *suffix)
{
	Arg args[1] = { fuse_value_arg(x) };
	Named kw[1] = { { S_perm, fuse_int_list(q->f->m, swap12, 4) } };
	return emit(q, at, from, OP_ONNX_Transpose, args, 1, kw, 1, x, suffix);
}

/* x [B, H, S, D] as [B, S, H * D]. */
static ValueId bsh(Gqa *q, Node *at, const Node *from, ValueId x, int64_t h, int64_t d)
{
	Module *m = q->f->m;
	Node *t = match_op(m, x, OP_ONNX_Transpose);
	ValueId src = t && fuse_perm_is(t, swap12, 4) ? operand(t, 0) : VNONE;
	if (!src)
		src = swap_heads(q, at, from, x, "bsnh");
	/* the split heads of a [B, S, H * D] value: that value */
	Node *r = match_op(m, src, OP_ONNX_Reshape);
	const Type *ts = val(m, src)->type, *tz = r ? f32_rank(m, operand(r, 0), 3) : NULL;
	if (tz && ts && ts->rank == 4 && dim_same(tz->dims[0], ts->dims[0]) && dim_same(tz->dims[1], ts->dims[1]) &&
	    dim_is(tz->dims[2], h * d))
		return operand(r, 0);
	int64_t flat[3] = { 0, 0, h * d };
	return emit1(q, at, from, OP_ONNX_Reshape, src, const_i64s(m, q->g, flat, 3, x, "bsh"), "bsh");
}

/* y, read only by Transpose(y, [0, 2, 1, 3]) read only by a Reshape to
 * [B, S, Hq * D]: that Reshape. */
static Node *flat_reader(Gqa *q, const Match *x, ValueId y)
{
	Fuse *f = q->f;
	Node *t = sole_reader(q, y, OP_ONNX_Transpose);
	if (!t || !fuse_perm_is(t, swap12, 4))
		return NULL;
	Node *r = sole_reader(q, t->res[0], OP_ONNX_Reshape);
	if (!r || operand(r, 0) != t->res[0])
		return NULL;
	const Type *tr = r ? f32_rank(f->m, r->res[0], 3) : NULL, *tq = val(f->m, x->q)->type;
	return tr && dim_same(tr->dims[0], tq->dims[0]) && dim_same(tr->dims[1], tq->dims[2]) &&
	       dim_is(tr->dims[2], x->hq * x->d) ? r : NULL;
}

/* x [B, S, H * D] as [B, H, S, D] (bsh's inverse): Transpose(Reshape(x,
 * [0, 0, H, D]), [0, 2, 1, 3]); its node. */
static Node *bhsd(Gqa *q, Node *at, const Node *from, ValueId x, int64_t h, int64_t d)
{
	int64_t split[4] = { 0, 0, h, d };
	ValueId r = emit1(q, at, from, OP_ONNX_Reshape, x, const_i64s(q->f->m, q->g, split, 4, x, "heads"), "heads");
	return def_of(q->f->m, swap_heads(q, at, from, r, "bhsd"));
}

/* Node d defines `want` (made elsewhere) in place of its own fresh result. */
static void take_over(Module *m, Node *d, ValueId want)
{
	val(m, d->res[0])->def = NULL;
	d->res[0] = want;
	val(m, want)->def = d;
	val(m, want)->res = 0;
}

/* The [B, S, H * D] input of a kernel for x [B, H, S, D]: x0 (x before
 * its rotation) turned by RotaryEmbedding when r is given, else x itself. */
static ValueId flat_input(Gqa *q, Node *at, const Node *from, const Rotary *r, ValueId x, ValueId x0, int64_t h,
			  int64_t d)
{
	return r ? rotate(q, at, from, r, bsh(q, at, from, x0, h, d), h) : bsh(q, at, from, x, h, d);
}

/* y = rot(x0) [B, H, S, D] computed as RotaryEmbedding(x0) (its 4-D
 * form), standing where y's Add stood: the heads x0 was split into stay
 * as the program made them, for fuse_ort_heads to share. */
static void rotate_back(Gqa *q, const Rotary *r, ValueId y, ValueId x0)
{
	Module *m = q->f->m;
	Node *add = def_of(m, y);
	take_over(m, def_of(m, rotate(q, add, add, r, x0, 0)), y);
	recount(q, add, -1);
	node_remove(q->g, add);
}

/* The GroupQueryAttention node made, or NULL when the masks' table is full. */
static Node *rewrite(Gqa *q, Match *x)
{
	Fuse *f = q->f;
	Module *m = f->m;
	const Shared *sh = q->gqa ? shared(q, x) : NULL;
	if (!sh)
		return NULL;
	Node *from = x->end, *at = x->a;
	const Rotary *rot = x->q0 ? rotary_tables(q, x) : NULL;
	ValueId qin = flat_input(q, at, from, rot, x->q, x->q0, x->hq, x->d);
	ValueId kin = flat_input(q, at, from, rot, x->k, x->k0, x->hkv, x->d);
	ValueId vin = bsh(q, at, from, x->v, x->hkv, x->d);

	Node *n = node_new(m, q->ms, sym_cstr("GroupQueryAttention"), 3, 11, 3);
	ValueId ins[11] = { qin, kin, vin, x->pk, x->pv, sh->seqlens, sh->total, VNONE, VNONE, VNONE, sh->bias };
	for (uint32_t i = 0; i < 11; i++)
		n->args[i] = ins[i] ? fuse_value_arg(ins[i]) : (Arg){ .kind = A_NONE };
	n->kw[0] = fuse_int_kw("num_heads", x->hq);
	n->kw[1] = fuse_int_kw("kv_num_heads", x->hkv);
	n->kw[2] = fuse_float_kw("scale", x->scale);
	n->prov = from->prov;
	n->loc = from->loc;
	const Type *tq = val(m, x->q)->type;
	Dim dims[3] = { tq->dims[0], tq->dims[2], { x->hq * x->d, 0 } };
	ValueId y = x->end->res[0];
	Node *flat = flat_reader(q, x, y);
	ValueId o = flat && !x->rows ? flat->res[0] :
		value_new(m, value_fresh_name(m, val(m, y)->name), NULL, VK_NODE);
	val(m, o)->type = type_tensor(&m->arena, DT_F32, 3, dims);
	n->res[0] = o;
	n->res[1] = x->kcat->res[0];
	n->res[2] = x->vcat->res[0];
	for (uint32_t i = 0; i < 3; i++) {
		val(m, n->res[i])->def = n;
		val(m, n->res[i])->res = i;
	}
	node_insert_before(q->g, at, n);
	recount(q, n, 1);
	recount(q, x->kcat, -1);
	recount(q, x->vcat, -1);
	node_remove(q->g, x->kcat);
	node_remove(q->g, x->vcat);

	/* the result: rows(o) where the flat Reshape was, or y rebuilt */
	Node *last = flat ? flat : x->end;
	ValueId out = o;
	if (x->rows) {
		ValueId dead = dead_rows(q, last, from, x->dead);
		Arg wa[3] = { fuse_value_arg(dead), fuse_value_arg(x->zero), fuse_value_arg(o) };
		out = emit(q, last, from, OP_ONNX_Where, wa, 3, NULL, 0, o, "rows");
	}
	ValueId want = flat ? flat->res[0] : y;
	if (out != want)
		take_over(m, flat ? def_of(m, out) : bhsd(q, last, from, out, x->hq, x->d), want);
	/* the pattern's own nodes, each read only by the next */
	Node *gone[] = { flat ? def_of(m, operand(flat, 0)) : NULL, flat, x->rows, x->ya, x->a, x->soft, x->sm,
			 x->ss, x->s, x->kt, x->qg };
	for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
		if (gone[i]) {
			recount(q, gone[i], -1);
			node_remove(q->g, gone[i]);
		}
	f->edits++;
	rewrite_count("fuse_ort", "GroupQueryAttention");
	return n;
}

/* -ort-attention=matmul: the attention stays, its rotations become
 * RotaryEmbedding. */
static void rotate_only(Gqa *q, const Match *x)
{
	const Rotary *rot = x->q0 ? rotary_tables(q, x) : NULL;
	if (!rot)
		return;
	rotate_back(q, rot, x->q, x->q0);
	rotate_back(q, rot, x->k, x->k0);
	q->f->edits++;
	rewrite_count("fuse_ort", "RotaryEmbedding");
}

void fuse_ort_gqa(Fuse *f, Graph *g, Sym ms, int gqa)
{
	Gqa q = { .f = f, .g = g, .ms = ms, .gqa = gqa, .is_out = module_output_marks(f->m),
		  .reader = fuse_readers(f->m, g) };
	for (Node *n = g->first, *next; n; n = next) {
		next = n->next;
		Match x;
		Node *made;
		if (n->op != OP_ONNX_Softmax || n->domain != S_onnx || n->nres != 1 || !match(&q, n, &x))
			continue;
		if (!gqa)
			rotate_only(&q, &x);
		else if ((made = rewrite(&q, &x)) != NULL)
			next = made->next;
	}
	free(q.reader);
	free(q.is_out);
}
