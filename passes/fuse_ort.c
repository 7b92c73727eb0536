/* fuse_ort.c - -target=ort: ONNX Runtime's contrib ops (domain
 * com.microsoft, version 1) for patterns that stay several standard ops.
 * Runs once after the -O2 pipeline, when nothing else will look at the
 * nodes it makes.
 *
 *   MatMul(Transpose(a, p), b)             -> FusedMatMul(a, b, transA=1)
 *   MatMul(a, Transpose(b, p))             -> FusedMatMul(a, b, transB=1)
 *       p swaps the last two dims and keeps the others (a traced k.T or
 *       k.transpose(-2, -1)); both sides may be transposed
 *   Mul(MatMul(a, b), c), Div(MatMul(a, b), c)
 *                                          -> FusedMatMul(a, b, alpha=c or 1/c)
 *       c a one-element constant (attention's 1/sqrt(d))
 *   GELU written out (erf form), or Gelu   -> Gelu(x)
 *   GELU, tanh form, or Gelu(tanh)         -> FastGelu(x)
 *       either of them on Add(x, bias)     -> BiasGelu(x, bias) / FastGelu(x, bias)
 *   LayerNormalization(Add(a, b), w[, c])  -> SkipLayerNormalization(a, b, w[, c])
 *   Mul(w, x / sqrt(mean(x^2) + eps)) written out (fuse_norm.c's form),
 *   or RMSNormalization(x, w)              -> SimplifiedLayerNormalization(x, w)
 *       of x = Add(a, b)                   -> SkipSimplifiedLayerNormalization(a, b, w)
 *
 * Legality.  Every rewrite wants f32 (the contrib kernels of the CPU
 * provider are f32) and known ranks.  FusedMatMul transposes the last two
 * dims of an operand of rank >= 2 and multiplies as MatMul does
 * (broadcasting the batch dims), then scales by alpha: the transposed
 * operand and the MatMul feed nothing else, and c broadcasts nothing (its
 * rank is at most the result's).  The Gelu ops compute the two formulas
 * fuse_gelu.c matches; the bias is a 1-D constant as long as x's last
 * dim (BiasGelu adds it along that dim), the Add feeding nothing else.
 * SkipLayerNormalization normalizes a + b over the last dim of a rank 2 or
 * 3 input (the kernel takes no other): a, b and a + b have one shape, the
 * LayerNormalization's axis is the last, w (and c) are 1-D, and its mean
 * and inverse-deviation results are unused; its epsilon is given (the
 * contrib op's default is not LayerNormalization's).  When a + b is read
 * elsewhere too (a residual stream), the node makes it as its fourth
 * result (input_skip_bias_sum) and stands where the Add stood, which w and
 * c must already be defined at.  SimplifiedLayerNormalization (ONNX
 * Runtime's op, registered in the default domain, version 1: onnx's
 * checker does not know it) normalizes x / sqrt(mean(x^2) + eps) over
 * the last dim times w: the mean is over the last dim only, w is a 1-D
 * f32 as long as it, x has the result's type, the written-out pattern's
 * inner nodes feed nothing else (RMSNormalization: stash_type 1, no
 * bias).  Of a sum it becomes SkipSimplifiedLayerNormalization under
 * SkipLayerNormalization's conditions, its fourth result the sum.
 *
 * Each rewrite replaces the pattern's last node in place (result, name,
 * scope, location stay) but for a residual Skip(Simplified)LayerNormalization,
 * which replaces the Add and takes over the normalization's result;
 * absorbed standard nodes are left for dce, which keeps ops of other
 * domains, so a FusedMatMul a scale takes in is removed here.  One walk
 * in order, linear. */
#include <stdlib.h>
#include <string.h>
#include "fuse.h"

typedef struct FuseOrt {
	Fuse f;
	Sym ms;                     /* "com.microsoft" */
	uint32_t *pos;              /* by ValueId: order of its node in its graph */
	int gqa;                    /* -ort-attention=gqa */
} FuseOrt;

static int is_f32(const Type *t) { return t && t->kind == TY_TENSOR && t->dtype == DT_F32; }

static void set_ms(FuseOrt *o, Node *n, const char *op, uint32_t nargs, uint32_t nkw)
{
	fuse_set_generic(&o->f, n, o->ms, sym_cstr(op), nargs, nkw);
}

/* ---- FusedMatMul ------------------------------------------------------- */

/* v is of rank 2 or more. */
static int ranked2(const FuseOrt *o, ValueId v)
{
	const Type *t = v ? fuse_ranked_type(&o->f, v) : NULL;
	return t && t->rank >= 2;
}

/* v = Transpose(x, p) read only here, p swapping the last two of x's
 * rank >= 2 dims: x; else VNONE. */
static ValueId untransposed(const FuseOrt *o, ValueId v)
{
	Node *t = match_op(o->f.m, v, OP_ONNX_Transpose);
	const Type *tx = t && fuse_one_use(&o->f, v) ? fuse_ranked_type(&o->f, operand(t, 0)) : NULL;
	int64_t p1[16];
	return tx && fuse_key_perm(t, tx->rank, p1) == 1 ? operand(t, 0) : VNONE;
}

/* n = MatMul or FusedMatMul: its operands and attributes, the
 * Transposes feeding a MatMul taken in. */
typedef struct Mm { ValueId a, b; int64_t ta, tb; double alpha; } Mm;

static int mm_of(const FuseOrt *o, const Node *n, Mm *mm)
{
	if (n->domain == S_onnx && n->op == OP_ONNX_MatMul && n->nargs == 2) {
		*mm = (Mm){ operand(n, 0), operand(n, 1), 0, 0, 1.0 };
		ValueId x = untransposed(o, mm->a), y = untransposed(o, mm->b);
		if (x)
			mm->a = x, mm->ta = 1;
		if (y)
			mm->b = y, mm->tb = 1;
		return ranked2(o, mm->a) && ranked2(o, mm->b) && is_f32(val(o->f.m, n->res[0])->type);
	}
	if (n->domain == o->ms && n->name == sym_cstr("FusedMatMul") && n->nargs == 2) {
		*mm = (Mm){ operand(n, 0), operand(n, 1), fuse_attr_int(n, "transA", 0),
			    fuse_attr_int(n, "transB", 0), fuse_attr_float(n, sym_cstr("alpha"), 1.0) };
		return mm->a && mm->b && mm->ta >= 0 && mm->tb >= 0 && !node_kw(n, sym_cstr("transBatchA")) &&
		       !node_kw(n, sym_cstr("transBatchB"));
	}
	return 0;
}

static void set_fused_matmul(FuseOrt *o, Node *n, const Mm *mm)
{
	set_ms(o, n, "FusedMatMul", 2, 3);
	n->args[0] = fuse_value_arg(mm->a);
	n->args[1] = fuse_value_arg(mm->b);
	n->kw[0] = fuse_float_kw("alpha", mm->alpha);
	n->kw[1] = fuse_int_kw("transA", mm->ta);
	n->kw[2] = fuse_int_kw("transB", mm->tb);
}

/* A MatMul with a transposed operand. */
static void fuse_matmul(FuseOrt *o, Node *n)
{
	Mm mm;
	if (!mm_of(o, n, &mm) || !(mm.ta || mm.tb))
		return;
	set_fused_matmul(o, n, &mm);
}

/* Mul(MatMul, c), Mul(c, MatMul) or Div(MatMul, c). */
static void fuse_matmul_scale(FuseOrt *o, Node *n)
{
	const Type *tr = fuse_ranked_type(&o->f, n->res[0]);
	for (uint32_t side = 0; tr && is_f32(tr) && side < (n->op == OP_ONNX_Mul ? 2u : 1u); side++) {
		ValueId p = operand(n, side), c = operand(n, 1 - side);
		Node *d = p ? def_of(o->f.m, p) : NULL;
		const Type *tc = c ? fuse_ranked_type(&o->f, c) : NULL;
		double k;
		Mm mm;
		if (!d || !fuse_one_use(&o->f, p) || !tc || tc->rank > tr->rank || !fuse_scalar(&o->f, c, &k) ||
		    !type_equal(val(o->f.m, p)->type, tr) || !mm_of(o, d, &mm))
			continue;
		if (n->op == OP_ONNX_Div && k == 0)
			return;
		mm.alpha = n->op == OP_ONNX_Div ? mm.alpha / k : mm.alpha * k;
		o->f.uses[p]--;
		set_fused_matmul(o, n, &mm);
		/* dce keeps ops of other domains: the FusedMatMul taken in goes here. */
		node_remove(d->graph, d);
		return;
	}
}

/* ---- Gelu, FastGelu, BiasGelu ------------------------------------------ */

/* How many times the nodes of the chain ending in n read x: n's operands,
 * and through those made by a node read only there, up to `depth` nodes
 * deep.  A GELU written out reads its input two or more times; when every
 * read of x is in the chain, nothing reads x once the chain is gone. */
static uint32_t reads_in_chain(const FuseOrt *o, const Node *n, ValueId x, int depth)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->nargs; i++) {
		ValueId a = operand(n, i);
		const Node *d = a && a != x ? def_of(o->f.m, a) : NULL;
		if (a == x)
			k++;
		else if (d && depth > 0 && d->domain == S_onnx && fuse_one_use(&o->f, a))
			k += reads_in_chain(o, d, x, depth - 1);
	}
	return k;
}

/* x = Add(y, bias) or Add(bias, y), read only by the chain ending in n,
 * bias a 1-D constant as long as y's last dim and y of the Add's type:
 * bias (*y set); else VNONE. */
static ValueId gelu_bias(const FuseOrt *o, const Node *n, ValueId x, ValueId *y)
{
	Node *add = match_op(o->f.m, x, OP_ONNX_Add);
	const Type *tx = fuse_ranked_type(&o->f, x);
	if (!add || !tx || tx->rank < 1 || x >= o->f.nuses || o->f.uses[x] != reads_in_chain(o, n, x, 10))
		return VNONE;
	for (uint32_t side = 0; side < 2; side++) {
		ValueId a = operand(add, side), b = operand(add, 1 - side);
		const Tensor *t = b ? const_tensor(o->f.m, b) : NULL;
		Dim last = tx->dims[tx->rank - 1];
		if (t && t->type && t->type->rank == 1 && t->type->dtype == DT_F32 && !last.sym &&
		    t->type->dims[0].v == last.v && a && type_equal(val(o->f.m, a)->type, tx)) {
			*y = a;
			return b;
		}
	}
	return VNONE;
}

/* Gelu's approximate attribute: 1 for "none" (or absent), 2 for "tanh". */
static int gelu_attr_kind(const Node *n)
{
	const Named *ap = node_kw(n, sym_cstr("approximate"));
	if (!ap)
		return 1;
	if (ap->val.kind != A_STR || ap->val.u.s.n != 4)
		return 0;
	return !memcmp(ap->val.u.s.s, "tanh", 4) ? 2 : !memcmp(ap->val.u.s.s, "none", 4) ? 1 : 0;
}

/* n = a GELU written out (ending in a Mul) or onnx::Gelu. */
static void fuse_gelu_ort(FuseOrt *o, Node *n)
{
	ValueId x = VNONE, inner = VNONE, y = VNONE;
	int kind = n->op == OP_ONNX_Gelu ? gelu_attr_kind(n) : fuse_gelu_form(&o->f, n, &x, &inner);
	if (n->op == OP_ONNX_Gelu)
		x = operand(n, 0);
	if (!kind || !x || !is_f32(val(o->f.m, x)->type) || !is_f32(val(o->f.m, n->res[0])->type))
		return;
	ValueId bias = gelu_bias(o, n, x, &y);
	if (inner)
		o->f.uses[inner]--;
	if (bias)
		o->f.uses[x] = 0;
	set_ms(o, n, kind == 2 ? "FastGelu" : bias ? "BiasGelu" : "Gelu", bias ? 2 : 1, 0);
	n->args[0] = fuse_value_arg(bias ? y : x);
	if (bias)
		n->args[1] = fuse_value_arg(bias);
}

/* ---- SkipLayerNormalization -------------------------------------------- */

/* v is a 1-D f32 value of n elements. */
static int vec_of(const FuseOrt *o, ValueId v, Dim n)
{
	const Type *t = v ? fuse_ranked_type(&o->f, v) : NULL;
	return is_f32(t) && t->rank == 1 && dim_same(t->dims[0], n);
}

/* v can be read at the node that makes `at` (both of graph g). */
static int defined_before(const FuseOrt *o, ValueId v, ValueId at)
{
	const Node *d = def_of(o->f.m, v), *a = def_of(o->f.m, at);
	return !d || d->graph != a->graph || o->pos[v] < o->pos[at];
}

/* ln = LayerNormalization or SimplifiedLayerNormalization (`skip`
 * names the contrib op it becomes) reading Add(a, b). */
static void fuse_skip_norm(FuseOrt *o, Graph *g, Node *ln, const char *skip)
{
	ValueId s = operand(ln, 0), w = operand(ln, 1), c = operand(ln, 2), r = ln->res[0];
	Node *add = match_op(o->f.m, s, OP_ONNX_Add);
	const Type *ts = s ? fuse_ranked_type(&o->f, s) : NULL;
	if (!add || add->graph != g || !is_f32(ts) || (ts->rank != 2 && ts->rank != 3) || !r ||
	    !type_equal(val(o->f.m, r)->type, ts))
		return;
	int64_t axis = fuse_attr_int(ln, "axis", -1);
	for (uint32_t i = 1; i < ln->nres; i++)
		if (ln->res[i] && o->f.uses[ln->res[i]])
			return;
	Dim h = ts->dims[ts->rank - 1];
	ValueId a = operand(add, 0), b = operand(add, 1);
	if ((axis != -1 && axis != ts->rank - 1) || !vec_of(o, w, h) || (c && !vec_of(o, c, h)) ||
	    ln->nargs > 3 || !a || !b || !type_equal(val(o->f.m, a)->type, ts) ||
	    !type_equal(val(o->f.m, b)->type, ts))
		return;
	double eps = fuse_attr_float(ln, sym_cstr("epsilon"), 1e-5);
	Node *at = ln;
	if (!fuse_one_use(&o->f, s)) {
		if (!defined_before(o, w, s) || (c && !defined_before(o, c, s)))
			return;
		at = add;
	}
	uint32_t nres = at == add ? 4 : 1;
	ValueId *res = ARENA_ARRAY(&o->f.m->arena, ValueId, nres);
	res[0] = r;
	if (at == add) {
		res[1] = res[2] = VNONE;
		res[3] = s;
		val(o->f.m, r)->def = add;
		val(o->f.m, r)->res = 0;
		val(o->f.m, s)->res = 3;
		node_remove(g, ln);
	}
	o->f.uses[s]--;
	set_ms(o, at, skip, c ? 4 : 3, 1);
	at->nres = nres;
	at->res = res;
	at->args[0] = fuse_value_arg(a);
	at->args[1] = fuse_value_arg(b);
	at->args[2] = fuse_value_arg(w);
	if (c)
		at->args[3] = fuse_value_arg(c);
	at->kw[0] = fuse_float_kw("epsilon", eps);
}

/* ---- SimplifiedLayerNormalization -------------------------------------- */

/* n = Mul(w, N) or Mul(N, w), N an RMS normalization over the last dim
 * written out and read only there, or n = RMSNormalization(x, w) over
 * the last dim: n becomes SimplifiedLayerNormalization(x, w), 1; else 0. */
static int fuse_rms(FuseOrt *o, Node *n)
{
	const Type *tr = fuse_ranked_type(&o->f, n->res[0]);
	ValueId x = VNONE, w = VNONE, core = VNONE;
	double eps = 1e-5;
	int k = 0;
	if (!is_f32(tr) || tr->rank < 1 || tr->rank > 16 || n->nres != 1)
		return 0;
	if (n->op == OP_ONNX_RMSNormalization) {
		int64_t axis = fuse_attr_int(n, "axis", -1);
		x = operand(n, 0), w = operand(n, 1), k = axis == -1 || axis == tr->rank - 1;
		eps = fuse_attr_float(n, sym_cstr("epsilon"), 1e-5);
		if (fuse_attr_int(n, "stash_type", 1) != 1 || n->nargs != 2)
			return 0;
	}
	for (uint32_t side = 0; n->op == OP_ONNX_Mul && side < 2 && !k; side++) {
		Node *c = def_of(o->f.m, operand(n, side));
		if (c && fuse_one_use(&o->f, operand(n, side)) && fuse_rms_form(&o->f, c, tr->rank, &x, &k, &eps))
			core = operand(n, side), w = operand(n, 1 - side);
	}
	if (k != 1 || !x || !type_equal(val(o->f.m, x)->type, tr) || !vec_of(o, w, tr->dims[tr->rank - 1]))
		return 0;
	if (core) {
		/* The pattern read x two or three times; the new node reads it once. */
		o->f.uses[x] -= reads_in_chain(o, n, x, 8) - 1;
		o->f.uses[core]--;
	}
	fuse_set_generic(&o->f, n, S_onnx, sym_cstr("SimplifiedLayerNormalization"), 2, 2);
	n->args[0] = fuse_value_arg(x);
	n->args[1] = fuse_value_arg(w);
	n->kw[0] = fuse_int_kw("axis", -1);
	n->kw[1] = fuse_float_kw("epsilon", eps);
	return 1;
}

/* ---- MatMulNBits with its bias ----------------------------------------- */

/* v is a weight or constant (no node makes it). */
static int is_constant(const FuseOrt *o, ValueId v)
{
	const Value *x = val(o->f.m, v);
	return x->kind == VK_PARAM || x->kind == VK_BUFFER || const_tensor(o->f.m, v) != NULL;
}

/* n = Add(MatMulNBits(...), b) or Add(b, MatMulNBits(...)), the product
 * read only here and without a bias, b a 1-D f32 constant of N: n
 * becomes the MatMulNBits with b its bias (input 5). */
static void fuse_nbits_bias(FuseOrt *o, Node *n)
{
	const Type *tr = fuse_ranked_type(&o->f, n->res[0]);
	for (uint32_t side = 0; is_f32(tr) && side < 2; side++) {
		ValueId p = operand(n, side), b = operand(n, 1 - side);
		Node *d = p ? def_of(o->f.m, p) : NULL;
		if (!d || d->domain != o->ms || d->name != sym_cstr("MatMulNBits") || d->nargs > 5 || operand(d, 5) ||
		    !fuse_one_use(&o->f, p) || !type_equal(val(o->f.m, p)->type, tr) || !b || !is_constant(o, b))
			continue;
		int64_t nn = fuse_attr_int(d, "N", -1);
		if (nn < 0 || !vec_of(o, b, (Dim){ nn, 0 }))
			continue;
		Arg *args = d->args;
		Named *kw = d->kw;
		uint32_t nargs = d->nargs, nkw = d->nkw;
		set_ms(o, n, "MatMulNBits", 6, nkw);
		for (uint32_t i = 0; i < 5; i++)
			n->args[i] = i < nargs ? args[i] : (Arg){ .kind = A_NONE };
		n->args[5] = fuse_value_arg(b);
		memcpy(n->kw, kw, nkw * sizeof *kw);
		o->f.uses[p]--;
		/* dce keeps ops of other domains: the product taken in goes here. */
		node_remove(d->graph, d);
		return;
	}
}

/* ---- the walk ---------------------------------------------------------- */

static Status fuse_ort_graph(const GraphVisit *v, void *ctx)
{
	FuseOrt *o = ctx;
	uint32_t k = 0;
	for (Node *n = v->g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i])
				o->pos[n->res[i]] = k++;
	for (Node *n = v->g->first, *next; n; n = next) {
		next = n->next;
		if (n->domain != S_onnx || n->nres < 1)
			continue;
		switch (n->op) {
		case OP_ONNX_MatMul:
			fuse_matmul(o, n);
			break;
		case OP_ONNX_Mul:
			fuse_gelu_ort(o, n);
			if (n->op == OP_ONNX_Mul && fuse_rms(o, n))
				fuse_skip_norm(o, v->g, n, "SkipSimplifiedLayerNormalization");
			if (n->op == OP_ONNX_Mul)
				fuse_matmul_scale(o, n);
			break;
		case OP_ONNX_RMSNormalization:
			if (fuse_rms(o, n))
				fuse_skip_norm(o, v->g, n, "SkipSimplifiedLayerNormalization");
			break;
		case OP_ONNX_Div:
			fuse_matmul_scale(o, n);
			break;
		case OP_ONNX_Add:
			fuse_nbits_bias(o, n);
			break;
		case OP_ONNX_Gelu:
			fuse_gelu_ort(o, n);
			break;
		case OP_ONNX_LayerNormalization:
			fuse_skip_norm(o, v->g, n, "SkipLayerNormalization");
			break;
		default:
			break;
		}
	}
	if (!v->depth) {
		fuse_ort_products(o->f.m, &o->f.weights, v->g, o->ms);
		fuse_ort_heads(o->f.m, v->g);
	}
	return OK;
}

/* First, as its nodes are made: attention over a cache (fuse_ort_gqa.c). */
static Status gqa_graph(const GraphVisit *v, void *ctx)
{
	FuseOrt *o = ctx;
	if (!v->depth)
		fuse_ort_gqa(&o->f, v->g, o->ms, o->gqa);
	return OK;
}

Status pass_fuse_ort(Module *m, const PassOptions *opt)
{
	FuseOrt o = { { m, module_use_counts(m, WALK_PROGRAM), m->vals.n,
			{ m, opt->weights_dir ? opt->weights_dir : ".", NULL }, opt->opset, 0 },
		      sym_cstr("com.microsoft"), NULL, opt->ort_gqa };
	module_walk(m, WALK_PROGRAM, gqa_graph, &o);
	o.pos = xcalloc(m->vals.n ? m->vals.n : 1, sizeof(uint32_t));
	module_walk(m, WALK_PROGRAM, fuse_ort_graph, &o);
	rt_weights_close(&o.f.weights);
	free(o.pos);
	free(o.f.uses);
	return OK;
}
