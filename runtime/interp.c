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

const char *rt_attr_str(const KCtx *k, const char *name, const char *dflt, char *buf, size_t n)
{
	const Arg *a = rt_attr(k, name);
	if (!a || a->kind != A_STR)
		return dflt;
	size_t len = a->u.s.n < n - 1 ? a->u.s.n : n - 1;
	memcpy(buf, a->u.s.s, len);
	buf[len] = 0;
	return buf;
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

Kernel rt_node_kernel(const Node *n)
{
	if (n->domain == S_onnx && n->op != OP_GENERIC)
		return rt_kernel(n->op);
	return n->op == OP_GENERIC ? rt_ms_kernel(n->domain, n->name) : NULL;
}

int rt_module_opset(const Module *m)
{
	return (int)opsets_onnx(&m->opsets, 18);
}

Status rt_eval_node(const Node *n, int opset, RTensor *const *in, uint32_t nin, RTensor **out)
{
	char op[160];
	snprintf(op, sizeof op, "%s::%s", sym_str(n->domain), sym_str(n->name));
	Kernel kern = rt_node_kernel(n);
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
	int lazy;                   /* main-graph initializers are read at first use */
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

/* f on every value a node reads, those its subgraphs read included (at any
 * depth): an outer value a branch or loop body reads lives until the node
 * that owns the subgraph has run. */
static void each_use_deep(const Node *n, void (*f)(ValueId, void *), void *ctx);

typedef struct Deep { void (*f)(ValueId, void *); void *ctx; } Deep;

static void deep_graph(Graph *g, void *ctx)
{
	Deep *d = ctx;
	for (const Node *n = g->first; n; n = n->next)
		each_use_deep(n, d->f, d->ctx);
	for (uint32_t i = 0; i < g->nout; i++)
		d->f(g->out[i], d->ctx);
}

static void each_use_deep(const Node *n, void (*f)(ValueId, void *), void *ctx)
{
	Deep d = { f, ctx };
	node_each_use(n, f, ctx);
	node_each_subgraph(n, deep_graph, &d);
}

static Status bind_init(Run *r, ValueId id)
{
	const Value *v = val(r->m, id);
	/* A copy: the pages of the weights file or external data it was read
	 * from are released (rt_value_tensor). */
	r->vals[id] = v->kind != VK_CONST || v->init ? rt_value_tensor(&r->weights, id) : NULL;
	if (!r->vals[id]) {
		if (!diag_error_count())
			diag_error(v->loc, "constant '%s' has no tensor", sym_str(v->name));
		return FAILED;
	}
	if (r->observe && v->kind == VK_CONST)
		r->observe(r->octx, id, NULL, r->vals[id]);
	return OK;
}

static Status bind_inits(Run *r, const Graph *g)
{
	for (uint32_t i = 0; i < g->inits.n; i++)
		if (bind_init(r, g->inits.v[i]) != OK)
			return FAILED;
	return OK;
}

/* A main-graph initializer not read yet (lazy runs): read now.  It is
 * freed after its last use like any value, so a run holds the weights of
 * the nodes it is at, not all of them. */
static Status bind_lazy(Run *r, ValueId id)
{
	ValueKind kind = val(r->m, id)->kind;
	if (!r->lazy || r->vals[id] || (kind != VK_CONST && kind != VK_PARAM && kind != VK_BUFFER))
		return OK;
	return bind_init(r, id);
}

/* Positional arguments of an ONNX node are values or `none`. */
static Status gather_inputs(Run *r, const Node *n, RTensor **in)
{
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Arg *a = &n->args[i];
		in[i] = NULL;
		if (a->kind == A_NONE)
			continue;
		if (a->kind == A_VALUE && bind_lazy(r, a->u.v) != OK)
			return FAILED;
		if (a->kind != A_VALUE || !r->vals[a->u.v]) {
			diag_error(n->loc, "%s::%s: input %u is not a tensor the runtime has computed", sym_str(n->domain),
				sym_str(n->name), i);
			return FAILED;
		}
		in[i] = r->vals[a->u.v];
	}
	return OK;
}

static Status run_control(Run *r, const Node *n, RTensor *const *in, RTensor **out);

/* top: a node of the main graph, whose uses are dropped as it runs; a node
 * of a subgraph keeps its operands (a loop body runs again) and replaces
 * the results of its last run. */
static Status run_node(Run *r, const Node *n, int top)
{
	RTensor **in = xcalloc(n->nargs + 1, sizeof *in), **out = xcalloc(n->nres + 1, sizeof *out);
	Status s = gather_inputs(r, n, in);
	if (s == OK)
		s = n->domain == S_onnx && (n->op == OP_ONNX_If || n->op == OP_ONNX_Loop)
			? run_control(r, n, in, out) : rt_eval_node(n, r->opset, in, n->nargs, out);
	for (uint32_t i = 0; s == OK && i < n->nres; i++) {
		if (n->res[i]) {
			rt_free(r->vals[n->res[i]]);
			r->vals[n->res[i]] = out[i];
		} else {
			rt_free(out[i]);
		}
	}
	for (uint32_t i = 0; s == OK && top && r->observe && i < n->nres; i++)
		if (n->res[i])
			r->observe(r->octx, n->res[i], n, r->vals[n->res[i]]);
	if (s == OK && top)
		each_use_deep(n, drop_use, r);
	free(in);
	free(out);
	return s;
}

/* Runs subgraph g on args (its formal inputs, in order) and copies its
 * outputs into outs; the values g defines are freed again. */
static Status run_sub(Run *r, const Graph *g, RTensor *const *args, uint32_t nargs, RTensor **outs)
{
	Status s = OK;
	uint32_t k = 0;
	for (uint32_t i = 0; s == OK && i < g->nin; i++) {
		ValueId id = g->in[i];
		if (val(r->m, id)->kind != VK_INPUT)
			continue;
		if (k >= nargs || !args[k]) {
			diag_error(g->loc, "subgraph input %u has no value", k);
			s = FAILED;
		} else if (!(r->vals[id] = rt_copy(val(r->m, id)->loc, args[k]))) {
			s = FAILED;
		}
		k++;
	}
	if (s == OK)
		s = bind_inits(r, g);
	for (const Node *n = g->first; s == OK && n; n = n->next)
		s = run_node(r, n, 0);
	for (uint32_t i = 0; s == OK && i < g->nout; i++) {
		const RTensor *t = r->vals[g->out[i]];
		if (!t) {
			diag_error(g->loc, "subgraph output %u was not computed", i);
			s = FAILED;
		} else if (!(outs[i] = rt_copy(g->loc, t))) {
			s = FAILED;
		}
	}
	for (uint32_t i = 0; s != OK && i < g->nout; i++) {
		rt_free(outs[i]);
		outs[i] = NULL;
	}
	for (uint32_t i = 0; i < g->nin; i++) {
		rt_free(r->vals[g->in[i]]);
		r->vals[g->in[i]] = NULL;
	}
	for (const Node *n = g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++)
			if (n->res[i]) {
				rt_free(r->vals[n->res[i]]);
				r->vals[n->res[i]] = NULL;
			}
	return s;
}

/* ---- control flow ------------------------------------------------------------ */

static const Graph *graph_attr(const Node *n, const char *name)
{
	const Named *k = node_kw(n, sym_cstr(name));
	return k && k->val.kind == A_GRAPH ? k->val.u.g : NULL;
}

static int truth(const RTensor *t, int *v)
{
	if (!t || t->numel != 1)
		return 0;
	*v = t->dtype == DT_BOOL ? t->data[0] != 0 : rt_get_i(t, 0) != 0;
	return 1;
}

/* Scan outputs: the iterations' tensors stacked on a new first axis. */
static RTensor *stack(Loc loc, RTensor **parts, int64_t n)
{
	const RTensor *p = parts[0];
	int64_t shape[RT_MAX_RANK];
	if (p->rank + 1 > RT_MAX_RANK) {
		diag_error(loc, "a scan output of rank %d is past the runtime's rank limit", p->rank + 1);
		return NULL;
	}
	shape[0] = n;
	memcpy(shape + 1, p->shape, sizeof *shape * (size_t)p->rank);
	RTensor *t = rt_new(loc, p->dtype, p->rank + 1, shape);
	for (int64_t i = 0; t && i < n; i++) {
		if (parts[i]->dtype != p->dtype || parts[i]->nbytes != p->nbytes) {
			diag_error(loc, "scan output of iteration %lld differs in shape from the first", (long long)i);
			rt_free(t);
			return NULL;
		}
		memcpy(t->data + (size_t)i * p->nbytes, parts[i]->data, p->nbytes);
	}
	return t;
}

static Status run_if(Run *r, const Node *n, RTensor *const *in, RTensor **out)
{
	int c;
	if (!truth(in[0], &c)) {
		diag_error(n->loc, "onnx::If: the condition must be one element");
		return FAILED;
	}
	const Graph *g = graph_attr(n, c ? "then_branch" : "else_branch");
	if (!g || g->nout != n->nres) {
		diag_error(n->loc, "onnx::If: the %s branch is missing or gives %u results for %u", c ? "then" : "else",
			   g ? g->nout : 0, n->nres);
		return FAILED;
	}
	return run_sub(r, g, NULL, 0, out);
}

/* Loop(M, cond, v...): body(iter, cond, v...) -> (cond, v..., scan...). */
static Status run_loop(Run *r, const Node *n, RTensor *const *in, RTensor **out)
{
	const Graph *body = graph_attr(n, "body");
	uint32_t nv = n->nargs > 2 ? n->nargs - 2 : 0;
	if (!body || n->nargs < 2 || body->nout < 1 + nv || n->nres != body->nout - 1) {
		diag_error(n->loc, "onnx::Loop: the body does not match the node's carried values and results");
		return FAILED;
	}
	uint32_t nscan = body->nout - 1 - nv;
	int keep = 1;
	int64_t trips = -1;
	if (in[0] && (in[0]->numel != 1 || (trips = rt_get_i(in[0], 0)) < 0)) {
		diag_error(n->loc, "onnx::Loop: the trip count must be one non-negative integer");
		return FAILED;
	}
	if (in[1] && !truth(in[1], &keep)) {
		diag_error(n->loc, "onnx::Loop: the condition must be one element");
		return FAILED;
	}
	if (!in[0] && !in[1]) {
		diag_error(n->loc, "onnx::Loop: neither a trip count nor a condition: the loop would not end");
		return FAILED;
	}
	RTensor **args = xcalloc(nv + 2, sizeof *args), **res = xcalloc(body->nout, sizeof *res);
	RTensor ***scans = xcalloc(nscan + 1, sizeof *scans);
	int64_t it = 0, cap = 0;
	Status s = OK;
	args[0] = rt_new(n->loc, DT_I64, 0, NULL);
	args[1] = rt_new(n->loc, DT_BOOL, 0, NULL);
	for (uint32_t i = 0; i < nv; i++)
		args[i + 2] = in[i + 2] ? rt_copy(n->loc, in[i + 2]) : NULL;
	if (!args[0] || !args[1])
		s = FAILED;
	while (s == OK && keep && (trips < 0 || it < trips)) {
		rt_set_i(args[0], 0, it);
		args[1]->data[0] = 1;
		s = run_sub(r, body, args, nv + 2, res);
		if (s != OK)
			break;
		if (in[1] && !truth(res[0], &keep)) {
			diag_error(n->loc, "onnx::Loop: the body's condition must be one element");
			s = FAILED;
		}
		rt_free(res[0]);
		res[0] = NULL;
		for (uint32_t i = 0; i < nv; i++) {
			rt_free(args[i + 2]);
			args[i + 2] = res[i + 1];
			res[i + 1] = NULL;
		}
		if (it == cap) {
			cap = cap ? 2 * cap : 8;
			for (uint32_t j = 0; j < nscan; j++)
				scans[j] = xrealloc(scans[j], (size_t)cap * sizeof **scans);
		}
		for (uint32_t j = 0; j < nscan; j++) {
			scans[j][it] = res[1 + nv + j];
			res[1 + nv + j] = NULL;
		}
		it++;
	}
	for (uint32_t i = 0; s == OK && i < nv; i++) {
		out[i] = args[i + 2];
		args[i + 2] = NULL;
	}
	for (uint32_t j = 0; s == OK && j < nscan; j++) {
		if (!it) {
			diag_error(n->loc, "onnx::Loop: a scan output of no iterations has no shape the runtime can give");
			s = FAILED;
		} else if (!(out[nv + j] = stack(n->loc, scans[j], it))) {
			s = FAILED;
		}
	}
	for (uint32_t j = 0; j < nscan; j++) {
		for (int64_t i = 0; i < it; i++)
			rt_free(scans[j][i]);
		free(scans[j]);
	}
	for (uint32_t i = 0; i < nv + 2; i++)
		rt_free(args[i]);
	for (uint32_t i = 0; i < body->nout; i++)
		rt_free(res[i]);
	free(scans);
	free(args);
	free(res);
	return s;
}

static Status run_control(Run *r, const Node *n, RTensor *const *in, RTensor **out)
{
	return n->op == OP_ONNX_If ? run_if(r, n, in, out) : run_loop(r, n, in, out);
}


static Status run_nodes(Run *r, const RTensor *const *feeds)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < r->g->nin; i++) {
		ValueId id = r->g->in[i];
		if (val(r->m, id)->kind == VK_INPUT && !(r->vals[id] = rt_copy(val(r->m, id)->loc, feeds[k++])))
			return FAILED;
	}
	/* An observer sees every constant up front; otherwise initializers
	 * are read when first used. */
	r->lazy = !r->observe;
	if (!r->lazy && bind_inits(r, r->g) != OK)
		return FAILED;
	for (const Node *n = r->g->first; n; n = n->next)
		each_use_deep(n, count_use, r);
	/* Graph outputs hold one use each, so they are never freed early. */
	for (uint32_t i = 0; i < r->g->nout; i++)
		r->uses[r->g->out[i]]++;
	for (const Node *n = r->g->first; n; n = n->next)
		if (run_node(r, n, 1) != OK)
			return FAILED;
	for (uint32_t i = 0; i < r->g->nout; i++)
		if (bind_lazy(r, r->g->out[i]) != OK)
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
		  observe, octx, 0 };
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

static const Node *first_unrunnable(const Graph *g)
{
	for (const Node *n = g->first; n; n = n->next) {
		if (n->domain == S_onnx && (n->op == OP_ONNX_If || n->op == OP_ONNX_Loop)) {
			const char *names[2] = { n->op == OP_ONNX_If ? "then_branch" : "body", "else_branch" };
			for (int i = 0; i < (n->op == OP_ONNX_If ? 2 : 1); i++) {
				const Graph *sub = graph_attr(n, names[i]);
				const Node *bad = sub ? first_unrunnable(sub) : n;
				if (bad)
					return bad;
			}
			continue;
		}
		if (!rt_node_kernel(n))
			return n;
	}
	return NULL;
}

const Node *rt_first_unrunnable(const Module *m)
{
	return first_unrunnable(m->graphs.v[0]);
}
