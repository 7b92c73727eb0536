/* attn_groups.c - grouped-query attention seen through its copies.
 *
 * A model with fewer key/value heads than query heads (Llama, Qwen,
 * Mistral, ...) repeats each key/value head G = Hq/Hkv times before a
 * plain scaled_dot_product_attention when it passes a mask (transformers'
 * repeat_kv):
 *
 *     u = unsqueeze(kv, 2)                    [B, Hkv, 1, S, D]
 *     e = expand(u, [B, Hkv, G, S, D])        (full slices around both)
 *     r = reshape(e, [B, Hkv * G, S, D])
 *     scaled_dot_product_attention(q, r_k, r_v, mask)
 *
 * which lowers to an Expand that copies the whole cache G times at every
 * decode step.  The call computes the same as
 * scaled_dot_product_attention(q, kv_k, kv_v, mask, enable_gqa = true):
 * query head h reads key/value head h / G either way.  The call is
 * rewritten so, and attention.fxir's grouped form reads the heads where
 * they are.  Only when both key and value are such copies with one G and
 * every head count is static; the copies are left for dce.  Constant
 * work a call: a few producer links followed. */
#include "passes.h"

/* x through any aten::slice.Tensor that takes all of it (start 0, end at
 * or past the end, step 1): the value it views. */
static ValueId through_full_slices(Module *m, ValueId x)
{
	for (;;) {
		const Node *d = val(m, x)->def;
		if (!d || d->op != OP_ATEN_slice_Tensor || d->nargs < 1 || d->args[0].kind != A_VALUE)
			return x;
		const Arg *start = d->nargs > 2 ? &d->args[2] : NULL, *end = d->nargs > 3 ? &d->args[3] : NULL;
		const Arg *step = d->nargs > 4 ? &d->args[4] : NULL;
		if ((start && !(start->kind == A_INT && start->u.i == 0) && start->kind != A_NONE) ||
		    (end && !(end->kind == A_INT && end->u.i == INT64_MAX) && end->kind != A_NONE) ||
		    (step && !(step->kind == A_INT && step->u.i == 1)) || node_kw(d, S_step))
			return x;
		x = d->args[0].u.v;
	}
}

static const Node *producer(Module *m, const Arg *a, OpId op)
{
	if (a->kind != A_VALUE)
		return NULL;
	const Node *d = val(m, a->u.v)->def;
	return d && d->op == op && d->nargs >= 1 && d->args[0].kind == A_VALUE ? d : NULL;
}

static int static_dim(const Type *t, int32_t rank, int32_t i, int64_t *v)
{
	if (!t || t->kind != TY_TENSOR || t->rank != rank || t->dims[i].sym)
		return 0;
	*v = t->dims[i].v;
	return 1;
}

/* The key/value heads `a` (a 4-D reshape of G copies of them) repeats,
 * with *g set to G; VNONE when `a` is not such a copy. */
static ValueId repeated_heads(Module *m, const Arg *a, int64_t *g)
{
	const Node *r = producer(m, a, OP_ATEN_reshape_default);
	if (!r)
		r = producer(m, a, OP_ATEN_view_default);
	if (!r)
		return VNONE;
	const Node *e = val(m, through_full_slices(m, r->args[0].u.v))->def;
	if (!e || e->op != OP_ATEN_expand_default || e->args[0].kind != A_VALUE)
		return VNONE;
	const Node *u = val(m, through_full_slices(m, e->args[0].u.v))->def;
	if (!u || u->op != OP_ATEN_unsqueeze_default || u->nargs != 2 || u->args[0].kind != A_VALUE ||
	    u->args[1].kind != A_INT || (u->args[1].u.i != 2 && u->args[1].u.i != -3))
		return VNONE;
	ValueId heads = through_full_slices(m, u->args[0].u.v);
	const Type *th = val(m, heads)->type, *te = val(m, e->res[0])->type, *tr = val(m, r->res[0])->type;
	int64_t hkv, hkv_e, groups, hq;
	if (!static_dim(th, 4, 1, &hkv) || !static_dim(te, 5, 1, &hkv_e) || !static_dim(te, 5, 2, &groups) ||
	    !static_dim(tr, 4, 1, &hq) || hkv != hkv_e || groups < 1 || hq != hkv * groups)
		return VNONE;
	*g = groups;
	return heads;
}

static void set_enable_gqa(Module *m, Node *call)
{
	for (uint32_t i = 0; i < call->nkw; i++)
		if (call->kw[i].name == S_enable_gqa) {
			call->kw[i].val = (Arg){ .kind = A_BOOL, .u.i = 1 };
			return;
		}
	Named *kw = ARENA_ARRAY(&m->arena, Named, call->nkw + 1);
	for (uint32_t i = 0; i < call->nkw; i++)
		kw[i] = call->kw[i];
	kw[call->nkw] = (Named){ S_enable_gqa, { .kind = A_BOOL, .u.i = 1 } };
	call->kw = kw;
	call->nkw++;
}

void attn_ungroup_kv(Module *m, Node *call)
{
	if (call->op != OP_ATEN_scaled_dot_product_attention_default || call->nargs < 3)
		return;
	const Named *gqa = node_kw(call, S_enable_gqa);
	if (gqa && !(gqa->val.kind == A_BOOL && gqa->val.u.i == 0))
		return;
	int64_t gk = 0, gv = 0;
	ValueId k = repeated_heads(m, &call->args[1], &gk), v = repeated_heads(m, &call->args[2], &gv);
	if (!k || !v || gk != gv || gk < 2)
		return;
	call->args[1].u.v = k;
	call->args[2].u.v = v;
	set_enable_gqa(m, call);
}
