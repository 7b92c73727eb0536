/* safetensors.c - open, validate and look up tensors in a safetensors file.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON, then the
 * data region.  The JSON maps tensor names to {dtype, shape, data_offsets}
 * with offsets relative to the data region; "__metadata__" holds strings.
 * The file is mmap'd read-only and never copied: tensors point into the
 * mapping.  Every number from the file is checked before it is used.
 */
/* madvise(MADV_DONTNEED) is not POSIX. */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "runtime.h"

struct SafeTensors {
	const char *path;
	uint8_t *map;
	size_t size;
	const uint8_t *region;      /* start of the data region */
	size_t region_size;
	SafeTensor *t;              /* sorted by name */
	size_t n;
};

static Loc file_loc(const char *path)
{
	return (Loc){ sym_cstr(path), 0, 0 };
}

static int map_file(SafeTensors *st)
{
	int fd = open(st->path, O_RDONLY);
	if (fd < 0) {
		diag_error(file_loc(st->path), "cannot open weights file: %s", strerror(errno));
		return -1;
	}
	struct stat sb;
	int rc = -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
		diag_error(file_loc(st->path), "weights file is not a regular file");
	else if (sb.st_size < 8)
		diag_error(file_loc(st->path), "not a safetensors file: %lld bytes, the header needs 8",
			(long long)sb.st_size);
	else {
		st->size = (size_t)sb.st_size;
		st->map = mmap(NULL, st->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (st->map == MAP_FAILED) {
			st->map = NULL;
			diag_error(file_loc(st->path), "cannot map weights file: %s", strerror(errno));
		} else
			rc = 0;
	}
	close(fd);
	return rc;
}

/* Reads a non-negative JSON integer; the caller names what it was. */
static int get_uint(json_t *j, int64_t *out)
{
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return -1;
	*out = (int64_t)json_integer_value(j);
	return 0;
}

static int read_shape(SafeTensors *st, SafeTensor *t, json_t *shape, uint64_t *numel)
{
	if (!json_is_array(shape) || json_array_size(shape) > 64) {
		diag_error(file_loc(st->path), "tensor '%s': shape must be a list of at most 64 dims", t->name);
		return -1;
	}
	t->rank = (int32_t)json_array_size(shape);
	int64_t *dims = xcalloc((size_t)t->rank + 1, sizeof *dims);
	t->shape = dims;
	*numel = 1;
	for (int32_t i = 0; i < t->rank; i++) {
		if (get_uint(json_array_get(shape, (size_t)i), &dims[i]) != 0) {
			diag_error(file_loc(st->path), "tensor '%s': dim %d is not a non-negative integer",
				t->name, i);
			return -1;
		}
		if (dims[i] && *numel > UINT64_MAX / 16 / (uint64_t)dims[i]) {
			diag_error(file_loc(st->path), "tensor '%s': too many elements", t->name);
			return -1;
		}
		*numel *= (uint64_t)dims[i];
	}
	return 0;
}

static int read_offsets(SafeTensors *st, SafeTensor *t, json_t *offs, uint64_t want)
{
	int64_t b, e;
	if (!json_is_array(offs) || json_array_size(offs) != 2
	    || get_uint(json_array_get(offs, 0), &b) || get_uint(json_array_get(offs, 1), &e)) {
		diag_error(file_loc(st->path), "tensor '%s': data_offsets must be [begin, end]", t->name);
		return -1;
	}
	if (b > e || (uint64_t)e > st->region_size) {
		diag_error(file_loc(st->path), "tensor '%s': data_offsets [%lld, %lld] outside the data region of %zu bytes",
			t->name, (long long)b, (long long)e, st->region_size);
		return -1;
	}
	if ((uint64_t)(e - b) != want) {
		diag_error(file_loc(st->path), "tensor '%s': %lld bytes of data, its dtype and shape need %llu",
			t->name, (long long)(e - b), (unsigned long long)want);
		return -1;
	}
	t->data = st->region + b;
	t->nbytes = (size_t)(e - b);
	return 0;
}

static int read_entry(SafeTensors *st, SafeTensor *t, json_t *j)
{
	json_t *dt = json_object_get(j, "dtype");
	if (!json_is_object(j) || !json_is_string(dt)) {
		diag_error(file_loc(st->path), "tensor '%s': entry needs a dtype string", t->name);
		return -1;
	}
	t->dtype = dtype_from_safetensors(json_string_value(dt));
	if (t->dtype == DT_UNDEF || dtype_bits(t->dtype) % 8 != 0) {
		diag_error(file_loc(st->path), "tensor '%s': unknown dtype '%s'", t->name, json_string_value(dt));
		return -1;
	}
	uint64_t numel;
	if (read_shape(st, t, json_object_get(j, "shape"), &numel) != 0)
		return -1;
	uint64_t want = numel * (uint64_t)(dtype_bits(t->dtype) / 8);
	return read_offsets(st, t, json_object_get(j, "data_offsets"), want);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const SafeTensor *)a)->name, ((const SafeTensor *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
	const SafeTensor *x = *(const SafeTensor *const *)a, *y = *(const SafeTensor *const *)b;
	return x->data < y->data ? -1 : x->data > y->data;
}

/* Sorting by start makes the overlap test one linear sweep: each tensor
 * must start at or after the end of the one before it. */
static int check_overlaps(SafeTensors *st)
{
	const SafeTensor **v = xmalloc((st->n + 1) * sizeof *v);
	for (size_t i = 0; i < st->n; i++)
		v[i] = &st->t[i];
	qsort(v, st->n, sizeof *v, by_offset);
	int rc = 0;
	for (size_t i = 1; i < st->n && rc == 0; i++)
		if (v[i]->data < v[i - 1]->data + v[i - 1]->nbytes) {
			diag_error(file_loc(st->path), "tensors '%s' and '%s' overlap", v[i - 1]->name, v[i]->name);
			rc = -1;
		}
	free(v);
	return rc;
}

static int read_entries(SafeTensors *st, json_t *root)
{
	st->t = xcalloc(json_object_size(root) + 1, sizeof *st->t);
	const char *key;
	json_t *j;
	json_object_foreach(root, key, j) {
		if (strcmp(key, "__metadata__") == 0)
			continue;
		SafeTensor *t = &st->t[st->n++];
		t->name = xstrdup(key);
		if (read_entry(st, t, j) != 0)
			return -1;
	}
	qsort(st->t, st->n, sizeof *st->t, by_name);
	return check_overlaps(st);
}

static int read_header(SafeTensors *st)
{
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | st->map[i];
	if (hlen > st->size - 8) {
		diag_error(file_loc(st->path), "safetensors header length %llu exceeds the file size %zu",
			(unsigned long long)hlen, st->size);
		return -1;
	}
	st->region = st->map + 8 + hlen;
	st->region_size = st->size - 8 - (size_t)hlen;
	json_error_t err;
	json_t *root = json_loadb((const char *)st->map + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &err);
	if (!root || !json_is_object(root)) {
		diag_error(file_loc(st->path), "bad safetensors header: %s", root ? "not a JSON object" : err.text);
		json_decref(root);
		return -1;
	}
	int rc = read_entries(st, root);
	json_decref(root);
	return rc;
}

SafeTensors *safetensors_open(const char *path)
{
	SafeTensors *st = xcalloc(1, sizeof *st);
	st->path = xstrdup(path);
	if (map_file(st) != 0 || read_header(st) != 0) {
		safetensors_close(st);
		return NULL;
	}
	return st;
}

void safetensors_close(SafeTensors *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++) {
		free((void *)st->t[i].name);
		free((void *)st->t[i].shape);
	}
	free(st->t);
	if (st->map)
		munmap(st->map, st->size);
	free((void *)st->path);
	free(st);
}

const SafeTensor *safetensors_find(const SafeTensors *st, const char *name)
{
	SafeTensor key = { .name = name };
	return bsearch(&key, st->t, st->n, sizeof *st->t, by_name);
}

size_t safetensors_count(const SafeTensors *st) { return st->n; }

void safetensors_release(const SafeTensors *st, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (!st || !st->map || !n || b < st->map || b >= st->map + st->size || n > (size_t)(st->map + st->size - b))
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t lo = (size_t)(b - st->map) / page * page;
	size_t hi = (size_t)(b - st->map) + n;
	madvise(st->map + lo, hi - lo, MADV_DONTNEED);
}

int safetensors_locate(const SafeTensors *st, const void *p, size_t n, uint64_t *offset)
{
	const uint8_t *b = p;
	if (!st || !st->map || b < st->region || b > st->region + st->region_size
	    || n > (size_t)(st->region + st->region_size - b))
		return 0;
	*offset = (uint64_t)(b - st->map);
	return 1;
}

const char *safetensors_path(const SafeTensors *st)
{
	return st->path;
}

const SafeTensor *safetensors_at(const SafeTensors *st, size_t i)
{
	return i < st->n ? &st->t[i] : NULL;
}
