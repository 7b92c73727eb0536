/* interp.c - the interpreter: runs a module's main graph node by node with
 * the reference kernels, and gives kernels their node's attributes.
 *
 * Values live in a table by ValueId; each is freed after its last use, so
 * a run holds only the tensors still needed (plus the graph's outputs).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

/* ---- what kernels ask of their node --------------------------------------- */

Status rt_fail(const KCtx *k, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error(k->n->loc, "%s: %s", k->op, msg);
	return FAILED;
}

Status rt_unsupported(const KCtx *k, const RTensor *t)
{
	return rt_fail(k, "unsupported dtype %s", dtype_name(t->dtype));
}

/* By spelling: a node has a handful of attributes, and comparing their
 * names costs less than interning the one asked for. */
const Arg *rt_attr(const KCtx *k, const char *name)
{
	for (uint32_t i = 0; i < k->n->nkw; i++)
		if (strcmp(sym_str(k->n->kw[i].name), name) == 0)
			return &k->n->kw[i].val;
	return NULL;
}

DType rt_attr_dtype(const KCtx *k, const char *name)
{
	const Arg *a = rt_attr(k, name);
	if (a && a->kind == A_DTYPE)
		return (DType)a->u.i;
	return a && a->kind == A_INT ? dtype_from_onnx((int)a->u.i) : DT_UNDEF;
}

int64_t rt_attr_int(const KCtx *k, const char *name, int64_t dflt)
{
	const Arg *a = rt_attr(k, name);
	return a && (a->kind == A_INT || a->kind == A_BOOL) ? a->u.i : dflt;
}

double rt_attr_float(const KCtx *k, const char *name, double dflt)
{
	const Arg *a = rt_attr(k, name);
	if (a && a->kind == A_FLOAT)
		return a->u.f;
	return a && a->kind == A_INT ? (double)a->u.i : dflt;
}

Status rt_attr_ints(const KCtx *k, const char *name, int64_t **v, int64_t *n)
{
	const Arg *a = rt_attr(k, name);
	*v = NULL;
	*n = -1;
	if (!a)
		return OK;
	if (a->kind != A_LIST)
		return rt_fail(k, "attribute '%s' must be a list of ints", name);
	*v = xcalloc(a->n + 1, sizeof **v);
	for (uint32_t i = 0; i < a->n; i++) {
		if (a->u.list[i].kind != A_INT) {
			free(*v);
			*v = NULL;
			return rt_fail(k, "attribute '%s' must be a list of ints", name);
		}
		(*v)[i] = a->u.list[i].u.i;
	}
	*n = a->n;
	return OK;
}

Status rt_input_ints(const KCtx *k, const RTensor *t, int64_t **v, int64_t *n)
{
	*v = NULL;
	*n = -1;
	if (!t)
		return OK;
	if (t->dtype != DT_I64 && t->dtype != DT_I32)
		return rt_fail(k, "expected an i64 or i32 tensor of ints, got %s", dtype_name(t->dtype));
	if (t->rank > 1)
		return rt_fail(k, "expected a 1-D tensor of ints, got rank %d", (int)t->rank);
	*v = xcalloc((size_t)t->numel + 1, sizeof **v);
	for (int64_t i = 0; i < t->numel; i++)
		(*v)[i] = rt_get_i(t, i);
	*n = t->numel;
	return OK;
}

Status rt_axis(const KCtx *k, int64_t axis, int32_t rank, int32_t *out)
{
	if (axis < -(int64_t)rank || axis >= rank)
		return rt_fail(k, "axis %lld is out of range for rank %d", (long long)axis, (int)rank);
	*out = (int32_t)(axis < 0 ? axis + rank : axis);
	return OK;
}

/* ---- nodes ------------------------------------------------------------------- */

Kernel rt_kernel(OpId op)
{
	if (op == OP_GENERIC || op >= OP_COUNT || op_info[op].dom != DOM_ONNX)
		return NULL;
	Kernel k = rt_elem_kernel(op);
	if (!k)
		k = rt_shape_kernel(op);
	if (!k)
		k = rt_math_kernel(op);
	if (!k)
		k = rt_nn_kernel(op);
	return k;
}

int rt_module_opset(const Module *m)
{
	return (int)opsets_onnx(&m->opsets, 18);
}

Status rt_eval_node(const Node *n, int opset, RTensor *const *in, uint32_t nin, RTensor **out)
{
	char op[160];
	snprintf(op, sizeof op, "%s::%s", sym_str(n->domain), sym_str(n->name));
	Kernel kern = n->domain == S_onnx ? rt_kernel(n->op) : NULL;
	if (!kern) {
		diag_error(n->loc, "no runtime kernel for %s", op);
		return FAILED;
	}
	KCtx k = { n, op, opset };
	for (uint32_t i = 0; i < n->nres; i++)
		out[i] = NULL;
	Status s = kern(&k, in, nin, out, n->nres);
	for (uint32_t i = 0; s == OK && i < n->nres; i++)
		if (!out[i])
			s = rt_fail(&k, "output %u is not produced", i);
	if (s != OK)
		for (uint32_t i = 0; i < n->nres; i++) {
			rt_free(out[i]);
			out[i] = NULL;
		}
	return s;
}

/* ---- graphs ------------------------------------------------------------------ */

typedef struct Run {
	Module *m;
	Graph *g;
	RtWeights weights;
	int opset;
	RTensor **vals;             /* by ValueId */
	uint32_t *uses;             /* remaining uses by ValueId */
	RtObserve observe;          /* may be NULL */
	void *octx;
} Run;

static void count_use(ValueId v, void *ctx)
{
	((Run *)ctx)->uses[v]++;
}

static void drop_use(ValueId v, void *ctx)
{
	Run *r = ctx;
	if (r->uses[v] && --r->uses[v] == 0) {
		rt_free(r->vals[v]);
		r->vals[v] = NULL;
	}
}

static Status bind_inits(Run *r)
{
	for (uint32_t i = 0; i < r->g->inits.n; i++) {
		ValueId id = r->g->inits.v[i];
		const Value *v = val(r->m, id);
		if (v->kind == VK_CONST)
			r->vals[id] = v->init ? rt_from_ir(v->loc, v->init) : NULL;
		else
			r->vals[id] = rt_weight(&r->weights, id);
		if (!r->vals[id]) {
			if (!diag_error_count())
				diag_error(v->loc, "constant '%s' has no tensor", sym_str(v->name));
			return FAILED;
		}
		if (r->observe && v->kind == VK_CONST)
			r->observe(r->octx, id, NULL, r->vals[id]);
	}
	return OK;
}

/* Positional arguments of an ONNX node are values or `none`. */
static Status gather_inputs(Run *r, const Node *n, RTensor **in)
{
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Arg *a = &n->args[i];
		in[i] = NULL;
		if (a->kind == A_NONE)
			continue;
		if (a->kind != A_VALUE || !r->vals[a->u.v]) {
			diag_error(n->loc, "%s::%s: input %u is not a tensor the runtime has computed", sym_str(n->domain),
				sym_str(n->name), i);
			return FAILED;
		}
		in[i] = r->vals[a->u.v];
	}
	return OK;
}

static Status run_node(Run *r, const Node *n)
{
	RTensor **in = xcalloc(n->nargs + 1, sizeof *in), **out = xcalloc(n->nres + 1, sizeof *out);
	Status s = gather_inputs(r, n, in);
	if (s == OK)
		s = rt_eval_node(n, r->opset, in, n->nargs, out);
	for (uint32_t i = 0; s == OK && i < n->nres; i++) {
		if (n->res[i])
			r->vals[n->res[i]] = out[i];
		else
			rt_free(out[i]);
	}
	for (uint32_t i = 0; s == OK && r->observe && i < n->nres; i++)
		if (n->res[i])
			r->observe(r->octx, n->res[i], n, r->vals[n->res[i]]);
	if (s == OK)
		node_each_use(n, drop_use, r);
	free(in);
	free(out);
	return s;
}

static Status run_nodes(Run *r, const RTensor *const *feeds)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < r->g->nin; i++) {
		ValueId id = r->g->in[i];
		if (val(r->m, id)->kind == VK_INPUT && !(r->vals[id] = rt_copy(val(r->m, id)->loc, feeds[k++])))
			return FAILED;
	}
	if (bind_inits(r) != OK)
		return FAILED;
	for (const Node *n = r->g->first; n; n = n->next)
		node_each_use(n, count_use, r);
	/* Graph outputs hold one use each, so they are never freed early. */
	for (uint32_t i = 0; i < r->g->nout; i++)
		r->uses[r->g->out[i]]++;
	for (const Node *n = r->g->first; n; n = n->next)
		if (run_node(r, n) != OK)
			return FAILED;
	return OK;
}

Status rt_run_graph(Module *m, const char *weights_dir, RTensor *const *feeds, RTensor ***outs)
{
	return rt_run_graph_observe(m, weights_dir, feeds, outs, NULL, NULL);
}

Status rt_run_graph_observe(Module *m, const char *weights_dir, RTensor *const *feeds, RTensor ***outs,
			    RtObserve observe, void *octx)
{
	Run r = { m, m->graphs.v[0], { m, weights_dir ? weights_dir : ".", NULL }, rt_module_opset(m), NULL, NULL,
		  observe, octx };
	r.vals = xcalloc(m->vals.n, sizeof *r.vals);
	r.uses = xcalloc(m->vals.n, sizeof *r.uses);
	Status s = run_nodes(&r, (const RTensor *const *)feeds);
	*outs = NULL;
	if (s == OK) {
		*outs = xcalloc(r.g->nout + 1, sizeof **outs);
		for (uint32_t i = 0; i < r.g->nout; i++) {
			ValueId id = r.g->out[i];
			if (!r.vals[id] || !((*outs)[i] = rt_copy(val(m, id)->loc, r.vals[id]))) {
				if (!diag_error_count())
					diag_error(r.g->loc, "output %u was not computed", i);
				s = FAILED;
			}
		}
	}
	for (uint32_t i = 0; s != OK && *outs && i < r.g->nout; i++)
		rt_free((*outs)[i]);
	if (s != OK) {
		free(*outs);
		*outs = NULL;
	}
	for (uint32_t i = 0; i < m->vals.n; i++)
		rt_free(r.vals[i]);
	free(r.vals);
	free(r.uses);
	rt_weights_close(&r.weights);
	return s;
}

const Node *rt_first_unrunnable(const Module *m)
{
	for (const Node *n = m->graphs.v[0]->first; n; n = n->next)
		if (n->domain != S_onnx || !rt_kernel(n->op))
			return n;
	return NULL;
}
