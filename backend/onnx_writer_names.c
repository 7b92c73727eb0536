/* onnx_writer_names.c - the ONNX writer: unique node names.
 */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- node names ------------------------------------------------------------ */

static int name_used(const Names *nm, Sym s)
{
	return hashmap_get(&nm->used, hash_u64(s), NULL, (const void *)(uintptr_t)s) != 0;
}

void take_name(Names *nm, Sym s)
{
	hashmap_intern(&nm->used, hash_u64(s), NULL, (const void *)(uintptr_t)s, s);
}

static int suffix_of(uintptr_t item, const void *base)
{
	return ((const Suffix *)item)->base == (Sym)(uintptr_t)base;
}

static uint32_t *next_suffix(Names *nm, Sym b)
{
	const void *key = (const void *)(uintptr_t)b;
	Suffix *x = (Suffix *)hashmap_get(&nm->next, hash_u64(b), suffix_of, key);
	if (!x) {
		x = ARENA_NEW(nm->a, Suffix);
		x->base = b;
		hashmap_intern(&nm->next, hash_u64(b), suffix_of, key, (uintptr_t)x);
	}
	return &x->next;
}

/* The op type without an overload: "add.Tensor" -> "add". */
Sym op_type(Sym name)
{
	const char *s = sym_str(name), *dot = strchr(s, '.');
	return dot ? sym_intern(s, (size_t)(dot - s)) : name;
}

/* "/layer1/conv": each scope's path made relative to the one before it,
 * the way PyTorch's TorchScript exporter names nodes; "" if no scopes. */
static void scope_prefix(FILE *f, const Prov *p)
{
	const char *prev = "";
	for (uint32_t i = 0; p && i < p->nscope; i++) {
		const char *s = sym_str(p->scope[i].path);
		size_t pl = strlen(prev);
		if (!s[0])
			continue;
		if (pl && strncmp(s, prev, pl) == 0 && s[pl] == '.')
			fprintf(f, "/%s", s + pl + 1);
		else
			fprintf(f, "/%s", s);
		prev = s;
	}
}

/* Unscoped names count from 0 (Add_0, Add_1); scoped ones are numbered
 * from the second on (/l/Mul, /l/Mul_1), as PyTorch does. */
static Sym unique_name(Names *nm, const char *base, int always_number)
{
	Sym b = sym_cstr(base);
	uint32_t *next = next_suffix(nm, b);
	if (!always_number && !name_used(nm, b)) {
		take_name(nm, b);
		return b;
	}
	char buf[64];
	for (;;) {
		size_t bl = strlen(base);
		char *s = bl + 24 > sizeof buf ? xmalloc(bl + 24) : buf;
		snprintf(s, bl + 24, "%s_%u", base, (*next)++ + (always_number ? 0 : 1));
		Sym c = sym_cstr(s);
		if (s != buf)
			free(s);
		if (!name_used(nm, c)) {
			take_name(nm, c);
			return c;
		}
	}
}

Sym derive_name(Names *nm, const Node *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&buf, &len);
	scope_prefix(f, n->prov);
	int scoped = ftell(f) > 0;
	fprintf(f, "%s%s", scoped ? "/" : "", sym_str(op_type(n->name)));
	fclose(f);
	Sym s = unique_name(nm, buf, !scoped);
	free(buf);
	return s;
}
