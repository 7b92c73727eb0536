/* onnx_writer_graphs.c - the ONNX writer: nodes and graphs.
 */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- nodes and graphs ------------------------------------------------------ */

static int node_io(Writer *w, const Node *n, Onnx__NodeProto *p)
{
	p->n_input = n->nargs;
	p->input = PTRS(w, char, n->nargs);
	for (uint32_t i = 0; i < n->nargs; i++) {
		const Arg *a = &n->args[i];
		if (a->kind != A_VALUE && a->kind != A_NONE) {
			diag_error(n->loc, "argument %u of %s::%s is a literal, but ONNX inputs are values "
				"(decompose the node first)", i + 1, sym_str(n->domain), sym_str(n->name));
			return -1;
		}
		p->input[i] = (char *)(a->kind == A_VALUE ? vname(w, a->u.v) : "");
	}
	p->n_output = n->nres;
	p->output = PTRS(w, char, n->nres);
	for (uint32_t i = 0; i < n->nres; i++)
		p->output[i] = (char *)vname(w, n->res[i]);
	/* Omitted trailing optional inputs and outputs are left out rather than
	 * written as "": ONNX allows both, and ONNX Runtime's fusions (a
	 * BatchNormalization into a Conv without bias, MaxPool without
	 * indices) match only the shorter form. */
	while (p->n_input && !p->input[p->n_input - 1][0])
		p->n_input--;
	while (p->n_output && !p->output[p->n_output - 1][0])
		p->n_output--;
	return 0;
}

static void node_attrs(Writer *w, const Node *n, Onnx__NodeProto *p)
{
	p->attribute = PTRS(w, Onnx__AttributeProto, n->nkw);
	for (uint32_t i = 0; i < n->nkw; i++) {
		Onnx__AttributeProto *ap = attr_proto(w, n, &n->kw[i]);
		if (ap)
			p->attribute[p->n_attribute++] = ap;
	}
}

/* Where the IR's dotted spelling "op.overload" is an overload: in the ATen
 * domains, whose names are spelled that way.  Elsewhere a dot belongs to
 * the name (TorchScript names a second variant of a module's function
 * `Linear.1`), and splitting it would call another function. */
const char *overload_dot(Sym domain, const char *name)
{
	return domain == S_aten || domain == S__operator ? strchr(name, '.') : NULL;
}

static void node_op(Writer *w, const Node *n, Onnx__NodeProto *p)
{
	const char *s = sym_str(n->name), *dot = overload_dot(n->domain, s);
	p->domain = dom_str(w, n->domain);
	p->op_type = dot ? arena_strndup(w->a, s, (size_t)(dot - s)) : (char *)s;
	if (dot)
		p->overload = (char *)dot + 1;
}

static Onnx__NodeProto *node_proto(Writer *w, const Node *n, Names *nm)
{
	Onnx__NodeProto *p = NEW(w, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
	node_op(w, n, p);
	p->name = cs(n->node_name ? n->node_name : derive_name(nm, n));
	if (node_io(w, n, p) != 0) {
		w->failed = 1;
		return p;
	}
	node_attrs(w, n, p);
	p->doc_string = str_dup(w, n->doc);
	if (n->prov)
		prov_props(w, n->prov, p);
	return p;
}

Onnx__ValueInfoProto *value_info(Writer *w, ValueId v, const Type *t)
{
	Onnx__ValueInfoProto *p = NEW(w, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
	p->name = (char *)vname(w, v);
	p->type = type_proto(w, t ? t : val(w->m, v)->type);
	return p;
}

/* Typed results of nodes that are not outputs: ONNX's value_info. */
void collect_info(Writer *w, const Graph *g, InfoVec *iv)
{
	for (const Node *n = g->first; n; n = n->next)
		for (uint32_t i = 0; i < n->nres; i++) {
			ValueId v = n->res[i];
			int is_out = 0;
			for (uint32_t o = 0; o < g->nout && !is_out; o++)
				is_out = g->out[o] == v;
			if (v && val(w->m, v)->type && !is_out)
				VEC_PUSH(w->a, *iv, value_info(w, v, NULL));
		}
}

/* Explicit names are reserved first so derived ones never collide. */
void graph_nodes(Writer *w, const Graph *g, NodeVec *nv)
{
	Names nm = { .a = w->a };
	for (const Node *n = g->first; n; n = n->next)
		if (n->node_name)
			take_name(&nm, n->node_name);
	for (const Node *n = g->first; n; n = n->next)
		VEC_PUSH(w->a, *nv, node_proto(w, n, &nm));
	hashmap_free(&nm.used);
	hashmap_free(&nm.next);
}

static void add_init(Writer *w, Onnx__GraphProto *p, Onnx__TensorProto *t)
{
	if (!t)
		w->failed = 1;
	else
		p->initializer[p->n_initializer++] = t;
}

/* An input with a default is a graph input and an initializer of the same
 * name.  With keep_inits_as_inputs, every initializer of the main graph is
 * also listed as an input, after the inputs proper (as torch.onnx.export's
 * keep_initializers_as_inputs does). */
static void graph_inputs(Writer *w, const Graph *g, Onnx__GraphProto *p)
{
	int all = w->opt && w->opt->keep_inits_as_inputs && g == w->m->graphs.v[0];
	p->input = PTRS(w, Onnx__ValueInfoProto, g->nin + (all ? g->inits.n : 0));
	p->initializer = PTRS(w, Onnx__TensorProto, g->inits.n + g->nin);
	for (uint32_t i = 0; i < g->nin; i++) {
		const Value *v = val(w->m, g->in[i]);
		if (!is_input(v))
			continue;
		p->input[p->n_input++] = value_info(w, g->in[i], NULL);
		if (v->init)
			add_init(w, p, tensor_proto(w, v->init, vname(w, g->in[i])));
	}
	for (uint32_t i = 0; i < g->inits.n; i++) {
		if (all)
			p->input[p->n_input++] = value_info(w, g->inits.v[i], NULL);
		add_init(w, p, init_proto(w, g->inits.v[i]));
	}
}

/* A value returned twice gets an Identity per repeat: ONNX output names
 * must be distinct.  So does a subgraph's output that is an outer value,
 * and a function's output that is one of its inputs: ONNX Runtime refuses
 * a body that returns one directly. */
const char *output_name(Writer *w, const Graph *g, uint32_t i, NodeVec *nv)
{
	const char *name = vname(w, g->out[i]);
	uint32_t j = 0;
	while (j < i && g->out[j] != g->out[i])
		j++;
	int outer = g->parent && !graph_defines(w->m, g, g->out[i]);
	int input = w->func && w->func->body == g && is_input(val(w->m, g->out[i]));
	if (j == i && !outer && !input)
		return name;
	Onnx__NodeProto *id = NEW(w, Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
	id->op_type = "Identity";
	id->domain = "";
	id->name = afmt(w, "Identity_output_%u", i);
	id->n_input = id->n_output = 1;
	id->input = PTRS(w, char, 1);
	id->output = PTRS(w, char, 1);
	id->input[0] = (char *)name;
	id->output[0] = afmt(w, "%s__%u", name, i);
	VEC_PUSH(w->a, *nv, id);
	return id->output[0];
}

static void graph_outputs(Writer *w, const Graph *g, Onnx__GraphProto *p, NodeVec *nv)
{
	p->n_output = g->nout;
	p->output = PTRS(w, Onnx__ValueInfoProto, g->nout);
	for (uint32_t i = 0; i < g->nout; i++) {
		const Type *t = val(w->m, g->out[i])->type;
		if (!t && g->out_decl)
			t = g->out_decl[i];
		p->output[i] = value_info(w, g->out[i], t);
		p->output[i]->name = (char *)output_name(w, g, i, nv);
	}
}

Onnx__GraphProto *graph_proto(Writer *w, const Graph *g)
{
	Onnx__GraphProto *p = NEW(w, Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
	p->name = g->name ? cs(g->name) : "graph";
	p->doc_string = str_dup(w, g->doc);
	graph_inputs(w, g, p);
	NodeVec nv = { 0 };
	InfoVec iv = { 0 };
	graph_nodes(w, g, &nv);
	graph_outputs(w, g, p, &nv);
	collect_info(w, g, &iv);
	p->n_node = nv.n;
	p->node = nv.v;
	p->n_value_info = iv.n;
	p->value_info = iv.v;
	p->n_metadata_props = g->nmeta;
	p->metadata_props = meta_list(w, g->meta, g->nmeta);
	return p;
}
