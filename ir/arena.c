/* arena.c - bump allocation.  Chunks grow geometrically so a module of n
 * nodes costs O(log n) mallocs; large requests get a chunk of their own. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

struct ArenaChunk {
	ArenaChunk *next;
	size_t used, cap;
	max_align_t data[];
};

enum { CHUNK_MIN = 64 * 1024 };

/* Chunks come zeroed from calloc (fresh pages from the OS cost nothing to
 * zero) and arena_reset re-zeroes what was used, so an allocation needs no
 * memset of its own. */
static ArenaChunk *chunk_new(size_t cap)
{
	ArenaChunk *c = calloc(1, sizeof *c + cap);
	if (!c) {
		fprintf(stderr, "onnxc: out of memory\n");
		exit(1);
	}
	c->next = NULL;
	c->used = 0;
	c->cap = cap;
	return c;
}

void *arena_alloc(Arena *a, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	ArenaChunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t cap = a->total < CHUNK_MIN ? CHUNK_MIN : a->total;
		if (cap < n)
			cap = n;
		c = chunk_new(cap);
		c->next = a->head;
		a->head = c;
		a->total += cap;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (n)
		memcpy(p, s, n);
	return p;
}

void *arena_dup(Arena *a, const void *p, size_t n)
{
	void *q = arena_alloc(a, n);
	if (n)
		memcpy(q, p, n);
	return q;
}

void *arena_grow(Arena *a, void *p, uint32_t *cap, uint32_t need, size_t sz)
{
	uint32_t ncap = *cap ? *cap : 4;
	while (ncap < need)
		ncap *= 2;
	void *q = arena_alloc(a, ncap * sz);
	if (p && *cap)
		memcpy(q, p, *cap * sz);
	*cap = ncap;
	return q;
}

void arena_free(Arena *a)
{
	ArenaChunk *c = a->head;
	while (c) {
		ArenaChunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}

void arena_reset(Arena *a)
{
	ArenaChunk *c = a->head;
	if (!c)
		return;
	for (ArenaChunk *o = c->next, *next; o; o = next) {
		next = o->next;
		a->total -= o->cap;
		free(o);
	}
	c->next = NULL;
	memset(c->data, 0, c->used);
	c->used = 0;
}

size_t arena_used(const Arena *a)
{
	size_t n = 0;
	for (const ArenaChunk *c = a->head; c; c = c->next)
		n += c->used;
	return n;
}
