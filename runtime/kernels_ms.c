/* kernels_ms.c - the ONNX Runtime contrib ops (domain com.microsoft, and
 * SimplifiedLayerNormalization, which ONNX Runtime has in the default
 * domain) that onnxc writes: -target=ort's fusions (passes/fuse_ort.c) and
 * -quantize's MatMulNBits (passes/quantize.c), so `onnxc run`, `diff` and
 * `verify` run every file onnxc writes.
 *
 * Semantics are those of ONNX Runtime's contrib op documentation.  Each
 * kernel is written in terms of the standard kernels where it can (MatMul,
 * Add, LayerNormalization), so it computes what the pattern it replaces
 * computes, in double, rounded to the output dtype at each standard step:
 *
 *   FusedMatMul(A, B)       alpha * MatMul(A', B'), X' the transpose of X's
 *                           last two dims when transA / transB (rank >= 2);
 *                           transBatchA / transBatchB are refused
 *   Gelu(X)                 0.5 x (1 + erf(x / sqrt 2))
 *   BiasGelu(A, B)          Gelu(A + B)
 *   FastGelu(X[, bias])     0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))),
 *                           y = X (+ bias)
 *   SkipLayerNormalization(input, skip, gamma[, beta[, bias]])
 *                           s = input + skip (+ bias); LayerNormalization of
 *                           s over the last dim (epsilon, default 1e-12);
 *                           results: output, mean, inv_std_var, s
 *   SimplifiedLayerNormalization(X, scale)   (default domain)
 *                           X / sqrt(mean(X^2) + epsilon) * scale over the
 *                           dims from axis (default -1) on; epsilon 1e-5;
 *                           results Y[, inv_std_var]
 *   SkipSimplifiedLayerNormalization(input, skip, gamma[, bias])
 *                           the same of s = input + skip (+ bias) over the
 *                           last dim, epsilon 1e-12; results output, mean
 *                           (zeros: an RMS norm has none), inv_std_var, s
 *   DynamicQuantizeMatMul(A, B, b_scale[, b_zero_point[, bias]])
 *                           A quantized to u8 as DynamicQuantizeLinear does,
 *                           times B (i8/u8 [K,N]) less its zero point,
 *                           scaled by a_scale * b_scale (one, or one per
 *                           column), plus the bias
 *   MatMulNBits(A, B, scales[, zero_points[, g_idx[, bias]]])
 *                           MatMul(A, W) (+ bias), W [K,N] dequantized from
 *                           B uint8 [N, nblocks, block_size * bits / 8]:
 *                           code k of a row's blocks at bit k * bits, low
 *                           bits first; W[k,n] = (code - zp) * scale[n, k /
 *                           block_size]; zp from uint8 zero_points packed
 *                           the same way (a row of ceil(nblocks * bits / 8)
 *                           bytes), else 2^(bits-1); bits 2, 4 or 8;
 *                           g_idx and float zero points are refused
 *   GroupQueryAttention(query, key, value[, past_key, past_value],
 *                       seqlens_k, total_sequence_length[, .., attention_bias])
 *                           causal attention of num_heads query heads on
 *                           kv_num_heads key/value heads (head h on h / G),
 *                           past and new keys and values joined per batch
 *                           at seqlens_k[b] + 1 - S (0 in the first prompt,
 *                           S = T); results output, present_key,
 *                           present_value [B, Hkv, T, D]; f32 only; packed
 *                           QKV, rotary, position_ids, head_sink,
 *                           smooth_softmax and a past longer than T are
 *                           refused
 *   RotaryEmbedding(input, position_ids, cos_cache, sin_cache)
 *                           each head of input ([B, S, H*D] or [B, H, S,
 *                           D]) at position p turned by cache row p: the
 *                           first R dims (rotary_embedding_dim, else D) in
 *                           pairs (i, i + R/2), or (2i, 2i+1) interleaved,
 *                           (x1 c - x2 s, x2 c + x1 s); the rest copied;
 *                           positions [B, S] or one start (p0 + s); f32
 *                           only; is_packed_batching is refused
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

/* The kernel of a standard op run for the contrib node: a copy of the node
 * with the op's id (kernels dispatch on it) and the given attributes (the
 * kernels used here read none, or epsilon); diagnostics still name the
 * contrib op. */
static Status std_op_kw(const KCtx *k, OpId op, Named *kw, uint32_t nkw, RTensor *const *in, uint32_t nin, RTensor **out,
			uint32_t nout)
{
	Kernel f = rt_kernel(op);
	if (!f)
		ONNXC_BUG("no kernel for a standard op a contrib kernel uses");
	Node n = *k->n;
	n.op = op;
	n.domain = S_onnx;
	n.kw = kw;
	n.nkw = nkw;
	KCtx sk = { &n, k->op, k->opset };
	for (uint32_t i = 0; i < nout; i++)
		out[i] = NULL;
	Status s = f(&sk, in, nin, out, nout);
	if (s != OK)
		for (uint32_t i = 0; i < nout; i++) {
			rt_free(out[i]);
			out[i] = NULL;
		}
	return s;
}

static Status std_op(const KCtx *k, OpId op, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	return std_op_kw(k, op, NULL, 0, in, nin, out, nout);
}


/* x + y (numpy broadcasting) when y is given; else a copy of x. */
static RTensor *add_opt(const KCtx *k, RTensor *x, RTensor *y)
{
	RTensor *two[2] = { x, y }, *r = NULL;
	if (!y)
		return rt_copy(k->n->loc, x);
	return std_op(k, OP_ONNX_Add, two, 2, &r, 1) == OK ? r : NULL;
}

/* ---- Gelu, BiasGelu, FastGelu ------------------------------------------------ */

static double gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static double gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(0.7978845608028654 /* sqrt(2 / pi) */ * (x + 0.044715 * x * x * x)));
}

static Status gelu_of(const KCtx *k, RTensor *x, RTensor *bias, double (*f)(double), RTensor **out)
{
	RTensor *y = add_opt(k, x, bias);
	if (!y)
		return FAILED;
	for (int64_t i = 0; i < y->numel; i++)
		rt_set_f(y, i, f(rt_get_f(y, i)));
	*out = y;
	return OK;
}

static Status k_gelu(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	return rt_need_float(k, in, nin, 1) != OK ? FAILED : gelu_of(k, in[0], NULL, gelu_erf, out);
}

static Status k_bias_gelu(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	return rt_need_float(k, in, nin, 2) != OK ? FAILED : gelu_of(k, in[0], in[1], gelu_erf, out);
}

static Status k_fast_gelu(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (rt_need_float(k, in, nin, 1) != OK || (nin > 1 && in[1] && rt_need_float(k, in + 1, 1, 1) != OK))
		return FAILED;
	return gelu_of(k, in[0], nin > 1 ? in[1] : NULL, gelu_tanh, out);
}

/* ---- FusedMatMul ------------------------------------------------------------- */

/* x with its last two dims swapped. */
static RTensor *swap_last2(const KCtx *k, const RTensor *x)
{
	int64_t shape[RT_MAX_RANK];
	memcpy(shape, x->shape, sizeof *shape * (size_t)x->rank);
	int64_t r = x->shape[x->rank - 2], c = x->shape[x->rank - 1];
	shape[x->rank - 2] = c;
	shape[x->rank - 1] = r;
	RTensor *t = rt_new(k->n->loc, x->dtype, x->rank, shape);
	if (!t)
		return NULL;
	size_t es = rt_elem_size(x->dtype);
	int64_t mat = r * c, nb = mat ? x->numel / mat : 0;
	for (int64_t b = 0; b < nb; b++)
		for (int64_t i = 0; i < r; i++)
			for (int64_t j = 0; j < c; j++)
				memcpy(t->data + (size_t)(b * mat + j * r + i) * es, x->data + (size_t)(b * mat + i * c + j) * es, es);
	return t;
}

static Status k_fused_matmul(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (rt_need_float(k, in, nin, 2) != OK)
		return FAILED;
	if (rt_attr_int(k, "transBatchA", 0) || rt_attr_int(k, "transBatchB", 0))
		return rt_fail(k, "transBatchA and transBatchB are not supported");
	int trans[2] = { rt_attr_int(k, "transA", 0) != 0, rt_attr_int(k, "transB", 0) != 0 };
	RTensor *op[2] = { in[0], in[1] }, *own[2] = { NULL, NULL };
	Status s = OK;
	for (int i = 0; i < 2 && s == OK; i++)
		if (trans[i] && in[i]->rank >= 2 && !(op[i] = own[i] = swap_last2(k, in[i])))
			s = FAILED;
	if (s == OK)
		s = std_op(k, OP_ONNX_MatMul, op, 2, out, 1);
	double alpha = rt_attr_float(k, "alpha", 1.0);
	for (int64_t i = 0; s == OK && alpha != 1.0 && i < out[0]->numel; i++)
		rt_set_f(out[0], i, alpha * rt_get_f(out[0], i));
	rt_free(own[0]);
	rt_free(own[1]);
	return s;
}

/* input + skip, + in[bias] when given: what the two skip normalizations
 * normalize and return as their last result; NULL on failure. */
static RTensor *skip_sum(const KCtx *k, RTensor *const *in, uint32_t nin, uint32_t bias)
{
	RTensor *s1 = add_opt(k, in[0], in[1]);
	if (!s1 || nin <= bias || !in[bias])
		return s1;
	RTensor *sum = add_opt(k, s1, in[bias]);
	rt_free(s1);
	return sum;
}

/* ---- SkipLayerNormalization -------------------------------------------------- */

static Status k_skip_layernorm(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	if (rt_need_float(k, in, nin, 3) != OK)
		return FAILED;
	if (in[0]->rank < 1)
		return rt_fail(k, "the input must have a rank of at least 1");
	RTensor *sum = skip_sum(k, in, nin, 4);
	if (!sum)
		return FAILED;
	if (sum->rank != in[0]->rank || memcmp(sum->shape, in[0]->shape, sizeof *sum->shape * (size_t)sum->rank)) {
		rt_free(sum);
		return rt_fail(k, "skip and bias must broadcast to the shape of the input");
	}
	/* LayerNormalization over the last dim, with the contrib op's
	 * default epsilon. */
	Named eps = { sym_cstr("epsilon"), { .kind = A_FLOAT, .u.f = rt_attr_float(k, "epsilon", 1e-12) } };
	RTensor *args[3] = { sum, in[2], nin > 3 ? in[3] : NULL };
	uint32_t nres = nout < 3 ? nout : 3;
	Status s = std_op_kw(k, OP_ONNX_LayerNormalization, &eps, 1, args, args[2] ? 3 : 2, out, nres);
	if (s == OK && nout > 3)
		out[3] = sum;
	else
		rt_free(sum);
	return s;
}

/* ---- MatMulNBits ---------------------------------------------------------------- */

/* The bits-wide code at index i of a packed row (low bits first). */
static int code_at(const uint8_t *row, int64_t i, int bits)
{
	int64_t bit = i * bits;
	return (row[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

typedef struct NBits { int64_t K, N, block, nblk, blob, zrow; int bits; } NBits;

static Status nbits_plan(const KCtx *k, RTensor *const *in, uint32_t nin, NBits *q)
{
	int64_t bits = rt_attr_int(k, "bits", 4);
	*q = (NBits){ rt_attr_int(k, "K", -1), rt_attr_int(k, "N", -1), rt_attr_int(k, "block_size", -1), 0, 0, 0,
		      bits == 2 || bits == 4 || bits == 8 ? (int)bits : 0 };
	if (rt_need_float(k, in, nin, 1) != OK || nin < 3 || !in[1] || !in[2])
		return nin < 3 || !in[1] || !in[2] ? rt_fail(k, "needs A, B and scales") : FAILED;
	if (!q->bits)
		return rt_fail(k, "bits = %lld is not supported (2, 4 or 8)", (long long)bits);
	if (q->K < 1 || q->N < 1 || q->block < 16 || q->block > (1 << 30) || (q->block & (q->block - 1)))
		return rt_fail(k, "K and N must be positive, block_size a power of 2 from 16 to 2^30");
	q->nblk = q->K / q->block + (q->K % q->block != 0);
	q->blob = q->block * q->bits / 8;
	q->zrow = (q->nblk * q->bits + 7) / 8;
	/* Sizes compared in double: the attributes may be anything, a
	 * tensor's size is exact there. */
	if (in[1]->dtype != DT_U8 || (double)in[1]->numel != (double)q->N * (double)q->nblk * (double)q->blob)
		return rt_fail(k, "B must be u8 [N, nblocks, block_size * bits / 8] = [%lld, %lld, %lld]", (long long)q->N,
			       (long long)q->nblk, (long long)q->blob);
	if (!dtype_is_float(in[2]->dtype) || (double)in[2]->numel != (double)q->N * (double)q->nblk)
		return rt_fail(k, "scales must be N * nblocks = %lld floats", (long long)(q->N * q->nblk));
	const RTensor *zp = nin > 3 ? in[3] : NULL;
	if (zp && (zp->dtype != DT_U8 || (double)zp->numel != (double)q->N * (double)q->zrow))
		return rt_fail(k, "zero_points must be u8, N * ceil(nblocks * bits / 8) = %lld bytes",
			       (long long)(q->N * q->zrow));
	if (nin > 4 && in[4])
		return rt_fail(k, "g_idx is not supported");
	int32_t ra = in[0]->rank;
	if (ra < 1 || in[0]->shape[ra - 1] != q->K)
		return rt_fail(k, "A's last dim must be K = %lld", (long long)q->K);
	return OK;
}

/* W [K,N] in A's dtype. */
static RTensor *nbits_weight(const KCtx *k, RTensor *const *in, uint32_t nin, const NBits *q)
{
	int64_t shape[2] = { q->K, q->N };
	RTensor *w = rt_new(k->n->loc, in[0]->dtype, 2, shape);
	const RTensor *zp = nin > 3 ? in[3] : NULL;
	for (int64_t n = 0; w && n < q->N; n++) {
		const uint8_t *row = in[1]->data + (size_t)(n * q->nblk * q->blob);
		for (int64_t b = 0; b < q->nblk; b++) {
			int z = zp ? code_at(zp->data + (size_t)(n * q->zrow), b, q->bits) : 1 << (q->bits - 1);
			double s = rt_get_f(in[2], n * q->nblk + b);
			for (int64_t i = b * q->block; i < q->K && i < (b + 1) * q->block; i++)
				rt_set_f(w, i * q->N + n, (code_at(row, i, q->bits) - z) * s);
		}
	}
	return w;
}

static Status k_matmul_nbits(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	NBits q;
	if (nbits_plan(k, in, nin, &q) != OK)
		return FAILED;
	RTensor *w = nbits_weight(k, in, nin, &q), *mm = NULL;
	if (!w)
		return FAILED;
	RTensor *args[2] = { in[0], w };
	Status s = std_op(k, OP_ONNX_MatMul, args, 2, &mm, 1);
	rt_free(w);
	RTensor *bias = nin > 5 ? in[5] : NULL;
	if (s == OK && bias && (bias->rank != 1 || bias->shape[0] != q.N)) {
		rt_free(mm);
		return rt_fail(k, "bias must be a vector of N = %lld", (long long)q.N);
	}
	if (s == OK) {
		*out = bias ? add_opt(k, mm, bias) : mm;
		if (bias)
			rt_free(mm);
		s = *out ? OK : FAILED;
	}
	return s;
}

/* ---- SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization ------------- */

/* RMS normalisation of x over the dims from axis on: y = x / sqrt(mean(x^2)
 * + eps) * scale (scale broadcast to x); inv, when asked for, gets each
 * row's 1 / sqrt(mean(x^2) + eps). */
static Status rms_norm(const KCtx *k, RTensor *x, RTensor *scale, int64_t axis_attr, double eps, RTensor **y,
		       RTensor **inv)
{
	int32_t axis, rank;
	int64_t shape[RT_MAX_RANK], rows = 1, len = 1;
	RTensor *two[2] = { x, scale };
	if (rt_axis(k, axis_attr, x->rank, &axis) != OK || rt_broadcast(k->n->loc, k->op, 2, two, &rank, shape) != OK)
		return FAILED;
	if (rank != x->rank || memcmp(shape, x->shape, sizeof *shape * (size_t)rank))
		return rt_fail(k, "the scale must broadcast to the shape of the input");
	for (int32_t d = 0; d < x->rank; d++) {
		*(d < axis ? &rows : &len) *= x->shape[d];
		shape[d] = d < axis ? x->shape[d] : 1;
	}
	*y = rt_new(k->n->loc, x->dtype, x->rank, x->shape);
	if (inv)
		*inv = *y ? rt_new(k->n->loc, DT_F32, x->rank, shape) : NULL;
	if (!*y || (inv && !*inv)) {
		rt_free(*y);
		*y = NULL;
		return FAILED;
	}
	RtIter it;
	rt_iter_init(&it, x->rank, x->shape, 2, two);
	for (int64_t r = 0; len && r < rows; r++) {
		double sq = 0;
		for (int64_t j = 0; j < len; j++) {
			double v = rt_get_f(x, r * len + j);
			sq += v * v;
		}
		double g = 1.0 / sqrt(sq / (double)len + eps);
		for (int64_t j = 0; j < len; j++, rt_iter_next(&it))
			rt_set_f(*y, r * len + j, rt_get_f(x, r * len + j) * g * rt_get_f(scale, it.off[1]));
		if (inv)
			rt_set_f(*inv, r, g);
	}
	return OK;
}

/* Results: Y[, inv_std_var]. */
static Status k_simplified_layernorm(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	if (rt_need_float(k, in, nin, 2) != OK)
		return FAILED;
	return rms_norm(k, in[0], in[1], rt_attr_int(k, "axis", -1), rt_attr_float(k, "epsilon", 1e-5), &out[0],
			nout > 1 ? &out[1] : NULL);
}

/* (input, skip, gamma[, bias]) -> output, mean, inv_std_var, input + skip
 * (+ bias); there is no mean in an RMS norm: that result is zeros. */
static Status k_skip_simplified_layernorm(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out,
					  uint32_t nout)
{
	if (rt_need_float(k, in, nin, 3) != OK)
		return FAILED;
	RTensor *sum = skip_sum(k, in, nin, 3);
	if (!sum)
		return FAILED;
	RTensor *inv = NULL;
	Status s = rms_norm(k, sum, in[2], -1, rt_attr_float(k, "epsilon", 1e-12), &out[0], &inv);
	if (s == OK && nout > 1 && !(out[1] = rt_new(k->n->loc, inv->dtype, inv->rank, inv->shape)))
		s = FAILED;
	if (s == OK && nout > 2) {
		out[2] = inv;
		inv = NULL;
	}
	if (s == OK && nout > 3) {
		out[3] = sum;
		sum = NULL;
	}
	rt_free(inv);
	rt_free(sum);
	return s;
}

/* ---- DynamicQuantizeMatMul -------------------------------------------------------- */

/* A quantized as DynamicQuantizeLinear does (u8, per tensor, the range
 * widened to hold 0; scale and zero point in f32, rounding half to even),
 * then multiplied with B (i8 or u8 [K,N]) less its zero point, scaled by
 * a_scale * b_scale (per tensor or per column), plus the bias. */
static RTensor *dq_a(const KCtx *k, const RTensor *a)
{
	float lo = 0, hi = 0;
	for (int64_t i = 0; i < a->numel; i++) {
		float v = (float)rt_get_f(a, i);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	float sc = (hi - lo) / 255.0f;
	float zpf = sc != 0 ? nearbyintf(-lo / sc) : 0;
	float zp = zpf < 0 ? 0 : zpf > 255 ? 255 : zpf;
	RTensor *t = rt_new(k->n->loc, DT_F32, a->rank, a->shape);
	for (int64_t i = 0; t && i < a->numel; i++) {
		float q = sc != 0 ? nearbyintf((float)rt_get_f(a, i) / sc) + zp : zp;
		q = q < 0 ? 0 : q > 255 ? 255 : q;
		rt_set_f(t, i, (double)(q - zp) * sc);
	}
	return t;
}

static Status k_dynamic_quantize_matmul(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (rt_need_float(k, in, nin, 1) != OK || nin < 3 || !in[1] || !in[2])
		return nin < 3 || !in[1] || !in[2] ? rt_fail(k, "needs A, B and b_scale") : FAILED;
	const RTensor *b = in[1], *bs = in[2], *bz = nin > 3 ? in[3] : NULL;
	if ((b->dtype != DT_I8 && b->dtype != DT_U8) || b->rank != 2)
		return rt_fail(k, "B must be a 2-D i8 or u8 tensor");
	int64_t n = b->shape[1];
	if (!dtype_is_float(bs->dtype) || (bs->numel != 1 && bs->numel != n))
		return rt_fail(k, "b_scale must be one float or one per column of B");
	if (bz && (bz->dtype != b->dtype || bz->numel != bs->numel))
		return rt_fail(k, "b_zero_point must have B's dtype and b_scale's size");
	RTensor *qa = dq_a(k, in[0]), *wb = rt_new(k->n->loc, DT_F32, 2, b->shape), *mm = NULL;
	for (int64_t i = 0; wb && i < b->numel; i++) {
		int64_t c = bs->numel == 1 ? 0 : i % n;
		rt_set_f(wb, i, (double)(rt_get_i(b, i) - (bz ? rt_get_i(bz, c) : 0)) * rt_get_f(bs, c));
	}
	RTensor *args[2] = { qa, wb };
	Status s = qa && wb ? std_op(k, OP_ONNX_MatMul, args, 2, &mm, 1) : FAILED;
	rt_free(qa);
	rt_free(wb);
	RTensor *bias = nin > 4 ? in[4] : NULL;
	if (s == OK) {
		*out = bias ? add_opt(k, mm, bias) : mm;
		if (bias)
			rt_free(mm);
		s = *out ? OK : FAILED;
	}
	return s;
}

/* ---- GroupQueryAttention ---------------------------------------------------------- */

/* Sizes and attributes: query [B, S, Hq*D], key and value [B, S, Hkv*D],
 * past [B, Hkv, P, D] (P <= T), presents [B, Hkv, T, D]. */
typedef struct Gqa {
	int64_t B, S, Hq, Hkv, D, P, T, window;
	double scale, softcap;
} Gqa;

/* Whether t is given and is [d0, d1(, d2(, d3))] (rank 2 when d2 < 0,
 * rank 3 when d3 < 0). */
static int shape_is(const RTensor *t, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
	int64_t want[4] = { d0, d1, d2, d3 };
	int32_t rank = d2 < 0 ? 2 : d3 < 0 ? 3 : 4;
	return t && t->rank == rank && !memcmp(t->shape, want, sizeof *want * (size_t)rank);
}

/* The refused inputs and attributes, and every f32 input's dtype. */
static Status gqa_supported(const KCtx *k, RTensor *const *in, uint32_t nin)
{
	if (nin < 7 || !in[0] || !in[5] || !in[6])
		return rt_fail(k, "needs query, key, value, seqlens_k and total_sequence_length");
	if (!in[1] || !in[2])
		return rt_fail(k, "packed QKV is not supported: key and value must be given");
	if (rt_attr_int(k, "do_rotary", 0) || (nin > 7 && in[7]) || (nin > 8 && in[8]))
		return rt_fail(k, "do_rotary = 1 (rotary embedding with cos_cache and sin_cache) is not supported");
	if (nin > 9 && in[9])
		return rt_fail(k, "position_ids are not supported");
	if (nin > 11 && in[11])
		return rt_fail(k, "head_sink is not supported");
	if (rt_attr_int(k, "smooth_softmax", 0))
		return rt_fail(k, "smooth_softmax = 1 is not supported");
	static const uint32_t f32_inputs[] = { 0, 1, 2, 3, 4, 10 };
	for (size_t i = 0; i < sizeof f32_inputs / sizeof *f32_inputs; i++) {
		const RTensor *t = nin > f32_inputs[i] ? in[f32_inputs[i]] : NULL;
		if (t && t->dtype != DT_F32)
			return rt_unsupported(k, t);
	}
	if (in[5]->dtype != DT_I32 || in[6]->dtype != DT_I32 || in[6]->numel != 1)
		return rt_fail(k, "seqlens_k must be int32 [batch], total_sequence_length one int32");
	return OK;
}

static Status gqa_plan(const KCtx *k, RTensor *const *in, uint32_t nin, Gqa *g)
{
	if (gqa_supported(k, in, nin) != OK)
		return FAILED;
	const RTensor *q = in[0], *pk = nin > 3 ? in[3] : NULL, *pv = nin > 4 ? in[4] : NULL;
	const RTensor *bias = nin > 10 ? in[10] : NULL;
	g->Hq = rt_attr_int(k, "num_heads", 0);
	g->Hkv = rt_attr_int(k, "kv_num_heads", 0);
	if (g->Hq < 1 || g->Hkv < 1 || g->Hq % g->Hkv)
		return rt_fail(k, "num_heads and kv_num_heads must be positive, num_heads a multiple of kv_num_heads");
	if (q->rank != 3 || q->shape[2] % g->Hq || q->shape[2] == 0)
		return rt_fail(k, "query must be [batch, sequence, num_heads * head_size]");
	g->B = q->shape[0];
	g->S = q->shape[1];
	g->D = q->shape[2] / g->Hq;
	if (!shape_is(in[1], g->B, g->S, g->Hkv * g->D, -1) || !shape_is(in[2], g->B, g->S, g->Hkv * g->D, -1))
		return rt_fail(k, "key and value must be [%lld, %lld, %lld]", (long long)g->B, (long long)g->S,
			       (long long)(g->Hkv * g->D));
	if (!pk != !pv)
		return rt_fail(k, "past_key and past_value must be given together");
	g->P = pk ? pk->shape[pk->rank > 2 ? 2 : 0] : 0;
	if (pk && (!shape_is(pk, g->B, g->Hkv, g->P, g->D) || !shape_is(pv, g->B, g->Hkv, g->P, g->D)))
		return rt_fail(k, "past_key and past_value must be [%lld, %lld, past, %lld]", (long long)g->B,
			       (long long)g->Hkv, (long long)g->D);
	if (in[5]->numel != g->B)
		return rt_fail(k, "seqlens_k must have one length per batch (%lld)", (long long)g->B);
	g->T = rt_get_i(in[6], 0);
	if (g->T < 1)
		return rt_fail(k, "total_sequence_length must be positive, not %lld", (long long)g->T);
	if (g->P > g->T)
		return rt_fail(k, "a past longer than total_sequence_length (%lld > %lld, a shared past and present "
			       "buffer) is not supported", (long long)g->P, (long long)g->T);
	if (bias && (bias->rank != 4 || (bias->shape[0] != 1 && bias->shape[0] != g->B) ||
		     (bias->shape[1] != 1 && bias->shape[1] != g->Hq) || bias->shape[2] != g->S || bias->shape[3] != g->T))
		return rt_fail(k, "attention_bias must be [%lld or 1, %lld or 1, %lld, %lld]", (long long)g->B,
			       (long long)g->Hq, (long long)g->S, (long long)g->T);
	/* Each batch's past length must fit the past (and the new rows the
	 * present): the first prompt (S = T) has none. */
	for (int64_t b = 0; b < g->B; b++) {
		int64_t total = rt_get_i(in[5], b) + 1, past = g->S == g->T ? 0 : total - g->S;
		if (total < 1 || total > g->T || past < 0 || past > g->P)
			return rt_fail(k, "seqlens_k[%lld] = %lld asks for %lld rows in all, %lld of them past: "
				       "total_sequence_length is %lld, the past has %lld", (long long)b,
				       (long long)(total - 1), (long long)total, (long long)past, (long long)g->T,
				       (long long)g->P);
	}
	double scale = rt_attr_float(k, "scale", 0.0);
	g->scale = scale != 0.0 ? scale : 1.0 / sqrt((double)g->D);
	g->softcap = rt_attr_float(k, "softcap", 0.0);
	g->window = rt_attr_int(k, "local_window_size", -1);
	return OK;
}

/* present[b, h] = past[b, h, 0:past_b], then the S new rows of kv (read
 * as [B, S, Hkv, D]) from row past_b on; the rest stays zero. */
static void gqa_present(const Gqa *g, const RTensor *past, const RTensor *kv, RTensor *present, int64_t b,
			int64_t past_b)
{
	for (int64_t h = 0; h < g->Hkv; h++) {
		int64_t dst = (b * g->Hkv + h) * g->T * g->D;
		for (int64_t t = 0; t < past_b; t++)
			for (int64_t d = 0; d < g->D; d++)
				rt_set_f(present, dst + t * g->D + d, rt_get_f(past, ((b * g->Hkv + h) * g->P + t) * g->D + d));
		for (int64_t i = 0; i < g->S; i++)
			for (int64_t d = 0; d < g->D; d++)
				rt_set_f(present, dst + (past_b + i) * g->D + d,
					 rt_get_f(kv, ((b * g->S + i) * g->Hkv + h) * g->D + d));
	}
}

/* Query row i of head h in batch b against keys first..last of the
 * presents: scores scale * q.k, rounded to f32 as ONNX Runtime keeps
 * them, softcapped, plus the bias; a max-subtracted softmax; the row of
 * the output.  A row whose every score is at most the f32 lowest (masked
 * out) is zeros, as ONNX Runtime gives. */
static void gqa_row(const Gqa *g, RTensor *const *in, const RTensor *pk, const RTensor *pv, RTensor *out,
		    double *sc, int64_t b, int64_t h, int64_t i, int64_t first, int64_t last)
{
	const RTensor *bias = in[10];
	int64_t kvh = (b * g->Hkv + h / (g->Hq / g->Hkv)) * g->T, qo = ((b * g->S + i) * g->Hq + h) * g->D;
	double mx = -INFINITY, sum = 0;
	for (int64_t j = first; j <= last; j++) {
		double dot = 0;
		for (int64_t d = 0; d < g->D; d++)
			dot += rt_get_f(in[0], qo + d) * rt_get_f(pk, (kvh + j) * g->D + d);
		float s = (float)(g->scale * dot);
		if (g->softcap > 0)
			s = (float)(g->softcap * tanh(s / g->softcap));
		if (bias)
			s = (float)((double)s + rt_get_f(bias, ((bias->shape[0] > 1 ? b : 0) * bias->shape[1] +
							       (bias->shape[1] > 1 ? h : 0)) * g->S * g->T + i * g->T + j));
		sc[j] = s;
		mx = fmax(mx, s);
	}
	if (mx <= -FLT_MAX)
		return;
	for (int64_t j = first; j <= last; j++)
		sum += sc[j] = exp(sc[j] - mx);
	for (int64_t d = 0; d < g->D; d++) {
		double acc = 0;
		for (int64_t j = first; j <= last; j++)
			acc += sc[j] * rt_get_f(pv, (kvh + j) * g->D + d);
		rt_set_f(out, qo + d, acc / sum);
	}
}

/* Batch b's total length is seqlens_k[b] + 1, its past that less S (none
 * in the first prompt, S = T).  Row i attends keys up to past + i, clamped
 * to total - 1 (a right-padded prompt's pad rows see the whole prompt),
 * and, with local_window_size w > 0, the last w of them only. */
static Status k_group_query_attention(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out,
				      uint32_t nout)
{
	Gqa g;
	RTensor *args[12] = { NULL };
	memcpy(args, in, sizeof *in * (nin < 12 ? nin : 12));
	if (gqa_plan(k, args, nin, &g) != OK)
		return FAILED;
	int64_t oshape[3] = { g.B, g.S, g.Hq * g.D }, pshape[4] = { g.B, g.Hkv, g.T, g.D };
	RTensor *pres[2] = { rt_new(k->n->loc, DT_F32, 4, pshape), rt_new(k->n->loc, DT_F32, 4, pshape) };
	out[0] = pres[0] && pres[1] ? rt_new(k->n->loc, DT_F32, 3, oshape) : NULL;
	if (!out[0]) {
		rt_free(pres[0]);
		rt_free(pres[1]);
		return FAILED;
	}
	double *sc = xcalloc((size_t)g.T + 1, sizeof *sc);
	for (int64_t b = 0; b < g.B; b++) {
		int64_t total = rt_get_i(args[5], b) + 1, past = g.S == g.T ? 0 : total - g.S;
		gqa_present(&g, args[3], args[1], pres[0], b, past);
		gqa_present(&g, args[4], args[2], pres[1], b, past);
		for (int64_t h = 0; h < g.Hq; h++)
			for (int64_t i = 0; i < g.S; i++) {
				int64_t last = past + i < total - 1 ? past + i : total - 1;
				int64_t first = g.window > 0 && last - g.window + 1 > 0 ? last - g.window + 1 : 0;
				gqa_row(&g, args, pres[0], pres[1], out[0], sc, b, h, i, first, last);
			}
	}
	free(sc);
	for (uint32_t r = 0; r < 2; r++) {
		if (nout > r + 1)
			out[r + 1] = pres[r];
		else
			rt_free(pres[r]);
	}
	return OK;
}

/* ---- RotaryEmbedding ------------------------------------------------------------- */

/* Sizes and attributes: the input read as [B, S, H, D] (3-D, [B, S, H*D])
 * or [B, H, S, D] (4-D); the first R dims of each head rotated, the rest
 * copied; the caches [N, R/2]; the positions one start (p0 + s) or one a
 * token ([B, S]). */
typedef struct Rope {
	int64_t B, S, H, D, R, N, start;
	int four, interleaved, one_start;
} Rope;

/* The head size of a 3-D input [B, S, hidden]: hidden / num_heads when
 * num_heads is given, else twice the caches' width (ONNX Runtime's rule). */
static Status rope_heads(const KCtx *k, const RTensor *x, const RTensor *cos, int64_t nh, Rope *r)
{
	int64_t hidden = x->shape[2];
	r->D = nh > 0 ? hidden / nh : 2 * cos->shape[1];
	if (r->D < 1 || hidden % r->D || (nh > 0 && hidden % nh))
		return rt_fail(k, "input [%lld, %lld, %lld] does not split into heads of %s", (long long)x->shape[0],
			       (long long)x->shape[1], (long long)hidden,
			       nh > 0 ? "hidden / num_heads" : "twice the caches' width (num_heads absent)");
	r->H = hidden / r->D;
	return OK;
}

/* Positions: one int64 start (a scalar or [1]) with p0 + S within the
 * caches, or [B, S], each within [0, N). */
static Status rope_positions(const KCtx *k, const RTensor *pos, Rope *r)
{
	if (pos->dtype != DT_I64)
		return rt_fail(k, "position_ids must be int64");
	r->one_start = pos->numel == 1 && pos->rank <= 1;
	if (r->one_start) {
		r->start = rt_get_i(pos, 0);
		if (r->start < 0 || r->start + r->S > r->N)
			return rt_fail(k, "position_ids start %lld with sequence length %lld is outside the caches' %lld rows",
				       (long long)r->start, (long long)r->S, (long long)r->N);
		return OK;
	}
	if (!shape_is(pos, r->B, r->S, -1, -1))
		return rt_fail(k, "position_ids must be one start position or [%lld, %lld]", (long long)r->B,
			       (long long)r->S);
	for (int64_t i = 0; i < pos->numel; i++) {
		int64_t p = rt_get_i(pos, i);
		if (p < 0 || p >= r->N)
			return rt_fail(k, "position_ids[%lld, %lld] = %lld is outside the caches' rows [0, %lld)",
				       (long long)(i / r->S), (long long)(i % r->S), (long long)p, (long long)r->N);
	}
	return OK;
}

static Status rope_plan(const KCtx *k, RTensor *const *in, uint32_t nin, Rope *r)
{
	if (nin < 4 || !in[0] || !in[1] || !in[2] || !in[3])
		return rt_fail(k, "needs input, position_ids, cos_cache and sin_cache");
	const RTensor *x = in[0], *cos = in[2], *sin = in[3];
	static const uint32_t f32_inputs[] = { 0, 2, 3 };
	for (size_t i = 0; i < sizeof f32_inputs / sizeof *f32_inputs; i++)
		if (in[f32_inputs[i]]->dtype != DT_F32)
			return rt_unsupported(k, in[f32_inputs[i]]);
	if (rt_attr_int(k, "is_packed_batching", 0))
		return rt_fail(k, "is_packed_batching = 1 is not supported");
	int64_t nh = rt_attr_int(k, "num_heads", 0), rd = rt_attr_int(k, "rotary_embedding_dim", 0);
	r->interleaved = rt_attr_int(k, "interleaved", 0) == 1; /* as ONNX Runtime reads it */
	if (nh < 0 || rd < 0 || (rd > 0 && nh == 0))
		return rt_fail(k, "num_heads must be given with rotary_embedding_dim, and neither negative");
	if (x->rank != 3 && x->rank != 4)
		return rt_fail(k, "input must be [batch, sequence, hidden] or [batch, num_heads, sequence, head_size]");
	if (cos->rank != 2 || !shape_is(sin, cos->shape[0], cos->shape[1], -1, -1))
		return rt_fail(k, "cos_cache and sin_cache must be 2-D, of one shape");
	r->four = x->rank == 4;
	r->B = x->shape[0];
	r->S = x->shape[r->four ? 2 : 1];
	r->N = cos->shape[0];
	if (r->four) {
		r->H = x->shape[1];
		r->D = x->shape[3];
	} else if (rope_heads(k, x, cos, nh, r) != OK) {
		return FAILED;
	}
	r->R = rd > 0 ? rd : r->D;
	if (r->R > r->D || r->R % 2)
		return rt_fail(k, "the rotated dims (%lld) must be even and at most the head size (%lld)", (long long)r->R,
			       (long long)r->D);
	if (cos->shape[1] != r->R / 2)
		return rt_fail(k, "cos_cache and sin_cache must be [rows, %lld] (half the rotated dims), not [%lld, %lld]",
			       (long long)(r->R / 2), (long long)cos->shape[0], (long long)cos->shape[1]);
	if (r->S > r->N)
		return rt_fail(k, "a sequence of %lld longer than the caches' %lld rows is not supported", (long long)r->S,
			       (long long)r->N);
	return rope_positions(k, in[1], r);
}

/* One head at element off of x and y, at cache row p: pairs (i, i + R/2)
 * (rotate_half), or (2i, 2i + 1) when interleaved, turned by the row's
 * angle i: (x1 c - x2 s, x2 c + x1 s). */
static void rope_head(const Rope *r, const RTensor *x, const RTensor *cos, const RTensor *sin, RTensor *y, int64_t off,
		      int64_t p)
{
	int64_t half = r->R / 2;
	for (int64_t i = 0; i < half; i++) {
		int64_t a = off + (r->interleaved ? 2 * i : i), b = off + (r->interleaved ? 2 * i + 1 : i + half);
		double x1 = rt_get_f(x, a), x2 = rt_get_f(x, b), c = rt_get_f(cos, p * half + i);
		double s = rt_get_f(sin, p * half + i);
		rt_set_f(y, a, x1 * c - x2 * s);
		rt_set_f(y, b, x2 * c + x1 * s);
	}
}

static Status k_rotary_embedding(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	Rope r = { 0 };
	if (rope_plan(k, in, nin, &r) != OK)
		return FAILED;
	if (!(out[0] = rt_copy(k->n->loc, in[0])))
		return FAILED;
	for (int64_t b = 0; b < r.B; b++)
		for (int64_t s = 0; s < r.S; s++) {
			int64_t p = r.one_start ? r.start + s : rt_get_i(in[1], b * r.S + s);
			for (int64_t h = 0; h < r.H; h++) {
				int64_t off = (r.four ? (b * r.H + h) * r.S + s : (b * r.S + s) * r.H + h) * r.D;
				rope_head(&r, in[0], in[2], in[3], out[0], off, p);
			}
		}
	return OK;
}

/* ---- the table ------------------------------------------------------------------- */

/* X(domain, name, kernel): SimplifiedLayerNormalization is ONNX Runtime's
 * in the default domain (it refuses it under com.microsoft). */
#define MS_KERNELS(X)                                                                   \
	X("com.microsoft", "FusedMatMul", k_fused_matmul)                               \
	X("com.microsoft", "Gelu", k_gelu)                                              \
	X("com.microsoft", "BiasGelu", k_bias_gelu)                                     \
	X("com.microsoft", "FastGelu", k_fast_gelu)                                     \
	X("com.microsoft", "SkipLayerNormalization", k_skip_layernorm)                  \
	X("com.microsoft", "MatMulNBits", k_matmul_nbits)                               \
	X("onnx", "SimplifiedLayerNormalization", k_simplified_layernorm)               \
	X("com.microsoft", "SkipSimplifiedLayerNormalization", k_skip_simplified_layernorm) \
	X("com.microsoft", "DynamicQuantizeMatMul", k_dynamic_quantize_matmul)             \
	X("com.microsoft", "GroupQueryAttention", k_group_query_attention)             \
	X("com.microsoft", "RotaryEmbedding", k_rotary_embedding)

static const struct { const char *domain, *name; Kernel k; } ms_kernels[] = {
#define X(domain, name, fn) { domain, name, fn },
	MS_KERNELS(X)
#undef X
};

Kernel rt_ms_kernel(Sym domain, Sym name)
{
	const char *d = sym_str(domain), *s = sym_str(name);
	for (size_t i = 0; i < sizeof ms_kernels / sizeof *ms_kernels; i++)
		if (strcmp(ms_kernels[i].name, s) == 0 && strcmp(ms_kernels[i].domain, d) == 0)
			return ms_kernels[i].k;
	return NULL;
}

const char *rt_ms_kernel_name(size_t i, const char **domain)
{
	if (i >= sizeof ms_kernels / sizeof *ms_kernels)
		return NULL;
	*domain = ms_kernels[i].domain;
	return ms_kernels[i].name;
}
