/* fuzz_import.c - libFuzzer harness for the ONNX importer.
 *
 * Each input is read as one binary model (onnx_import_buffer, no file in
 * between).  A model that imports is verified and printed; one that also
 * verifies is written back with onnx_write, as `onnxc m.onnx -emit=onnx`
 * would, to a file that is removed at once.  Diagnostics go to /dev/null,
 * and the error count is reset every run.
 *
 * The model is named as if it sat in an empty directory made for the run,
 * so external data references find nothing to read and fail the same way
 * every time, whatever the current directory holds.  The writer's output
 * goes to the same directory.
 *
 * ONNXC_FUZZ_NO_WRITE=1 in the environment skips the writer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend.h"
#include "frontend.h"
#include "ir.h"
#include "fuzz_common.h"

static FILE *null_stream;
static char dir[1024];
static char model_path[sizeof dir + 16];
static char out_path[sizeof dir + 16];
static int write_back = 1;

static void cleanup(void)
{
	unlink(out_path);
	rmdir(dir);
}

static void setup(void)
{
	null_stream = fuzz_quiet();
	fuzz_tempdir(dir, sizeof dir, "import");
	snprintf(model_path, sizeof model_path, "%s/fuzz.onnx", dir);
	snprintf(out_path, sizeof out_path, "%s/out.onnx", dir);
	const char *nw = getenv("ONNXC_FUZZ_NO_WRITE");
	write_back = !(nw && nw[0] == '1');
	atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_stream)
		setup();
	Module *m = onnx_import_buffer(model_path, data, size);
	if (m) {
		int errors = verify_module(m);
		print_module(null_stream, m);
		if (errors == 0 && write_back) {
			OnnxWriteOptions opt = { 0 };
			opt.weights_dir = dir;
			onnx_write(m, out_path, &opt);
			unlink(out_path);
		}
		module_free(m);
	}
	diag_clear();
	return 0;
}
