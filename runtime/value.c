/* value.c - runtime tensors: making them with checked sizes, reading and
 * writing elements as numbers, numpy broadcasting of shapes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

size_t rt_elem_size(DType t)
{
	int bits = t == DT_STR ? 0 : dtype_bits(t);
	return bits > 0 && bits % 8 == 0 ? (size_t)bits / 8 : 0;
}

int64_t rt_numel(int32_t rank, const int64_t *shape, size_t elem)
{
	int64_t n = 1;
	for (int32_t i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] && n > INT64_MAX / shape[i])
			return -1;
		n *= shape[i];
	}
	if (elem && (uint64_t)n > SIZE_MAX / elem)
		return -1;
	return n;
}

RTensor *rt_new(Loc loc, DType t, int32_t rank, const int64_t *shape)
{
	size_t elem = rt_elem_size(t);
	if (!elem && dtype_bits(t) == 4) {
		/* -quantize=int4 writes them: say which part is missing. */
		diag_error(loc, "unsupported dtype %s: the reference runtime has no 4-bit tensors and no kernel "
			   "for the ops that read them (run such a model in ONNX Runtime)", dtype_name(t));
		return NULL;
	}
	if (!elem) {
		diag_error(loc, "unsupported dtype %s", dtype_name(t));
		return NULL;
	}
	if (rank < 0 || rank > RT_MAX_RANK) {
		diag_error(loc, "tensor of rank %d: the runtime holds at most rank %d", (int)rank, RT_MAX_RANK);
		return NULL;
	}
	int64_t n = rt_numel(rank, shape, elem);
	if (n < 0) {
		diag_error(loc, "tensor shape has a negative dim or its size overflows");
		return NULL;
	}
	RTensor *r = xcalloc(1, sizeof *r);
	r->dtype = t;
	r->rank = rank;
	if (rank)
		memcpy(r->shape, shape, (size_t)rank * sizeof *shape);
	r->numel = n;
	r->nbytes = (size_t)n * elem;
	r->data = xcalloc(r->nbytes ? r->nbytes : 1, 1);
	return r;
}

RTensor *rt_from_data(Loc loc, DType t, int32_t rank, const int64_t *shape, const void *data, size_t nbytes)
{
	/* The size is checked before anything is allocated: a header may
	 * claim more than memory holds. */
	size_t elem = rt_elem_size(t);
	int64_t n = rank >= 0 && rank <= RT_MAX_RANK ? rt_numel(rank, shape, elem) : -1;
	if (elem && n >= 0 && (uint64_t)n * elem != nbytes) {
		diag_error(loc, "tensor data holds %zu bytes, its shape needs %llu", nbytes,
			   (unsigned long long)((uint64_t)n * elem));
		return NULL;
	}
	RTensor *r = rt_new(loc, t, rank, shape);
	if (r && nbytes)
		memcpy(r->data, data, nbytes);
	return r;
}

RTensor *rt_from_ir(Loc loc, const Tensor *t)
{
	const Type *ty = t->type;
	int64_t shape[RT_MAX_RANK];
	if (!ty || ty->kind != TY_TENSOR || ty->rank < 0 || ty->rank > RT_MAX_RANK || (!t->data && t->nbytes)) {
		diag_error(loc, "constant tensor without a known shape, or of a dtype the runtime lacks");
		return NULL;
	}
	for (int32_t i = 0; i < ty->rank; i++)
		shape[i] = ty->dims[i].sym ? -1 : ty->dims[i].v;
	return rt_from_data(loc, (DType)ty->dtype, ty->rank, shape, t->data, t->nbytes);
}

RTensor *rt_copy(Loc loc, const RTensor *t)
{
	return rt_from_data(loc, t->dtype, t->rank, t->shape, t->data, t->nbytes);
}

void rt_free(RTensor *t)
{
	if (t)
		free(t->data);
	free(t);
}

double rt_get_f(const RTensor *t, int64_t i)
{
	if (t->dtype == DT_U64) {
		uint64_t u;
		memcpy(&u, t->data + 8 * i, 8);
		return (double)u;
	}
	return tensor_get_f(t->dtype, t->data, (size_t)i);
}

int64_t rt_get_i(const RTensor *t, int64_t i)
{
	if (dtype_is_float(t->dtype)) {
		double x = rt_get_f(t, i);
		if (isnan(x))
			return 0;
		if (x >= 9.2233720368547758e18)
			return INT64_MAX;
		if (x <= -9.2233720368547758e18)
			return INT64_MIN;
		return (int64_t)x;
	}
	return tensor_get_i(t->dtype, t->data, (size_t)i);
}

/* Integers wrap to the dtype's width, as they do in C on unsigned types. */
void rt_set_i(RTensor *t, int64_t i, int64_t x)
{
	uint64_t u = (uint64_t)x;
	size_t sz = rt_elem_size(t->dtype);
	if (dtype_is_float(t->dtype)) {
		rt_set_f(t, i, (double)x);
		return;
	}
	if (t->dtype == DT_BOOL)
		u = x != 0;
	uint8_t b[8];
	for (size_t k = 0; k < sz; k++)
		b[k] = (uint8_t)(u >> (8 * k));
	memcpy(t->data + (size_t)i * sz, b, sz);
}

void rt_set_f(RTensor *t, int64_t i, double x)
{
	switch (t->dtype) {
	case DT_F32: {
		float f = (float)x;
		memcpy(t->data + 4 * i, &f, 4);
		return;
	}
	case DT_F64:
		memcpy(t->data + 8 * i, &x, 8);
		return;
	case DT_F16: case DT_BF16:
		tensor_put(t->dtype, t->data, (size_t)i, x, 0, 0);
		return;
	case DT_BOOL:
		rt_set_i(t, i, x != 0);
		return;
	case DT_U64:
		if (x >= 1.8446744073709552e19)
			rt_set_i(t, i, -1);
		else
			rt_set_i(t, i, x > 0 ? (int64_t)(uint64_t)x : 0);
		return;
	default:
		if (isnan(x))
			x = 0;
		rt_set_i(t, i, x >= 9.2233720368547758e18 ? INT64_MAX : x <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)x);
	}
}

Status rt_broadcast(Loc loc, const char *op, uint32_t n, RTensor *const *ts, int32_t *rank, int64_t *shape)
{
	int32_t r = 0;
	for (uint32_t k = 0; k < n; k++)
		if (ts[k] && ts[k]->rank > r)
			r = ts[k]->rank;
	for (int32_t d = 0; d < r; d++)
		shape[d] = 1;
	for (uint32_t k = 0; k < n; k++) {
		if (!ts[k])
			continue;
		int32_t off = r - ts[k]->rank;
		for (int32_t d = 0; d < ts[k]->rank; d++) {
			int64_t a = shape[off + d], b = ts[k]->shape[d];
			if (a == b || b == 1)
				continue;
			if (a != 1) {
				char x[256], y[256];
				diag_error(loc, "%s: shapes do not broadcast: %s and %s", op, rt_describe(ts[0], x, sizeof x),
					rt_describe(ts[k], y, sizeof y));
				return FAILED;
			}
			shape[off + d] = b;
		}
	}
	*rank = r;
	return OK;
}

const char *rt_describe(const RTensor *t, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "%s[", dtype_name(t->dtype));
	for (int32_t i = 0; i < t->rank && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "", (long long)t->shape[i]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

void rt_iter_init(RtIter *it, int32_t rank, const int64_t *shape, uint32_t n, RTensor *const *ts)
{
	memset(it, 0, sizeof *it);
	it->rank = rank;
	it->n = n;
	memcpy(it->shape, shape, (size_t)rank * sizeof *shape);
	for (uint32_t k = 0; k < n; k++) {
		int64_t s = 1;
		int32_t off = rank - ts[k]->rank;
		for (int32_t d = ts[k]->rank - 1; d >= 0; d--) {
			it->stride[k][off + d] = ts[k]->shape[d] == 1 ? 0 : s;
			s *= ts[k]->shape[d];
		}
	}
}

int rt_next_index(int64_t *idx, const int64_t *dims, int32_t n)
{
	for (int32_t d = n - 1; d >= 0; d--) {
		if (++idx[d] < dims[d])
			return 1;
		idx[d] = 0;
	}
	return 0;
}

/* Amortised O(1): the carry reaches dim d once every shape[d+1..] steps. */
void rt_iter_next(RtIter *it)
{
	for (int32_t d = it->rank - 1; d >= 0; d--) {
		for (uint32_t k = 0; k < it->n; k++)
			it->off[k] += it->stride[k][d];
		if (++it->idx[d] < it->shape[d])
			return;
		for (uint32_t k = 0; k < it->n; k++)
			it->off[k] -= it->stride[k][d] * it->shape[d];
		it->idx[d] = 0;
	}
}
