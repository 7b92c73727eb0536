/* fuzz_common.h - the set-up every fuzz harness shares (included by each,
 * one translation unit per harness). */
#ifndef ONNXC_FUZZ_COMMON_H
#define ONNXC_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

/* Diagnostics go to /dev/null, which is returned for printers to write to. */
static inline FILE *fuzz_quiet(void)
{
	FILE *f = fopen("/dev/null", "w");
	if (!f)
		abort();
	diag_set_stream(f);
	return f;
}

/* A private directory $TMPDIR/onnxc-fuzz-NAME.XXXXXX (/tmp when TMPDIR is
 * unset or too long for dir, which leaves 64 bytes for file names). */
static inline void fuzz_tempdir(char *dir, size_t n, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !tmp[0] || strlen(tmp) + strlen(name) + 64 > n)
		tmp = "/tmp";
	snprintf(dir, n, "%s/onnxc-fuzz-%s.XXXXXX", tmp, name);
	if (!mkdtemp(dir))
		abort();
}

#endif
