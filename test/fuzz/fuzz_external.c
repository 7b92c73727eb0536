/* fuzz_external.c - libFuzzer harness for the external-data resolver.
 *
 * An input is up to four lines: an external-data location, an offset, a
 * length and the number of f32 elements of the tensor (a missing line
 * leaves that entry out).  The harness builds a model whose one
 * initializer names that external data and imports it as if it sat in a
 * model directory made for the run, which holds data files, a
 * subdirectory, and symbolic links that stay inside or lead outside (to a
 * file beside the directory, through a linked directory, by an absolute
 * path, in a loop, to nothing), and a FIFO.  A location that resolves
 * outside the directory must never be read: the file outside holds bytes
 * no file inside holds, and the harness aborts if they show up.
 * Diagnostics go to /dev/null, and the error count is reset every run. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "frontend.h"
#include "ir.h"
#include "onnx.pb-c.h"
#include "fuzz_common.h"

#define OUTSIDE_BYTE 0xa5       /* only the file outside holds it: the others count 0..127 */

static FILE *null_stream;
static char top[1024];
static char model_dir[sizeof top + 16];
static char model_path[sizeof top + 32];

static const char *const links[][2] = {   /* name in the model dir, target */
	{ "link_in.bin", "data.bin" },
	{ "link_out.bin", "../outside.bin" },
	{ "up", ".." },
	{ "sub/link_up.bin", "../../outside.bin" },
	{ "loop.bin", "loop.bin" },
	{ "dangling.bin", "nothing.bin" },
};

static char *at(const char *base, const char *name)
{
	static char buf[4][sizeof top + 64];
	static int k;
	char *b = buf[k = (k + 1) % 4];
	snprintf(b, sizeof buf[0], "%s/%s", base, name);
	return b;
}

static void fill(const char *path, size_t n, uint8_t byte)
{
	FILE *f = fopen(path, "wb");
	for (size_t i = 0; f && i < n; i++)
		fputc(byte ? byte : (int)(i % 128), f);
	if (!f || fclose(f) != 0)
		abort();
}

static void cleanup(void)
{
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		unlink(at(model_dir, links[i][0]));
	unlink(at(model_dir, "abs.bin"));
	unlink(at(model_dir, "fifo"));
	unlink(at(model_dir, "data.bin"));
	unlink(at(model_dir, "sub/inner.bin"));
	rmdir(at(model_dir, "sub"));
	rmdir(model_dir);
	unlink(at(top, "outside.bin"));
	rmdir(top);
}

static void setup(void)
{
	null_stream = fuzz_quiet();
	fuzz_tempdir(top, sizeof top, "ext");
	snprintf(model_dir, sizeof model_dir, "%s/model", top);
	snprintf(model_path, sizeof model_path, "%s/model.onnx", model_dir);
	if (mkdir(model_dir, 0700) || mkdir(at(model_dir, "sub"), 0700))
		abort();
	atexit(cleanup);
	fill(at(top, "outside.bin"), 8192, OUTSIDE_BYTE);
	fill(at(model_dir, "data.bin"), 8192, 0);
	fill(at(model_dir, "sub/inner.bin"), 64, 0);
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
		if (symlink(links[i][1], at(model_dir, links[i][0])) != 0)
			abort();
	if (symlink(at(top, "outside.bin"), at(model_dir, "abs.bin")) != 0 || mkfifo(at(model_dir, "fifo"), 0600) != 0)
		abort();
}

/* Splits the input into at most n NUL-terminated lines (in a copy). */
static int lines(char *s, size_t size, char **out, int n)
{
	int k = 0;
	out[k++] = s;
	for (size_t i = 0; i < size && k < n; i++)
		if (s[i] == '\n') {
			s[i] = 0;
			out[k++] = s + i + 1;
		}
	return k;
}

static void import(const uint8_t *buf, size_t n)
{
	Module *m = onnx_import_buffer(model_path, buf, n);
	if (!m)
		return;
	for (uint32_t i = 0; i < m->graphs.v[0]->inits.n; i++) {
		const Tensor *t = val(m, m->graphs.v[0]->inits.v[i])->init;
		for (size_t k = 0; t && t->data && k < t->nbytes; k++)
			if (t->data[k] == OUTSIDE_BYTE)
				abort();    /* read from outside the model's directory */
	}
	verify_module(m);
	print_module(null_stream, m);
	module_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_stream)
		setup();
	char *text = xmalloc(size + 1), *f[4] = { 0 };
	memcpy(text, data, size);
	text[size] = 0;
	int nf = lines(text, size, f, 4);
	static const char *const keys[] = { "location", "offset", "length" };
	Onnx__StringStringEntryProto kv[3], *kvp[3];
	size_t nkv = 0;
	for (int i = 0; i < 3 && i < nf; i++) {
		onnx__string_string_entry_proto__init(&kv[nkv]);
		kv[nkv].key = (char *)keys[i];
		kv[nkv].value = f[i];
		kvp[nkv] = &kv[nkv];
		nkv++;
	}
	int64_t dim = nf > 3 ? strtoll(f[3], NULL, 10) : 16;
	Onnx__TensorProto t;
	onnx__tensor_proto__init(&t);
	t.name = "w";
	t.has_data_type = 1;
	t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t.n_dims = 1;
	t.dims = &dim;
	t.has_data_location = 1;
	t.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t.n_external_data = nkv;
	t.external_data = kvp;
	Onnx__TensorProto *tp = &t;
	char *in[] = { "w" }, *out[] = { "y" };
	Onnx__NodeProto node;
	onnx__node_proto__init(&node);
	node.op_type = "Identity";
	node.n_input = 1;
	node.input = in;
	node.n_output = 1;
	node.output = out;
	Onnx__NodeProto *np = &node;
	Onnx__ValueInfoProto y;
	onnx__value_info_proto__init(&y);
	y.name = "y";
	Onnx__ValueInfoProto *yp = &y;
	Onnx__GraphProto g;
	onnx__graph_proto__init(&g);
	g.name = "g";
	g.n_node = 1;
	g.node = &np;
	g.n_initializer = 1;
	g.initializer = &tp;
	g.n_output = 1;
	g.output = &yp;
	Onnx__OperatorSetIdProto op;
	onnx__operator_set_id_proto__init(&op);
	op.has_version = 1;
	op.version = 18;
	Onnx__OperatorSetIdProto *opp = &op;
	Onnx__ModelProto mp;
	onnx__model_proto__init(&mp);
	mp.has_ir_version = 1;
	mp.ir_version = 10;
	mp.graph = &g;
	mp.n_opset_import = 1;
	mp.opset_import = &opp;
	size_t n = onnx__model_proto__get_packed_size(&mp);
	uint8_t *buf = xmalloc(n + 1);
	onnx__model_proto__pack(&mp, buf);
	import(buf, n);
	free(buf);
	free(text);
	diag_clear();
	return 0;
}
