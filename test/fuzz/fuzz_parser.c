/* fuzz_parser.c - libFuzzer harness for the .fxir reader.
 *
 * Each input is parsed as one .fxir file; a module that parses is verified
 * and printed.  Diagnostics go to /dev/null, and the error count is reset
 * every run so that the -max-errors cap never carries over. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "frontend.h"
#include "ir.h"

static FILE *null_stream;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_stream) {
		null_stream = fopen("/dev/null", "w");
		if (!null_stream)
			abort();
		diag_set_stream(null_stream);
	}
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	Module *m = parse_fxir("fuzz.fxir", buf, size);
	if (m) {
		verify_module(m);
		print_module(null_stream, m);
		module_free(m);
	}
	/* The diagnostics registry keeps a pointer to the text; drop it with
	 * the buffer by registering an empty source in its place. */
	diag_add_source(sym_cstr("fuzz.fxir"), "", 0);
	diag_clear();
	free(buf);
	return 0;
}
