/* diag.c - diagnostics: `file:line:col: error: message`, then the source
 * line and a caret under the column.  Messages are printed as they come,
 * or kept for -verify-diagnostics.  After max_errors errors, diag_too_many()
 * tells readers to stop. */
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct { Sym file; const char *text; size_t len; } Source;

static VEC(Source) sources;
static Arena diag_arena;
static VEC(Diag) kept;
static int collect, nerrors, max_errors = 20;
int diag_stopped;
static FILE *stream;

void onnxc_bug(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "onnxc: internal error at %s:%d: ", file, line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

void diag_add_source(Sym file, const char *text, size_t len)
{
	for (uint32_t i = 0; i < sources.n; i++)
		if (sources.v[i].file == file) {
			sources.v[i].text = text;
			sources.v[i].len = len;
			return;
		}
	VEC_PUSH(&diag_arena, sources, ((Source){ file, text, len }));
}

static const Source *find_source(Sym file)
{
	for (uint32_t i = sources.n; i-- > 0;)
		if (sources.v[i].file == file)
			return &sources.v[i];
	return NULL;
}

/* Prints line `line` of the source and a caret under column `col`.  Tabs
 * are kept in the caret line so it lines up in a terminal. */
const char *diag_source_line(Loc loc, size_t *len)
{
	const Source *s = find_source(loc.file);
	if (!s || loc.line == 0)
		return NULL;
	const char *p = s->text, *end = s->text + s->len;
	for (uint32_t l = 1; l < loc.line && p < end; p++)
		if (*p == '\n')
			l++;
	if (p >= end && loc.line > 1)
		return NULL;
	const char *e = memchr(p, '\n', (size_t)(end - p));
	*len = (size_t)((e ? e : end) - p);
	return p;
}

static void show_line(FILE *f, Loc loc)
{
	size_t n;
	const char *p = diag_source_line(loc, &n);
	if (!p)
		return;
	const char *e = p + n;
	fprintf(f, "%.*s\n", (int)(e - p), p);
	for (uint32_t c = 1; c < loc.col && p + c - 1 < e; c++)
		fputc(p[c - 1] == '\t' ? '\t' : ' ', f);
	fputs("^\n", f);
}

static const char *kind_name(DiagKind k)
{
	return k == DIAG_ERROR ? "error" : k == DIAG_WARNING ? "warning" : "note";
}

/* Muted: a caller is trying something that may fail (folding a node); its
 * errors are counted here and shown nowhere. */
static int muted;
static unsigned muted_errors;

unsigned diag_mute(int on)
{
	unsigned n = muted_errors;
	muted = on;
	muted_errors = 0;
	return n;
}

void diag_emitv(DiagKind k, Loc loc, const char *fmt, va_list ap)
{
	if (muted) {
		muted_errors += k == DIAG_ERROR;
		return;
	}
	if (k == DIAG_ERROR && ++nerrors >= max_errors && max_errors > 0)
		diag_stopped = 1;
	char buf[1024];
	vsnprintf(buf, sizeof buf, fmt, ap);
	if (collect) {
		Diag d = { k, loc, arena_strndup(&diag_arena, buf, strlen(buf)) };
		VEC_PUSH(&diag_arena, kept, d);
		if (collect == DIAG_KEEP)
			return;
	}
	FILE *f = stream ? stream : stderr;
	if (loc.file && loc.line)
		fprintf(f, "%s:%u:%u: ", sym_str(loc.file), loc.line, loc.col);
	else if (loc.file)
		fprintf(f, "%s: ", sym_str(loc.file));
	else
		fputs("onnxc: ", f);
	fprintf(f, "%s: %s\n", kind_name(k), buf);
	show_line(f, loc);
	if (k == DIAG_ERROR && nerrors == max_errors)
		fprintf(f, "onnxc: too many errors (%d), stopping\n", max_errors);
}

#define DIAG_FN(fn, kind) \
	void fn(Loc loc, const char *fmt, ...) \
	{ va_list ap; va_start(ap, fmt); diag_emitv(kind, loc, fmt, ap); va_end(ap); }
DIAG_FN(diag_error, DIAG_ERROR)
DIAG_FN(diag_warning, DIAG_WARNING)
DIAG_FN(diag_note, DIAG_NOTE)

int diag_error_count(void) { return nerrors; }
void diag_set_collect(int mode) { collect = mode; }
void diag_set_max_errors(int n)
{
	max_errors = n;
	diag_stopped = n > 0 && nerrors >= n;
}
int diag_max_errors(void) { return max_errors; }
void diag_set_stream(FILE *f) { stream = f; }

const Diag *diag_collected(size_t *n)
{
	*n = kept.n;
	return kept.v;
}

void diag_clear(void)
{
	kept.n = 0;
	nerrors = 0;
	diag_stopped = 0;
}
