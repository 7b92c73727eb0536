/* registry.c - the pass table and pipeline strings. */
#include <stdlib.h>
#include <string.h>
#include "passes.h"

static const Pass passes[] = {
#define PASS(name, fn, summary) { name, summary, fn },
#include "passes.def"
#undef PASS
};

enum { NPASSES = sizeof passes / sizeof passes[0] };

const Pass *pass_lookup(const char *name, size_t len)
{
	for (size_t i = 0; i < NPASSES; i++)
		if (strlen(passes[i].name) == len && memcmp(passes[i].name, name, len) == 0)
			return &passes[i];
	return NULL;
}

const Pass *pass_at(size_t i) { return i < NPASSES ? &passes[i] : NULL; }

/* -O0 lowers only; -O1 adds clean-ups and folding (before the second
 * cse: folded constants that are equal merge); -O2 adds fusions (before
 * the last dce, which removes what they absorbed).  A level names only passes that
 * exist. */
const char *pipeline_for_level(int level)
{
	switch (level) {
	case 0: return "functionalize,decompose";
	case 1: return "functionalize,decompose,cse,simplify,fold,cse,dce";
	default: return "functionalize,decompose,cse,simplify,fold,cse,fuse,dce";
	}
}

Status pipeline_parse(const char *s, Pipeline *out, const char **bad, size_t *badlen)
{
	memset(out, 0, sizeof *out);
	while (*s) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		const Pass *p = pass_lookup(s, n);
		if (!p) {
			*bad = s;
			*badlen = n;
			pipeline_free(out);
			return FAILED;
		}
		XVEC_PUSH(*out, p);
		s += n + (e != NULL);
	}
	return OK;
}

void pipeline_free(Pipeline *p)
{
	free(p->v);
	memset(p, 0, sizeof *p);
}
