/* fold.c - constant folding with the runtime's kernels.
 *
 * A node folds when it is an ONNX op with a kernel (runtime/), every
 * operand it reads is a constant (a `const` value, an onnx::Constant, or a
 * node folded before it), and it is deterministic and free of effects: no
 * random ops, no side effects, no subgraphs.  The node becomes an
 * onnx::Constant holding its result, in place: the result keeps its value,
 * name, type and provenance, and the provenance gains a
 * `pkg.onnxc.folded_op` entry naming the op and a `pkg.onnxc.folded_from`
 * entry naming the constants (the program's initializers, through earlier
 * folds) it was computed from.  Nodes that fed only the
 * folded ones are left for dce.
 *
 * The size budget: a result larger than -fold-limit=BYTES is left alone;
 * without the option, a result larger than the constants it reads (and
 * 128 KB) is, so folding grows the model by at most 128 KB a node and never
 * writes a large tensor: an Expand, Tile or ConstantOfShape that would
 * stays an op.  The 128 KB lets the tables a model computes from constants
 * at a static size fold, as torch.onnx.export(dynamo=True)'s optimizer
 * folds them: DeBERTa's relative positions ([8, 8] i64 from two [8] ones)
 * and its Tile of the position keys, maxvit_t's relative position bias
 * (a Gather of a [169, 4] table by 2401 indices, 38 KB), DETR's sine
 * position embedding from a resized ConstantOfShape mask, RAFT's
 * correlation sampling grid ([256, 7, 7, 2] f32 from two small ones, 98 KB)
 * and the convolution of its constant initial flow (64 KB).
 *
 * Shape and Size fold from the input's static type alone, Gather(Shape(x),
 * k) from the dims of x that the constant k names (the others may be
 * symbolic), and CastLike from its second operand's dtype alone.
 *
 * Parameters and buffers (weights in the safetensors file) fold too (a
 * Transpose of a weight becomes the transposed weight), read from the
 * mmap'd file one node at a time; their results go to a temporary file
 * and are mapped from it (ir/mapped.c), so they leave the heap; only when
 * no temporary file can be made are they held in memory, with a total
 * budget of 512 MB, past which weight results stay ops.  A Transpose of a
 * large 2-D weight or constant is streamed band by band into that file
 * (stream_transpose), never resident whole.
 *
 * One walk over every graph (module_walk), in order, so a chain of
 * constant nodes folds front to back in one pass.  A kernel that refuses
 * its operands (a dtype it lacks) is not an error: the node stays. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "passes.h"
#include "runtime.h"

enum { FOLD_SLACK = 128 << 10, MAX_IN = 64 };

typedef struct Fold {
	Module *m;
	const PassOptions *opt;
	RtWeights weights;          /* params and buffers, read on demand */
	uint64_t weight_bytes;      /* results folded from them so far */
	uint8_t *is_out;            /* by ValueId: outputs keep their names */
	int opset;
} Fold;

/* A Constant written with value_float, value_ints, ... folds into the
 * `value = tensor(...)` form that const_tensor reads; one with `value`
 * is folded already. */
static int never_folds(const Node *n)
{
	switch (n->op) {
	case OP_ONNX_Constant:
		return n->nkw != 1 || n->kw[0].name == S_value || n->domain != S_onnx || !rt_kernel(n->op);
	case OP_ONNX_RandomNormal:
	case OP_ONNX_RandomNormalLike:
	case OP_ONNX_RandomUniform:
	case OP_ONNX_RandomUniformLike:
	case OP_ONNX_Multinomial:
	case OP_ONNX_Bernoulli:
	case OP_ONNX_Dropout:
		return 1;
	default:
		return n->domain != S_onnx || n->op == OP_GENERIC || n->nres == 0 || n->nargs > MAX_IN ||
		       node_has_flag(n, OPF_SIDE_EFFECT | OPF_RANDOM) || node_has_subgraph(n) || !rt_kernel(n->op);
	}
}

/* An overridable weight (-keep-initializers-as-inputs) is an input. */
static int is_weight(const Fold *f, ValueId v)
{
	const Value *x = val(f->m, v);
	return (x->kind == VK_PARAM || x->kind == VK_BUFFER) && !x->overridable;
}

/* Attributes never read a value (the verifier holds that for ONNX ops);
 * every input is omitted, a constant, or a param or buffer with a static
 * type.  *bytes sums their sizes; *weights says whether one is a weight. */
/* CastLike reads only the dtype of its second operand, so that operand
 * need not be a constant: a known dtype is enough. */
static DType like_dtype(const Fold *f, const Node *n, uint32_t i)
{
	if (n->op != OP_ONNX_CastLike || i != 1 || n->args[1].kind != A_VALUE)
		return DT_UNDEF;
	const Type *t = val(f->m, n->args[1].u.v)->type;
	return t && t->kind == TY_TENSOR ? (DType)t->dtype : DT_UNDEF;
}

static int inputs_constant(const Fold *f, const Node *n, size_t *bytes, int *weights)
{
	*bytes = 0;
	*weights = 0;
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Arg *a = &n->args[i];
		if (a->kind == A_NONE || like_dtype(f, n, i) != DT_UNDEF)
			continue;
		if (a->kind != A_VALUE)
			return 0;
		const Tensor *t = const_tensor(f->m, a->u.v);
		const Type *ty = t ? t->type : is_weight(f, a->u.v) ? val(f->m, a->u.v)->type : NULL;
		int64_t numel = ty && ty->kind == TY_TENSOR ? type_numel(ty) : -1;
		if (numel < 0 || ty->dtype == DT_STR || ty->dtype == DT_UNDEF)
			return 0;
		*weights |= !t;
		*bytes += t ? t->nbytes : tensor_nbytes((DType)ty->dtype, numel);
	}
	return 1;
}

/* Results folded from weights that could not go to a temporary file are
 * held in memory until the model is written, so they have a total budget. */
enum { WEIGHT_FOLD_TOTAL = 512u << 20 };

static int within_budget(const Fold *f, const RTensor *r, size_t in_bytes)
{
	if (f->opt->fold_limit > 0)
		return r->nbytes <= (uint64_t)f->opt->fold_limit;
	return r->nbytes <= (in_bytes > FOLD_SLACK ? in_bytes : FOLD_SLACK);
}

static Tensor *to_ir(Fold *f, const RTensor *r)
{
	Arena *a = &f->m->arena;
	Dim *dims = r->rank ? ARENA_ARRAY(a, Dim, r->rank) : NULL;
	for (int32_t i = 0; i < r->rank; i++)
		dims[i] = (Dim){ r->shape[i], 0 };
	Tensor *t = ARENA_NEW(a, Tensor);
	t->type = type_tensor(a, r->dtype, r->rank, dims);
	t->nbytes = r->nbytes;
	t->data = r->nbytes ? arena_dup(a, r->data, r->nbytes) : NULL;
	return t;
}

/* The node's provenance plus what its result was folded from: the op
 * (`pkg.onnxc.folded_op`) and the constants it read
 * (`pkg.onnxc.folded_from`, prov_folded), which are fixed before the node
 * becomes a constant.  CastLike's second operand gives only its dtype. */
static Prov *folded_prov(Fold *f, const Node *n)
{
	ValueId src[MAX_IN];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->nargs && k < MAX_IN; i++)
		if (n->args[i].kind == A_VALUE && like_dtype(f, n, i) == DT_UNDEF)
			src[k++] = n->args[i].u.v;
	char op[300];
	snprintf(op, sizeof op, "%s::%s", sym_str(n->domain), sym_str(n->name));
	return prov_folded(f->m, n->prov, op, src, k);
}

/* n (or a new Constant after it) defines result i as the tensor r. */
static void define_constant(Fold *f, Node *n, Node *c, uint32_t i, const RTensor *r, Prov *prov)
{
	Tensor *t = to_ir(f, r);
	if (c != n) {
		c->prov = prov;
		c->loc = n->loc;
	}
	c->kw[0] = (Named){ S_value, { .kind = A_TENSOR, .u.t = t } };
	c->res[0] = n->res[i];
	Value *v = val(f->m, n->res[i]);
	v->def = c;
	v->res = 0;
	if (!v->type)
		v->type = t->type;
}

/* n becomes onnx::Constant of its first result; each other result gets a
 * Constant of its own right after it. */
static void replace_by_constants(Fold *f, Node *n, RTensor **out)
{
	Prov *prov = folded_prov(f, n);
	Node *after = n->next;
	for (uint32_t i = 1; i < n->nres; i++)
		if (n->res[i]) {
			Node *c = node_new_op(f->m, OP_ONNX_Constant, 1, 0, 1);
			define_constant(f, n, c, i, out[i], prov);
			node_insert_before(n->graph, after, c);
		}
	ValueId r0 = n->res[0];
	n->op = OP_ONNX_Constant;
	n->domain = S_onnx;
	n->name = op_name_of(OP_ONNX_Constant);
	n->nargs = 0;
	n->args = NULL;
	n->nkw = 1;
	n->kw = ARENA_ARRAY(&f->m->arena, Named, 1);
	n->nres = 1;
	n->res = ARENA_ARRAY(&f->m->arena, ValueId, 1);
	n->res[0] = r0;
	n->prov = prov;
	if (r0)
		define_constant(f, n, n, 0, out[0], prov);
	else
		n->kw[0] = (Named){ S_value, { .kind = A_TENSOR, .u.t = to_ir(f, out[0]) } };
}

/* Results past this many bytes, and every result folded from a weight,
 * become `const` values of the graph (ONNX initializers, which external
 * data can hold, as the weights they come from were) instead of Constant
 * nodes. */
enum { INLINE_MAX = 1024 };

static int any_large(RTensor **out, uint32_t nres)
{
	for (uint32_t i = 0; i < nres; i++)
		if (out[i]->nbytes > INLINE_MAX)
			return 1;
	return 0;
}

/* The first weight n reads, or VNONE. */
static ValueId first_weight(const Fold *f, const Node *n)
{
	for (uint32_t i = 0; i < n->nargs; i++)
		if (n->args[i].kind == A_VALUE && is_weight(f, n->args[i].u.v))
			return n->args[i].u.v;
	return VNONE;
}

/* A weight derived from weight w by op is named after both
 * (`fc.weight_transpose`), not after the node's result (`t_3`): the name
 * becomes the initializer's.  Output names are kept: they are the
 * interface. */
static void name_after_weight(Fold *f, const Node *n, ValueId r, const uint8_t *is_out)
{
	ValueId w = first_weight(f, n);
	if (!w || is_out[r])
		return;
	char buf[400], op[64];
	snprintf(op, sizeof op, "%s", sym_str(n->name));
	for (char *c = op; *c; c++)
		*c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	snprintf(buf, sizeof buf, "%.300s_%s", sym_str(val(f->m, w)->name), op);
	val(f->m, r)->name = value_fresh_name(f->m, sym_cstr(buf));
}

/* Result i of n becomes the `const` value t of n's graph, keeping its
 * ValueId and type. */
static void define_init(Fold *f, Node *n, uint32_t i, Tensor *t)
{
	ValueId r = n->res[i];
	value_to_const(f->m, n->graph, n, i, t);
	val(f->m, r)->prov = folded_prov(f, n);   /* n still reads its operands */
	name_after_weight(f, n, r, f->is_out);
}

/* A result folded from weights of at least SPILL_MIN bytes goes to a
 * temporary file, mapped (ir/mapped.c): it leaves the heap, and the writer
 * streams it out like a weight.  NULL for a smaller one (a file each
 * would cost more than the bytes: thousands of small weights took seconds
 * of file creation) or if no temporary file can be made: it is then held
 * in memory, within WEIGHT_FOLD_TOTAL. */
enum { SPILL_MIN = 1 << 20 };

static Tensor *spilled(Fold *f, const RTensor *r)
{
	const uint8_t *p = r->nbytes >= SPILL_MIN ? mapped_spill(f->m, r->data, r->nbytes) : NULL;
	if (!p)
		return NULL;
	RTensor head = *r;
	head.nbytes = 0;
	Tensor *t = to_ir(f, &head);
	t->nbytes = r->nbytes;
	t->data = p;
	return t;
}

/* Each result of n becomes a `const` value of n's graph; n goes. */
static void replace_by_inits(Fold *f, Node *n, RTensor **out, int weights)
{
	for (uint32_t i = 0; i < n->nres; i++) {
		if (!n->res[i])
			continue;
		Tensor *t = weights ? spilled(f, out[i]) : NULL;
		if (!t) {
			t = to_ir(f, out[i]);
			f->weight_bytes += weights ? out[i]->nbytes : 0;
		}
		define_init(f, n, i, t);
	}
	node_remove(n->graph, n);
}

/* Transpose of a large 2-D weight or constant is streamed into a
 * temporary file a band at a time (runtime/transpose_stream.c) instead of
 * through the kernel, which would hold the weight and its transpose in
 * memory whole.  Returns 1 when n was folded so, or is to stay as it is
 * (its result is over -fold-limit). */
static int stream_transpose(Fold *f, Node *n)
{
	if (n->op != OP_ONNX_Transpose || n->domain != S_onnx || n->nargs != 1 || n->nres != 1 || !n->res[0] ||
	    n->args[0].kind != A_VALUE)
		return 0;
	ValueId x = n->args[0].u.v;
	const Type *t = val(f->m, x)->type;
	const Arg *perm = n->nkw == 1 && n->kw[0].name == S_perm ? &n->kw[0].val : NULL;
	if ((!is_weight(f, x) && !const_tensor(f->m, x)) || !t || t->kind != TY_TENSOR || t->rank != 2 ||
	    type_numel(t) < 0 || t->dtype == DT_STR || dtype_bits((DType)t->dtype) % 8 != 0 || (n->nkw && !perm))
		return 0;
	if (perm && (perm->kind != A_LIST || perm->n != 2 || perm->u.list[0].u.i != 1 || perm->u.list[1].u.i != 0))
		return 0;
	size_t es = (size_t)dtype_bits((DType)t->dtype) / 8, nbytes;
	int64_t rows = t->dims[0].v, cols = t->dims[1].v;
	if ((size_t)(rows * cols) * es < MAPPED_SLICE)
		return 0;           /* small: the kernel does it */
	if (f->opt->fold_limit > 0 && (uint64_t)(rows * cols) * es > (uint64_t)f->opt->fold_limit)
		return 1;           /* over -fold-limit: stays an op, and the kernel need not compute it to see that */
	diag_mute(1);
	const uint8_t *src = rt_value_bytes(&f->weights, x, &nbytes);
	diag_mute(0);
	int fd = src && nbytes == (size_t)(rows * cols) * es ? mapped_tmp() : -1;
	if (fd < 0)
		return 0;
	if (rt_transpose_to_fd(&f->weights, src, rows, cols, es, fd) != OK) {
		close(fd);
		return 0;
	}
	const uint8_t *p = mapped_fd(f->m, fd, nbytes);
	if (!p)
		return 0;
	Arena *a = &f->m->arena;
	Dim *dims = ARENA_ARRAY(a, Dim, 2);
	dims[0] = (Dim){ cols, 0 };
	dims[1] = (Dim){ rows, 0 };
	Tensor *r = ARENA_NEW(a, Tensor);
	r->type = type_tensor(a, (DType)t->dtype, 2, dims);
	r->nbytes = nbytes;
	r->data = p;
	define_init(f, n, 0, r);
	node_remove(n->graph, n);
	return 1;
}

static int fits(const Fold *f, RTensor **out, uint32_t nres, size_t in_bytes)
{
	for (uint32_t i = 0; i < nres; i++)
		if (!out[i] || !within_budget(f, out[i], in_bytes))
			return 0;
	return 1;
}

/* Shape(x, start, end)'s input type and its range of dims [*lo, *hi):
 * start and end are clamped to [0, rank] after adding rank to a negative
 * one (ONNX's rule).  NULL when x's rank is unknown. */
static const Type *shape_range(const Fold *f, const Node *n, int64_t *lo, int64_t *hi)
{
	const Type *t = n->nargs == 1 && n->args[0].kind == A_VALUE ? val(f->m, n->args[0].u.v)->type : NULL;
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return NULL;
	*lo = 0, *hi = t->rank;
	for (uint32_t i = 0; i < n->nkw; i++) {
		const Arg *a = &n->kw[i].val;
		if (a->kind != A_INT)
			return NULL;
		if (n->kw[i].name == S_start)
			*lo = a->u.i;
		else if (n->kw[i].name == S_end)
			*hi = a->u.i;
		else
			return NULL;
	}
	*lo = *lo < 0 ? *lo + t->rank : *lo;
	*hi = *hi < 0 ? *hi + t->rank : *hi;
	*lo = *lo < 0 ? 0 : *lo > t->rank ? t->rank : *lo;
	*hi = *hi < *lo ? *lo : *hi > t->rank ? t->rank : *hi;
	return t;
}

/* Shape and Size read only their input's type: with every dim known, they
 * fold whether or not the input is a constant. */
static RTensor *static_shape(const Fold *f, const Node *n)
{
	int64_t lo, hi;
	const Type *t = shape_range(f, n, &lo, &hi);
	if (!t || type_numel(t) < 0)
		return NULL;
	if (n->op == OP_ONNX_Size) {
		RTensor *r = rt_new(n->loc, DT_I64, 0, NULL);
		rt_set_i(r, 0, type_numel(t));
		return r;
	}
	int64_t len = hi - lo;
	RTensor *r = rt_new(n->loc, DT_I64, 1, &len);
	for (int64_t i = 0; i < len; i++)
		rt_set_i(r, i, t->dims[lo + i].v);
	return r;
}

/* Gather(Shape(x), k) with k constant reads only the dims of x that k
 * names: when those are known it folds, though other dims of x are
 * symbolic (a model exported with a dynamic batch asks for its static
 * head count or width this way). */
static RTensor *known_dims(const Fold *f, const Node *n)
{
	const Named *ax = node_kw(n, S_axis);
	if (n->op != OP_ONNX_Gather || n->nargs != 2 || (ax && (ax->val.kind != A_INT || ax->val.u.i != 0)) ||
	    n->nkw > (ax != NULL) || n->args[1].kind != A_VALUE)
		return NULL;
	const Node *s = match_operand(f->m, n, 0, OP_ONNX_Shape);
	const Tensor *k = const_tensor(f->m, n->args[1].u.v);
	int64_t lo, hi;
	const Type *t = s ? shape_range(f, s, &lo, &hi) : NULL;
	int64_t cnt = k && k->type && k->data ? type_numel(k->type) : -1;
	if (!t || cnt < 0 || (k->type->dtype != DT_I64 && k->type->dtype != DT_I32) || k->type->rank > 8)
		return NULL;
	for (int64_t i = 0; i < cnt; i++) {
		int64_t j = tensor_get_i((DType)k->type->dtype, k->data, (size_t)i);
		j = j < 0 ? j + (hi - lo) : j;
		if (j < 0 || j >= hi - lo || t->dims[lo + j].sym || t->dims[lo + j].v < 0)
			return NULL;
	}
	int64_t shape[8];
	for (int32_t d = 0; d < k->type->rank; d++)
		shape[d] = k->type->dims[d].v;
	RTensor *r = rt_new(n->loc, DT_I64, k->type->rank, shape);
	for (int64_t i = 0; i < cnt; i++) {
		int64_t j = tensor_get_i((DType)k->type->dtype, k->data, (size_t)i);
		rt_set_i(r, i, t->dims[lo + (j < 0 ? j + (hi - lo) : j)].v);
	}
	return r;
}

/* With -quantize at -target=ort a Transpose of a 2-D f32 or f16 weight
 * stays: quantize reads the [N,K] weight itself, whose rows are
 * MatMulNBits' rows, where a folded [K,N] copy (streamed through a
 * temporary file for a large weight) would be transposed back. */
static int kept_for_quantize(const Fold *f, const Node *n)
{
	if (!f->opt->quantize_bits || !f->opt->target_ort || n->op != OP_ONNX_Transpose || n->domain != S_onnx ||
	    n->nargs != 1 || n->args[0].kind != A_VALUE || !is_weight(f, n->args[0].u.v))
		return 0;
	const Type *t = val(f->m, n->args[0].u.v)->type;
	return t && t->kind == TY_TENSOR && t->rank == 2 && (t->dtype == DT_F32 || t->dtype == DT_F16);
}

static void try_fold(Fold *f, Node *n)
{
	if ((n->op == OP_ONNX_Shape || n->op == OP_ONNX_Size) && n->domain == S_onnx && n->nres == 1) {
		RTensor *r = static_shape(f, n);
		if (r)
			replace_by_constants(f, n, &r);
		rt_free(r);
		return;
	}
	RTensor *dims = n->domain == S_onnx && n->nres == 1 && n->res[0] ? known_dims(f, n) : NULL;
	if (dims) {
		replace_by_constants(f, n, &dims);
		rt_free(dims);
		return;
	}
	RTensor *in[MAX_IN] = { 0 };
	size_t in_bytes;
	int weights;
	if (never_folds(n) || kept_for_quantize(f, n) || !inputs_constant(f, n, &in_bytes, &weights) ||
	    stream_transpose(f, n))
		return;
	if (weights && f->weight_bytes + in_bytes > WEIGHT_FOLD_TOTAL)
		return;
	/* Replacing n rewrites its counts: the tensors are freed by these. */
	uint32_t nin = n->nargs, nout = n->nres;
	RTensor **out = xcalloc(nout, sizeof *out);
	diag_mute(1);
	int ok = 1;
	for (uint32_t i = 0; i < nin && ok; i++) {
		DType like = like_dtype(f, n, i);
		int64_t zero = 0;
		if (like != DT_UNDEF)
			in[i] = rt_new(n->loc, like, 1, &zero);     /* the dtype is all it reads */
		ok = n->args[i].kind == A_NONE || in[i] || (in[i] = rt_value_tensor(&f->weights, n->args[i].u.v)) != NULL;
	}
	ok = ok && rt_eval_node(n, f->opset, in, n->nargs, out) == OK;
	ok = diag_mute(0) == 0 && ok;
	if (ok && fits(f, out, n->nres, in_bytes)) {
		if (weights || any_large(out, n->nres))
			replace_by_inits(f, n, out, weights);
		else
			replace_by_constants(f, n, out);
	}
	for (uint32_t i = 0; i < nin; i++)
		rt_free(in[i]);
	for (uint32_t i = 0; i < nout; i++)
		rt_free(out[i]);
	free(out);
}

static Status fold_graph(const GraphVisit *v, void *ctx)
{
	for (Node *n = v->g->first, *next; n; n = next) {
		next = n->next;
		try_fold(ctx, n);
		progress_add(1);
	}
	return OK;
}

Status pass_fold(Module *m, const PassOptions *opt)
{
	Fold f = { m, opt, { m, opt->weights_dir ? opt->weights_dir : ".", NULL }, 0, module_output_marks(m),
		   rt_module_opset(m) };
	/* Big graphs take a while: progress by node (ir.h). */
	progress_begin("fold (nodes)", module_node_count(m), 20000);
	module_walk(m, WALK_PROGRAM, fold_graph, &f);
	progress_end();
	rt_weights_close(&f.weights);
	free(f.is_out);
	return OK;
}
