/* kernels_nn.c - the network ops a lowered PyTorch model meets besides
 * elementwise math: Softmax, LogSoftmax, LayerNormalization, Gemm,
 * GlobalAveragePool, Conv, Resize (nearest and linear).
 *
 * Floats only, computed in double.  Softmax subtracts the row's maximum
 * before exponentiating so large inputs do not overflow.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

Status rt_need_float(const KCtx *k, RTensor *const *in, uint32_t nin, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (i >= nin || !in[i])
			return rt_fail(k, "input %u is missing", i);
		if (!dtype_is_float(in[i]->dtype))
			return rt_unsupported(k, in[i]);
	}
	return OK;
}

/* ---- Softmax, LogSoftmax --------------------------------------------------- */

/* Opset 13 on: along one axis (default -1).  Before: the input is seen as
 * 2-D, [dims before axis] x [the rest], and each row is normalised
 * (default axis 1). */
static void softmax_rows(const RTensor *x, RTensor *y, int64_t outer, int64_t len, int64_t inner, int logsm)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t base = o * len * inner + i;
			double mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < len; j++)
				mx = fmax(mx, rt_get_f(x, base + j * inner));
			for (int64_t j = 0; j < len; j++)
				sum += exp(rt_get_f(x, base + j * inner) - mx);
			for (int64_t j = 0; j < len; j++) {
				double v = rt_get_f(x, base + j * inner) - mx;
				rt_set_f(y, base + j * inner, logsm ? v - log(sum) : exp(v) / sum);
			}
		}
}

static Status k_softmax(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis;
	if (rt_need_float(k, in, nin, 1) != OK)
		return FAILED;
	const RTensor *x = in[0];
	int old = k->opset < 13;
	if (x->rank == 0)
		return rt_fail(k, "the input must have rank 1 or more");
	if (rt_axis(k, rt_attr_int(k, "axis", old ? 1 : -1), x->rank, &axis) != OK)
		return FAILED;
	int64_t outer = 1, len = 1, inner = 1;
	for (int32_t d = 0; d < x->rank; d++) {
		if (d < axis)
			outer *= x->shape[d];
		else if (d == axis || old)
			len *= x->shape[d];
		else
			inner *= x->shape[d];
	}
	if (!(*out = rt_new(k->n->loc, x->dtype, x->rank, x->shape)))
		return FAILED;
	softmax_rows(x, *out, outer, len, inner, k->n->op == OP_ONNX_LogSoftmax);
	return OK;
}

/* ---- LayerNormalization ---------------------------------------------------- */

static RTensor *stat_tensor(const KCtx *k, const RTensor *x, int32_t axis)
{
	int64_t shape[RT_MAX_RANK];
	for (int32_t d = 0; d < x->rank; d++)
		shape[d] = d < axis ? x->shape[d] : 1;
	DType t = rt_attr_int(k, "stash_type", 1) == 11 ? DT_F64 : DT_F32;
	return rt_new(k->n->loc, t, x->rank, shape);
}

/* Scale and B broadcast to X's shape (unidirectionally). */
static Status ln_check(const KCtx *k, RTensor *const *in, uint32_t nin)
{
	int32_t rank;
	int64_t shape[RT_MAX_RANK];
	if (rt_need_float(k, in, nin, 2) != OK || (nin > 2 && in[2] && rt_need_float(k, in + 2, 1, 1) != OK))
		return FAILED;
	if (rt_broadcast(k->n->loc, k->op, nin > 2 ? 3 : 2, in, &rank, shape) != OK)
		return FAILED;
	if (rank != in[0]->rank || memcmp(shape, in[0]->shape, (size_t)rank * sizeof *shape) != 0)
		return rt_fail(k, "Scale and B must broadcast to the shape of X");
	return OK;
}

static void ln_rows(const KCtx *k, RTensor *const *in, uint32_t nin, int64_t rows, int64_t len, RTensor **out)
{
	const RTensor *x = in[0];
	RTensor *ops[3] = { in[0], in[1], nin > 2 ? in[2] : NULL };
	double eps = rt_attr_float(k, "epsilon", 1e-5);
	RtIter it;
	rt_iter_init(&it, x->rank, x->shape, ops[2] ? 3 : 2, ops);
	for (int64_t r = 0; r < rows; r++) {
		double mean = 0, var = 0;
		for (int64_t j = 0; j < len; j++)
			mean += rt_get_f(x, r * len + j);
		mean /= (double)len;
		for (int64_t j = 0; j < len; j++) {
			double d = rt_get_f(x, r * len + j) - mean;
			var += d * d;
		}
		double inv = 1.0 / sqrt(var / (double)len + eps);
		for (int64_t j = 0; j < len; j++, rt_iter_next(&it)) {
			double v = (rt_get_f(x, r * len + j) - mean) * inv * rt_get_f(in[1], it.off[1]);
			rt_set_f(out[0], r * len + j, ops[2] ? v + rt_get_f(ops[2], it.off[2]) : v);
		}
		if (out[1])
			rt_set_f(out[1], r, mean);
		if (out[2])
			rt_set_f(out[2], r, inv);
	}
}

static Status k_layernorm(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	int32_t axis;
	if (ln_check(k, in, nin) != OK || rt_axis(k, rt_attr_int(k, "axis", -1), in[0]->rank, &axis) != OK)
		return FAILED;
	const RTensor *x = in[0];
	int64_t rows = 1, len = 1;
	for (int32_t d = 0; d < x->rank; d++)
		*(d < axis ? &rows : &len) *= x->shape[d];
	RTensor *res[3] = { rt_new(k->n->loc, x->dtype, x->rank, x->shape), NULL, NULL };
	for (uint32_t i = 1; i < 3 && i < nout && res[0]; i++)
		res[i] = stat_tensor(k, x, axis);
	for (uint32_t i = 0; i < 3 && i < nout; i++)
		if (!res[i]) {
			for (uint32_t j = 0; j < 3; j++)
				rt_free(res[j]);
			return FAILED;
		}
	if (len)
		ln_rows(k, in, nin, rows, len, res);
	for (uint32_t i = 0; i < nout && i < 3; i++)
		out[i] = res[i];
	return OK;
}

/* ---- Gemm ---------------------------------------------------------------------- */

static Status gemm_dims(const KCtx *k, const RTensor *a, const RTensor *b, int64_t *m, int64_t *kk, int64_t *n)
{
	int ta = rt_attr_int(k, "transA", 0) != 0, tb = rt_attr_int(k, "transB", 0) != 0;
	if (a->rank != 2 || b->rank != 2)
		return rt_fail(k, "A and B must be matrices");
	*m = a->shape[ta];
	*kk = a->shape[!ta];
	*n = b->shape[!tb];
	if (b->shape[tb] != *kk)
		return rt_fail(k, "inner dims differ: %lld and %lld", (long long)*kk, (long long)b->shape[tb]);
	return OK;
}

static Status k_gemm(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t m = 0, kk = 0, n = 0;
	if (rt_need_float(k, in, nin, 2) != OK || gemm_dims(k, in[0], in[1], &m, &kk, &n) != OK)
		return FAILED;
	const RTensor *a = in[0], *b = in[1];
	RTensor *c = nin > 2 ? in[2] : NULL;
	int64_t shape[2] = { m, n };
	RTensor target = { .dtype = a->dtype, .rank = 2, .shape = { m, n } }, *both[2] = { &target, c };
	int32_t rank;
	int64_t bshape[RT_MAX_RANK];
	if (c && (rt_broadcast(k->n->loc, k->op, 2, both, &rank, bshape) != OK || rank != 2 || bshape[0] != m ||
		  bshape[1] != n))
		return rt_fail(k, "C must broadcast to [%lld,%lld]", (long long)m, (long long)n);
	if (!(*out = rt_new(k->n->loc, a->dtype, 2, shape)))
		return FAILED;
	int ta = rt_attr_int(k, "transA", 0) != 0, tb = rt_attr_int(k, "transB", 0) != 0;
	double alpha = rt_attr_float(k, "alpha", 1.0), beta = rt_attr_float(k, "beta", 1.0);
	RtIter it;
	if (c)
		rt_iter_init(&it, 2, shape, 1, &c);
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t t = 0; t < kk; t++)
				s += rt_get_f(a, ta ? t * m + i : i * kk + t) * rt_get_f(b, tb ? j * kk + t : t * n + j);
			s *= alpha;
			if (c) {
				s += beta * rt_get_f(c, it.off[0]);
				rt_iter_next(&it);
			}
			rt_set_f(*out, i * n + j, s);
		}
	return OK;
}

/* ---- GlobalAveragePool -------------------------------------------------------- */

/* [N, C, D1, ...] -> [N, C, 1, ...]: the mean of each (n, c) plane. */
static Status k_global_avg_pool(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (rt_need_float(k, in, nin, 1) != OK)
		return FAILED;
	const RTensor *x = in[0];
	if (x->rank < 2)
		return rt_fail(k, "input must have rank 2 or more, not %d", x->rank);
	int64_t shape[RT_MAX_RANK];
	for (int32_t d = 0; d < x->rank; d++)
		shape[d] = d < 2 ? x->shape[d] : 1;
	if (!(*out = rt_new(k->n->loc, x->dtype, x->rank, shape)))
		return FAILED;
	int64_t planes = x->shape[0] * x->shape[1], size = planes ? x->numel / planes : 0;
	for (int64_t p = 0; p < planes; p++) {
		double s = 0;
		for (int64_t i = 0; i < size; i++)
			s += rt_get_f(x, p * size + i);
		rt_set_f(*out, p, size ? s / (double)size : NAN);
	}
	return OK;
}

/* ---- Conv ---------------------------------------------------------------------- */

/* X [N, C, D...] * W [M, C/group, K...] (+ B [M]) -> [N, M, O...], any
 * number of spatial dims, with pads (or auto_pad), strides, dilations and
 * groups; sums in double.  Direct and unblocked: it serves folding (a
 * convolution of constants) and `onnxc run`, not speed. */
static Status k_conv(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (rt_need_float(k, in, nin, 2) != OK)
		return FAILED;
	const RTensor *x = in[0], *w = in[1], *b = nin > 2 ? in[2] : NULL;
	int32_t sp = x->rank - 2;
	int64_t group = rt_attr_int(k, "group", 1);
	if (sp < 1 || w->rank != x->rank || group < 1 || x->shape[1] % group || w->shape[0] % group ||
	    w->shape[1] * group != x->shape[1] || (b && (b->rank != 1 || b->shape[0] != w->shape[0])))
		return rt_fail(k, "operands X, W, B do not make a convolution");
	int64_t *pads, np, *strides, ns, *dil, nd;
	char buf[16];
	if (rt_attr_ints(k, "pads", &pads, &np) != OK)
		return FAILED;
	if (rt_attr_ints(k, "strides", &strides, &ns) != OK || rt_attr_ints(k, "dilations", &dil, &nd) != OK) {
		free(pads);
		free(strides);
		return FAILED;
	}
	const char *autopad = rt_attr_str(k, "auto_pad", "NOTSET", buf, sizeof buf);
	int64_t pb[RT_MAX_RANK], st[RT_MAX_RANK], dl[RT_MAX_RANK], ks[RT_MAX_RANK], shape[RT_MAX_RANK];
	Status s = OK;
	if ((np >= 0 && np != 2 * sp) || (ns >= 0 && ns != sp) || (nd >= 0 && nd != sp))
		s = rt_fail(k, "pads, strides or dilations do not match %d spatial dims", (int)sp);
	shape[0] = x->shape[0];
	shape[1] = w->shape[0];
	for (int32_t d = 0; d < sp && s == OK; d++) {
		int64_t n = x->shape[d + 2];
		ks[d] = w->shape[d + 2];
		st[d] = ns > 0 ? strides[d] : 1;
		dl[d] = nd > 0 ? dil[d] : 1;
		if (st[d] < 1 || dl[d] < 1) {
			s = rt_fail(k, "strides and dilations must be positive");
			break;
		}
		int64_t span = dl[d] * (ks[d] - 1) + 1, pe;
		if (strcmp(autopad, "SAME_UPPER") == 0 || strcmp(autopad, "SAME_LOWER") == 0) {
			int64_t o = (n + st[d] - 1) / st[d], total = (o - 1) * st[d] + span - n;
			total = total > 0 ? total : 0;
			pb[d] = autopad[5] == 'U' ? total / 2 : total - total / 2;
			pe = total - pb[d];
		} else if (strcmp(autopad, "VALID") == 0) {
			pb[d] = pe = 0;
		} else {
			pb[d] = np > 0 ? pads[d] : 0;
			pe = np > 0 ? pads[d + sp] : 0;
		}
		int64_t o = n + pb[d] + pe - span;
		if (o < 0) {
			s = rt_fail(k, "the kernel is larger than the padded input in spatial dim %d", (int)d);
			break;
		}
		shape[d + 2] = o / st[d] + 1;
	}
	free(pads);
	free(strides);
	free(dil);
	if (s != OK || !(*out = rt_new(k->n->loc, x->dtype, x->rank, shape)))
		return FAILED;
	int64_t cg = w->shape[1], mg = w->shape[0] / group, insz = 1, ksz = 1, at = 0;
	for (int32_t d = 0; d < sp; d++) {
		insz *= x->shape[d + 2];
		ksz *= ks[d];
	}
	if ((*out)->numel == 0)
		return OK;
	for (int64_t n = 0; n < shape[0]; n++)
		for (int64_t m = 0; m < shape[1]; m++) {
			int64_t oi[RT_MAX_RANK] = { 0 }, c0 = m / mg * cg;
			do {
				double acc = b ? rt_get_f(b, m) : 0;
				for (int64_t c = 0; c < cg; c++) {
					int64_t ki[RT_MAX_RANK] = { 0 }, kat = (m * cg + c) * ksz;
					int64_t xbase = (n * x->shape[1] + c0 + c) * insz;
					do {
						int64_t off = 0, ok = 1;
						for (int32_t d = 0; d < sp && ok; d++) {
							int64_t p = oi[d] * st[d] - pb[d] + ki[d] * dl[d];
							ok = p >= 0 && p < x->shape[d + 2];
							off = off * x->shape[d + 2] + p;
						}
						if (ok)
							acc += rt_get_f(x, xbase + off) * rt_get_f(w, kat);
						kat++;
					} while (rt_next_index(ki, ks, sp));
				}
				rt_set_f(*out, at++, acc);
			} while (rt_next_index(oi, shape + 2, sp));
		}
	return OK;
}

/* ---- Resize ------------------------------------------------------------------- */

/* Opset 11 on, modes nearest and (n-)linear, without antialias, every
 * coordinate transformation but tf_crop_and_resize, the stretch policy.
 * Linear interpolation is separable, so the input is resampled one axis at
 * a time (computed in double); a sample past an edge takes the edge's
 * value, as in the operator's reference.  What the kernel lacks is refused
 * with "kernel lacks ...", and folding leaves such a node alone. */
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC };
enum { NM_PREFER_FLOOR, NM_PREFER_CEIL, NM_FLOOR, NM_CEIL };

static int lookup(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

/* The input coordinate of output index x along an axis of in_len -> out_len
 * elements at scale `scale`.  The resized length in the formulas is the
 * unrounded scale * in_len, as in the operator's reference (it differs from
 * out_len when scales are given). */
static double resize_coord(int ct, double x, double scale, int64_t in_len, int64_t out_len)
{
	double len = scale * (double)in_len;
	switch (ct) {
	case CT_HALF_PIXEL_SYM: {
		double center = (double)in_len / 2;
		return center * (1 - (double)out_len / len) + (x + 0.5) / scale - 0.5;
	}
	case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (x + 0.5) / scale - 0.5 : 0;
	case CT_ALIGN_CORNERS: return len > 1 ? x * (double)(in_len - 1) / (len - 1) : 0;
	case CT_ASYMMETRIC: return x / scale;
	default: return (x + 0.5) / scale - 0.5;
	}
}

static int64_t clamp_index(int64_t i, int64_t len)
{
	return i < 0 ? 0 : i >= len ? len - 1 : i;
}

/* Resamples src ([outer, in_len, inner] doubles) along its middle axis into
 * dst ([outer, out_len, inner]). */
static void resize_axis(const double *src, double *dst, int64_t outer, int64_t in_len, int64_t out_len, int64_t inner,
			double scale, int ct, int linear, int nm)
{
	for (int64_t j = 0; j < out_len; j++) {
		double x = resize_coord(ct, (double)j, scale, in_len, out_len), w = 0;
		int64_t i0, i1;
		if (linear) {
			double f = floor(x);
			w = x - f;
			i0 = clamp_index((int64_t)f, in_len);
			i1 = clamp_index((int64_t)f + 1, in_len);
		} else {
			double r = nm == NM_FLOOR ? floor(x) : nm == NM_CEIL ? ceil(x)
				 : nm == NM_PREFER_CEIL ? floor(x + 0.5) : ceil(x - 0.5);
			i0 = i1 = clamp_index((int64_t)r, in_len);
		}
		for (int64_t o = 0; o < outer; o++) {
			const double *a = src + (o * in_len + i0) * inner, *b = src + (o * in_len + i1) * inner;
			double *d = dst + (o * out_len + j) * inner;
			for (int64_t i = 0; i < inner; i++)
				d[i] = w == 0 ? a[i] : (1 - w) * a[i] + w * b[i];
		}
	}
}

/* The output dims and per-axis scales from scales or sizes (over `axes`,
 * or every axis). */
static Status resize_plan(const KCtx *k, RTensor *const *in, uint32_t nin, int64_t *shape, double *scale)
{
	const RTensor *x = in[0], *sc = nin > 2 ? in[2] : NULL, *sz = nin > 3 ? in[3] : NULL;
	int64_t *axes, na, *sizes = NULL, ns = -1;
	int32_t map[RT_MAX_RANK];
	if (rt_attr_ints(k, "axes", &axes, &na) != OK)
		return FAILED;
	for (int32_t d = 0; d < x->rank; d++) {
		shape[d] = x->shape[d];
		scale[d] = 1;
		map[d] = d;
	}
	int64_t nax = na < 0 ? x->rank : na;
	Status st = OK;
	for (int64_t i = 0; i < na && st == OK; i++)
		st = rt_axis(k, axes[i], x->rank, &map[i]);
	free(axes);
	if (st != OK)
		return FAILED;
	if (sz && sz->numel > 0) {
		if (rt_input_ints(k, sz, &sizes, &ns) != OK)
			return FAILED;
		if (ns != nax) {
			free(sizes);
			return rt_fail(k, "sizes has %lld values for %lld axes", (long long)ns, (long long)nax);
		}
		for (int64_t i = 0; i < ns; i++) {
			int32_t d = map[i];
			shape[d] = sizes[i];
			scale[d] = x->shape[d] ? (double)sizes[i] / (double)x->shape[d] : 1;
		}
		free(sizes);
		return OK;
	}
	if (!sc || sc->numel != nax || !dtype_is_float(sc->dtype))
		return rt_fail(k, "needs float scales or int sizes for each of its %lld axes", (long long)nax);
	for (int64_t i = 0; i < nax; i++) {
		int32_t d = map[i];
		scale[d] = rt_get_f(sc, i);
		if (!(scale[d] > 0))
			return rt_fail(k, "scale %g is not positive", scale[d]);
		shape[d] = (int64_t)floor((double)x->shape[d] * scale[d]);
	}
	return OK;
}

static Status k_resize(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	static const char *const cts[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
					   "asymmetric" };
	static const char *const nms[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
	char b1[32], b2[32], b3[32], b4[32];
	if (nin < 1 || !in[0])
		return rt_fail(k, "input 0 is missing");
	const RTensor *x = in[0];
	/* Computed in double: 64-bit integers past 2^53 would not survive. */
	if (!dtype_is_float(x->dtype) && (!dtype_is_int(x->dtype) || rt_elem_size(x->dtype) == 8))
		return rt_unsupported(k, x);
	const char *mode = rt_attr_str(k, "mode", "nearest", b1, sizeof b1);
	const char *cts_s = rt_attr_str(k, "coordinate_transformation_mode", "half_pixel", b2, sizeof b2);
	const char *nm_s = rt_attr_str(k, "nearest_mode", "round_prefer_floor", b3, sizeof b3);
	const char *policy = rt_attr_str(k, "keep_aspect_ratio_policy", "stretch", b4, sizeof b4);
	int linear = strcmp(mode, "linear") == 0, ct = lookup(cts_s, cts, 5), nm = lookup(nm_s, nms, 4);
	if (k->opset < 11)
		return rt_fail(k, "kernel lacks Resize before opset 11");
	if (!linear && strcmp(mode, "nearest") != 0)
		return rt_fail(k, "kernel lacks mode '%s'", mode);
	if (ct < 0 || nm < 0)
		return rt_fail(k, "kernel lacks coordinate_transformation_mode '%s' / nearest_mode '%s'", cts_s, nm_s);
	if (rt_attr_int(k, "antialias", 0) || strcmp(policy, "stretch") != 0)
		return rt_fail(k, "kernel lacks antialias and keep_aspect_ratio_policy '%s'", policy);
	int64_t shape[RT_MAX_RANK];
	double scale[RT_MAX_RANK];
	if (resize_plan(k, in, nin, shape, scale) != OK)
		return FAILED;
	for (int32_t d = 0; d < x->rank; d++)
		if (x->shape[d] == 0 && shape[d] > 0)
			return rt_fail(k, "cannot resize the empty axis %d to %lld elements", (int)d, (long long)shape[d]);
	if (!(*out = rt_new(k->n->loc, x->dtype, x->rank, shape)))
		return FAILED;
	/* Resample axis by axis, the current extent of each axis in cur. */
	int64_t cur[RT_MAX_RANK], big = x->numel;
	memcpy(cur, x->shape, (size_t)x->rank * sizeof *cur);
	for (int32_t d = 0; d < x->rank; d++) {
		int64_t n = 1;
		for (int32_t e = 0; e < x->rank; e++)
			n *= e < d ? shape[e] : x->shape[e];
		int64_t m = n / (x->shape[d] ? x->shape[d] : 1) * shape[d];
		big = n > big ? n : big;
		big = m > big ? m : big;
	}
	double *a = xcalloc((size_t)big + 1, sizeof *a), *b = xcalloc((size_t)big + 1, sizeof *b);
	for (int64_t i = 0; i < x->numel; i++)
		a[i] = rt_get_f(x, i);
	for (int32_t d = 0; d < x->rank; d++) {
		if (shape[d] == cur[d] && scale[d] == 1)
			continue;
		int64_t outer = 1, inner = 1;
		for (int32_t e = 0; e < d; e++)
			outer *= cur[e];
		for (int32_t e = d + 1; e < x->rank; e++)
			inner *= cur[e];
		resize_axis(a, b, outer, cur[d], shape[d], inner, scale[d], ct, linear, nm);
		cur[d] = shape[d];
		double *t = a;
		a = b;
		b = t;
	}
	int integral = !dtype_is_float(x->dtype);
	for (int64_t i = 0; i < (*out)->numel; i++)
		rt_set_f(*out, i, integral ? nearbyint(a[i]) : a[i]);
	free(a);
	free(b);
	return OK;
}

Kernel rt_nn_kernel(OpId op)
{
	switch (op) {
	case OP_ONNX_Softmax: case OP_ONNX_LogSoftmax: return k_softmax;
	case OP_ONNX_LayerNormalization: return k_layernorm;
	case OP_ONNX_Gemm: return k_gemm;
	case OP_ONNX_GlobalAveragePool: return k_global_avg_pool;
	case OP_ONNX_Resize: return k_resize;
	case OP_ONNX_Conv: return k_conv;
	default: return NULL;
	}
}
