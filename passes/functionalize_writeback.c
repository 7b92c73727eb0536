/* functionalize_writeback.c - writing a mutated view back into its base, link by link (see functionalize.c). */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

/* Argument `pos` of n, given positionally or as keyword `name`; NULL if
 * left out. */
static const Arg *arg_at(const Node *n, uint32_t pos, Sym name)
{
	if (pos < n->nargs)
		return &n->args[pos];
	const Named *k = node_kw(n, name);
	return k ? &k->val : NULL;
}

static int64_t int_at(const Node *n, uint32_t pos, Sym name, int64_t dflt, int *ok)
{
	const Arg *a = arg_at(n, pos, name);
	if (!a || a->kind == A_NONE)
		return dflt;
	if (a->kind != A_INT)
		*ok = 0;
	return a->kind == A_INT ? a->u.i : 0;
}


/* op(base, src, <the view's own arguments after self>): the scatter ops
 * share the view ops' schemas. */
static ValueId wb_scatter(WriteBack *w, OpId op)
{
	const Node *d = w->d;
	Node *n = fz_make(w->f, op, d->nargs + 1, d->nkw, w->at, w->before, w->name, w->ty);
	n->args[0] = fz_varg(w->base);
	n->args[1] = fz_varg(w->src);
	for (uint32_t i = 1; i < d->nargs; i++)
		n->args[i + 1] = arg_copy(&w->f->m->arena, &d->args[i]);
	for (uint32_t i = 0; i < d->nkw; i++)
		n->kw[i] = (Named){ d->kw[i].name, arg_copy(&w->f->m->arena, &d->kw[i].val) };
	return n->res[0];
}

/* op(src, a1, a2) with up to two copied or literal arguments. */
static ValueId wb_call(WriteBack *w, OpId op, uint32_t nargs, const Arg *a1, const Arg *a2)
{
	Node *n = fz_make(w->f, op, nargs, 0, w->at, w->before, w->name, w->ty);
	n->args[0] = fz_varg(w->src);
	if (nargs > 1)
		n->args[1] = arg_copy(&w->f->m->arena, a1);
	if (nargs > 2)
		n->args[2] = arg_copy(&w->f->m->arena, a2);
	return n->res[0];
}

/* slice_scatter(base, src, dim, start, end) with literal bounds. */
static ValueId wb_slice(WriteBack *w, int64_t dim, int64_t start, int64_t end)
{
	Node *n = fz_make(w->f, OP_ATEN_slice_scatter_default, 5, 0, w->at, w->before, w->name, w->ty);
	n->args[0] = fz_varg(w->base);
	n->args[1] = fz_varg(w->src);
	n->args[2] = fz_iarg(dim);
	n->args[3] = fz_iarg(start);
	n->args[4] = fz_iarg(end);
	return n->res[0];
}

/* The base's shape as an aten int list: known dims literally, the others
 * read with sym_size.int from the base's current version. */
int fz_shape_list(WriteBack *w, Arg *out)
{
	const Type *t = w->ty;
	if (!t || t->kind != TY_TENSOR || t->rank < 0)
		return 0;
	Arg *l = ARENA_ARRAY(&w->f->m->arena, Arg, t->rank ? t->rank : 1);
	for (int32_t i = 0; i < t->rank; i++) {
		if (!t->dims[i].sym && t->dims[i].v >= 0) {
			l[i] = fz_iarg(t->dims[i].v);
			continue;
		}
		Type *i64 = type_tensor(&w->f->m->arena, DT_I64, 0, NULL);
		Node *n = fz_make(w->f, OP_ATEN_sym_size_int, 2, 0, w->at, w->before, S_sym_size, i64);
		n->args[0] = fz_varg(w->base);
		n->args[1] = fz_iarg(i);
		l[i] = fz_varg(n->res[0]);
	}
	*out = (Arg){ .kind = A_LIST, .elem = A_INT, .n = (uint32_t)t->rank, .u.list = l };
	return 1;
}

/* Shape-only views: the contents keep their order, so view(src, shape). */
static ValueId wb_reshape(WriteBack *w)
{
	Arg shape;
	if (!fz_shape_list(w, &shape))
		return fz_fail(w->f, w->d, "writing back through a view needs the base's rank"), 0;
	return wb_call(w, OP_ATEN_view_default, 2, &shape, NULL);
}

static ValueId wb_permute(WriteBack *w)
{
	const Arg *p = arg_at(w->d, 1, S_dims);
	if (!p || p->kind != A_LIST)
		return fz_fail(w->f, w->d, "permute needs a literal dims list"), 0;
	int64_t n = p->n;
	Arg *inv = ARENA_ARRAY(&w->f->m->arena, Arg, n ? n : 1);
	for (int64_t i = 0; i < n; i++)
		inv[i].kind = A_NONE;
	for (int64_t i = 0; i < n; i++) {
		int64_t d = p->u.list[i].kind == A_INT ? p->u.list[i].u.i : n;
		d = d < 0 ? d + n : d;
		if (d < 0 || d >= n || inv[d].kind != A_NONE)
			return fz_fail(w->f, w->d, "permute dims are not a permutation"), 0;
		inv[d] = fz_iarg(i);
	}
	Arg l = { .kind = A_LIST, .elem = A_INT, .n = (uint32_t)n, .u.list = inv };
	return wb_call(w, OP_ATEN_permute_default, 2, &l, NULL);
}

/* squeeze.dim undoes to unsqueeze when the dim was 1; otherwise it was a
 * no-op or the size is unknown, and the base's shape says it all. */
static ValueId wb_squeeze_dim(WriteBack *w)
{
	int ok = 1;
	int64_t d = int_at(w->d, 1, S_dim, 0, &ok);
	const Type *t = w->ty;
	if (ok && t && t->kind == TY_TENSOR && t->rank > 0) {
		int64_t k = d < 0 ? d + t->rank : d;
		if (k >= 0 && k < t->rank && !t->dims[k].sym && t->dims[k].v == 1)
			return wb_call(w, OP_ATEN_unsqueeze_default, 2, arg_at(w->d, 1, S_dim), NULL);
	}
	return wb_reshape(w);
}

static ValueId wb_narrow(WriteBack *w)
{
	int ok = 1;
	int64_t dim = int_at(w->d, 1, S_dim, 0, &ok);
	int64_t start = int_at(w->d, 2, S_start, 0, &ok);
	int64_t len = int_at(w->d, 3, S_length, 0, &ok);
	if (!ok)
		return fz_fail(w->f, w->d, "narrow needs literal dim, start and length"), 0;
	return wb_slice(w, dim, start, start + len);
}

/* Result i of split.Tensor / split_with_sizes is a slice of its base. */
static ValueId wb_split(WriteBack *w, int sizes)
{
	int ok = 1;
	const Arg *s = arg_at(w->d, 1, sizes ? S_split_sizes : S_split_size);
	int64_t dim = int_at(w->d, 2, S_dim, 0, &ok);
	int64_t start = 0, len = 0;
	if (!sizes) {
		len = int_at(w->d, 1, S_split_size, 0, &ok);
		start = len * w->res;
	} else if (s && s->kind == A_LIST && w->res < s->n) {
		for (uint32_t i = 0; i <= w->res && ok; i++) {
			ok = s->u.list[i].kind == A_INT;
			start += len;
			len = ok ? s->u.list[i].u.i : 0;
		}
	} else {
		ok = 0;
	}
	if (!ok)
		return fz_fail(w->f, w->d, "split needs literal sizes and dim"), 0;
	return wb_slice(w, dim, start, start + len);
}

static ValueId wb_unbind(WriteBack *w)
{
	int ok = 1;
	int64_t dim = int_at(w->d, 1, S_dim, 0, &ok);
	if (!ok)
		return fz_fail(w->f, w->d, "unbind needs a literal dim"), 0;
	Node *n = fz_make(w->f, OP_ATEN_select_scatter_default, 4, 0, w->at, w->before, w->name, w->ty);
	n->args[0] = fz_varg(w->base);
	n->args[1] = fz_varg(w->src);
	n->args[2] = fz_iarg(dim);
	n->args[3] = fz_iarg(w->res);
	return n->res[0];
}

/* The base's new version given the view's new contents; 0 on error. */
static ValueId write_link(WriteBack *w)
{
	const Node *d = w->d;
	switch (d->op) {
	case OP_ATEN_slice_Tensor: return wb_scatter(w, OP_ATEN_slice_scatter_default);
	case OP_ATEN_select_int: return wb_scatter(w, OP_ATEN_select_scatter_default);
	case OP_ATEN_diagonal_default: return wb_scatter(w, OP_ATEN_diagonal_scatter_default);
	case OP_ATEN_as_strided_default: return wb_scatter(w, OP_ATEN_as_strided_scatter_default);
	case OP_ATEN_narrow_default: return wb_narrow(w);
	case OP_ATEN_split_Tensor: return wb_split(w, 0);
	case OP_ATEN_split_with_sizes_default: return wb_split(w, 1);
	case OP_ATEN_unbind_int: return wb_unbind(w);
	case OP_ATEN_transpose_int:
		return wb_call(w, OP_ATEN_transpose_int, 3, arg_at(d, 1, S_dim0), arg_at(d, 2, S_dim1));
	case OP_ATEN_t_default: return wb_call(w, OP_ATEN_t_default, 1, NULL, NULL);
	case OP_ATEN_permute_default: return wb_permute(w);
	case OP_ATEN_movedim_int:
		return wb_call(w, OP_ATEN_movedim_int, 3, arg_at(d, 2, S_destination), arg_at(d, 1, S_source));
	case OP_ATEN_unsqueeze_default: return wb_call(w, OP_ATEN_squeeze_dim, 2, arg_at(d, 1, S_dim), NULL);
	case OP_ATEN_squeeze_dim: return wb_squeeze_dim(w);
	case OP_ATEN_view_as_real_default: return wb_call(w, OP_ATEN_view_as_complex_default, 1, NULL, NULL);
	case OP_ATEN_view_as_complex_default: return wb_call(w, OP_ATEN_view_as_real_default, 1, NULL, NULL);
	case OP_ATEN_alias_default:
	case OP_ATEN_detach_default: return w->src;
	case OP_ATEN_view_default:
	case OP_ATEN__unsafe_view_default:
	case OP_ATEN__reshape_alias_default:
	case OP_ATEN_view_as_default:
	case OP_ATEN_squeeze_default:
	case OP_ATEN_squeeze_dims:
	case OP_ATEN_unflatten_int: return wb_reshape(w);
	default:
		return fz_fail(w->f, d, "cannot write a mutation back through this view"), 0;
	}
}

/* Storage c now holds v.  A view passes its new contents on to its base,
 * up to the root, whose mutation count goes up; returns that count (every
 * link of the chain reflects it). */
uint32_t fz_write_back(Functionalize *f, ValueId c, ValueId v, const Node *at, Node *before)
{
	fz_touch(f, c);
	VState *s = fz_st(f, c);
	s->cur = v;
	if (!s->base)
		return ++s->ver;
	Value *bv = val(f->m, s->base);
	WriteBack w = { f, s->vdef, val(f->m, c)->res, fz_current(f, s->base, before), v, bv->type, bv->name,
		 at, before };
	ValueId nb = write_link(&w);
	if (!nb)
		return s->ver;
	s->ver = fz_write_back(f, s->base, nb, at, before);
	return s->ver;
}
