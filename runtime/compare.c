/* compare.c - comparing runtime tensors with a tolerance, and the seeded
 * random inputs of `onnxc diff` and -bisect-accuracy.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

RtCompare rt_compare(const RTensor *got, const RTensor *want, double rtol, double atol)
{
	RtCompare c = { got->rank == want->rank && got->numel == want->numel, 0, 0, 0 };
	for (int32_t d = 0; c.shape_ok && d < got->rank; d++)
		c.shape_ok = got->shape[d] == want->shape[d];
	for (int64_t i = 0; c.shape_ok && i < got->numel; i++) {
		double x = rt_get_f(got, i), y = rt_get_f(want, i), d = fabs(x - y), ay = fabs(y);
		if (x == y)
			d = 0;      /* equal infinities */
		if (d > c.max_abs || d != d)
			c.max_abs = d;
		if (ay > 0 && d / ay > c.max_rel)
			c.max_rel = d / ay;
		c.bad += !(d <= atol + rtol * ay);
	}
	return c;
}

void rt_values_put(RtValues *s, Sym name, const RTensor *t)
{
	if (!name || rt_values_get(s, name))
		return;
	s->by_sym = xgrow_index(s->by_sym, &s->cap, name, sizeof *s->by_sym);
	s->by_sym[name] = rt_copy((Loc){ 0 }, t);
	XVEC_PUSH(s->names, name);
}

const RTensor *rt_values_get(const RtValues *s, Sym name)
{
	return name < s->cap ? s->by_sym[name] : NULL;
}

void rt_values_free(RtValues *s)
{
	for (uint32_t i = 0; i < s->names.n; i++)
		rt_free(s->by_sym[s->names.v[i]]);
	free(s->by_sym);
	free(s->names.v);
	memset(s, 0, sizeof *s);
}

/* splitmix64: one 64-bit state, good enough for test inputs. */
static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
	return ((double)(next_u64(s) >> 11) + 0.5) * 0x1p-53;
}

/* Box-Muller; one of the pair is used, which keeps the stream simple. */
static double normal(uint64_t *s)
{
	double u = uniform(s), v = uniform(s);
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

RTensor *rt_random_for(const Value *v, uint64_t *state)
{
	const Type *ty = v->type;
	int64_t shape[RT_MAX_RANK];
	int known = ty && ty->kind == TY_TENSOR && ty->dtype != DT_UNDEF && ty->rank >= 0 && ty->rank <= RT_MAX_RANK;
	for (int32_t d = 0; known && d < ty->rank; d++)
		known = !ty->dims[d].sym && (shape[d] = ty->dims[d].v) >= 0;
	if (!known) {
		diag_error(v->loc, "input '%s' has no fully known tensor type: give it with --input %s=FILE.npy",
			   sym_str(v->name), sym_str(v->name));
		return NULL;
	}
	RTensor *t = rt_new(v->loc, (DType)ty->dtype, ty->rank, shape);
	for (int64_t i = 0; t && i < t->numel; i++) {
		if (dtype_is_float(t->dtype))
			rt_set_f(t, i, normal(state));
		else
			rt_set_i(t, i, t->dtype == DT_BOOL ? (int64_t)(next_u64(state) >> 63) : (int64_t)(next_u64(state) % 10));
	}
	return t;
}
