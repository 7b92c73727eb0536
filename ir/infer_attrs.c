/* infer_attrs.c - type inference: reading a node's attributes and its
 * constant operands (and the dim vectors tracked for them), axes.
 */
#include <stdlib.h>
#include <string.h>
#include "infer.h"

int kw_int(const Node *n, const char *name, int64_t *v)
{
	const Named *k = node_kw(n, S(name));
	if (!k)
		return 0;
	if (k->val.kind == A_INT || k->val.kind == A_BOOL) {
		*v = k->val.u.i;
		return 1;
	}
	if (k->val.kind == A_DTYPE) {
		*v = dtype_onnx((DType)k->val.u.i);
		return 1;
	}
	return 0;
}

int64_t kw_int_or(const Node *n, const char *name, int64_t dflt)
{
	int64_t v;
	return kw_int(n, name, &v) ? v : dflt;
}

/* An ints attribute (or one int): its length, or -1 if absent or not ints. */
int kw_ints(const Node *n, const char *name, int64_t *buf, int cap)
{
	const Named *k = node_kw(n, S(name));
	if (!k)
		return -1;
	if (k->val.kind == A_INT) {
		buf[0] = k->val.u.i;
		return 1;
	}
	if (k->val.kind != A_LIST || k->val.n > (uint32_t)cap)
		return -1;
	for (uint32_t i = 0; i < k->val.n; i++) {
		if (k->val.u.list[i].kind != A_INT)
			return -1;
		buf[i] = k->val.u.list[i].u.i;
	}
	return (int)k->val.n;
}

const char *kw_str(const Node *n, const char *name, uint32_t *len)
{
	const Named *k = node_kw(n, S(name));
	if (!k || k->val.kind != A_STR)
		return NULL;
	*len = k->val.u.s.n;
	return k->val.u.s.s;
}

int dtype_attr(const Node *n, const char *name)
{
	const Named *k = node_kw(n, S(name));
	if (!k)
		return 0;
	if (k->val.kind == A_DTYPE)
		return (int)k->val.u.i;
	return k->val.kind == A_INT ? dtype_from_onnx((int)k->val.u.i) : 0;
}

/* The elements of a constant integer operand (rank 0 or 1): its length,
 * or -1. */
static int const_ints(const Module *m, ValueId v, int64_t *buf, int cap)
{
	const Tensor *t = v ? const_tensor(m, v) : NULL;
	if (!t || !t->type || !t->data || !dtype_is_int((DType)t->type->dtype) || t->type->rank > 1)
		return -1;
	int64_t cnt = type_numel(t->type);
	if (cnt < 0 || cnt > cap)
		return -1;
	for (int64_t i = 0; i < cnt; i++)
		buf[i] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
	return (int)cnt;
}

/* The elements of an integer vector operand as dims: a vector tracked by
 * infer_module (unknown elements NOTCONST) or a constant.  Its length, or
 * -1. */
int int_vec(Infer *I, ValueId v, Dim *buf, int cap)
{
	if (!v)
		return -1;
	if (I->sv && v < I->nsv && I->sv[v].n >= 0 && I->sv[v].d) {
		if (I->sv[v].n > cap)
			return -1;
		memcpy(buf, I->sv[v].d, sizeof *buf * (size_t)I->sv[v].n);
		return I->sv[v].n;
	}
	int64_t c[MAXR];
	int n = const_ints(I->m, v, c, cap < MAXR ? cap : MAXR);
	for (int i = 0; i < n; i++)
		buf[i] = stat(c[i]);
	return n;
}

/* The same as integers (negative ones included); -1 when an element is
 * symbolic or unknown. */
int int_consts(Infer *I, ValueId v, int64_t *buf, int cap)
{
	int n = const_ints(I->m, v, buf, cap);
	if (n >= 0)
		return n;
	Dim d[MAXR];
	n = int_vec(I, v, d, cap < MAXR ? cap : MAXR);
	for (int i = 0; i < n; i++) {
		if (d[i].sym || (d[i].v == NOTCONST.v))
			return -1;
		buf[i] = d[i].v;
	}
	return n;
}

/* A constant int vector: attribute `name` if present, else operand i. */
int ints_attr_or_input(Infer *I, const Node *n, const char *name, uint32_t i, int64_t *buf, int cap)
{
	int k = kw_ints(n, name, buf, cap);
	return k >= 0 ? k : int_consts(I, operand(n, i), buf, cap);
}

int norm_axis(int64_t a, int32_t rank, int32_t *out)
{
	if (a < 0)
		a += rank;
	if (a < 0 || a >= rank)
		return 0;
	*out = (int32_t)a;
	return 1;
}
