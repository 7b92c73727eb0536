/* complex.c - complex values as real tensors with a trailing dim of 2.
 *
 * ONNX's spectral ops (DFT, STFT) hold a complex tensor as its real and
 * imaginary parts in a trailing dim of 2, as PyTorch's view_as_real does.
 * While decompose lowers, a complex value keeps its c64/c128 type, so the
 * decompositions of the ops that take one tell it from a real tensor by its
 * dtype and see its rank as PyTorch does.  Only a decomposition whose guards
 * name a complex dtype lowers a call that reads or defines a complex value
 * (the others were written for real tensors and would be silently wrong on
 * the pairs; the library's aten::_onnxc_* helpers are exempt).  The complex
 * node results and graph inputs of every lowered call are collected, and at
 * the end of the pass each becomes real: c64[d..] is f32[d.., 2], c128 f64.
 * A complex value left (an ONNX node's of the source, a custom op's, a
 * weight or constant, whose data is not converted) is refused when ONNX is
 * written.
 */
#include <string.h>
#include "passes.h"

static int dtype_complex(int t) { return t == DT_C64 || t == DT_C128; }

static int value_complex(const Module *m, ValueId v)
{
	const Type *t = v ? val((Module *)m, v)->type : NULL;
	return t && t->kind == TY_TENSOR && dtype_complex(t->dtype);
}

/* Whether one of n arguments (lists included) is a complex value. */
static int any_value(const Module *m, const Arg *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if ((a[i].kind == A_VALUE && value_complex(m, a[i].u.v)) ||
		    (a[i].kind == A_LIST && any_value(m, a[i].u.list, a[i].n)))
			return 1;
	return 0;
}

int node_touches_complex(const Module *m, const Node *n)
{
	for (uint32_t i = 0; i < n->nres; i++)
		if (value_complex(m, n->res[i]))
			return 1;
	if (any_value(m, n->args, n->nargs))
		return 1;
	for (uint32_t i = 0; i < n->nkw; i++)
		if (any_value(m, &n->kw[i].val, 1))
			return 1;
	return 0;
}

static int lit_complex(const Arg *a)
{
	if (a->kind == A_DTYPE)
		return dtype_complex((int)a->u.i);
	for (uint32_t i = 0; a->kind == A_LIST && i < a->n; i++)
		if (lit_complex(&a->u.list[i]))
			return 1;
	return 0;
}

static int expr_complex(const GExpr *e)
{
	if (e->kind == GX_LIT && lit_complex(&e->lit))
		return 1;
	for (uint32_t i = 0; i < e->n; i++)
		if (expr_complex(e->sub[i]))
			return 1;
	return 0;
}

/* The library's helpers (aten::_onnxc_*) take the pairs as they are. */
int decomp_takes_complex(const Decomp *d)
{
	if (!strncmp(sym_str(d->name), "_onnxc_", 7))
		return 1;
	for (uint32_t i = 0; i < d->nguard; i++)
		if (expr_complex(d->guards[i].e))
			return 1;
	return 0;
}

/* Node results and graph inputs without data: a weight's or a constant's
 * type describes its data, which stays as it is. */
static int retypable(const Module *m, ValueId v)
{
	const Value *x = val((Module *)m, v);
	return value_complex(m, v) && (x->kind == VK_NODE || (x->kind == VK_INPUT && !x->init));
}

static void collect(const Module *m, ComplexVals *out, const Arg *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].kind == A_VALUE && retypable(m, a[i].u.v))
			XVEC_PUSH(*out, a[i].u.v);
		else if (a[i].kind == A_LIST)
			collect(m, out, a[i].u.list, a[i].n);
}

void complex_collect(const Module *m, ComplexVals *out, const Node *call)
{
	for (uint32_t i = 0; i < call->nres; i++)
		if (value_complex(m, call->res[i]))
			XVEC_PUSH(*out, call->res[i]);
	collect(m, out, call->args, call->nargs);
	for (uint32_t i = 0; i < call->nkw; i++)
		collect(m, out, &call->kw[i].val, 1);
}

/* A graph output made real is declared real too. */
static Status real_outputs(const GraphVisit *gv, void *ctx)
{
	Module *m = ctx;
	const Graph *g = gv->g;
	for (uint32_t i = 0; g->out_decl && i < g->nout; i++) {
		const Type *d = g->out_decl[i];
		if (d && d->kind == TY_TENSOR && dtype_complex(d->dtype) && !value_complex(m, g->out[i]))
			g->out_decl[i] = val(m, g->out[i])->type;
	}
	return OK;
}

void complex_make_real(Module *m, const ComplexVals *vs)
{
	for (uint32_t i = 0; i < vs->n; i++) {
		Value *v = val(m, vs->v[i]);
		if (!value_complex(m, vs->v[i]))
			continue;               /* listed twice */
		const Type *t = v->type;
		DType dt = t->dtype == DT_C64 ? DT_F32 : DT_F64;
		if (t->rank < 0) {
			v->type = type_tensor(&m->arena, dt, -1, NULL);
			continue;
		}
		Dim *d = arena_alloc(&m->arena, ((size_t)t->rank + 1) * sizeof *d);
		for (int32_t k = 0; k < t->rank; k++)
			d[k] = t->dims[k];
		d[t->rank] = (Dim){ .v = 2 };
		v->type = type_tensor(&m->arena, dt, t->rank + 1, d);
	}
	if (vs->n)
		module_walk(m, WALK_PROGRAM, real_outputs, m);
}

typedef struct Unlowered { const Module *m; uint32_t n; } Unlowered;

static void refuse(Unlowered *u, ValueId v, Loc loc)
{
	const Value *x = val((Module *)u->m, v);
	diag_error(loc, "complex value %%%s (%s) is not lowered: ONNX ops take complex numbers "
		   "as a trailing dim of 2, which only the decompositions of ATen ops produce",
		   sym_str(x->name), dtype_name((DType)x->type->dtype));
	u->n++;
}

static Status unlowered_graph(const GraphVisit *gv, void *ctx)
{
	Unlowered *u = ctx;
	const Graph *g = gv->g;
	for (uint32_t i = 0; i < g->nin; i++)
		if (value_complex(u->m, g->in[i]))
			refuse(u, g->in[i], val((Module *)u->m, g->in[i])->loc);
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (value_complex(u->m, g->inits.v[i]))
			refuse(u, g->inits.v[i], val((Module *)u->m, g->inits.v[i])->loc);
	for (const Node *n = g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++)
			if (value_complex(u->m, n->res[i]))
				refuse(u, n->res[i], n->loc);
	return OK;
}

uint32_t complex_report_unlowered(Module *m)
{
	Unlowered u = { m, 0 };
	module_walk(m, WALK_PROGRAM, unlowered_graph, &u);
	return u.n;
}
