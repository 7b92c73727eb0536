/* fuse_pad.c - a constant Pad before a convolution or a pooling becomes
 * the consumer's own padding (-O2, part of the fuse pass):
 *
 *   Conv(Pad(x, p, 0), W[, B])           -> Conv(x, W[, B], pads + p)
 *   AveragePool(Pad(x, p, 0))            -> AveragePool(x, pads + p, count_include_pad=1)
 *       the pool had no pads, or counted them already
 *   MaxPool(Pad(x, p, -inf))             -> MaxPool(x, pads + p)
 *       its indices unread
 *   ConvTranspose(Pad(x, p, 0), W[, B])  -> ConvTranspose(x, W[, B], pads - stride * p)
 *       its pads at least stride * p on each side, no output_shape
 *
 * p is a constant of the Pad's pads input (mode "constant", no axes
 * input), 0 on the batch and channel dims and never negative; the value is
 * absent or a constant 0 (-inf for MaxPool); the consumer's auto_pad is
 * NOTSET.  The pools keep ceil_mode 0 and every pad below the kernel
 * (ONNX Runtime refuses larger ones).
 *
 * Why they hold: a Conv's pads are zeros around its input, which is what
 * the Pad wrote.  AveragePool with count_include_pad=1 averages its pads
 * as zeros counted in the divisor, as it averaged the Pad's zeros; with
 * pads it did not count, the divisors differ, so that pool is left.
 * MaxPool ignores its pads, which is what -inf does in a max; with pads
 * below the kernel every window still holds an element of x (ceil_mode 0:
 * the last window ends inside the padded input), and the indices would
 * count positions of the padded tensor, hence unread.  A ConvTranspose
 * of an input with p zeros in front is its result shifted by stride * p
 * (zeros add nothing; the bias covers the new border), and pads crop its
 * result: cropping stride * p less from each end gives the same values
 * when the pads held that much.  ceil_mode 1 is left: ONNX Runtime drops
 * a last window that starts in the right pads, not one that starts in
 * the Pad's elements.
 *
 * The consumer is rewritten in place (its result, name and provenance
 * stay) and reads x; the Pad is left for dce once nothing reads it. */
#include <math.h>
#include <string.h>
#include "fuse.h"

enum { MAX_SPATIAL = 8 };

typedef struct PadFold {
	ValueId x;                      /* the Pad's input */
	int32_t ns;                     /* spatial dims: rank - 2 */
	int64_t begin[MAX_SPATIAL], end[MAX_SPATIAL];
} PadFold;

/* n's string attribute `name` is `want`, or absent (where `want` is its
 * default: Pad's mode "constant", the pools' auto_pad "NOTSET"). */
static int str_attr_is(const Node *n, const char *name, const char *want)
{
	const Named *k = node_kw(n, sym_cstr(name));
	if (!k)
		return 1;
	size_t len = strlen(want);
	return k->val.kind == A_STR && k->val.u.s.n == len && memcmp(k->val.u.s.s, want, len) == 0;
}

/* The Pad that makes operand 0 of n, with constant pads of x's rank, 0
 * on the first two dims and none negative, and fill `fill`. */
static int match_pad(const Fuse *f, const Node *n, double fill, PadFold *pf)
{
	Node *pad = match_operand(f->m, n, 0, OP_ONNX_Pad);
	if (!pad || f->opset < 11 || !str_attr_is(pad, "mode", "constant") || (pad->nargs > 3 && operand(pad, 3)))
		return 0;
	ValueId v = operand(pad, 2);
	if (v ? !match_const(f->m, v, fill) : fill != 0.0)
		return 0;
	pf->x = operand(pad, 0);
	const Type *tx = fuse_ranked_type(f, pf->x);
	const Tensor *t = const_tensor(f->m, operand(pad, 1));
	if (!tx || tx->rank < 3 || tx->rank - 2 > MAX_SPATIAL || !t || !t->data || !t->type ||
	    !dtype_is_int((DType)t->type->dtype) || type_numel(t->type) != 2 * (int64_t)tx->rank)
		return 0;
	int32_t r = tx->rank;
	pf->ns = r - 2;
	for (int32_t i = 0; i < r; i++) {
		int64_t b = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
		int64_t e = tensor_get_i((DType)t->type->dtype, t->data, (size_t)(r + i));
		if (b < 0 || e < 0 || (i < 2 && (b || e)))
			return 0;
		if (i >= 2)
			pf->begin[i - 2] = b, pf->end[i - 2] = e;
	}
	return 1;
}

/* An int list attribute of n of length len into v (dflt where absent);
 * 0 if it is there with another length or kind. */
static int int_attr(const Node *n, const char *name, int64_t *v, int32_t len, int64_t dflt)
{
	const Named *k = node_kw(n, sym_cstr(name));
	for (int32_t i = 0; i < len; i++)
		v[i] = dflt;
	if (!k)
		return 1;
	if (k->val.kind != A_LIST || k->val.n != (uint32_t)len)
		return 0;
	for (int32_t i = 0; i < len; i++) {
		if (k->val.u.list[i].kind != A_INT)
			return 0;
		v[i] = k->val.u.list[i].u.i;
	}
	return 1;
}

/* n's attribute `name` set to a (added when absent). */
static void set_kw(Fuse *f, Node *n, const char *name, Arg a)
{
	Sym s = sym_cstr(name);
	for (uint32_t i = 0; i < n->nkw; i++)
		if (n->kw[i].name == s) {
			n->kw[i].val = a;
			return;
		}
	Named *kw = ARENA_ARRAY(&f->m->arena, Named, n->nkw + 1);
	if (n->nkw)
		memcpy(kw, n->kw, n->nkw * sizeof *kw);
	kw[n->nkw++] = (Named){ s, a };
	n->kw = kw;
}

static void set_pads(Fuse *f, Node *n, const int64_t *v, uint32_t len)
{
	Arg *l = ARENA_ARRAY(&f->m->arena, Arg, len);
	for (uint32_t i = 0; i < len; i++)
		l[i] = (Arg){ .kind = A_INT, .u.i = v[i] };
	set_kw(f, n, "pads", (Arg){ .kind = A_LIST, .n = len, .u.list = l });
}

/* n reads x in place of the Pad's result. */
static void read_input(Fuse *f, Node *n, const PadFold *pf)
{
	ValueId p = operand(n, 0);
	f->uses[p]--;
	if (pf->x < f->nuses)
		f->uses[pf->x]++;
	n->args[0] = fuse_value_arg(pf->x);
}

static void fold_conv(Fuse *f, Node *n, const PadFold *pf)
{
	int64_t pads[2 * MAX_SPATIAL];
	int32_t ns = pf->ns;
	if (!int_attr(n, "pads", pads, 2 * ns, 0))
		return;
	for (int32_t i = 0; i < ns; i++) {
		pads[i] += pf->begin[i];
		pads[ns + i] += pf->end[i];
	}
	set_pads(f, n, pads, (uint32_t)(2 * ns));
	read_input(f, n, pf);
}

static void fold_conv_transpose(Fuse *f, Node *n, const PadFold *pf)
{
	int64_t pads[2 * MAX_SPATIAL], st[MAX_SPATIAL];
	int32_t ns = pf->ns;
	if (node_kw(n, sym_cstr("output_shape")) || !int_attr(n, "pads", pads, 2 * ns, 0) ||
	    !int_attr(n, "strides", st, ns, 1))
		return;
	for (int32_t i = 0; i < ns; i++) {
		pads[i] -= st[i] * pf->begin[i];
		pads[ns + i] -= st[i] * pf->end[i];
		if (st[i] < 1 || pads[i] < 0 || pads[ns + i] < 0)
			return;
	}
	set_pads(f, n, pads, (uint32_t)(2 * ns));
	read_input(f, n, pf);
}

/* AveragePool (avg) or MaxPool: ceil_mode 0, new pads below the kernel. */
static void fold_pool(Fuse *f, Node *n, const PadFold *pf, int avg)
{
	int64_t pads[2 * MAX_SPATIAL], k[MAX_SPATIAL];
	int32_t ns = pf->ns;
	int64_t counted = fuse_attr_int(n, "count_include_pad", 0), any = 0;
	if (fuse_attr_int(n, "ceil_mode", 0) != 0 || !int_attr(n, "pads", pads, 2 * ns, 0) ||
	    !int_attr(n, "kernel_shape", k, ns, -1))
		return;
	for (int32_t i = 0; i < 2 * ns; i++)
		any |= pads[i];
	if (avg && any && counted != 1)
		return;
	for (int32_t i = 0; i < ns; i++) {
		pads[i] += pf->begin[i];
		pads[ns + i] += pf->end[i];
		if (pads[i] >= k[i] || pads[ns + i] >= k[i])
			return;
	}
	set_pads(f, n, pads, (uint32_t)(2 * ns));
	if (avg)
		set_kw(f, n, "count_include_pad", (Arg){ .kind = A_INT, .u.i = 1 });
	read_input(f, n, pf);
}

void fuse_pad(Fuse *f, Node *n)
{
	PadFold pf;
	int maxpool = n->op == OP_ONNX_MaxPool;
	if (!str_attr_is(n, "auto_pad", "NOTSET") || !match_pad(f, n, maxpool ? -INFINITY : 0.0, &pf))
		return;
	if (maxpool && n->nres > 1 && n->res[1] && f->uses[n->res[1]])
		return;
	if (n->op == OP_ONNX_Conv)
		fold_conv(f, n, &pf);
	else if (n->op == OP_ONNX_ConvTranspose)
		fold_conv_transpose(f, n, &pf);
	else
		fold_pool(f, n, &pf, !maxpool);
}
