/* fuzz_safetensors.c - libFuzzer harness for the tensor file readers.
 *
 * Each input is written to a file in a directory made for the run and read
 * as a safetensors file (the weights of a model, `onnxc run --input`) and
 * as a .npy file.  Every tensor a safetensors file lists is copied out
 * (rt_from_safetensor checks its size against its shape again) and its
 * bytes summed, so a range that strays outside the mapping is touched.
 * Diagnostics go to /dev/null, and the error count is reset every run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ir.h"
#include "runtime.h"
#include "fuzz_common.h"

static FILE *null_stream;
static char dir[1024];
static char st_path[sizeof dir + 32];
static char npy_path[sizeof dir + 32];

static void cleanup(void)
{
	unlink(st_path);
	unlink(npy_path);
	rmdir(dir);
}

static void setup(void)
{
	null_stream = fuzz_quiet();
	fuzz_tempdir(dir, sizeof dir, "st");
	snprintf(st_path, sizeof st_path, "%s/fuzz.safetensors", dir);
	snprintf(npy_path, sizeof npy_path, "%s/fuzz.npy", dir);
	atexit(cleanup);
}

static void put(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
}

static void read_safetensors(void)
{
	SafeTensors *st = safetensors_open(st_path);
	if (!st)
		return;
	volatile uint8_t sum = 0;
	for (size_t i = 0; i < safetensors_count(st); i++) {
		const SafeTensor *t = safetensors_at(st, i);
		if (safetensors_find(st, t->name) != t)
			abort();        /* names are unique and sorted */
		for (size_t k = 0; k < t->nbytes; k++)
			sum += t->data[k];
		RTensor *r = rt_from_safetensor(st_path, t);
		if (r)
			rt_free(r);
	}
	(void)sum;
	safetensors_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_stream)
		setup();
	put(st_path, data, size);
	read_safetensors();
	put(npy_path, data, size);
	RTensor *r = rt_read_npy(npy_path);
	if (r)
		rt_free(r);
	diag_clear();
	return 0;
}
