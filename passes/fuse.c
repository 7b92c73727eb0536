/* fuse.c - -O2 fusions: several ONNX nodes become one that ONNX Runtime
 * runs as a single kernel.
 *
 *   Add(MatMul(a, Transpose(w, perm=[1,0])), c)  -> Gemm(a, w, c, transB=1)
 *   Add(MatMul(a, b), c)                         -> Gemm(a, b, c)
 *       a and the weight 2-D, c broadcastable to the result ([N], [1,N],
 *       [M,N]), a floating dtype; the MatMul (and the Transpose) feed
 *       nothing else.  The Add's operands may come in either order.
 *   ReduceMean(x, axes = every dim after the second, keepdims=1)
 *                                                -> GlobalAveragePool(x)
 *       x of static rank >= 3; axes as the input (opset 18) or the
 *       attribute (before).
 *
 * Why they hold: Gemm computes A * op(B) + C with C broadcast one way to
 * (M, N), which is the MatMul and Add of 2-D operands; transB=1 reads the
 * weight transposed, which is what the Transpose did.  GlobalAveragePool
 * averages every spatial dim of an (N, C, D1, ...) tensor and keeps them
 * as 1s, which is ReduceMean over dims 2.. with keepdims.
 *
 * One walk over every graph (module_walk); the fused node replaces the last
 * node of the pattern in place, so it keeps that node's result, name and
 * provenance; the nodes it absorbed are left for dce (their one use is
 * gone).  Use counts are computed once: linear time. */
#include <stdlib.h>
#include "passes.h"

typedef struct Fuse {
	Module *m;
	uint32_t *uses;
} Fuse;

static const Type *static_type(const Fuse *f, ValueId v)
{
	const Type *t = v ? val(f->m, v)->type : NULL;
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return NULL;
	for (int32_t i = 0; i < t->rank; i++)
		if (t->dims[i].sym || t->dims[i].v < 0)
			return NULL;
	return t;
}

static int is_float(const Type *t) { return t && dtype_is_float((DType)t->dtype); }

/* c broadcasts one way to (M, N): [N], [1, N] or [M, N] (1s allowed). */
static int gemm_bias_ok(const Type *c, int64_t m, int64_t n)
{
	if (!c || c->rank < 1 || c->rank > 2)
		return 0;
	int64_t cn = c->dims[c->rank - 1].v, cm = c->rank == 2 ? c->dims[0].v : 1;
	return (cn == n || cn == 1) && (cm == m || cm == 1);
}

static int perm_is_swap(const Node *t)
{
	const Named *p = node_kw(t, S_perm);
	return p && p->val.kind == A_LIST && p->val.n == 2 && p->val.u.list[0].kind == A_INT &&
	       p->val.u.list[0].u.i == 1 && p->val.u.list[1].u.i == 0;
}

static void set_args(Fuse *f, Node *n, OpId op, uint32_t nargs, uint32_t nkw)
{
	n->op = op;
	n->domain = op_domain(op);
	n->name = op_name_of(op);
	n->nargs = nargs;
	n->nkw = nkw;
	n->args = ARENA_ARRAY(&f->m->arena, Arg, nargs);
	n->kw = nkw ? ARENA_ARRAY(&f->m->arena, Named, nkw) : NULL;
}

static Arg value_arg(ValueId v) { return (Arg){ .kind = A_VALUE, .u.v = v }; }

/* add = Add(MatMul(a, w'), c) or Add(c, MatMul(a, w')). */
static void fuse_gemm(Fuse *f, Node *add)
{
	for (uint32_t side = 0; side < 2; side++) {
		Node *mm = match_operand(f->m, add, side, OP_ONNX_MatMul);
		ValueId c = operand(add, 1 - side);
		if (!mm || !one_use(f->uses, mm->res[0]))
			continue;
		ValueId a = operand(mm, 0), b = operand(mm, 1);
		Node *tr = match_op(f->m, b, OP_ONNX_Transpose);
		int trans = tr && perm_is_swap(tr) && one_use(f->uses, b);
		ValueId w = trans ? operand(tr, 0) : b;
		const Type *ta = static_type(f, a), *tw = static_type(f, w), *tc = static_type(f, c);
		if (!ta || !tw || ta->rank != 2 || tw->rank != 2 || !is_float(ta) || !w || !c)
			continue;
		int64_t n = trans ? tw->dims[0].v : tw->dims[1].v;
		if (!gemm_bias_ok(tc, ta->dims[0].v, n) || tc->dtype != ta->dtype || tw->dtype != ta->dtype)
			continue;
		set_args(f, add, OP_ONNX_Gemm, 3, trans);
		add->args[0] = value_arg(a);
		add->args[1] = value_arg(w);
		add->args[2] = value_arg(c);
		if (trans)
			add->kw[0] = (Named){ S_transB, { .kind = A_INT, .u.i = 1 } };
		f->uses[mm->res[0]]--;
		return;
	}
}

/* The reduced axes, from the input (opset 18) or the attribute, into ax;
 * 0 if they are not a constant list of ints.  *cnt is their count. */
static int reduce_axes(const Fuse *f, const Node *n, int64_t *ax, uint32_t cap, uint32_t *cnt)
{
	const Named *k = node_kw(n, S_axes);
	if (k && k->val.kind == A_LIST) {
		if (k->val.n > cap)
			return 0;
		for (uint32_t i = 0; i < k->val.n; i++) {
			if (k->val.u.list[i].kind != A_INT)
				return 0;
			ax[i] = k->val.u.list[i].u.i;
		}
		*cnt = k->val.n;
		return 1;
	}
	const Tensor *t = const_tensor(f->m, operand(n, 1));
	int64_t len = t && t->type && t->type->rank == 1 ? t->type->dims[0].v : -1;
	if (len < 0 || (uint64_t)len > cap || !t->data || !dtype_is_int((DType)t->type->dtype))
		return 0;
	for (int64_t i = 0; i < len; i++)
		ax[i] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
	*cnt = (uint32_t)len;
	return 1;
}

static void fuse_global_pool(Fuse *f, Node *n)
{
	ValueId x = operand(n, 0);
	const Type *t = static_type(f, x);
	const Named *kd = node_kw(n, S_keepdims);
	int64_t ax[16];
	uint32_t cnt = 0;
	if (!t || t->rank < 3 || !is_float(t) || (kd && ((kd->val.kind != A_INT && kd->val.kind != A_BOOL) || kd->val.u.i != 1)))
		return;
	if (!reduce_axes(f, n, ax, 16, &cnt) || cnt != (uint32_t)t->rank - 2)
		return;
	uint32_t seen = 0;
	for (uint32_t i = 0; i < cnt; i++) {
		int64_t a = ax[i] < 0 ? ax[i] + t->rank : ax[i];
		if (a < 2 || a >= t->rank || (seen & (1u << a)))
			return;
		seen |= 1u << a;
	}
	ValueId axes_in = operand(n, 1);
	if (axes_in)
		f->uses[axes_in]--;
	set_args(f, n, OP_ONNX_GlobalAveragePool, 1, 0);
	n->args[0] = value_arg(x);
}

static Status fuse_graph(const GraphVisit *v, void *ctx)
{
	Fuse *f = ctx;
	for (Node *n = v->g->first; n; n = n->next) {
		if (n->domain != S_onnx || n->nres != 1)
			continue;
		if (n->op == OP_ONNX_Add && n->nargs == 2)
			fuse_gemm(f, n);
		else if (n->op == OP_ONNX_ReduceMean && n->nargs >= 1)
			fuse_global_pool(f, n);
	}
	return OK;
}

Status pass_fuse(Module *m, const PassOptions *opt)
{
	(void)opt;
	Fuse f = { m, module_use_counts(m, WALK_PROGRAM) };
	module_walk(m, WALK_PROGRAM, fuse_graph, &f);
	free(f.uses);
	return OK;
}
