/* kernels_shape.c - data movement and shape kernels: Reshape, Flatten,
 * Squeeze, Unsqueeze, Transpose, Slice, Expand, Tile, Concat, Split,
 * Gather, GatherElements, ScatterElements, GatherND, Trilu, EyeLike, Dropout (inference), Shape, Size,
 * Range, Identity, Constant, ConstantOfShape.
 *
 * They move elements as bytes, so they work for every dtype the runtime
 * holds.  Transpose, Slice and Expand are one strided copy each: the
 * output is walked in order and the input read through per-dim strides.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

static int numeric(DType t)
{
	return (dtype_is_float(t) || dtype_is_int(t)) && t != DT_U64;
}

static void row_strides(const RTensor *t, int64_t *st)
{
	int64_t s = 1;
	for (int32_t d = t->rank - 1; d >= 0; d--) {
		st[d] = s;
		s *= t->shape[d];
	}
}

/* out[i] = in[base + sum(idx[d] * stride[d])] over out's shape. */
static void strided_copy(RTensor *out, const RTensor *in, const int64_t *stride, int64_t base)
{
	size_t es = rt_elem_size(in->dtype);
	RtIter it;
	memset(&it, 0, sizeof it);
	it.rank = out->rank;
	it.n = 1;
	memcpy(it.shape, out->shape, sizeof it.shape);
	memcpy(it.stride[0], stride, (size_t)out->rank * sizeof *stride);
	it.off[0] = base;
	for (int64_t i = 0; i < out->numel; i++, rt_iter_next(&it))
		memcpy(out->data + (size_t)i * es, in->data + (size_t)it.off[0] * es, es);
}

static Status need(const KCtx *k, RTensor *const *in, uint32_t nin, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (i >= nin || !in[i])
			return rt_fail(k, "input %u is missing", i);
	return OK;
}

/* The same bytes under another shape. */
static Status reshaped(const KCtx *k, const RTensor *x, int32_t rank, const int64_t *shape, RTensor **out)
{
	*out = rt_from_data(k->n->loc, x->dtype, rank, shape, x->data, x->nbytes);
	return *out ? OK : FAILED;
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------ */

static Status reshape_dims(const KCtx *k, const RTensor *x, int64_t *s, int64_t n)
{
	int allowzero = (int)rt_attr_int(k, "allowzero", 0);
	int64_t known = 1, infer = -1;
	for (int64_t i = 0; i < n; i++) {
		if (s[i] == 0 && !allowzero) {
			if (i >= x->rank)
				return rt_fail(k, "shape entry %lld is 0 but the input has rank %d", (long long)i, (int)x->rank);
			s[i] = x->shape[i];
		}
		if (s[i] == -1 && infer < 0)
			infer = i;
		else if (s[i] < 0)
			return rt_fail(k, "bad shape entry %lld", (long long)s[i]);
		else if (s[i] && known > INT64_MAX / s[i])
			return rt_fail(k, "the shape's size overflows");
		else
			known *= s[i];
	}
	if (infer >= 0) {
		if (known == 0 || x->numel % known)
			return rt_fail(k, "cannot infer the -1 dim: %lld elements into blocks of %lld", (long long)x->numel,
				(long long)known);
		s[infer] = x->numel / known;
	} else if (known != x->numel)
		return rt_fail(k, "cannot reshape %lld elements into %lld", (long long)x->numel, (long long)known);
	return OK;
}

static Status k_reshape(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *s, n;
	if (need(k, in, nin, 2) != OK || rt_input_ints(k, in[1], &s, &n) != OK)
		return FAILED;
	Status st = n > RT_MAX_RANK ? rt_fail(k, "rank %lld is too large", (long long)n) : reshape_dims(k, in[0], s, n);
	if (st == OK)
		st = reshaped(k, in[0], (int32_t)n, s, out);
	free(s);
	return st;
}

static Status k_flatten(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	const RTensor *x = in[0];
	int64_t axis = rt_attr_int(k, "axis", 1);
	if (axis < -(int64_t)x->rank || axis > x->rank)
		return rt_fail(k, "axis %lld is out of range for rank %d", (long long)axis, (int)x->rank);
	if (axis < 0)
		axis += x->rank;
	int64_t s[2] = { 1, 1 };
	for (int32_t d = 0; d < x->rank; d++)
		s[d >= axis] *= x->shape[d];
	return reshaped(k, x, 2, s, out);
}

/* Axes from the second input (opset 13 on) or the attribute (before). */
static Status axes_of(const KCtx *k, RTensor *const *in, uint32_t nin, int64_t **v, int64_t *n)
{
	if (nin > 1 && in[1])
		return rt_input_ints(k, in[1], v, n);
	return rt_attr_ints(k, "axes", v, n);
}

static Status k_squeeze(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *ax, n, s[RT_MAX_RANK];
	uint8_t drop[RT_MAX_RANK] = { 0 };
	if (need(k, in, nin, 1) != OK || axes_of(k, in, nin, &ax, &n) != OK)
		return FAILED;
	const RTensor *x = in[0];
	Status st = OK;
	for (int64_t i = 0; st == OK && i < n; i++) {
		int32_t a;
		st = rt_axis(k, ax[i], x->rank, &a);
		if (st == OK && x->shape[a] != 1)
			st = rt_fail(k, "cannot squeeze axis %d of size %lld", (int)a, (long long)x->shape[a]);
		if (st == OK)
			drop[a] = 1;
	}
	free(ax);
	int32_t r = 0;
	for (int32_t d = 0; d < x->rank; d++)
		if (!(n < 0 ? x->shape[d] == 1 : drop[d]))
			s[r++] = x->shape[d];
	return st == OK ? reshaped(k, x, r, s, out) : FAILED;
}

static Status k_unsqueeze(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *ax, n, s[RT_MAX_RANK];
	uint8_t add[RT_MAX_RANK] = { 0 };
	if (need(k, in, nin, 1) != OK || axes_of(k, in, nin, &ax, &n) != OK)
		return FAILED;
	const RTensor *x = in[0];
	Status st = n < 0 ? rt_fail(k, "no axes given") : n + x->rank > RT_MAX_RANK ? rt_fail(k, "rank too large") : OK;
	int32_t r = st == OK ? (int32_t)(n + x->rank) : 0;
	for (int64_t i = 0; st == OK && i < n; i++) {
		int32_t a;
		st = rt_axis(k, ax[i], r, &a);
		if (st == OK && add[a])
			st = rt_fail(k, "axis %d is given twice", (int)a);
		if (st == OK)
			add[a] = 1;
	}
	free(ax);
	for (int32_t d = 0, j = 0; st == OK && d < r; d++)
		s[d] = add[d] ? 1 : x->shape[j++];
	return st == OK ? reshaped(k, x, r, s, out) : FAILED;
}

/* ---- Transpose, Slice, Expand, Tile --------------------------------------------- */

static Status k_transpose(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *perm, n, st[RT_MAX_RANK], shape[RT_MAX_RANK], stride[RT_MAX_RANK];
	uint8_t seen[RT_MAX_RANK] = { 0 };
	if (need(k, in, nin, 1) != OK || rt_attr_ints(k, "perm", &perm, &n) != OK)
		return FAILED;
	const RTensor *x = in[0];
	row_strides(x, st);
	Status s = n >= 0 && n != x->rank ? rt_fail(k, "perm has %lld entries for rank %d", (long long)n, (int)x->rank) : OK;
	for (int32_t d = 0; s == OK && d < x->rank; d++) {
		int64_t p = n < 0 ? x->rank - 1 - d : perm[d];
		if (p < 0 || p >= x->rank || seen[p]) {
			s = rt_fail(k, "perm is not a permutation");
			break;
		}
		seen[p] = 1;
		shape[d] = x->shape[p];
		stride[d] = st[p];
	}
	free(perm);
	if (s != OK || !(*out = rt_new(k->n->loc, x->dtype, x->rank, shape)))
		return FAILED;
	strided_copy(*out, x, stride, 0);
	return OK;
}

/* Clamps start and end as ONNX's Slice does and returns the count. */
static int64_t slice_dim(int64_t dim, int64_t step, int64_t *start, int64_t end)
{
	int64_t b = *start < 0 ? *start + dim : *start, e = end < 0 ? end + dim : end;
	if (step > 0) {
		b = b < 0 ? 0 : b > dim ? dim : b;
		e = e < 0 ? 0 : e > dim ? dim : e;
		*start = b;
		return e > b ? (e - b + step - 1) / step : 0;
	}
	b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
	e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
	*start = b;
	return b > e ? (b - e + (-step) - 1) / (-step) : 0;
}

typedef struct SliceArgs { int64_t *starts, *ends, *axes, *steps, n, nax, nst; } SliceArgs;

static Status slice_args(const KCtx *k, RTensor *const *in, uint32_t nin, SliceArgs *a)
{
	int64_t ne;
	memset(a, 0, sizeof *a);
	a->nax = a->nst = -1;
	if (nin >= 3 && in[1] && in[2]) {
		if (rt_input_ints(k, in[1], &a->starts, &a->n) || rt_input_ints(k, in[2], &a->ends, &ne) ||
		    rt_input_ints(k, nin > 3 ? in[3] : NULL, &a->axes, &a->nax) ||
		    rt_input_ints(k, nin > 4 ? in[4] : NULL, &a->steps, &a->nst))
			return FAILED;
	} else if (rt_attr_ints(k, "starts", &a->starts, &a->n) || rt_attr_ints(k, "ends", &a->ends, &ne) ||
		   rt_attr_ints(k, "axes", &a->axes, &a->nax))
		return FAILED;
	if (a->n < 0 || ne != a->n || (a->nax >= 0 && a->nax != a->n) || (a->nst >= 0 && a->nst != a->n))
		return rt_fail(k, "starts, ends, axes and steps must have one length");
	return OK;
}

static Status slice_plan(const KCtx *k, const RTensor *x, const SliceArgs *a, int64_t *shape, int64_t *stride,
	int64_t *base)
{
	int64_t st[RT_MAX_RANK];
	uint8_t seen[RT_MAX_RANK] = { 0 };
	row_strides(x, st);
	memcpy(shape, x->shape, sizeof x->shape);
	memcpy(stride, st, sizeof st);
	*base = 0;
	for (int64_t i = 0; i < a->n; i++) {
		int32_t ax;
		int64_t step = a->nst >= 0 ? a->steps[i] : 1, start = a->starts[i];
		if (rt_axis(k, a->nax >= 0 ? a->axes[i] : i, x->rank, &ax) != OK)
			return FAILED;
		if (step == 0 || seen[ax])
			return rt_fail(k, step ? "axis %d is sliced twice" : "step 0 on axis %d", (int)ax);
		/* A step longer than the dim takes one element either way; capping
		 * it keeps the stride arithmetic from overflowing. */
		int64_t cap = x->shape[ax] > 0 ? x->shape[ax] : 1;
		step = step > cap ? cap : step < -cap ? -cap : step;
		seen[ax] = 1;
		shape[ax] = slice_dim(x->shape[ax], step, &start, a->ends[i]);
		stride[ax] = st[ax] * step;
		*base += shape[ax] ? start * st[ax] : 0;
	}
	return OK;
}

static Status k_slice(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	SliceArgs a;
	int64_t shape[RT_MAX_RANK], stride[RT_MAX_RANK], base;
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	Status s = slice_args(k, in, nin, &a);
	if (s == OK)
		s = slice_plan(k, in[0], &a, shape, stride, &base);
	if (s == OK && (*out = rt_new(k->n->loc, in[0]->dtype, in[0]->rank, shape)))
		strided_copy(*out, in[0], stride, base);
	free(a.starts), free(a.ends), free(a.axes), free(a.steps);
	return s == OK && *out ? OK : FAILED;
}

static Status k_expand(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *s, n, shape[RT_MAX_RANK];
	int32_t rank;
	if (need(k, in, nin, 2) != OK || rt_input_ints(k, in[1], &s, &n) != OK)
		return FAILED;
	RTensor target = { .dtype = in[0]->dtype, .rank = (int32_t)n };
	Status st = n > RT_MAX_RANK ? rt_fail(k, "rank %lld is too large", (long long)n) : OK;
	if (st == OK)
		memcpy(target.shape, s, (size_t)n * sizeof *s);
	free(s);
	RTensor *both[2] = { in[0], &target };
	if (st != OK || rt_broadcast(k->n->loc, k->op, 2, both, &rank, shape) != OK ||
	    !(*out = rt_new(k->n->loc, in[0]->dtype, rank, shape)))
		return FAILED;
	RtIter it;
	rt_iter_init(&it, rank, shape, 1, in);
	strided_copy(*out, in[0], it.stride[0], 0);
	return OK;
}

static Status k_tile(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *rep, n, shape[RT_MAX_RANK], st[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	if (need(k, in, nin, 2) != OK || rt_input_ints(k, in[1], &rep, &n) != OK)
		return FAILED;
	const RTensor *x = in[0];
	Status s = n != x->rank ? rt_fail(k, "repeats has %lld entries for rank %d", (long long)n, (int)x->rank) : OK;
	for (int32_t d = 0; s == OK && d < x->rank; d++) {
		if (rep[d] < 0 || (rep[d] && x->shape[d] > INT64_MAX / rep[d]))
			s = rt_fail(k, "bad repeat count %lld", (long long)rep[d]);
		else
			shape[d] = x->shape[d] * rep[d];
	}
	free(rep);
	if (s != OK || !(*out = rt_new(k->n->loc, x->dtype, x->rank, shape)))
		return FAILED;
	row_strides(x, st);
	size_t es = rt_elem_size(x->dtype);
	for (int64_t i = 0; i < (*out)->numel; i++) {
		int64_t off = 0;
		for (int32_t d = 0; d < x->rank; d++)
			off += idx[d] % x->shape[d] * st[d];
		memcpy((*out)->data + (size_t)i * es, x->data + (size_t)off * es, es);
		for (int32_t d = x->rank - 1; d >= 0 && ++idx[d] == shape[d]; d--)
			idx[d] = 0;
	}
	return OK;
}

/* ---- Concat, Split, Gather --------------------------------------------------- */

/* Elements before axis (outer) and from axis on (inner, per unit of the axis). */
static void outer_inner(const RTensor *t, int32_t axis, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int32_t d = 0; d < t->rank; d++) {
		if (d < axis)
			*outer *= t->shape[d];
		else if (d > axis)
			*inner *= t->shape[d];
	}
}

static Status concat_shape(const KCtx *k, RTensor *const *in, uint32_t nin, int32_t *axis, int64_t *shape)
{
	const RTensor *x = in[0];
	if (rt_axis(k, rt_attr_int(k, "axis", 0), x->rank, axis) != OK)
		return FAILED;
	memcpy(shape, x->shape, sizeof x->shape);
	shape[*axis] = 0;
	for (uint32_t i = 0; i < nin; i++) {
		if (!in[i] || in[i]->rank != x->rank || in[i]->dtype != x->dtype)
			return rt_fail(k, "input %u differs in rank or dtype from input 0", i);
		for (int32_t d = 0; d < x->rank; d++)
			if (d != *axis && in[i]->shape[d] != x->shape[d])
				return rt_fail(k, "input %u differs in dim %d from input 0", i, (int)d);
		shape[*axis] += in[i]->shape[*axis];
	}
	return OK;
}

static Status k_concat(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis;
	int64_t shape[RT_MAX_RANK], outer, inner;
	if (need(k, in, nin, 1) != OK || concat_shape(k, in, nin, &axis, shape) != OK)
		return FAILED;
	RTensor *z = rt_new(k->n->loc, in[0]->dtype, in[0]->rank, shape);
	if (!z)
		return FAILED;
	size_t es = rt_elem_size(z->dtype), at = 0;
	outer_inner(z, axis, &outer, &inner);
	size_t row = (size_t)(shape[axis] * inner) * es;
	for (uint32_t i = 0; i < nin; i++) {
		size_t chunk = (size_t)(in[i]->shape[axis] * inner) * es;
		for (int64_t o = 0; o < outer; o++)
			memcpy(z->data + (size_t)o * row + at, in[i]->data + (size_t)o * chunk, chunk);
		at += chunk;
	}
	*out = z;
	return OK;
}

/* Sizes from the second input (opset 13 on), the attribute, num_outputs
 * (opset 18: equal parts, the last smaller), or equal parts. */
static Status split_sizes(const KCtx *k, RTensor *const *in, uint32_t nin, int64_t dim, uint32_t nout, int64_t **sz)
{
	int64_t n;
	if ((nin > 1 && in[1] ? rt_input_ints(k, in[1], sz, &n) : rt_attr_ints(k, "split", sz, &n)) != OK)
		return FAILED;
	if (nout == 0)
		return rt_fail(k, "no outputs");
	if (n >= 0) {
		int64_t sum = 0;
		for (int64_t i = 0; i < n && sum <= dim; i++)
			sum = (*sz)[i] < 0 || (*sz)[i] > dim ? dim + 1 : sum + (*sz)[i];
		if (n != nout || sum != dim)
			return rt_fail(k, "split sizes do not add up to %lld in %u parts", (long long)dim, nout);
		return OK;
	}
	*sz = xcalloc(nout + 1, sizeof **sz);
	int64_t part = (dim + nout - 1) / nout;
	for (uint32_t i = 0; i < nout; i++) {
		int64_t left = dim - part * i;
		(*sz)[i] = left < 0 ? 0 : left < part ? left : part;
	}
	if (!rt_attr(k, "num_outputs") && dim % nout)
		return rt_fail(k, "cannot split %lld into %u equal parts", (long long)dim, nout);
	return OK;
}

static Status k_split(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	int32_t axis;
	int64_t *sz = NULL, outer, inner, shape[RT_MAX_RANK];
	if (need(k, in, nin, 1) != OK || rt_axis(k, rt_attr_int(k, "axis", 0), in[0]->rank, &axis) != OK)
		return FAILED;
	const RTensor *x = in[0];
	Status s = split_sizes(k, in, nin, x->shape[axis], nout, &sz);
	outer_inner(x, axis, &outer, &inner);
	size_t es = rt_elem_size(x->dtype), row = (size_t)(x->shape[axis] * inner) * es, at = 0;
	memcpy(shape, x->shape, sizeof shape);
	for (uint32_t i = 0; s == OK && i < nout; i++) {
		shape[axis] = sz[i];
		if (!(out[i] = rt_new(k->n->loc, x->dtype, x->rank, shape)))
			s = FAILED;
		size_t chunk = (size_t)(sz[i] * inner) * es;
		for (int64_t o = 0; s == OK && o < outer; o++)
			memcpy(out[i]->data + (size_t)o * chunk, x->data + (size_t)o * row + at, chunk);
		at += chunk;
	}
	free(sz);
	return s;
}

static Status k_gather(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis, r = 0;
	int64_t shape[RT_MAX_RANK], outer, inner;
	if (need(k, in, nin, 2) != OK || rt_axis(k, rt_attr_int(k, "axis", 0), in[0]->rank, &axis) != OK)
		return FAILED;
	const RTensor *x = in[0], *ix = in[1];
	if (ix->dtype != DT_I64 && ix->dtype != DT_I32)
		return rt_unsupported(k, ix);
	if (x->rank - 1 + ix->rank > RT_MAX_RANK)
		return rt_fail(k, "the result's rank is too large");
	for (int32_t d = 0; d < x->rank; d++) {
		if (d == axis)
			for (int32_t j = 0; j < ix->rank; j++)
				shape[r++] = ix->shape[j];
		else
			shape[r++] = x->shape[d];
	}
	RTensor *z = rt_new(k->n->loc, x->dtype, r, shape);
	if (!z)
		return FAILED;
	outer_inner(x, axis, &outer, &inner);
	size_t es = rt_elem_size(x->dtype), block = (size_t)inner * es;
	int64_t dim = x->shape[axis];
	for (int64_t o = 0, at = 0; o < outer; o++)
		for (int64_t j = 0; j < ix->numel; j++, at++) {
			int64_t i = rt_get_i(ix, j);
			if (i < -dim || i >= dim) {
				rt_free(z);
				return rt_fail(k, "index %lld is out of range for a dim of %lld", (long long)i, (long long)dim);
			}
			i += i < 0 ? dim : 0;
			memcpy(z->data + (size_t)at * block, x->data + (size_t)(o * dim + i) * block, block);
		}
	*out = z;
	return OK;
}

/* GatherElements' and ScatterElements' walk: the element offset (strides
 * st) in data of the indices' element at position idx, whose value j (in
 * range, negative from the end of a dim of dim) stands at axis; idx then
 * steps to the indices' next element. */
static int64_t element_at(int64_t *idx, const RTensor *ix, const int64_t *st, int32_t axis, int64_t j,
			  int64_t dim)
{
	int64_t off = 0;
	for (int32_t d = 0; d < ix->rank; d++)
		off += (d == axis ? j + (j < 0 ? dim : 0) : idx[d]) * st[d];
	rt_next_index(idx, ix->shape, ix->rank);
	return off;
}

/* out[i0..] = data[i0.., index at axis, ..]: indices has data's rank. */
static Status k_gather_elements(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis;
	int64_t st[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	if (need(k, in, nin, 2) != OK || rt_axis(k, rt_attr_int(k, "axis", 0), in[0]->rank, &axis) != OK)
		return FAILED;
	const RTensor *x = in[0], *ix = in[1];
	if (ix->dtype != DT_I64 && ix->dtype != DT_I32)
		return rt_unsupported(k, ix);
	if (ix->rank != x->rank)
		return rt_fail(k, "indices must have the rank of the data");
	for (int32_t d = 0; d < x->rank; d++)
		if (d != axis && ix->shape[d] > x->shape[d])
			return rt_fail(k, "indices are larger than the data in dim %d", (int)d);
	if (!(*out = rt_new(k->n->loc, x->dtype, ix->rank, ix->shape)))
		return FAILED;
	row_strides(x, st);
	size_t es = rt_elem_size(x->dtype);
	int64_t dim = x->shape[axis];
	for (int64_t i = 0; i < ix->numel; i++) {
		int64_t j = rt_get_i(ix, i);
		if (j < -dim || j >= dim) {
			rt_free(*out);
			*out = NULL;
			return rt_fail(k, "index %lld is out of range for a dim of %lld", (long long)j, (long long)dim);
		}
		memcpy((*out)->data + (size_t)i * es, x->data + (size_t)element_at(idx, ix, st, axis, j, dim) * es, es);
	}
	return OK;
}

/* A copy of data with out[i0.., index at axis, ..] = updates[i0..]: the
 * inverse of GatherElements, updates of the indices' shape.  Without
 * reduction only: a repeated index is the last write, as the operator's
 * reference does it. */
static Status k_scatter_elements(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int32_t axis;
	int64_t st[RT_MAX_RANK], idx[RT_MAX_RANK] = { 0 };
	char buf[16];
	if (need(k, in, nin, 3) != OK || rt_axis(k, rt_attr_int(k, "axis", 0), in[0]->rank, &axis) != OK)
		return FAILED;
	const RTensor *x = in[0], *ix = in[1], *u = in[2];
	const char *red = rt_attr_str(k, "reduction", "none", buf, sizeof buf);
	if (strcmp(red, "none") != 0)
		return rt_fail(k, "kernel lacks reduction '%s'", red);
	if (ix->dtype != DT_I64 && ix->dtype != DT_I32)
		return rt_unsupported(k, ix);
	if (ix->rank != x->rank || u->rank != x->rank || u->dtype != x->dtype)
		return rt_fail(k, "indices and updates must have the rank of the data, updates its dtype");
	for (int32_t d = 0; d < x->rank; d++) {
		if (u->shape[d] != ix->shape[d])
			return rt_fail(k, "updates and indices differ in dim %d", (int)d);
		if (d != axis && ix->shape[d] > x->shape[d])
			return rt_fail(k, "indices are larger than the data in dim %d", (int)d);
	}
	int64_t dim = x->shape[axis];
	for (int64_t i = 0; i < ix->numel; i++) {
		int64_t j = rt_get_i(ix, i);
		if (j < -dim || j >= dim)
			return rt_fail(k, "index %lld is out of range for a dim of %lld", (long long)j, (long long)dim);
	}
	if (!(*out = rt_new(k->n->loc, x->dtype, x->rank, x->shape)))
		return FAILED;
	size_t es = rt_elem_size(x->dtype);
	memcpy((*out)->data, x->data, (size_t)x->numel * es);
	row_strides(x, st);
	for (int64_t i = 0; i < ix->numel; i++)
		memcpy((*out)->data + (size_t)element_at(idx, ix, st, axis, rt_get_i(ix, i), dim) * es,
		       u->data + (size_t)i * es, es);
	return OK;
}

/* data [b..., r...], indices [b..., q..., k] -> [b..., q..., r[k:]...]: each
 * index tuple of k picks a slice of data within its batch (the first
 * batch_dims dims, shared by both). */
static Status k_gather_nd(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 2) != OK)
		return FAILED;
	const RTensor *x = in[0], *ix = in[1];
	int64_t b = rt_attr_int(k, "batch_dims", 0);
	if (ix->dtype != DT_I64 && ix->dtype != DT_I32)
		return rt_unsupported(k, ix);
	if (ix->rank < 1 || b < 0 || b >= ix->rank || b >= x->rank)
		return rt_fail(k, "batch_dims %lld does not fit ranks %d and %d", (long long)b, (int)x->rank,
			       (int)ix->rank);
	int64_t kk = ix->shape[ix->rank - 1], batch = 1, tuples = 1, inner = 1, shape[RT_MAX_RANK];
	if (kk < 1 || b + kk > x->rank)
		return rt_fail(k, "index tuples of %lld do not fit data of rank %d", (long long)kk, (int)x->rank);
	int32_t r = 0;
	for (int32_t d = 0; d < ix->rank - 1; d++) {
		if (d < b && ix->shape[d] != x->shape[d])
			return rt_fail(k, "batch dim %d differs between data and indices", (int)d);
		shape[r++] = ix->shape[d];
		if (d < b)
			batch *= ix->shape[d];
		else
			tuples *= ix->shape[d];
	}
	for (int32_t d = (int32_t)(b + kk); d < x->rank; d++) {
		if (r >= RT_MAX_RANK)
			return rt_fail(k, "the result's rank is too large");
		shape[r++] = x->shape[d];
		inner *= x->shape[d];
	}
	int64_t st[RT_MAX_RANK], per_batch = 1;
	row_strides(x, st);
	for (int32_t d = (int32_t)b; d < x->rank; d++)
		per_batch *= x->shape[d];
	RTensor *z = rt_new(k->n->loc, x->dtype, r, shape);
	if (!z)
		return FAILED;
	size_t es = rt_elem_size(x->dtype), block = (size_t)inner * es;
	for (int64_t bi = 0, at = 0; bi < batch; bi++)
		for (int64_t t = 0; t < tuples; t++, at++) {
			int64_t off = bi * per_batch;
			for (int64_t j = 0; j < kk; j++) {
				int64_t dim = x->shape[b + j], i = rt_get_i(ix, at * kk + j);
				if (i < -dim || i >= dim) {
					rt_free(z);
					return rt_fail(k, "index %lld is out of range for a dim of %lld", (long long)i,
						       (long long)dim);
				}
				off += (i + (i < 0 ? dim : 0)) * st[b + j];
			}
			memcpy(z->data + (size_t)at * block, x->data + (size_t)off * es, block);
		}
	*out = z;
	return OK;
}

/* ---- Trilu, EyeLike, Dropout ------------------------------------------------- */

/* Keeps the elements on and above (upper) or below the k-th diagonal of
 * the last two dims; zeroes the rest. */
static Status k_trilu(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	const RTensor *x = in[0];
	if (x->rank < 2)
		return rt_fail(k, "the input must have rank 2 or more");
	if (nin > 1 && in[1] && (in[1]->numel != 1 || (in[1]->dtype != DT_I64 && in[1]->dtype != DT_I32)))
		return rt_fail(k, "k must be one i64");
	int64_t diag = nin > 1 && in[1] ? rt_get_i(in[1], 0) : 0, rows = x->shape[x->rank - 2], cols = x->shape[x->rank - 1];
	int upper = rt_attr_int(k, "upper", 1) != 0;
	if (!(*out = rt_copy(k->n->loc, x)))
		return FAILED;
	size_t es = rt_elem_size(x->dtype);
	for (int64_t i = 0; i < x->numel; i++) {
		int64_t c = i % cols, r = i / cols % rows;
		/* c - r compared without overflow: both are within the dims. */
		int keep = upper ? c - r >= diag : c - r <= diag;
		if (!keep)
			memset((*out)->data + (size_t)i * es, 0, es);
	}
	return OK;
}

static Status k_eye_like(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	if (in[0]->rank != 2)
		return rt_fail(k, "the input must be a matrix");
	DType t = rt_attr_dtype(k, "dtype");
	if (!t)
		t = in[0]->dtype;
	if (!numeric(t))
		return rt_fail(k, "unsupported dtype %s", t ? dtype_name(t) : "(unknown)");
	if (!(*out = rt_new(k->n->loc, t, 2, in[0]->shape)))
		return FAILED;
	int64_t diag = rt_attr_int(k, "k", 0), rows = in[0]->shape[0], cols = in[0]->shape[1];
	for (int64_t r = 0; r < rows; r++)
		if (diag > -cols && diag < cols && r + diag >= 0 && r + diag < cols)
			rt_set_i(*out, r * cols + r + diag, 1);
	return OK;
}

/* Inference only: the output is the input and the mask all true.  Training
 * mode with a nonzero ratio draws random numbers and is refused. */
static Status k_dropout(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	int training = nin > 2 && in[2] && in[2]->numel == 1 && rt_get_i(in[2], 0);
	double ratio = nin > 1 && in[1] && in[1]->numel == 1 ? rt_get_f(in[1], 0) : rt_attr_float(k, "ratio", 0.5);
	if ((training || rt_attr_int(k, "is_test", 1) == 0) && ratio != 0)
		return rt_fail(k, "training mode draws random numbers: only inference is supported");
	if (!(out[0] = rt_copy(k->n->loc, in[0])))
		return FAILED;
	if (nout > 1 && !(out[1] = rt_new(k->n->loc, DT_BOOL, in[0]->rank, in[0]->shape)))
		return FAILED;
	if (nout > 1)
		memset(out[1]->data, 1, out[1]->nbytes);
	return OK;
}

/* ---- Shape, Size, Range, Identity, Constant, ConstantOfShape ----------------- */

static RTensor *vector_i64(Loc loc, int64_t n, const int64_t *v)
{
	RTensor *t = rt_new(loc, DT_I64, 1, &n);
	for (int64_t i = 0; t && i < n; i++)
		rt_set_i(t, i, v[i]);
	return t;
}

static Status k_shape(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	int64_t r = in[0]->rank, b = rt_attr_int(k, "start", 0), e = rt_attr_int(k, "end", r);
	b = b < 0 ? b + r : b;
	e = e < 0 ? e + r : e;
	b = b < 0 ? 0 : b > r ? r : b;
	e = e < 0 ? 0 : e > r ? r : e;
	*out = vector_i64(k->n->loc, e > b ? e - b : 0, in[0]->shape + b);
	return *out ? OK : FAILED;
}

static Status k_size(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 1) != OK || !(*out = rt_new(k->n->loc, DT_I64, 0, NULL)))
		return FAILED;
	rt_set_i(*out, 0, in[0]->numel);
	return OK;
}

static int64_t range_count(const KCtx *k, const RTensor *s, const RTensor *l, const RTensor *d)
{
	if (!dtype_is_float(s->dtype)) {
		int64_t a = rt_get_i(s, 0), b = rt_get_i(l, 0), c = rt_get_i(d, 0);
		if (c == 0)
			return rt_fail(k, "delta is 0"), -1;
		double n = ceil(((double)b - (double)a) / (double)c);
		return n > 0 ? (int64_t)n : 0;
	}
	double n = ceil((rt_get_f(l, 0) - rt_get_f(s, 0)) / rt_get_f(d, 0));
	if (!(n < 9e15))
		return n > 0 || isnan(n) ? (rt_fail(k, "the range has no finite length"), -1) : 0;
	return n > 0 ? (int64_t)n : 0;
}

static Status k_range(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 3) != OK)
		return FAILED;
	for (int i = 0; i < 3; i++) {
		if (in[i]->numel != 1 || in[i]->dtype != in[0]->dtype)
			return rt_fail(k, "start, limit and delta must be scalars of one dtype");
		if (!numeric(in[i]->dtype) || in[i]->dtype == DT_BOOL)
			return rt_unsupported(k, in[i]);
	}
	int64_t n = range_count(k, in[0], in[1], in[2]);
	if (n < 0 || !(*out = rt_new(k->n->loc, in[0]->dtype, 1, &n)))
		return FAILED;
	for (int64_t i = 0; i < n; i++) {
		if (dtype_is_float(in[0]->dtype))
			rt_set_f(*out, i, rt_get_f(in[0], 0) + (double)i * rt_get_f(in[2], 0));
		else
			rt_set_i(*out, i, (int64_t)((uint64_t)rt_get_i(in[0], 0) + (uint64_t)i * (uint64_t)rt_get_i(in[2], 0)));
	}
	return OK;
}

static Status k_identity(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	if (need(k, in, nin, 1) != OK)
		return FAILED;
	*out = rt_copy(k->n->loc, in[0]);
	return *out ? OK : FAILED;
}

static RTensor *list_tensor(const KCtx *k, const Arg *a, DType t)
{
	int64_t n = a->n;
	RTensor *r = rt_new(k->n->loc, t, 1, &n);
	for (int64_t i = 0; r && i < n; i++) {
		const Arg *e = &a->u.list[i];
		if (t == DT_F32)
			rt_set_f(r, i, e->kind == A_INT ? (double)e->u.i : e->u.f);
		else
			rt_set_i(r, i, e->u.i);
	}
	return r;
}

static Status k_constant(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)in, (void)nin, (void)nout;
	const Arg *a;
	if ((a = rt_attr(k, "value")) && a->kind == A_TENSOR)
		*out = rt_from_ir(k->n->loc, a->u.t);
	else if ((a = rt_attr(k, "value_float")) && (*out = rt_new(k->n->loc, DT_F32, 0, NULL)))
		rt_set_f(*out, 0, rt_attr_float(k, "value_float", 0));
	else if ((a = rt_attr(k, "value_int")) && (*out = rt_new(k->n->loc, DT_I64, 0, NULL)))
		rt_set_i(*out, 0, rt_attr_int(k, "value_int", 0));
	else if ((a = rt_attr(k, "value_floats")) && a->kind == A_LIST)
		*out = list_tensor(k, a, DT_F32);
	else if ((a = rt_attr(k, "value_ints")) && a->kind == A_LIST)
		*out = list_tensor(k, a, DT_I64);
	else
		return rt_fail(k, "unsupported value attribute (a tensor, value_float(s) or value_int(s) is needed)");
	return *out ? OK : FAILED;
}

static Status k_constant_of_shape(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout)
{
	(void)nout;
	int64_t *s, n;
	if (need(k, in, nin, 1) != OK || rt_input_ints(k, in[0], &s, &n) != OK)
		return FAILED;
	const Arg *a = rt_attr(k, "value");
	RTensor *v = a && a->kind == A_TENSOR ? rt_from_ir(k->n->loc, a->u.t) : rt_new(k->n->loc, DT_F32, 0, NULL);
	Status st = !v ? FAILED : v->numel != 1 ? rt_fail(k, "value must hold one element") :
		n > RT_MAX_RANK ? rt_fail(k, "rank %lld is too large", (long long)n) : OK;
	if (st == OK && !(*out = rt_new(k->n->loc, v->dtype, (int32_t)n, s)))
		st = FAILED;
	for (int64_t i = 0; st == OK && i < (*out)->numel; i++)
		memcpy((*out)->data + (size_t)i * v->nbytes, v->data, v->nbytes);
	rt_free(v);
	free(s);
	return st;
}

Kernel rt_shape_kernel(OpId op)
{
	switch (op) {
	case OP_ONNX_Reshape: return k_reshape;
	case OP_ONNX_Flatten: return k_flatten;
	case OP_ONNX_Squeeze: return k_squeeze;
	case OP_ONNX_Unsqueeze: return k_unsqueeze;
	case OP_ONNX_Transpose: return k_transpose;
	case OP_ONNX_Slice: return k_slice;
	case OP_ONNX_Expand: return k_expand;
	case OP_ONNX_Tile: return k_tile;
	case OP_ONNX_Concat: return k_concat;
	case OP_ONNX_Split: return k_split;
	case OP_ONNX_Gather: return k_gather;
	case OP_ONNX_GatherElements: return k_gather_elements;
	case OP_ONNX_ScatterElements: return k_scatter_elements;
	case OP_ONNX_GatherND: return k_gather_nd;
	case OP_ONNX_Trilu: return k_trilu;
	case OP_ONNX_EyeLike: return k_eye_like;
	case OP_ONNX_Dropout: return k_dropout;
	case OP_ONNX_Shape: return k_shape;
	case OP_ONNX_Size: return k_size;
	case OP_ONNX_Range: return k_range;
	case OP_ONNX_Identity: return k_identity;
	case OP_ONNX_Constant: return k_constant;
	case OP_ONNX_ConstantOfShape: return k_constant_of_shape;
	default: return NULL;
	}
}
