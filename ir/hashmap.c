/* hashmap.c - the one hash map of the project (see ir.h).
 *
 * The process-wide name table (intern.c) keeps its own layout: it is the
 * parser's hottest loop and keeps a 32-bit hash beside each 32-bit Sym in
 * one 8-byte slot, half the size of this map's entries, and it is seeded
 * with the fixed names of syms.def. */
#include <stdlib.h>
#include "ir.h"

void hashmap_free(HashMap *h)
{
	free(h->item);
	free(h->hash);
	*h = (HashMap){ 0 };
}

static int same(const HashMap *h, uint32_t i, uint64_t hash, HashEq eq, const void *key)
{
	if (h->hash[i] != hash)
		return 0;
	return eq ? eq(h->item[i], key) : h->item[i] == (uintptr_t)key;
}

uintptr_t hashmap_get(const HashMap *h, uint64_t hash, HashEq eq, const void *key)
{
	if (!h->cap)
		return 0;
	for (uint32_t i = (uint32_t)hash & (h->cap - 1); h->item[i]; i = (i + 1) & (h->cap - 1))
		if (same(h, i, hash, eq, key))
			return h->item[i];
	return 0;
}

static void grow(HashMap *h)
{
	HashMap old = *h;
	h->cap = old.cap ? old.cap * 2 : 64;
	h->item = xcalloc(h->cap, sizeof *h->item);
	h->hash = xcalloc(h->cap, sizeof *h->hash);
	for (uint32_t i = 0; i < old.cap; i++) {
		if (!old.item[i])
			continue;
		uint32_t j = (uint32_t)old.hash[i] & (h->cap - 1);
		while (h->item[j])
			j = (j + 1) & (h->cap - 1);
		h->item[j] = old.item[i];
		h->hash[j] = old.hash[i];
	}
	free(old.item);
	free(old.hash);
}

uintptr_t hashmap_intern(HashMap *h, uint64_t hash, HashEq eq, const void *key, uintptr_t item)
{
	ONNXC_ASSERT(item != 0);
	if ((h->n + 1) * 2 > h->cap)
		grow(h);
	uint32_t i = (uint32_t)hash & (h->cap - 1);
	for (; h->item[i]; i = (i + 1) & (h->cap - 1))
		if (same(h, i, hash, eq, key))
			return h->item[i];
	h->item[i] = item;
	h->hash[i] = hash;
	h->n++;
	return item;
}
