/* infer_onnx.c - type inference: the dispatcher, one case per ONNX op.
 */
#include <stdlib.h>
#include <string.h>
#include "infer.h"

/* ---- the dispatcher ------------------------------------------------------------- */
void infer_onnx(Infer *I, const Node *n, Type **out)
{
	Module *m = I->m;
	const Type *x = ty(m, n, 0), *y = ty(m, n, 1);
	int dx = dt_of(x);
	Dim d[MAXR];
	int64_t iv[MAXR];
	int32_t a;
	if (op_info[n->op].flags & OPF_ELEMWISE) {
		int dt = is_compare(n->op) ? DT_BOOL : n->op == OP_ONNX_Where ? dt_of(y ? y : ty(m, n, 2)) : dx;
		/* one type for all: any typed operand gives it */
		for (uint32_t i = 1; !dt && (op_info[n->op].flags & OPF_SAMETYPE) && i < n->nargs; i++)
			dt = dt_of(ty(m, n, i));
		out[0] = bcast_all(I, n, dt, 0);
		return;
	}
	switch (n->op) {
	case OP_ONNX_Cast: case OP_ONNX_BitCast:
		out[0] = like(I, dtype_attr(n, "to"), x);
		return;
	case OP_ONNX_CastLike:
		out[0] = like(I, dt_of(y), x);
		return;
	case OP_ONNX_Identity: case OP_ONNX_Softmax: case OP_ONNX_LogSoftmax: case OP_ONNX_Hardmax:
	case OP_ONNX_LRN: case OP_ONNX_LpNormalization: case OP_ONNX_MeanVarianceNormalization:
	case OP_ONNX_InstanceNormalization: case OP_ONNX_GroupNormalization: case OP_ONNX_CumSum:
	case OP_ONNX_CumProd:
	case OP_ONNX_Trilu: case OP_ONNX_RotaryEmbedding: case OP_ONNX_RMSNormalization:
	case OP_ONNX_ScatterElements: case OP_ONNX_ScatterND: case OP_ONNX_Scatter:
	case OP_ONNX_ReverseSequence: case OP_ONNX_TensorScatter:
		out[0] = like(I, dx, x);
		return;
	case OP_ONNX_Dropout:
		out[0] = like(I, dx, x);
		if (n->nres > 1)
			out[1] = like(I, DT_BOOL, x);
		return;
	case OP_ONNX_Bernoulli: case OP_ONNX_RandomNormalLike: case OP_ONNX_RandomUniformLike:
	case OP_ONNX_EyeLike: {
		int dt = dtype_attr(n, "dtype");
		out[0] = like(I, dt ? dt : dx, x);
		return;
	}
	case OP_ONNX_BatchNormalization:
		out[0] = like(I, dx, x);
		for (uint32_t i = 1; i < n->nres && i < 3; i++)
			out[i] = like(I, dt_of(ty(m, n, i + 2)), ty(m, n, i + 2));
		return;
	case OP_ONNX_LayerNormalization: {
		out[0] = like(I, dx, x);
		int st = dtype_attr(n, "stash_type");
		if (n->nres < 2 || !shaped(x) || !norm_axis(kw_int_or(n, "axis", -1), x->rank, &a)) {
			for (uint32_t i = 1; i < n->nres; i++)
				out[i] = mk(I, st ? st : DT_F32, -1, NULL);
			return;
		}
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = i < a ? x->dims[i] : stat(1);
		for (uint32_t i = 1; i < n->nres; i++)
			out[i] = mk(I, st ? st : DT_F32, x->rank, d);
		return;
	}
	case OP_ONNX_Attention: {
		const Type *v = ty(m, n, 2);
		if (shaped(x) && x->rank == 4 && shaped(v) && v->rank == 4) {
			d[0] = x->dims[0], d[1] = x->dims[1], d[2] = x->dims[2], d[3] = v->dims[3];
			out[0] = mk(I, dx, 4, d);
		} else if (shaped(x) && x->rank == 3 && shaped(v) && v->rank == 3) {
			int64_t qh = kw_int_or(n, "q_num_heads", 0), kh = kw_int_or(n, "kv_num_heads", 0);
			d[0] = x->dims[0], d[1] = x->dims[1];
			d[2] = qh > 0 && kh > 0 && known(v->dims[2]) && v->dims[2].v % kh == 0
				? prod_dim(qh, v->dims[2].v / kh) : UNK;
			out[0] = mk(I, dx, 3, d);
		} else {
			out[0] = mk(I, dx, -1, NULL);
		}
		for (uint32_t i = 1; i < n->nres; i++)
			out[i] = mk(I, dx, -1, NULL);
		return;
	}
	case OP_ONNX_DFT:
		out[0] = infer_dft(I, n, x);
		return;
	case OP_ONNX_STFT:
		out[0] = infer_stft(I, n, x);
		return;
	case OP_ONNX_MatMul:
		out[0] = infer_matmul(I, x, y, dx);
		return;
	case OP_ONNX_MatMulInteger:
		out[0] = infer_matmul(I, x, y, DT_I32);
		return;
	case OP_ONNX_Gemm: {
		if (!shaped(x) || !shaped(y) || x->rank != 2 || y->rank != 2) {
			out[0] = mk(I, dx, 2, (Dim[]){ UNK, UNK });
			return;
		}
		d[0] = x->dims[kw_int_or(n, "transA", 0) ? 1 : 0];
		d[1] = y->dims[kw_int_or(n, "transB", 0) ? 0 : 1];
		out[0] = mk(I, dx, 2, d);
		return;
	}
	case OP_ONNX_Conv:
		out[0] = infer_window(I, n, x, y, shaped(y) && y->rank >= 1 ? y->dims[0] : UNK, 0);
		return;
	case OP_ONNX_ConvTranspose: {
		int64_t g = kw_int_or(n, "group", 1);
		Dim c = shaped(y) && y->rank >= 2 && known(y->dims[1]) ? stat(y->dims[1].v * g) : UNK;
		out[0] = infer_window(I, n, x, y, c, 1);
		return;
	}
	case OP_ONNX_AveragePool: case OP_ONNX_MaxPool: case OP_ONNX_LpPool:
		out[0] = infer_window(I, n, x, NULL, shaped(x) && x->rank >= 2 ? x->dims[1] : UNK, 0);
		if (n->nres > 1)
			out[1] = like(I, DT_I64, out[0]);
		return;
	case OP_ONNX_GlobalAveragePool: case OP_ONNX_GlobalMaxPool: case OP_ONNX_GlobalLpPool:
		if (!shaped(x) || x->rank < 2) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = i < 2 ? x->dims[i] : stat(1);
		out[0] = mk(I, dx, x->rank, d);
		return;
	case OP_ONNX_Reshape:
		out[0] = infer_reshape(I, n, x);
		return;
	case OP_ONNX_Transpose:
		out[0] = infer_transpose(I, n, x);
		return;
	case OP_ONNX_Concat:
		out[0] = infer_concat(I, n);
		return;
	case OP_ONNX_Split:
		infer_split(I, n, x, out);
		return;
	case OP_ONNX_Slice:
		out[0] = infer_slice(I, n, x);
		return;
	case OP_ONNX_Gather:
		out[0] = infer_gather(I, n, x, y);
		return;
	case OP_ONNX_GatherElements:
		out[0] = like(I, dx, y);
		return;
	case OP_ONNX_GatherND:
		out[0] = infer_gather_nd(I, n, x, y);
		return;
	case OP_ONNX_Squeeze:
		out[0] = infer_squeeze(I, n, x, 0);
		return;
	case OP_ONNX_Unsqueeze:
		out[0] = infer_squeeze(I, n, x, 1);
		return;
	case OP_ONNX_Flatten: {
		int32_t r = shaped(x) ? x->rank : -1;
		int64_t ax = kw_int_or(n, "axis", 1);
		if (r < 0 || ax < -r || ax > r) {
			out[0] = mk(I, dx, 2, (Dim[]){ UNK, UNK });
			return;
		}
		a = (int32_t)(ax < 0 ? ax + r : ax);
		d[0] = dims_product(x->dims, 0, a);
		d[1] = dims_product(x->dims, a, r);
		out[0] = mk(I, dx, 2, d);
		return;
	}
	case OP_ONNX_Expand: {
		int cnt = int_vec(I, operand(n, 1), d, MAXR);
		if (cnt < 0) {
			/* the shape's length alone gives the rank */
			cnt = shaped(y) && y->rank == 1 && known(y->dims[0]) && y->dims[0].v <= MAXR
				? (int)y->dims[0].v : -1;
			out[0] = unknown_dims(I, dx, shaped(x) && cnt >= 0 ? (cnt > x->rank ? cnt : x->rank) : -1);
			return;
		}
		for (int i = 0; i < cnt; i++)
			if (!d[i].sym && d[i].v < 0)
				d[i] = UNK;
		Type sh = { TY_TENSOR, 0, cnt, d, NULL };
		int32_t r = 0;
		Dim o[MAXR];
		int ok = bcast_into(&r, o, &sh) && bcast_into(&r, o, x);
		out[0] = mk(I, dx, ok ? r : -1, o);
		return;
	}
	case OP_ONNX_Tile: {
		int cnt = int_consts(I, operand(n, 1), iv, MAXR);
		if (!shaped(x) || cnt != x->rank) {
			out[0] = unknown_dims(I, dx, shaped(x) ? x->rank : -1);
			return;
		}
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = iv[i] == 1 ? x->dims[i] : known(x->dims[i]) ? prod_dim(x->dims[i].v, iv[i]) : UNK;
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_ReduceL1: case OP_ONNX_ReduceL2: case OP_ONNX_ReduceLogSum:
	case OP_ONNX_ReduceLogSumExp: case OP_ONNX_ReduceMax: case OP_ONNX_ReduceMean:
	case OP_ONNX_ReduceMin: case OP_ONNX_ReduceProd: case OP_ONNX_ReduceSum:
	case OP_ONNX_ReduceSumSquare:
		out[0] = infer_reduce(I, n, x, dx);
		return;
	case OP_ONNX_ArgMax: case OP_ONNX_ArgMin: {
		int64_t keep = kw_int_or(n, "keepdims", 1);
		if (!shaped(x) || !norm_axis(kw_int_or(n, "axis", 0), x->rank, &a)) {
			out[0] = mk(I, DT_I64, -1, NULL);
			return;
		}
		int32_t r = 0;
		for (int32_t i = 0; i < x->rank; i++)
			if (i != a)
				d[r++] = x->dims[i];
			else if (keep)
				d[r++] = stat(1);
		out[0] = mk(I, DT_I64, r, d);
		return;
	}
	case OP_ONNX_Shape: {
		int64_t r = shaped(x) ? x->rank : -1, s = kw_int_or(n, "start", 0), e = kw_int_or(n, "end", r);
		if (r < 0) {
			out[0] = mk(I, DT_I64, 1, &UNK);
			return;
		}
		s = s < 0 ? s + r : s;
		e = e < 0 ? e + r : e;
		s = s < 0 ? 0 : s > r ? r : s;
		e = e < 0 ? 0 : e > r ? r : e;
		out[0] = mk(I, DT_I64, 1, (Dim[]){ stat(e > s ? e - s : 0) });
		return;
	}
	case OP_ONNX_Size:
		out[0] = mk(I, DT_I64, 0, NULL);
		return;
	case OP_ONNX_NonZero:
		out[0] = mk(I, DT_I64, 2, (Dim[]){ shaped(x) ? stat(x->rank) : UNK, UNK });
		return;
	case OP_ONNX_ConstantOfShape: {
		const Named *v = node_kw(n, S_value);
		int dt = v && v->val.kind == A_TENSOR && v->val.u.t->type ? v->val.u.t->type->dtype : DT_F32;
		int cnt = int_vec(I, operand(n, 0), d, MAXR);
		if (cnt < 0 && shaped(x) && x->rank == 1 && known(x->dims[0]) && x->dims[0].v <= MAXR) {
			cnt = (int)x->dims[0].v;
			for (int i = 0; i < cnt; i++)
				d[i] = UNK;
		}
		for (int i = 0; i < cnt; i++)
			if (!d[i].sym && d[i].v < 0)
				d[i] = UNK;
		out[0] = mk(I, dt, cnt, d);
		return;
	}
	case OP_ONNX_Range: {
		const Tensor *ts = const_tensor(m, operand(n, 0)), *tl = const_tensor(m, operand(n, 1)),
			*td = const_tensor(m, operand(n, 2));
		Dim len = UNK;
		if (ts && tl && td && ts->data && tl->data && td->data && type_numel(ts->type) == 1
		    && type_numel(tl->type) == 1 && type_numel(td->type) == 1) {
			DType t = (DType)ts->type->dtype;
			double s = tensor_get_f(t, ts->data, 0), l = tensor_get_f(t, tl->data, 0),
				dl = tensor_get_f(t, td->data, 0);
			double k = dl != 0 ? (l - s) / dl : 0;
			if (dl != 0 && k == k && k < 1e18) {
				int64_t c = k > 0 ? (int64_t)k + ((double)(int64_t)k < k) : 0;
				len = stat(c);
			}
		}
		out[0] = mk(I, dx, 1, &len);
		return;
	}
	case OP_ONNX_Constant: {
		/* by the attribute's name, so that a function's `value_float =
		 * @alpha` is typed too */
		const Named *v = n->nkw == 1 ? &n->kw[0] : NULL;
		const char *k = v ? sym_str(v->name) : "";
		uint32_t cnt = v && v->val.kind == A_LIST ? v->val.n : 0;
		Dim len = v && v->val.kind == A_LIST ? stat(cnt) : UNK;
		if (v && v->name == S_value && v->val.kind == A_TENSOR && v->val.u.t->type) {
			const Type *t = v->val.u.t->type;
			out[0] = mk(I, t->dtype, t->rank, t->dims);
		} else if (!strcmp(k, "value_float"))
			out[0] = mk(I, DT_F32, 0, NULL);
		else if (!strcmp(k, "value_int"))
			out[0] = mk(I, DT_I64, 0, NULL);
		else if (!strcmp(k, "value_string"))
			out[0] = mk(I, DT_STR, 0, NULL);
		else if (!strcmp(k, "value_floats"))
			out[0] = mk(I, DT_F32, 1, &len);
		else if (!strcmp(k, "value_ints"))
			out[0] = mk(I, DT_I64, 1, &len);
		else if (!strcmp(k, "value_strings"))
			out[0] = mk(I, DT_STR, 1, &len);
		return;
	}
	case OP_ONNX_Pad: {
		int64_t p[2 * MAXR], ax[MAXR];
		int np = ints_attr_or_input(I, n, "pads", 1, p, 2 * MAXR);
		int na = operand(n, 3) ? int_consts(I, operand(n, 3), ax, MAXR) : -2;
		if (!shaped(x)) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
		if (na == -2) {
			na = x->rank;
			for (int i = 0; i < na; i++)
				ax[i] = i;
		}
		if (na < 0 || np != 2 * na) {
			for (int32_t i = 0; i < x->rank; i++)
				d[i] = UNK;
		} else {
			for (int i = 0; i < na; i++) {
				if (!norm_axis(ax[i], x->rank, &a))
					return;
				int64_t both;
				if (__builtin_add_overflow(p[i], p[i + na], &both))
					d[a] = UNK;
				else
					d[a] = known(d[a]) ? sum_dim(d[a].v, both) : p[i] == 0 && p[i + na] == 0 ? d[a] : UNK;
			}
		}
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_Resize: case OP_ONNX_Upsample: {
		Dim sz[MAXR];
		int ns = n->op == OP_ONNX_Resize ? int_vec(I, operand(n, 3), sz, MAXR) : -1;
		if (shaped(x) && ns == x->rank && !node_kw(n, S_axes)) {
			for (int i = 0; i < ns; i++)
				if (!known(sz[i]) && !sz[i].sym)
					sz[i] = UNK;
			out[0] = mk(I, dx, ns, sz);
			return;
		}
		const Tensor *sc = const_tensor(m, operand(n, n->op == OP_ONNX_Resize ? 2 : 1));
		if (shaped(x) && sc && sc->data && type_numel(sc->type) == x->rank && !node_kw(n, S_axes)
		    && dtype_is_float((DType)sc->type->dtype)) {
			for (int32_t i = 0; i < x->rank; i++) {
				double f = tensor_get_f((DType)sc->type->dtype, sc->data, (size_t)i);
				double o = known(x->dims[i]) ? (double)x->dims[i].v * f : -1;
				d[i] = f == 1.0 ? x->dims[i] : o >= 0 && o < 1e18 ? stat((int64_t)o) : UNK;
			}
			out[0] = mk(I, dx, x->rank, d);
			return;
		}
		out[0] = unknown_dims(I, dx, shaped(x) ? x->rank : -1);
		return;
	}
	case OP_ONNX_TopK: {
		Dim k[1];
		int nk = int_vec(I, operand(n, 1), k, 1);
		if (!shaped(x) || !norm_axis(kw_int_or(n, "axis", -1), x->rank, &a)) {
			out[0] = mk(I, dx, -1, NULL);
		} else {
			memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
			d[a] = nk == 1 && (known(k[0]) || k[0].sym) ? k[0] : UNK;
			out[0] = mk(I, dx, x->rank, d);
		}
		if (n->nres > 1)
			out[1] = like(I, DT_I64, out[0]);
		return;
	}
	case OP_ONNX_Einsum:
		out[0] = infer_einsum(I, n);
		return;
	case OP_ONNX_OneHot: {
		const Type *vt = ty(m, n, 2);
		Dim depth[1];
		int nd = int_vec(I, operand(n, 1), depth, 1);
		if (!shaped(x) || x->rank + 1 > MAXR || !norm_axis(kw_int_or(n, "axis", -1), x->rank + 1, &a)) {
			out[0] = mk(I, dt_of(vt), -1, NULL);
			return;
		}
		for (int32_t i = 0, k = 0; i <= x->rank; i++)
			d[i] = i == a ? (nd == 1 && known(depth[0]) ? depth[0] : UNK) : x->dims[k++];
		out[0] = mk(I, dt_of(vt), x->rank + 1, d);
		return;
	}
	case OP_ONNX_DepthToSpace: case OP_ONNX_SpaceToDepth: {
		int64_t b = kw_int_or(n, "blocksize", 0);
		if (!shaped(x) || x->rank != 4 || b <= 0 || b > 1 << 20) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		int up = n->op == OP_ONNX_DepthToSpace;
		d[0] = x->dims[0];
		for (int i = 1; i < 4; i++) {
			Dim v = x->dims[i];
			int64_t f = i == 1 ? b * b : b;
			int div = (i == 1) == up;
			d[i] = !known(v) ? UNK : div ? (v.v % f ? UNK : stat(v.v / f)) : prod_dim(v.v, f);
		}
		out[0] = mk(I, dx, 4, d);
		return;
	}
	case OP_ONNX_Det: {
		if (!shaped(x) || x->rank < 2) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		out[0] = mk(I, dx, x->rank - 2, x->dims);
		return;
	}
	case OP_ONNX_ConvInteger:
		out[0] = infer_window(I, n, x, y, shaped(y) && y->rank >= 1 ? y->dims[0] : UNK, 0);
		if (out[0])
			out[0]->dtype = DT_I32;
		return;
	case OP_ONNX_GridSample: {
		if (!shaped(x) || !shaped(y) || x->rank < 3 || y->rank != x->rank) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		d[0] = x->dims[0];
		d[1] = x->dims[1];
		for (int32_t i = 2; i < x->rank; i++)
			d[i] = y->dims[i - 1];
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_Compress: {
		int64_t ax;
		if (!kw_int(n, "axis", &ax) || !shaped(x)) {
			out[0] = mk(I, dx, 1, &UNK);
			return;
		}
		if (!norm_axis(ax, x->rank, &a)) {
			out[0] = mk(I, dx, -1, NULL);
			return;
		}
		memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
		d[a] = UNK;
		out[0] = mk(I, dx, x->rank, d);
		return;
	}
	case OP_ONNX_DynamicQuantizeLinear:
		out[0] = like(I, DT_U8, x);
		if (n->nres > 1)
			out[1] = mk(I, DT_F32, 0, NULL);
		if (n->nres > 2)
			out[2] = mk(I, DT_U8, 0, NULL);
		return;
	case OP_ONNX_NegativeLogLikelihoodLoss: case OP_ONNX_SoftmaxCrossEntropyLoss: {
		uint32_t len;
		const char *red = kw_str(n, "reduction", &len);
		int none = red && len == 4 && memcmp(red, "none", 4) == 0;
		out[0] = none ? like(I, dx, y) : mk(I, dx, 0, NULL);
		if (n->nres > 1)
			out[1] = like(I, dx, x);
		return;
	}
	case OP_ONNX_RNN: case OP_ONNX_GRU: case OP_ONNX_LSTM: {
		/* X [seq, batch, input] (layout 0) or [batch, seq, input] */
		const Type *w = y;
		int64_t layout = kw_int_or(n, "layout", 0), hs = kw_int_or(n, "hidden_size", -1);
		if (!shaped(x) || x->rank != 3 || !shaped(w) || w->rank != 3) {
			for (uint32_t i = 0; i < n->nres; i++)
				out[i] = mk(I, dx, -1, NULL);
			return;
		}
		Dim seq = x->dims[layout ? 1 : 0], batch = x->dims[layout ? 0 : 1], dir = w->dims[0];
		Dim hid = hs >= 0 ? stat(hs) : UNK;
		Dim y4[4] = { seq, dir, batch, hid }, yl[4] = { batch, seq, dir, hid };
		Dim h3[3] = { dir, batch, hid }, hl[3] = { batch, dir, hid };
		out[0] = mk(I, dx, 4, layout ? yl : y4);
		for (uint32_t i = 1; i < n->nres && i < 3; i++)
			out[i] = mk(I, dx, 3, layout ? hl : h3);
		return;
	}
	case OP_ONNX_NonMaxSuppression:
		out[0] = mk(I, DT_I64, 2, (Dim[]){ UNK, stat(3) });
		return;
	case OP_ONNX_RoiAlign: {
		/* [num_rois, C, output_height, output_width] */
		const Type *b = ty(m, n, 2);
		d[0] = shaped(b) && b->rank == 1 ? b->dims[0] : UNK;
		d[1] = shaped(x) && x->rank == 4 ? x->dims[1] : UNK;
		d[2] = stat(kw_int_or(n, "output_height", 1));
		d[3] = stat(kw_int_or(n, "output_width", 1));
		out[0] = mk(I, dx, 4, d);
		return;
	}
	case OP_ONNX_QLinearMatMul: {
		/* a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point */
		Type *t = infer_matmul(I, x, ty(m, n, 3), dt_of(ty(m, n, 7)));
		out[0] = t;
		return;
	}
	case OP_ONNX_QLinearConv: {
		const Type *w = ty(m, n, 3);
		out[0] = infer_window(I, n, x, w, shaped(w) && w->rank >= 1 ? w->dims[0] : UNK, 0);
		if (out[0])
			out[0]->dtype = (uint8_t)dt_of(ty(m, n, 7));
		if (out[0] && !out[0]->dtype)
			out[0] = NULL;
		return;
	}
	case OP_ONNX_BlackmanWindow: case OP_ONNX_HannWindow: case OP_ONNX_HammingWindow: {
		int dt = dtype_attr(n, "output_datatype");
		Dim len[1];
		if (int_vec(I, operand(n, 0), len, 1) != 1 || (!known(len[0]) && !len[0].sym))
			len[0] = UNK;
		out[0] = mk(I, dt ? dt : DT_F32, 1, len);
		return;
	}
	case OP_ONNX_Unique: {
		int64_t ax;
		int has_axis = kw_int(n, "axis", &ax);
		if (has_axis && shaped(x) && norm_axis(ax, x->rank, &a)) {
			memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
			d[a] = UNK;
			out[0] = mk(I, dx, x->rank, d);
		} else {
			out[0] = has_axis ? mk(I, dx, -1, NULL) : mk(I, dx, 1, &UNK);
		}
		for (uint32_t i = 1; i < n->nres; i++)
			out[i] = mk(I, DT_I64, 1, &UNK);
		return;
	}
	case OP_ONNX_DequantizeLinear:
		out[0] = like(I, dt_of(y), x);
		return;
	case OP_ONNX_QuantizeLinear: {
		int dt = dtype_attr(n, "output_dtype");
		out[0] = like(I, dt ? dt : ty(m, n, 2) ? dt_of(ty(m, n, 2)) : DT_U8, x);
		return;
	}
	case OP_ONNX_If: {
		const Graph *t = graph_attr(n, "then_branch"), *e = graph_attr(n, "else_branch");
		for (uint32_t i = 0; i < n->nres; i++)
			out[i] = merge_types(I, graph_out_type(m, t, i), graph_out_type(m, e, i));
		return;
	}
	case OP_ONNX_Loop: {
		const Graph *b = graph_attr(n, "body");
		uint32_t carried = n->nargs > 2 ? n->nargs - 2 : 0;
		for (uint32_t i = 0; i < n->nres; i++) {
			const Type *t = graph_out_type(m, b, i + 1);
			if (i < carried) {
				const Type *init = ty(m, n, i + 2);
				out[i] = t && init ? merge_types(I, t, init) : NULL;
			} else if (t && t->kind == TY_TENSOR) {
				if (shaped(t) && t->rank < MAXR) {
					d[0] = UNK;
					if (t->rank > 0)
						memcpy(d + 1, t->dims, sizeof *d * (size_t)t->rank);
				}
				out[i] = mk(I, t->dtype, shaped(t) && t->rank < MAXR ? t->rank + 1 : -1, d);
			}
		}
		return;
	}
	default:
		if (op_info[n->op].flags & OPF_SAMETYPE)
			for (uint32_t i = 0; i < n->nres; i++)
				out[i] = mk(I, dx, -1, NULL);
		return;
	}
}
