/* fuzz_parser.c - libFuzzer harness for the .fxir reader.
 *
 * Each input is parsed as one .fxir file, twice: with the lexer's one-token
 * fast paths and without them (fxir_fast_lex).  Both must accept or reject
 * it alike, and a module that parses must print the same text both ways;
 * a difference aborts.  A module that parses is also verified.
 * Diagnostics go to /dev/null, and the error count is reset every run so
 * that the -max-errors cap never carries over. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frontend.h"
#include "ir.h"
#include "fuzz_common.h"

static FILE *null_stream;

/* The module's printed text (malloc'd), or NULL if it did not parse. */
static char *parse_and_print(const char *buf, size_t size, int fast, size_t *len)
{
	fxir_fast_lex = fast;
	Module *m = parse_fxir("fuzz.fxir", buf, size);
	diag_clear();
	if (!m)
		return NULL;
	verify_module(m);
	diag_clear();
	char *out = NULL;
	FILE *f = open_memstream(&out, len);
	if (!f)
		abort();
	print_module(f, m);
	fclose(f);
	module_free(m);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_stream)
		null_stream = fuzz_quiet();
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	size_t na = 0, nb = 0;
	char *a = parse_and_print(buf, size, 1, &na);
	char *b = parse_and_print(buf, size, 0, &nb);
	if (!a != !b || (a && (na != nb || memcmp(a, b, na) != 0))) {
		fprintf(stderr, "fast and token-by-token lexing disagree:\n--- fast\n%s\n--- slow\n%s\n",
			a ? a : "(rejected)", b ? b : "(rejected)");
		abort();
	}
	free(a);
	free(b);
	/* The diagnostics registry keeps a pointer to the text; drop it with
	 * the buffer by registering an empty source in its place. */
	diag_add_source(sym_cstr("fuzz.fxir"), "", 0);
	diag_clear();
	free(buf);
	return 0;
}
