/* listing.c - a listing of the ONNX model a person reads, in the style of
 * the ONNX section of PyTorch's conversion report.
 *
 * It prints the ModelProto onnx_build makes (without tensor payloads), so
 * node names, opset imports and types are exactly those onnx_write puts
 * in the file.  Output depends only on the IR: lit tests compare it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend.h"

typedef struct NameType { const char *name; const Onnx__TypeProto *type; const Onnx__TensorProto *init; } NameType;

/* Names of one graph, sorted for lookup; `up` is the enclosing graph's. */
typedef struct Table {
	NameType *v;
	size_t n;
	const struct Table *up;
} Table;

typedef struct Listing {
	FILE *f;
	int indent;                 /* spaces before every line */
} Listing;

static void line_start(Listing *l) { fprintf(l->f, "%*s", l->indent, ""); }

/* ---- names and types ------------------------------------------------------ */

static int by_name(const void *a, const void *b)
{
	return strcmp(((const NameType *)a)->name, ((const NameType *)b)->name);
}

static const NameType *find(const Table *t, const char *name)
{
	NameType key = { name, NULL, NULL };
	for (; t; t = t->up) {
		const NameType *e = bsearch(&key, t->v, t->n, sizeof *t->v, by_name);
		if (e)
			return e;
	}
	return NULL;
}

static void add_infos(Table *t, Onnx__ValueInfoProto **vi, size_t n)
{
	for (size_t i = 0; i < n; i++)
		t->v[t->n++] = (NameType){ vi[i]->name, vi[i]->type, NULL };
}

static void table_build(Table *t, const Onnx__GraphProto *g, const Table *up)
{
	t->v = xcalloc(g->n_input + g->n_output + g->n_value_info + g->n_initializer + 1, sizeof *t->v);
	t->n = 0;
	t->up = up;
	add_infos(t, g->input, g->n_input);
	add_infos(t, g->output, g->n_output);
	add_infos(t, g->value_info, g->n_value_info);
	for (size_t i = 0; i < g->n_initializer; i++)
		t->v[t->n++] = (NameType){ g->initializer[i]->name, NULL, g->initializer[i] };
	qsort(t->v, t->n, sizeof *t->v, by_name);
}

static const char *dtype_str(int32_t dt)
{
	const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&onnx__tensor_proto__data_type__descriptor, dt);
	return v && dt ? v->name : "?";
}

static void print_dims(FILE *f, const Onnx__TensorShapeProto *s)
{
	if (!s) {
		fputc('?', f);
		return;
	}
	fputc('[', f);
	for (size_t i = 0; i < s->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = s->dim[i];
		fputs(i ? "," : "", f);
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			fprintf(f, "%lld", (long long)d->dim_value);
		else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			fputs(d->dim_param, f);
		else
			fputc('?', f);
	}
	fputc(']', f);
}

static void print_type_body(FILE *f, const Onnx__TypeProto *t)
{
	if (!t || t->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
		fputs("?,?", f);
	} else if (t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
		fprintf(f, "%s,", dtype_str(t->tensor_type->elem_type));
		print_dims(f, t->tensor_type->shape);
	} else if (t->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
		fputs("seq(", f);
		print_type_body(f, t->sequence_type->elem_type);
		fputc(')', f);
	} else if (t->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
		fputs("opt(", f);
		print_type_body(f, t->optional_type->elem_type);
		fputc(')', f);
	} else
		fputs("?,?", f);
}

static void print_tensor_type(FILE *f, const Onnx__TensorProto *t)
{
	fprintf(f, "<%s,[", dtype_str(t->data_type));
	for (size_t i = 0; i < t->n_dims; i++)
		fprintf(f, "%s%lld", i ? "," : "", (long long)t->dims[i]);
	fputs("]>", f);
}

/* %"name" with its type; "" is an omitted optional input or output. */
static void print_value(FILE *f, const Table *t, const char *name, int typed)
{
	if (!name[0]) {
		fputs("None", f);
		return;
	}
	fprintf(f, "%%\"%s\"", name);
	const NameType *e = find(t, name);
	if (e && e->init) {
		if (typed)
			print_tensor_type(f, e->init);
		fputs("{...}", f);
	} else if (typed) {
		fputc('<', f);
		print_type_body(f, e ? e->type : NULL);
		fputc('>', f);
	}
}

/* ---- attributes ------------------------------------------------------------- */

/* Python-like: a float always shows a point or an exponent. */
static void print_float(FILE *f, double x)
{
	if (isnan(x) || isinf(x)) {
		fputs(isnan(x) ? "nan" : x > 0 ? "inf" : "-inf", f);
		return;
	}
	char buf[40];
	snprintf(buf, sizeof buf, "%.9g", x);
	fputs(buf, f);
	if (!strpbrk(buf, ".e"))
		fputs(".0", f);
}

static void print_bytes(FILE *f, ProtobufCBinaryData s)
{
	fputc('\'', f);
	for (size_t i = 0; i < s.len; i++) {
		unsigned char c = s.data[i];
		if (c == '\'' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc('\'', f);
}

static void print_list(FILE *f, const Onnx__AttributeProto *a)
{
	fputc('[', f);
	for (size_t i = 0; i < a->n_ints; i++)
		fprintf(f, "%s%lld", i ? ", " : "", (long long)a->ints[i]);
	for (size_t i = 0; i < a->n_floats; i++) {
		fputs(i ? ", " : "", f);
		print_float(f, a->floats[i]);
	}
	for (size_t i = 0; i < a->n_strings; i++) {
		fputs(i ? ", " : "", f);
		print_bytes(f, a->strings[i]);
	}
	for (size_t i = 0; i < a->n_tensors; i++) {
		fprintf(f, "%sTensor", i ? ", " : "");
		print_tensor_type(f, a->tensors[i]);
		fputs("{...}", f);      /* values elided, as for a TENSOR */
	}
	for (size_t i = 0; i < a->n_graphs; i++)
		fprintf(f, "%sgraph(%s)", i ? ", " : "", a->graphs[i]->name ? a->graphs[i]->name : "");
	for (size_t i = 0; i < a->n_type_protos; i++) {
		fputs(i ? ", <" : "<", f);
		print_type_body(f, a->type_protos[i]);
		fputc('>', f);
	}
	fputc(']', f);
}

static void print_attr(FILE *f, const Onnx__AttributeProto *a)
{
	fprintf(f, "%s=", a->name);
	if (a->ref_attr_name) {
		fprintf(f, "@%s", a->ref_attr_name);
		return;
	}
	switch (a->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: fprintf(f, "%lld", (long long)a->i); break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: print_float(f, a->f); break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: print_bytes(f, a->s); break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		fputs("Tensor", f);
		print_tensor_type(f, a->t);
		fputs("{...}", f);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: fprintf(f, "graph(%s)", a->g->name ? a->g->name : ""); break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
		fputc('<', f);
		print_type_body(f, a->tp);
		fputc('>', f);
		break;
	default: print_list(f, a);
	}
}

/* ---- graphs ----------------------------------------------------------------- */

static void print_body(Listing *l, Onnx__NodeProto **nodes, size_t n, const Table *t);

static void print_subgraphs(Listing *l, const Onnx__NodeProto *n, const Table *t);

static void print_node(Listing *l, size_t i, const Onnx__NodeProto *n, const Table *t)
{
	line_start(l);
	fprintf(l->f, "%5zu |  # %s\n", i, n->name ? n->name : "");
	line_start(l);
	fputs("         ", l->f);
	for (size_t k = 0; k < n->n_output; k++) {
		fputs(k ? ", " : "", l->f);
		print_value(l->f, t, n->output[k], 1);
	}
	fprintf(l->f, "%s\u2b05\ufe0f %s::%s%s%s(", n->n_output ? " " : "", n->domain ? n->domain : "", n->op_type,
		n->overload ? "." : "", n->overload ? n->overload : "");
	for (size_t k = 0; k < n->n_input; k++) {
		fputs(k ? ", " : "", l->f);
		print_value(l->f, t, n->input[k], 0);
	}
	fputc(')', l->f);
	for (size_t k = 0; k < n->n_attribute; k++) {
		fputs(k ? ", " : " {", l->f);
		print_attr(l->f, n->attribute[k]);
	}
	fputs(n->n_attribute ? "}\n" : "\n", l->f);
	print_subgraphs(l, n, t);
}

static void print_values(Listing *l, const char *what, Onnx__ValueInfoProto **v, size_t n, const Table *t)
{
	line_start(l);
	fprintf(l->f, "    %s=(\n", what);
	for (size_t i = 0; i < n; i++) {
		line_start(l);
		fputs("        ", l->f);
		print_value(l->f, t, v[i]->name, 1);
		fputs(i + 1 < n ? ",\n" : "\n", l->f);
	}
	line_start(l);
	fputs("    ),\n", l->f);
}

static void print_inits(Listing *l, const Onnx__GraphProto *g)
{
	line_start(l);
	fputs("    initializers=(\n", l->f);
	for (size_t i = 0; i < g->n_initializer; i++) {
		line_start(l);
		fprintf(l->f, "        %%\"%s\"", g->initializer[i]->name);
		print_tensor_type(l->f, g->initializer[i]);
		fputs(i + 1 < g->n_initializer ? "{...},\n" : "{...}\n", l->f);
	}
	line_start(l);
	fputs("    ),\n", l->f);
}

static void print_graph(Listing *l, const Onnx__GraphProto *g, const Table *up)
{
	Table t;
	table_build(&t, g, up);
	line_start(l);
	fprintf(l->f, "graph(\n");
	line_start(l);
	fprintf(l->f, "    name=%s,\n", g->name ? g->name : "");
	print_values(l, "inputs", g->input, g->n_input, &t);
	print_values(l, "outputs", g->output, g->n_output, &t);
	if (g->n_initializer)
		print_inits(l, g);
	line_start(l);
	fputs(") {\n", l->f);
	print_body(l, g->node, g->n_node, &t);
	line_start(l);
	fputs("    return ", l->f);
	for (size_t i = 0; i < g->n_output; i++) {
		fputs(i ? ", " : "", l->f);
		print_value(l->f, &t, g->output[i]->name, 1);
	}
	fputc('\n', l->f);
	line_start(l);
	fputs("}\n", l->f);
	free(t.v);
}

static void print_subgraph(Listing *l, const char *attr, const Onnx__GraphProto *g, const Table *t)
{
	Listing sub = { l->f, l->indent + 9 };
	line_start(&sub);
	fprintf(l->f, "%s:\n", attr);
	print_graph(&sub, g, t);
}

/* Subgraphs print under the node that holds them, indented. */
static void print_subgraphs(Listing *l, const Onnx__NodeProto *n, const Table *t)
{
	for (size_t k = 0; k < n->n_attribute; k++) {
		const Onnx__AttributeProto *a = n->attribute[k];
		if (a->g)
			print_subgraph(l, a->name, a->g, t);
		for (size_t i = 0; i < a->n_graphs; i++)
			print_subgraph(l, a->name, a->graphs[i], t);
	}
}

static void print_body(Listing *l, Onnx__NodeProto **nodes, size_t n, const Table *t)
{
	for (size_t i = 0; i < n; i++)
		print_node(l, i, nodes[i], t);
}

/* ---- the model and its functions --------------------------------------------- */

static void print_opsets(FILE *f, Onnx__OperatorSetIdProto **o, size_t n)
{
	fputc('{', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s'%s': %lld", i ? ", " : "", o[i]->domain, (long long)o[i]->version);
	fputc('}', f);
}

static void print_header(FILE *f, const Onnx__ModelProto *m)
{
	fprintf(f, "<\n    ir_version=%lld,\n    opset_imports=", (long long)m->ir_version);
	print_opsets(f, m->opset_import, m->n_opset_import);
	fprintf(f, ",\n    producer_name='%s',\n    producer_version='%s',\n", m->producer_name, m->producer_version);
	fputs("    domain=None,\n    model_version=None,\n>\n", f);
}

static void print_names(FILE *f, const char *what, char **v, size_t n)
{
	fprintf(f, "    %s=(", what);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%%\"%s\"", i ? ", " : "", v[i]);
	fputs("),\n", f);
}

static void print_function(FILE *f, const Onnx__FunctionProto *fn)
{
	Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
	g.n_value_info = fn->n_value_info;
	g.value_info = fn->value_info;
	Table t;
	table_build(&t, &g, NULL);
	fprintf(f, "\nfunction %s::%s%s%s(\n    opset_imports=", fn->domain ? fn->domain : "", fn->name,
		fn->overload ? "." : "", fn->overload ? fn->overload : "");
	print_opsets(f, fn->opset_import, fn->n_opset_import);
	fputs(",\n", f);
	print_names(f, "inputs", fn->input, fn->n_input);
	print_names(f, "attributes", fn->attribute, fn->n_attribute);
	print_names(f, "outputs", fn->output, fn->n_output);
	fputs(") {\n", f);
	Listing l = { f, 0 };
	print_body(&l, fn->node, fn->n_node, &t);
	fputs("    return ", f);
	for (size_t i = 0; i < fn->n_output; i++)
		fprintf(f, "%s%%\"%s\"", i ? ", " : "", fn->output[i]);
	fputs("\n}\n", f);
	free(t.v);
}

int listing_write(Module *m, FILE *out, const OnnxWriteOptions *opt)
{
	OnnxBuilt b;
	int rc = onnx_build(m, opt, 0, &b);
	if (rc == 0) {
		Listing l = { out, 0 };
		print_header(out, b.model);
		print_graph(&l, b.model->graph, NULL);
		for (size_t i = 0; i < b.model->n_functions; i++)
			print_function(out, b.model->functions[i]);
	}
	onnx_built_free(&b);
	if (rc == 0 && ferror(out)) {
		diag_error((Loc){ 0, 0, 0 }, "cannot write the listing");
		rc = 1;
	}
	return rc != 0;
}
