/* passes.h - the pass registry and pipelines.
 *
 * Every pass has one signature and one row in the registry (registry.c);
 * that table drives -passes=, -list-passes, --help and the -O pipelines,
 * which are strings parsed by the same code as -passes=. */
#ifndef ONNXC_PASSES_H
#define ONNXC_PASSES_H

#include "ir.h"

typedef struct PassOptions {
	int opset;                  /* target default-domain opset */
} PassOptions;

/* Returns 0 on success; on failure it has reported through diag. */
typedef int (*PassFn)(Module *m, const PassOptions *opt);

typedef struct Pass {
	const char *name;
	const char *summary;
	PassFn run;
} Pass;

const Pass *pass_lookup(const char *name, size_t len);
const Pass *pass_at(size_t i);             /* NULL past the end */

/* The pipeline of an -O level (0, 1 or 2), as a string. */
const char *pipeline_for_level(int level);

typedef struct Pipeline { const Pass **v; uint32_t n, cap; } Pipeline;
/* Parses "a,b,c"; an empty string is the empty pipeline.  On an unknown
 * name returns 0 and sets *bad to it (and *badlen). */
int pipeline_parse(const char *s, Pipeline *out, const char **bad, size_t *badlen);
void pipeline_free(Pipeline *p);

/* The passes themselves: one file each. */
int pass_dce(Module *m, const PassOptions *opt);

#endif
