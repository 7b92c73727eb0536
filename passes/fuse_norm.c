/* fuse_norm.c - normalizations written out op by op become one node.
 *
 *   Div(t, Sqrt(Add(ms, eps)))  or  Mul(t, Reciprocal(Sqrt(Add(ms, eps))))
 *       ms = mean_k(Pow(t, 2)) or mean_k(Mul(t, t)), eps a scalar constant
 *   with t = Sub(x, mean_k(x))   -> LayerNormalization(x, 1, axis=-k, epsilon=eps)
 *                                   (opset >= 17)
 *   otherwise (t itself)         -> RMSNormalization(t, 1, axis=-k, epsilon=eps)
 *                                   (opset >= 23)
 *   Mul(N(x, 1), w)              -> N(x, w)        N either of the two
 *   Add(LayerNormalization(x, w), b) -> LayerNormalization(x, w, b)
 *
 * mean_k is a ReduceMean with keepdims=1 over the last k dims (axes a
 * constant), or a GlobalAveragePool (dims 2..: what fuse makes of a
 * ReduceMean over them); both means of a LayerNormalization average the
 * same k dims.  The operands of Mul, Add and Sqrt's Add may come in either
 * order.  Legal only for f32 x (both ops compute in f32 by default:
 * stash_type 1, which would change f16 or f64 results), eps >= 0, and w, b
 * of x's dtype and shaped exactly like the normalized dims (k dims, equal
 * to x's last k): then Scale and B broadcast the way the Mul and Add did.
 * The 1 is a `const` of the normalized shape; when a Mul by w follows, it
 * is absorbed and dce removes it.
 *
 * Why they hold: LayerNormalization computes (x - mean)/sqrt(var + eps)
 * with var the mean of the squared deviation over dims axis.., which is the
 * pattern; RMSNormalization computes x/sqrt(mean(x^2) + eps) over the same
 * dims.  Each rewrite replaces the pattern's last node in place (result,
 * name, scope, location stay); the nodes it absorbed are left for dce. */
#include <math.h>
#include "fuse.h"

/* v = Sqrt(a), read only there: a; else VNONE. */
static ValueId sqrt_of(const Fuse *f, ValueId v)
{
	Node *s = match_op(f->m, v, OP_ONNX_Sqrt);
	return s && fuse_one_use(f, v) ? operand(s, 0) : VNONE;
}

/* v = Pow(t, 2) or Mul(t, t): t; else VNONE. */
static ValueId square_of(const Fuse *f, ValueId v)
{
	Node *p = match_op(f->m, v, OP_ONNX_Pow);
	if (p && fuse_scalar_near(f, operand(p, 1), 2.0))
		return operand(p, 0);
	Node *m = match_op(f->m, v, OP_ONNX_Mul);
	return m && operand(m, 0) == operand(m, 1) ? operand(m, 0) : VNONE;
}

/* v = mean_k(x) of x of rank `rank`: k, and x into *x; else 0. */
static int mean_of(const Fuse *f, ValueId v, int32_t rank, ValueId *x)
{
	Node *m = def_of(f->m, v);
	if (!m || m->domain != S_onnx || m->nres != 1 || m->nargs < 1)
		return 0;
	*x = operand(m, 0);
	return fuse_trailing_mean(f, m, rank);
}

/* The core t / sqrt(mean_k(t^2) + eps) at n: t, k and eps. */
typedef struct NormCore { ValueId t; int k; double eps; } NormCore;

static int match_core(const Fuse *f, const Node *n, int32_t rank, NormCore *c)
{
	ValueId a = VNONE;
	c->t = operand(n, 0);
	if (n->op == OP_ONNX_Div)
		a = sqrt_of(f, operand(n, 1));
	for (uint32_t side = 0; n->op == OP_ONNX_Mul && side < 2 && !a; side++) {
		Node *r = match_operand(f->m, n, side, OP_ONNX_Reciprocal);
		if (r && fuse_one_use(f, r->res[0])) {
			a = sqrt_of(f, operand(r, 0));
			c->t = operand(n, 1 - side);
		}
	}
	Node *add = match_op(f->m, a, OP_ONNX_Add);
	if (!add || !fuse_one_use(f, a))
		return 0;
	for (uint32_t side = 0; side < 2; side++) {
		ValueId ms = operand(add, side), sq = VNONE;
		if (!fuse_scalar(f, operand(add, 1 - side), &c->eps) || !(c->eps >= 0) || !fuse_one_use(f, ms))
			continue;
		c->k = mean_of(f, ms, rank, &sq);
		if (c->k && fuse_one_use(f, sq) && square_of(f, sq) == c->t)
			return 1;
	}
	return 0;
}

int fuse_rms_form(const Fuse *f, const Node *n, int32_t rank, ValueId *t, int *k, double *eps)
{
	NormCore c;
	if ((n->op != OP_ONNX_Div && n->op != OP_ONNX_Mul) || n->domain != S_onnx || !match_core(f, n, rank, &c))
		return 0;
	*t = c.t, *k = c.k, *eps = c.eps;
	return 1;
}

/* x's dtype is f32, the result's type is x's, and the normalized dims are
 * static. */
static int norm_types_ok(const Fuse *f, ValueId x, const Node *n, int k)
{
	const Type *tx = val(f->m, x)->type, *ty = val(f->m, n->res[0])->type;
	if (!tx || tx->kind != TY_TENSOR || tx->dtype != DT_F32 || tx->rank < k || !type_equal(tx, ty))
		return 0;
	for (int32_t i = tx->rank - k; i < tx->rank; i++)
		if (tx->dims[i].sym || tx->dims[i].v < 0)
			return 0;
	return 1;
}

/* w has x's dtype and exactly the shape of x's last k dims. */
static int norm_param_ok(const Fuse *f, ValueId w, ValueId x, int k)
{
	const Type *tw = fuse_static_type(f, w), *tx = val(f->m, x)->type;
	if (!tw || !tx || tx->kind != TY_TENSOR || tx->rank < k || tw->dtype != tx->dtype || tw->rank != k)
		return 0;
	for (int32_t i = 0; i < k; i++)
		if (tw->dims[i].v != tx->dims[tx->rank - k + i].v || tx->dims[tx->rank - k + i].sym)
			return 0;
	return 1;
}

/* n becomes op(x, scale[, bias], axis = -k, epsilon = eps). */
static void set_norm(Fuse *f, Node *n, OpId op, ValueId x, ValueId scale, ValueId bias, int k, double eps)
{
	fuse_set_op(f, n, op, bias ? 3 : 2, 2);
	n->args[0] = fuse_value_arg(x);
	n->args[1] = fuse_value_arg(scale);
	if (bias)
		n->args[2] = fuse_value_arg(bias);
	n->kw[0] = (Named){ S_axis, { .kind = A_INT, .u.i = -k } };
	n->kw[1] = (Named){ S_epsilon, { .kind = A_FLOAT, .u.f = eps } };
}

/* A `const` of ones shaped like x's last k dims. */
static ValueId ones_like_tail(Fuse *f, Graph *g, const Node *n, ValueId x, int k)
{
	const Type *tx = val(f->m, x)->type;
	int64_t shape[16];
	for (int i = 0; i < k; i++)
		shape[i] = tx->dims[tx->rank - k + i].v;
	RTensor *r = rt_new(n->loc, DT_F32, k, shape);
	if (!r)
		return VNONE;
	for (int64_t i = 0; i < r->numel; i++)
		rt_set_f(r, i, 1.0);
	ValueId v = fuse_new_const(f, g, r, n->res[0], "_scale");
	rt_free(r);
	return v;
}

static void fuse_norm_core(Fuse *f, Graph *g, Node *n)
{
	const Type *t = val(f->m, n->res[0])->type;
	NormCore c;
	if (!t || t->kind != TY_TENSOR || t->rank < 1 || t->rank > 16 || !match_core(f, n, t->rank, &c))
		return;
	Node *sub = match_op(f->m, c.t, OP_ONNX_Sub);
	ValueId x = sub ? operand(sub, 0) : c.t, mx = VNONE;
	int ln = sub && fuse_one_use(f, operand(sub, 1)) && mean_of(f, operand(sub, 1), t->rank, &mx) == c.k && mx == x;
	if ((ln ? f->opset < 17 : f->opset < 23) || !norm_types_ok(f, x, n, c.k))
		return;
	ValueId ones = ones_like_tail(f, g, n, x, c.k);
	if (ones)
		set_norm(f, n, ln ? OP_ONNX_LayerNormalization : OP_ONNX_RMSNormalization, x, ones, VNONE, c.k, c.eps);
}

/* n = Mul(N(x, 1), w) or Add(LayerNormalization(x, w), b). */
static void fuse_norm_affine(Fuse *f, Node *n)
{
	for (uint32_t side = 0; side < 2; side++) {
		Node *nn = def_of(f->m, operand(n, side));
		ValueId p = operand(n, 1 - side);
		if (!nn || nn->domain != S_onnx || nn->nres != 1 || !fuse_one_use(f, nn->res[0]) || operand(nn, 2))
			continue;
		int mul = n->op == OP_ONNX_Mul && match_const(f->m, operand(nn, 1), 1.0) &&
			  (nn->op == OP_ONNX_LayerNormalization || nn->op == OP_ONNX_RMSNormalization);
		int add = n->op == OP_ONNX_Add && nn->op == OP_ONNX_LayerNormalization;
		const Named *ax = node_kw(nn, S_axis);
		ValueId x = operand(nn, 0);
		if ((!mul && !add) || !ax || ax->val.kind != A_INT || ax->val.u.i >= 0 || !norm_param_ok(f, p, x, (int)-ax->val.u.i))
			continue;
		f->uses[nn->res[0]]--;
		set_norm(f, n, nn->op, x, mul ? p : operand(nn, 1), mul ? VNONE : p, (int)-ax->val.u.i,
			 fuse_attr_float(nn, S_epsilon, 1e-5));
		return;
	}
}

void fuse_norm(Fuse *f, Graph *g, Node *n)
{
	if (n->op == OP_ONNX_Div || n->op == OP_ONNX_Mul)
		fuse_norm_core(f, g, n);
	if (n->op == OP_ONNX_Mul || n->op == OP_ONNX_Add)
		fuse_norm_affine(f, n);
}
