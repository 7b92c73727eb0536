/* xalloc.c - allocation that does not fail.
 *
 * Running out of memory is not an internal bug and not bad input: onnxc
 * says so in one line and exits 1.  Every malloc-family call of the
 * project goes through here, so there is one place that checks. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

_Noreturn static void out_of_memory(size_t n)
{
	fprintf(stderr, "onnxc: error: out of memory (asking for %zu bytes)\n", n);
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		out_of_memory(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		out_of_memory(n);
	return q;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		out_of_memory(SIZE_MAX);
	return xrealloc(p, n * size);
}

void *xgrow_index(void *p, uint32_t *cap, uint32_t index, size_t size)
{
	if (index < *cap)
		return p;
	uint32_t n = *cap ? *cap : 256;
	while (n <= index)
		n *= 2;
	p = xreallocarray(p, n, size);
	memset((char *)p + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
	*cap = n;
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

FILE *xmemstream(char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);
	if (!f)
		out_of_memory(0);
	return f;
}
