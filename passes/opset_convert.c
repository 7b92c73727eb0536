/* opset_convert.c - a module moves from the default-domain opset it names
 * to another, up or down, node by node.
 *
 * An op whose schema changed between the two opsets is rewritten into its
 * form at the target: operands that moved between attributes and inputs
 * (Slice and TopK at 10, Clip and Pad at 11, Squeeze, Unsqueeze, ReduceSum
 * and Split's split at 13; the other Reduce* ops, Pad's axes and Split's
 * num_outputs at 18; DFT's axis at 20), attributes added later dropped
 * when lowering if they hold the value the older version computes (Cast's
 * saturate at 19, Reshape's allowzero at 14, ...), values renamed
 * (GridSample's modes at 20), GroupNormalization's per-group scale and
 * bias spread over the channels (21), Upsample made a Resize, and ops
 * newer than the target written out in older ones (HardSwish, Trilu,
 * CastLike, LayerNormalization, the window ops, Mish, Gelu, Swish).  Where
 * no conversion exists (an op, attribute value, input or element type the
 * target does not have: opset_types.def) the node is reported, naming
 * the op, the opset it is in and the target.
 *
 * Constants made here are onnx::Constant nodes (a function body has no
 * initializers).  New nodes are inserted before the node they replace and
 * carry its provenance and location; the last node of an expansion takes
 * the replaced node's place and results.  One walk, constant work per node
 * (a LayerNormalization is a dozen nodes): linear in the program. */
#include <stdlib.h>
#include <string.h>
#include "passes.h"

static const double SQRT_2_OVER_PI = 0.7978845608028654, SQRT1_2 = 0.7071067811865476, PI = 3.141592653589793;

typedef struct Conv {
	Module *m;
	Graph *g;
	int64_t from, to;           /* the opset of the graph being converted, the target */
	int errors;
	DecompLib *lib;             /* decompositions of newer ONNX ops, or NULL */
} Conv;

/* ---- small helpers ------------------------------------------------------- */
static int crosses(const Conv *c, int64_t at)
{
	int64_t lo = c->from < c->to ? c->from : c->to, hi = c->from < c->to ? c->to : c->from;
	return lo < at && at <= hi;
}

static int lowering(const Conv *c) { return c->to < c->from; }

static const char *opname(const Node *n) { return sym_str(n->name); }

static void fail(Conv *c, const Node *n, const char *fmt, ...)
{
	char msg[500];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* An imported node has no line: its name says which it is. */
	if (!n->loc.line && n->node_name)
		diag_error(n->loc, "node '%s': onnx::%s (opset %lld) has no form at opset %lld: %s", sym_str(n->node_name),
			   opname(n), (long long)c->from, (long long)c->to, msg);
	else
		diag_error(n->loc, "onnx::%s (opset %lld) has no form at opset %lld: %s", opname(n), (long long)c->from,
			   (long long)c->to, msg);
	c->errors++;
}

static Named *kw_find(Node *n, const char *name)
{
	Sym s = sym_cstr(name);
	for (uint32_t i = 0; i < n->nkw; i++)
		if (n->kw[i].name == s)
			return &n->kw[i];
	return NULL;
}

static void kw_drop(Node *n, const char *name)
{
	Named *k = kw_find(n, name);
	if (k)
		*k = n->kw[--n->nkw];
}

static void kw_set(Conv *c, Node *n, const char *name, Arg v)
{
	Named *k = kw_find(n, name);
	if (k) {
		k->val = v;
		return;
	}
	Named *kw = ARENA_ARRAY(&c->m->arena, Named, n->nkw + 1);
	if (n->nkw)
		memcpy(kw, n->kw, n->nkw * sizeof *kw);
	kw[n->nkw++] = (Named){ sym_cstr(name), v };
	n->kw = kw;
}

static Arg int_arg(int64_t i) { return (Arg){ .kind = A_INT, .u.i = i }; }
static Arg val_arg(ValueId v) { return (Arg){ .kind = A_VALUE, .u.v = v }; }

static Arg str_arg(const char *s)
{
	return (Arg){ .kind = A_STR, .u.s = { s, strlen(s) } };
}

static Arg ints_arg(Conv *c, const int64_t *v, uint32_t n)
{
	Arg *l = ARENA_ARRAY(&c->m->arena, Arg, n ? n : 1);
	for (uint32_t i = 0; i < n; i++)
		l[i] = int_arg(v[i]);
	return (Arg){ .kind = A_LIST, .elem = A_INT, .n = n, .u.list = l };
}

static int str_is(const Named *k, const char *s)
{
	return k && k->val.kind == A_STR && k->val.u.s.n == strlen(s) && memcmp(k->val.u.s.s, s, k->val.u.s.n) == 0;
}

/* Sets n's positional arguments to nargs, new slots none. */
static void set_nargs(Conv *c, Node *n, uint32_t nargs)
{
	if (nargs > n->nargs) {
		Arg *a = ARENA_ARRAY(&c->m->arena, Arg, nargs);
		if (n->nargs)
			memcpy(a, n->args, n->nargs * sizeof *a);
		for (uint32_t i = n->nargs; i < nargs; i++)
			a[i] = (Arg){ .kind = A_NONE };
		n->args = a;
	}
	n->nargs = nargs;
}

static const Type *type_of(Conv *c, ValueId v)
{
	const Type *t = v ? val(c->m, v)->type : NULL;
	return t && t->kind == TY_TENSOR ? t : NULL;
}

/* The rank of v, or -1. */
static int32_t rank_of(Conv *c, ValueId v)
{
	const Type *t = type_of(c, v);
	return t ? t->rank : -1;
}

/* A node of op before `at`, with at's provenance and location and one
 * fresh result named after at's first (type t, may be NULL: inference
 * fills it in). */
static Node *emit_before(Conv *c, Node *at, OpId op, uint32_t nargs, uint32_t nkw, Type *t, const char *suffix)
{
	Node *n = node_new_op(c->m, op, 1, nargs, nkw);
	n->prov = at->prov;
	n->loc = at->loc;
	char buf[300];
	ValueId like = at->nres ? at->res[0] : VNONE;
	snprintf(buf, sizeof buf, "%.250s_%s", like ? sym_str(val(c->m, like)->name) : "v", suffix);
	n->res[0] = value_new(c->m, value_fresh_name(c->m, sym_cstr(buf)), t, VK_NODE);
	val(c->m, n->res[0])->def = n;
	val(c->m, n->res[0])->loc = at->loc;
	node_insert_before(c->g, at, n);
	return n;
}

/* An onnx::Constant before `at` holding a tensor of dtype dt and the given
 * dims (rank -1: a scalar) from doubles or int64s. */
static ValueId emit_const(Conv *c, Node *at, DType dt, int32_t rank, const int64_t *dims, const double *f,
			  const int64_t *iv, size_t numel)
{
	Arena *a = &c->m->arena;
	int32_t r = rank < 0 ? 0 : rank;
	Dim *d = ARENA_ARRAY(a, Dim, r ? r : 1);
	for (int32_t i = 0; i < r; i++)
		d[i] = (Dim){ dims[i], 0 };
	Tensor *t = ARENA_NEW(a, Tensor);
	t->type = type_tensor(a, dt, r, d);
	t->nbytes = tensor_nbytes(dt, (int64_t)numel);
	uint8_t *data = arena_alloc(a, t->nbytes ? t->nbytes : 1);
	memset(data, 0, t->nbytes ? t->nbytes : 1);
	for (size_t i = 0; i < numel; i++)
		tensor_put(dt, data, i, f ? f[i] : 0, iv ? iv[i] : 0, iv != NULL);
	t->data = data;
	Node *n = emit_before(c, at, OP_ONNX_Constant, 0, 1, t->type, "const");
	n->kw[0] = (Named){ S_value, { .kind = A_TENSOR, .u.t = t } };
	return n->res[0];
}

static ValueId const_ints(Conv *c, Node *at, const int64_t *v, uint32_t n)
{
	int64_t dim = n;
	return emit_const(c, at, DT_I64, 1, &dim, NULL, v, n);
}

static ValueId const_scalar(Conv *c, Node *at, DType dt, double x)
{
	return emit_const(c, at, dt, 0, NULL, &x, NULL, 1);
}

/* The ints of a constant input or an INT/INTS attribute's value; -1 if
 * it is not constant. */
static int read_ints(Conv *c, const Arg *a, int64_t *out, int max)
{
	if (a->kind == A_INT) {
		out[0] = a->u.i;
		return 1;
	}
	if (a->kind == A_LIST) {
		if (a->n > (uint32_t)max)
			return -1;
		for (uint32_t i = 0; i < a->n; i++) {
			if (a->u.list[i].kind != A_INT)
				return -1;
			out[i] = a->u.list[i].u.i;
		}
		return (int)a->n;
	}
	const Tensor *t = a->kind == A_VALUE ? const_tensor(c->m, a->u.v) : NULL;
	int64_t numel = t && t->type && t->data ? type_numel(t->type) : -1;
	if (numel < 0 || numel > max || (t->type->dtype != DT_I64 && t->type->dtype != DT_I32))
		return -1;
	for (int64_t i = 0; i < numel; i++)
		out[i] = tensor_get_i((DType)t->type->dtype, t->data, (size_t)i);
	return (int)numel;
}

enum { MAXR = 64 };

/* ---- operands that moved between attributes and inputs ------------------ */
/* The attribute `name` becomes input `slot` (up), or input `slot` becomes
 * the attribute (down: it must be constant).  An absent operand stays
 * absent.  Returns 0 after reporting. */
static int attr_to_input(Conv *c, Node *n, const char *name, uint32_t slot)
{
	Named *k = kw_find(n, name);
	if (!k)
		return 1;
	int64_t v[MAXR];
	int cnt = read_ints(c, &k->val, v, MAXR);
	if (cnt < 0) {
		fail(c, n, "its '%s' attribute is not a list of ints", name);
		return 0;
	}
	ValueId in = const_ints(c, n, v, (uint32_t)cnt);
	kw_drop(n, name);
	if (n->nargs <= slot)
		set_nargs(c, n, slot + 1);
	n->args[slot] = val_arg(in);
	return 1;
}

static int input_to_attr(Conv *c, Node *n, const char *name, uint32_t slot)
{
	if (n->nargs <= slot || n->args[slot].kind == A_NONE) {
		if (n->nargs > slot)
			n->nargs = slot;
		return 1;
	}
	int64_t v[MAXR];
	int cnt = read_ints(c, &n->args[slot], v, MAXR);
	if (cnt < 0) {
		fail(c, n, "its input '%s' is not a constant (it is an attribute there)", name);
		return 0;
	}
	kw_set(c, n, name, ints_arg(c, v, (uint32_t)cnt));
	n->nargs = slot;
	return 1;
}

static int is_reduce18(OpId op)
{
	switch (op) {
	case OP_ONNX_ReduceL1: case OP_ONNX_ReduceL2: case OP_ONNX_ReduceLogSum: case OP_ONNX_ReduceLogSumExp:
	case OP_ONNX_ReduceMax: case OP_ONNX_ReduceMean: case OP_ONNX_ReduceMin: case OP_ONNX_ReduceProd:
	case OP_ONNX_ReduceSumSquare:
		return 1;
	default:
		return 0;
	}
}

/* Reduce* with axes as an input (from `at` on) or as an attribute. */
static void reduce_axes(Conv *c, Node *n, int64_t at)
{
	if (!crosses(c, at))
		return;
	if (!lowering(c)) {
		attr_to_input(c, n, "axes", 1);
		return;
	}
	Named *noop = kw_find(n, "noop_with_empty_axes");
	int keep = noop && noop->val.kind == A_INT && noop->val.u.i;
	int64_t v[MAXR];
	int cnt = n->nargs > 1 && n->args[1].kind != A_NONE ? read_ints(c, &n->args[1], v, MAXR) : 0;
	if (keep && cnt == 0) {
		/* No axes and noop_with_empty_axes=1: the input unchanged. */
		n->op = OP_ONNX_Identity;
		n->name = op_name_of(OP_ONNX_Identity);
		n->nargs = 1;
		n->nkw = 0;
		return;
	}
	kw_drop(n, "noop_with_empty_axes");
	if (cnt == 0)
		n->nargs = 1;           /* no axes, or none: every dim, the attribute's default */
	else
		input_to_attr(c, n, "axes", 1);
}

/* Split: `split` became an input at 13; num_outputs came at 18. */
static void split(Conv *c, Node *n)
{
	if (crosses(c, 13) && !lowering(c) && !attr_to_input(c, n, "split", 1))
		return;
	if (!crosses(c, 18))
		return;
	int has_split = n->nargs > 1 && n->args[1].kind != A_NONE;
	Named *no = kw_find(n, "num_outputs");
	if (!lowering(c)) {
		if (!has_split && !no)
			kw_set(c, n, "num_outputs", int_arg(n->nres));
		return;
	}
	if (!no)
		return;
	/* num_outputs: chunks of ceil(d / k), the last one smaller. */
	Named *ax = kw_find(n, "axis");
	int64_t axis = ax && ax->val.kind == A_INT ? ax->val.u.i : 0;
	const Type *t = type_of(c, operand(n, 0));
	int64_t k = no->val.kind == A_INT ? no->val.u.i : 0;
	if (t && t->rank > 0 && axis < 0)
		axis += t->rank;
	if (!t || t->rank <= 0 || axis < 0 || axis >= t->rank || t->dims[axis].sym || t->dims[axis].v < 0 || k <= 0 ||
	    k > MAXR) {
		fail(c, n, "num_outputs needs the size of the split axis, which is not known");
		return;
	}
	int64_t d = t->dims[axis].v, chunk = (d + k - 1) / k, sizes[MAXR];
	int64_t left = d;
	for (int64_t i = 0; i < k; i++) {
		sizes[i] = left < chunk ? left : chunk;
		left -= sizes[i];
	}
	kw_drop(n, "num_outputs");
	set_nargs(c, n, 2);
	n->args[1] = val_arg(const_ints(c, n, sizes, (uint32_t)k));
}

/* Pad: axes (input 3) from 18 on, mode "wrap" from 19 on. */
static void pad(Conv *c, Node *n)
{
	Named *mode = kw_find(n, "mode");
	if (lowering(c) && crosses(c, 19) && str_is(mode, "wrap")) {
		fail(c, n, "mode \"wrap\" first appears in opset 19");
		return;
	}
	if (!lowering(c) || !crosses(c, 18) || n->nargs < 4 || n->args[3].kind == A_NONE) {
		if (lowering(c) && crosses(c, 18) && n->nargs > 3)
			n->nargs = 3;
		return;
	}
	int32_t r = rank_of(c, operand(n, 0));
	int64_t axes[MAXR], pads[2 * MAXR], full[2 * MAXR] = { 0 };
	int na = read_ints(c, &n->args[3], axes, MAXR), np = read_ints(c, &n->args[1], pads, 2 * MAXR);
	if (r < 0 || r > MAXR || na < 0 || np != 2 * na) {
		fail(c, n, "its axes input needs constant axes and pads and an input of known rank");
		return;
	}
	for (int i = 0; i < na; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
		if (a < 0 || a >= r) {
			fail(c, n, "axis %lld is out of range for rank %d", (long long)axes[i], r);
			return;
		}
		full[a] = pads[i];
		full[a + r] = pads[i + na];
	}
	n->args[1] = val_arg(const_ints(c, n, full, (uint32_t)(2 * r)));
	n->nargs = 3;
}

/* DFT: axis is an attribute (default 1) before 20, an input (default -2,
 * negative from the back) from 20 on. */
static void dft(Conv *c, Node *n)
{
	if (!crosses(c, 20))
		return;
	if (!lowering(c)) {
		Named *k = kw_find(n, "axis");
		int64_t axis = k && k->val.kind == A_INT ? k->val.u.i : 1;
		kw_drop(n, "axis");
		set_nargs(c, n, 3);
		n->args[2] = val_arg(emit_const(c, n, DT_I64, 0, NULL, NULL, &axis, 1));
		return;
	}
	int64_t axis = -2;
	if (n->nargs > 2 && n->args[2].kind != A_NONE && read_ints(c, &n->args[2], &axis, 1) != 1) {
		fail(c, n, "its axis input is not a constant");
		return;
	}
	int32_t r = rank_of(c, operand(n, 0));
	if (axis < 0 && r < 0) {
		fail(c, n, "a negative axis needs the input's rank, which is not known");
		return;
	}
	if (axis < 0)
		axis += r;
	if (n->nargs > 2)
		n->nargs = 2;
	while (n->nargs > 1 && n->args[n->nargs - 1].kind == A_NONE)
		n->nargs--;             /* no trailing omitted inputs */
	if (axis != 1)
		kw_set(c, n, "axis", int_arg(axis));
}

/* GridSample 20 renamed bilinear/bicubic to linear/cubic and took N-D
 * inputs; 16 takes 4-D only. */
static void grid_sample(Conv *c, Node *n)
{
	if (!crosses(c, 20))
		return;
	Named *mode = kw_find(n, "mode");
	static const char *const names[2][2] = { { "bilinear", "linear" }, { "bicubic", "cubic" } };
	int old = lowering(c) ? 1 : 0;
	for (int i = 0; mode && i < 2; i++)
		if (str_is(mode, names[i][old])) {
			mode->val = str_arg(names[i][1 - old]);
			break;
		}
	int32_t r = rank_of(c, operand(n, 0));
	if (lowering(c) && r != 4 && r >= 0)
		fail(c, n, "its input is %d-D; before opset 20 it takes 4-D inputs only", r);
}

/* Shape's start/end (15): a Slice of the whole shape below. */
static void shape(Conv *c, Node *n)
{
	if (!lowering(c) || !crosses(c, 15))
		return;
	Named *s = kw_find(n, "start"), *e = kw_find(n, "end");
	int64_t start = s && s->val.kind == A_INT ? s->val.u.i : 0;
	if (start == 0 && !e) {
		kw_drop(n, "start");
		return;
	}
	int64_t end = e && e->val.kind == A_INT ? e->val.u.i : INT64_MAX, zero = 0;
	Node *sh = emit_before(c, n, OP_ONNX_Shape, 1, 0, NULL, "shape");
	sh->args[0] = n->args[0];
	ValueId st = const_ints(c, n, &start, 1), en = const_ints(c, n, &end, 1), ax = const_ints(c, n, &zero, 1);
	n->op = OP_ONNX_Slice;
	n->name = op_name_of(OP_ONNX_Slice);
	n->nkw = 0;
	set_nargs(c, n, 4);
	n->args[0] = val_arg(sh->res[0]);
	n->args[1] = val_arg(st);
	n->args[2] = val_arg(en);
	n->args[3] = val_arg(ax);
}

/* RoiAlign 16 added coordinate_transformation_mode, default half_pixel;
 * before, it computed output_half_pixel. */
static void roi_align(Conv *c, Node *n)
{
	if (!crosses(c, 16))
		return;
	Named *k = kw_find(n, "coordinate_transformation_mode");
	if (!lowering(c)) {
		if (!k)
			kw_set(c, n, "coordinate_transformation_mode", str_arg("output_half_pixel"));
		return;
	}
	if (!str_is(k, "output_half_pixel"))
		fail(c, n, "before opset 16 it computes coordinate_transformation_mode=\"output_half_pixel\" only");
	else
		kw_drop(n, "coordinate_transformation_mode");
}

/* ---- attributes and values added later ----------------------------------- */
typedef struct Added {
	OpId op;
	int since;
	const char *attr;
	char kind;                  /* 'i': int default, 's': string default, '1': ints all 1, '-': absent only */
	int64_t i;
	const char *s;
} Added;

/* Attributes an op gained at `since`: lowering drops them when they hold
 * the value that means what the older version did, and fails otherwise. */
static const Added added[] = {
	{ OP_ONNX_Reshape, 14, "allowzero", 'i', 0, NULL },
	{ OP_ONNX_BatchNormalization, 14, "training_mode", 'i', 0, NULL },
	{ OP_ONNX_GRU, 14, "layout", 'i', 0, NULL },
	{ OP_ONNX_LSTM, 14, "layout", 'i', 0, NULL },
	{ OP_ONNX_RNN, 14, "layout", 'i', 0, NULL },
	{ OP_ONNX_ScatterElements, 16, "reduction", 's', 0, "none" },
	{ OP_ONNX_ScatterND, 16, "reduction", 's', 0, "none" },
	{ OP_ONNX_LpPool, 18, "ceil_mode", 'i', 0, NULL },
	{ OP_ONNX_LpPool, 18, "dilations", '1', 0, NULL },
	{ OP_ONNX_Resize, 18, "antialias", 'i', 0, NULL },
	{ OP_ONNX_Resize, 18, "keep_aspect_ratio_policy", 's', 0, "stretch" },
	{ OP_ONNX_Resize, 18, "axes", '-', 0, NULL },
	{ OP_ONNX_AveragePool, 19, "dilations", '1', 0, NULL },
	{ OP_ONNX_Cast, 19, "saturate", 'i', 1, NULL },
	{ OP_ONNX_CastLike, 19, "saturate", 'i', 1, NULL },
	{ OP_ONNX_QuantizeLinear, 19, "saturate", 'i', 1, NULL },
	{ OP_ONNX_QuantizeLinear, 21, "block_size", 'i', 0, NULL },
	{ OP_ONNX_QuantizeLinear, 21, "output_dtype", 'i', 0, NULL },
	{ OP_ONNX_QuantizeLinear, 23, "precision", 'i', 0, NULL },
	{ OP_ONNX_DequantizeLinear, 21, "block_size", 'i', 0, NULL },
	{ OP_ONNX_DequantizeLinear, 23, "output_dtype", 'i', 0, NULL },
	{ OP_ONNX_GroupNormalization, 21, "stash_type", 'i', 1, NULL },
	{ OP_ONNX_Cast, 24, "round_mode", 's', 0, "up" },
	{ OP_ONNX_CastLike, 24, "round_mode", 's', 0, "up" },
	{ OP_ONNX_Attention, 25, "left_window_size", 'i', -1, NULL },
	{ OP_ONNX_Attention, 25, "right_window_size", 'i', -1, NULL },
	{ OP_ONNX_Range, 27, "stash_type", 'i', 1, NULL },
	{ OP_ONNX_SpaceToDepth, 28, "mode", 's', 0, "DCR" },
};

static int holds_default(const Added *a, const Named *k)
{
	switch (a->kind) {
	case 'i': return k->val.kind == A_INT && k->val.u.i == a->i;
	case 's': return str_is(k, a->s);
	case '1':
		if (k->val.kind != A_LIST)
			return 0;
		for (uint32_t i = 0; i < k->val.n; i++)
			if (k->val.u.list[i].kind != A_INT || k->val.u.list[i].u.i != 1)
				return 0;
		return 1;
	default: return 0;
	}
}

static void drop_added(Conv *c, Node *n)
{
	for (size_t i = 0; i < sizeof added / sizeof *added; i++) {
		const Added *a = &added[i];
		if (a->op != n->op || !crosses(c, a->since))
			continue;
		Named *k = kw_find(n, a->attr);
		if (!k)
			continue;
		if (!holds_default(a, k)) {
			fail(c, n, "attribute '%s' first appears in opset %d, and this value has no older form", a->attr, a->since);
			return;
		}
		kw_drop(n, a->attr);
	}
}

/* Values of string attributes new at `since`. */
static const struct { OpId op; int since; const char *attr, *value; } added_values[] = {
	{ OP_ONNX_ScatterElements, 18, "reduction", "max" }, { OP_ONNX_ScatterElements, 18, "reduction", "min" },
	{ OP_ONNX_ScatterND, 18, "reduction", "max" }, { OP_ONNX_ScatterND, 18, "reduction", "min" },
	{ OP_ONNX_Resize, 19, "coordinate_transformation_mode", "half_pixel_symmetric" },
};

static void check_values(Conv *c, Node *n)
{
	for (size_t i = 0; i < sizeof added_values / sizeof *added_values; i++)
		if (added_values[i].op == n->op && crosses(c, added_values[i].since) &&
		    str_is(kw_find(n, added_values[i].attr), added_values[i].value)) {
			fail(c, n, "%s=\"%s\" first appears in opset %d", added_values[i].attr, added_values[i].value,
			     added_values[i].since);
			return;
		}
}

/* Optional inputs an op gained at `since`: lowering needs them absent. */
static const struct { OpId op; int since; uint32_t before; } added_inputs[] = {
	{ OP_ONNX_Attention, 24, 6 },
};

static void check_inputs(Conv *c, Node *n)
{
	for (size_t i = 0; i < sizeof added_inputs / sizeof *added_inputs; i++) {
		uint32_t b = added_inputs[i].before;
		if (added_inputs[i].op != n->op || !crosses(c, added_inputs[i].since) || n->nargs <= b)
			continue;
		for (uint32_t j = b; j < n->nargs; j++)
			if (n->args[j].kind != A_NONE) {
				fail(c, n, "input %u first appears in opset %d", j + 1, added_inputs[i].since);
				return;
			}
		n->nargs = b;
	}
}

/* ---- element types added later ------------------------------------------- */
/* Add, Sub, Mul and Div take 8- and 16-bit integers from 14 on; below,
 * they compute in i32 and cast back, which wraps as the narrow type does. */
static int narrow_int(DType dt)
{
	return dt == DT_U8 || dt == DT_I8 || dt == DT_U16 || dt == DT_I16;
}

static void widen_arith(Conv *c, Node *n)
{
	const Type *t = type_of(c, operand(n, 0));
	if (!lowering(c) || !crosses(c, 14) || !t || !narrow_int((DType)t->dtype) || n->nargs != 2)
		return;
	Node *op = emit_before(c, n, n->op, 2, 0, NULL, "wide");
	for (uint32_t i = 0; i < 2; i++) {
		Node *w = emit_before(c, op, OP_ONNX_Cast, 1, 1, NULL, "i32");
		w->args[0] = n->args[i];
		w->kw[0] = (Named){ sym_cstr("to"), int_arg(dtype_onnx(DT_I32)) };
		op->args[i] = val_arg(w->res[0]);
	}
	n->op = OP_ONNX_Cast;
	n->name = op_name_of(OP_ONNX_Cast);
	n->nargs = 1;
	n->args[0] = val_arg(op->res[0]);
	n->nkw = 0;
	kw_set(c, n, "to", int_arg(dtype_onnx((DType)t->dtype)));
}

/* Element types the first input of an op took after 13 (opset_types.def,
 * generated from the onnx package's schemas): lowering below the opset
 * that added a node's type is an error, ONNX Runtime would refuse it. */
typedef struct Types { OpId op; int since; const char *names; } Types;

static const Types types_added[] = {
#define TYPES(op, since, names) { OP_##op, since, names },
#include "opset_types.def"
#undef TYPES
};
enum { NTYPES = sizeof types_added / sizeof *types_added };

static uint16_t first_types[OP_COUNT];  /* index + 1 of an op's first line, 0: none */

static void index_types(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	for (int i = NTYPES - 1; i >= 0; i--)
		first_types[types_added[i].op] = (uint16_t)(i + 1);
}

static int name_listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && memcmp(p, name, n) == 0)
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

static void check_types(Conv *c, Node *n)
{
	const Type *t = n->nargs ? type_of(c, operand(n, 0)) : NULL;
	if (!lowering(c) || !t || t->dtype == DT_UNDEF)
		return;
	const char *dn = dtype_name((DType)t->dtype);
	for (int i = first_types[n->op] - 1; i >= 0 && i < NTYPES && types_added[i].op == n->op; i++)
		if (crosses(c, types_added[i].since) && name_listed(types_added[i].names, dn)) {
			fail(c, n, "its input's element type %s first appears in opset %d", dn, types_added[i].since);
			return;
		}
}

/* ---- ops newer than the target, written out ------------------------------ */
/* n becomes op over the given operands, keeping its results and provenance. */
static void become(Conv *c, Node *n, OpId op, uint32_t nargs, const ValueId *in, uint32_t nkw)
{
	n->op = op;
	n->name = op_name_of(op);
	n->domain = S_onnx;
	n->opset = 0;
	n->nargs = nargs;
	n->args = ARENA_ARRAY(&c->m->arena, Arg, nargs);
	for (uint32_t i = 0; i < nargs; i++)
		n->args[i] = val_arg(in[i]);
	n->nkw = nkw;
	n->kw = nkw ? ARENA_ARRAY(&c->m->arena, Named, nkw) : NULL;
}

static ValueId unary(Conv *c, Node *at, OpId op, ValueId x, const char *suffix)
{
	Node *u = emit_before(c, at, op, 1, 0, NULL, suffix);
	u->args[0] = val_arg(x);
	return u->res[0];
}

static ValueId binary(Conv *c, Node *at, OpId op, ValueId a, ValueId b, const char *suffix)
{
	Node *u = emit_before(c, at, op, 2, 0, NULL, suffix);
	u->args[0] = val_arg(a);
	u->args[1] = val_arg(b);
	return u->res[0];
}

/* The floating dtype of v, or DT_UNDEF after reporting. */
static DType float_dtype(Conv *c, Node *n, ValueId v)
{
	const Type *t = type_of(c, v);
	DType dt = t ? (DType)t->dtype : DT_UNDEF;
	if (dt != DT_F32 && dt != DT_F64 && dt != DT_F16 && dt != DT_BF16) {
		fail(c, n, "writing it out needs its input's floating dtype, which is not known");
		return DT_UNDEF;
	}
	return dt;
}

static double attr_f(Node *n, const char *name, double dflt)
{
	Named *k = kw_find(n, name);
	if (k && k->val.kind == A_FLOAT)
		return k->val.u.f;
	return k && k->val.kind == A_INT ? (double)k->val.u.i : dflt;
}

/* HardSwish(x) = x * HardSigmoid(x; alpha 1/6, beta 1/2) (ONNX's body). */
static void expand_hardswish(Conv *c, Node *n)
{
	ValueId x = operand(n, 0);
	Node *h = emit_before(c, n, OP_ONNX_HardSigmoid, 1, 2, NULL, "hardsigmoid");
	h->args[0] = val_arg(x);
	h->kw[0] = (Named){ sym_cstr("alpha"), { .kind = A_FLOAT, .u.f = 1.0 / 6 } };
	h->kw[1] = (Named){ sym_cstr("beta"), { .kind = A_FLOAT, .u.f = 0.5 } };
	become(c, n, OP_ONNX_Mul, 2, (ValueId[]){ x, h->res[0] }, 0);
}

/* Mish(x) = x * Tanh(Softplus(x)). */
static void expand_mish(Conv *c, Node *n)
{
	ValueId x = operand(n, 0);
	ValueId t = unary(c, n, OP_ONNX_Tanh, unary(c, n, OP_ONNX_Softplus, x, "softplus"), "tanh");
	become(c, n, OP_ONNX_Mul, 2, (ValueId[]){ x, t }, 0);
}

/* Swish(x) = x * Sigmoid(alpha * x). */
static void expand_swish(Conv *c, Node *n)
{
	ValueId x = operand(n, 0);
	double alpha = attr_f(n, "alpha", 1.0);
	ValueId in = x;
	if (alpha != 1.0) {
		DType dt = float_dtype(c, n, x);
		if (dt == DT_UNDEF)
			return;
		in = binary(c, n, OP_ONNX_Mul, x, const_scalar(c, n, dt, alpha), "scaled");
	}
	become(c, n, OP_ONNX_Mul, 2, (ValueId[]){ x, unary(c, n, OP_ONNX_Sigmoid, in, "sigmoid") }, 0);
}

/* Gelu(x) = x/2 (1 + Erf(x/√2)), or with approximate="tanh"
 * x/2 (1 + Tanh(√(2/π) (x + 0.044715 x³))). */
static void expand_gelu(Conv *c, Node *n)
{
	ValueId x = operand(n, 0);
	DType dt = float_dtype(c, n, x);
	if (dt == DT_UNDEF)
		return;
	ValueId inner;
	if (str_is(kw_find(n, "approximate"), "tanh")) {
		ValueId x3 = binary(c, n, OP_ONNX_Mul, binary(c, n, OP_ONNX_Mul, x, x, "sq"), x, "cube");
		ValueId s = binary(c, n, OP_ONNX_Add, x,
				   binary(c, n, OP_ONNX_Mul, x3, const_scalar(c, n, dt, 0.044715), "cube_scaled"), "sum");
		inner = unary(c, n, OP_ONNX_Tanh,
			      binary(c, n, OP_ONNX_Mul, s, const_scalar(c, n, dt, SQRT_2_OVER_PI), "tanh_in"), "tanh");
	} else {
		inner = unary(c, n, OP_ONNX_Erf, binary(c, n, OP_ONNX_Mul, x, const_scalar(c, n, dt, SQRT1_2), "erf_in"),
			      "erf");
	}
	ValueId one = binary(c, n, OP_ONNX_Add, inner, const_scalar(c, n, dt, 1.0), "plus1");
	ValueId half = binary(c, n, OP_ONNX_Mul, x, const_scalar(c, n, dt, 0.5), "half");
	become(c, n, OP_ONNX_Mul, 2, (ValueId[]){ half, one }, 0);
}

/* CastLike(x, like) = Cast(x, to = like's dtype). */
static void expand_castlike(Conv *c, Node *n)
{
	const Type *t = type_of(c, operand(n, 1));
	if (!t || t->dtype == DT_UNDEF) {
		fail(c, n, "writing it as Cast needs the dtype of its second input, which is not known");
		return;
	}
	become(c, n, OP_ONNX_Cast, 1, (ValueId[]){ operand(n, 0) }, 1);
	n->kw[0] = (Named){ sym_cstr("to"), int_arg(dtype_onnx((DType)t->dtype)) };
}

/* Result i of n (if it has one) becomes the result of d, the new node
 * that computes it; the value d reads as from then on. */
static ValueId hand_over(Conv *c, Node *n, uint32_t i, ValueId made)
{
	ValueId v = i < n->nres ? n->res[i] : VNONE;
	if (!v)
		return made;
	Node *d = def_of(c->m, made);
	val(c->m, v)->def = d;
	val(c->m, v)->res = 0;
	d->res[0] = v;
	return v;
}

/* ReduceMean over axes in the target's form: an attribute below 18, an
 * input from 18 on. */
static ValueId reduce_mean(Conv *c, Node *at, ValueId x, const int64_t *axes, uint32_t n, const char *suffix)
{
	if (c->to >= 18) {
		ValueId ax = const_ints(c, at, axes, n);
		Node *r = emit_before(c, at, OP_ONNX_ReduceMean, 2, 0, NULL, suffix);
		r->args[0] = val_arg(x);
		r->args[1] = val_arg(ax);
		return r->res[0];
	}
	Node *r = emit_before(c, at, OP_ONNX_ReduceMean, 1, 1, NULL, suffix);
	r->args[0] = val_arg(x);
	r->kw[0] = (Named){ sym_cstr("axes"), ints_arg(c, axes, n) };
	return r->res[0];
}

static ValueId cast_to(Conv *c, Node *at, ValueId x, DType dt, const char *suffix)
{
	Node *cast = emit_before(c, at, OP_ONNX_Cast, 1, 1, NULL, suffix);
	cast->args[0] = val_arg(x);
	cast->kw[0] = (Named){ sym_cstr("to"), int_arg(dtype_onnx(dt)) };
	return cast->res[0];
}

/* RMSNormalization (23) as ONNX's function body computes it: in the stash
 * type (f32 unless stash_type says the input's own), x / √(mean(x²) + ε)
 * over axes axis..rank-1, cast back, times scale.  The rank must be known. */
static void expand_rmsnorm(Conv *c, Node *n)
{
	ValueId x = operand(n, 0), scale = operand(n, 1);
	int32_t r = rank_of(c, x);
	DType dt = float_dtype(c, n, x);
	if (dt == DT_UNDEF)
		return;
	if (r < 1 || r > MAXR) {
		fail(c, n, "writing it out needs its input's rank, which is not known");
		return;
	}
	Named *ak = kw_find(n, "axis"), *sk = kw_find(n, "stash_type");
	int64_t axis = ak && ak->val.kind == A_INT ? ak->val.u.i : -1, axes[MAXR];
	if (axis < 0)
		axis += r;
	DType st = !sk || sk->val.kind != A_INT || sk->val.u.i == 1 ? DT_F32 : dt;
	uint32_t na = 0;
	for (int64_t i = axis; i < r; i++)
		axes[na++] = i;
	ValueId xs = st != dt ? cast_to(c, n, x, st, "stashed") : x;
	ValueId ms = reduce_mean(c, n, binary(c, n, OP_ONNX_Mul, xs, xs, "sq"), axes, na, "mean_sq");
	ValueId rms = unary(c, n, OP_ONNX_Sqrt,
			    binary(c, n, OP_ONNX_Add, ms, const_scalar(c, n, st, attr_f(n, "epsilon", 1e-5)), "mean_sq_eps"),
			    "rms");
	ValueId y = binary(c, n, OP_ONNX_Div, xs, rms, "normalized");
	if (st != dt)
		y = cast_to(c, n, y, dt, "unstashed");
	n->nres = 1;
	become(c, n, OP_ONNX_Mul, 2, (ValueId[]){ y, scale }, 0);
}

/* LayerNormalization (17) as ONNX's function body computes it: in the
 * stash type (f32 unless stash_type says the input's own), normalized over
 * axes axis..rank-1; Mean and InvStdDev are results 1 and 2.  Only below
 * 17, where ReduceMean takes its axes as an attribute. */
static void expand_layernorm(Conv *c, Node *n)
{
	ValueId x = operand(n, 0), scale = operand(n, 1), bias = operand(n, 2);
	int32_t r = rank_of(c, x);
	DType dt = float_dtype(c, n, x);
	if (dt == DT_UNDEF)
		return;
	Named *ak = kw_find(n, "axis");
	int64_t axis = ak && ak->val.kind == A_INT ? ak->val.u.i : -1;
	if (r < 0 || r > MAXR) {
		fail(c, n, "writing it out needs its input's rank, which is not known");
		return;
	}
	if (axis < 0)
		axis += r;
	Named *sk = kw_find(n, "stash_type");
	int stash32 = !sk || sk->val.kind != A_INT || sk->val.u.i == 1;
	DType st = stash32 ? DT_F32 : dt;
	int64_t axes[MAXR];
	uint32_t na = 0;
	for (int64_t i = axis; i < r; i++)
		axes[na++] = i;
	ValueId xs = x;
	if (st != dt) {
		Node *cast = emit_before(c, n, OP_ONNX_Cast, 1, 1, NULL, "stashed");
		cast->args[0] = val_arg(x);
		cast->kw[0] = (Named){ sym_cstr("to"), int_arg(dtype_onnx(st)) };
		xs = cast->res[0];
	}
	ValueId mean = hand_over(c, n, 1, reduce_mean(c, n, xs, axes, na, "mean"));
	ValueId d = binary(c, n, OP_ONNX_Sub, xs, mean, "centered");
	ValueId var = reduce_mean(c, n, binary(c, n, OP_ONNX_Mul, d, d, "sq"), axes, na, "var");
	ValueId sd = unary(c, n, OP_ONNX_Sqrt,
			   binary(c, n, OP_ONNX_Add, var, const_scalar(c, n, st, attr_f(n, "epsilon", 1e-5)), "var_eps"),
			   "std");
	ValueId inv = hand_over(c, n, 2, unary(c, n, OP_ONNX_Reciprocal, sd, "invstd"));
	ValueId y = binary(c, n, OP_ONNX_Mul, d, inv, "normalized");
	if (st != dt) {
		Node *cast = emit_before(c, n, OP_ONNX_Cast, 1, 1, NULL, "unstashed");
		cast->args[0] = val_arg(y);
		cast->kw[0] = (Named){ sym_cstr("to"), int_arg(dtype_onnx(dt)) };
		y = cast->res[0];
	}
	if (bias)
		y = binary(c, n, OP_ONNX_Mul, y, scale, "scaled");
	n->nres = 1;
	if (bias)
		become(c, n, OP_ONNX_Add, 2, (ValueId[]){ y, bias }, 0);
	else
		become(c, n, OP_ONNX_Mul, 2, (ValueId[]){ y, scale }, 0);
}

/* BatchNormalization with training_mode=1 (14) below 14, as ONNX's
 * reference computes it: the batch's mean and (population) variance over
 * every dim but the channel (dim 1) normalize x; the running statistics
 * (results 1 and 2) are input_mean·momentum + mean·(1 − momentum), the
 * same for the variance.  The input's rank must be known. */
static ValueId channel_shaped(Conv *c, Node *n, ValueId v, ValueId shape, const char *suffix)
{
	Node *r = emit_before(c, n, OP_ONNX_Reshape, 2, 0, NULL, suffix);
	r->args[0] = val_arg(v);
	r->args[1] = val_arg(shape);
	return r->res[0];
}

static ValueId running(Conv *c, Node *n, ValueId in, ValueId batch, ValueId flat, double mom, const char *suffix)
{
	DType dt = type_of(c, in) ? (DType)type_of(c, in)->dtype : DT_F32;
	ValueId old = binary(c, n, OP_ONNX_Mul, in, const_scalar(c, n, dt, mom), suffix);
	ValueId cur = binary(c, n, OP_ONNX_Mul, channel_shaped(c, n, batch, flat, suffix),
			     const_scalar(c, n, dt, 1.0 - mom), suffix);
	return binary(c, n, OP_ONNX_Add, old, cur, suffix);
}

static void expand_bn_training(Conv *c, Node *n)
{
	ValueId x = operand(n, 0), scale = operand(n, 1), bias = operand(n, 2);
	int32_t r = rank_of(c, x);
	DType dt = float_dtype(c, n, x);
	if (dt == DT_UNDEF)
		return;
	if (r < 2 || r > MAXR) {
		fail(c, n, "writing out training_mode=1 needs its input's rank, which is not known");
		return;
	}
	int64_t axes[MAXR], shape[MAXR], flat = -1;
	uint32_t na = 0;
	for (int32_t i = 0; i < r; i++) {
		if (i != 1)
			axes[na++] = i;
		shape[i] = i == 1 ? -1 : 1;
	}
	double mom = attr_f(n, "momentum", 0.9), eps = attr_f(n, "epsilon", 1e-5);
	ValueId mean = reduce_mean(c, n, x, axes, na, "mean");
	ValueId d = binary(c, n, OP_ONNX_Sub, x, mean, "centered");
	ValueId var = reduce_mean(c, n, binary(c, n, OP_ONNX_Mul, d, d, "sq"), axes, na, "var");
	ValueId flat_shape = const_ints(c, n, &flat, 1), bshape = const_ints(c, n, shape, (uint32_t)r);
	if (n->nres > 1 && n->res[1])
		hand_over(c, n, 1, running(c, n, operand(n, 3), mean, flat_shape, mom, "running_mean"));
	if (n->nres > 2 && n->res[2])
		hand_over(c, n, 2, running(c, n, operand(n, 4), var, flat_shape, mom, "running_var"));
	ValueId sd = unary(c, n, OP_ONNX_Sqrt, binary(c, n, OP_ONNX_Add, var, const_scalar(c, n, dt, eps), "var_eps"), "std");
	ValueId y = binary(c, n, OP_ONNX_Div, d, sd, "normalized");
	y = binary(c, n, OP_ONNX_Mul, y, channel_shaped(c, n, scale, bshape, "scale"), "scaled");
	n->nres = 1;
	become(c, n, OP_ONNX_Add, 2, (ValueId[]){ y, channel_shaped(c, n, bias, bshape, "bias") }, 0);
}

/* Reshape's allowzero=1 (14) copies no dim for a 0 in the shape; with a
 * constant shape holding no 0 it means what older versions compute. */
static void reshape_allowzero(Conv *c, Node *n)
{
	Named *k = kw_find(n, "allowzero");
	int64_t shape[MAXR];
	int ns = k && k->val.kind == A_INT && k->val.u.i == 1 && n->nargs > 1 ? read_ints(c, &n->args[1], shape, MAXR) : -1;
	for (int i = 0; i < ns; i++)
		if (shape[i] == 0)
			return;             /* drop_added reports it */
	if (ns >= 0)
		kw_drop(n, "allowzero");
}

/* ---- forms older than 13, raised ------------------------------------------ */
/* A float attribute as a scalar constant of v's dtype (dflt if absent). */
static ValueId float_input(Conv *c, Node *n, const char *attr, double dflt, ValueId like)
{
	const Type *t = type_of(c, like);
	if (!t || t->dtype == DT_UNDEF) {
		fail(c, n, "its '%s' attribute becomes an input of its input's dtype, which is not known", attr);
		return VNONE;
	}
	return const_scalar(c, n, (DType)t->dtype, attr_f(n, attr, dflt));
}

/* Slice 10, TopK 10, Clip 11 and Pad 11 took their attributes as inputs;
 * Dropout 12 its ratio (which only training reads: dropped); Upsample
 * became Resize at 10 (nearest: floor of asymmetric coordinates; linear:
 * asymmetric). */
static void raise_old(Conv *c, Node *n)
{
	if (lowering(c))
		return;
	switch (n->op) {
	case OP_ONNX_Slice:
		if (crosses(c, 10) && kw_find(n, "starts")) {
			Named *ax = kw_find(n, "axes");
			attr_to_input(c, n, "starts", 1);
			attr_to_input(c, n, "ends", 2);
			if (ax)
				attr_to_input(c, n, "axes", 3);
		}
		break;
	case OP_ONNX_TopK:
		if (crosses(c, 10) && kw_find(n, "k"))
			attr_to_input(c, n, "k", 1);
		break;
	case OP_ONNX_Clip:
		if (crosses(c, 11) && n->nargs == 1) {
			ValueId lo = kw_find(n, "min") ? float_input(c, n, "min", 0, operand(n, 0)) : VNONE;
			ValueId hi = kw_find(n, "max") ? float_input(c, n, "max", 0, operand(n, 0)) : VNONE;
			kw_drop(n, "min");
			kw_drop(n, "max");
			set_nargs(c, n, hi ? 3 : lo ? 2 : 1);
			if (lo)
				n->args[1] = val_arg(lo);
			if (hi)
				n->args[2] = val_arg(hi);
		}
		break;
	case OP_ONNX_Pad:
		if (crosses(c, 11) && kw_find(n, "pads")) {
			ValueId v = float_input(c, n, "value", 0, operand(n, 0));
			if (!attr_to_input(c, n, "pads", 1) || !v)
				return;
			kw_drop(n, "value");
			set_nargs(c, n, 3);
			n->args[2] = val_arg(v);
		}
		break;
	case OP_ONNX_Dropout:
		if (crosses(c, 12))
			kw_drop(n, "ratio");
		break;
	default: break;
	}
}

static void upsample_to_resize(Conv *c, Node *n)
{
	Named *sk = kw_find(n, "scales");
	ValueId scales = operand(n, 1);
	if (sk && sk->val.kind == A_LIST && sk->val.n <= MAXR) {
		double f[MAXR];
		int64_t len = sk->val.n;
		for (uint32_t i = 0; i < sk->val.n; i++)
			f[i] = sk->val.u.list[i].kind == A_FLOAT ? sk->val.u.list[i].u.f : (double)sk->val.u.list[i].u.i;
		scales = emit_const(c, n, DT_F32, 1, &len, f, NULL, (size_t)len);
	}
	if (!scales) {
		fail(c, n, "Upsample (deprecated from opset 10) has no scales to become Resize's");
		return;
	}
	int linear = str_is(kw_find(n, "mode"), "linear") || str_is(kw_find(n, "mode"), "bilinear");
	ValueId x = operand(n, 0);
	n->op = OP_ONNX_Resize;
	n->name = op_name_of(OP_ONNX_Resize);
	set_nargs(c, n, 3);
	n->args[0] = val_arg(x);
	n->args[1] = (Arg){ .kind = A_NONE };
	n->args[2] = val_arg(scales);
	n->nkw = 0;
	kw_set(c, n, "mode", str_arg(linear ? "linear" : "nearest"));
	kw_set(c, n, "coordinate_transformation_mode", str_arg("asymmetric"));
	if (!linear)
		kw_set(c, n, "nearest_mode", str_arg("floor"));
}

/* GroupNormalization's scale and bias hold one value a group before 21 and
 * one a channel from 21 on: raising repeats each group's value over its
 * C / G channels (C, dim 1 of the input, known).  Lowering would need
 * equal values within each group: not done. */
static void group_norm(Conv *c, Node *n)
{
	const Type *t = type_of(c, operand(n, 0));
	Named *gk = kw_find(n, "num_groups");
	int64_t g = gk && gk->val.kind == A_INT ? gk->val.u.i : 0;
	if (lowering(c)) {
		fail(c, n, "its scale and bias are per channel from opset 21 on and per group before");
		return;
	}
	if (!t || t->rank < 2 || t->dims[1].sym || t->dims[1].v < 0 || g <= 0 || t->dims[1].v % g) {
		fail(c, n, "its scale and bias become per channel at opset 21, which needs the channel count (dim 1)");
		return;
	}
	int64_t one = 1, shape[2] = { g, t->dims[1].v / g }, ch = t->dims[1].v;
	for (uint32_t i = 1; i < 3 && i < n->nargs; i++) {
		ValueId v = operand(n, i);
		ValueId u = binary(c, n, OP_ONNX_Unsqueeze, v, const_ints(c, n, &one, 1), i == 1 ? "scale_col" : "bias_col");
		ValueId e = binary(c, n, OP_ONNX_Expand, u, const_ints(c, n, shape, 2), i == 1 ? "scale_rep" : "bias_rep");
		n->args[i] = val_arg(binary(c, n, OP_ONNX_Reshape, e, const_ints(c, n, &ch, 1),
					    i == 1 ? "scale_per_channel" : "bias_per_channel"));
	}
}

/* GroupNormalization (18; 21) written out below 18 as ONNX's function
 * bodies compute it: x as [N, G, -1], each group normalized by its mean
 * and variance, then scale and bias, one a group (the op of 18..20: before
 * the shape is restored) or one a channel (21 on: in the stash type, f32
 * unless stash_type=0, cast back before them). */
static void expand_groupnorm(Conv *c, Node *n)
{
	ValueId x = operand(n, 0), scale = operand(n, 1), bias = operand(n, 2);
	int32_t r = rank_of(c, x);
	DType dt = float_dtype(c, n, x);
	Named *gk = kw_find(n, "num_groups"), *sk = kw_find(n, "stash_type");
	int64_t g = gk && gk->val.kind == A_INT ? gk->val.u.i : 0;
	if (dt == DT_UNDEF)
		return;
	if (r < 2 || r > MAXR || g <= 0) {
		fail(c, n, "writing it out needs its input's rank and num_groups");
		return;
	}
	int per_channel = c->from >= 21;
	DType st = per_channel && (!sk || sk->val.kind != A_INT || sk->val.u.i == 1) ? DT_F32 : dt;
	int64_t grouped[3] = { 0, g, -1 }, last = 2, col[MAXR];
	for (int32_t i = 0; i < r; i++)
		col[i] = i == 1 ? -1 : 1;
	ValueId xs = st != dt ? cast_to(c, n, x, st, "stashed") : x;
	ValueId xg = channel_shaped(c, n, xs, const_ints(c, n, grouped, 3), "grouped");
	ValueId mean = reduce_mean(c, n, xg, &last, 1, "mean");
	ValueId d = binary(c, n, OP_ONNX_Sub, xg, mean, "centered");
	ValueId var = reduce_mean(c, n, binary(c, n, OP_ONNX_Mul, d, d, "sq"), &last, 1, "var");
	ValueId sd = unary(c, n, OP_ONNX_Sqrt,
			   binary(c, n, OP_ONNX_Add, var, const_scalar(c, n, st, attr_f(n, "epsilon", 1e-5)), "var_eps"), "std");
	ValueId y = binary(c, n, OP_ONNX_Div, d, sd, "normalized");
	int64_t gcol[3] = { 1, -1, 1 };
	ValueId cshape = per_channel ? const_ints(c, n, col, (uint32_t)r) : const_ints(c, n, gcol, 3);
	ValueId shape = unary(c, n, OP_ONNX_Shape, x, "shape");
	n->nres = 1;
	if (!per_channel) {
		y = binary(c, n, OP_ONNX_Mul, y, channel_shaped(c, n, scale, cshape, "scale"), "scaled");
		y = binary(c, n, OP_ONNX_Add, y, channel_shaped(c, n, bias, cshape, "bias"), "shifted");
		become(c, n, OP_ONNX_Reshape, 2, (ValueId[]){ y, shape }, 0);
		return;
	}
	y = channel_shaped(c, n, y, shape, "restored");
	if (st != dt)
		y = cast_to(c, n, y, dt, "unstashed");
	y = binary(c, n, OP_ONNX_Mul, y, channel_shaped(c, n, scale, cshape, "scale"), "scaled");
	become(c, n, OP_ONNX_Add, 2, (ValueId[]){ y, channel_shaped(c, n, bias, cshape, "bias") }, 0);
}

/* AffineGrid (20) below 20, as ONNX's reference computes it, for a
 * constant size [N, C, (D,) H, W]: the base grid of homogeneous
 * coordinates (x along W, y along H, z along D, then 1; -1 + 2i/(L-1)
 * with align_corners, else -1 + (2i+1)/L) is a constant [P, k+1]
 * (P = H·W or D·H·W), times theta transposed ([N, k+1, k]), reshaped to
 * [N, (D,) H, W, k]. */
enum { AFFINE_MAX = 1 << 20 };  /* elements of the base grid written inline */

static double grid_coord(int64_t i, int64_t len, int align)
{
	if (align)
		return len > 1 ? -1.0 + 2.0 * (double)i / (double)(len - 1) : -1.0;
	return -1.0 + (2.0 * (double)i + 1.0) / (double)len;
}

static void expand_affinegrid(Conv *c, Node *n)
{
	ValueId theta = operand(n, 0);
	DType dt = float_dtype(c, n, theta);
	int64_t size[5];
	int ns = n->nargs > 1 ? read_ints(c, &n->args[1], size, 5) : -1;
	if (dt == DT_UNDEF)
		return;
	if (ns != 4 && ns != 5) {
		fail(c, n, "writing it out needs a constant size of 4 or 5 entries");
		return;
	}
	int k = ns - 2;
	int64_t p = 1;
	for (int i = 2; i < ns; i++)
		p = size[i] > 0 && p <= AFFINE_MAX ? p * size[i] : AFFINE_MAX + 1;
	if (p * (k + 1) > AFFINE_MAX) {
		fail(c, n, "writing it out makes a base grid of more than %d elements", AFFINE_MAX);
		return;
	}
	Named *ak = kw_find(n, "align_corners");
	int align = ak && ak->val.kind == A_INT && ak->val.u.i;
	double *g = xreallocarray(NULL, (size_t)(p * (k + 1)), sizeof *g);
	for (int64_t at = 0; at < p; at++) {
		int64_t rest = at;
		for (int j = k - 1; j >= 0; j--) {         /* spatial dim j: coordinate k-1-j */
			int64_t len = size[2 + j], i = rest % len;
			rest /= len;
			g[at * (k + 1) + (k - 1 - j)] = grid_coord(i, len, align);
		}
		g[at * (k + 1) + k] = 1.0;
	}
	int64_t gdims[2] = { p, k + 1 }, perm[3] = { 0, 2, 1 }, shape[5] = { -1 };
	ValueId base = emit_const(c, n, dt, 2, gdims, g, NULL, (size_t)(p * (k + 1)));
	free(g);
	Node *t = emit_before(c, n, OP_ONNX_Transpose, 1, 1, NULL, "theta_t");
	t->args[0] = val_arg(theta);
	t->kw[0] = (Named){ sym_cstr("perm"), ints_arg(c, perm, 3) };
	ValueId grid = binary(c, n, OP_ONNX_MatMul, base, t->res[0], "points");
	for (int i = 2; i < ns; i++)
		shape[i - 1] = size[i];
	shape[ns - 1] = k;
	become(c, n, OP_ONNX_Reshape, 2, (ValueId[]){ grid, const_ints(c, n, shape, (uint32_t)ns) }, 0);
}

/* Trilu(x, k) keeps x[..., i, j] where j - i >= k (upper, the default)
 * or j - i <= k (lower), else 0: the column minus the row index from two
 * Ranges over x's last two dims, compared with k, selects x or zero.
 * Only at 13 (Trilu is 14), where Unsqueeze takes its axes as an input. */
static void expand_trilu(Conv *c, Node *n)
{
	ValueId x = operand(n, 0), k = n->nargs > 1 ? operand(n, 1) : VNONE;
	const Type *t = type_of(c, x);
	if (!t || t->dtype == DT_UNDEF || t->dtype == DT_STR) {
		fail(c, n, "writing it out needs its input's dtype, which is not known or is a string");
		return;
	}
	Named *up = kw_find(n, "upper");
	int upper = !up || up->val.kind != A_INT || up->val.u.i != 0;
	int64_t zero = 0, one = 1, last2[2] = { -2, -1 }, axis1 = 1;
	ValueId shape = unary(c, n, OP_ONNX_Shape, x, "shape");
	ValueId dims[2], idx[2];
	for (int i = 0; i < 2; i++) {
		ValueId at = emit_const(c, n, DT_I64, 0, NULL, NULL, &last2[i], 1);
		dims[i] = binary(c, n, OP_ONNX_Gather, shape, at, i ? "cols" : "rows");
		/* Operands first: each new node goes right before n. */
		ValueId from = emit_const(c, n, DT_I64, 0, NULL, NULL, &zero, 1);
		ValueId step = emit_const(c, n, DT_I64, 0, NULL, NULL, &one, 1);
		Node *r = emit_before(c, n, OP_ONNX_Range, 3, 0, NULL, i ? "col_index" : "row_index");
		r->args[0] = val_arg(from);
		r->args[1] = val_arg(dims[i]);
		r->args[2] = val_arg(step);
		idx[i] = r->res[0];
	}
	ValueId rows = binary(c, n, OP_ONNX_Unsqueeze, idx[0], const_ints(c, n, &axis1, 1), "row_column");
	ValueId diag = binary(c, n, OP_ONNX_Sub, idx[1], rows, "diagonal");
	if (!k)
		k = emit_const(c, n, DT_I64, 0, NULL, NULL, &zero, 1);
	ValueId keep = binary(c, n, upper ? OP_ONNX_GreaterOrEqual : OP_ONNX_LessOrEqual, diag, k, "keep");
	ValueId zv = emit_const(c, n, (DType)t->dtype, 0, NULL, NULL, &zero, 1);
	become(c, n, OP_ONNX_Where, 3, (ValueId[]){ keep, x, zv }, 0);
}

/* The window ops (17), as ONNX's bodies compute them in f32:
 * a0 - a1 cos(2πk/N) + a2 cos(4πk/N) for k in [0, size), N = size when
 * periodic, else size - 1; then cast to output_datatype. */
static void expand_window(Conv *c, Node *n)
{
	double a[3] = { 0.5, 0.5, 0 };
	if (n->op == OP_ONNX_HammingWindow) {
		a[0] = 25.0 / 46;
		a[1] = 21.0 / 46;
	} else if (n->op == OP_ONNX_BlackmanWindow) {
		a[0] = 0.42;
		a[1] = 0.5;
		a[2] = 0.08;
	}
	Named *pk = kw_find(n, "periodic"), *ok = kw_find(n, "output_datatype");
	int periodic = !pk || pk->val.kind != A_INT || pk->val.u.i != 0;
	int64_t out = ok && ok->val.kind == A_INT ? ok->val.u.i : dtype_onnx(DT_F32);
	Node *cast = emit_before(c, n, OP_ONNX_Cast, 1, 1, NULL, "size");
	cast->args[0] = n->args[0];
	cast->kw[0] = (Named){ sym_cstr("to"), int_arg(dtype_onnx(DT_F32)) };
	ValueId size = cast->res[0];
	ValueId len = periodic ? size : binary(c, n, OP_ONNX_Sub, size, const_scalar(c, n, DT_F32, 1), "length");
	ValueId from = const_scalar(c, n, DT_F32, 0), step = const_scalar(c, n, DT_F32, 1);
	Node *r = emit_before(c, n, OP_ONNX_Range, 3, 0, NULL, "index");
	r->args[0] = val_arg(from);
	r->args[1] = val_arg(size);
	r->args[2] = val_arg(step);
	ValueId ang = binary(c, n, OP_ONNX_Div,
			     binary(c, n, OP_ONNX_Mul, r->res[0], const_scalar(c, n, DT_F32, 2 * PI), "turns"), len, "angle");
	ValueId y = binary(c, n, OP_ONNX_Sub, const_scalar(c, n, DT_F32, a[0]),
			   binary(c, n, OP_ONNX_Mul, const_scalar(c, n, DT_F32, a[1]), unary(c, n, OP_ONNX_Cos, ang, "cos"), "a1"),
			   "a0");
	if (a[2] != 0) {
		ValueId twice = binary(c, n, OP_ONNX_Add, ang, ang, "angle2");
		ValueId t = binary(c, n, OP_ONNX_Mul, const_scalar(c, n, DT_F32, a[2]), unary(c, n, OP_ONNX_Cos, twice, "cos2"),
				   "a2");
		y = binary(c, n, OP_ONNX_Add, y, t, "sum");
	}
	become(c, n, OP_ONNX_Cast, 1, (ValueId[]){ y }, 1);
	n->kw[0] = (Named){ sym_cstr("to"), int_arg(out) };
}

/* A decomposition of the op in the library (`decomp onnx::Attention`,
 * built in or -decomp=FILE) expands it in the decompose pass: the node is
 * left for it, marked as needing its own opset (`onnx::Attention.opset23`),
 * which is what decompose takes.  The library writes opset 17 and up, so
 * only a target of 17 or later. */
static int decomposed_later(Conv *c, const Node *n)
{
	uint32_t k = 0;
	if (!c->lib || c->to < 17 || decomp_lib_load(c->lib) != OK)
		return 0;
	return decomp_lib_find(c->lib, S_onnx, n->name, &k) != NULL && k > 0;
}

static void expand(Conv *c, Node *n)
{
	switch (n->op) {
	case OP_ONNX_HardSwish: expand_hardswish(c, n); break;
	case OP_ONNX_Mish: expand_mish(c, n); break;
	case OP_ONNX_Swish: expand_swish(c, n); break;
	case OP_ONNX_Gelu: expand_gelu(c, n); break;
	case OP_ONNX_CastLike: expand_castlike(c, n); break;
	case OP_ONNX_LayerNormalization: expand_layernorm(c, n); break;
	case OP_ONNX_RMSNormalization: expand_rmsnorm(c, n); break;
	case OP_ONNX_GroupNormalization: expand_groupnorm(c, n); break;
	case OP_ONNX_AffineGrid: expand_affinegrid(c, n); break;
	case OP_ONNX_Trilu: expand_trilu(c, n); break;
	case OP_ONNX_HannWindow:
	case OP_ONNX_HammingWindow:
	case OP_ONNX_BlackmanWindow:
		expand_window(c, n);
		break;
	default:
		if (decomposed_later(c, n))
			n->opset = op_info[n->op].since;    /* the form decompose takes */
		else
			fail(c, n, "it first appears in opset %d, and onnxc has no expansion of it into older "
			     "ops (nor a decomposition: `decomp onnx::%s`, docs/decompositions.md)",
			     op_info[n->op].since, opname(n));
	}
}

/* ---- the walk ------------------------------------------------------------ */
static void convert_node(Conv *c, Node *n)
{
	if (op_info[n->op].since > c->to) {
		expand(c, n);
		return;
	}
	if (n->opset > c->to)
		n->opset = 0;
	if (lowering(c) && crosses(c, 14) && n->op == OP_ONNX_BatchNormalization) {
		Named *tm = kw_find(n, "training_mode");
		if (tm && tm->val.kind == A_INT && tm->val.u.i == 1) {
			expand_bn_training(c, n);
			return;
		}
	}
	if (lowering(c) && crosses(c, 14) && n->op == OP_ONNX_Reshape)
		reshape_allowzero(c, n);
	if (lowering(c)) {
		drop_added(c, n);
		check_values(c, n);
		check_inputs(c, n);
	}
	raise_old(c, n);
	if (is_reduce18(n->op))
		reduce_axes(c, n, 18);
	switch (n->op) {
	case OP_ONNX_ReduceSum:
	case OP_ONNX_Squeeze:
	case OP_ONNX_Unsqueeze:
		if (crosses(c, 13) && !lowering(c))
			attr_to_input(c, n, "axes", 1);
		break;
	case OP_ONNX_Add:
	case OP_ONNX_Sub:
	case OP_ONNX_Mul:
	case OP_ONNX_Div:
		widen_arith(c, n);
		break;
	case OP_ONNX_Scan:
		if (crosses(c, 9))
			fail(c, n, "before opset 9 it takes sequence_lens and scans batch-major; onnxc has no conversion");
		break;
	case OP_ONNX_Split: split(c, n); break;
	case OP_ONNX_Pad: pad(c, n); break;
	case OP_ONNX_DFT: dft(c, n); break;
	case OP_ONNX_GridSample: grid_sample(c, n); break;
	case OP_ONNX_Shape: shape(c, n); break;
	case OP_ONNX_RoiAlign: roi_align(c, n); break;
	case OP_ONNX_Upsample:
		if (c->to >= 10)
			upsample_to_resize(c, n);
		break;
	case OP_ONNX_Scatter:
		/* Scatter (9) is ScatterElements (11) under its old name. */
		if (c->to >= 11) {
			n->op = OP_ONNX_ScatterElements;
			n->name = op_name_of(OP_ONNX_ScatterElements);
		}
		break;
	case OP_ONNX_GroupNormalization:
		if (crosses(c, 21))
			group_norm(c, n);
		break;
	default: break;
	}
	check_types(c, n);
}

static Status visit(const GraphVisit *gv, void *ctx)
{
	Conv *c = ctx;
	int64_t target = c->to;
	/* A graph inside a function follows the function's own opset. */
	Conv local = *c;
	local.g = gv->g;
	local.from = gv->func ? opsets_onnx(&gv->func->opsets, c->from) : c->from;
	local.to = target;
	if (local.from != target)
		for (Node *n = gv->g->first, *next; n; n = next) {
			next = n->next;
			if (n->domain != S_onnx)
				continue;
			if (n->op != OP_GENERIC)
				convert_node(&local, n);
			else if (lowering(&local))
				/* Newer than ops.def (of an opset after the onnx
				 * package utils/gen_onnx_ops.py last read). */
				fail(&local, n, "onnxc has no schema for it, so no conversion");
		}
	c->errors = local.errors;
	return OK;
}

static void set_opset(Arena *a, OpsetVec *v, int64_t to, int add)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (v->v[i].domain == S_onnx) {
			v->v[i].version = to;
			return;
		}
	if (add)
		VEC_PUSH(a, *v, ((Opset){ S_onnx, to }));
}

int opset_convert(Module *m, int64_t target, DecompLib *lib)
{
	index_types();
	Conv c = { .m = m, .from = opsets_onnx(&m->opsets, target), .to = target, .lib = lib };
	module_walk(m, WALK_PROGRAM, visit, &c);
	if (c.errors)
		return c.errors;
	set_opset(&m->arena, &m->opsets, target, 1);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		set_opset(&m->arena, &m->funcs.v[i]->opsets, target, 0);
	return 0;
}

Status pass_opset_convert(Module *m, const PassOptions *opt)
{
	return opset_convert(m, opt->opset, opt->lib) ? FAILED : OK;
}
