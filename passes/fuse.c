/* fuse.c - -O2 fusions: several ONNX nodes become one that ONNX Runtime
 * runs as a single kernel.
 *
 *   Add(MatMul(a, Transpose(w, perm=[1,0])), c)  -> Gemm(a, w, c, transB=1)
 *   Add(MatMul(a, b), c)                         -> Gemm(a, b, c)
 *       a 2-D (M may be symbolic), the weight 2-D and static, c
 *       broadcastable to the result ([N], [1,N], [M,N] for a known M), a
 *       floating dtype; the MatMul (and the Transpose) feed nothing else.
 *       The Add's operands may come in either order.
 *   ReduceMean(x, axes = every dim after the second, keepdims=1)
 *                                                -> GlobalAveragePool(x)
 *   Reshape(Gemm(Reshape(x, [M, K]), w, c), [d..., N])
 *                                                -> Add(MatMul(x, w), c)
 *   Reshape(MatMul(Reshape(x, [M, K]), w), [d..., N])
 *                                                -> MatMul(x, w)
 *       x [d..., K] (rank >= 3) and the result [d..., N] with the same d
 *       (known sizes or the same symbols), w static [K, N], a plain Gemm
 *       (no attributes) feeding nothing else, c along N; the first
 *       Reshape (or a Flatten) may feed other nodes.
 *   Reshape(MatMul(Reshape(a, [N, m, k]), Reshape(b, [N, k, n])), [d..., m, n])
 *                                                -> MatMul(a, b)
 *       a [d..., m, k], b [d..., k, n] of static shapes, the same d,
 *       N = prod(d); the MatMul and both Reshapes feeding nothing else.
 *       Reshaped to another shape s: Reshape(MatMul(a, b), s).
 *   BatchNormalization(Conv(x, W, B), scale, bias, mean, var)  (inference)
 *                                                -> Conv(x, W', B')
 *       W, B and the four statistics constants (params, buffers, consts)
 *       of one floating dtype, the Conv feeding nothing else;
 *       W'[c] = W[c] * s[c], B'[c] = (B[c] - mean[c]) * s[c] + bias[c],
 *       s = scale / sqrt(var + epsilon).
 *       The same after a ConvTranspose, whose weight [C, M/group, k...]
 *       scales along dim 1 within each group (out_channel below).  A
 *       weight of MAPPED_SLICE bytes or more is streamed (conv_bn_streamed).
 *       (ReduceMean: x of static rank >= 3; axes as the input (opset 18)
 *       or the attribute (before).)
 *   Conv(x, W, B), ConvTranspose(x, W, B), Gemm(a, b, C)
 *                                                -> the same without B / C
 *       B (C) a constant whose every element is 0 (each is optional).
 *   Normalizations, Gelu and attention written out: fuse_norm.c,
 *   fuse_gelu.c, fuse_attention.c; a constant Pad before a Conv,
 *   ConvTranspose or pooling: fuse_pad.c.
 *
 * Why they hold: Gemm computes A * op(B) + C with C broadcast one way to
 * (M, N), which is the MatMul and Add of 2-D operands; transB=1 reads the
 * weight transposed, which is what the Transpose did.  GlobalAveragePool
 * averages every spatial dim of an (N, C, D1, ...) tensor and keeps them
 * as 1s, which is ReduceMean over dims 2.. with keepdims.  Inference
 * BatchNormalization is y[c] = (z[c] - mean[c]) * s[c] + bias[c], affine
 * per output channel c of z = Conv(x, W, B), and a Conv is linear in W and
 * B per output channel, so scaling W[c] and B[c] gives the same y.  The new
 * W' and B' are `const` values of the graph (the old weights go when
 * nothing else reads them); they are computed in double and stored in the
 * weights' dtype.  A bias of zeros adds nothing to the sums (x + 0 is x,
 * up to the sign of a zero), and ONNX Runtime's kernels skip the pass
 * over the output that adding it costs.
 *
 * One walk over every graph (module_walk); the fused node replaces the last
 * node of the pattern in place, so it keeps that node's result, name and
 * provenance; the nodes it absorbed are left for dce (their one use is
 * gone).  Use counts are computed once: linear time.  A pattern that only
 * appears once dce, fold and cse have run over the fused graph fuses in
 * the next round of -O2's group (passes/registry.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuse.h"

const Type *fuse_static_type(const Fuse *f, ValueId v)
{
	const Type *t = v ? val(f->m, v)->type : NULL;
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return NULL;
	for (int32_t i = 0; i < t->rank; i++)
		if (t->dims[i].sym || t->dims[i].v < 0)
			return NULL;
	return t;
}

const Type *fuse_ranked_type(const Fuse *f, ValueId v)
{
	const Type *t = v ? val(f->m, v)->type : NULL;
	return t && t->kind == TY_TENSOR && t->rank >= 0 ? t : NULL;
}

int fuse_one_use(const Fuse *f, ValueId v) { return v && v < f->nuses && one_use(f->uses, v); }

static int is_float(const Type *t) { return t && dtype_is_float((DType)t->dtype); }

/* c broadcasts one way to (M, N): [N], [1, N] or [M, N] (1s allowed);
 * M may be symbolic (then c is [N] or [1, N]). */
static int gemm_bias_ok(const Type *c, Dim m, int64_t n)
{
	if (!c || c->rank < 1 || c->rank > 2)
		return 0;
	int64_t cn = c->dims[c->rank - 1].v, cm = c->rank == 2 ? c->dims[0].v : 1;
	return (cn == n || cn == 1) && (cm == 1 || (!m.sym && cm == m.v));
}

ValueId fuse_place(Module *m, Graph *g, Node *n, Node *at, const Node *from, ValueId like, const char *suffix,
		   Type *t)
{
	char buf[300];
	snprintf(buf, sizeof buf, "%.250s_%s", sym_str(val(m, like)->name), suffix);
	n->res[0] = value_new(m, value_fresh_name(m, sym_cstr(buf)), t, VK_NODE);
	val(m, n->res[0])->def = n;
	val(m, n->res[0])->res = 0;
	n->prov = from->prov;
	n->loc = from->loc;
	node_insert_before(g, at, n);
	return n->res[0];
}

typedef struct Noted {
	Node **reader;
	uint32_t n;
	Node *cur;
} Noted;

static void note_reader(ValueId v, void *ctx)
{
	Noted *r = ctx;
	if (v < r->n && !r->reader[v])
		r->reader[v] = r->cur;
}

Node **fuse_readers(Module *m, const Graph *g)
{
	Noted r = { xcalloc(m->vals.n ? m->vals.n : 1, sizeof(Node *)), m->vals.n, NULL };
	for (Node *n = g->first; n; n = n->next) {
		r.cur = n;
		node_each_use(n, note_reader, &r);
	}
	return r.reader;
}

static const int64_t swap01[2] = { 1, 0 };

int fuse_perm_is(const Node *t, const int64_t *p, int32_t rank)
{
	const Named *k = node_kw(t, S_perm);
	if (!k || k->val.kind != A_LIST || k->val.n != (uint32_t)rank)
		return 0;
	for (int32_t i = 0; i < rank; i++)
		if (k->val.u.list[i].kind != A_INT || k->val.u.list[i].u.i != p[i])
			return 0;
	return 1;
}

void fuse_set_op(Fuse *f, Node *n, OpId op, uint32_t nargs, uint32_t nkw)
{
	fuse_set_generic(f, n, op_domain(op), op_name_of(op), nargs, nkw);
	n->op = op;
}

void fuse_set_generic(Fuse *f, Node *n, Sym domain, Sym name, uint32_t nargs, uint32_t nkw)
{
	f->edits++;
	n->op = OP_GENERIC;
	n->domain = domain;
	n->name = name;
	n->nargs = nargs;
	n->nkw = nkw;
	n->args = ARENA_ARRAY(&f->m->arena, Arg, nargs);
	n->kw = nkw ? ARENA_ARRAY(&f->m->arena, Named, nkw) : NULL;
}

/* add = Add(MatMul(a, w'), c) or Add(c, MatMul(a, w')). */
static void fuse_gemm(Fuse *f, Node *add)
{
	for (uint32_t side = 0; side < 2; side++) {
		Node *mm = match_operand(f->m, add, side, OP_ONNX_MatMul);
		ValueId c = operand(add, 1 - side);
		if (!mm || !fuse_one_use(f, mm->res[0]))
			continue;
		ValueId a = operand(mm, 0), b = operand(mm, 1);
		Node *tr = match_op(f->m, b, OP_ONNX_Transpose);
		int trans = tr && fuse_perm_is(tr, swap01, 2) && fuse_one_use(f, b);
		ValueId w = trans ? operand(tr, 0) : b;
		const Type *ta = fuse_ranked_type(f, a), *tw = fuse_static_type(f, w), *tc = fuse_static_type(f, c);
		if (!ta || !tw || ta->rank != 2 || tw->rank != 2 || !is_float(ta) || !w || !c)
			continue;
		int64_t n = trans ? tw->dims[0].v : tw->dims[1].v;
		if (!gemm_bias_ok(tc, ta->dims[0], n) || tc->dtype != ta->dtype || tw->dtype != ta->dtype)
			continue;
		fuse_set_op(f, add, OP_ONNX_Gemm, 3, trans);
		add->args[0] = fuse_value_arg(a);
		add->args[1] = fuse_value_arg(w);
		add->args[2] = fuse_value_arg(c);
		if (trans)
			add->kw[0] = (Named){ S_transB, { .kind = A_INT, .u.i = 1 } };
		f->uses[mm->res[0]]--;
		return;
	}
}

/* The reduced axes, from the input (opset 18) or the attribute, into ax;
 * 0 if they are not a constant list of ints.  *cnt is their count. */
static int reduce_axes(const Fuse *f, const Node *n, int64_t *ax, uint32_t cap, uint32_t *cnt)
{
	const Named *k = node_kw(n, S_axes);
	if (k && k->val.kind == A_LIST) {
		if (k->val.n > cap)
			return 0;
		for (uint32_t i = 0; i < k->val.n; i++) {
			if (k->val.u.list[i].kind != A_INT)
				return 0;
			ax[i] = k->val.u.list[i].u.i;
		}
		*cnt = k->val.n;
		return 1;
	}
	const Tensor *t = const_tensor(f->m, operand(n, 1));
	int64_t len = t && t->type && t->type->rank == 1 ? t->type->dims[0].v : -1;
	if (len < 0 || (uint64_t)len > cap || !t->data || !dtype_is_int((DType)t->type->dtype))
		return 0;
	for (int64_t i = 0; i < len; i++)
		ax[i] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
	*cnt = (uint32_t)len;
	return 1;
}

int fuse_trailing_mean(const Fuse *f, const Node *n, int32_t rank)
{
	if (n->op == OP_ONNX_GlobalAveragePool)
		return rank >= 3 ? rank - 2 : 0;
	const Named *kd = node_kw(n, S_keepdims);
	int64_t ax[16];
	uint32_t cnt = 0, seen = 0;
	if (n->op != OP_ONNX_ReduceMean || rank < 1 || rank > 16 ||
	    (kd && ((kd->val.kind != A_INT && kd->val.kind != A_BOOL) || kd->val.u.i != 1)))
		return 0;
	if (!reduce_axes(f, n, ax, 16, &cnt) || cnt == 0)
		return 0;
	for (uint32_t i = 0; i < cnt; i++) {
		int64_t a = ax[i] < 0 ? ax[i] + rank : ax[i];
		if (a < rank - (int64_t)cnt || a >= rank || (seen & (1u << a)))
			return 0;
		seen |= 1u << a;
	}
	return (int)cnt;
}

static void fuse_global_pool(Fuse *f, Node *n)
{
	ValueId x = operand(n, 0);
	const Type *t = fuse_static_type(f, x);
	if (!t || t->rank < 3 || !is_float(t) || fuse_trailing_mean(f, n, t->rank) != t->rank - 2)
		return;
	ValueId axes_in = operand(n, 1);
	if (axes_in)
		f->uses[axes_in]--;
	fuse_set_op(f, n, OP_ONNX_GlobalAveragePool, 1, 0);
	n->args[0] = fuse_value_arg(x);
}

/* A new `const` value of g holding t (its bytes are not copied). */
static ValueId new_const_of(Fuse *f, Graph *g, Tensor *t, ValueId like, const char *suffix)
{
	Arena *a = &f->m->arena;
	char buf[300];
	snprintf(buf, sizeof buf, "%.250s%s", sym_str(val(f->m, like)->name), suffix);
	ValueId v = value_new(f->m, value_fresh_name(f->m, sym_cstr(buf)), t->type, VK_CONST);
	val(f->m, v)->init = t;
	val(f->m, v)->loc = val(f->m, like)->loc;
	VEC_PUSH(a, g->inits, v);
	return v;
}

ValueId fuse_new_const(Fuse *f, Graph *g, const RTensor *r, ValueId like, const char *suffix)
{
	Arena *a = &f->m->arena;
	Dim *dims = ARENA_ARRAY(a, Dim, r->rank ? r->rank : 1);
	for (int32_t i = 0; i < r->rank; i++)
		dims[i] = (Dim){ r->shape[i], 0 };
	Tensor *t = ARENA_NEW(a, Tensor);
	t->type = type_tensor(a, r->dtype, r->rank, dims);
	t->nbytes = r->nbytes;
	t->data = arena_dup(a, r->data, r->nbytes);
	return new_const_of(f, g, t, like, suffix);
}


double fuse_attr_float(const Node *n, Sym name, double dflt)
{
	const Named *k = node_kw(n, name);
	if (k && k->val.kind == A_FLOAT)
		return k->val.u.f;
	return k && k->val.kind == A_INT ? (double)k->val.u.i : dflt;
}

int fuse_scalar(const Fuse *f, ValueId v, double *x)
{
	const Tensor *t = const_tensor(f->m, v);
	if (!t || !t->type || type_numel(t->type) != 1 || !t->data || !dtype_is_float((DType)t->type->dtype))
		return 0;
	*x = tensor_get_f((DType)t->type->dtype, t->data, 0);
	return 1;
}

int fuse_scalar_near(const Fuse *f, ValueId v, double x)
{
	double c;
	return fuse_scalar(f, v, &c) && fabs(c - x) <= 1e-6 * fabs(x);
}

/* The BatchNormalization statistics, each of M elements of W's dtype. */
static int stats_ok(RTensor *const *st, const RTensor *w, int64_t m)
{
	for (int i = 0; i < 4; i++)
		if (!st[i] || st[i]->dtype != w->dtype || st[i]->numel != m)
			return 0;
	return 1;
}

/* The output channel weight element e scales with: W is [M, C/group,
 * k...] for a Conv (the channel is dim 0) and [C, M/group, k...] for a
 * ConvTranspose, whose channel is dim 1 within group e's input channel
 * belongs to. */
static int64_t out_channel(const RTensor *w, int64_t e, int transposed, int64_t group)
{
	int64_t per = w->numel / w->shape[0];
	if (!transposed)
		return e / per;
	return rt_row_channel(e / (per / w->shape[1]), w->shape[1], w->shape[0] / group);
}

/* W' and B' into w and b (b made if the node had none); m channels. */
static void scale_weights(RTensor *w, RTensor *b, RTensor *const *st, double eps, int transposed, int64_t group)
{
	for (int64_t e = 0; e < w->numel; e++) {
		int64_t c = out_channel(w, e, transposed, group);
		rt_set_f(w, e, rt_get_f(w, e) * rt_get_f(st[0], c) / sqrt(rt_get_f(st[3], c) + eps));
	}
	for (int64_t c = 0; c < b->numel; c++) {
		double sc = rt_get_f(st[0], c) / sqrt(rt_get_f(st[3], c) + eps);
		rt_set_f(b, c, (rt_get_f(b, c) - rt_get_f(st[2], c)) * sc + rt_get_f(st[1], c));
	}
}

int64_t fuse_attr_int(const Node *n, const char *name, int64_t dflt)
{
	const Named *k = node_kw(n, sym_cstr(name));
	return k && (k->val.kind == A_INT || k->val.kind == A_BOOL) ? k->val.u.i : k ? -1 : dflt;
}

static int is_inference_bn(const Node *bn)
{
	const Named *t = node_kw(bn, S_training_mode);
	return bn->nres == 1 && bn->nargs == 5 && (!t || ((t->val.kind == A_INT || t->val.kind == A_BOOL) && !t->val.u.i));
}

/* W, B or a statistic is an input the user may override
 * (-keep-initializers-as-inputs): its bytes are not the ones to fold. */
static int conv_bn_overridable(const Fuse *f, const Node *bn, const Node *conv)
{
	int o = 0;
	for (uint32_t i = 1; i < 3; i++)
		o |= operand(conv, i) && val(f->m, operand(conv, i))->overridable;
	for (uint32_t i = 1; i < 5; i++)
		o |= operand(bn, i) && val(f->m, operand(bn, i))->overridable;
	return o;
}

/* W' and B' record the BatchNormalization they fold and the constants
 * they are computed from (conv's W and B, bn's four), as fold's results
 * do; read before become_conv rewrites bn's operands. */
static void conv_bn_prov(Fuse *f, const Node *bn, const Node *conv, ValueId nw, ValueId nb)
{
	ValueId src[6] = { operand(conv, 1), operand(conv, 2), operand(bn, 1), operand(bn, 2),
			   operand(bn, 3), operand(bn, 4) };
	Prov *p = prov_folded(f->m, bn->prov, "onnx::BatchNormalization", src, 6);
	val(f->m, nw)->prov = p;
	val(f->m, nb)->prov = p;
}

/* bn becomes conv's op on conv's input, with the weight nw and bias nb. */
static void become_conv(Fuse *f, Node *bn, const Node *conv, ValueId nw, ValueId nb)
{
	conv_bn_prov(f, bn, conv, nw, nb);
	ValueId x = operand(conv, 0);
	const Named *kw = conv->kw;
	uint32_t nkw = conv->nkw;
	fuse_set_op(f, bn, conv->op, 3, nkw);
	bn->args[0] = fuse_value_arg(x);
	bn->args[1] = fuse_value_arg(nw);
	bn->args[2] = fuse_value_arg(nb);
	if (nkw)
		memcpy(bn->kw, kw, nkw * sizeof *kw);
	f->uses[conv->res[0]]--;
}

/* A Conv or ConvTranspose (tr) weight of MAPPED_SLICE bytes or more is
 * not read whole: W' is written to a temporary file a band of rows at a
 * time (rt_scale_rows_to_fd), from the weight's own bytes (the weights
 * file's mapping), and mapped back (as fold does with a large Transpose);
 * B' and the statistics are small.  1 if done. */
static int conv_bn_streamed(Fuse *f, Graph *g, Node *bn, const Node *conv, int tr, int64_t group)
{
	ValueId wv = operand(conv, 1);
	const Type *tw = fuse_static_type(f, wv);
	int64_t numel = tw ? type_numel(tw) : -1;
	if (!tw || tw->rank < 2 || numel <= 0 || !is_float(tw) || dtype_bits((DType)tw->dtype) % 8 ||
	    tensor_nbytes((DType)tw->dtype, numel) < MAPPED_SLICE || (tr && tw->dims[0].v % group))
		return 0;
	/* rows: one a channel of dim 0 (Conv) or of dims 0 and 1 (ConvTranspose) */
	int64_t m = tr ? tw->dims[1].v * group : tw->dims[0].v;
	int64_t rows = tr ? tw->dims[0].v * tw->dims[1].v : m;
	int64_t inner = tr ? tw->dims[1].v : m, reps = tr ? tw->dims[0].v / group : 1;
	size_t nbytes = 0;
	diag_mute(1);
	RTensor *b = operand(conv, 2) ? rt_value_tensor(&f->weights, operand(conv, 2)) : NULL, *st[4];
	for (int i = 0; i < 4; i++)
		st[i] = rt_value_tensor(&f->weights, operand(bn, 1 + (uint32_t)i));
	const uint8_t *src = rt_value_bytes(&f->weights, wv, &nbytes);
	int ok = diag_mute(0) == 0 && src && nbytes == tensor_nbytes((DType)tw->dtype, numel) &&
		 (operand(conv, 2) == VNONE || (b && b->dtype == tw->dtype && b->numel == m));
	for (int i = 0; i < 4 && ok; i++)
		ok = st[i] && st[i]->dtype == tw->dtype && st[i]->numel == m;
	double *sc = ok ? xmalloc((size_t)m * sizeof *sc) : NULL;
	double eps = fuse_attr_float(bn, S_epsilon, 1e-5);
	for (int64_t c = 0; ok && c < m; c++)
		sc[c] = rt_get_f(st[0], c) / sqrt(rt_get_f(st[3], c) + eps);
	int fd = ok ? mapped_tmp() : -1;
	const uint8_t *p = NULL;
	if (fd >= 0 && rt_scale_rows_to_fd(&f->weights, src, (DType)tw->dtype, rows, numel / rows, sc, inner, reps, fd) == OK)
		p = mapped_fd(f->m, fd, nbytes);
	else if (fd >= 0)
		close(fd);
	if (p && !b)
		b = rt_new(conv->loc, (DType)tw->dtype, 1, &m);
	if (p && b) {
		for (int64_t c = 0; c < m; c++)
			rt_set_f(b, c, (rt_get_f(b, c) - rt_get_f(st[2], c)) * sc[c] + rt_get_f(st[1], c));
		Tensor *t = ARENA_NEW(&f->m->arena, Tensor);
		t->type = (Type *)tw;
		t->nbytes = nbytes;
		t->data = p;
		ValueId nw = new_const_of(f, g, t, wv, "_bn");
		become_conv(f, bn, conv, nw, fuse_new_const(f, g, b, operand(bn, 2), "_bn"));
	}
	free(sc);
	rt_free(b);
	for (int i = 0; i < 4; i++)
		rt_free(st[i]);
	return p != NULL;
}

static void fuse_conv_bn(Fuse *f, Graph *g, Node *bn)
{
	Node *conv = match_operand(f->m, bn, 0, OP_ONNX_Conv);
	int tr = !conv && (conv = match_operand(f->m, bn, 0, OP_ONNX_ConvTranspose)) != NULL;
	int64_t group = conv ? fuse_attr_int(conv, "group", 1) : 0;
	if (!conv || !is_inference_bn(bn) || !fuse_one_use(f, conv->res[0]) || conv->nargs < 2 || group < 1 ||
	    conv_bn_overridable(f, bn, conv))
		return;
	if (conv_bn_streamed(f, g, bn, conv, tr, group))
		return;
	diag_mute(1);
	RTensor *w = rt_value_tensor(&f->weights, operand(conv, 1));
	RTensor *b = operand(conv, 2) ? rt_value_tensor(&f->weights, operand(conv, 2)) : NULL;
	RTensor *st[4];
	for (int i = 0; i < 4; i++)
		st[i] = rt_value_tensor(&f->weights, operand(bn, 1 + (uint32_t)i));
	int ok = diag_mute(0) == 0 && w && w->rank >= 2 && dtype_is_float(w->dtype) && (operand(conv, 2) == VNONE || b);
	int64_t m = !ok ? 0 : tr ? w->shape[1] * group : w->shape[0];
	ok = ok && (!tr || w->shape[0] % group == 0) && stats_ok(st, w, m) && (!b || (b->dtype == w->dtype && b->numel == m));
	if (ok && !b)
		b = rt_new(conv->loc, w->dtype, 1, &m);
	if (ok && b) {
		scale_weights(w, b, st, fuse_attr_float(bn, S_epsilon, 1e-5), tr, group);
		ValueId nw = fuse_new_const(f, g, w, operand(conv, 1), "_bn");
		become_conv(f, bn, conv, nw, fuse_new_const(f, g, b, operand(bn, 2), "_bn"));
	}
	rt_free(w);
	rt_free(b);
	for (int i = 0; i < 4; i++)
		rt_free(st[i]);
}

/* n, a Conv, ConvTranspose or Gemm, adds a constant bias (its third
 * operand) of zeros: n drops it.  Not a bias the user may override
 * (-keep-initializers-as-inputs). */
static void fuse_zero_bias(Fuse *f, Node *n)
{
	ValueId b = operand(n, 2);
	if (!b || val(f->m, b)->overridable)
		return;
	diag_mute(1);
	RTensor *t = rt_value_tensor(&f->weights, b);
	diag_mute(0);
	int zero = t && dtype_is_float(t->dtype);
	for (int64_t i = 0; zero && i < t->numel; i++)
		zero = rt_get_f(t, i) == 0.0;
	rt_free(t);
	if (!zero)
		return;
	if (b < f->nuses)
		f->uses[b]--;
	n->nargs = 2;
	f->edits++;
}

/* x [d..., K] and y [d..., N] (the same d: known sizes or symbols) around
 * a 2-D weight [K, N] and, if tc, a bias that broadcasts along N. */
static int flat_linear_shapes(const Type *tx, const Type *ty, const Type *tw, const Type *tc)
{
	if (!tx || !ty || !tw || tx->rank < 3 || ty->rank != tx->rank || tw->rank != 2 ||
	    !is_float(tx) || ty->dtype != tx->dtype)
		return 0;
	int32_t r = tx->rank;
	for (int32_t i = 0; i + 1 < r; i++)
		if (!dim_same(tx->dims[i], ty->dims[i]))
			return 0;
	int64_t n = ty->dims[r - 1].v;
	if (tx->dims[r - 1].sym || ty->dims[r - 1].sym || tx->dims[r - 1].v != tw->dims[0].v || n != tw->dims[1].v)
		return 0;
	if (!tc)
		return 1;
	int64_t cn = tc->rank ? tc->dims[tc->rank - 1].v : 1;
	return (tc->rank == 1 || (tc->rank == 2 && tc->dims[0].v == 1)) && (cn == n || cn == 1);
}

/* The node that flattens x to 2-D for a Linear: a Reshape, or the Flatten
 * this pass makes of one. */
static Node *match_flatten(const Fuse *f, const Node *n, uint32_t i)
{
	Node *r = match_operand(f->m, n, i, OP_ONNX_Reshape);
	return r ? r : match_operand(f->m, n, i, OP_ONNX_Flatten);
}

/* y = Reshape(Gemm(Reshape(x, [M, K]), w, c), [d..., N]), the way a
 * Linear on a 3-D (or higher) input is traced (view, addmm, view), becomes
 * Add(MatMul(x, w), c): MatMul broadcasts over the leading dims, so the
 * flattening and its inverse are not needed.  Only a plain Gemm (no
 * transposes, alpha and beta 1) qualifies; the MatMul takes the Gemm's
 * provenance, the Add y's.  Without a bias (view, mm, view) y becomes
 * MatMul(x, w) in place.  The flattened x may have other readers (the
 * query, key and value projections share it): it stays for them. */
static void fuse_flat_linear(Fuse *f, Node *r2)
{
	Node *gm = match_operand(f->m, r2, 0, OP_ONNX_Gemm);
	Node *mm = gm ? NULL : match_operand(f->m, r2, 0, OP_ONNX_MatMul);
	Node *lin = gm ? gm : mm;
	if (!lin || lin->nargs != (gm ? 3u : 2u) || lin->nkw || !fuse_one_use(f, lin->res[0]))
		return;
	Node *r1 = match_flatten(f, lin, 0);
	const Type *tf = r1 ? fuse_ranked_type(f, r1->res[0]) : NULL;
	if (!tf || tf->rank != 2)
		return;
	ValueId x = operand(r1, 0), w = operand(lin, 1), c = gm ? operand(gm, 2) : VNONE, y = r2->res[0];
	const Type *ty = fuse_ranked_type(f, y);
	if (!flat_linear_shapes(fuse_ranked_type(f, x), ty, fuse_static_type(f, w), gm ? fuse_static_type(f, c) : NULL) ||
	    (gm && !c))
		return;
	f->uses[lin->res[0]]--;
	if (x < f->nuses)
		f->uses[x]++;           /* r1 may stay for its other readers */
	if (mm) {
		fuse_set_op(f, r2, OP_ONNX_MatMul, 2, 0);
		r2->args[0] = fuse_value_arg(x);
		r2->args[1] = fuse_value_arg(w);
		return;
	}
	Node *nm = node_new_op(f->m, OP_ONNX_MatMul, 1, 2, 0);
	nm->prov = gm->prov;
	nm->loc = gm->loc;
	nm->args[0] = fuse_value_arg(x);
	nm->args[1] = fuse_value_arg(w);
	ValueId mr = value_new(f->m, value_fresh_name(f->m, val(f->m, gm->res[0])->name),
			       type_tensor(&f->m->arena, (DType)ty->dtype, ty->rank, ty->dims), VK_NODE);
	val(f->m, mr)->def = nm;
	nm->res[0] = mr;
	node_insert_before(r2->graph, r2, nm);
	fuse_set_op(f, r2, OP_ONNX_Add, 2, 0);
	r2->args[0] = fuse_value_arg(mr);
	r2->args[1] = fuse_value_arg(c);
}

/* ta [d..., m, k] and tb [d..., k, n] (the same leading dims, nothing
 * broadcast) multiply to [d..., m, n] as flattened to [N, m, k] and
 * [N, k, n] in tfa and tfb, N the product of d. */
static int flat_bmm_shapes(const Type *ta, const Type *tb, const Type *tfa, const Type *tfb)
{
	if (!ta || !tb || !tfa || !tfb || ta->rank < 3 || tb->rank != ta->rank ||
	    tfa->rank != 3 || tfb->rank != 3 || !is_float(ta) || tb->dtype != ta->dtype)
		return 0;
	int32_t r = ta->rank;
	int64_t n = 1;
	for (int32_t i = 0; i < r - 2; i++) {
		if (tb->dims[i].v != ta->dims[i].v)
			return 0;
		n *= ta->dims[i].v;
	}
	int64_t m = ta->dims[r - 2].v, k = ta->dims[r - 1].v, nn = tb->dims[r - 1].v;
	return tb->dims[r - 2].v == k && tfa->dims[0].v == n && tfa->dims[1].v == m && tfa->dims[2].v == k &&
	       tfb->dims[0].v == n && tfb->dims[1].v == k && tfb->dims[2].v == nn;
}

/* t is [d..., m, n] with the leading dims of ta. */
static int is_bmm_result(const Type *t, const Type *ta, const Type *tb)
{
	int32_t r = ta->rank;
	if (!t || t->rank != r || t->dims[r - 2].v != ta->dims[r - 2].v || t->dims[r - 1].v != tb->dims[r - 1].v)
		return 0;
	for (int32_t i = 0; i < r - 2; i++)
		if (t->dims[i].v != ta->dims[i].v)
			return 0;
	return 1;
}

/* y = Reshape(MatMul(Reshape(a, [N, m, k]), Reshape(b, [N, k, n])), s),
 * the way a batched matmul over several leading dims is traced (view to
 * 3-D, bmm, view back), multiplies a [d..., m, k] by b [d..., k, n]:
 * MatMul batches over all the leading dims itself.  With s = [d..., m, n]
 * y becomes MatMul(a, b) (its result, name and provenance stay);
 * otherwise the MatMul becomes MatMul(a, b), of type [d..., m, n], and y
 * reshapes that (the elements are in the same row-major order as the
 * 3-D product's).  The Reshapes of a and b are left for dce. */
static void fuse_flat_bmm(Fuse *f, Node *r2)
{
	Node *mm = match_operand(f->m, r2, 0, OP_ONNX_MatMul);
	if (!mm || !fuse_one_use(f, mm->res[0]))
		return;
	Node *ra = match_operand(f->m, mm, 0, OP_ONNX_Reshape), *rb = match_operand(f->m, mm, 1, OP_ONNX_Reshape);
	if (!ra || !rb || !fuse_one_use(f, ra->res[0]) || !fuse_one_use(f, rb->res[0]))
		return;
	ValueId a = operand(ra, 0), b = operand(rb, 0);
	const Type *ta = fuse_static_type(f, a), *tb = fuse_static_type(f, b), *tm = fuse_static_type(f, mm->res[0]);
	if (!tm || !flat_bmm_shapes(ta, tb, fuse_static_type(f, ra->res[0]), fuse_static_type(f, rb->res[0])) ||
	    tm->dtype != ta->dtype)
		return;
	if (is_bmm_result(fuse_static_type(f, r2->res[0]), ta, tb)) {
		f->uses[mm->res[0]]--;
		fuse_set_op(f, r2, OP_ONNX_MatMul, 2, 0);
		r2->args[0] = fuse_value_arg(a);
		r2->args[1] = fuse_value_arg(b);
		return;
	}
	Dim *dims = ARENA_ARRAY(&f->m->arena, Dim, ta->rank);
	for (int32_t i = 0; i < ta->rank - 1; i++)
		dims[i] = ta->dims[i];
	dims[ta->rank - 1] = tb->dims[ta->rank - 1];
	val(f->m, mm->res[0])->type = type_tensor(&f->m->arena, (DType)ta->dtype, ta->rank, dims);
	f->uses[ra->res[0]]--;
	f->uses[rb->res[0]]--;
	mm->args[0] = fuse_value_arg(a);
	mm->args[1] = fuse_value_arg(b);
	f->edits++;                 /* mm rewritten in place: r2 itself is not */
}

/* Runs one rule on n (in graph g) and counts it for -stats when it fired:
 * n changed, or the rule rewrote a node (f->edits). */
#define RULE(name, call) do { \
		uint64_t fp_ = node_fingerprint(n); \
		uint32_t ed_ = f->edits; \
		call; \
		if (f->edits != ed_ || node_fingerprint(n) != fp_) \
			rewrite_count("fuse", name); \
	} while (0)

static Status fuse_graph(const GraphVisit *v, void *ctx)
{
	Fuse *f = ctx;
	for (Node *n = v->g->first; n; n = n->next) {
		if (n->domain == S_onnx && n->nres >= 1 && n->nargs >= 1 &&
		    (n->op == OP_ONNX_Conv || n->op == OP_ONNX_ConvTranspose ||
		     n->op == OP_ONNX_AveragePool || n->op == OP_ONNX_MaxPool))
			fuse_pad(f, n);
		if (n->domain != S_onnx || n->nres != 1)
			continue;
		OpId op = n->op;
		if (op == OP_ONNX_Add && n->nargs == 2)
			RULE("gemm", fuse_gemm(f, n));
		else if (op == OP_ONNX_ReduceMean && n->nargs >= 1)
			RULE("global_average_pool", fuse_global_pool(f, n));
		else if (op == OP_ONNX_BatchNormalization)
			RULE("conv_batchnorm", fuse_conv_bn(f, v->g, n));
		else if (op == OP_ONNX_Reshape && n->nargs == 2)
			RULE("linear_3d", fuse_flat_linear(f, n));
		if (n->op == op && op == OP_ONNX_Reshape && n->nargs == 2)
			RULE("batched_matmul", fuse_flat_bmm(f, n));
		if (n->op == op && op == OP_ONNX_Reshape && n->nargs == 2)
			RULE("lead_one_add", fuse_lead_one_add(f, v->g, n));
		if (n->op == op && op == OP_ONNX_Reshape && n->nargs == 2)
			RULE("flatten", fuse_flatten(f, n));
		if (n->op == op && (op == OP_ONNX_Add || op == OP_ONNX_Mul || op == OP_ONNX_Div) && n->nargs == 2)
			RULE("normalization", fuse_norm(f, v->g, n));
		if (n->op == op && op == OP_ONNX_Mul && n->nargs == 2)
			RULE("gelu", fuse_gelu(f, n));
		if ((n->op == OP_ONNX_Conv || n->op == OP_ONNX_ConvTranspose || n->op == OP_ONNX_Gemm) && n->nargs == 3)
			RULE("zero_bias", fuse_zero_bias(f, n));
		if (op == OP_ONNX_MatMul && n->nargs == 2)
			RULE("attention", fuse_attention(f, v->g, n));
		if (op == OP_ONNX_Transpose && n->nargs == 1)
			RULE("transpose_layout", fuse_unit_transpose(f, v->g, n));
	}
	return OK;
}
#undef RULE

Status pass_fuse(Module *m, const PassOptions *opt)
{
	Fuse f = { m, module_use_counts(m, WALK_PROGRAM), m->vals.n,
		   { m, opt->weights_dir ? opt->weights_dir : ".", NULL }, opt->opset, 0 };
	module_walk(m, WALK_PROGRAM, fuse_graph, &f);
	rt_weights_close(&f.weights);
	free(f.uses);
	return OK;
}
