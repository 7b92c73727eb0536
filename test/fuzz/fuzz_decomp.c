/* fuzz_decomp.c - libFuzzer harness for the decomposition library loader.
 *
 * Each input is written to a file and loaded as a user decomposition file
 * (-decomp=FILE) in front of an empty built-in directory, then the
 * decompose pass runs with that library over a fixed program that calls a
 * few ATen ops, so a decomposition the input defines for one of them is
 * instantiated: guards, type-generic bodies, calls between decompositions.
 * The result is verified and printed.  Diagnostics go to /dev/null, and
 * the error count is reset every run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "frontend.h"
#include "ir.h"
#include "passes.h"
#include "fuzz_common.h"

static FILE *null_stream;
static char dir[1024];
static char lib_dir[sizeof dir + 16];
static char path[sizeof dir + 32];

static const char program[] =
	"graph @g(%x: f32[2,3], %y: f32[2,3], %i: i64[2]) {\n"
	"  %a = aten::relu(%x) : f32[2,3]\n"
	"  %b = aten::add.Tensor(%a, %y, alpha=2) : f32[2,3]\n"
	"  %c = aten::gelu(%b, approximate=\"tanh\") : f32[2,3]\n"
	"  %d = aten::sum.dim_IntList(%c, [1], true) : f32[2,1]\n"
	"  %e = aten::view(%d, [2]) : f32[2]\n"
	"  %f = aten::index_select(%x, 0, %i) : f32[2,3]\n"
	"  %g = aten::mul.Scalar(%f, 0.5) : f32[2,3]\n"
	"  return %e, %g\n"
	"}\n";

static void cleanup(void)
{
	unlink(path);
	rmdir(lib_dir);
	rmdir(dir);
}

static void setup(void)
{
	null_stream = fuzz_quiet();
	fuzz_tempdir(dir, sizeof dir, "decomp");
	snprintf(lib_dir, sizeof lib_dir, "%s/lib", dir);
	snprintf(path, sizeof path, "%s/fuzz.fxir", dir);
	if (mkdir(lib_dir, 0700) != 0)
		abort();
	atexit(cleanup);
}

static void decompose(DecompLib *lib)
{
	Module *m = parse_fxir("program.fxir", program, sizeof program - 1);
	if (!m)
		abort();        /* the fixed program always parses */
	PassOptions opt = { .opset = 18, .allow_custom_ops = 1, .lib = lib };
	if (pass_decompose(m, &opt) == OK && diag_error_count() == 0) {
		verify_module(m);
		print_module(null_stream, m);
	}
	module_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_stream)
		setup();
	FILE *f = fopen(path, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
	const char *files[] = { path };
	DecompLib *lib = decomp_lib_new(lib_dir, files, 1);
	if (decomp_lib_load(lib) == OK) {
		diag_clear();
		decompose(lib);
	}
	decomp_lib_free(lib);
	diag_clear();
	return 0;
}
