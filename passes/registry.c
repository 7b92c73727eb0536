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
 * cse: folded constants that are equal merge), in a group repeated until
 * a round changes nothing (a constant fold makes can reveal an x * 1 for
 * simplify), so -O1 of its own output is a fixed point; -O2 adds fusions,
 * in a group repeated while it changes the graph: dce removes what a
 * fusion absorbed, simplify, fold and cse then see the fused graph (two
 * means that became one GlobalAveragePool merge, and a pattern over them
 * fuses in the next round).  A level names only passes that exist. */
const char *pipeline_for_level(int level)
{
	switch (level) {
	case 0: return "functionalize,decompose";
	case 1: return "functionalize,decompose,merge_weights,cse,[simplify,fold,cse,dce]";
	default: return "functionalize,decompose,merge_weights,cse,simplify,fold,shape_consts,cse,dce,hoist_slice,[fuse,dce,simplify,fold,initializers,cse,dce]";
	}
}

Status pipeline_parse(const char *s, Pipeline *out, const char **bad, size_t *badlen)
{
	memset(out, 0, sizeof *out);
	int open = 0;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		int opens = n && *s == '[', closes = n > (size_t)opens && s[n - 1] == ']';
		const Pass *p = pass_lookup(s + opens, n - (size_t)opens - (size_t)closes);
		if (opens && !open && !out->loop_end) {
			open = 1;
			out->loop_first = out->n;
		} else if (opens) {
			p = NULL;
		}
		if (closes && open) {
			open = 0;
			out->loop_end = out->n + 1;
		} else if (closes) {
			p = NULL;
		}
		if (!p || (!e && open)) {
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

/* ---- per-rewrite statistics -------------------------------------------------- */
enum { REWRITE_STATS_MAX = 128 };   /* more than the rules of every pass */
static RewriteStat rewrite_table[REWRITE_STATS_MAX];
static uint32_t nrewrite;

void rewrite_count(const char *pass, const char *rule)
{
	uint32_t i = 0;
	while (i < nrewrite && (strcmp(rewrite_table[i].rule, rule) || strcmp(rewrite_table[i].pass, pass)))
		i++;
	if (i == nrewrite) {
		if (nrewrite == REWRITE_STATS_MAX)
			return;
		rewrite_table[nrewrite++] = (RewriteStat){ pass, rule, 0, 0 };
	}
	rewrite_table[i].run++;
	rewrite_table[i].total++;
}

const RewriteStat *rewrite_stats(uint32_t *n)
{
	*n = nrewrite;
	return rewrite_table;
}

void rewrite_stats_new_run(void)
{
	for (uint32_t i = 0; i < nrewrite; i++)
		rewrite_table[i].run = 0;
}
