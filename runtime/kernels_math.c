/* kernels_math.c - reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
 * ReduceProd and the L1/L2/log-sum family), ArgMax, ArgMin, CumSum and
 * MatMul.
 *
 * Accumulation is in double for floats and in wrapping int64 for integers,
 * one accumulator per output element.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

static int numeric(DType t)
{
	return (dtype_is_float(t) || dtype_is_int(t)) && t != DT_U64 && t != DT_BOOL;
}

/* ---- reductions ------------------------------------------------------------- */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_SUMSQ, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP } RKind;

static const struct { OpId op; RKind kind; } reduce_ops[] = {
	{ OP_ONNX_ReduceSum, R_SUM }, { OP_ONNX_ReduceMean, R_MEAN }, { OP_ONNX_ReduceMax, R_MAX },
	{ OP_ONNX_ReduceMin, R_MIN }, { OP_ONNX_ReduceProd, R_PROD }, { OP_ONNX_ReduceSumSquare, R_SUMSQ },
	{ OP_ONNX_ReduceL1, R_L1 }, { OP_ONNX_ReduceL2, R_L2 }, { OP_ONNX_ReduceLogSum, R_LOGSUM },
	{ OP_ONNX_ReduceLogSumExp, R_LOGSUMEXP },
};

static int reduce_kind(OpId op)
{
	for (size_t i = 0; i < sizeof reduce_ops / sizeof *reduce_ops; i++)
		if (reduce_ops[i].op == op)
			return (int)reduce_ops[i].kind;
	return -1;
}

/* The value of an empty reduction, and the starting accumulator. */
static double f_identity(RKind r)
{
	return r == R_MAX ? -INFINITY : r == R_MIN ? INFINITY : r == R_PROD ? 1.0 : 0.0;
}

static int64_t i_identity(RKind r, DType t)
{
	int64_t lo = t == DT_I8 ? INT8_MIN : t == DT_I16 ? INT16_MIN : t == DT_I32 ? INT32_MIN : t == DT_I64 ? INT64_MIN : 0;
	int64_t hi = t == DT_I8 ? INT8_MAX : t == DT_U8 ? UINT8_MAX : t == DT_I16 ? INT16_MAX : t == DT_U16 ? UINT16_MAX :
		     t == DT_I32 ? INT32_MAX : t == DT_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
	return r == R_MAX ? lo : r == R_MIN ? hi : r == R_PROD ? 1 : 0;
}

static double f_step(RKind r, double acc, double x)
{
	switch (r) {
	case R_MAX: return isnan(x) || x > acc ? x : acc;
	case R_MIN: return isnan(x) || x < acc ? x : acc;
	case R_PROD: return acc * x;
	case R_SUMSQ: case R_L2: return acc + x * x;
	case R_L1: return acc + fabs(x);
	case R_LOGSUMEXP: return acc + exp(x);
	default: return acc + x;
	}
}

static int64_t i_step(RKind r, int64_t acc, int64_t x)
{
	switch (r) {
	case R_MAX: return x > acc ? x : acc;
	case R_MIN: return x < acc ? x : acc;
	case R_PROD: return (int64_t)((uint64_t)acc * (uint64_t)x);
	case R_SUMSQ: case R_L2: return (int64_t)((uint64_t)acc + (uint64_t)x * (uint64_t)x);
	case R_L1: return (int64_t)((uint64_t)acc + (uint64_t)(x < 0 ? -(uint64_t)x : (uint64_t)x));
	default: return (int64_t)((uint64_t)acc + (uint64_t)x);
	}
}

static double f_finish(RKind r, double acc, int64_t count)
{
	switch (r) {
	case R_MEAN: return acc / (double)count;
	case R_L2: return sqrt(acc);
	case R_LOGSUM: case R_LOGSUMEXP: return log(acc);
	default: return acc;
	}
}

/* Marks the reduced axes; returns 0 when the node reduces nothing. */
static Status reduce_axes(const KCtx *k, RTensor *const *in, uint32_t nin, uint8_t *mark, int *noop)
{
	int64_t *ax, n;
	const RTensor *x = in[0];
	if ((nin > 1 && in[1] ? rt_input_ints(k, in[1], &ax, &n) : rt_attr_ints(k, "axes", &ax, &n)) != OK)
		return FAILED;
	*noop = n <= 0 && rt_attr_int(k, "noop_with_empty_axes", 0);
	Status s = OK;
	for (int32_t d = 0; d < x->rank; d++)
		mark[d] = n <= 0;
	for (int64_t i = 0; s == OK && i < n; i++) {
		int32_t a;
		if ((s = rt_axis(k, ax[i], x->rank, &a)) == OK)
			mark[a] = 1;
	}
	free(ax);
	return s;
}

static void reduce_into(RKind r, const RTensor *x, RTensor *acc_shape, RTensor *y, int64_t count)
{
	int is_f = dtype_is_float(x->dtype) || r == R_MEAN || r == R_L2 || r >= R_LOGSUM;
	double *fa = xcalloc((size_t)y->numel + 1, sizeof *fa);
	int64_t *ia = xcalloc((size_t)y->numel + 1, sizeof *ia);
	for (int64_t i = 0; i < y->numel; i++) {
		fa[i] = f_identity(r);
		ia[i] = i_identity(r, x->dtype);
	}
	RtIter it;
	rt_iter_init(&it, x->rank, x->shape, 1, &acc_shape);
	for (int64_t i = 0; i < x->numel; i++, rt_iter_next(&it)) {
		if (is_f)
			fa[it.off[0]] = f_step(r, fa[it.off[0]], rt_get_f(x, i));
		else
			ia[it.off[0]] = i_step(r, ia[it.off[0]], rt_get_i(x, i));
	}
	for (int64_t i = 0; i < y->numel; i++) {
		if (is_f)
			rt_set_f(y, i, f_finish(r, fa[i], count));
		else
			rt_set_i(y, i, ia[i]);
	}
	free(fa);
	free(ia);
}

static Status k_reduce(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	uint8_t mark[RT_MAX_RANK];
	int noop;
	if (nin < 1 || !in[0])
		return rt_fail(k, "missing input");
	const RTensor *x = in[0];
	if (!numeric(x->dtype))
		return rt_unsupported(k, x);
	if (reduce_axes(k, in, nin, mark, &noop) != OK)
		return FAILED;
	if (noop)
		return (*out = rt_copy(k->n->loc, x)) ? OK : FAILED;
	RTensor kept = { .dtype = x->dtype, .rank = x->rank };
	int64_t shape[RT_MAX_RANK], count = 1;
	int32_t r = 0, keep = (int32_t)rt_attr_int(k, "keepdims", 1);
	for (int32_t d = 0; d < x->rank; d++) {
		kept.shape[d] = mark[d] ? 1 : x->shape[d];
		count *= mark[d] ? x->shape[d] : 1;
		if (!mark[d] || keep)
			shape[r++] = kept.shape[d];
	}
	if (!(*out = rt_new(k->n->loc, x->dtype, r, shape)))
		return FAILED;
	reduce_into((RKind)reduce_kind(k->n->op), x, &kept, *out, count);
	return OK;
}

/* ---- ArgMax, ArgMin, CumSum: along one axis ------------------------------------- */

static void axis_split(const RTensor *x, int32_t axis, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int32_t d = 0; d < x->rank; d++)
		*(d < axis ? outer : inner) *= d == axis ? 1 : x->shape[d];
}

/* Compared as doubles for floats, int64 for integers; ties keep the first
 * index unless select_last_index. */
static int better(const RTensor *x, int64_t a, int64_t b, int want_max, int last)
{
	int c;
	if (dtype_is_float(x->dtype)) {
		double u = rt_get_f(x, a), v = rt_get_f(x, b);
		c = u > v ? 1 : u < v ? -1 : 0;
	} else {
		int64_t u = rt_get_i(x, a), v = rt_get_i(x, b);
		c = u > v ? 1 : u < v ? -1 : 0;
	}
	c = want_max ? c : -c;
	return c > 0 || (c == 0 && last);
}

static Status k_argext(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis;
	int64_t outer, inner, shape[RT_MAX_RANK];
	if (nin < 1 || !in[0])
		return rt_fail(k, "missing input");
	const RTensor *x = in[0];
	if (!numeric(x->dtype))
		return rt_unsupported(k, x);
	if (rt_axis(k, rt_attr_int(k, "axis", 0), x->rank, &axis) != OK)
		return FAILED;
	if (x->shape[axis] == 0)
		return rt_fail(k, "cannot take the index of an extreme over an empty axis");
	int keep = (int)rt_attr_int(k, "keepdims", 1), last = (int)rt_attr_int(k, "select_last_index", 0);
	int32_t r = 0;
	for (int32_t d = 0; d < x->rank; d++)
		if (d != axis || keep)
			shape[r++] = d == axis ? 1 : x->shape[d];
	if (!(*out = rt_new(k->n->loc, DT_I64, r, shape)))
		return FAILED;
	axis_split(x, axis, &outer, &inner);
	int64_t dim = x->shape[axis];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t best = 0, base = o * dim * inner + i;
			for (int64_t j = 1; j < dim; j++)
				if (better(x, base + j * inner, base + best * inner, k->n->op == OP_ONNX_ArgMax, last))
					best = j;
			rt_set_i(*out, o * inner + i, best);
		}
	return OK;
}

static Status k_cumsum(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis;
	int64_t outer, inner;
	if (nin < 2 || !in[0] || !in[1])
		return rt_fail(k, "expects two inputs");
	const RTensor *x = in[0];
	if (!numeric(x->dtype))
		return rt_unsupported(k, x);
	if ((in[1]->dtype != DT_I64 && in[1]->dtype != DT_I32) || in[1]->numel != 1)
		return rt_fail(k, "axis must be one i32 or i64");
	if (rt_axis(k, rt_get_i(in[1], 0), x->rank, &axis) != OK || !(*out = rt_new(k->n->loc, x->dtype, x->rank, x->shape)))
		return FAILED;
	int excl = rt_attr_int(k, "exclusive", 0) != 0, rev = rt_attr_int(k, "reverse", 0) != 0;
	axis_split(x, axis, &outer, &inner);
	int64_t dim = x->shape[axis];
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double fs = 0;
			uint64_t is = 0;
			for (int64_t t = 0; t < dim; t++) {
				int64_t at = o * dim * inner + (rev ? dim - 1 - t : t) * inner + i;
				double fv = dtype_is_float(x->dtype) ? rt_get_f(x, at) : 0;
				uint64_t iv = dtype_is_float(x->dtype) ? 0 : (uint64_t)rt_get_i(x, at);
				if (!excl)
					fs += fv, is += iv;
				if (dtype_is_float(x->dtype))
					rt_set_f(*out, at, fs);
				else
					rt_set_i(*out, at, (int64_t)is);
				if (excl)
					fs += fv, is += iv;
			}
		}
	return OK;
}

/* ---- MatMul -------------------------------------------------------------------- */

/* numpy's matmul: a 1-D operand gains a dim of 1 (dropped from the result);
 * the dims before the last two broadcast. */
typedef struct MM { int64_t m, k, n; int32_t brank; int64_t bshape[RT_MAX_RANK]; RTensor ab, bb; } MM;

static Status mm_plan(const KCtx *k, const RTensor *a, const RTensor *b, MM *p, int64_t *shape, int32_t *rank)
{
	if (a->rank < 1 || b->rank < 1)
		return rt_fail(k, "operands must have rank 1 or more");
	p->m = a->rank > 1 ? a->shape[a->rank - 2] : 1;
	p->k = a->shape[a->rank - 1];
	p->n = b->rank > 1 ? b->shape[b->rank - 1] : 1;
	if ((b->rank > 1 ? b->shape[b->rank - 2] : b->shape[0]) != p->k)
		return rt_fail(k, "inner dims differ: %lld and %lld", (long long)p->k,
			(long long)(b->rank > 1 ? b->shape[b->rank - 2] : b->shape[0]));
	memset(&p->ab, 0, sizeof p->ab);
	memset(&p->bb, 0, sizeof p->bb);
	p->ab.rank = a->rank > 2 ? a->rank - 2 : 0;
	p->bb.rank = b->rank > 2 ? b->rank - 2 : 0;
	memcpy(p->ab.shape, a->shape, (size_t)p->ab.rank * sizeof *a->shape);
	memcpy(p->bb.shape, b->shape, (size_t)p->bb.rank * sizeof *b->shape);
	RTensor *both[2] = { &p->ab, &p->bb };
	if (rt_broadcast(k->n->loc, k->op, 2, both, &p->brank, p->bshape) != OK)
		return FAILED;
	*rank = p->brank;
	memcpy(shape, p->bshape, (size_t)p->brank * sizeof *shape);
	if (a->rank > 1)
		shape[(*rank)++] = p->m;
	if (b->rank > 1)
		shape[(*rank)++] = p->n;
	return OK;
}

/* Floats: row t of b is decoded once and added into every row of the
 * block's result, reading b in its own order; each sum still runs over t
 * in order, so the values are those of one dot product at a time. */
static void mm_block_f(const MM *p, const RTensor *a, int64_t ao, const RTensor *b, int64_t bo, RTensor *c, int64_t co)
{
	double *acc = xcalloc((size_t)(p->m * p->n) + 1, sizeof *acc);
	double *row = xmalloc(((size_t)p->n + 1) * sizeof *row);
	for (int64_t t = 0; t < p->k; t++) {
		for (int64_t j = 0; j < p->n; j++)
			row[j] = rt_get_f(b, bo + t * p->n + j);
		for (int64_t i = 0; i < p->m; i++) {
			double x = rt_get_f(a, ao + i * p->k + t), *r = acc + i * p->n;
			for (int64_t j = 0; j < p->n; j++)
				r[j] += x * row[j];
		}
	}
	for (int64_t i = 0; i < p->m * p->n; i++)
		rt_set_f(c, co + i, acc[i]);
	free(acc);
	free(row);
}

static void mm_block(const MM *p, const RTensor *a, int64_t ao, const RTensor *b, int64_t bo, RTensor *c, int64_t co)
{
	if (dtype_is_float(a->dtype)) {
		mm_block_f(p, a, ao, b, bo, c, co);
		return;
	}
	for (int64_t i = 0; i < p->m; i++)
		for (int64_t j = 0; j < p->n; j++) {
			uint64_t is = 0;
			for (int64_t t = 0; t < p->k; t++)
				is += (uint64_t)rt_get_i(a, ao + i * p->k + t) * (uint64_t)rt_get_i(b, bo + t * p->n + j);
			rt_set_i(c, co + i * p->n + j, (int64_t)is);
		}
}

static Status k_matmul(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	MM p;
	int64_t shape[RT_MAX_RANK + 2];
	int32_t rank = 0;
	if (nin != 2 || !in[0] || !in[1])
		return rt_fail(k, "expects two inputs");
	const RTensor *a = in[0], *b = in[1];
	if (!numeric(a->dtype) || a->dtype != b->dtype)
		return numeric(a->dtype) ? rt_fail(k, "operands differ in dtype: %s and %s", dtype_name(a->dtype),
			dtype_name(b->dtype)) : rt_unsupported(k, a);
	if (mm_plan(k, a, b, &p, shape, &rank) != OK || !(*out = rt_new(k->n->loc, a->dtype, rank, shape)))
		return FAILED;
	RTensor *both[2] = { &p.ab, &p.bb };
	RtIter it;
	rt_iter_init(&it, p.brank, p.bshape, 2, both);
	int64_t nb = rt_numel(p.brank, p.bshape, 0);
	for (int64_t i = 0; i < nb; i++, rt_iter_next(&it))
		mm_block(&p, a, it.off[0] * p.m * p.k, b, it.off[1] * p.k * p.n, *out, i * p.m * p.n);
	return OK;
}

Kernel rt_math_kernel(OpId op)
{
	if (reduce_kind(op) >= 0)
		return k_reduce;
	switch (op) {
	case OP_ONNX_ArgMax: case OP_ONNX_ArgMin: return k_argext;
	case OP_ONNX_CumSum: return k_cumsum;
	case OP_ONNX_MatMul: return k_matmul;
	default: return NULL;
	}
}
