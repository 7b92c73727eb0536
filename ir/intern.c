/* intern.c - process-wide interned names.  Open addressing on an FNV-1a
 * hash; Sym is the index into the string table, 0 meaning "no name". */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct { const char *s; size_t n; } Entry;

static Entry *tab;              /* tab[0] unused */
static uint32_t ntab, captab;
/* A slot keeps the hash beside the Sym, so a probe that misses does not
 * touch the string table. */
typedef struct { uint32_t sym, hash; } Slot;
static Slot *slots;
static uint32_t nslots;
static Arena strings;

/* Eight bytes a step: a multiply and a rotate per word, a final mix so
 * the low bits (the table index) depend on every byte. */
uint64_t hash_mem(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	for (; n >= 8; n -= 8, b += 8) {
		memcpy(&w, b, 8);
		h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
		h = (h << 31) | (h >> 33);
	}
	w = 0;
	for (size_t i = 0; i < n; i++)  /* a byte loop: memcpy of n < 8 is a call */
		w |= (uint64_t)b[i] << (8 * i);
	h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static uint32_t hash(const char *s, size_t n) { return (uint32_t)hash_mem(s, n); }

static void rehash(void)
{
	uint32_t n = nslots ? nslots * 2 : 1024;
	Slot *ns = calloc(n, sizeof *ns);
	if (!ns)
		ONNXC_BUG("out of memory");
	for (uint32_t i = 0; i < nslots; i++) {
		if (!slots[i].sym)
			continue;
		uint32_t h = slots[i].hash & (n - 1);
		while (ns[h].sym)
			h = (h + 1) & (n - 1);
		ns[h] = slots[i];
	}
	free(slots);
	slots = ns;
	nslots = n;
}

Sym sym_intern(const char *s, size_t n)
{
	if (ntab == 0)
		ntab = 1;
	if ((ntab + 1) * 2 > nslots)
		rehash();
	uint32_t full = hash(s, n), h = full & (nslots - 1);
	for (; slots[h].sym; h = (h + 1) & (nslots - 1)) {
		if (slots[h].hash != full)
			continue;
		Entry *e = &tab[slots[h].sym];
		if (e->n == n && memcmp(e->s, s, n) == 0)
			return slots[h].sym;
	}
	if (ntab >= captab) {
		captab = captab ? captab * 2 : 1024;
		tab = realloc(tab, captab * sizeof *tab);
		if (!tab)
			ONNXC_BUG("out of memory");
	}
	tab[ntab] = (Entry){ arena_strndup(&strings, s, n), n };
	slots[h] = (Slot){ ntab, full };
	return ntab++;
}

Sym sym_cstr(const char *s) { return sym_intern(s, strlen(s)); }

const char *sym_str(Sym s) { return s && s < ntab ? tab[s].s : ""; }

size_t sym_len(Sym s) { return s && s < ntab ? tab[s].n : 0; }
