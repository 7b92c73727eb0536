/* infer_dims.c - type inference: the dim vectors of Shape and what is
 * computed from it (Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, constants).
 */
#include <stdlib.h>
#include <string.h>
#include "infer.h"

/* ---- dim vectors (Shape and what is computed from it) ---------------------------- */
static void set_vec(Infer *I, ValueId v, const Dim *d, int n)
{
	if (!I->sv || v >= I->nsv || n < 0 || n > MAXR)
		return;
	I->sv[v].d = arena_dup(&I->m->arena, d, sizeof *d * (size_t)(n ? n : 1));
	I->sv[v].n = n;
}

void track_vec(Infer *I, const Node *n)
{
	Module *m = I->m;
	ValueId r = n->nres ? n->res[0] : VNONE;
	const Type *rt = r ? m->vals.v[r].type : NULL;
	if (!r || !rt || rt->kind != TY_TENSOR || !dtype_is_int((DType)rt->dtype) || rt->rank > 1)
		return;
	const Type *x = ty(m, n, 0);
	Dim d[MAXR], e[MAXR];
	int cnt;
	switch (n->op) {
	case OP_ONNX_Shape: {
		if (!shaped(x) || rt->rank != 1 || !known(rt->dims[0]))
			return;
		int64_t s = kw_int_or(n, "start", 0);
		s = s < 0 ? s + x->rank : s;
		s = s < 0 ? 0 : s;
		if (rt->dims[0].v > x->rank - s)
			return;
		cnt = (int)rt->dims[0].v;
		for (int i = 0; i < cnt; i++)
			d[i] = known(x->dims[s + i]) || x->dims[s + i].sym ? x->dims[s + i] : NOTCONST;
		set_vec(I, r, d, cnt);
		return;
	}
	case OP_ONNX_Identity: case OP_ONNX_Cast: case OP_ONNX_Squeeze: case OP_ONNX_Unsqueeze:
		if ((cnt = int_vec(I, operand(n, 0), d, MAXR)) >= 0)
			set_vec(I, r, d, cnt);
		return;
	case OP_ONNX_Concat: {
		int tot = 0;
		for (uint32_t i = 0; i < n->nargs; i++) {
			cnt = int_vec(I, operand(n, i), e, MAXR - tot);
			if (cnt < 0)
				return;
			memcpy(d + tot, e, sizeof *d * (size_t)cnt);
			tot += cnt;
		}
		set_vec(I, r, d, tot);
		return;
	}
	case OP_ONNX_Gather: {
		int64_t idx[MAXR];
		int ni = int_consts(I, operand(n, 1), idx, MAXR);
		cnt = int_vec(I, operand(n, 0), d, MAXR);
		if (cnt < 0 || ni < 0)
			return;
		for (int i = 0; i < ni; i++) {
			int64_t k = idx[i] < 0 ? idx[i] + cnt : idx[i];
			if (k < 0 || k >= cnt)
				return;
			e[i] = d[k];
		}
		set_vec(I, r, e, ni);
		return;
	}
	case OP_ONNX_Slice: {
		int64_t s, en, ax = 0, st = 1;
		cnt = int_vec(I, operand(n, 0), d, MAXR);
		if (cnt < 0 || int_consts(I, operand(n, 1), &s, 1) != 1 || int_consts(I, operand(n, 2), &en, 1) != 1
		    || (operand(n, 3) && (int_consts(I, operand(n, 3), &ax, 1) != 1 || (ax != 0 && ax != -1)))
		    || (operand(n, 4) && (int_consts(I, operand(n, 4), &st, 1) != 1 || st != 1)))
			return;
		Dim len = slice_dim(stat(cnt), s, en, 1);
		s = s < 0 ? s + cnt : s;
		s = s < 0 ? 0 : s > cnt ? cnt : s;
		if (known(len))
			set_vec(I, r, d + s, (int)len.v);
		return;
	}
	case OP_ONNX_Mul: case OP_ONNX_Add: case OP_ONNX_Sub: case OP_ONNX_Div: {
		int na = int_vec(I, operand(n, 0), d, MAXR), nb = int_vec(I, operand(n, 1), e, MAXR);
		if (na < 0 || nb < 0 || (na != nb && na != 1 && nb != 1) || rt->rank != 1)
			return;
		int k = na > nb ? na : nb;
		Dim o[MAXR];
		for (int i = 0; i < k; i++) {
			Dim p = d[na == 1 ? 0 : i], q = e[nb == 1 ? 0 : i];
			o[i] = NOTCONST;
			if (known(p) && known(q)) {
				int64_t v;
				int bad = n->op == OP_ONNX_Add ? __builtin_add_overflow(p.v, q.v, &v)
					: n->op == OP_ONNX_Sub ? __builtin_sub_overflow(p.v, q.v, &v)
					: n->op == OP_ONNX_Mul ? __builtin_mul_overflow(p.v, q.v, &v)
					: q.v > 0 ? (v = p.v / q.v, 0) : 1;
				if (!bad && v >= 0)
					o[i] = stat(v);
			} else if ((n->op == OP_ONNX_Mul || n->op == OP_ONNX_Div) && known(q) && q.v == 1) {
				o[i] = p;
			} else if (n->op == OP_ONNX_Mul && known(p) && p.v == 1) {
				o[i] = q;
			}
		}
		set_vec(I, r, o, k);
		return;
	}
	default:
		return;
	}
}
