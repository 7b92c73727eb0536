/* weights.c - the tensors behind a module's params and buffers, read from
 * its safetensors file (opened once, on the first request, and mmap'd). */
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

/* The entry of param or buffer id in the weights file (opened on the
 * first request); NULL after a diagnostic.  *path is malloc'd. */
static const SafeTensor *weight_entry(RtWeights *w, ValueId id, char **path)
{
	const Value *v = val(w->m, id);
	const char *key = sym_str(v->key ? v->key : v->name);
	*path = NULL;
	if (!w->m->weights) {
		diag_error(v->loc, "'%s' names weight '%s' but the module has no weights file", sym_str(v->name), key);
		return NULL;
	}
	const char *file = sym_str(w->m->weights);
	size_t len = strlen(w->dir) + strlen(file) + 2;
	*path = xmalloc(len);
	if (file[0] == '/')
		snprintf(*path, len, "%s", file);
	else
		snprintf(*path, len, "%s/%s", w->dir, file);
	if (!w->st)
		w->st = safetensors_open(*path);
	const SafeTensor *e = w->st ? safetensors_find(w->st, key) : NULL;
	if (w->st && !e)
		diag_error(v->loc, "weights file '%s' has no tensor '%s'", file, key);
	return e;
}

/* Once copied, the mapped pages are released: only the copy stays
 * resident. */
RTensor *rt_weight(RtWeights *w, ValueId id)
{
	char *path;
	const SafeTensor *e = weight_entry(w, id, &path);
	RTensor *t = e ? rt_from_safetensor(path, e) : NULL;
	if (e)
		rt_weights_release(w, e->data, e->nbytes);
	free(path);
	return t;
}

const uint8_t *rt_value_bytes(RtWeights *w, ValueId id, size_t *nbytes)
{
	const Value *v = val(w->m, id);
	if (v->kind == VK_PARAM || v->kind == VK_BUFFER) {
		char *path;
		const SafeTensor *e = weight_entry(w, id, &path);
		free(path);
		*nbytes = e ? e->nbytes : 0;
		return e ? e->data : NULL;
	}
	const Tensor *t = const_tensor(w->m, id);
	*nbytes = t ? t->nbytes : 0;
	return t && t->type->dtype != DT_STR ? t->data : NULL;
}

void rt_weights_release(RtWeights *w, const void *p, size_t n)
{
	safetensors_release(w->st, p, n);
	mapped_release(p, n);
}

RTensor *rt_value_tensor(RtWeights *w, ValueId id)
{
	const Value *v = val(w->m, id);
	if (v->kind == VK_PARAM || v->kind == VK_BUFFER)
		return rt_weight(w, id);
	const Tensor *t = const_tensor(w->m, id);
	RTensor *r = t ? rt_from_ir(v->loc, t) : NULL;
	if (t && t->data)
		mapped_release(t->data, t->nbytes);  /* imported external data */
	return r;
}

void rt_weights_close(RtWeights *w)
{
	safetensors_close(w->st);
	w->st = NULL;
}
