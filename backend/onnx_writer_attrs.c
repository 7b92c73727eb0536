/* onnx_writer_attrs.c - the ONNX writer: node attributes.
 */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- attributes ------------------------------------------------------------- */

/* The ONNX attribute type a list's elements give (an empty list of unknown
 * kind is INTS, the commonest). */
static int list_type(const Arg *a)
{
	int k = a->n ? a->u.list[0].kind : a->elem;
	for (uint32_t i = 0; i < a->n; i++)
		if (a->u.list[i].kind == A_FLOAT)
			k = A_FLOAT;
	switch (k) {
	case A_FLOAT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
	case A_STR: case A_IDENT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	case A_TENSOR: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS;
	case A_GRAPH: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS;
	case A_TYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS;
	default: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	}
}

static int scalar_type(int kind)
{
	switch (kind) {
	case A_INT: case A_BOOL: case A_DTYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	case A_FLOAT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	case A_STR: case A_IDENT: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	case A_TENSOR: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	case A_GRAPH: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	case A_TYPE: return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
	default: return 0;
	}
}

static int64_t arg_int(const Arg *a)
{
	if (a->kind == A_DTYPE)
		return dtype_onnx((DType)a->u.i);
	if (a->kind == A_FLOAT)
		return (int64_t)a->u.f;
	return a->u.i;
}

static ProtobufCBinaryData arg_bytes(const Arg *a)
{
	if (a->kind == A_IDENT)
		return (ProtobufCBinaryData){ sym_len(a->u.sym), (uint8_t *)sym_str(a->u.sym) };
	return (ProtobufCBinaryData){ a->u.s.n, (uint8_t *)a->u.s.s };
}

static void list_payload(Writer *w, Onnx__AttributeProto *p, const Arg *a)
{
	size_t n = a->n;
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
		p->n_floats = n;
		p->floats = ARENA_ARRAY(w->a, float, n + 1);
		for (size_t i = 0; i < n; i++)
			p->floats[i] = a->u.list[i].kind == A_FLOAT ? (float)a->u.list[i].u.f
				: (float)arg_int(&a->u.list[i]);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
		p->n_strings = n;
		p->strings = ARENA_ARRAY(w->a, ProtobufCBinaryData, n + 1);
		for (size_t i = 0; i < n; i++)
			p->strings[i] = arg_bytes(&a->u.list[i]);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
		p->n_tensors = n;
		p->tensors = PTRS(w, Onnx__TensorProto, n);
		for (size_t i = 0; i < n; i++)
			p->tensors[i] = tensor_proto(w, a->u.list[i].u.t, NULL);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
		p->n_graphs = n;
		p->graphs = PTRS(w, Onnx__GraphProto, n);
		for (size_t i = 0; i < n; i++)
			p->graphs[i] = graph_proto(w, a->u.list[i].u.g);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
		p->n_type_protos = n;
		p->type_protos = PTRS(w, Onnx__TypeProto, n);
		for (size_t i = 0; i < n; i++)
			p->type_protos[i] = type_proto(w, a->u.list[i].u.ty);
		break;
	default:
		p->n_ints = n;
		p->ints = ARENA_ARRAY(w->a, int64_t, n + 1);
		for (size_t i = 0; i < n; i++)
			p->ints[i] = arg_int(&a->u.list[i]);
	}
}

static void scalar_payload(Writer *w, Onnx__AttributeProto *p, const Arg *a)
{
	switch (p->type) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
		p->has_i = 1;
		p->i = arg_int(a);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
		p->has_f = 1;
		p->f = (float)a->u.f;
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
		p->has_s = 1;
		p->s = arg_bytes(a);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
		p->t = tensor_proto(w, a->u.t, NULL);
		break;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
		p->g = graph_proto(w, a->u.g);
		break;
	default:
		p->tp = type_proto(w, a->u.ty);
	}
}

/* The ONNX type of a kind of Arg, lists included. */
static int arg_attr_type(const Arg *a)
{
	return a->kind == A_LIST ? list_type(a) : scalar_type(a->kind);
}

/* An attribute reference must still carry the referenced attribute's type.
 * The importer keeps it in Arg.elem; otherwise it is taken from a call of
 * the function that sets the attribute. */
static int ref_type(Writer *w, const Func *f, Sym attr, const Arg *a)
{
	if (a->elem)
		return a->elem;
	for (uint32_t gi = 0; f && gi < w->m->graphs.n; gi++)
		for (const Node *n = w->m->graphs.v[gi]->first; n; n = n->next)
			if (n->domain == f->domain && n->name == f->name)
				for (uint32_t k = 0; k < n->nkw; k++)
					if (n->kw[k].name == attr && arg_attr_type(&n->kw[k].val))
						return arg_attr_type(&n->kw[k].val);
	return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

Onnx__AttributeProto *attr_proto(Writer *w, const Node *n, const Named *kw)
{
	const Arg *a = &kw->val;
	if (a->kind == A_NONE)
		return NULL;
	Onnx__AttributeProto *p = NEW(w, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
	p->name = cs(kw->name);
	p->has_type = 1;
	if (a->kind == A_ATTRREF) {
		p->ref_attr_name = cs(a->u.sym);
		p->type = ref_type(w, w->func, a->u.sym, a);
		return p;
	}
	p->type = arg_attr_type(a);
	if (!p->type) {
		diag_error(n->loc, "attribute '%s' of %s::%s cannot be written to ONNX (a %s)",
			sym_str(kw->name), sym_str(n->domain), sym_str(n->name),
			a->kind == A_VALUE ? "value" : a->kind == A_PARAM ? "decomposition parameter" : "literal");
		w->failed = 1;
		return NULL;
	}
	if (a->kind == A_LIST)
		list_payload(w, p, a);
	else
		scalar_payload(w, p, a);
	return p;
}
