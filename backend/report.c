/* report.c - the Markdown conversion report (-report[=FILE.md]).
 *
 * The driver tells the report what each stage did and shows it the module
 * twice: as read (the input's weights, signature and ops) and as it stands
 * when the run ends, whether the pipeline finished or not.  Diagnostics
 * are kept by diag (DIAG_KEEP_PRINT), so the report lists exactly what the
 * user saw.  The file is written to a temporary name and renamed, like
 * every output; it is written even when the conversion fails, which is
 * when it matters most. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "backend.h"
#include "passes.h"

typedef struct OpCount { Sym op; uint32_t before, after; } OpCount;
typedef struct WeightRow { uint8_t kind, dtype; uint32_t count; uint64_t bytes; } WeightRow;

struct Report {
	const char *input, *text;
	size_t len;
	const char *command;
	int state[STAGE_COUNT];     /* StageState */
	const char *note[STAGE_COUNT];
	VEC(OpCount) ops;
	uint32_t *op_index;         /* by Sym: index + 1 into ops */
	uint32_t nop_index;
	VEC(WeightRow) weights;
	char *signature;            /* inputs and outputs, Markdown rows */
	char *program;              /* the input as .fxir (an .onnx input is printed) */
	char *leftover;             /* ops without a decomposition, Markdown rows */
	char *listing;              /* the ONNX listing, when the conversion finished */
	char *dot;                  /* the program at the end, for Graphviz */
	char *dot_file, *svg_file;  /* written beside the report (svg: when dot ran) */
	char *histogram;            /* `3 x Add -SIG- 1t[1x30x16],1t[16]` lines, at the end */
	char *init_shapes;          /* `name: f32[2,3]` lines: the main graph's initializers */
	uint32_t nodes_before, nodes_after;
};

extern char **environ;

static const char *const stage_names[STAGE_COUNT] = {
	"parse", "verify", "functionalize", "decompose", "optimize", "write ONNX", "run in ONNX Runtime",
	"accuracy",
};

Report *report_new(const char *input, const char *text, size_t len, const char *command)
{
	Report *r = xcalloc(1, sizeof *r);
	r->input = input;
	r->text = text;
	r->len = len;
	r->command = command;
	r->note[STAGE_ORT] = "not run by onnxc";
	r->note[STAGE_ACCURACY] = "not asked: -bisect-accuracy";
	return r;
}

void report_free(Report *r)
{
	if (!r)
		return;
	free(r->ops.v);
	free(r->op_index);
	free(r->weights.v);
	free(r->signature);
	free(r->program);
	free(r->leftover);
	free(r->listing);
	free(r->dot);
	free(r->histogram);
	free(r->init_shapes);
	free(r->dot_file);
	free(r->svg_file);
	free(r);
}

void report_stage(Report *r, Stage s, StageState st, const char *note)
{
	/* A stage of several passes fails if one does. */
	if (r->state[s] != STAGE_FAILED)
		r->state[s] = st;
	if (note)
		r->note[s] = note;
}

Stage report_stage_of_pass(const char *pass)
{
	if (!strcmp(pass, "functionalize"))
		return STAGE_FUNCTIONALIZE;
	if (!strcmp(pass, "decompose"))
		return STAGE_DECOMPOSE;
	return STAGE_OPTIMIZE;
}

/* ---- counting ops ------------------------------------------------------------ */

static Sym op_key(const Node *n)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s::%s", sym_str(n->domain), sym_str(n->name));
	return sym_cstr(buf);
}

static OpCount *op_slot(Report *r, Sym s)
{
	r->op_index = xgrow_index(r->op_index, &r->nop_index, s, sizeof *r->op_index);
	if (!r->op_index[s]) {
		XVEC_PUSH(r->ops, ((OpCount){ s, 0, 0 }));
		r->op_index[s] = r->ops.n;
	}
	return &r->ops.v[r->op_index[s] - 1];
}

typedef struct Counting { Report *r; int after; } Counting;

static Status count_graph(const GraphVisit *v, void *ctx)
{
	Counting *c = ctx;
	for (const Node *n = v->g->first; n; n = n->next) {
		OpCount *oc = op_slot(c->r, op_key(n));
		if (c->after)
			oc->after++, c->r->nodes_after++;
		else
			oc->before++, c->r->nodes_before++;
	}
	return OK;
}

/* ---- the input: weights and signature ------------------------------------------- */

static void tally_weight(Report *r, const Value *v)
{
	DType dt = v->type && v->type->kind == TY_TENSOR ? (DType)v->type->dtype : DT_UNDEF;
	int64_t numel = v->type ? type_numel(v->type) : -1;
	uint64_t bytes = numel >= 0 && dt ? tensor_nbytes(dt, numel) : 0;
	for (uint32_t i = 0; i < r->weights.n; i++)
		if (r->weights.v[i].kind == v->kind && r->weights.v[i].dtype == dt) {
			r->weights.v[i].count++;
			r->weights.v[i].bytes += bytes;
			return;
		}
	XVEC_PUSH(r->weights, ((WeightRow){ v->kind, (uint8_t)dt, 1, bytes }));
}

static void type_text(FILE *f, const Type *t)
{
	if (t)
		print_type(f, t);
	else
		fputs("?", f);
}

static char *signature_rows(Module *m)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = xmemstream(&s, &n);
	Graph *g = m->graphs.v[0];
	for (uint32_t i = 0; i < g->nin; i++) {
		fprintf(f, "| input | `%%%s` | `", sym_str(val(m, g->in[i])->name));
		type_text(f, val(m, g->in[i])->type);
		fputs("` |\n", f);
	}
	for (uint32_t i = 0; i < g->nout; i++) {
		const Type *t = g->out_decl && g->out_decl[i] ? g->out_decl[i] : val(m, g->out[i])->type;
		fprintf(f, "| output | `%%%s` | `", sym_str(val(m, g->out[i])->name));
		type_text(f, t);
		fputs("` |\n", f);
	}
	fclose(f);
	return s;
}

void report_input(Report *r, Module *m)
{
	Counting c = { r, 0 };
	module_walk(m, WALK_PROGRAM, count_graph, &c);
	if (m->graphs.n) {
		Graph *g = m->graphs.v[0];
		for (uint32_t i = 0; i < g->inits.n; i++)
			tally_weight(r, val(m, g->inits.v[i]));
		r->signature = signature_rows(m);
	}
	if (!r->text) {
		size_t n;
		FILE *f = xmemstream(&r->program, &n);
		print_module(f, m);
		fclose(f);
	}
}

/* ---- the result: counts after, ops left in ATen --------------------------------- */

/* A signature being written: snprintf into a fixed buffer, cut short
 * (never overrun) past its size. */
typedef struct SigBuf { char s[1024]; size_t n; } SigBuf;

static void put(SigBuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n = b->n + (size_t)k < sizeof b->s ? b->n + (size_t)k : sizeof b->s - 1;
}

/* One input's type in a signature: ONNX's dtype number, `t`, the dims
 * joined by `x` (a symbol by name, `?` unknown); `-` an omitted input,
 * `?` one that is no tensor or has no type. */
static void sig_input(SigBuf *b, const Module *m, const Arg *a)
{
	const Type *t = a->kind == A_VALUE ? m->vals.v[a->u.v].type : NULL;
	if (a->kind == A_NONE || !t || t->kind != TY_TENSOR || t->rank < 0) {
		put(b, a->kind == A_NONE ? "-" : "?");
		return;
	}
	put(b, "%dt[", dtype_onnx((DType)t->dtype));
	for (int32_t i = 0; i < t->rank; i++) {
		const char *x = i ? "x" : "";
		if (t->dims[i].sym)
			put(b, "%s%s", x, sym_str(t->dims[i].sym));
		else if (t->dims[i].v >= 0)
			put(b, "%s%lld", x, (long long)t->dims[i].v);
		else
			put(b, "%s?", x);
	}
	put(b, "]");
}

typedef struct SigCount { Sym key; uint32_t n; } SigCount;
typedef struct Histogram { const Module *m; VEC(SigCount) v; uint32_t *index; uint32_t nindex; } Histogram;

/* Nodes counted by op and the types of what they read: one interned key
 * a node, so the count is linear in the nodes. */
static Status histogram_graph(const GraphVisit *v, void *ctx)
{
	Histogram *h = ctx;
	SigBuf b;
	for (const Node *n = v->g->first; n; n = n->next) {
		b.n = 0;
		b.s[0] = 0;
		if (n->domain == S_onnx)
			put(&b, "%s -SIG- ", sym_str(n->name));
		else
			put(&b, "%s::%s -SIG- ", sym_str(n->domain), sym_str(n->name));
		for (uint32_t i = 0; i < n->nargs; i++) {
			if (i)
				put(&b, ",");
			sig_input(&b, h->m, &n->args[i]);
		}
		Sym key = sym_intern(b.s, b.n);
		h->index = xgrow_index(h->index, &h->nindex, key, sizeof *h->index);
		if (!h->index[key]) {
			XVEC_PUSH(h->v, ((SigCount){ key, 0 }));
			h->index[key] = h->v.n;
		}
		h->v.v[h->index[key] - 1].n++;
	}
	return OK;
}

static int by_count(const void *a, const void *b)
{
	const SigCount *x = a, *y = b;
	return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(sym_str(x->key), sym_str(y->key));
}

static char *histogram_text(Module *m)
{
	Histogram h = { .m = m };
	module_walk(m, WALK_PROGRAM, histogram_graph, &h);
	if (h.v.n)
		qsort(h.v.v, h.v.n, sizeof *h.v.v, by_count);
	char *s = NULL;
	size_t n = 0;
	FILE *f = xmemstream(&s, &n);
	for (uint32_t i = 0; i < h.v.n; i++)
		fprintf(f, "%u x %s\n", h.v.v[i].n, sym_str(h.v.v[i].key));
	fclose(f);
	free(h.v.v);
	free(h.index);
	return s;
}

static char *init_shapes_text(Module *m)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = xmemstream(&s, &n);
	const Graph *g = m->graphs.v[0];
	for (uint32_t i = 0; i < g->inits.n; i++) {
		const Value *v = val(m, g->inits.v[i]);
		fprintf(f, "%s: ", sym_str(v->name));
		type_text(f, v->type);
		fputc('\n', f);
	}
	fclose(f);
	return s;
}

static void scopes_text(FILE *f, const Prov *p)
{
	if (!p || !p->nscope) {
		fputs("(none)", f);
		return;
	}
	for (uint32_t i = 0; i < p->nscope; i++)
		fprintf(f, "%s`%s` (%s)", i ? " / " : "", *sym_str(p->scope[i].path) ? sym_str(p->scope[i].path) : "(root)",
			sym_str(p->scope[i].cls));
}

static Status leftover_graph(const GraphVisit *v, void *ctx)
{
	FILE *f = ctx;
	for (const Node *n = v->g->first; n; n = n->next) {
		if (!node_is_torch(n))
			continue;
		fprintf(f, "| `%s::%s` | `%s:%u:%u` | ", sym_str(n->domain), sym_str(n->name), sym_str(n->loc.file),
			n->loc.line, n->loc.col);
		if (n->prov && n->prov->file)
			fprintf(f, "`%s:%u` | ", sym_str(n->prov->file), n->prov->line);
		else
			fputs("| ", f);
		scopes_text(f, n->prov);
		fputs(" |\n", f);
	}
	return OK;
}

void report_result(Report *r, Module *m, int finished, const OnnxWriteOptions *w)
{
	Counting c = { r, 1 };
	module_walk(m, WALK_PROGRAM, count_graph, &c);
	size_t n;
	if (r->state[STAGE_DECOMPOSE] != STAGE_NOT_RUN) {
		FILE *f = xmemstream(&r->leftover, &n);
		module_walk(m, WALK_PROGRAM, leftover_graph, f);
		fclose(f);
	}
	if (m->graphs.n) {
		FILE *f = xmemstream(&r->dot, &n);
		dot_write(m, f);
		fclose(f);
		r->histogram = histogram_text(m);
		r->init_shapes = init_shapes_text(m);
	}
	if (finished && m->graphs.n) {
		FILE *f = xmemstream(&r->listing, &n);
		diag_mute(1);
		listing_write(m, f, w);
		diag_mute(0);
		fclose(f);
	}
}

/* ---- writing ------------------------------------------------------------------ */

static const char *mark(int st)
{
	return st == STAGE_OK ? "✅" : st == STAGE_FAILED ? "❌" : "⚪";
}

static void write_checklist(const Report *r, FILE *f)
{
	fputs("## Checklist\n\n", f);
	for (int s = 0; s < STAGE_COUNT; s++) {
		fprintf(f, "- %s %s", mark(r->state[s]), stage_names[s]);
		if (r->note[s])
			fprintf(f, " (%s)", r->note[s]);
		else if (r->state[s] == STAGE_NOT_RUN)
			fputs(" (not run)", f);
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* A fenced block must not be closed early by a fence in the text. */
static void fenced(FILE *f, const char *lang, const char *text, size_t len)
{
	fprintf(f, "````%s\n%.*s", lang, (int)len, text);
	if (len && text[len - 1] != '\n')
		fputc('\n', f);
	fputs("````\n", f);
}

static void write_diags(FILE *f)
{
	static const char *const kn[] = { "error", "warning", "note" };
	size_t nd;
	const Diag *d = diag_collected(&nd);
	fputs("## Errors\n\n", f);
	if (!nd)
		fputs("None.\n\n", f);
	for (size_t i = 0; i < nd; i++) {
		Loc l = d[i].loc;
		if (l.file && l.line)
			fprintf(f, "- `%s:%u:%u`: %s: %s\n", sym_str(l.file), l.line, l.col, kn[d[i].kind], d[i].msg);
		else if (l.file)
			fprintf(f, "- `%s`: %s: %s\n", sym_str(l.file), kn[d[i].kind], d[i].msg);
		else
			fprintf(f, "- %s: %s\n", kn[d[i].kind], d[i].msg);
		size_t n;
		const char *line = diag_source_line(l, &n);
		if (line) {
			fputs("\n  ```\n  ", f);
			fwrite(line, 1, n, f);
			fputs("\n  ```\n", f);
		}
	}
	if (nd)
		fputc('\n', f);
}

static size_t count_lines(const char *s, size_t n)
{
	size_t k = n && s[n - 1] != '\n';
	for (size_t i = 0; i < n; i++)
		k += s[i] == '\n';
	return k;
}

/* Long text is folded into a <details> block. */
static void folded(FILE *f, const char *summary, const char *lang, const char *text, size_t len)
{
	size_t lines = count_lines(text, len);
	int fold = lines > 40;
	if (fold)
		fprintf(f, "<details>\n<summary>%s (%zu lines)</summary>\n\n", summary, lines);
	fenced(f, lang, text, len);
	if (fold)
		fputs("\n</details>\n", f);
	fputc('\n', f);
}

static const char *kind_name(int k)
{
	return k == VK_PARAM ? "parameter" : k == VK_BUFFER ? "buffer" : k == VK_CONST ? "constant" : "input";
}

static void write_weights(const Report *r, FILE *f)
{
	fputs("### Parameters, buffers and constants\n\n", f);
	if (!r->weights.n) {
		fputs("None.\n\n", f);
		return;
	}
	uint64_t total = 0;
	uint32_t count = 0;
	fputs("| kind | dtype | tensors | bytes |\n|---|---|---:|---:|\n", f);
	for (uint32_t i = 0; i < r->weights.n; i++) {
		const WeightRow *w = &r->weights.v[i];
		fprintf(f, "| %s | %s | %u | %llu |\n", kind_name(w->kind), w->dtype ? dtype_name((DType)w->dtype) : "?",
			w->count, (unsigned long long)w->bytes);
		total += w->bytes;
		count += w->count;
	}
	fprintf(f, "| **total** | | %u | %llu |\n\n", count, (unsigned long long)total);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(sym_str(((const OpCount *)a)->op), sym_str(((const OpCount *)b)->op));
}

static void write_op_counts(Report *r, FILE *f)
{
	fprintf(f, "### Nodes per op\n\n%u nodes before the pipeline, %u after.\n\n", r->nodes_before, r->nodes_after);
	fputs("| op | before | after |\n|---|---:|---:|\n", f);
	if (r->ops.n)
		qsort(r->ops.v, r->ops.n, sizeof *r->ops.v, by_name);
	for (uint32_t i = 0; i < r->ops.n; i++)
		fprintf(f, "| `%s` | %u | %u |\n", sym_str(r->ops.v[i].op), r->ops.v[i].before, r->ops.v[i].after);
	fputs("\n### Decomposition comparison\n\n", f);
	for (int pass = 0; pass < 2; pass++) {
		fputs(pass ? "- ops only after: " : "- ops only before: ", f);
		int any = 0;
		for (uint32_t i = 0; i < r->ops.n; i++)
			if (pass ? !r->ops.v[i].before : !r->ops.v[i].after)
				fprintf(f, "%s`%s`", any++ ? ", " : "", sym_str(r->ops.v[i].op));
		fputs(any ? "\n" : "none\n", f);
	}
	fputc('\n', f);
}

/* What the passes did, beyond node counts: each rewrite that fired and
 * how often, the nodes by op and input signature, the initializers. */
static void write_rewrites(const Report *r, FILE *f)
{
	uint32_t n;
	const RewriteStat *st = rewrite_stats(&n);
	fputs("### Rewrites\n\n", f);
	if (!n)
		fputs("None fired.\n\n", f);
	else
		fputs("| rewrite | matches |\n|---|---:|\n", f);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "| `%s.%s` | %llu |\n", st[i].pass, st[i].rule, (unsigned long long)st[i].total);
	if (n)
		fputc('\n', f);
	if (r->histogram) {
		fputs("### Nodes by op and input signature\n\nAt the end: count, op, and the types of its inputs "
		      "(ONNX dtype number, `t`, dims).\n\n", f);
		folded(f, "Nodes by signature", "", r->histogram, strlen(r->histogram));
	}
	if (r->init_shapes) {
		fputs("### Initializer shapes\n\nThe main graph's initializers at the end.\n\n", f);
		if (*r->init_shapes)
			folded(f, "Initializers", "", r->init_shapes, strlen(r->init_shapes));
		else
			fputs("None.\n\n", f);
	}
}

static void write_analysis(Report *r, FILE *f)
{
	fputs("## Analysis\n\n", f);
	write_weights(r, f);
	fputs("### Inputs and outputs\n\n", f);
	if (r->signature)
		fprintf(f, "| | name | type |\n|---|---|---|\n%s\n", r->signature);
	else
		fputs("The input was not read.\n\n", f);
	write_op_counts(r, f);
	write_rewrites(r, f);
	fputs("### Ops without a decomposition\n\n", f);
	if (r->state[STAGE_DECOMPOSE] == STAGE_NOT_RUN)
		fputs("The decompose pass did not run.\n\n", f);
	else if (!r->leftover || !*r->leftover)
		fputs("None: every ATen op was decomposed.\n\n", f);
	else
		fprintf(f, "| op | location | source | module scopes |\n|---|---|---|---|\n%s\n", r->leftover);
}

/* ---- the graph picture ----------------------------------------------------------- */
/* Graphviz takes minutes on graphs of many thousand nodes: past this the
 * .dot file is linked, not rendered. */
enum { RENDER_MAX_NODES = 2000 };

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static Status write_text_file(const char *path, const char *text)
{
	size_t n = strlen(path) + 32;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	Status s = f && fputs(text, f) >= 0 && !ferror(f) ? OK : FAILED;
	if (f && fclose(f) != 0)
		s = FAILED;
	if (s != OK || rename(tmp, path) != 0) {
		remove(tmp);
		s = FAILED;
	}
	free(tmp);
	return s;
}

/* `dot -Tsvg IN -o OUT` when dot is on the PATH; OK if it made OUT. */
static Status render_svg(const char *in, const char *out)
{
	size_t n = strlen(out) + 32;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.tmp%ld", out, (long)getpid());
	char *argv[] = { "dot", "-Tsvg", (char *)in, "-o", tmp, NULL };
	pid_t pid;
	int status = 0;
	Status s = posix_spawnp(&pid, "dot", NULL, NULL, argv, environ) == 0 && waitpid(pid, &status, 0) == pid &&
		   WIFEXITED(status) && WEXITSTATUS(status) == 0 && rename(tmp, out) == 0 ? OK : FAILED;
	if (s != OK)
		remove(tmp);
	free(tmp);
	return s;
}

/* <report stem>.dot beside the report, and .svg when Graphviz renders it. */
static void write_graph_files(Report *r, const char *path)
{
	if (!r->dot)
		return;
	size_t n = strlen(path);
	size_t stem = n > 3 && !strcmp(path + n - 3, ".md") ? n - 3 : n;
	r->dot_file = xmalloc(stem + 5);
	r->svg_file = xmalloc(stem + 5);
	snprintf(r->dot_file, stem + 5, "%.*s.dot", (int)stem, path);
	snprintf(r->svg_file, stem + 5, "%.*s.svg", (int)stem, path);
	if (write_text_file(r->dot_file, r->dot) != OK) {
		free(r->dot_file);
		r->dot_file = NULL;
	}
	if (!r->dot_file || r->nodes_after > RENDER_MAX_NODES || render_svg(r->dot_file, r->svg_file) != OK) {
		free(r->svg_file);
		r->svg_file = NULL;
	}
}

static void write_graph_section(const Report *r, FILE *f)
{
	if (!r->dot_file)
		return;
	fputs("## Graph\n\n", f);
	if (r->svg_file)
		fprintf(f, "![The program as it stands at the end](%s)\n\n", base_name(r->svg_file));
	fprintf(f, "The program as it stands at the end, for Graphviz: [%s](%s)", base_name(r->dot_file),
		base_name(r->dot_file));
	if (!r->svg_file)
		fprintf(f, " (%s: `dot -Tsvg %s -o graph.svg` draws it)", r->nodes_after > RENDER_MAX_NODES ?
			"too large to draw here" : "Graphviz's dot was not found", base_name(r->dot_file));
	fputs(".\n", f);
}

static void write_all(Report *r, FILE *f)
{
	const char *base = strrchr(r->input, '/');
	fprintf(f, "# Conversion report: %s\n\n", base ? base + 1 : r->input);
	fprintf(f, "onnxc %s: `%s`\n\n", ONNXC_VERSION, r->command);
	write_checklist(r, f);
	write_diags(f);
	fputs("## Input program\n\n", f);
	if (r->text)
		folded(f, "The .fxir program", "fxir", r->text, r->len);
	else if (r->program)
		folded(f, "The model, as .fxir", "fxir", r->program, strlen(r->program));
	else
		fputs("The input was not read.\n\n", f);
	write_analysis(r, f);
	if (r->listing) {
		fputs("## ONNX model\n\n", f);
		folded(f, "The listing", "", r->listing, strlen(r->listing));
	}
	write_graph_section(r, f);
}

Status report_write(Report *r, const char *path)
{
	size_t n = strlen(path) + 32;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
	write_graph_files(r, path);
	FILE *f = fopen(tmp, "w");
	Status s = OK;
	if (f) {
		write_all(r, f);
		s = ferror(f) | fclose(f) ? FAILED : OK;
	}
	if (!f || s != OK || rename(tmp, path) != 0) {
		diag_error((Loc){ sym_cstr(path), 0, 0 }, "cannot write the report: %s", strerror(errno));
		remove(tmp);
		s = FAILED;
	}
	free(tmp);
	return s;
}
