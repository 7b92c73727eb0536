/* decompose.c - ATen ops become ONNX ops through the decomposition library.
 *
 * One walk over each graph.  A PyTorch call (node_is_torch: aten,
 * _operator for Python int arithmetic on sizes, torchvision, custom ops
 * with literal arguments) is matched against the decompositions
 * of its (domain, name): the module's own first, then the library (user
 * files, then built-ins); the first whose parameters bind the call's
 * arguments and whose guards hold wins.  Its body is copied before the
 * call, the ATen nodes the copy contains are decomposed in turn (to a depth
 * limit), and the call is removed.
 *
 * Invariants that keep the walk linear:
 *  - lookups hash (domain, name); a body is copied through a map the size
 *    of the body, never of the library;
 *  - a returned body node defines the call's result ValueId itself, so the
 *    result's name, type and uses stay put;
 *  - when a body returns one of its inputs the call's result is recorded in
 *    a substitution table, applied to every later node as the walk reaches
 *    it (uses always follow definitions), and to graph outputs at the end.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "passes.h"

enum { MAX_DEPTH = 48 };

typedef struct Decompose {
	Module *m;
	const PassOptions *opt;
	DecompTable *own;           /* the module's own decompositions */
	int64_t opset;
	Rewriter subst;             /* call result -> the value replacing it */
	Arena tmp;                  /* lists guards compute for one lookup */
	const Node **sfrom;         /* the call that made an entry (provenance) */
	uint32_t nsfrom;
	ComplexVals complex;        /* complex values of lowered calls, made real at the end */
	Type **shapes;              /* by ValueId: shapes of untyped body values, for guards */
	uint32_t nshapes;
} Decompose;

/* The arguments a call binds to one decomposition's parameters. */
typedef struct Bound {
	Arg a;
	ValueId mat;                /* a as an ONNX input, once materialized */
	int set;
} Bound;

typedef struct Inst {
	Decompose *x;
	const DecompEntry *e;
	Node *call;
	Bound *b;                   /* by parameter index */
	int32_t *inparam;           /* body input number -> parameter index */
	ValueId *map;               /* local index -> value in x->m (node results) */
	DType dt;                   /* dtype of literals standing for tensors */
	int result;                 /* $result of this copy, or -1 */
	int widen;                  /* the returned node takes all call results */
} Inst;

static const char *opname(const Node *n, char *buf, size_t sz)
{
	snprintf(buf, sz, "%s::%s", sym_str(n->domain), sym_str(n->name));
	return buf;
}

/* ---- substitution of call results ------------------------------------------ */
static ValueId sub(const Decompose *x, ValueId v) { return rw_get(&x->subst, v); }

static void subst_set(Decompose *x, ValueId from, ValueId to, const Node *call)
{
	rw_set(&x->subst, from, to);
	x->sfrom = xgrow_index(x->sfrom, &x->nsfrom, from, sizeof *x->sfrom);
	x->sfrom[from] = call;
}

static void subst_node(Decompose *x, Node *n)
{
	rw_apply(&x->subst, n);
}

/* ---- matching ---------------------------------------------------------------- */
static int is_builtin(Sym s)
{
	return s == S_opset || s == S_nresults || s == S_nresults_kept || s == S_result || s == S_rank ||
	       s == S_swapped || s == S_neg_len || s == S_index_axis ||
	       s == S_contiguous_view || s == S_promoted || s == S_promoted_float ||
	       s == S_rsqrt_last_dim;
}

static int is_num(const Arg *a) { return a->kind == A_INT || a->kind == A_FLOAT || a->kind == A_BOOL; }


/* What a %param accepts: a tensor, none, a scalar, or a list of tensors or
 * sizes; a list of tensors may hold nones (index.Tensor's optional
 * indices), which splicing leaves out. */
static int tensor_arg_ok(const Arg *a)
{
	if (a->kind == A_VALUE || a->kind == A_NONE || is_num(a))
		return 1;
	if (a->kind != A_LIST)
		return 0;
	int nones = 0, ints = 0;
	for (uint32_t i = 0; i < a->n; i++) {
		uint8_t k = a->u.list[i].kind;
		if (k != A_VALUE && k != A_INT && k != A_NONE)
			return 0;
		nones |= k == A_NONE;
		ints |= k == A_INT;
	}
	return !(nones && ints);
}

static int find_param(const Decomp *d, Sym name)
{
	for (uint32_t i = 0; i < d->nparam; i++)
		if (d->params[i].name == name)
			return (int)i;
	return -1;
}

/* Built-in and defined literals are never bound by the call. */
static int unbound(const DParam *p) { return p->defined || is_builtin(p->name); }

static int bind_positional(const Decomp *d, const Node *call, Bound *b)
{
	uint32_t p = 0;
	for (uint32_t i = 0; i < call->nargs; i++, p++) {
		while (p < d->nparam && unbound(&d->params[p]))
			p++;
		if (p == d->nparam)
			return 0;
		b[p].a = call->args[i];
		b[p].set = 1;
	}
	for (uint32_t i = 0; i < call->nkw; i++) {
		int k = find_param(d, call->kw[i].name);
		if (k < 0 || b[k].set || unbound(&d->params[k]))
			return 0;
		b[k].a = call->kw[i].val;
		b[k].set = 1;
	}
	return 1;
}

static Arg int_arg(int64_t v) { return (Arg){ .kind = A_INT, .u.i = v }; }

static int call_rank(const Decompose *x, const Node *call)
{
	for (uint32_t i = 0; i < call->nargs; i++) {
		const Arg *a = &call->args[i];
		const Type *t = a->kind == A_VALUE ? val(x->m, a->u.v)->type : NULL;
		if (a->kind == A_VALUE)
			return t && t->kind == TY_TENSOR ? t->rank : -1;
	}
	return -1;
}

/* The identity permutation of the first tensor's rank with the call's first
 * two integer arguments exchanged (transpose.int); none if unknown. */
static Arg swapped(const Decompose *x, const Node *call)
{
	int64_t r = call_rank(x, call), d[2];
	int k = 0;
	for (uint32_t i = 0; i < call->nargs && k < 2; i++)
		if (call->args[i].kind == A_INT)
			d[k++] = call->args[i].u.i;
	if (r < 0 || k < 2)
		return (Arg){ .kind = A_NONE };
	for (int i = 0; i < 2; i++)
		d[i] += d[i] < 0 ? r : 0;
	if (d[0] < 0 || d[0] >= r || d[1] < 0 || d[1] >= r)
		return (Arg){ .kind = A_NONE };
	Arg l = { .kind = A_LIST, .elem = A_INT, .n = (uint32_t)r };
	l.u.list = ARENA_ARRAY(&x->m->arena, Arg, r ? r : 1);
	for (int64_t i = 0; i < r; i++)
		l.u.list[i] = (Arg){ .kind = A_INT, .u.i = i == d[0] ? d[1] : i == d[1] ? d[0] : i };
	return l;
}

/* Minus the length of the call's first list argument (layer norm's axis). */
static Arg neg_len(const Node *call)
{
	for (uint32_t i = 0; i < call->nargs; i++)
		if (call->args[i].kind == A_LIST)
			return (Arg){ .kind = A_INT, .u.i = -(int64_t)call->args[i].n };
	return (Arg){ .kind = A_NONE };
}

/* index.Tensor: the number of leading nones of the call's first list
 * argument when every entry after them is a tensor (one at least); none
 * otherwise. */
static Arg index_axis(const Node *call)
{
	for (uint32_t i = 0; i < call->nargs; i++) {
		const Arg *l = &call->args[i];
		if (l->kind != A_LIST)
			continue;
		uint32_t k = 0;
		while (k < l->n && l->u.list[k].kind == A_NONE)
			k++;
		if (k == l->n)
			return (Arg){ .kind = A_NONE };
		for (uint32_t j = k; j < l->n; j++)
			if (l->u.list[j].kind != A_VALUE)
				return (Arg){ .kind = A_NONE };
		return int_arg(k);
	}
	return (Arg){ .kind = A_NONE };
}

/* as_strided: true when the call's first two list arguments (sizes,
 * strides) are the contiguous strides of the sizes (dims of size 1, whose
 * stride never matters, left out) and the first tensor's static shape has
 * as many elements: the call only reinterprets a contiguous tensor. */
static Arg contiguous_view(const Decompose *x, const Node *call)
{
	const Arg *l[2] = { NULL, NULL };
	const Type *t = NULL;
	int k = 0;
	for (uint32_t i = 0; i < call->nargs; i++) {
		const Arg *a = &call->args[i];
		if (a->kind == A_VALUE && !t)
			t = val(x->m, a->u.v)->type;
		else if (a->kind == A_LIST && k < 2)
			l[k++] = a;
	}
	Arg no = { .kind = A_BOOL, .u.i = 0 }, yes = { .kind = A_BOOL, .u.i = 1 };
	if (k < 2 || !t || t->kind != TY_TENSOR || t->rank < 0 || l[0]->n != l[1]->n)
		return no;
	int64_t numel = type_numel(t), want = 1;
	if (numel < 0)
		return no;
	for (uint32_t i = l[0]->n; i-- > 0;) {
		const Arg *sz = &l[0]->u.list[i], *st = &l[1]->u.list[i];
		if (sz->kind != A_INT || st->kind != A_INT || sz->u.i < 0)
			return no;
		if (sz->u.i != 1 && st->u.i != want)
			return no;
		if (mul_i64(want, sz->u.i, &want) != OK)
			return no;
	}
	return want == numel ? yes : no;
}

/* 1/sqrt of the static last dim of the call's first tensor argument
 * (attention's default scale, so that it is a constant); none when the dim
 * is symbolic or unknown. */
static Arg rsqrt_last_dim(const Decompose *x, const Node *call)
{
	for (uint32_t i = 0; i < call->nargs; i++) {
		const Arg *a = &call->args[i];
		if (a->kind != A_VALUE)
			continue;
		const Type *t = val(x->m, a->u.v)->type;
		if (!t || t->kind != TY_TENSOR || t->rank < 1)
			break;
		const Dim *d = &t->dims[t->rank - 1];
		if (d->sym || d->v <= 0)
			break;
		return (Arg){ .kind = A_FLOAT, .u.f = 1.0 / sqrt((double)d->v) };
	}
	return (Arg){ .kind = A_NONE };
}

/* The built-in literals, derived from the call and the target. */
static Arg builtin(const Decompose *x, const Node *call, Sym s)
{
	int64_t r;
	if (s == S_opset)
		return int_arg(x->opset);
	if (s == S_nresults)
		return int_arg(call->nres);
	if (s == S_nresults_kept) {
		/* the results after the last value are `_`, dropped */
		uint32_t k = call->nres;
		while (k && !call->res[k - 1])
			k--;
		return int_arg(k);
	}
	if (s == S_rank)
		return (r = call_rank(x, call)) >= 0 ? int_arg(r) : (Arg){ .kind = A_NONE };
	if (s == S_swapped)
		return swapped(x, call);
	if (s == S_neg_len)
		return neg_len(call);
	if (s == S_index_axis)
		return index_axis(call);
	if (s == S_contiguous_view)
		return contiguous_view(x, call);
	if (s == S_rsqrt_last_dim)
		return rsqrt_last_dim(x, call);
	return int_arg(0);          /* $result, set per copy */
}

static Arg dtype_arg(DType t)
{
	return t == DT_UNDEF ? (Arg){ .kind = A_NONE } : (Arg){ .kind = A_DTYPE, .u.i = t };
}

/* $promoted and $promoted_float: PyTorch's common dtype of the arguments
 * bound to %params (the operands), so they follow the other bindings.
 * Integers and bools divide (and take float functions) in f32, the
 * default dtype. */
static void bind_promoted(const Decompose *x, const Decomp *d, Bound *b)
{
	if (find_param(d, S_promoted) < 0 && find_param(d, S_promoted_float) < 0)
		return;
	const Arg **ops = xcalloc(d->nparam + 1, sizeof *ops);
	uint32_t n = 0;
	for (uint32_t i = 0; i < d->nparam; i++)
		if (d->params[i].kind == DP_TENSOR)
			ops[n++] = &b[i].a;
	DType t = result_type(x->m, ops, n);
	free(ops);
	DType f = t == DT_UNDEF || dtype_is_float(t) || t == DT_C64 || t == DT_C128 ? t : DT_F32;
	for (uint32_t i = 0; i < d->nparam; i++)
		if (d->params[i].name == S_promoted)
			b[i].a = dtype_arg(t);
		else if (d->params[i].name == S_promoted_float)
			b[i].a = dtype_arg(f);
}

/* The where clause sees the bound arguments, and writes definitions. */
static int guards_hold(Decompose *x, const Decomp *d, Bound *b)
{
	Arg small[16];
	if (!d->nguard)
		return 1;
	Arg *vals = d->nparam <= 16 ? small : xcalloc(d->nparam, sizeof *vals);
	for (uint32_t i = 0; i < d->nparam; i++)
		vals[i] = b[i].a;
	int ok = decomp_where(x->m, d, vals, &x->tmp, x->shapes, x->nshapes);
	for (uint32_t i = 0; ok && i < d->nparam; i++)
		b[i].a = vals[i];
	if (vals != small)
		free(vals);
	return ok;
}

static int bind(Decompose *x, const Decomp *d, const Node *call, Bound *b)
{
	memset(b, 0, d->nparam * sizeof *b);
	if (!bind_positional(d, call, b))
		return 0;
	for (uint32_t i = 0; i < d->nparam; i++) {
		const DParam *p = &d->params[i];
		if (p->defined)
			continue;
		if (is_builtin(p->name))
			b[i].a = builtin(x, call, p->name);
		else if (!b[i].set && p->has_default)
			b[i].a = p->deflt;
		else if (!b[i].set)
			return 0;
		if (p->kind == DP_TENSOR && !tensor_arg_ok(&b[i].a))
			return 0;
	}
	bind_promoted(x, d, b);
	return guards_hold(x, d, b);
}

/* ---- building nodes ----------------------------------------------------------- */
static Sym name_for(Inst *in, Sym what)
{
	char buf[600];
	Node *c = in->call;
	Sym base = c->nres && c->res[0] ? val(in->x->m, c->res[0])->name : c->name;
	snprintf(buf, sizeof buf, "%.280s_%.280s", sym_str(base), sym_str(what));
	return value_fresh_name(in->x->m, sym_cstr(buf));
}

/* A node with the call's provenance, inserted before the call. */
static Node *new_node(Inst *in, OpId op, uint32_t nres, uint32_t nargs, uint32_t nkw)
{
	Node *n = node_new_op(in->x->m, op, nres, nargs, nkw);
	n->prov = in->call->prov;
	n->loc = in->call->loc;
	node_insert_before(in->call->graph, in->call, n);
	return n;
}

static ValueId new_result(Inst *in, Node *n, uint32_t i, Sym what, Type *t)
{
	ValueId v = value_new(in->x->m, name_for(in, what), t, VK_NODE);
	val(in->x->m, v)->def = n;
	val(in->x->m, v)->res = i;
	n->res[i] = v;
	return v;
}

static int fits_dtype(DType dt, const Arg *a)
{
	uint8_t tmp[16];
	return tensor_put(dt, tmp, 0, a->kind == A_FLOAT ? a->u.f : (double)a->u.i,
			  a->kind == A_FLOAT ? 0 : a->u.i, a->kind != A_FLOAT);
}

/* onnx::Constant holding the numbers of elems (rank 0 when scalar). */
static ValueId make_const(Inst *in, DType dt, const Arg *elems, uint32_t n, int scalar, Sym what)
{
	Module *m = in->x->m;
	Dim d = { (int64_t)n, 0 };
	Tensor *t = ARENA_NEW(&m->arena, Tensor);
	t->type = type_tensor(&m->arena, dt, scalar ? 0 : 1, &d);
	t->nbytes = tensor_nbytes(dt, n);
	uint8_t *data = arena_alloc(&m->arena, t->nbytes + 1);
	for (uint32_t i = 0; i < n; i++) {
		const Arg *a = &elems[i];
		tensor_put(dt, data, i, a->kind == A_FLOAT ? a->u.f : (double)a->u.i,
			   a->kind == A_FLOAT ? 0 : a->u.i, a->kind != A_FLOAT);
	}
	t->data = data;
	Node *c = new_node(in, OP_ONNX_Constant, 1, 0, 1);
	c->kw[0] = (Named){ S_value, { .kind = A_TENSOR, .u.t = t } };
	return new_result(in, c, 0, what, t->type);
}

/* The dtype of a literal that stands for a tensor (a %param bound to 2.0):
 * PyTorch promotes it to the tensor operands' dtype, so take the call's
 * result dtype, else its first tensor operand's; a float never becomes an
 * int.  Natural dtypes (i64, f32, bool) when nothing is known. */
static DType literal_dtype(const Inst *in, const Arg *a, int promote)
{
	DType dt = promote ? in->dt : DT_UNDEF;
	if (a->kind == A_FLOAT && (dt == DT_UNDEF || !dtype_is_float(dt)))
		return DT_F32;
	if (dt != DT_UNDEF && fits_dtype(dt, a))
		return dt;
	return a->kind == A_BOOL ? DT_BOOL : a->kind == A_FLOAT ? DT_F32 : DT_I64;
}

static ValueId reshape_to_1(Inst *in, ValueId v, ValueId *one)
{
	if (!*one) {
		Arg e = int_arg(1);
		*one = make_const(in, DT_I64, &e, 1, 0, S_one);
	}
	Node *r = new_node(in, OP_ONNX_Reshape, 1, 2, 0);
	r->args[0] = (Arg){ .kind = A_VALUE, .u.v = v };
	r->args[1] = (Arg){ .kind = A_VALUE, .u.v = *one };
	return new_result(in, r, 0, S_dim, NULL);
}

/* A list of sizes as a 1-D tensor: one Constant when every size is known,
 * else a Concat of constant runs and the symbolic sizes (kept symbolic). */
static ValueId make_sizes(Inst *in, const Arg *l, Sym what)
{
	int lits = 1, floats = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		lits &= l->u.list[i].kind != A_VALUE;
		floats |= l->u.list[i].kind == A_FLOAT;
	}
	if (lits)
		return make_const(in, floats ? DT_F32 : DT_I64, l->u.list, l->n, 0, what);
	ValueId *parts = xcalloc(l->n, sizeof *parts), one = 0;
	uint32_t np = 0;
	for (uint32_t i = 0, j; i < l->n; i = j) {
		for (j = i; j < l->n && l->u.list[j].kind != A_VALUE; j++)
			;
		if (j > i)
			parts[np++] = make_const(in, DT_I64, &l->u.list[i], j - i, 0, what);
		else
			parts[np++] = reshape_to_1(in, l->u.list[j++].u.v, &one);
	}
	Node *c = new_node(in, OP_ONNX_Concat, 1, np, 1);
	for (uint32_t i = 0; i < np; i++)
		c->args[i] = (Arg){ .kind = A_VALUE, .u.v = parts[i] };
	c->kw[0] = (Named){ S_axis, int_arg(0) };
	free(parts);
	return new_result(in, c, 0, what, NULL);
}

/* A bound argument as an ONNX input.  promote: it stands for a tensor
 * (%param), so a scalar takes the operands' dtype. */
static Arg as_input(Inst *in, Bound *b, const Arg *a, int promote, Sym what)
{
	if (a->kind == A_VALUE || a->kind == A_NONE)
		return *a;
	ValueId v = b ? b->mat : 0;
	if (!v && is_num(a))
		v = make_const(in, literal_dtype(in, a, promote), a, 1, 1, what);
	else if (!v && a->kind == A_LIST)
		v = make_sizes(in, a, what);
	if (!v) {
		char buf[256];
		diag_error(in->call->loc, "decomposition of %s: argument '%s' cannot be an ONNX input",
			   opname(in->call, buf, sizeof buf), sym_str(what));
		return (Arg){ .kind = A_NONE };
	}
	if (b)
		b->mat = v;
	return (Arg){ .kind = A_VALUE, .u.v = v };
}

/* ---- copying a body --------------------------------------------------------------- */
typedef enum { USE_ATEN, USE_INPUT, USE_ATTR } Use;

static Bound *param_of_value(Inst *in, ValueId v, int *p)
{
	uint32_t k = in->e->local[v];
	const Graph *g = in->e->d->body;
	if (k < g->nin && g->in[k] == v) {
		*p = in->inparam[k];
		return &in->b[*p];
	}
	return NULL;
}

static Bound *param_of_sym(Inst *in, Sym s, int *p)
{
	*p = find_param(in->e->d, s);
	if (*p < 0)
		ONNXC_BUG("unknown decomposition parameter $%s", sym_str(s));
	return &in->b[*p];
}

static Arg copy_arg(Inst *in, const Arg *a, Use use, int *err);

/* Elements of a list; a $param bound to a list is spliced in, so
 * `[$padding, $padding]` doubles a list. */
static Arg copy_list(Inst *in, const Arg *a, Use use, int *err)
{
	uint32_t n = 0;
	int p;
	for (uint32_t i = 0; i < a->n; i++) {
		const Arg *e = &a->u.list[i];
		const Arg *b = e->kind == A_PARAM ? &param_of_sym(in, e->u.sym, &p)->a : NULL;
		n += b && b->kind == A_LIST ? b->n : 1;
	}
	Arg r = *a;
	r.n = n;
	r.u.list = ARENA_ARRAY(&in->x->m->arena, Arg, n ? n : 1);
	n = 0;
	for (uint32_t i = 0; i < a->n; i++) {
		Arg c = copy_arg(in, &a->u.list[i], use, err);
		if (a->u.list[i].kind == A_PARAM && c.kind == A_LIST)
			for (uint32_t j = 0; j < c.n; j++)
				r.u.list[n++] = c.u.list[j];
		else
			r.u.list[n++] = c;
	}
	return r;
}

static Arg copy_arg(Inst *in, const Arg *a, Use use, int *err)
{
	int p;
	Bound *b = NULL;
	Arg r = *a;
	const DParam *dp = NULL;
	if (a->kind == A_VALUE && (b = param_of_value(in, a->u.v, &p)))
		r = b->a;
	else if (a->kind == A_VALUE)
		return (Arg){ .kind = A_VALUE, .u.v = in->map[in->e->local[a->u.v]] };
	else if (a->kind == A_PARAM && (b = param_of_sym(in, a->u.sym, &p)))
		r = b->a;
	else if (a->kind == A_LIST && use == USE_INPUT)
		r = copy_list(in, a, USE_ATEN, err);
	else if (a->kind == A_LIST)
		return copy_list(in, a, use, err);
	if (!b && use == USE_INPUT && (is_num(&r) || r.kind == A_LIST))
		return as_input(in, NULL, &r, 0, S_c);
	if (!b)
		return arg_copy(&in->x->m->arena, a);
	dp = &in->e->d->params[p];
	if (use == USE_INPUT)
		return as_input(in, b, &r, dp->kind == DP_TENSOR, dp->name);
	if (use == USE_ATTR && arg_contains(&r, A_VALUE)) {
		char buf[256];
		diag_error(in->call->loc, "decomposition of %s: '%s' must be a literal here, but the call passes a value",
			   opname(in->call, buf, sizeof buf), sym_str(dp->name));
		*err = 1;
	}
	return arg_copy(&in->x->m->arena, &r);
}

/* A %param bound to a list of tensors fills the variadic tail of an ONNX op
 * (Concat, Sum, SequenceConstruct...); anywhere else a list is sizes. */
static const Arg *spliced_list(Inst *in, const Node *bn, uint32_t i)
{
	const Arg *a = &bn->args[i];
	int p;
	if (bn->domain != S_onnx || op_info[bn->op].max_in >= 0 || i + 1 != bn->nargs || a->kind != A_VALUE)
		return NULL;
	Bound *b = param_of_value(in, a->u.v, &p);
	if (!b || b->a.kind != A_LIST)
		return NULL;
	for (uint32_t k = 0; k < b->a.n; k++)
		if (b->a.u.list[k].kind != A_VALUE && b->a.u.list[k].kind != A_NONE)
			return NULL;
	return &b->a;
}

/* The tensors of a spliced list (its nones left out). */
static uint32_t spliced_count(const Arg *l)
{
	uint32_t n = 0;
	for (uint32_t j = 0; j < l->n; j++)
		n += l->u.list[j].kind == A_VALUE;
	return n;
}

static uint32_t count_args(Inst *in, const Node *bn)
{
	const Arg *l = bn->nargs ? spliced_list(in, bn, bn->nargs - 1) : NULL;
	return l ? bn->nargs - 1 + spliced_count(l) : bn->nargs;
}

static void copy_args(Inst *in, const Node *bn, Node *n, int *err)
{
	Use use = bn->domain == S_onnx ? USE_INPUT : USE_ATEN;
	for (uint32_t i = 0, k = 0; i < bn->nargs; i++) {
		const Arg *l = spliced_list(in, bn, i);
		for (uint32_t j = 0; l && j < l->n; j++)
			if (l->u.list[j].kind == A_VALUE)
				n->args[k++] = l->u.list[j];
		if (!l)
			n->args[k++] = copy_arg(in, &bn->args[i], use, err);
	}
}

/* Attributes; one whose $param is bound to none is left out. */
static void copy_kw(Inst *in, const Node *bn, Node *n, int *err)
{
	Use use = bn->domain == S_onnx ? USE_ATTR : USE_ATEN;
	uint32_t k = 0;
	for (uint32_t i = 0; i < bn->nkw; i++) {
		Arg a = copy_arg(in, &bn->kw[i].val, use, err);
		if (a.kind == A_NONE && bn->kw[i].val.kind == A_PARAM && use == USE_ATTR)
			continue;
		/* PyTorch takes an int for a float (spatial_scale = 1): ONNX does not. */
		if (a.kind == A_INT && use == USE_ATTR && op_attr_kind(bn->op, bn->kw[i].name) == AK_FLOAT)
			a = (Arg){ .kind = A_FLOAT, .u.f = (double)a.u.i };
		n->kw[k++] = (Named){ bn->kw[i].name, a };
	}
	n->nkw = k;
}

/* A type written in the body is kept (in the model's arena): it is how a
 * body fixes the dtype of a nested call's literals, e.g.
 * `aten::_onnxc_const($dim) : i64`. */
static Type *body_type(Inst *in, ValueId bv)
{
	const Type *t = in->e->m->vals.v[bv].type;
	if (!t || t->kind != TY_TENSOR)
		return NULL;
	return type_tensor(&in->x->m->arena, (DType)t->dtype, t->rank, t->dims);
}

static void copy_results(Inst *in, const Node *bn, Node *n)
{
	Module *m = in->x->m;
	for (uint32_t i = 0; i < n->nres; i++) {
		ValueId bv = i < bn->nres ? bn->res[i] : VNONE;
		ValueId pre = bv ? in->map[in->e->local[bv]] : VNONE;
		if (in->widen)
			pre = in->call->res[i];
		if (pre) {
			n->res[i] = pre;
			val(m, pre)->def = n;
			val(m, pre)->res = i;
		} else if (bv) {
			in->map[in->e->local[bv]] = new_result(in, n, i, in->e->m->vals.v[bv].name, body_type(in, bv));
		}
	}
}

/* A body's Cast to the dtype its input has already, or with its `to` left
 * out (a $param bound to none: $promoted when a dtype is unknown), is not
 * copied, so a body may cast its operands to $promoted unconditionally. */
static int cast_is_noop(Inst *in, const Node *bn, const Node *n)
{
	if (bn->op != OP_ONNX_Cast || bn->domain != S_onnx || n->nargs != 1 || n->args[0].kind != A_VALUE)
		return 0;
	for (uint32_t i = 0; i < n->nkw; i++)
		if (n->kw[i].name == S_to) {
			const Type *t = val(in->x->m, n->args[0].u.v)->type;
			return n->kw[i].val.kind == A_DTYPE && t && t->kind == TY_TENSOR &&
			       t->dtype == n->kw[i].val.u.i;
		}
	for (uint32_t i = 0; i < bn->nkw; i++)
		if (bn->kw[i].name == S_to && bn->kw[i].val.kind == A_PARAM)
			return 1;
	return 0;
}

/* The Cast's result is its input; when it is the call's result, through
 * the substitution table. */
static void skip_cast(Inst *in, const Node *bn, ValueId input)
{
	uint32_t k = in->e->local[bn->res[0]];
	if (in->map[k])
		subst_set(in->x, in->map[k], input, in->call);
	else
		in->map[k] = input;
}

static Status copy_node(Inst *in, const Node *bn, int widen)
{
	int err = 0;
	uint32_t nres = widen ? in->call->nres : bn->nres;
	/* Constants the arguments need go before the node. */
	Node *n = node_new(in->x->m, bn->domain, bn->name, nres, count_args(in, bn), bn->nkw);
	n->prov = in->call->prov;
	n->loc = in->call->loc;
	n->opset = bn->opset;
	copy_args(in, bn, n, &err);
	copy_kw(in, bn, n, &err);
	if (!err && !widen && cast_is_noop(in, bn, n)) {
		skip_cast(in, bn, n->args[0].u.v);
		return 0;
	}
	node_insert_before(in->call->graph, in->call, n);
	in->widen = widen;
	copy_results(in, bn, n);
	in->widen = 0;
	return err ? FAILED : OK;
}

/* ---- one expansion ---------------------------------------------------------------- */
static const Node *def_in_body(const Inst *in, ValueId v)
{
	const Value *bv = &in->e->m->vals.v[v];
	return bv->kind == VK_NODE ? bv->def : NULL;
}

/* A body returning the one result of one node, for a call with several
 * results (split, unbind...): that node takes all of them. */
static const Node *widened(const Inst *in)
{
	const Graph *g = in->e->d->body;
	if (in->result >= 0 || g->nout != 1 || in->call->nres < 2)
		return NULL;
	const Node *d = def_in_body(in, g->out[0]);
	return d && d->nres == 1 ? d : NULL;
}

/* Returned body nodes define the call's results directly (first mention
 * only).  Returns the node to widen to all call results, if any. */
static const Node *assign_results(Inst *in)
{
	const Graph *g = in->e->d->body;
	const Node *call = in->call;
	if (widened(in))
		return widened(in);
	for (uint32_t i = 0; i < g->nout; i++) {
		ValueId target = call->res[in->result < 0 ? i : (uint32_t)in->result];
		ValueId bv = g->out[i];
		if (target && def_in_body(in, bv) && !in->map[in->e->local[bv]])
			in->map[in->e->local[bv]] = target;
	}
	return NULL;
}

/* Results the body returns without defining them (an input, or one value
 * twice) replace the call's result through the substitution table. */
static Status finish_results(Inst *in)
{
	const Graph *g = in->e->d->body;
	for (uint32_t i = 0; i < g->nout; i++) {
		ValueId target = in->call->res[in->result < 0 ? i : (uint32_t)in->result];
		ValueId bv = g->out[i];
		if (!target || (def_in_body(in, bv) && in->map[in->e->local[bv]] == target))
			continue;
		int err = 0;
		Arg a = copy_arg(in, &(Arg){ .kind = A_VALUE, .u.v = bv }, USE_INPUT, &err);
		if (a.kind != A_VALUE) {
			char buf[256];
			diag_error(in->call->loc, "decomposition of %s returns none for a result",
				   opname(in->call, buf, sizeof buf));
			return FAILED;
		}
		subst_set(in->x, target, a.u.v, in->call);
	}
	return OK;
}

static Status instantiate(Inst *in)
{
	const Decomp *d = in->e->d;
	memset(in->map, 0, in->e->nlocal * sizeof *in->map);
	for (uint32_t i = 0; i < d->nparam; i++)
		in->b[i].mat = 0;
	int p = find_param(d, S_result);
	if (p >= 0)
		in->b[p].a = int_arg(in->result);
	const Node *wide = assign_results(in);
	for (const Node *bn = d->body->first; bn; bn = bn->next)
		if (copy_node(in, bn, bn == wide) != OK)
			return FAILED;
	return wide ? OK : finish_results(in);
}

static Status check_arity(const Inst *in, int each)
{
	const Graph *g = in->e->d->body;
	uint32_t want = each ? 1 : in->call->nres;
	if (g->nout == want || (!each && widened(in)))
		return OK;
	char buf[256];
	diag_error(in->call->loc, "decomposition of %s returns %u value%s, but the call has %u result%s",
		   opname(in->call, buf, sizeof buf), g->nout, g->nout == 1 ? "" : "s", want, want == 1 ? "" : "s");
	diag_note(in->e->d->loc, "the decomposition is here");
	return FAILED;
}

/* Literals in the body of a complex call act on its real and imaginary
 * parts. */
static DType part_dtype(DType t) { return t == DT_C64 ? DT_F32 : t == DT_C128 ? DT_F64 : t; }

/* The dtype literal tensors of this call take (see literal_dtype). */
static DType call_dtype(const Decompose *x, const Node *call, DType outer)
{
	const Type *t = call->nres && call->res[0] ? val(x->m, call->res[0])->type : NULL;
	if (t && t->kind == TY_TENSOR && t->dtype != DT_BOOL && t->dtype != DT_UNDEF)
		return part_dtype((DType)t->dtype);
	for (uint32_t i = 0; i < call->nargs; i++) {
		const Arg *a = &call->args[i];
		t = a->kind == A_VALUE ? val(x->m, a->u.v)->type : NULL;
		if (t && t->kind == TY_TENSOR && t->dtype != DT_BOOL && t->dtype != DT_UNDEF)
			return part_dtype((DType)t->dtype);
	}
	return outer;
}

static const DecompEntry *lookup(Decompose *x, const Node *call, Bound **b)
{
	uint32_t n[2] = { 0, 0 };
	const DecompEntry *v[2];
	arena_reset(&x->tmp);       /* the previous lookup's bindings are spent */
	int cplx = node_touches_complex(x->m, call);
	v[0] = x->own ? decomp_table_find(x->own, call->domain, call->name, &n[0]) : NULL;
	v[1] = x->opt->lib ? decomp_lib_find(x->opt->lib, call->domain, call->name, &n[1]) : NULL;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < n[k]; i++) {
			if (cplx && !decomp_takes_complex(v[k][i].d))
				continue;   /* written for real tensors */
			*b = xcalloc(v[k][i].d->nparam, sizeof **b);
			if (bind(x, v[k][i].d, call, *b))
				return &v[k][i];
			free(*b);
			*b = NULL;
		}
	return NULL;
}

static Status expand(Decompose *x, Node *call, int depth, DType outer);

/* Some decomposition, the module's or the library's, names n's op. */
static int has_decomposition(const Decompose *x, const Node *n)
{
	uint32_t k = 0;
	if (x->own)
		decomp_table_find(x->own, n->domain, n->name, &k);
	if (!k && x->opt->lib)
		decomp_lib_find(x->opt->lib, n->domain, n->name, &k);
	return k > 0;
}

/* A call in another domain than onnx whose arguments are all values
 * (transformers::grouped_mm_fallback, a torch.library custom op) reads
 * like an ONNX custom-domain node, which it stays unless a decomposition
 * names its (domain, name): then it is a PyTorch call to lower too. */
static int is_call(const Decompose *x, const Node *n)
{
	if (node_is_torch(n))
		return 1;
	return n->domain != S_onnx && has_decomposition(x, n);
}

typedef VEC(ValueId) Shaped;

/* The untyped results of the ONNX nodes from `from` up to `end` get the
 * shapes inference finds, in x->shapes (noted in *sh), not as their types:
 * through them a guard sees rank and dims, but promotion, casts and
 * complex handling still see no type.  Inference runs with the shapes
 * found so far put in place, so it follows the chain. */
static void shape_nodes(Decompose *x, Node *from, const Node *end, Shaped *sh)
{
	Module *m = x->m;
	uint32_t first = sh->n;
	for (Node *k = from; k && k != end; k = k->next)
		for (uint32_t i = 0; i < k->nres; i++)
			if (k->res[i] && !val(m, k->res[i])->type)
				XVEC_PUSH(*sh, k->res[i]);
	for (uint32_t i = 0; i < first; i++)
		if (!val(m, sh->v[i])->type)
			val(m, sh->v[i])->type = x->shapes[sh->v[i]];
	infer_nodes(m, from, end);
	if (m->vals.n > x->nshapes) {
		uint32_t cap = m->vals.n + m->vals.n / 2 + 16;
		x->shapes = xrealloc(x->shapes, cap * sizeof *x->shapes);
		memset(x->shapes + x->nshapes, 0, (cap - x->nshapes) * sizeof *x->shapes);
		x->nshapes = cap;
	}
	for (uint32_t i = first; i < sh->n; i++)
		x->shapes[sh->v[i]] = val(m, sh->v[i])->type;
	for (uint32_t i = 0; i < sh->n; i++)
		if (val(m, sh->v[i])->type == x->shapes[sh->v[i]])
			val(m, sh->v[i])->type = NULL;
}

/* The copies' own ATen nodes are decomposed in turn, in order.  Before
 * each, the ONNX nodes before it (copies, and what earlier calls became)
 * get their shapes, so its guards see the rank and dims of values the
 * body made (not their dtype: the library's bodies rely on a dtype they
 * did not write being unknown there, e.g. an integer remainder casts and
 * calls remainder again for its general form).  The shapes are dropped
 * at the end; inference after the pass types those values in full. */
static Status expand_nested(Decompose *x, Node **v, uint32_t n, int depth, DType dt)
{
	Node *from = n ? v[0] : NULL;
	Shaped sh = { 0 };
	Status st = OK;
	for (uint32_t i = 0; i < n && st == OK; i++) {
		subst_node(x, v[i]);
		if (!is_call(x, v[i]))
			continue;
		Node *before = v[i]->prev;
		Graph *g = v[i]->graph;
		shape_nodes(x, from, v[i], &sh);
		st = expand(x, v[i], depth + 1, dt);
		from = before ? before->next : g->first;
	}
	for (uint32_t i = 0; i < sh.n; i++)
		x->shapes[sh.v[i]] = NULL;
	free(sh.v);
	return st;
}

static Status run_inst(Inst *in)
{
	const Decomp *d = in->e->d;
	int each = find_param(d, S_result) >= 0;
	if (check_arity(in, each) != OK)
		return FAILED;
	in->inparam = xcalloc(d->body->nin, sizeof *in->inparam);
	for (uint32_t i = 0, k = 0; i < d->nparam; i++)
		if (d->params[i].kind == DP_TENSOR)
			in->inparam[k++] = (int32_t)i;
	in->map = xcalloc(in->e->nlocal, sizeof *in->map);
	Status st = OK;
	if (!each) {
		in->result = -1;
		st = instantiate(in);
	}
	for (uint32_t r = 0; each && r < in->call->nres && st == OK; r++) {
		in->result = (int)r;
		st = instantiate(in);
	}
	free(in->inparam);
	free(in->map);
	return st;
}

/* Replaces call by a copy of the first decomposition that matches it, if
 * any (a call nothing matches stays, for the report). */
/* PyTorch's cat skips 1-D tensors of size 0, its legacy empty tensors,
 * whatever the rank of the others (torchaudio's Emformer concatenates
 * one with [T, B, D] blocks); ONNX's Concat takes no such operand.  They
 * are left out when the result's rank is known and is not 1. */
static void drop_legacy_empty(const Decompose *x, Node *call)
{
	if (call->op != OP_ATEN_cat_default || !call->nargs || call->args[0].kind != A_LIST ||
	    call->nres != 1 || !call->res[0])
		return;
	const Type *rt = val(x->m, call->res[0])->type;
	if (!rt || rt->kind != TY_TENSOR || rt->rank < 0 || rt->rank == 1)
		return;
	Arg *l = &call->args[0];
	uint32_t k = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		const Arg *a = &l->u.list[i];
		const Type *t = a->kind == A_VALUE ? val(x->m, a->u.v)->type : NULL;
		if (!(t && t->kind == TY_TENSOR && t->rank == 1 && !t->dims[0].sym && t->dims[0].v == 0))
			l->u.list[k++] = *a;
	}
	if (k)
		l->n = k;
}

static Status expand(Decompose *x, Node *call, int depth, DType outer)
{
	Bound *b;
	drop_legacy_empty(x, call);
	const DecompEntry *e = lookup(x, call, &b);
	char buf[256];
	if (!e)
		return OK;
	if (depth >= MAX_DEPTH) {
		diag_error(call->loc, "decomposition of %s recurses", opname(call, buf, sizeof buf));
		free(b);
		return FAILED;
	}
	Inst in = { x, e, call, b, NULL, NULL, call_dtype(x, call, outer), -1, 0 };
	complex_collect(x->m, &x->complex, call);
	Graph *g = call->graph;
	Node *before = call->prev;
	Status st = run_inst(&in);
	free(b);
	if (st != OK)
		return FAILED;
	uint32_t n = 0;
	for (Node *k = before ? before->next : g->first; k != call; k = k->next)
		n++;
	Node **v = xcalloc(n, sizeof *v);
	n = 0;
	for (Node *k = before ? before->next : g->first; k != call; k = k->next)
		v[n++] = k;
	node_remove(g, call);
	st = expand_nested(x, v, n, depth, in.dt);
	free(v);
	return st;
}

/* ---- the walk ---------------------------------------------------------------------- */
/* An ONNX op marked as needing an opset newer than the module's (an
 * opset-23 Attention or RotaryEmbedding in a program -opset converted to
 * 18: opset_convert leaves it, `onnx::Attention.opset23`, when a
 * decomposition of it exists) is decomposed like a PyTorch call. */
static int newer_onnx(const Decompose *x, const Node *n)
{
	return n->domain == S_onnx && n->op != OP_GENERIC && n->opset > x->opset;
}


/* Every graph is lowered before its subgraphs (module_walk), so a subgraph
 * reads the substitutions of the values it captures.  Outputs are fixed in
 * a second walk, once no subgraph can still capture the old value. */
/* A newer ONNX op whose decompositions all refuse it (their guards) stays
 * in the graph (the node before it still leads to it): reported here,
 * where the reason is known, rather than as an op outside the opset when
 * ONNX is written. */
static Status lower_newer(Decompose *x, Graph *g, Node *n)
{
	Node *before = n->prev;
	if (expand(x, n, 0, DT_UNDEF) != OK)
		return FAILED;
	if ((before ? before->next : g->first) != n || !has_decomposition(x, n))
		return OK;
	diag_error(n->loc, "onnx::%s (opset %d) is not in opset %lld, and no decomposition of "
		   "onnx::%s takes this form of it (decomps/onnx_newer.fxir; add one with -decomp=FILE)",
		   sym_str(n->name), op_info[n->op].since, (long long)x->opset, sym_str(n->name));
	return FAILED;
}

/* Before any call is lowered, while their producers are still PyTorch
 * calls: attention over copied key/value heads reads the heads
 * themselves (attn_groups.c). */
static Status ungroup_graph(const GraphVisit *v, void *ctx)
{
	Decompose *x = ctx;
	for (Node *n = v->g->first; n; n = n->next)
		attn_ungroup_kv(x->m, n);
	return OK;
}

static Status lower_graph(const GraphVisit *v, void *ctx)
{
	Decompose *x = ctx;
	Status st = OK;
	for (Node *n = v->g->first, *next; n; n = next) {
		next = n->next;
		subst_node(x, n);
		if (is_call(x, n) && expand(x, n, 0, DT_UNDEF) != OK)
			return FAILED;
		if (newer_onnx(x, n))
			st |= lower_newer(x, v->g, n);
	}
	return st;
}

/* A graph output replaced through the table keeps its name: an Identity
 * defines it from the replacement. */
static Status fix_outputs(const GraphVisit *v, void *ctx)
{
	Decompose *x = ctx;
	Graph *g = v->g;
	for (uint32_t i = 0; i < g->nout; i++) {
		ValueId o = g->out[i], r = sub(x, o);
		if (r == o)
			continue;
		Node *n = node_new_op(x->m, OP_ONNX_Identity, 1, 1, 0);
		n->prov = x->sfrom[o]->prov;
		n->loc = x->sfrom[o]->loc;
		n->args[0] = (Arg){ .kind = A_VALUE, .u.v = r };
		n->res[0] = o;
		val(x->m, o)->def = n;
		val(x->m, o)->res = 0;
		node_append(g, n);
		rw_set(&x->subst, o, VNONE);
	}
	return OK;
}

/* ---- what is left ------------------------------------------------------------------- */
/* As the text writes it: a float keeps its point (6.0, not 6). */
static void print_float(FILE *f, double v)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%.17g", v);
	if (strtod(buf, NULL) == v)
		for (int p = 1; p < 17; p++) {
			snprintf(buf, sizeof buf, "%.*g", p, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	fputs(buf, f);
	if (!strpbrk(buf, ".eEn"))
		fputs(".0", f);
}

/* An argument as the error shows it; without `names`, a value is its type
 * alone (what two calls that fail alike share). */
static void print_arg(FILE *f, const Module *m, const Arg *a, int names)
{
	switch (a->kind) {
	case A_NONE: fputs("none", f); break;
	case A_INT: fprintf(f, "%lld", (long long)a->u.i); break;
	case A_FLOAT: print_float(f, a->u.f); break;
	case A_BOOL: fputs(a->u.i ? "true" : "false", f); break;
	case A_STR: fprintf(f, "\"%.*s\"", (int)a->u.s.n, a->u.s.s); break;
	case A_IDENT: fputs(sym_str(a->u.sym), f); break;
	case A_DTYPE: fputs(dtype_name((DType)a->u.i), f); break;
	case A_VALUE:
		if (names)
			print_value_name(f, m, a->u.v);
		if (m->vals.v[a->u.v].type) {
			fputs(names ? ": " : "", f);
			print_type(f, m->vals.v[a->u.v].type);
		}
		break;
	case A_LIST:
		fputc('[', f);
		for (uint32_t i = 0; i < a->n; i++) {
			fputs(i ? ", " : "", f);
			print_arg(f, m, &a->u.list[i], names);
		}
		fputc(']', f);
		break;
	default: fputs("...", f); break;
	}
}

static char *describe_args(const Module *m, const Node *n, int names)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&s, &len);
	for (uint32_t i = 0; i < n->nargs + n->nkw; i++) {
		fputs(i ? ", " : "", f);
		if (i >= n->nargs)
			fprintf(f, "%s = ", sym_str(n->kw[i - n->nargs].name));
		print_arg(f, m, i < n->nargs ? &n->args[i] : &n->kw[i - n->nargs].val, names);
	}
	fclose(f);
	return s;
}

/* One unsupported call: its first node (where it is reported), its
 * signature (op and arguments, values by type) and how many nodes make it.
 * Calls are kept in the order they are first met. */
typedef struct Left { const Node *first; char *sig; uint32_t count; } Left;
typedef struct Leftover { const Module *m; Left *v; uint32_t n, cap, total; HashMap by_sig; } Leftover;

static int same_sig(uintptr_t item, const void *key)
{
	const Leftover *l = ((const void *const *)key)[0];
	return strcmp(l->v[item - 1].sig, ((const char *const *)key)[1]) == 0;
}

static int same_op(uintptr_t item, const void *key)
{
	const Leftover *l = ((const void *const *)key)[0];
	const Node *n = ((const void *const *)key)[1], *f = l->v[item - 1].first;
	return f->domain == n->domain && f->name == n->name;
}

static void tally(Leftover *l, const Node *n)
{
	char buf[256];
	char *args = describe_args(l->m, n, 0);
	const char *op = opname(n, buf, sizeof buf);
	char *sig = xmalloc(strlen(op) + strlen(args) + 3);
	sprintf(sig, "%s(%s)", op, args);
	free(args);
	const void *key[2] = { l, sig };
	l->total++;
	uintptr_t at = hashmap_intern(&l->by_sig, hash_mem(sig, strlen(sig)), same_sig, key, l->n + 1);
	if (at == l->n + 1)
		XVEC_PUSH(*l, ((Left){ n, sig, 0 }));
	else
		free(sig);
	l->v[at - 1].count++;
}

static Status tally_graph(const GraphVisit *v, void *ctx)
{
	for (const Node *n = v->g->first; n; n = n->next)
		if (node_is_torch(n))
			tally(ctx, n);
	return OK;
}

/* One error an op, at its first node, with that node's arguments and the
 * count of the others; then a note that sums them up and says what to do.
 * An error a node would stop at the error limit after twenty nodes of one
 * op (an LLM's layers), before the other ops were named. */
static void report(const Module *m, const Leftover *l)
{
	char buf[256];
	for (uint32_t i = 0; i < l->n; i++) {
		const Node *n = l->v[i].first;
		char *args = describe_args(m, n, 1);
		uint32_t more = l->v[i].count - 1;
		if (more)
			diag_error(n->loc, "no decomposition for %s (arguments: %s); %u more node%s make%s the same call",
				   opname(n, buf, sizeof buf), args, more, more == 1 ? "" : "s", more == 1 ? "s" : "");
		else
			diag_error(n->loc, "no decomposition for %s (arguments: %s)", opname(n, buf, sizeof buf), args);
		free(args);
	}
	/* The note counts nodes by op, whatever their arguments. */
	uint32_t *total = xcalloc(l->n + 1, sizeof *total), nops = 0;
	HashMap by_op = { 0 };
	for (uint32_t i = 0; i < l->n; i++) {
		const Node *n = l->v[i].first;
		uintptr_t at = hashmap_intern(&by_op, hash_u64(((uint64_t)n->domain << 32) | n->name), same_op, (const void *[]){ l, n }, i + 1);
		nops += at == i + 1;
		total[at] += l->v[i].count;
	}
	char *s = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&s, &len);
	for (uint32_t i = 0, k = 0; i < l->n; i++)
		if (total[i + 1])
			fprintf(f, "%s%s (%u)", k++ ? ", " : "", opname(l->v[i].first, buf, sizeof buf), total[i + 1]);
	fclose(f);
	free(total);
	hashmap_free(&by_op);
	diag_note((Loc){ 0 }, "%u node%s of %u unsupported op%s: %s; give each a decomposition (-decomp=FILE, "
		  "docs/decompositions.md) or keep them as custom ops (-allow-custom-ops)", l->total,
		  l->total == 1 ? "" : "s", nops, nops == 1 ? "" : "s", s);
	free(s);
}

uint32_t decompose_report_unsupported(Module *m)
{
	Leftover l = { .m = m };
	module_walk(m, WALK_PROGRAM, tally_graph, &l);
	if (l.total) {
		int limit = diag_max_errors();
		/* Every op is named, however many there are. */
		diag_set_max_errors(0);
		report(m, &l);
		diag_set_max_errors(limit);
	}
	for (uint32_t i = 0; i < l.n; i++)
		free(l.v[i].sig);
	free(l.v);
	hashmap_free(&l.by_sig);
	return l.total;
}

/* ---- -allow-custom-ops ------------------------------------------------------------- */
/* A literal as an attribute value (bare words become strings). */
static int to_attr(Arg *a)
{
	if (a->kind == A_IDENT) {
		Str s = decomp_arg_text(a);
		a->kind = A_STR;
		a->u.s = s;
	} else if (a->kind == A_BOOL) {
		a->kind = A_INT;
	}
	return a->kind != A_NONE && !arg_contains(a, A_VALUE);
}

static int all_values(const Arg *a)
{
	for (uint32_t i = 0; i < a->n; i++)
		if (a->u.list[i].kind != A_VALUE)
			return 0;
	return a->kind == A_LIST && a->n;
}

/* Values (and lists of values) become inputs, literals attributes. */
static void to_custom(Module *m, Node *n)
{
	uint32_t ni = 0, na = 0, cap = n->nargs + n->nkw;
	for (uint32_t i = 0; i < n->nargs + n->nkw; i++) {
		const Arg *a = i < n->nargs ? &n->args[i] : &n->kw[i - n->nargs].val;
		cap += a->kind == A_LIST ? a->n : 0;
	}
	Arg *in = ARENA_ARRAY(&m->arena, Arg, cap + 1);
	Named *at = ARENA_ARRAY(&m->arena, Named, cap + 1);
	for (uint32_t i = 0; i < n->nargs + n->nkw; i++) {
		Arg a = i < n->nargs ? n->args[i] : n->kw[i - n->nargs].val;
		char nm[32];
		snprintf(nm, sizeof nm, "arg%u", i);
		Sym name = i < n->nargs ? sym_cstr(nm) : n->kw[i - n->nargs].name;
		if (a.kind == A_VALUE || (a.kind == A_NONE && i < n->nargs))
			in[ni++] = a;
		else if (all_values(&a))
			for (uint32_t j = 0; j < a.n; j++)
				in[ni++] = a.u.list[j];
		else if (to_attr(&a))
			at[na++] = (Named){ name, a };
	}
	n->args = in;
	n->nargs = ni;
	n->kw = at;
	n->nkw = na;
	n->op = OP_GENERIC;
}

/* -aten-fallback: a kept ATen call (already in to_custom's form) becomes
 * torch.onnx.export's ONNX_ATEN_FALLBACK node, org.pytorch.aten::ATen
 * with the op's name and overload (empty for the default one) as the
 * attributes `operator` and `overload_name`, before its own. */
static void to_aten_node(Module *m, Node *n)
{
	const char *s = sym_str(n->name), *dot = strchr(s, '.');
	size_t len = dot ? (size_t)(dot - s) : strlen(s);
	Named *kw = ARENA_ARRAY(&m->arena, Named, n->nkw + 2);
	kw[0] = (Named){ sym_cstr("operator"), { .kind = A_STR, .u.s = str_copy(&m->arena, (Str){ s, (uint32_t)len }) } };
	Str ov = dot ? (Str){ dot + 1, (uint32_t)strlen(dot + 1) } : (Str){ "", 0 };
	kw[1] = (Named){ sym_cstr("overload_name"), { .kind = A_STR, .u.s = str_copy(&m->arena, ov) } };
	if (n->nkw)
		memcpy(kw + 2, n->kw, n->nkw * sizeof *kw);
	n->kw = kw;
	n->nkw += 2;
	n->domain = sym_cstr("org.pytorch.aten");
	n->name = sym_cstr("ATen");
}

static Status keep_custom(const GraphVisit *v, void *ctx)
{
	const Decompose *x = ctx;
	char buf[256];
	for (Node *n = v->g->first; n; n = n->next) {
		if (!node_is_torch(n))
			continue;
		int aten = x->opt->aten_fallback && n->domain == S_aten;
		diag_warning(n->loc, "no decomposition for %s; kept as %s", opname(n, buf, sizeof buf),
			     aten ? "org.pytorch.aten::ATen" : "a custom op");
		to_custom(x->m, n);
		if (aten)
			to_aten_node(x->m, n);
	}
	return OK;
}

/* ---- the pass ----------------------------------------------------------------------- */
/* FAILED as soon as a graph holds a node outside onnx (an ATen node, or
 * a custom op the library may lower): the walk stops there. */
static Status no_aten(const GraphVisit *v, void *ctx)
{
	const Decompose *x = ctx;
	for (const Node *n = v->g->first; n; n = n->next)
		if (n->domain != S_onnx || newer_onnx(x, n))
			return FAILED;
	return OK;
}

/* The module's own `opset onnx N` wins over -opset; the result targets it. */
static int64_t target_opset(Module *m, const PassOptions *opt)
{
	for (uint32_t i = 0; i < m->opsets.n; i++)
		if (m->opsets.v[i].domain == S_onnx)
			return m->opsets.v[i].version;
	int64_t v = opt->opset ? opt->opset : 18;
	VEC_PUSH(&m->arena, m->opsets, ((Opset){ S_onnx, v }));
	return v;
}

Status pass_decompose(Module *m, const PassOptions *opt)
{
	Decompose x = { .m = m, .opt = opt };
	x.opset = target_opset(m, opt);
	if (module_walk(m, WALK_PROGRAM, no_aten, &x) == OK)
		return OK;
	if (opt->lib && decomp_lib_load(opt->lib) != OK)
		return FAILED;
	x.own = decomp_table_new();
	Status st = decomp_table_add(x.own, m);
	if (st == OK)
		st = module_walk(m, WALK_PROGRAM, ungroup_graph, &x);
	if (st == OK)
		st = module_walk(m, WALK_PROGRAM, lower_graph, &x);
	if (st == OK)
		module_walk(m, WALK_PROGRAM, fix_outputs, &x);
	if (st == OK && opt->allow_custom_ops)
		module_walk(m, WALK_PROGRAM, keep_custom, &x);
	if (st == OK && !opt->allow_custom_ops && decompose_report_unsupported(m))
		st = FAILED;
	if (st == OK)
		complex_make_real(m, &x.complex);
	decomp_table_free(x.own);
	rw_free(&x.subst);
	arena_free(&x.tmp);
	free(x.sfrom);
	free(x.complex.v);
	free(x.shapes);
	return st;
}
