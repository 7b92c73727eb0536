/* weights.c - the tensors behind a module's params and buffers, read from
 * its safetensors file (opened once, on the first request, and mmap'd). */
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

RTensor *rt_weight(RtWeights *w, ValueId id)
{
	const Value *v = val(w->m, id);
	const char *key = sym_str(v->key ? v->key : v->name);
	if (!w->m->weights) {
		diag_error(v->loc, "'%s' names weight '%s' but the module has no weights file", sym_str(v->name), key);
		return NULL;
	}
	const char *file = sym_str(w->m->weights);
	size_t len = strlen(w->dir) + strlen(file) + 2;
	char *path = xmalloc(len);
	if (file[0] == '/')
		snprintf(path, len, "%s", file);
	else
		snprintf(path, len, "%s/%s", w->dir, file);
	if (!w->st)
		w->st = safetensors_open(path);
	RTensor *t = NULL;
	const SafeTensor *e = w->st ? safetensors_find(w->st, key) : NULL;
	if (w->st && !e)
		diag_error(v->loc, "weights file '%s' has no tensor '%s'", file, key);
	else if (e)
		t = rt_from_safetensor(path, e);
	free(path);
	return t;
}

RTensor *rt_value_tensor(RtWeights *w, ValueId id)
{
	const Value *v = val(w->m, id);
	if (v->kind == VK_PARAM || v->kind == VK_BUFFER)
		return rt_weight(w, id);
	const Tensor *t = const_tensor(w->m, id);
	return t ? rt_from_ir(v->loc, t) : NULL;
}

void rt_weights_close(RtWeights *w)
{
	safetensors_close(w->st);
	w->st = NULL;
}
