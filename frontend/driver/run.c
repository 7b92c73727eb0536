/* run.c - `onnxc run`: interpret a model's main graph with the reference
 * kernels on inputs read from .npy or safetensors files, print a summary of
 * each output and write them.
 *
 * A .fxir input holding ATen ops is lowered first by the -O0 pipeline (the
 * same passes, from the same registry, as `onnxc -O0`), and calls of local
 * functions are inlined.  Exit codes: 0
 * success, 1 bad input (a missing input, an op without a kernel, a kernel
 * error), 2 usage.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "driver.h"
#include "passes.h"
#include "runtime.h"

static const char run_usage[] =
	"usage: onnxc run <model.fxir | model.onnx> [--input NAME=FILE]... [-o OUT]\n"
	"\n"
	"Runs the model's main graph with onnxc's reference kernels and prints one\n"
	"line per output: its name, dtype, shape and first values.\n"
	"\n"
	"  --input NAME=FILE.npy           the graph input NAME, from a .npy file\n"
	"  --input NAME=FILE.safetensors   ... from the tensor NAME (or the only one)\n"
	"  --input FILE.safetensors        every tensor named like a graph input\n"
	"  -o OUT.safetensors              write the outputs, each under its name\n"
	"  -o DIR                          write DIR/NAME.npy for each output\n"
	"  --list-kernels                  list the ops that have a kernel, then exit\n"
	"  --help                          this text\n";

typedef struct RunOpts {
	const char *model, *output;
	RunInputs in;
} RunOpts;

/* A usage error of subcommand `sub` (run, verify, diff): exit 2. */
_Noreturn void sub_usage_error(const char *sub, const char *msg, const char *arg)
{
	fprintf(stderr, "onnxc: error: ");
	fprintf(stderr, msg, arg);
	fprintf(stderr, "\nrun 'onnxc%s%s --help' for usage\n", sub ? " " : "", sub ? sub : "");
	exit(2);
}

static void list_kernels(void)
{
	for (int op = 1; op < OP_COUNT; op++)
		if (rt_kernel((OpId)op))
			printf("onnx::%s\n", op_info[op].name);
	const char *dom, *name;
	for (size_t i = 0; (name = rt_ms_kernel_name(i, &dom)); i++)
		printf("%s::%s\n", dom, name);
}

void run_add_input(RunInputs *o, const char *sub, const char *spec)
{
	const char *eq = strchr(spec, '=');
	o->given = xreallocarray(o->given, o->ngiven + 1, sizeof *o->given);
	Given *g = &o->given[o->ngiven++];
	g->name = NULL;
	g->file = spec;
	if (eq) {
		g->name = xstrdup(spec);
		((char *)g->name)[eq - spec] = 0;
		g->file = eq + 1;
	}
	if ((eq && (eq == spec || !eq[1])) || (!eq && !strstr(spec, ".safetensors")))
		sub_usage_error(sub, "--input %s: expected NAME=FILE.npy, NAME=FILE.safetensors or FILE.safetensors", spec);
}

static void parse_run_args(int argc, char **argv, RunOpts *o)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(run_usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--list-kernels")) {
			list_kernels();
			exit(0);
		} else if (!strcmp(a, "--input") || !strcmp(a, "-input")) {
			if (++i >= argc)
				sub_usage_error("run", "%s needs NAME=FILE", a);
			run_add_input(&o->in, "run", argv[i]);
		} else if (!strncmp(a, "--input=", 8)) {
			run_add_input(&o->in, "run", a + 8);
		} else if (!strcmp(a, "-o")) {
			if (++i >= argc)
				sub_usage_error("run", "%s needs a file or directory name", a);
			o->output = argv[i];
		} else if (a[0] == '-' && a[1]) {
			sub_usage_error("run", "unknown option '%s'", a);
		} else if (o->model) {
			sub_usage_error("run", "more than one model ('%s')", a);
		} else
			o->model = a;
	}
	if (!o->model)
		sub_usage_error("run", "%s", "no model file");
}

/* ---- reading the model ---------------------------------------------------- */

/* The -O0 pipeline; on a module without ATen ops it changes nothing (and
 * the decomposition library is read only when decompose meets one).  Then
 * calls of local functions are inlined (the inline pass: each call becomes
 * a copy of the body, the call's attributes put where the body refers to
 * them), as the interpreter runs ops, not calls. */
static Status lower(Module *m)
{
	Pipeline pl;
	const char *bad;
	size_t badlen;
	if (pipeline_parse(pipeline_for_level(0), &pl, &bad, &badlen) != OK)
		ONNXC_BUG("the -O0 pipeline does not parse");
	DecompLib *lib = decomp_lib_new(NULL, NULL, 0);
	PassOptions po = { 18, 0, lib, 0, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, NULL, 0, 0, 0 };
	Status s = OK;
	for (uint32_t i = 0; s == OK && i < pl.n; i++)
		if (pl.v[i]->run(m, &po) != OK || diag_error_count())
			s = FAILED;
	if (s == OK && m->funcs.n && (pass_lookup("inline", 6)->run(m, &po) != OK || diag_error_count()))
		s = FAILED;
	decomp_lib_free(lib);
	pipeline_free(&pl);
	return s;
}

Module *run_load_model(const char *path, char **text)
{
	size_t len;
	*text = read_file(path, &len);
	if (!*text)
		return NULL;
	diag_add_source(sym_cstr(path), *text, len);
	Module *m = looks_like_onnx(path, *text, len) ? onnx_import(path) : parse_fxir(path, *text, len);
	if (m && (verify_module(m) || m->graphs.n == 0 || lower(m) != OK)) {
		if (m->graphs.n == 0)
			diag_error((Loc){ sym_cstr(path), 0, 0 }, "the model has no graph to run");
		module_free(m);
		return NULL;
	}
	return m;
}

/* ---- inputs ------------------------------------------------------------------ */

static RTensor *read_given(const Given *g, const char *name)
{
	size_t n = strlen(g->file);
	if (n < 12 || strcmp(g->file + n - 12, ".safetensors") != 0)
		return rt_read_npy(g->file);
	SafeTensors *st = safetensors_open(g->file);
	if (!st)
		return NULL;
	const SafeTensor *e = safetensors_find(st, name);
	if (!e && g->name && safetensors_count(st) == 1)
		e = safetensors_at(st, 0);
	RTensor *t = e ? rt_from_safetensor(g->file, e) : NULL;
	if (!e)
		diag_error((Loc){ sym_cstr(g->file), 0, 0 }, "no tensor '%s' in this file", name);
	safetensors_close(st);
	return t;
}

/* The file that gives input `name`, or NULL. */
static const Given *given_for(const RunInputs *o, const char *name)
{
	for (uint32_t i = o->ngiven; i-- > 0;) {
		const Given *g = &o->given[i];
		if (g->name ? !strcmp(g->name, name) : 0)
			return g;
	}
	for (uint32_t i = 0; i < o->ngiven; i++) {
		const Given *g = &o->given[i];
		SafeTensors *st = g->name ? NULL : safetensors_open(g->file);
		int has = st && safetensors_find(st, name);
		safetensors_close(st);
		if (has)
			return g;
	}
	return NULL;
}

static Status check_type(const Value *v, const RTensor *t)
{
	const Type *ty = v->type;
	char buf[256];
	int ok = !ty || ty->kind != TY_TENSOR || ((!ty->dtype || ty->dtype == t->dtype) &&
		(ty->rank < 0 || ty->rank == t->rank));
	for (int32_t d = 0; ok && ty && ty->kind == TY_TENSOR && d < ty->rank && d < t->rank; d++)
		ok = ty->dims[d].sym || ty->dims[d].v < 0 || ty->dims[d].v == t->shape[d];
	if (ok)
		return OK;
	diag_error(v->loc, "input '%s' is given a %s tensor, which does not match its type", sym_str(v->name),
		rt_describe(t, buf, sizeof buf));
	return FAILED;
}

/* One tensor per VK_INPUT, in order (an input with a default that is not
 * given takes its default); every missing input is named. */
Status run_bind_inputs(const RunInputs *o, Module *m, RTensor ***feeds, uint32_t *nfeeds)
{
	Graph *g = m->graphs.v[0];
	Status s = OK;
	*feeds = xcalloc(g->nin + 1, sizeof **feeds);
	*nfeeds = 0;
	for (uint32_t i = 0; i < g->nin; i++) {
		const Value *v = val(m, g->in[i]);
		if (v->kind != VK_INPUT)
			continue;
		const char *name = sym_str(v->name);
		const Given *gv = given_for(o, name);
		RTensor *t = gv ? read_given(gv, name) : v->init ? rt_from_ir(v->loc, v->init) : NULL;
		if (!gv && !v->init)
			diag_error(v->loc, "input '%s' is not given (--input %s=FILE.npy)", name, name);
		if (!t || check_type(v, t) != OK)
			s = FAILED;
		(*feeds)[(*nfeeds)++] = t;
	}
	for (uint32_t i = 0; i < o->ngiven; i++) {
		int found = !o->given[i].name;
		for (uint32_t j = 0; j < g->nin && !found; j++)
			found = val(m, g->in[j])->kind == VK_INPUT && !strcmp(sym_str(val(m, g->in[j])->name), o->given[i].name);
		if (!found) {
			diag_error(g->loc, "the graph has no input '%s'", o->given[i].name);
			s = FAILED;
		}
	}
	return s;
}

/* ---- outputs ----------------------------------------------------------------- */

static void print_summary(const char *name, const RTensor *t)
{
	char buf[256];
	printf("%s: %s = [", name, rt_describe(t, buf, sizeof buf));
	for (int64_t i = 0; i < t->numel && i < 8; i++) {
		if (i)
			printf(", ");
		if (t->dtype == DT_BOOL)
			printf("%s", rt_get_i(t, i) ? "true" : "false");
		else if (dtype_is_float(t->dtype))
			printf("%.6g", rt_get_f(t, i));
		else if (t->dtype == DT_U64)
			printf("%llu", (unsigned long long)rt_get_i(t, i));
		else
			printf("%lld", (long long)rt_get_i(t, i));
	}
	printf("%s]\n", t->numel > 8 ? ", ..." : "");
}

void run_inputs_free(RunInputs *in)
{
	for (uint32_t i = 0; i < in->ngiven; i++)
		free((char *)in->given[i].name);
	free(in->given);
}

static Status write_outputs(const char *out, const char *const *names, RTensor *const *ts, uint32_t n)
{
	size_t len = strlen(out);
	if (len > 12 && !strcmp(out + len - 12, ".safetensors"))
		return rt_write_safetensors(out, names, ts, n);
	if (mkdir(out, 0777) != 0 && errno != EEXIST) {
		diag_error((Loc){ sym_cstr(out), 0, 0 }, "cannot make the output directory: %s", strerror(errno));
		return FAILED;
	}
	Status s = OK;
	for (uint32_t i = 0; s == OK && i < n; i++) {
		size_t pn = len + strlen(names[i]) + 6;
		char *path = xmalloc(pn);
		snprintf(path, pn, "%s/%s.npy", out, names[i]);
		/* A name is one path component. */
		for (char *c = path + len + 1; *c; c++)
			*c = *c == '/' ? '_' : *c;
		s = rt_write_npy(path, ts[i]);
		free(path);
	}
	return s;
}

static Status report(const RunOpts *o, Module *m, RTensor **outs)
{
	Graph *g = m->graphs.v[0];
	const char **names = xcalloc(g->nout + 1, sizeof *names);
	for (uint32_t i = 0; i < g->nout; i++) {
		names[i] = sym_str(val(m, g->out[i])->name);
		print_summary(names[i], outs[i]);
	}
	fflush(stdout);
	Status s = o->output ? write_outputs(o->output, names, outs, g->nout) : OK;
	free(names);
	return s;
}

char *run_model_dir(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(dir, ".");
	return dir;
}

int run_main(int argc, char **argv)
{
	RunOpts o = { 0 };
	parse_run_args(argc, argv, &o);
	diag_set_max_errors(20);
	char *text = NULL, *dir = run_model_dir(o.model);
	RTensor **feeds = NULL, **outs = NULL;
	uint32_t nfeeds = 0;
	Module *m = run_load_model(o.model, &text);
	Status s = m ? run_bind_inputs(&o.in, m, &feeds, &nfeeds) : FAILED;
	if (s == OK)
		s = rt_run_graph(m, dir, feeds, &outs);
	if (s == OK)
		s = report(&o, m, outs);
	for (uint32_t i = 0; i < nfeeds; i++)
		rt_free(feeds[i]);
	for (uint32_t i = 0; outs && i < m->graphs.v[0]->nout; i++)
		rt_free(outs[i]);
	run_inputs_free(&o.in);
	free(feeds);
	free(outs);
	module_free(m);
	free(text);
	free(dir);
	return s == OK && !diag_error_count() ? 0 : 1;
}

/* ---- onnxc verify ------------------------------------------------------------ */
/* Runs the model on the inputs of a reference file (input.<name>) and
 * compares each output with the reference's output.<name>: an element
 * passes when |got - want| <= atol + rtol * |want| (numpy's allclose). */

static const char verify_usage[] =
	"usage: onnxc verify <model.fxir | model.onnx> --ref REF.safetensors [--rtol=X] [--atol=X]\n"
	"\n"
	"Runs the model's main graph with onnxc's reference kernels on the inputs\n"
	"stored in REF as input.<name> and compares each output with output.<name>:\n"
	"one line per output with the largest absolute and relative errors; exit 1\n"
	"if an element lies outside atol + rtol * |expected| (defaults 1e-5, 1e-4).\n";

typedef struct VerifyOpts { const char *model, *ref; double rtol, atol; } VerifyOpts;

double run_parse_number(const char *sub, const char *opt, const char *s)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0))
		sub_usage_error(sub, "%s: expected a number >= 0", opt);
	return v;
}

static void parse_verify_args(int argc, char **argv, VerifyOpts *o)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(verify_usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--ref")) {
			if (++i >= argc)
				sub_usage_error("verify", "%s needs a file name", a);
			o->ref = argv[i];
		} else if (!strncmp(a, "--ref=", 6)) {
			o->ref = a + 6;
		} else if (!strncmp(a, "--rtol=", 7)) {
			o->rtol = run_parse_number("verify", a, a + 7);
		} else if (!strncmp(a, "--atol=", 7)) {
			o->atol = run_parse_number("verify", a, a + 7);
		} else if (a[0] == '-' && a[1]) {
			sub_usage_error("verify", "unknown option '%s'", a);
		} else if (o->model) {
			sub_usage_error("verify", "more than one model ('%s')", a);
		} else
			o->model = a;
	}
	if (!o->model || !o->ref)
		sub_usage_error("verify", "%s", !o->model ? "no model file" : "no reference file (--ref REF.safetensors)");
}

RTensor *run_ref_tensor(const char *path, const SafeTensors *st, const char *prefix, const char *name, Loc loc)
{
	size_t n = strlen(prefix) + strlen(name) + 1;
	char *key = xmalloc(n);
	snprintf(key, n, "%s%s", prefix, name);
	const SafeTensor *e = safetensors_find(st, key);
	RTensor *t = e ? rt_from_safetensor(path, e) : NULL;
	if (!e)
		diag_error(loc, "the reference file has no tensor '%s'", key);
	free(key);
	return t;
}

Status run_ref_inputs(Module *m, const char *path, const SafeTensors *st, RTensor ***feeds, uint32_t *nfeeds)
{
	Graph *g = m->graphs.v[0];
	Status s = OK;
	*feeds = xcalloc(g->nin + 1, sizeof **feeds);
	*nfeeds = 0;
	for (uint32_t i = 0; i < g->nin; i++) {
		const Value *v = val(m, g->in[i]);
		if (v->kind != VK_INPUT)
			continue;
		RTensor *t = run_ref_tensor(path, st, "input.", sym_str(v->name), v->loc);
		if (!t || check_type(v, t) != OK)
			s = FAILED;
		(*feeds)[(*nfeeds)++] = t;
	}
	return s;
}

/* One output against its reference; prints its line to f. */
int run_compare_line(FILE *f, const char *name, const RTensor *got, const RTensor *want, double rtol, double atol)
{
	char a[128], b[128];
	RtCompare c = rt_compare(got, want, rtol, atol);
	if (!c.shape_ok) {
		fprintf(f, "%s: FAILED: got %s, expected %s\n", name, rt_describe(got, a, sizeof a), rt_describe(want, b, sizeof b));
		return 1;
	}
	fprintf(f, "%s: %s, max abs error %.3g, max rel error %.3g: ", name, rt_describe(got, a, sizeof a), c.max_abs, c.max_rel);
	if (!c.bad)
		fprintf(f, "ok\n");
	else
		fprintf(f, "FAILED (%lld of %lld elements outside rtol=%g, atol=%g)\n", (long long)c.bad, (long long)got->numel,
			rtol, atol);
	return c.bad != 0;
}

static Status verify_outputs(const VerifyOpts *o, Module *m, const SafeTensors *st, RTensor **outs)
{
	Graph *g = m->graphs.v[0];
	int failed = 0;
	for (uint32_t i = 0; i < g->nout; i++) {
		const char *name = sym_str(val(m, g->out[i])->name);
		RTensor *want = run_ref_tensor(o->ref, st, "output.", name, g->loc);
		failed |= !want || run_compare_line(stdout, name, outs[i], want, o->rtol, o->atol);
		rt_free(want);
	}
	return failed ? FAILED : OK;
}

int verify_main(int argc, char **argv)
{
	VerifyOpts o = { NULL, NULL, 1e-4, 1e-5 };
	parse_verify_args(argc, argv, &o);
	diag_set_max_errors(20);
	char *text = NULL, *dir = run_model_dir(o.model);
	RTensor **feeds = NULL, **outs = NULL;
	uint32_t nfeeds = 0;
	Module *m = run_load_model(o.model, &text);
	SafeTensors *st = m ? safetensors_open(o.ref) : NULL;
	Status s = st ? run_ref_inputs(m, o.ref, st, &feeds, &nfeeds) : FAILED;
	if (s == OK)
		s = rt_run_graph(m, dir, feeds, &outs);
	if (s == OK)
		s = verify_outputs(&o, m, st, outs);
	for (uint32_t i = 0; i < nfeeds; i++)
		rt_free(feeds[i]);
	for (uint32_t i = 0; outs && i < m->graphs.v[0]->nout; i++)
		rt_free(outs[i]);
	safetensors_close(st);
	free(feeds);
	free(outs);
	module_free(m);
	free(text);
	free(dir);
	return s == OK && !diag_error_count() ? 0 : 1;
}
