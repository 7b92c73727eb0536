/* tensorio.c - runtime tensors to and from files: numpy's .npy format
 * (version 1 to 3, little-endian, C order) and safetensors.
 *
 * A .npy file is a magic string, a version, a header length, and a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces to a multiple of 64 bytes; the elements follow.
 * Files are written to a temporary name and renamed when complete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "frontend.h"
#include "runtime.h"

static const struct { DType t; const char *descr; } npy_types[] = {
	{ DT_F32, "<f4" }, { DT_F64, "<f8" }, { DT_F16, "<f2" }, { DT_I8, "|i1" }, { DT_U8, "|u1" },
	{ DT_I16, "<i2" }, { DT_U16, "<u2" }, { DT_I32, "<i4" }, { DT_U32, "<u4" }, { DT_I64, "<i8" },
	{ DT_U64, "<u8" }, { DT_BOOL, "|b1" },
};

static Loc file_loc(const char *path)
{
	return (Loc){ sym_cstr(path), 0, 0 };
}

static DType npy_dtype(const char *d, size_t n)
{
	for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++) {
		const char *s = npy_types[i].descr;
		/* One-byte types may be written with '<', '>', '|' or '='. */
		if (n == 3 && strncmp(s + 1, d + 1, 2) == 0 && (d[0] == s[0] || (s[0] == '|' && strchr("<>=", d[0]))))
			return npy_types[i].t;
	}
	return DT_UNDEF;
}

/* The text after `'key':` in the header dict, or NULL. */
static const char *npy_field(const char *h, const char *key)
{
	const char *p = strstr(h, key);
	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	return p;
}

static int npy_shape(const char *p, int32_t *rank, int64_t *shape)
{
	if (!p || *p++ != '(')
		return 0;
	*rank = 0;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			return 1;
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0 || *rank == RT_MAX_RANK)
			return 0;
		shape[(*rank)++] = v;
		p = end;
	}
}

static RTensor *npy_parse(const char *path, const uint8_t *b, size_t len)
{
	if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0 || b[6] < 1 || b[6] > 3) {
		diag_error(file_loc(path), "not a .npy file (version 1 to 3)");
		return NULL;
	}
	/* Versions 2 and 3 have a 4-byte header length: 12 bytes before it. */
	size_t start = b[6] == 1 ? 10 : 12;
	size_t hl = len < start ? SIZE_MAX : b[6] == 1 ? (size_t)b[8] | (size_t)b[9] << 8 :
		(size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
	if (len < start || hl > len - start) {
		diag_error(file_loc(path), ".npy header runs past the end of the file");
		return NULL;
	}
	char *h = xmalloc(hl + 1);
	memcpy(h, b + start, hl);
	h[hl] = 0;
	const char *d = npy_field(h, "'descr'"), *f = npy_field(h, "'fortran_order'");
	int32_t rank;
	int64_t shape[RT_MAX_RANK];
	DType t = d && (*d == '\'') && strlen(d) > 4 && d[4] == '\'' ? npy_dtype(d + 1, 3) : DT_UNDEF;
	RTensor *r = NULL;
	if (!t)
		diag_error(file_loc(path), ".npy element type is not one of f16 f32 f64 i8-i64 u8-u64 bool (little-endian)");
	else if (!f || strncmp(f, "False", 5) != 0)
		diag_error(file_loc(path), ".npy data in Fortran order is not supported");
	else if (!npy_shape(npy_field(h, "'shape'"), &rank, shape))
		diag_error(file_loc(path), ".npy shape is malformed or has more than %d dims", RT_MAX_RANK);
	else
		r = rt_from_data(file_loc(path), t, rank, shape, b + start + hl, len - start - hl);
	free(h);
	return r;
}

RTensor *rt_read_npy(const char *path)
{
	size_t len;
	char *b = read_file(path, &len);
	if (!b)
		return NULL;
	RTensor *r = npy_parse(path, (const uint8_t *)b, len);
	free(b);
	return r;
}

RTensor *rt_from_safetensor(const char *path, const SafeTensor *e)
{
	return rt_from_data(file_loc(path), e->dtype, e->rank, e->shape, e->data, e->nbytes);
}

/* ---- writing ---------------------------------------------------------------------- */

typedef int (*WriteFn)(FILE *f, const void *ctx);

static Status write_atomic(const char *path, WriteFn fn, const void *ctx)
{
	size_t n = strlen(path) + 32;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "wb");
	int bad = !f || fn(f, ctx) != 0;
	bad |= f && ferror(f);
	bad |= f && fclose(f) != 0;
	if (!bad && rename(tmp, path) != 0)
		bad = 1;
	if (bad) {
		diag_error(file_loc(path), "cannot write: %s", strerror(errno ? errno : EIO));
		remove(tmp);
	}
	free(tmp);
	return bad ? FAILED : OK;
}

static const char *npy_descr(DType t)
{
	for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
		if (npy_types[i].t == t)
			return npy_types[i].descr;
	return NULL;
}

static int npy_out(FILE *f, const void *ctx)
{
	const RTensor *t = ctx;
	char h[512];
	int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (", npy_descr(t->dtype));
	for (int32_t d = 0; d < t->rank; d++)
		n += snprintf(h + n, sizeof h - (size_t)n, "%lld,%s", (long long)t->shape[d], d + 1 < t->rank ? " " : "");
	n += snprintf(h + n, sizeof h - (size_t)n, "), }");
	/* Pad with spaces so the data starts at a multiple of 64 bytes. */
	while ((10 + n + 1) % 64)
		h[n++] = ' ';
	h[n++] = '\n';
	uint8_t pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)n, (uint8_t)(n >> 8) };
	fwrite(pre, 1, 10, f);
	fwrite(h, 1, (size_t)n, f);
	return t->nbytes && fwrite(t->data, 1, t->nbytes, f) != t->nbytes;
}

Status rt_write_npy(const char *path, const RTensor *t)
{
	if (!npy_descr(t->dtype)) {
		diag_error(file_loc(path), "dtype %s cannot be written as .npy (use .safetensors)", dtype_name(t->dtype));
		return FAILED;
	}
	return write_atomic(path, npy_out, t);
}

typedef struct StOut { const char *header; size_t hlen; RTensor *const *ts; uint32_t n; } StOut;

static int st_out(FILE *f, const void *ctx)
{
	const StOut *s = ctx;
	uint8_t len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)s->hlen >> (8 * i));
	fwrite(len, 1, 8, f);
	fwrite(s->header, 1, s->hlen, f);
	for (uint32_t i = 0; i < s->n; i++)
		if (s->ts[i]->nbytes && fwrite(s->ts[i]->data, 1, s->ts[i]->nbytes, f) != s->ts[i]->nbytes)
			return 1;
	return 0;
}

static json_t *st_entry(const RTensor *t, size_t begin)
{
	json_t *shape = json_array();
	for (int32_t d = 0; d < t->rank; d++)
		json_array_append_new(shape, json_integer(t->shape[d]));
	return json_pack("{s:s, s:o, s:[I,I]}", "dtype", dtype_safetensors(t->dtype), "shape", shape, "data_offsets",
		(json_int_t)begin, (json_int_t)(begin + t->nbytes));
}

Status rt_write_safetensors(const char *path, const char *const *names, RTensor *const *ts, uint32_t n)
{
	json_t *root = json_object();
	size_t at = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!dtype_safetensors(ts[i]->dtype)[0] || json_object_get(root, names[i])) {
			diag_error(file_loc(path), json_object_get(root, names[i]) ? "two outputs are named '%s'" :
				"output '%s' has a dtype safetensors cannot hold", names[i]);
			json_decref(root);
			return FAILED;
		}
		json_object_set_new(root, names[i], st_entry(ts[i], at));
		at += ts[i]->nbytes;
	}
	char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	if (!text) {
		diag_error(file_loc(path), "cannot write the header: out of memory");
		return FAILED;
	}
	/* The data region starts 8-byte aligned: pad the header with spaces. */
	size_t hlen = (strlen(text) + 7) / 8 * 8;
	char *h = xmalloc(hlen);
	memset(h, ' ', hlen);
	memcpy(h, text, strlen(text));
	free(text);
	StOut s = { h, hlen, ts, n };
	Status st = write_atomic(path, st_out, &s);
	free(h);
	return st;
}
