/* merge_weights.c - parameters and buffers that hold the same tensor
 * become one.
 *
 *   param %a: f32[4] = "enc.scale"        param %a: f32[4] = "enc.scale"
 *   param %b: f32[4] = "dec.scale"   ->   (reads of %b read %a)
 *
 * Two `param` values (or two `buffer` values) of a top-level graph merge
 * when they have the same dtype, the same static shape and the same bytes
 * (or name the same tensor of the weights file): every read of the later
 * one, subgraphs included, reads the first in text order, and dce drops
 * it.  An untrained model holds many such tensors (each norm layer's
 * weights of ones and biases of zeros); a trained one, tensors that were
 * tied by value.  cse merges equal `const` values the same way.
 *
 * It runs on ONNX-level graphs, after functionalize and decompose: a
 * graph that still holds an ATen call (which may write into its operand)
 * is left alone.  Also left alone: a value that is an output of its
 * graph, a value named as
 * the target of a mutation in functionalize's graph signature (its update
 * is returned under its name), params against buffers (their kinds are in
 * the signature), and everything when the weights file is missing (the
 * writer reports that).
 *
 * Linear time: values are first counted by (kind, dtype, shape); a value
 * that shares those with another has three small windows of its bytes
 * hashed (start, middle, end: a few pages, whatever its size); only values
 * that also share that probe are read whole, hashed a slice at a time, and
 * compared with the earlier ones of equal hash; each slice read leaves the
 * resident set once done (rt_weights_release).  A model's distinct weights
 * of one shape (every layer of a decoder) differ in their windows, so they
 * cost a few pages each, not their size. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "passes.h"
#include "runtime.h"

static const char SIG_KEY[] = "pkg.torch.export.ExportedProgram.graph_signature";

typedef struct Merge {
	Module *m;
	RtWeights w;
	Rewriter rw;
	uint8_t *skip;              /* by ValueId: outputs and mutation targets */
	uint32_t merged;
} Merge;

typedef struct Cand {
	ValueId id;
	uint32_t group;             /* index of its (kind, dtype, shape) group's first */
	uint32_t pgroup;            /* index of its probe group's first */
	uint64_t probe, hash;
	const uint8_t *data;
	size_t nbytes;
} Cand;
enum { PROBE_WINDOW = 256 };
typedef struct CKey { const Merge *s; const Cand *c; int level; } CKey;   /* 0 shape, 1 probe, 2 bytes */

/* An overridable weight is an input of its own, whatever its bytes. */
static int storage(const Value *v)
{
	return (v->kind == VK_PARAM || v->kind == VK_BUFFER) && !v->overridable && v->type && v->type->kind == TY_TENSOR
		&& type_numel(v->type) >= 0;
}

static uint64_t shape_hash(const Value *v)
{
	uint64_t h = hash_u64((uint64_t)v->kind << 40 | (uint64_t)v->type->dtype << 32 | (uint32_t)v->type->rank);
	for (int32_t i = 0; i < v->type->rank; i++)
		h = hash_u64(h ^ (uint64_t)v->type->dims[i].v);
	return h;
}

/* The bytes of a and b, compared a slice at a time, each released once read. */
static int same_bytes(const Merge *s, const Cand *a, const Cand *b)
{
	if (a->nbytes != b->nbytes)
		return 0;
	if (a->data == b->data)
		return 1;
	int same = 1;
	for (size_t at = 0; at < a->nbytes && same; at += MAPPED_SLICE) {
		size_t n = a->nbytes - at < MAPPED_SLICE ? a->nbytes - at : MAPPED_SLICE;
		same = memcmp(a->data + at, b->data + at, n) == 0;
		rt_weights_release((RtWeights *)&s->w, a->data + at, n);
		rt_weights_release((RtWeights *)&s->w, b->data + at, n);
	}
	return same;
}

/* Same kind, dtype and shape; with bytes, also the same tensor. */
static int cand_is(uintptr_t item, const void *key)
{
	const CKey *k = key;
	const Cand *a = (const Cand *)item, *b = k->c;
	const Value *x = val(k->s->m, a->id), *y = val(k->s->m, b->id);
	if (x->kind != y->kind || !type_equal(x->type, y->type))
		return 0;
	if (k->level == 0)
		return 1;
	if (k->level == 1)
		return a->group == b->group && a->probe == b->probe;
	if (x->key && x->key == y->key)
		return 1;
	return a->hash == b->hash && same_bytes(k->s, a, b);
}

/* Hashes of the start, middle and end windows of c's bytes. */
static Status probe_cand(Merge *s, Cand *c)
{
	c->data = rt_value_bytes(&s->w, c->id, &c->nbytes);
	if (!c->data)
		return c->nbytes ? FAILED : OK;
	size_t w = c->nbytes < PROBE_WINDOW ? c->nbytes : PROBE_WINDOW;
	size_t at[3] = { 0, (c->nbytes - w) / 2, c->nbytes - w };
	uint64_t h = hash_u64((uint64_t)c->group << 32 ^ c->nbytes);
	for (int i = 0; i < 3; i++) {
		h = hash_u64(h ^ hash_mem(c->data + at[i], w));
		rt_weights_release(&s->w, c->data + at[i], w);
	}
	c->probe = h;
	return OK;
}

static void read_cand(Merge *s, Cand *c)
{
	uint64_t h = c->nbytes;
	for (size_t at = 0; at < c->nbytes; at += MAPPED_SLICE) {
		size_t n = c->nbytes - at < MAPPED_SLICE ? c->nbytes - at : MAPPED_SLICE;
		h = hash_u64(h ^ hash_mem(c->data + at, n));
		rt_weights_release(&s->w, c->data + at, n);
	}
	c->hash = h;
}

/* The kind at k (up to a space before end) ends in "_mutation". */
static int mutation_kind(const char *k, const char *end)
{
	const char *sp = memchr(k, ' ', (size_t)(end - k));
	return sp && sp - k >= 9 && !memcmp(sp - 9, "_mutation", 9);
}

/* The values the mutation lines of functionalize's signature name
 * ("output buffer_mutation count_updated count"): their last field is the
 * tensor name (a buffer's or parameter's key) or the input's name.  A
 * quoted name is not parsed: the graph is then left whole (returns 0). */
static int mark_mutated(Merge *s, const Graph *g)
{
	for (uint32_t i = 0; i < g->nmeta; i++) {
		if (g->meta[i].key.n != sizeof SIG_KEY - 1 || memcmp(g->meta[i].key.s, SIG_KEY, sizeof SIG_KEY - 1))
			continue;
		const char *t = g->meta[i].val.s, *end = t + g->meta[i].val.n;
		while (t < end) {
			const char *nl = memchr(t, '\n', (size_t)(end - t));
			const char *le = nl ? nl : end, *sp = le;
			if (memchr(t, '"', (size_t)(le - t)))
				return 0;
			while (sp > t && sp[-1] != ' ')
				sp--;
			if (le - t > 7 && !memcmp(t, "output ", 7) && mutation_kind(t + 7, le)) {
				Sym target = sym_intern(sp, (size_t)(le - sp));
				for (uint32_t k = 0; k < g->inits.n; k++) {
					const Value *v = val(s->m, g->inits.v[k]);
					if (v->key == target || v->name == target)
						s->skip[g->inits.v[k]] = 1;
				}
			}
			t = le + 1;
		}
	}
	return 1;
}

static Status rewrite(const GraphVisit *v, void *ctx)
{
	Merge *s = ctx;
	for (Node *n = v->g->first; n; n = n->next)
		rw_apply(&s->rw, n);
	rw_apply_outputs(&s->rw, v->g);
	return OK;
}

static Status find_aten(const GraphVisit *v, void *ctx)
{
	for (const Node *n = v->g->first; n; n = n->next)
		if (n->domain == S_aten)
			*(int *)ctx = 1;
	return OK;
}

/* The kept weight of each group names the ones merged into it
 * (`pkg.onnxc.merged_from`): into[i] is the index of the candidate c[i]
 * merged into, or UINT32_MAX.  Chained through link, so linear. */
static void note_merged(Merge *s, const Cand *c, const uint32_t *into, uint32_t nc)
{
	uint32_t *head = xcalloc(nc + 1, sizeof *head), *link = xcalloc(nc + 1, sizeof *link);
	for (uint32_t i = nc; i-- > 0;)
		if (into[i] != UINT32_MAX) {
			link[i] = head[into[i]];
			head[into[i]] = i + 1;
		}
	ValueId src[PROV_SOURCES_MAX + 1];
	for (uint32_t f = 0; f < nc; f++) {
		uint32_t n = 0;
		for (uint32_t i = head[f]; i && n <= PROV_SOURCES_MAX; i = link[i - 1])
			src[n++] = c[i - 1].id;
		if (n) {
			Value *v = val(s->m, c[f].id);
			v->prov = prov_merged(s->m, v->prov, src, n);
		}
	}
	free(head);
	free(link);
}

static Status merge_graph(Merge *s, Graph *g)
{
	int aten = 0;
	graph_walk(g, find_aten, &aten);
	if (aten)
		return OK;              /* an ATen call may mutate its operand in place */
	for (uint32_t i = 0; i < g->nout; i++)
		s->skip[g->out[i]] = 1;
	if (!mark_mutated(s, g))
		return OK;
	Cand *c = xcalloc(g->inits.n + 1, sizeof *c);
	uint32_t nc = 0;
	HashMap shapes = { 0 }, probes = { 0 }, tensors = { 0 };
	uint32_t *count = xcalloc(g->inits.n + 1, sizeof *count);
	uint32_t *pcount = xcalloc(g->inits.n + 1, sizeof *pcount);
	uint32_t *into = xmalloc((g->inits.n + 1) * sizeof *into);
	for (uint32_t i = 0; i < g->inits.n; i++) {
		const Value *v = val(s->m, g->inits.v[i]);
		if (!storage(v) || s->skip[g->inits.v[i]])
			continue;
		c[nc] = (Cand){ .id = g->inits.v[i] };
		CKey k = { s, &c[nc], 0 };
		Cand *first = (Cand *)hashmap_intern(&shapes, shape_hash(v), cand_is, &k, (uintptr_t)&c[nc]);
		count[first - c]++;
		c[nc].group = (uint32_t)(first - c);
		nc++;
	}
	Status st = OK;
	for (uint32_t i = 0; i < nc && st == OK; i++) {
		c[i].pgroup = UINT32_MAX;
		if (count[c[i].group] < 2 || (st = probe_cand(s, &c[i])) != OK || !c[i].data)
			continue;
		CKey k = { s, &c[i], 1 };
		Cand *first = (Cand *)hashmap_intern(&probes, c[i].probe, cand_is, &k, (uintptr_t)&c[i]);
		c[i].pgroup = (uint32_t)(first - c);
		pcount[c[i].pgroup]++;
	}
	for (uint32_t i = 0; i < nc; i++)
		into[i] = UINT32_MAX;
	for (uint32_t i = 0; i < nc && st == OK; i++) {
		if (c[i].pgroup == UINT32_MAX || pcount[c[i].pgroup] < 2)
			continue;
		read_cand(s, &c[i]);
		CKey k = { s, &c[i], 2 };
		Cand *first = (Cand *)hashmap_intern(&tensors, c[i].hash, cand_is, &k, (uintptr_t)&c[i]);
		if (first != &c[i]) {
			rw_set(&s->rw, c[i].id, first->id);
			into[i] = (uint32_t)(first - c);
			s->merged++;
		}
	}
	if (st == OK)
		note_merged(s, c, into, nc);
	free(into);
	hashmap_free(&shapes);
	hashmap_free(&probes);
	hashmap_free(&tensors);
	free(count);
	free(pcount);
	free(c);
	return st == OK ? graph_walk(g, rewrite, s) : st;
}

static int weights_present(const Module *m, const PassOptions *opt)
{
	if (!m->weights)
		return 0;
	const char *file = sym_str(m->weights), *dir = opt->weights_dir ? opt->weights_dir : ".";
	size_t len = strlen(dir) + strlen(file) + 2;
	char *path = xmalloc(len);
	snprintf(path, len, file[0] == '/' ? "%.0s%s" : "%s/%s", dir, file);
	int ok = access(path, R_OK) == 0;
	free(path);
	return ok;
}

Status pass_merge_weights(Module *m, const PassOptions *opt)
{
	if (!weights_present(m, opt))
		return OK;
	Merge s = { .m = m, .w = { m, opt->weights_dir ? opt->weights_dir : ".", NULL } };
	s.skip = xcalloc(m->vals.n + 1, 1);
	Status st = OK;
	for (uint32_t i = 0; i < m->graphs.n && st == OK; i++)
		st = merge_graph(&s, m->graphs.v[i]);
	rt_weights_close(&s.w);
	rw_free(&s.rw);
	free(s.skip);
	return st;
}
