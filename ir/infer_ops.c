/* infer_ops.c - type inference: the rules of op families (MatMul,
 * windows, reductions, Reshape, Slice, Concat, Split, Gather, Squeeze,
 * Transpose, Einsum, DFT, STFT) and the types of If/Loop bodies.
 */
#include <stdlib.h>
#include <string.h>
#include "infer.h"

/* ---- op families -------------------------------------------------------------- */
Type *infer_matmul(Infer *I, const Type *a, const Type *b, int dt)
{
	if (!shaped(a) || !shaped(b) || a->rank == 0 || b->rank == 0)
		return mk(I, dt, -1, NULL);
	Dim ad[MAXR], bd[MAXR], d[MAXR];
	int32_t ar = a->rank, br = b->rank;
	memcpy(ad, a->dims, sizeof *ad * (size_t)ar);
	memcpy(bd, b->dims, sizeof *bd * (size_t)br);
	int a1 = ar == 1, b1 = br == 1;
	if (a1) {
		ad[1] = ad[0];
		ad[0] = stat(1);
		ar = 2;
	}
	if (b1) {
		bd[1] = stat(1);
		br = 2;
	}
	/* batch dims broadcast */
	int32_t r = 0;
	Type ta = { TY_TENSOR, 0, ar - 2, ad, NULL }, tb = { TY_TENSOR, 0, br - 2, bd, NULL };
	bcast_into(&r, d, &ta);
	bcast_into(&r, d, &tb);
	if (!a1)
		d[r++] = ad[ar - 2];
	if (!b1)
		d[r++] = bd[br - 1];
	return mk(I, dt, r, d);
}

/* Spatial output sizes of Conv, ConvTranspose and the pools. */
static Dim window_dim(Dim in, int64_t k, int64_t s, int64_t dl, int64_t pb, int64_t pe,
		      const char *ap, uint32_t apn, int ceil_mode, int transpose, int64_t outpad)
{
	/* beyond these bounds no real model lies, and no step overflows */
	const int64_t big = (int64_t)1 << 40, small = 1 << 20;
	if (!known(in) || in.v > big || k < 0 || k > small || s <= 0 || s > small || dl <= 0 || dl > small
	    || pb < -big || pb > big || pe < -big || pe > big || outpad < -big || outpad > big)
		return UNK;
	int64_t ek = (k - 1) * dl + 1, x = in.v;
	int same = ap && apn > 4 && memcmp(ap, "SAME", 4) == 0;
	int valid = ap && apn == 5 && memcmp(ap, "VALID", 5) == 0;
	if (transpose) {
		if (same)
			return stat(x * s);
		if (valid)
			pb = pe = 0;
		return sum_dim(s * (x - 1) + outpad + ek - pb - pe, 0);
	}
	if (same)
		return stat((x + s - 1) / s);
	if (valid)
		pb = pe = 0;
	int64_t span = x + pb + pe - ek;
	if (span < 0)
		return UNK;
	int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
	if (ceil_mode && (o - 1) * s >= x + pb)
		o--;
	return stat(o);
}

Type *infer_window(Infer *I, const Node *n, const Type *x, const Type *w, Dim channels, int transpose)
{
	int dt = dt_of(x);
	if (!shaped(x) || x->rank < 2)
		return mk(I, dt, -1, NULL);
	int32_t sp = x->rank - 2;
	int64_t k[MAXR], s[MAXR], dl[MAXR], p[2 * MAXR], op[MAXR], os[MAXR];
	int nk = kw_ints(n, "kernel_shape", k, MAXR);
	if (nk < 0 && shaped(w) && w->rank == x->rank) {
		nk = sp;
		for (int32_t i = 0; i < sp; i++)
			k[i] = known(w->dims[i + 2]) ? w->dims[i + 2].v : -1;
	}
	Dim d[MAXR];
	d[0] = x->dims[0];
	d[1] = channels;
	int nos = transpose ? kw_ints(n, "output_shape", os, MAXR) : -1;
	int ns = kw_ints(n, "strides", s, MAXR), nd = kw_ints(n, "dilations", dl, MAXR);
	int np = kw_ints(n, "pads", p, 2 * MAXR), nop = kw_ints(n, "output_padding", op, MAXR);
	uint32_t apn = 0;
	const char *ap = kw_str(n, "auto_pad", &apn);
	int ceil_mode = (int)kw_int_or(n, "ceil_mode", 0);
	for (int32_t i = 0; i < sp; i++) {
		if (nos == sp) {
			d[i + 2] = stat(os[i]);
			continue;
		}
		d[i + 2] = nk != sp ? UNK
			: window_dim(x->dims[i + 2], k[i], ns == sp ? s[i] : 1, nd == sp ? dl[i] : 1,
				     np == 2 * sp ? p[i] : 0, np == 2 * sp ? p[i + sp] : 0, ap, apn,
				     ceil_mode, transpose, nop == sp ? op[i] : 0);
	}
	return mk(I, dt, x->rank, d);
}

/* Reduce*: axes from the attribute or the second operand. */
Type *infer_reduce(Infer *I, const Node *n, const Type *x, int dt)
{
	int64_t keep = kw_int_or(n, "keepdims", 1), noop = kw_int_or(n, "noop_with_empty_axes", 0);
	int64_t ax[MAXR];
	int na = kw_ints(n, "axes", ax, MAXR);
	if (na < 0 && operand(n, 1)) {
		na = int_consts(I, operand(n, 1), ax, MAXR);
		if (na < 0)
			return unknown_dims(I, dt, shaped(x) && keep ? x->rank : -1);
	}
	if (na < 0)
		na = 0;
	if (!shaped(x))
		return mk(I, dt, -1, NULL);
	if (na == 0 && noop)
		return like(I, dt, x);
	uint8_t red[MAXR] = { 0 };
	for (int i = 0; i < na; i++) {
		int32_t a;
		if (!norm_axis(ax[i], x->rank, &a))
			return mk(I, dt, -1, NULL);
		red[a] = 1;
	}
	Dim d[MAXR];
	int32_t r = 0;
	for (int32_t i = 0; i < x->rank; i++) {
		if (na && !red[i])
			d[r++] = x->dims[i];
		else if (keep)
			d[r++] = stat(1);
	}
	return mk(I, dt, r, d);
}

Type *infer_reshape(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	Dim to[MAXR];
	int cnt = int_vec(I, operand(n, 1), to, MAXR);
	if (cnt < 0) {
		const Type *st = ty(I->m, n, 1);
		int rank = shaped(st) && st->rank == 1 && known(st->dims[0]) && st->dims[0].v <= MAXR
			? (int)st->dims[0].v : -1;
		Dim u[MAXR];
		for (int i = 0; i < rank; i++)
			u[i] = UNK;
		return mk(I, dt, rank, u);
	}
	int64_t allowzero = kw_int_or(n, "allowzero", 0);
	int32_t minus = -1;
	for (int i = 0; i < cnt; i++) {
		if (known(to[i]) && to[i].v == 0 && !allowzero)
			to[i] = shaped(x) && i < x->rank ? x->dims[i] : UNK;
		else if (!to[i].sym && to[i].v == -1)
			minus = i;
		else if (!to[i].sym && to[i].v < -1)
			to[i] = UNK;
	}
	if (minus >= 0)
		to[minus] = shaped(x) ? reshape_rest(x, to, cnt, minus) : UNK;
	return mk(I, dt, cnt, to);
}

Type *infer_slice(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	if (!shaped(x))
		return mk(I, dt, -1, NULL);
	int64_t s[MAXR], e[MAXR], ax[MAXR], st[MAXR];
	int ns = ints_attr_or_input(I, n, "starts", 1, s, MAXR);
	int ne = ints_attr_or_input(I, n, "ends", 2, e, MAXR);
	int na = ints_attr_or_input(I, n, "axes", 3, ax, MAXR);
	int nst = operand(n, 4) ? int_consts(I, operand(n, 4), st, MAXR) : -1;
	Dim d[MAXR];
	memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
	if (ns < 0 || ne != ns || (na >= 0 && na != ns) || (operand(n, 4) && nst != ns)) {
		/* which axes change is not known */
		for (int32_t i = 0; i < x->rank; i++)
			d[i] = UNK;
		return mk(I, dt, x->rank, d);
	}
	if (na < 0 && !operand(n, 3))
		for (int i = 0; i < ns; i++)
			ax[i] = i;
	else if (na < 0)
		return like(I, dt, NULL);
	for (int i = 0; i < ns; i++) {
		int32_t a;
		if (!norm_axis(ax[i], x->rank, &a))
			return mk(I, dt, -1, NULL);
		d[a] = slice_dim(x->dims[a], s[i], e[i], nst == ns ? st[i] : 1);
	}
	return mk(I, dt, x->rank, d);
}

Type *infer_concat(Infer *I, const Node *n)
{
	const Type *t0 = NULL;
	for (uint32_t i = 0; i < n->nargs && !t0; i++)
		t0 = ty(I->m, n, i);
	int dt = dt_of(t0);
	int32_t rank = -1, a;
	for (uint32_t i = 0; i < n->nargs; i++)
		if (shaped(ty(I->m, n, i)))
			rank = ty(I->m, n, i)->rank;
	if (rank < 0 || !norm_axis(kw_int_or(n, "axis", 0), rank, &a))
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	for (int32_t k = 0; k < rank; k++)
		d[k] = k == a ? stat(0) : UNK;
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Type *t = ty(I->m, n, i);
		if (!operand(n, i))
			continue;
		if (!shaped(t) || t->rank != rank) {
			d[a] = UNK;
			continue;
		}
		for (int32_t k = 0; k < rank; k++) {
			if (k == a)
				d[a] = known(d[a]) && known(t->dims[k]) ? sum_dim(d[a].v, t->dims[k].v)
					: n->nargs == 1 ? t->dims[k] : UNK;
			else if (!known(d[k]) && !d[k].sym)
				d[k] = t->dims[k];
		}
	}
	return mk(I, dt, rank, d);
}

void infer_split(Infer *I, const Node *n, const Type *x, Type **out)
{
	int dt = dt_of(x);
	int32_t a;
	if (!shaped(x) || !norm_axis(kw_int_or(n, "axis", 0), x->rank, &a)) {
		for (uint32_t i = 0; i < n->nres; i++)
			out[i] = mk(I, dt, -1, NULL);
		return;
	}
	int64_t sz[MAXR];
	int ns = n->nres <= MAXR ? ints_attr_or_input(I, n, "split", 1, sz, MAXR) : -1;
	/* equal parts: num_outputs (opset 18), else one per result */
	int64_t parts = kw_int_or(n, "num_outputs", n->nres);
	Dim d[MAXR];
	memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
	for (uint32_t i = 0; i < n->nres; i++) {
		if (ns == (int)n->nres)
			d[a] = stat(sz[i]);
		else if (ns < 0 && !operand(n, 1) && known(x->dims[a]) && parts > 0) {
			int64_t k = x->dims[a].v / parts + (x->dims[a].v % parts != 0);
			int64_t before, rest;
			if (__builtin_mul_overflow(k, (int64_t)i, &before))
				before = INT64_MAX;
			rest = x->dims[a].v - before;
			d[a] = stat(rest < 0 ? 0 : rest < k ? rest : k);
		} else
			d[a] = UNK;
		out[i] = mk(I, dt, x->rank, d);
	}
}

Type *infer_gather(Infer *I, const Node *n, const Type *x, const Type *idx)
{
	int dt = dt_of(x);
	int32_t a;
	if (!shaped(x) || !shaped(idx) || !norm_axis(kw_int_or(n, "axis", 0), x->rank, &a)
	    || x->rank + idx->rank - 1 > MAXR)
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	int32_t r = 0;
	for (int32_t i = 0; i < a; i++)
		d[r++] = x->dims[i];
	for (int32_t i = 0; i < idx->rank; i++)
		d[r++] = idx->dims[i];
	for (int32_t i = a + 1; i < x->rank; i++)
		d[r++] = x->dims[i];
	return mk(I, dt, r, d);
}

Type *infer_gather_nd(Infer *I, const Node *n, const Type *x, const Type *idx)
{
	int dt = dt_of(x);
	int64_t b = kw_int_or(n, "batch_dims", 0);
	if (!shaped(x) || !shaped(idx) || idx->rank < 1 || !known(idx->dims[idx->rank - 1]))
		return mk(I, dt, -1, NULL);
	int64_t last = idx->dims[idx->rank - 1].v;
	if (b < 0 || last > x->rank || b > x->rank - last)
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	int32_t r = 0;
	for (int32_t i = 0; i < idx->rank - 1; i++)
		d[r++] = idx->dims[i];
	for (int64_t i = b + last; i < x->rank && r < MAXR; i++)
		d[r++] = x->dims[i];
	return mk(I, dt, r, d);
}

Type *infer_squeeze(Infer *I, const Node *n, const Type *x, int un)
{
	int dt = dt_of(x);
	int64_t ax[MAXR];
	int na = ints_attr_or_input(I, n, "axes", 1, ax, MAXR);
	if (!shaped(x) || (na < 0 && (un || operand(n, 1))))
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	int32_t r = 0;
	if (un) {
		int32_t out = x->rank + na, k = 0;
		uint8_t ins[MAXR] = { 0 };
		if (out > MAXR)
			return mk(I, dt, -1, NULL);
		for (int i = 0; i < na; i++) {
			int32_t a;
			if (!norm_axis(ax[i], out, &a))
				return mk(I, dt, -1, NULL);
			ins[a] = 1;
		}
		for (int32_t i = 0; i < out; i++)
			d[r++] = ins[i] ? stat(1) : x->dims[k++];
		return mk(I, dt, r, d);
	}
	uint8_t drop[MAXR] = { 0 };
	for (int i = 0; i < na; i++) {
		int32_t a;
		if (!norm_axis(ax[i], x->rank, &a))
			return mk(I, dt, -1, NULL);
		drop[a] = 1;
	}
	for (int32_t i = 0; i < x->rank; i++) {
		if (na <= 0 && !known(x->dims[i]))
			return mk(I, dt, -1, NULL);
		if (na > 0 ? !drop[i] : x->dims[i].v != 1)
			d[r++] = x->dims[i];
	}
	return mk(I, dt, r, d);
}

Type *infer_transpose(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	if (!shaped(x))
		return mk(I, dt, -1, NULL);
	int64_t p[MAXR];
	int np = kw_ints(n, "perm", p, MAXR);
	Dim d[MAXR];
	for (int32_t i = 0; i < x->rank; i++) {
		int64_t k = np == x->rank ? p[i] : x->rank - 1 - i;
		if (k < 0)
			k += x->rank;
		if (k < 0 || k >= x->rank)
			return mk(I, dt, -1, NULL);
		d[i] = x->dims[k];
	}
	return mk(I, dt, x->rank, d);
}

Type *infer_einsum(Infer *I, const Node *n)
{
	int dt = dt_of(ty(I->m, n, 0));
	uint32_t len;
	const char *eq = kw_str(n, "equation", &len);
	const char *arrow = eq ? memchr(eq, '>', len) : NULL;
	if (!eq || memchr(eq, '.', len))
		return mk(I, dt, -1, NULL);
	/* implicit output: the letters used once, in alphabetical order */
	char implicit[128];
	if (!arrow) {
		int count[128] = { 0 };
		uint32_t k = 0;
		for (uint32_t i = 0; i < len; i++)
			if ((unsigned char)eq[i] < 128)
				count[(int)eq[i]]++;
		for (int c = 'A'; c <= 'z'; c++)
			if (count[c] == 1 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
				implicit[k++] = (char)c;
		implicit[k] = 0;
	}
	const char *end_in = arrow ? arrow - 1 : eq + len;
	Dim letter[128];
	for (int i = 0; i < 128; i++)
		letter[i] = UNK;
	uint32_t op = 0, pos = 0;
	for (const char *p = eq; p < end_in; p++) {
		if (*p == ',') {
			op++;
			pos = 0;
		} else if (*p != ' ' && (unsigned char)*p < 128) {
			const Type *t = ty(I->m, n, op);
			if (shaped(t) && pos < (uint32_t)t->rank && !known(letter[(int)*p]))
				letter[(int)*p] = t->dims[pos];
			pos++;
		}
	}
	Dim d[MAXR];
	int32_t r = 0;
	const char *o = arrow ? arrow + 1 : implicit, *oe = arrow ? eq + len : implicit + strlen(implicit);
	for (const char *p = o; p < oe && r < MAXR; p++)
		if (*p != ' ' && (unsigned char)*p < 128)
			d[r++] = letter[(int)*p];
	return mk(I, dt, r, d);
}

/* If's results: the branches' output types where they agree. */
Type *merge_types(Infer *I, const Type *a, const Type *b)
{
	if (!a || !b || a->kind != TY_TENSOR || b->kind != TY_TENSOR)
		return a && b && type_equal(a, b) ? (Type *)a : NULL;
	if (a->dtype != b->dtype)
		return NULL;
	if (!shaped(a) || !shaped(b) || a->rank != b->rank)
		return mk(I, a->dtype, -1, NULL);
	Dim d[MAXR];
	for (int32_t i = 0; i < a->rank; i++)
		d[i] = dim_same(a->dims[i], b->dims[i]) ? a->dims[i] : UNK;
	return mk(I, a->dtype, a->rank, d);
}

const Graph *graph_attr(const Node *n, const char *name)
{
	const Named *k = node_kw(n, S(name));
	return k && k->val.kind == A_GRAPH ? k->val.u.g : NULL;
}

const Type *graph_out_type(const Module *m, const Graph *g, uint32_t i)
{
	if (!g || i >= g->nout)
		return NULL;
	const Type *t = g->out[i] ? m->vals.v[g->out[i]].type : NULL;
	return t ? t : g->out_decl ? g->out_decl[i] : NULL;
}

/* DFT: the signal [..., N, 1|2] keeps its shape but for the transformed
 * axis (dft_length if given, N/2+1 when onesided) and a last dim of 2.
 * The axis is an attribute (opset 17, default 1) or input 2 (opset 20,
 * default -2). */
Type *infer_dft(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	if (!shaped(x) || x->rank < 2)
		return mk(I, dt, -1, NULL);
	Dim d[MAXR];
	memcpy(d, x->dims, sizeof *d * (size_t)x->rank);
	d[x->rank - 1] = stat(2);
	int64_t ax, len;
	int k = ints_attr_or_input(I, n, "axis", 2, &ax, 1);
	if (k != 1 && (operand(n, 2) || node_kw(n, S("axis")))) {
		/* an axis that is not a constant: which dim changes is not known */
		for (int32_t i = 0; i < x->rank - 1; i++)
			d[i] = UNK;
		return mk(I, dt, x->rank, d);
	}
	if (k != 1)
		ax = opsets_onnx(&I->m->opsets, 18) >= 20 ? -2 : 1;
	int32_t a;
	if (!norm_axis(ax, x->rank, &a) || a == x->rank - 1)
		return mk(I, dt, -1, NULL);
	if (operand(n, 1))
		d[a] = int_consts(I, operand(n, 1), &len, 1) == 1 ? stat(len) : UNK;
	if (kw_int_or(n, "onesided", 0))
		d[a] = known(d[a]) ? stat(d[a].v / 2 + 1) : UNK;
	return mk(I, dt, x->rank, d);
}

/* STFT: [batch, frames, bins, 2] from the signal [batch, L, 1|2], the frame
 * step (input 1) and the frame length (the window's, or input 3). */
Type *infer_stft(Infer *I, const Node *n, const Type *x)
{
	int dt = dt_of(x);
	int64_t step, len = -1;
	const Type *w = ty(I->m, n, 2);
	if (operand(n, 3))
		int_consts(I, operand(n, 3), &len, 1);
	else if (shaped(w) && w->rank == 1 && known(w->dims[0]))
		len = w->dims[0].v;
	Dim d[4] = { shaped(x) && x->rank == 3 ? x->dims[0] : UNK, UNK, UNK, stat(2) };
	if (len > 0 && int_consts(I, operand(n, 1), &step, 1) == 1 && step > 0 && shaped(x) && x->rank == 3) {
		if (known(x->dims[1]) && x->dims[1].v >= len)
			d[1] = stat((x->dims[1].v - len) / step + 1);
		d[2] = stat(kw_int_or(n, "onesided", 1) ? len / 2 + 1 : len);
	}
	return mk(I, dt, 4, d);
}
