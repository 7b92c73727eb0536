/* onnx_writer_tensors.c - the ONNX writer: types, tensors, and the
 * weights (param and buffer values) read from the safetensors file.
 */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- types and tensors ---------------------------------------------------- */

static Onnx__TensorShapeProto *shape_proto(Writer *w, const Type *t)
{
	Onnx__TensorShapeProto *s = NEW(w, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
	s->n_dim = (size_t)t->rank;
	s->dim = PTRS(w, Onnx__TensorShapeProto__Dimension, t->rank);
	for (int32_t i = 0; i < t->rank; i++) {
		Onnx__TensorShapeProto__Dimension *d = NEW(w, Onnx__TensorShapeProto__Dimension,
			ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
		if (t->dims[i].sym) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = cs(t->dims[i].sym);
		} else if (t->dims[i].v >= 0) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = t->dims[i].v;
		}
		s->dim[i] = d;
	}
	return s;
}

static Onnx__TypeProto *wrapped_type(Writer *w, const Type *t)
{
	Onnx__TypeProto *p = NEW(w, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
	if (t->kind == TY_SEQ) {
		p->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
		p->sequence_type = NEW(w, Onnx__TypeProto__Sequence, ONNX__TYPE_PROTO__SEQUENCE__INIT);
		p->sequence_type->elem_type = type_proto(w, t->elem);
	} else {
		p->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
		p->optional_type = NEW(w, Onnx__TypeProto__Optional, ONNX__TYPE_PROTO__OPTIONAL__INIT);
		p->optional_type->elem_type = type_proto(w, t->elem);
	}
	return p;
}

/* NULL for an unknown type: the ValueInfoProto then has no type field. */
Onnx__TypeProto *type_proto(Writer *w, const Type *t)
{
	if (!t)
		return NULL;
	if (t->kind != TY_TENSOR)
		return wrapped_type(w, t);
	Onnx__TypeProto *p = NEW(w, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
	p->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	p->tensor_type = NEW(w, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
	if (t->dtype != DT_UNDEF) {
		p->tensor_type->has_elem_type = 1;
		p->tensor_type->elem_type = dtype_onnx((DType)t->dtype);
	}
	if (t->rank >= 0)
		p->tensor_type->shape = shape_proto(w, t);
	return p;
}

static Onnx__TensorProto *tensor_head(Writer *w, const Type *t, const char *name)
{
	Onnx__TensorProto *p = NEW(w, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
	p->name = (char *)name;
	p->has_data_type = 1;
	p->data_type = dtype_onnx((DType)t->dtype);
	p->n_dims = t->rank > 0 ? (size_t)t->rank : 0;
	p->dims = ARENA_ARRAY(w->a, int64_t, p->n_dims + 1);
	for (size_t i = 0; i < p->n_dims; i++)
		p->dims[i] = t->dims[i].v;
	return p;
}

static void set_payload(Writer *w, Onnx__TensorProto *p, const uint8_t *data, size_t nbytes)
{
	if (!w->with_data)
		return;
	p->has_raw_data = 1;
	p->raw_data.data = (uint8_t *)data;
	p->raw_data.len = nbytes;
	w->out->init_bytes += nbytes;
}

Onnx__TensorProto *tensor_proto(Writer *w, const Tensor *t, const char *name)
{
	Onnx__TensorProto *p = tensor_head(w, t->type, name);
	if (t->type->dtype != DT_STR) {
		set_payload(w, p, t->data, t->nbytes);
		return p;
	}
	int64_t n = type_numel(t->type);
	p->n_string_data = n > 0 ? (size_t)n : 0;
	p->string_data = ARENA_ARRAY(w->a, ProtobufCBinaryData, p->n_string_data + 1);
	for (size_t i = 0; i < p->n_string_data; i++) {
		p->string_data[i].data = (uint8_t *)t->strs[i].s;
		p->string_data[i].len = t->strs[i].n;
	}
	return p;
}

/* ---- weights (param / buffer values) --------------------------------------- */

static SafeTensors *open_weights(Writer *w)
{
	if (w->out->weights)
		return w->out->weights;
	const char *file = sym_str(w->m->weights);
	const char *dir = w->opt && w->opt->weights_dir ? w->opt->weights_dir : ".";
	char *path = file[0] == '/' ? afmt(w, "%s", file) : afmt(w, "%s/%s", dir, file);
	w->out->weights = safetensors_open(path);
	return w->out->weights;
}

static int shape_matches(const Type *t, const SafeTensor *st)
{
	if (t->rank < 0)
		return 1;
	if (t->rank != st->rank)
		return 0;
	for (int32_t i = 0; i < t->rank; i++)
		if (!t->dims[i].sym && t->dims[i].v >= 0 && t->dims[i].v != st->shape[i])
			return 0;
	return 1;
}

/* The dims written are the file's: they are what the bytes hold. */
static Onnx__TensorProto *weight_proto(Writer *w, ValueId id)
{
	const Value *v = val(w->m, id);
	const char *key = sym_str(v->key ? v->key : v->name);
	Type hdr = { .kind = TY_TENSOR, .dtype = v->type ? v->type->dtype : DT_UNDEF, .rank = -1 };
	if (!w->with_data && v->type && v->type->kind == TY_TENSOR && type_numel(v->type) >= 0)
		return tensor_head(w, v->type, vname(w, id));
	if (!w->m->weights) {
		diag_error(v->loc, "'%s' names weight '%s' but the module has no weights file", vname(w, id), key);
		return NULL;
	}
	SafeTensors *st = open_weights(w);
	if (!st)
		return NULL;
	const SafeTensor *e = safetensors_find(st, key);
	if (!e) {
		diag_error(v->loc, "weights file '%s' has no tensor '%s'", sym_str(w->m->weights), key);
		return NULL;
	}
	if ((v->type && v->type->kind != TY_TENSOR) || (hdr.dtype && hdr.dtype != e->dtype)
	    || (v->type && !shape_matches(v->type, e))) {
		diag_error(v->loc, "tensor '%s' in '%s' is %s with %d dims, which does not match the type of '%s'",
			key, sym_str(w->m->weights), dtype_name(e->dtype), e->rank, vname(w, id));
		return NULL;
	}
	Dim *dims = ARENA_ARRAY(w->a, Dim, e->rank + 1);
	for (int32_t i = 0; i < e->rank; i++)
		dims[i].v = e->shape[i];
	hdr.dtype = (uint8_t)e->dtype;
	hdr.rank = e->rank;
	hdr.dims = dims;
	Onnx__TensorProto *p = tensor_head(w, &hdr, vname(w, id));
	set_payload(w, p, e->data, e->nbytes);
	return p;
}

Onnx__TensorProto *init_proto(Writer *w, ValueId id)
{
	const Value *v = val(w->m, id);
	if (v->kind == VK_CONST) {
		if (!v->init || !v->init->type) {
			diag_error(v->loc, "constant '%s' has no tensor", vname(w, id));
			return NULL;
		}
		return tensor_proto(w, v->init, vname(w, id));
	}
	return weight_proto(w, id);
}
