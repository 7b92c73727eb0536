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

static uint32_t load32(const unsigned char *b)
{
	uint32_t v;
	memcpy(&v, b, 4);
	return v;
}

/* The last n < 8 bytes as one word, without a byte loop: two overlapping
 * 4-byte loads, or the first, middle and last byte.  Distinct tails of one
 * length give distinct words (n is mixed into the hash separately). */
static uint64_t tail_word(const unsigned char *b, size_t n)
{
	if (n >= 4)
		return (uint64_t)load32(b) << 32 | load32(b + n - 4);
	if (n)
		return (uint64_t)b[0] << 16 | (uint64_t)b[n / 2] << 8 | b[n - 1];
	return 0;
}

/* n bytes at a and b are equal; short names without a call to memcmp. */
static int same_bytes(const unsigned char *a, const unsigned char *b, size_t n)
{
	if (n >= 16)
		return memcmp(a, b, n) == 0;
	if (n >= 8) {
		uint64_t x, y, u, v;
		memcpy(&x, a, 8), memcpy(&y, b, 8), memcpy(&u, a + n - 8, 8), memcpy(&v, b + n - 8, 8);
		return x == y && u == v;
	}
	return tail_word(a, n) == tail_word(b, n);
}

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
	w = tail_word(b, n);
	h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static uint32_t hash(const char *s, size_t n) { return (uint32_t)hash_mem(s, n); }

static void rehash(void)
{
	uint32_t n = nslots ? nslots * 2 : 1024;
	Slot *ns = xcalloc(n, sizeof *ns);
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

static const char *const fixed[] = {
#define SYM(id, text) text,
#include "syms.def"
#undef SYM
};

/* The fixed names go first, in syms.def order, so S_<id> is their Sym;
 * the op registry's names follow. */
static void seed(void)
{
	captab = 1024;
	tab = xcalloc(captab, sizeof *tab);
	tab[0] = (Entry){ "", 0 };
	ntab = 1;
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		if (sym_cstr(fixed[i]) != i + 1)
			ONNXC_BUG("syms.def lists \"%s\" twice", fixed[i]);
	op_registry_init();
}

Sym sym_intern(const char *s, size_t n)
{
	if (ntab == 0)
		seed();
	if ((ntab + 1) * 2 > nslots)
		rehash();
	uint32_t full = hash(s, n), h = full & (nslots - 1);
	for (; slots[h].sym; h = (h + 1) & (nslots - 1)) {
		if (slots[h].hash != full)
			continue;
		Entry *e = &tab[slots[h].sym];
		if (e->n == n && same_bytes((const unsigned char *)e->s, (const unsigned char *)s, n))
			return slots[h].sym;
	}
	if (ntab >= captab) {
		captab = captab ? captab * 2 : 1024;
		tab = xreallocarray(tab, captab, sizeof *tab);
	}
	tab[ntab] = (Entry){ arena_strndup(&strings, s, n), n };
	slots[h] = (Slot){ ntab, full };
	return ntab++;
}

Sym sym_cstr(const char *s) { return sym_intern(s, strlen(s)); }

void syms_init(void)
{
	if (ntab == 0)
		seed();
}

/* Before syms_init (module_new, op_lookup and sym_intern call it) every
 * Sym reads as "": nothing can hold one yet. */
const char *sym_str(Sym s) { return s < ntab ? tab[s].s : ""; }

size_t sym_len(Sym s) { return s < ntab ? tab[s].n : 0; }
