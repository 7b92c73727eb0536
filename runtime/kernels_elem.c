/* kernels_elem.c - elementwise kernels: unary math, broadcasting binary
 * arithmetic and logic, comparisons, variadic Min/Max/Sum/Mean, Where and
 * Cast.
 *
 * Floats are computed in double and rounded once to the output dtype (f16
 * and bf16 through f32); integers in int64 and wrapped to the output width,
 * so an i8 Add wraps as it does in numpy; u64 shares the int64 bits and
 * has its own forms where the sign matters (division, order).  The dtypes
 * without a numeric reading (str, float8, 4-bit) are refused with a
 * diagnostic, and so is u64 outside binary and variadic ops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

static int numeric(DType t)
{
	return (dtype_is_float(t) || dtype_is_int(t)) && t != DT_U64;
}

/* ---- unary ------------------------------------------------------------------ */

typedef struct Unary {
	OpId op;
	double (*f)(double);
	int64_t (*i)(int64_t);      /* NULL: floats only */
} Unary;

static double f_neg(double x) { return -x; }
static double f_recip(double x) { return 1.0 / x; }
static double f_relu(double x) { return x > 0 ? x : isnan(x) ? x : 0.0; }
static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
static double f_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }
static double f_softsign(double x) { return x / (1.0 + fabs(x)); }
static double f_not(double x) { return x == 0; }
static int64_t i_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static int64_t i_relu(int64_t x) { return x > 0 ? x : 0; }
static int64_t i_sign(int64_t x) { return (x > 0) - (x < 0); }
static int64_t i_not(int64_t x) { return x == 0; }

static const Unary unary_ops[] = {
	{ OP_ONNX_Neg, f_neg, i_neg }, { OP_ONNX_Abs, fabs, i_abs }, { OP_ONNX_Relu, f_relu, i_relu },
	{ OP_ONNX_Sign, f_sign, i_sign }, { OP_ONNX_Not, f_not, i_not },
	{ OP_ONNX_Sqrt, sqrt, NULL }, { OP_ONNX_Exp, exp, NULL }, { OP_ONNX_Log, log, NULL },
	{ OP_ONNX_Reciprocal, f_recip, NULL }, { OP_ONNX_Sigmoid, f_sigmoid, NULL }, { OP_ONNX_Tanh, tanh, NULL },
	{ OP_ONNX_Erf, erf, NULL }, { OP_ONNX_Floor, floor, NULL }, { OP_ONNX_Ceil, ceil, NULL },
	{ OP_ONNX_Round, nearbyint, NULL }, { OP_ONNX_Sin, sin, NULL }, { OP_ONNX_Cos, cos, NULL },
	{ OP_ONNX_Tan, tan, NULL }, { OP_ONNX_Asin, asin, NULL }, { OP_ONNX_Acos, acos, NULL },
	{ OP_ONNX_Atan, atan, NULL }, { OP_ONNX_Sinh, sinh, NULL }, { OP_ONNX_Cosh, cosh, NULL },
	{ OP_ONNX_Asinh, asinh, NULL }, { OP_ONNX_Acosh, acosh, NULL }, { OP_ONNX_Atanh, atanh, NULL },
	{ OP_ONNX_Softplus, f_softplus, NULL }, { OP_ONNX_Softsign, f_softsign, NULL },
};

static const Unary *find_unary(OpId op)
{
	for (size_t i = 0; i < sizeof unary_ops / sizeof *unary_ops; i++)
		if (unary_ops[i].op == op)
			return &unary_ops[i];
	return NULL;
}

static Status k_unary(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nin, (void)nout;
	const Unary *u = find_unary(k->n->op);
	const RTensor *x = in[0];
	if (!x)
		return rt_fail(k, "missing input");
	int is_bool_op = k->n->op == OP_ONNX_Not;
	if (!numeric(x->dtype) || (is_bool_op != (x->dtype == DT_BOOL)) || (!u->i && !dtype_is_float(x->dtype)))
		return rt_unsupported(k, x);
	RTensor *y = rt_new(k->n->loc, x->dtype, x->rank, x->shape);
	if (!y)
		return FAILED;
	for (int64_t i = 0; i < x->numel; i++) {
		if (dtype_is_float(x->dtype))
			rt_set_f(y, i, u->f(rt_get_f(x, i)));
		else
			rt_set_i(y, i, u->i(rt_get_i(x, i)));
	}
	out[0] = y;
	return OK;
}

/* ---- unary with attributes ---------------------------------------------------- */

typedef struct ParamUnary {
	OpId op;
	const char *a, *b;          /* attribute names, NULL if unused */
	double da, db;              /* their defaults */
	double (*f)(double x, double a, double b);
} ParamUnary;

static double f_elu(double x, double a, double b) { (void)b; return x < 0 ? a * (exp(x) - 1) : x; }
static double f_leaky(double x, double a, double b) { (void)b; return x < 0 ? a * x : x; }
static double f_selu(double x, double a, double g) { return x <= 0 ? g * (a * exp(x) - a) : g * x; }
static double f_hardsig(double x, double a, double b) { return fmax(0, fmin(1, a * x + b)); }
static double f_thresh(double x, double a, double b) { (void)b; return x > a ? x : 0; }
static double f_celu(double x, double a, double b) { (void)b; return fmax(0, x) + fmin(0, a * (exp(x / a) - 1)); }

static const ParamUnary param_ops[] = {
	{ OP_ONNX_Elu, "alpha", NULL, 1.0, 0, f_elu },
	{ OP_ONNX_LeakyRelu, "alpha", NULL, 0.01, 0, f_leaky },
	{ OP_ONNX_Selu, "alpha", "gamma", 1.67326319217681884765625, 1.05070102214813232421875, f_selu },
	{ OP_ONNX_HardSigmoid, "alpha", "beta", 0.2, 0.5, f_hardsig },
	{ OP_ONNX_ThresholdedRelu, "alpha", NULL, 1.0, 0, f_thresh },
	{ OP_ONNX_Celu, "alpha", NULL, 1.0, 0, f_celu },
};

static const ParamUnary *find_param(OpId op)
{
	for (size_t i = 0; i < sizeof param_ops / sizeof *param_ops; i++)
		if (param_ops[i].op == op)
			return &param_ops[i];
	return NULL;
}

static Status k_param_unary(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	const ParamUnary *u = find_param(k->n->op);
	if (nin < 1 || !in[0])
		return rt_fail(k, "missing input");
	if (!dtype_is_float(in[0]->dtype))
		return rt_unsupported(k, in[0]);
	double a = rt_attr_float(k, u->a, u->da), b = u->b ? rt_attr_float(k, u->b, u->db) : 0;
	if (!(*out = rt_new(k->n->loc, in[0]->dtype, in[0]->rank, in[0]->shape)))
		return FAILED;
	for (int64_t i = 0; i < in[0]->numel; i++)
		rt_set_f(*out, i, u->f(rt_get_f(in[0], i), a, b));
	return OK;
}

/* IsNaN and IsInf: floats in, bool out. */
static Status k_isclass(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (nin < 1 || !in[0])
		return rt_fail(k, "missing input");
	if (!dtype_is_float(in[0]->dtype))
		return rt_unsupported(k, in[0]);
	int neg = (int)rt_attr_int(k, "detect_negative", 1), pos = (int)rt_attr_int(k, "detect_positive", 1);
	if (!(*out = rt_new(k->n->loc, DT_BOOL, in[0]->rank, in[0]->shape)))
		return FAILED;
	for (int64_t i = 0; i < in[0]->numel; i++) {
		double x = rt_get_f(in[0], i);
		int r = k->n->op == OP_ONNX_IsNaN ? isnan(x) : isinf(x) && (x > 0 ? pos : neg);
		rt_set_i(*out, i, r != 0);
	}
	return OK;
}

/* Clip: bounds from inputs (opset 11 on, may be omitted) or attributes. */
static Status k_clip(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (nin < 1 || !in[0])
		return rt_fail(k, "missing input");
	const RTensor *x = in[0], *lo = nin > 1 ? in[1] : NULL, *hi = nin > 2 ? in[2] : NULL;
	if (!numeric(x->dtype) || x->dtype == DT_BOOL)
		return rt_unsupported(k, x);
	if ((lo && (lo->numel != 1 || lo->dtype != x->dtype)) || (hi && (hi->numel != 1 || hi->dtype != x->dtype)))
		return rt_fail(k, "min and max must be scalars of the input's dtype");
	if (!(*out = rt_new(k->n->loc, x->dtype, x->rank, x->shape)))
		return FAILED;
	int is_f = dtype_is_float(x->dtype);
	double flo = lo ? rt_get_f(lo, 0) : rt_attr_float(k, "min", -INFINITY);
	double fhi = hi ? rt_get_f(hi, 0) : rt_attr_float(k, "max", INFINITY);
	int64_t ilo = lo ? rt_get_i(lo, 0) : INT64_MIN, ihi = hi ? rt_get_i(hi, 0) : INT64_MAX;
	for (int64_t i = 0; i < x->numel; i++) {
		double v = is_f ? rt_get_f(x, i) : 0;
		if (is_f)
			rt_set_f(*out, i, isnan(v) ? v : fmin(fmax(v, flo), fhi));
		else {
			int64_t v = rt_get_i(x, i);
			rt_set_i(*out, i, v < ilo ? (ilo > ihi ? ihi : ilo) : v > ihi ? ihi : v);
		}
	}
	return OK;
}

/* ---- binary ------------------------------------------------------------------ */

typedef enum { B_ARITH, B_CMP, B_LOGIC } BinKind;

/* Integer forms return 0 on an error (division by zero).  The u64 form
 * is NULL where the int64 one gives the same bits. */
typedef struct Binary {
	OpId op;
	BinKind kind;
	double (*f)(double, double);
	int (*i)(int64_t, int64_t, int64_t *);
	int (*u)(uint64_t, uint64_t, uint64_t *);
} Binary;

static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static double f_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double f_eq(double a, double b) { return a == b; }
static double f_lt(double a, double b) { return a < b; }
static double f_gt(double a, double b) { return a > b; }
static double f_le(double a, double b) { return a <= b; }
static double f_ge(double a, double b) { return a >= b; }
static double f_and(double a, double b) { return a != 0 && b != 0; }
static double f_or(double a, double b) { return a != 0 || b != 0; }
static double f_xor(double a, double b) { return (a != 0) != (b != 0); }

static int i_add(int64_t a, int64_t b, int64_t *r) { *r = (int64_t)((uint64_t)a + (uint64_t)b); return 1; }
static int i_sub(int64_t a, int64_t b, int64_t *r) { *r = (int64_t)((uint64_t)a - (uint64_t)b); return 1; }
static int i_mul(int64_t a, int64_t b, int64_t *r) { *r = (int64_t)((uint64_t)a * (uint64_t)b); return 1; }
static int i_min(int64_t a, int64_t b, int64_t *r) { *r = a < b ? a : b; return 1; }
static int i_max(int64_t a, int64_t b, int64_t *r) { *r = a > b ? a : b; return 1; }
static int i_eq(int64_t a, int64_t b, int64_t *r) { *r = a == b; return 1; }
static int i_lt(int64_t a, int64_t b, int64_t *r) { *r = a < b; return 1; }
static int i_gt(int64_t a, int64_t b, int64_t *r) { *r = a > b; return 1; }
static int i_le(int64_t a, int64_t b, int64_t *r) { *r = a <= b; return 1; }
static int i_ge(int64_t a, int64_t b, int64_t *r) { *r = a >= b; return 1; }
static int i_and(int64_t a, int64_t b, int64_t *r) { *r = a && b; return 1; }
static int i_or(int64_t a, int64_t b, int64_t *r) { *r = a || b; return 1; }
static int i_xor(int64_t a, int64_t b, int64_t *r) { *r = !a != !b; return 1; }

/* C division truncates, as ONNX's integer Div does; INT64_MIN / -1 wraps. */
static int i_div(int64_t a, int64_t b, int64_t *r)
{
	if (b == 0)
		return 0;
	*r = b == -1 ? i_neg(a) : a / b;
	return 1;
}

/* Mod with fmod = 0: the sign of the divisor, as Python's %. */
static int i_mod(int64_t a, int64_t b, int64_t *r)
{
	if (b == 0)
		return 0;
	int64_t m = b == -1 ? 0 : a % b;
	*r = m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
	return 1;
}

static int i_fmod(int64_t a, int64_t b, int64_t *r)
{
	if (b == 0)
		return 0;
	*r = b == -1 ? 0 : a % b;
	return 1;
}

static int u_div(uint64_t a, uint64_t b, uint64_t *r) { return b ? (*r = a / b, 1) : 0; }
static int u_mod(uint64_t a, uint64_t b, uint64_t *r) { return b ? (*r = a % b, 1) : 0; }
static int u_min(uint64_t a, uint64_t b, uint64_t *r) { *r = a < b ? a : b; return 1; }
static int u_max(uint64_t a, uint64_t b, uint64_t *r) { *r = a > b ? a : b; return 1; }
static int u_lt(uint64_t a, uint64_t b, uint64_t *r) { *r = a < b; return 1; }
static int u_gt(uint64_t a, uint64_t b, uint64_t *r) { *r = a > b; return 1; }
static int u_le(uint64_t a, uint64_t b, uint64_t *r) { *r = a <= b; return 1; }
static int u_ge(uint64_t a, uint64_t b, uint64_t *r) { *r = a >= b; return 1; }

static double f_mod(double a, double b)
{
	double m = fmod(a, b);
	return m != 0 && ((m < 0) != (b < 0)) ? m + b : m;
}

static const Binary binary_ops[] = {
	{ OP_ONNX_Add, B_ARITH, f_add, i_add, NULL }, { OP_ONNX_Sub, B_ARITH, f_sub, i_sub, NULL },
	{ OP_ONNX_Mul, B_ARITH, f_mul, i_mul, NULL }, { OP_ONNX_Div, B_ARITH, f_div, i_div, u_div },
	{ OP_ONNX_Mod, B_ARITH, f_mod, i_mod, u_mod }, { OP_ONNX_Min, B_ARITH, f_min, i_min, u_min },
	{ OP_ONNX_Max, B_ARITH, f_max, i_max, u_max }, { OP_ONNX_Sum, B_ARITH, f_add, i_add, NULL },
	{ OP_ONNX_Mean, B_ARITH, f_add, i_add, NULL },
	{ OP_ONNX_Equal, B_CMP, f_eq, i_eq, NULL }, { OP_ONNX_Less, B_CMP, f_lt, i_lt, u_lt },
	{ OP_ONNX_Greater, B_CMP, f_gt, i_gt, u_gt }, { OP_ONNX_LessOrEqual, B_CMP, f_le, i_le, u_le },
	{ OP_ONNX_GreaterOrEqual, B_CMP, f_ge, i_ge, u_ge },
	{ OP_ONNX_And, B_LOGIC, f_and, i_and, NULL }, { OP_ONNX_Or, B_LOGIC, f_or, i_or, NULL },
	{ OP_ONNX_Xor, B_LOGIC, f_xor, i_xor, NULL },
};

static const Binary *find_binary(OpId op)
{
	for (size_t i = 0; i < sizeof binary_ops / sizeof *binary_ops; i++)
		if (binary_ops[i].op == op)
			return &binary_ops[i];
	return NULL;
}

static Status check_operands(const KCtx *k, const Binary *b, const RTensor *x, const RTensor *y)
{
	if (!numeric(x->dtype) && x->dtype != DT_U64)
		return rt_unsupported(k, x);
	if (!numeric(y->dtype) && y->dtype != DT_U64)
		return rt_unsupported(k, y);
	if (b->kind == B_LOGIC && (x->dtype != DT_BOOL || y->dtype != DT_BOOL))
		return rt_unsupported(k, x->dtype != DT_BOOL ? x : y);
	if (b->kind == B_ARITH && x->dtype == DT_BOOL)
		return rt_unsupported(k, x);
	if (x->dtype != y->dtype)
		return rt_fail(k, "operands differ in dtype: %s and %s", dtype_name(x->dtype), dtype_name(y->dtype));
	return OK;
}

/* z = x op y over the broadcast shape. */
static Status binary(const KCtx *k, const Binary *b, RTensor *x, RTensor *y, RTensor **out)
{
	int32_t rank;
	int64_t shape[RT_MAX_RANK];
	RTensor *xy[2] = { x, y };
	if (check_operands(k, b, x, y) != OK || rt_broadcast(k->n->loc, k->op, 2, xy, &rank, shape) != OK)
		return FAILED;
	int (*fi)(int64_t, int64_t, int64_t *) = b->op == OP_ONNX_Mod && rt_attr_int(k, "fmod", 0) ? i_fmod : b->i;
	double (*ff)(double, double) = b->op == OP_ONNX_Mod && rt_attr_int(k, "fmod", 0) ? fmod : b->f;
	RTensor *z = rt_new(k->n->loc, b->kind == B_CMP ? DT_BOOL : x->dtype, rank, shape);
	if (!z)
		return FAILED;
	RtIter it;
	rt_iter_init(&it, rank, shape, 2, xy);
	for (int64_t i = 0; i < z->numel; i++, rt_iter_next(&it)) {
		int64_t r;
		uint64_t u;
		if (dtype_is_float(x->dtype))
			rt_set_f(z, i, ff(rt_get_f(x, it.off[0]), rt_get_f(y, it.off[1])));
		else if (x->dtype == DT_U64 && b->u) {
			if (!b->u((uint64_t)rt_get_i(x, it.off[0]), (uint64_t)rt_get_i(y, it.off[1]), &u))
				goto div0;
			rt_set_i(z, i, (int64_t)u);
		} else if (fi(rt_get_i(x, it.off[0]), rt_get_i(y, it.off[1]), &r))
			rt_set_i(z, i, r);
		else
			goto div0;
	}
	*out = z;
	return OK;
div0:
	rt_free(z);
	return rt_fail(k, "integer division by zero");
}

static Status k_binary(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (nin != 2 || !in[0] || !in[1])
		return rt_fail(k, "expects two inputs");
	return binary(k, find_binary(k->n->op), in[0], in[1], out);
}

/* Min, Max, Sum and Mean fold their inputs left to right; Mean divides at
 * the end. */
static Status k_variadic(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	const Binary *b = find_binary(k->n->op);
	if (nin < 1 || !in[0])
		return rt_fail(k, "expects at least one input");
	if ((!numeric(in[0]->dtype) || in[0]->dtype == DT_BOOL) && in[0]->dtype != DT_U64)
		return rt_unsupported(k, in[0]);
	RTensor *acc = rt_copy(k->n->loc, in[0]);
	for (uint32_t i = 1; acc && i < nin; i++) {
		RTensor *next = NULL;
		if (!in[i] || binary(k, b, acc, in[i], &next) != OK) {
			rt_free(acc);
			return in[i] ? FAILED : rt_fail(k, "input %u is missing", i);
		}
		rt_free(acc);
		acc = next;
	}
	if (acc && k->n->op == OP_ONNX_Mean)
		for (int64_t i = 0; i < acc->numel; i++) {
			if (dtype_is_float(acc->dtype))
				rt_set_f(acc, i, rt_get_f(acc, i) / nin);
			else if (acc->dtype == DT_U64)
				rt_set_i(acc, i, (int64_t)((uint64_t)rt_get_i(acc, i) / nin));
			else
				rt_set_i(acc, i, rt_get_i(acc, i) / (int64_t)nin);
		}
	*out = acc;
	return acc ? OK : FAILED;
}

/* ---- Pow: the exponent may have another dtype than the base --------------- */

static int64_t ipow(int64_t a, int64_t e)
{
	uint64_t r = 1, b = (uint64_t)a;
	for (; e > 0; e >>= 1) {
		if (e & 1)
			r *= b;
		b *= b;
	}
	return (int64_t)r;
}

static Status k_pow(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t rank;
	int64_t shape[RT_MAX_RANK];
	if (nin != 2 || !in[0] || !in[1])
		return rt_fail(k, "expects two inputs");
	RTensor *x = in[0], *y = in[1];
	/* A u64 exponent reads exactly as a double; a u64 base would not wrap. */
	int y_ok = (numeric(y->dtype) || y->dtype == DT_U64) && y->dtype != DT_BOOL;
	if (!numeric(x->dtype) || x->dtype == DT_BOOL || !y_ok)
		return rt_unsupported(k, y_ok ? x : y);
	if (rt_broadcast(k->n->loc, k->op, 2, in, &rank, shape) != OK)
		return FAILED;
	RTensor *z = rt_new(k->n->loc, x->dtype, rank, shape);
	if (!z)
		return FAILED;
	RtIter it;
	rt_iter_init(&it, rank, shape, 2, in);
	int int_pow = !dtype_is_float(x->dtype) && !dtype_is_float(y->dtype);
	for (int64_t i = 0; i < z->numel; i++, rt_iter_next(&it)) {
		if (int_pow && y->dtype != DT_U64 && rt_get_i(y, it.off[1]) >= 0)
			rt_set_i(z, i, ipow(rt_get_i(x, it.off[0]), rt_get_i(y, it.off[1])));
		else
			rt_set_f(z, i, pow(rt_get_f(x, it.off[0]), rt_get_f(y, it.off[1])));
	}
	*out = z;
	return OK;
}

/* ---- Where -------------------------------------------------------------------- */

static Status k_where(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t rank;
	int64_t shape[RT_MAX_RANK];
	if (nin != 3 || !in[0] || !in[1] || !in[2])
		return rt_fail(k, "expects three inputs");
	if (in[0]->dtype != DT_BOOL)
		return rt_fail(k, "the condition must be bool, not %s", dtype_name(in[0]->dtype));
	if (in[1]->dtype != in[2]->dtype)
		return rt_fail(k, "operands differ in dtype: %s and %s", dtype_name(in[1]->dtype), dtype_name(in[2]->dtype));
	if (rt_broadcast(k->n->loc, k->op, 3, in, &rank, shape) != OK)
		return FAILED;
	RTensor *z = rt_new(k->n->loc, in[1]->dtype, rank, shape);
	if (!z)
		return FAILED;
	size_t es = rt_elem_size(z->dtype);
	RtIter it;
	rt_iter_init(&it, rank, shape, 3, in);
	for (int64_t i = 0; i < z->numel; i++, rt_iter_next(&it)) {
		const RTensor *src = in[0]->data[it.off[0]] ? in[1] : in[2];
		memcpy(z->data + (size_t)i * es, src->data + (size_t)it.off[src == in[1] ? 1 : 2] * es, es);
	}
	*out = z;
	return OK;
}

/* ---- Cast and CastLike ---------------------------------------------------------- */

static int castable(DType t)
{
	return dtype_is_float(t) || dtype_is_int(t);
}

static Status cast_to(const KCtx *k, const RTensor *x, DType to, RTensor **out)
{
	if (!castable(x->dtype))
		return rt_unsupported(k, x);
	if (!castable(to))
		return rt_fail(k, "unsupported dtype %s", to ? dtype_name(to) : "(unknown)");
	RTensor *y = rt_new(k->n->loc, to, x->rank, x->shape);
	if (!y)
		return FAILED;
	int via_float = dtype_is_float(x->dtype) || dtype_is_float(to);
	for (int64_t i = 0; i < x->numel; i++) {
		if (via_float)
			rt_set_f(y, i, rt_get_f(x, i));
		else
			rt_set_i(y, i, rt_get_i(x, i));
	}
	*out = y;
	return OK;
}

static Status k_cast(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (nin < 1 || !in[0])
		return rt_fail(k, "missing input");
	if (k->n->op == OP_ONNX_CastLike)
		return nin < 2 || !in[1] ? rt_fail(k, "missing target") : cast_to(k, in[0], in[1]->dtype, out);
	const Arg *to = rt_attr(k, "to");         /* `to = 1` (ONNX's number) or `to = f32` */
	if (!to || (to->kind != A_INT && to->kind != A_DTYPE))
		return rt_fail(k, "attribute 'to' must be a dtype");
	return cast_to(k, in[0], to->kind == A_DTYPE ? (DType)to->u.i : dtype_from_onnx((int)to->u.i), out);
}

Kernel rt_elem_kernel(OpId op)
{
	if (find_unary(op))
		return k_unary;
	if (find_param(op))
		return k_param_unary;
	switch (op) {
	case OP_ONNX_IsNaN: case OP_ONNX_IsInf:
		return k_isclass;
	case OP_ONNX_Clip:
		return k_clip;
	case OP_ONNX_Min: case OP_ONNX_Max: case OP_ONNX_Sum: case OP_ONNX_Mean:
		return k_variadic;
	case OP_ONNX_Pow:
		return k_pow;
	case OP_ONNX_Where:
		return k_where;
	case OP_ONNX_Cast: case OP_ONNX_CastLike:
		return k_cast;
	default:
		return find_binary(op) ? k_binary : NULL;
	}
}
