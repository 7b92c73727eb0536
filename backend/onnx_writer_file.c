/* onnx_writer_file.c - the ONNX writer: the files, written to a temporary
 * file renamed over the destination, with external data in a side file.
 */
#define _XOPEN_SOURCE 700       /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "onnx_writer.h"

/* ---- files: temporary, then renamed ------------------------------------------ */

typedef struct OutFile {
	char *tmp;                  /* malloc'd; NULL once renamed */
	FILE *f;
	int err;                    /* errno of the first failed write */
} OutFile;

static int out_open(OutFile *o, const char *path)
{
	*o = (OutFile){ 0 };
	size_t n = strlen(path) + 16;
	o->tmp = xmalloc(n);
	snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		diag_error(file_loc(path), "cannot create output file: %s", strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	o->f = fdopen(fd, "wb");
	if (!o->f)
		ONNXC_BUG("fdopen: %s", strerror(errno));
	return 0;
}

static void out_write(OutFile *o, const void *p, size_t n)
{
	if (!o->err && n && fwrite(p, 1, n, o->f) != n)
		o->err = errno ? errno : EIO;
}

/* Tensor payloads go out in slices; a slice read from the weights mapping
 * (or an imported model's external data, ir/mapped.c) is dropped from the resident set once written, so peak memory stays near
 * one slice however large the weights are (mapped pages that were read
 * count in RSS until released, even though the kernel could reclaim them). */
static void out_payload(OutFile *o, const SafeTensors *st, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += PAYLOAD_SLICE) {
		size_t c = n - i < PAYLOAD_SLICE ? n - i : PAYLOAD_SLICE;
		out_write(o, p + i, c);
		safetensors_release(st, p + i, c);
		mapped_release(p + i, c);
		progress_add(c);
	}
}

/* Flushes and closes; 0 if every byte reached the file. */
static int out_finish(OutFile *o, const char *path)
{
	if (fclose(o->f) != 0 && !o->err)
		o->err = errno ? errno : EIO;
	o->f = NULL;
	if (o->err)
		diag_error(file_loc(path), "cannot write: %s", strerror(o->err));
	return o->err ? -1 : 0;
}

static void out_abort(OutFile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	*o = (OutFile){ 0 };
}

static int out_commit(OutFile *o, const char *path)
{
	if (rename(o->tmp, path) != 0) {
		diag_error(file_loc(path), "cannot rename the output into place: %s", strerror(errno));
		out_abort(o);
		return -1;
	}
	free(o->tmp);
	*o = (OutFile){ 0 };
	return 0;
}

typedef struct FileBuffer {
	ProtobufCBuffer base;
	OutFile *out;
	const SafeTensors *weights;
} FileBuffer;

/* protobuf-c hands bytes fields (raw_data) over whole, without a copy. */
static void filebuf_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	FileBuffer *fb = (FileBuffer *)b;
	out_payload(fb->out, fb->weights, data, len);
}

/* ---- external data ------------------------------------------------------------ */

typedef struct Ext {
	Writer *w;
	OutFile side;
	const char *location;       /* relative to the model's directory */
	const char *in_place;       /* -external-in-place: the weights file's location; else NULL */
	uint64_t off;
	size_t threshold;
	size_t n_side, n_in_place;  /* tensors written to the side file, pointing into the weights */
} Ext;

static void set_external(Writer *w, Onnx__TensorProto *t, const char *location, uint64_t off)
{
	t->n_external_data = 3;
	t->external_data = PTRS(w, Onnx__StringStringEntryProto, 3);
	t->external_data[0] = kv(w, "location", location);
	t->external_data[1] = kv(w, "offset", afmt(w, "%llu", (unsigned long long)off));
	t->external_data[2] = kv(w, "length", afmt(w, "%zu", t->raw_data.len));
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t->has_raw_data = 0;
	t->raw_data = (ProtobufCBinaryData){ 0, NULL };
}

/* A tensor whose bytes are still the weights file's own (a parameter no
 * pass changed) is named where it lies in that file: nothing is copied. */
static int ext_in_place(Ext *e, Onnx__TensorProto *t)
{
	uint64_t off;
	if (!e->in_place || !safetensors_locate(e->w->out->weights, t->raw_data.data, t->raw_data.len, &off))
		return 0;
	set_external(e->w, t, e->in_place, off);
	e->n_in_place++;
	return 1;
}

static void ext_tensor(Ext *e, Onnx__TensorProto *t)
{
	if (!t->has_raw_data || t->raw_data.len < e->threshold || ext_in_place(e, t))
		return;
	static const uint8_t zeros[EXTERNAL_ALIGN];
	uint64_t pad = (EXTERNAL_ALIGN - e->off % EXTERNAL_ALIGN) % EXTERNAL_ALIGN;
	out_write(&e->side, zeros, (size_t)pad);
	e->off += pad;
	out_payload(&e->side, e->w->out->weights, t->raw_data.data, t->raw_data.len);
	uint64_t at = e->off;
	e->off += t->raw_data.len;
	e->n_side++;
	set_external(e->w, t, e->location, at);
}

static void ext_graph(Ext *e, Onnx__GraphProto *g);

static void ext_attr(Ext *e, Onnx__AttributeProto *a)
{
	if (a->g)
		ext_graph(e, a->g);
	for (size_t i = 0; i < a->n_graphs; i++)
		ext_graph(e, a->graphs[i]);
}

/* Initializers only: attribute tensors stay inline, as ONNX Runtime wants. */
static void ext_graph(Ext *e, Onnx__GraphProto *g)
{
	for (size_t i = 0; i < g->n_initializer; i++)
		ext_tensor(e, g->initializer[i]);
	for (size_t i = 0; i < g->n_node; i++)
		for (size_t k = 0; k < g->node[i]->n_attribute; k++)
			ext_attr(e, g->node[i]->attribute[k]);
}

static char *side_path(Writer *w, const char *path, const char **location)
{
	const char *file = w->opt ? w->opt->external_file : NULL;
	const char *slash = strrchr(path, '/');
	if (!file) {
		*location = afmt(w, "%s.data", slash ? slash + 1 : path);
		return afmt(w, "%s.data", path);
	}
	if (strchr(file, '/') || !strcmp(file, ".") || !strcmp(file, "..") || !file[0]) {
		diag_error(file_loc(path), "external data file '%s' must be a plain file name: it is written beside the model", file);
		return NULL;
	}
	*location = file;
	return slash ? afmt(w, "%.*s/%s", (int)(slash - path), path, file) : (char *)file;
}

static const char *model_dir(Writer *w, const char *path)
{
	const char *slash = strrchr(path, '/');
	return !slash ? "." : slash == path ? "/" : afmt(w, "%.*s", (int)(slash - path), path);
}

/* -external-in-place: the weights file's location relative to the model's
 * directory, which must hold it (symbolic links resolved), as readers of
 * external data require.  *location stays NULL when the model reads no
 * weights file. */
static Status in_place_location(Writer *w, const char *path, const char **location)
{
	*location = NULL;
	const SafeTensors *st = w->out->weights;
	if (!st)
		return OK;
	const char *dir = model_dir(w, path);
	char *real = path_inside(dir, safetensors_path(st));
	char *rdir = real ? realpath(dir, NULL) : NULL;
	if (rdir) {
		size_t k = strlen(rdir);
		*location = afmt(w, "%s", real + k + (rdir[k - 1] != '/'));
	} else
		diag_error(file_loc(path), "-external-in-place: the weights file '%s' is not inside the model's directory '%s'",
			safetensors_path(st), dir);
	free(real);
	free(rdir);
	return *location ? OK : FAILED;
}

/* The side file replaces whatever has its name, by rename; a symbolic
 * link there that leads out of the model's directory is refused rather
 * than replaced, since whoever put it there meant the data to go
 * elsewhere, and onnxc writes only beside the model. */
static Status side_link_ok(Writer *w, const char *path, const char *side)
{
	struct stat sb;
	if (lstat(side, &sb) != 0 || !S_ISLNK(sb.st_mode))
		return OK;
	char *real = path_inside(model_dir(w, path), side);
	Status st = real ? OK : FAILED;
	if (st != OK)
		diag_error(file_loc(side), "the external data file is a symbolic link that leads outside the model's directory");
	free(real);
	return st;
}

static int want_external(const OnnxWriteOptions *opt, const OnnxBuilt *b)
{
	return (opt && opt->external) || b->init_bytes > AUTO_EXTERNAL_BYTES;
}

static int pack_model(OnnxBuilt *b, const char *path, OutFile *o)
{
	size_t size = protobuf_c_message_get_packed_size(&b->model->base);
	if (size > INT32_MAX) {
		diag_error(file_loc(path), "the model is %zu bytes, over protobuf's 2 GB limit; "
			"use -external-data", size);
		return -1;
	}
	FileBuffer fb = { { filebuf_append }, o, b->weights };
	protobuf_c_message_pack_to_buffer(&b->model->base, &fb.base);
	return out_finish(o, path);
}

/* Both files are complete before either is renamed; the side file goes
 * first so a model never names data that is not there. */
static int write_files(OnnxBuilt *b, const char *path, Ext *ext, const char *side)
{
	OutFile o;
	if (ext && out_open(&ext->side, side) != 0)
		return -1;
	if (out_open(&o, path) != 0) {
		if (ext)
			out_abort(&ext->side);
		return -1;
	}
	int rc = 0;
	if (ext) {
		ext_graph(ext, b->model->graph);
		if (ext->n_side == 0) {
			/* No initializer reached the threshold (or all point into
			 * the weights file): the model names no side file, so none
			 * is written. */
			out_abort(&ext->side);
			if (ext->n_in_place == 0)
				diag_warning(file_loc(path), "no initializer has %zu bytes or more: no external data file written",
					ext->threshold);
			ext = NULL;
		} else {
			rc = out_finish(&ext->side, side);
		}
	}
	if (rc == 0)
		rc = pack_model(b, path, &o);
	if (rc == 0 && ext)
		rc = out_commit(&ext->side, side);
	if (rc == 0)
		return out_commit(&o, path);
	if (ext)
		out_abort(&ext->side);
	out_abort(&o);
	return -1;
}

/* Writing fewer bytes than this takes a moment: no progress shown. */
enum { PROGRESS_MIN_BYTES = 256 << 20 };

int onnx_write(Module *m, const char *path, const OnnxWriteOptions *opt)
{
	OnnxBuilt b;
	int rc = onnx_build(m, opt, 1, &b);
	Writer w = { .m = m, .opt = opt, .a = &b.arena, .out = &b };
	Ext ext = { .w = &w };
	const char *side = NULL;
	if (rc == 0 && want_external(opt, &b)) {
		side = side_path(&w, path, &ext.location);
		ext.threshold = opt && opt->external_threshold ? opt->external_threshold : 1024;
		rc = side == NULL || side_link_ok(&w, path, side) != OK;
		if (rc == 0 && opt->external_in_place)
			rc = in_place_location(&w, path, &ext.in_place) != OK;
	}
	if (rc == 0) {
		progress_begin("writing weights (bytes)", b.init_bytes, PROGRESS_MIN_BYTES);
		rc = write_files(&b, path, side ? &ext : NULL, side);
		progress_end();
	}
	onnx_built_free(&b);
	return rc != 0;
}
