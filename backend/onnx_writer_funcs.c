/* onnx_writer_funcs.c - the ONNX writer: opset imports and local functions.
 */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- opset imports --------------------------------------------------------- */

typedef VEC(Onnx__OperatorSetIdProto *) ProtoOpsets;

static int has_domain(const ProtoOpsets *v, const char *d)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i]->domain, d) == 0)
			return 1;
	return 0;
}

static void add_opset(Writer *w, ProtoOpsets *v, const char *dom, int64_t version)
{
	if (has_domain(v, dom))
		return;
	Onnx__OperatorSetIdProto *o = NEW(w, Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
	o->domain = (char *)dom;
	o->has_version = 1;
	o->version = version;
	VEC_PUSH(w->a, *v, o);
}

typedef struct DomainScan { Writer *w; ProtoOpsets *v; } DomainScan;

static Status scan_domains(const GraphVisit *gv, void *ctx)
{
	DomainScan *d = ctx;
	for (const Node *n = gv->g->first; n; n = n->next)
		add_opset(d->w, d->v, dom_str(d->w, n->domain), n->domain == d->w->s_onnx ? d->w->default_version : 1);
	return OK;
}

/* Every domain a graph's nodes use, subgraphs included: the graph's in
 * first-use order, then each subgraph's (module_walk's order). */
static void graph_domains(Writer *w, Graph *g, ProtoOpsets *v)
{
	graph_walk(g, scan_domains, &(DomainScan){ w, v });
}

static void declared_opsets(Writer *w, const Opset *o, uint32_t n, ProtoOpsets *v)
{
	for (uint32_t i = 0; i < n; i++)
		add_opset(w, v, dom_str(w, o[i].domain), o[i].version);
}

Onnx__OperatorSetIdProto **model_opsets(Writer *w, size_t *n)
{
	ProtoOpsets v = { 0 };
	declared_opsets(w, w->m->opsets.v, w->m->opsets.n, &v);
	add_opset(w, &v, "", w->default_version);
	for (uint32_t i = 0; i < w->m->graphs.n && i < 1; i++)
		graph_domains(w, w->m->graphs.v[i], &v);
	for (uint32_t i = 0; i < w->m->funcs.n; i++) {
		add_opset(w, &v, dom_str(w, w->m->funcs.v[i]->domain), 1);
		graph_domains(w, w->m->funcs.v[i]->body, &v);
	}
	*n = v.n;
	return v.v;
}

int64_t default_version(Writer *w)
{
	return opsets_onnx(&w->m->opsets, w->opt && w->opt->opset > 0 ? w->opt->opset : DEFAULT_OPSET);
}

/* ---- local functions -------------------------------------------------------- */

/* FunctionProto has no initializers: constants become Constant nodes. */
static Onnx__NodeProto *const_node(Writer *w, ValueId id)
{
	Onnx__TensorProto *t = init_proto(w, id);
	Onnx__NodeProto *p = NEW(w, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
	Onnx__AttributeProto *a = NEW(w, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
	if (!t) {
		w->failed = 1;
		return p;
	}
	t->name = NULL;
	a->name = "value";
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	a->t = t;
	p->op_type = "Constant";
	p->domain = "";
	p->name = afmt(w, "Constant_%s", vname(w, id));
	p->n_output = p->n_attribute = 1;
	p->output = PTRS(w, char, 1);
	p->output[0] = (char *)vname(w, id);
	p->attribute = PTRS(w, Onnx__AttributeProto, 1);
	p->attribute[0] = a;
	return p;
}

static void func_io(Writer *w, const Graph *g, Onnx__FunctionProto *p)
{
	p->input = PTRS(w, char, g->nin);
	for (uint32_t i = 0; i < g->nin; i++)
		if (is_input(val(w->m, g->in[i])))
			p->input[p->n_input++] = (char *)vname(w, g->in[i]);
}

/* FunctionProto has no typed inputs or outputs: their types, where the
 * body knows them, go into its value_info (field 12, IR version 10), so a
 * reader (onnxc itself, at -O2) can fuse inside the body.  An output given
 * through an Identity is named differently from its value and is left out. */
static void func_io_info(Writer *w, const Graph *g, const Onnx__FunctionProto *p, InfoVec *iv)
{
	for (uint32_t i = 0; i < g->nin; i++)
		if (is_input(val(w->m, g->in[i])) && val(w->m, g->in[i])->type)
			VEC_PUSH(w->a, *iv, value_info(w, g->in[i], NULL));
	for (uint32_t i = 0; i < g->nout; i++)
		if (val(w->m, g->out[i])->type && strcmp(p->output[i], vname(w, g->out[i])) == 0 &&
		    !is_input(val(w->m, g->out[i])))
			VEC_PUSH(w->a, *iv, value_info(w, g->out[i], NULL));
}

static void func_body(Writer *w, const Graph *g, Onnx__FunctionProto *p)
{
	NodeVec nv = { 0 };
	InfoVec iv = { 0 };
	for (uint32_t i = 0; i < g->inits.n; i++)
		VEC_PUSH(w->a, nv, const_node(w, g->inits.v[i]));
	graph_nodes(w, g, &nv);
	p->n_output = g->nout;
	p->output = PTRS(w, char, g->nout);
	for (uint32_t i = 0; i < g->nout; i++)
		p->output[i] = (char *)output_name(w, g, i, &nv);
	collect_info(w, g, &iv);
	func_io_info(w, g, p, &iv);
	p->n_node = nv.n;
	p->node = nv.v;
	p->n_value_info = iv.n;
	p->value_info = iv.v;
}

Onnx__FunctionProto *func_proto(Writer *w, const Func *f)
{
	Onnx__FunctionProto *p = NEW(w, Onnx__FunctionProto, ONNX__FUNCTION_PROTO__INIT);
	const char *s = sym_str(f->name), *dot = overload_dot(f->domain, s);
	p->domain = dom_str(w, f->domain);
	p->name = dot ? arena_strndup(w->a, s, (size_t)(dot - s)) : (char *)s;
	p->overload = dot ? (char *)dot + 1 : NULL;
	p->n_attribute = f->nattr;
	p->attribute = PTRS(w, char, f->nattr);
	for (uint32_t i = 0; i < f->nattr; i++)
		p->attribute[i] = cs(f->attrs[i]);
	w->func = f;
	func_io(w, f->body, p);
	func_body(w, f->body, p);
	w->func = NULL;
	p->doc_string = str_dup(w, f->body->doc);
	ProtoOpsets v = { 0 };
	declared_opsets(w, f->opsets.v, f->opsets.n, &v);
	graph_domains(w, f->body, &v);
	p->n_opset_import = v.n;
	p->opset_import = v.v;
	return p;
}
