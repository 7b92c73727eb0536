/* functionalize_ops.c - mutating ops: in-place, out= variants, copy_, resize_, in-place shape changes (see functionalize.c). */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

/* `name_.ovl` -> `name.ovl`, `__iand__.Tensor` -> `__and__.Tensor` (the
 * in-place dunders ATen has); 0 if not in place. */
Sym fz_functional_name(Sym name)
{
	const char *s = sym_str(name);
	const char *dot = strchr(s, '.');
	size_t n = dot ? (size_t)(dot - s) : strlen(s);
	char buf[256];
	if (n + 1 > sizeof buf || strlen(s) >= sizeof buf)
		return 0;
	static const char *const dunder[] = { "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__" };
	for (size_t i = 0; i < sizeof dunder / sizeof *dunder; i++)
		if (strlen(dunder[i]) == n && !strncmp(s, dunder[i], n)) {
			snprintf(buf, sizeof buf, "__%s", s + 3);
			return sym_cstr(buf);
		}
	if (n < 2 || s[n - 1] != '_' || s[n - 2] == '_')
		return 0;
	snprintf(buf, sizeof buf, "%.*s%s", (int)(n - 1), s, s + n);
	return sym_cstr(buf);
}

/* `add.out` -> `add` or `add.Tensor` (whichever the registry knows),
 * `sum.IntList_out` -> `sum.IntList`. */
static Sym functional_out_name(Sym name)
{
	const char *s = sym_str(name);
	const char *dot = strchr(s, '.');
	size_t n = dot ? (size_t)(dot - s) : strlen(s);
	const char *ovl = dot ? dot + 1 : "";
	size_t on = strlen(ovl);
	char buf[256];
	if (n + on + 8 > sizeof buf)
		return name;
	if (on > 4 && !strcmp(ovl + on - 4, "_out")) {
		snprintf(buf, sizeof buf, "%.*s.%.*s", (int)n, s, (int)(on - 4), ovl);
		return sym_cstr(buf);
	}
	snprintf(buf, sizeof buf, "%.*s", (int)n, s);
	if (op_lookup(S_aten, sym_cstr(buf)) == OP_GENERIC) {
		snprintf(buf, sizeof buf, "%.*s.Tensor", (int)n, s);
		if (op_lookup(S_aten, sym_cstr(buf)) == OP_GENERIC)
			snprintf(buf, sizeof buf, "%.*s", (int)n, s);
	}
	return sym_cstr(buf);
}

/* FX always names the result of a mutating op; give one if the text did
 * not, so there is a value to be the new version. */
static ValueId result_of(Functionalize *f, Node *n, ValueId c)
{
	if (n->nres >= 1 && n->res[0])
		return n->res[0];
	if (n->nres == 0) {
		n->nres = 1;
		n->res = ARENA_ARRAY(&f->m->arena, ValueId, 1);
	}
	return fz_new_result(f, n, 0, val(f->m, c)->name, val(f->m, c)->type);
}

/* n (now functional) computed storage c's new contents. */
static void mutated(Functionalize *f, Node *n, ValueId c, Node *next)
{
	ValueId r = result_of(f, n, c);
	if (r < f->nst)
		fz_st(f, r)->canon = c;
	fz_write_back(f, c, r, n, next);
}

static int same_shape(const Type *a, const Type *b)
{
	if (a->rank < 0 || a->rank != b->rank)
		return 0;
	for (int32_t i = 0; i < a->rank; i++)
		if (a->dims[i].v < 0 || a->dims[i].v != b->dims[i].v || a->dims[i].sym != b->dims[i].sym)
			return 0;
	return 1;
}

/* copy_(dst, src): dst's new contents are src cast to dst's dtype
 * (_to_copy) and broadcast to its shape (expand).  Each step is skipped
 * when the types show it is not needed; with neither, src itself is the
 * new version and n goes away.  dst is the current version of c0. */
static int copy_inplace(Functionalize *f, Node *n, ValueId c0, Node *next)
{
	if (n->nargs < 2 || n->args[1].kind != A_VALUE)
		return fz_fail(f, n, "copy_ needs a tensor source");
	ValueId dst = n->args[0].u.v, src = n->args[1].u.v;
	Type *D = val(f->m, dst)->type, *S = val(f->m, src)->type;
	int tensors = D && D->kind == TY_TENSOR && (!S || S->kind == TY_TENSOR);
	int cast = tensors && D->dtype && (!S || S->dtype != D->dtype);
	int expand = tensors && D->rank >= 0 && !(S && same_shape(S, D));
	Arg dt = { .kind = A_DTYPE, .u.i = tensors ? D->dtype : 0 };
	if (cast && expand) {
		Type *t = S ? type_tensor(&f->m->arena, D->dtype, S->rank, S->dims) : NULL;
		Node *c = fz_make(f, OP_ATEN__to_copy_default, 1, 1, n, n, S__to_copy, t);
		c->args[0] = fz_varg(src);
		c->kw[0] = (Named){ S_dtype, dt };
		src = c->res[0];
	}
	if (expand) {
		WriteBack w = { f, n, 0, dst, src, D, 0, n, n };
		Arg shape;
		if (!fz_shape_list(&w, &shape))
			return fz_fail(f, n, "copy_ needs the destination's rank");
		fz_recall(f, n, OP_ATEN_expand_default, 2, 0);
		n->args[0] = fz_varg(src);
		n->args[1] = shape;
	} else if (cast) {
		fz_recall(f, n, OP_ATEN__to_copy_default, 1, 1);
		n->args[0] = fz_varg(src);
		n->kw[0] = (Named){ S_dtype, dt };
	} else {
		node_remove(f->g, n);
		if (n->nres && n->res[0] && n->res[0] < f->nst)
			fz_st(f, n->res[0])->canon = c0;
		fz_write_back(f, c0, src, n, next);
		return 0;
	}
	mutated(f, n, c0, next);
	return 0;
}

/* n = aten::NAME_.OVL(%a, ...) with operands rewritten; c0 is the storage
 * %a named. */
static int inplace(Functionalize *f, Node *n, ValueId c0, Sym fname, Node *next)
{
	switch (n->op) {
	case OP_ATEN_copy__default: return copy_inplace(f, n, c0, next);
	case OP_ATEN_fill__Scalar: fz_rename_op(n, op_name_of(OP_ATEN_full_like_default)); break;
	case OP_ATEN_zero__default: fz_rename_op(n, op_name_of(OP_ATEN_zeros_like_default)); break;
	default: fz_rename_op(n, fname); break;
	}
	mutated(f, n, c0, next);
	return 0;
}

/* out = %buf: drop the keyword; the result is buf's new version. */
/* arange's out= overloads make a tensor of out's dtype, which the
 * functional call has to name (without it arange picks i64 or f32 from
 * its operands); arange.start_out(start, end, step) is arange.start_step,
 * not arange.start, whose third argument is the dtype. */
static void arange_out(Functionalize *f, Node *n, Sym name, ValueId out)
{
	const char *s = sym_str(name);
	if (strcmp(s, "arange.out") != 0 && strcmp(s, "arange.start_out") != 0)
		return;
	fz_rename_op(n, sym_cstr(strcmp(s, "arange.out") ? "arange.start_step" : "arange"));
	const Type *t = val(f->m, out)->type;
	if (!t || t->kind != TY_TENSOR || t->dtype == DT_UNDEF || node_kw(n, S_dtype))
		return;
	Named *kw = ARENA_ARRAY(&f->m->arena, Named, n->nkw + 1);
	if (n->nkw)
		memcpy(kw, n->kw, n->nkw * sizeof *kw);
	kw[n->nkw++] = (Named){ S_dtype, { .kind = A_DTYPE, .u.i = t->dtype } };
	n->kw = kw;
}

static int out_variant(Functionalize *f, Node *n, uint32_t k, Node *next)
{
	if (n->kw[k].val.kind != A_VALUE)
		return fz_fail(f, n, "out= must name one tensor");
	ValueId out = n->kw[k].val.u.v, c = fz_canon(f, out);
	memmove(&n->kw[k], &n->kw[k + 1], (n->nkw - k - 1) * sizeof *n->kw);
	n->nkw--;
	fz_rewrite_operands(f, n);
	Sym name = n->name;
	fz_rename_op(n, functional_out_name(name));
	arange_out(f, n, name, out);
	mutated(f, n, c, next);
	return 0;
}

static const OutVariant out_variants[] = {
#define OUTV(name, functional, npos, out0, out1) { name, functional, npos, { out0, out1 } },
#include "out_variants.def"
#undef OUTV
};

const OutVariant *fz_out_variant_of(const Node *n)
{
	if (n->domain != S_aten)
		return NULL;
	const char *s = sym_str(n->name);
	for (size_t i = 0; i < sizeof out_variants / sizeof *out_variants; i++)
		if (!strcmp(s, out_variants[i].name))
			return &out_variants[i];
	return NULL;
}

/* Argument k of n removed (positional first, then keywords). */
static void drop_arg(Node *n, uint32_t k)
{
	if (k < n->nargs) {
		memmove(&n->args[k], &n->args[k + 1], (n->nargs - k - 1) * sizeof *n->args);
		n->nargs--;
		return;
	}
	k -= n->nargs;
	memmove(&n->kw[k], &n->kw[k + 1], (n->nkw - k - 1) * sizeof *n->kw);
	n->nkw--;
}

/* `aten::max.dim_max(%x, 1, false, max = %a, max_values = %b)` (or with
 * %a, %b positional): the functional op, whose result k is the new
 * version of output k. */
/* Output k of named-output node n: its tensor (0 if it is not one) and
 * its argument index (positional, then keywords) in *at. */
ValueId fz_named_out(const Node *n, const OutVariant *ov, uint32_t k, uint32_t *at)
{
	Sym name = sym_cstr(ov->out[k]);
	const Arg *a = NULL;
	*at = ov->npos + k;
	if (n->nargs > ov->npos)
		a = *at < n->nargs ? &n->args[*at] : NULL;
	for (uint32_t i = 0; n->nargs <= ov->npos && i < n->nkw; i++)
		if (n->kw[i].name == name) {
			*at = n->nargs + i;
			a = &n->kw[i].val;
		}
	return a && a->kind == A_VALUE ? a->u.v : VNONE;
}

static int named_outs(Functionalize *f, Node *n, const OutVariant *ov, Node *next)
{
	uint32_t at[2];
	ValueId c[2];
	for (uint32_t k = 0; k < 2; k++) {
		ValueId v = fz_named_out(n, ov, k, &at[k]);
		if (!v) {
			char what[128];
			snprintf(what, sizeof what, "output %s must name one tensor", ov->out[k]);
			return fz_fail(f, n, what);
		}
		c[k] = fz_canon(f, v);
	}
	drop_arg(n, at[0] > at[1] ? at[0] : at[1]);
	drop_arg(n, at[0] > at[1] ? at[1] : at[0]);
	fz_rewrite_operands(f, n);
	fz_rename_op(n, sym_cstr(ov->functional));
	if (n->nres < 2) {
		ValueId *res = ARENA_ARRAY(&f->m->arena, ValueId, 2);
		res[0] = n->nres ? n->res[0] : VNONE;
		res[1] = VNONE;
		n->res = res;
		n->nres = 2;
	}
	for (uint32_t k = 0; k < 2; k++) {
		ValueId r = n->res[k] ? n->res[k] :
			    fz_new_result(f, n, k, val(f->m, c[k])->name, val(f->m, c[k])->type);
		if (r < f->nst)
			fz_st(f, r)->canon = c[k];
		fz_write_back(f, c[k], r, n, next);
	}
	return 0;
}

/* The view op an in-place op stands for when it changes only its tensor's
 * shape and strides (transpose_ -> transpose.int, t_, squeeze_.dim,
 * unsqueeze_, as_strided_...); OP_GENERIC when it writes data. */
OpId fz_shape_view(Sym fname)
{
	char buf[256];
	const char *s = sym_str(fname);
	if (!strcmp(s, "swapaxes") || !strcmp(s, "swapdims"))   /* transpose's aliases */
		return OP_ATEN_transpose_int;
	OpId op = op_lookup(S_aten, fname);
	if (op == OP_GENERIC && snprintf(buf, sizeof buf, "%s.int", sym_str(fname)) < (int)sizeof buf)
		op = op_lookup(S_aten, sym_cstr(buf));
	return op != OP_GENERIC && (op_info[op].flags & OPF_VIEW) ? op : OP_GENERIC;
}

/* Static element count of t; -1 when a dim is unknown. */
static int64_t static_numel(const Type *t)
{
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return -1;
	int64_t k = 1;
	for (int32_t i = 0; i < t->rank; i++) {
		if (t->dims[i].sym || t->dims[i].v < 0)
			return -1;
		k *= t->dims[i].v;
	}
	return k;
}

/* resize_(%x, [sizes]) with literal sizes and a static %x.  To as many
 * elements it is a shape change, a view(%x, sizes) of the same storage
 * (as transpose_); to fewer, the storage keeps its first elements:
 * view(slice(view(%x, [n]), 0, 0, k), sizes) is its new contents.  To more
 * it returns -1: the caller makes it the functional resize like any other
 * in-place op (the library fills the new elements with zeros). */
static int resize_inplace(Functionalize *f, Node *n, ValueId c0, Node *next)
{
	const Arg *size = n->nargs >= 2 ? &n->args[1] : NULL;
	int64_t k = 1;
	for (uint32_t i = 0; size && size->kind == A_LIST && i < size->n; i++)
		k = size->u.list[i].kind == A_INT && size->u.list[i].u.i >= 0 && k < (INT64_C(1) << 40) ?
			    k * size->u.list[i].u.i : -1;
	if (!size || size->kind != A_LIST || k < 0)
		return fz_fail(f, n, "resize_ needs literal sizes");
	ValueId x = n->args[0].u.v;
	Type *t = val(f->m, c0)->type;
	int64_t m = static_numel(t);
	if (m < 0)
		return fz_fail(f, n, "resize_ needs the tensor's static shape");
	if (k > m)
		return -1;              /* grows: the functional resize, new elements zero */
	if (k < m && fz_st(f, c0)->base)
		return fz_fail(f, n, "resize_ to fewer elements of a view");
	Arg sz = arg_copy(&f->m->arena, size);
	if (k < m) {
		Dim dm = { m, 0 }, dk = { k, 0 };
		Node *flat = fz_make(f, OP_ATEN_view_default, 2, 0, n, n, val(f->m, c0)->name,
				  type_tensor(&f->m->arena, t->dtype, 1, &dm));
		Arg *l = ARENA_ARRAY(&f->m->arena, Arg, 1);
		l[0] = fz_iarg(m);
		flat->args[0] = fz_varg(x);
		flat->args[1] = (Arg){ .kind = A_LIST, .elem = A_INT, .n = 1, .u.list = l };
		Node *part = fz_make(f, OP_ATEN_slice_Tensor, 4, 0, n, n, val(f->m, c0)->name,
				  type_tensor(&f->m->arena, t->dtype, 1, &dk));
		part->args[0] = fz_varg(flat->res[0]);
		part->args[1] = fz_iarg(0);
		part->args[2] = fz_iarg(0);
		part->args[3] = fz_iarg(k);
		x = part->res[0];
	}
	fz_recall(f, n, OP_ATEN_view_default, 2, 0);
	n->args[0] = fz_varg(x);
	n->args[1] = sz;
	if (k < m) {
		mutated(f, n, c0, next);
	} else if (n->nres && n->res[0]) {
		fz_note_view(f, n, c0);
	}
	return 0;
}

/* n, an ATen node: its operands read their storages' latest versions; a
 * mutating op becomes functional, a view is recorded. */
int fz_visit_aten(Functionalize *f, Node *n, Node *next)
{
	const OutVariant *ov = fz_out_variant_of(n);
	if (ov)
		return named_outs(f, n, ov, next);
	for (uint32_t k = 0; k < n->nkw; k++)
		if (n->kw[k].name == S_out)
			return out_variant(f, n, k, next);
	ValueId c0 = n->nargs && n->args[0].kind == A_VALUE && n->args[0].u.v ?
			     fz_canon(f, n->args[0].u.v) : VNONE;
	Sym fname = fz_functional_name(n->name);
	fz_rewrite_operands(f, n);
	if (fname && !c0)
		return fz_fail(f, n, "an in-place op needs a tensor first argument");
	int rs = fname && !strcmp(sym_str(fname), "resize") ? resize_inplace(f, n, c0, next) : -1;
	if (rs >= 0)
		return rs;
	/* A shape-changing in-place op writes nothing: its result (which later
	 * nodes use for the tensor, as make_fx records them) is a new view of
	 * the same storage, and views taken before keep their shapes. */
	if (fname && fz_shape_view(fname) != OP_GENERIC) {
		fz_rename_op(n, op_name_of(fz_shape_view(fname)));
		if (n->nres && n->res[0])
			fz_note_view(f, n, c0);
		return 0;
	}
	if (fname)
		return inplace(f, n, c0, fname, next);
	if (fz_is_view(n))
		fz_note_view(f, n, c0);
	return 0;
}
