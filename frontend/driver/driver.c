/* driver.c - the onnxc command line.
 *
 * Reads one input (.fxir text or a binary .onnx model), runs a pipeline of
 * passes, and emits .fxir text, a listing or an ONNX model.  Exit codes:
 * 0 success, 1 bad input, 2 usage. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "backend.h"
#include "driver.h"
#include "passes.h"

typedef enum { EMIT_DEFAULT, EMIT_FXIR, EMIT_LISTING, EMIT_ONNX, EMIT_DOT } Emit;

typedef struct Opts {
	const char *input, *output;
	Emit emit;
	int level;                  /* -O */
	const char *passes;         /* -passes=, replaces the -O pipeline */
	int print_after_all, verify_each, verify_diags, split, time_passes, stats;
	const char *print_after, *print_before;
	int max_errors;
	OnnxWriteOptions w;
	const char *decomp_path;    /* -decomp-path=DIR */
	const char **decomp_files;  /* -decomp=FILE, in order */
	int ndecomp_files;
	int allow_custom_ops;
	int aten_fallback;          /* -aten-fallback: kept ATen ops as org.pytorch.aten::ATen */
	long fold_limit;            /* -fold-limit=; 0: never grow the model */
	char *owned_output, *owned_report;  /* default names, malloc'd */
	int outline;                /* -outline: run outline after the -O pipeline */
	const char *outline_classes;    /* -outline=A,B */
	int target_ort;             /* -target=ort: fuse_ort after the -O2 pipeline */
	int ort_gqa;                /* -ort-attention=gqa: fuse_ort writes GroupQueryAttention */
	int ort_attention_given;
	int quantize_bits;          /* -quantize=int4|int8: 4 or 8; 0: not asked */
	long quantize_block;        /* -quantize-block=N; 0: not given (32) */
	int quantize_zero_points;   /* -quantize-zero-points */
	int quantize_accuracy;      /* -quantize-accuracy-level=N: N + 1; 0: not given */
	int quantize_dynamic;       /* -quantize=int8-dynamic */
	const char *quantize_exclude; /* -quantize-exclude=P,Q; NULL: not given */
	int quantize_embedding;     /* -quantize-embedding */
	DecompLib *lib;
	const char *report_file;    /* -report[=FILE.md] */
	Report *report;
	int opset_upgrade;          /* -opset-upgrade */
	int bisect;                 /* -bisect-accuracy[=REF] */
	const char *bisect_ref;
	double rtol, atol;          /* -accuracy-rtol=, -accuracy-atol= */
	Bisect *bisector;
} Opts;

static const char usage_text[] =
	"usage: onnxc [options] <input.fxir | input.onnx | ->\n"
	"       onnxc run <model.fxir | model.onnx> [--input NAME=FILE]... [-o OUT]\n"
	"       onnxc check <model.onnx>\n"
	"       onnxc verify <model.fxir | model.onnx> --ref REF.safetensors\n"
	"       onnxc diff <a.fxir | a.onnx> <b.fxir | b.onnx> [--input NAME=FILE]...\n"
	"\n"
	"Compiles a PyTorch program written as .fxir text (or an existing ONNX\n"
	"model) into an ONNX model, a readable listing, or .fxir text.\n"
	"\n"
	"Output:\n"
	"  -o FILE                  write here (default: standard output for text;\n"
	"                           <input>.onnx in the current directory for ONNX)\n"
	"  -emit=fxir|listing|onnx|dot\n"
	"                           what to write (default: onnx when -o ends in .onnx,\n"
	"                           else fxir); dot: the graph for Graphviz\n"
	"  -opset=N                 default-domain opset to write (13 to 28; default:\n"
	"                           the input's, else 18); an input naming another\n"
	"                           is converted to it\n"
	"  -opset-upgrade           raise the default-domain opset to the smallest that\n"
	"                           has every op used, instead of failing\n"
	"  -keep-initializers-as-inputs\n"
	"                           list every initializer as a graph input too (an\n"
	"                           input with a default, which the user may override)\n"
	"  -external-data[=FILE]    put large tensors in a side file (default <output>.data)\n"
	"  -external-threshold=N    tensors of at least N bytes go there (default 1024)\n"
	"  -external-in-place       with external data, tensors read unchanged from the\n"
	"                           weights file point into it (no copy); that file\n"
	"                           must be inside the model's directory\n"
	"  -report[=FILE.md]        also write a Markdown conversion report, even when\n"
	"                           the conversion fails (default <input>.report.md)\n"
	"\n"
	"Passes:\n"
	"  -O0, -O1, -O2            optimization level (default -O1); see -list-passes\n"
	"  -passes=a,b,c            run exactly these passes instead of the -O pipeline\n"
	"                           (-passes= runs none; a,[b,c],d repeats b,c while\n"
	"                           they change the graph, up to 4 rounds)\n"
	"  -list-passes             list the passes and the -O pipelines, then exit\n"
	"  -fold-limit=BYTES        fold: leave results larger than BYTES as ops (default:\n"
	"                           results up to 128 KB, or no larger than the\n"
	"                           constants they read)\n"
	"  -target=onnx|ort         onnx (default): standard ONNX ops only; ort: at -O2,\n"
	"                           also ONNX Runtime's contrib ops (com.microsoft:\n"
	"                           FusedMatMul, Gelu, FastGelu, BiasGelu,\n"
	"                           SkipLayerNormalization, RotaryEmbedding, ...), which\n"
	"                           only it runs\n"
	"  -ort-attention=matmul|gqa\n"
	"                           with -target=ort, attention over a key/value cache:\n"
	"                           matmul (default) keeps MatMul and Softmax (the\n"
	"                           faster on ONNX Runtime's CPU provider); gqa writes\n"
	"                           com.microsoft::GroupQueryAttention\n"
	"  -quantize=int4|int8      quantize the weights of MatMul and Gemm (the LM head\n"
	"                           too) blockwise along K, rounding to nearest: with\n"
	"                           -target=ort as com.microsoft::MatMulNBits, else as\n"
	"                           DequantizeLinear with block_size (opset 21 or later)\n"
	"  -quantize=int8-dynamic   int8 weights (one scale a column) and activations\n"
	"                           quantized at run time: DynamicQuantizeLinear and\n"
	"                           MatMulInteger, or with -target=ort\n"
	"                           com.microsoft::DynamicQuantizeMatMul\n"
	"  -quantize-exclude=P[,Q]  leave float the products whose weight name, node\n"
	"                           name or module path matches a glob pattern P, Q\n"
	"  -quantize-embedding      also quantize the tables of Gather that an input\n"
	"                           indexes (embeddings), blockwise along each row: with\n"
	"                           -target=ort as com.microsoft::GatherBlockQuantized,\n"
	"                           else Gather of int8 codes and DequantizeLinear\n"
	"  -quantize-block=N        values along K that share a scale: a power of two\n"
	"                           from 16 to 4096 (default 32)\n"
	"  -quantize-zero-points    unsigned codes with a zero point a block (default:\n"
	"                           symmetric, signed codes, no zero points)\n"
	"  -quantize-accuracy-level=N\n"
	"                           with -target=ort: MatMulNBits' accuracy_level (0 to\n"
	"                           4; 4: A in int8, fastest; default: not written, A\n"
	"                           in its own dtype)\n"
	"  -outline[=A,B]           after the -O pipeline, make each nn.Module call (of the\n"
	"                           classes A, B only, if given) an ONNX local function\n"
	"  -decomp=FILE             add the decompositions in FILE (repeatable); they win\n"
	"                           over the built-in library\n"
	"  -decomp-path=DIR         the built-in decomposition library (default: the\n"
	"                           decomps directory next to the onnxc binary)\n"
	"  -allow-custom-ops        keep ATen ops without a decomposition as custom ops\n"
	"                           (domain aten) instead of failing\n"
	"  -aten-fallback           -allow-custom-ops, with ATen ops written as\n"
	"                           org.pytorch.aten::ATen(inputs, operator = \"name\",\n"
	"                           overload_name = \"overload\", ...): torch.onnx.export's\n"
	"                           ONNX_ATEN_FALLBACK form\n"
	"  -print-after-all         dump the IR after every pass (to standard error)\n"
	"  -print-after=NAME        dump the IR after pass NAME\n"
	"  -print-before=NAME       dump the IR before pass NAME\n"
	"  -verify-each             run the verifier after every pass (also when the\n"
	"                           environment sets ONNXC_VERIFY_EACH=1)\n"
	"  -time-passes             report how long each pass took and its node count\n"
	"                           before and after, then the totals\n"
	"  -stats                   report each pass's node count before and after\n"
	"                           (every graph, subgraph and function body), and\n"
	"                           how often each fuse and simplify rewrite fired\n"
	"  -bisect-accuracy[=REF]   run the program with the reference kernels after\n"
	"                           every pass (on REF.safetensors' input.<name>, or\n"
	"                           seeded random inputs) and name the first pass and\n"
	"                           node whose values leave the tolerance\n"
	"  -accuracy-rtol=X, -accuracy-atol=X\n"
	"                           its tolerance (default 1e-4, 1e-5)\n"
	"\n"
	"Diagnostics and testing:\n"
	"  -verify-diagnostics      check `// expected-error {{...}}` annotations in the\n"
	"                           input instead of printing diagnostics\n"
	"  -split-input-file        treat `// -----` lines as separators between inputs\n"
	"  -max-errors=N            stop after N errors (default 20; 0 means no limit)\n"
	"  -progress, -no-progress  show (or never show) the progress of long work on\n"
	"                           standard error (default: when it is a terminal)\n"
	"  -no-fast-lex             read every construct token by token: the lexer's\n"
	"                           one-token forms of common constructs (docs/ir.md)\n"
	"                           must not change what is parsed\n"
	"\n"
	"Running:\n"
	"  run MODEL ...            interpret MODEL with the reference kernels on the\n"
	"                           given inputs (see 'onnxc run --help')\n"
	"  check MODEL.onnx         check the model's structure, every error located\n"
	"  verify MODEL --ref REF   run MODEL on REF's inputs, compare with its outputs\n"
	"  diff A B                 run A and B on the same inputs; show the nodes only\n"
	"                           one has and where their values first differ\n"
	"\n"
	"  --help                   this text\n"
	"  --version                the version\n";

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "onnxc: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nrun 'onnxc --help' for usage\n");
	exit(2);
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return 0;
	*out = v;
	return 1;
}

static void list_passes(void)
{
	printf("Passes:\n");
	for (size_t i = 0; pass_at(i); i++)
		printf("  %-14s %s\n", pass_at(i)->name, pass_at(i)->summary);
	printf("\nPipelines:\n");
	for (int l = 0; l <= 2; l++)
		printf("  -O%d  %s\n", l, *pipeline_for_level(l) ? pipeline_for_level(l) : "(no passes)");
}

static int match(const char *arg, const char *name, const char **val)
{
	size_t n = strlen(name);
	if (strncmp(arg, name, n) != 0)
		return 0;
	if (arg[n] == '=') {
		*val = arg + n + 1;
		return 1;
	}
	return 0;
}

static void parse_emit(Opts *o, const char *v)
{
	if (strcmp(v, "fxir") == 0)
		o->emit = EMIT_FXIR;
	else if (strcmp(v, "listing") == 0)
		o->emit = EMIT_LISTING;
	else if (strcmp(v, "onnx") == 0)
		o->emit = EMIT_ONNX;
	else if (strcmp(v, "dot") == 0)
		o->emit = EMIT_DOT;
	else
		usage_error("unknown -emit kind '%s' (expected fxir, listing, onnx or dot)", v);
}

static void parse_numeric(const char *arg, const char *v, long lo, long hi, long *out)
{
	if (!parse_int(v, lo, hi, out)) {
		char msg[128];
		snprintf(msg, sizeof msg, "%%s: expected a number from %ld to %ld", lo, hi);
		usage_error(msg, arg);
	}
}

/* Every option as typed, `=` marking those that take a value; the
 * suggestions for a mistyped one come from here. */
static const char *const option_names[] = {
	"-o", "-emit=", "-opset=", "-opset-upgrade", "-keep-initializers-as-inputs", "-external-data=", "-external-data", "-external-threshold=", "-external-in-place",
	"-O0", "-O1", "-O2", "-passes=", "-list-passes", "-decomp=", "-decomp-path=",
	"-allow-custom-ops", "-aten-fallback", "-print-after-all", "-print-after=", "-print-before=",
	"-verify-each", "-time-passes", "-stats", "-verify-diagnostics", "-split-input-file",
	"-max-errors=", "-no-fast-lex", "-fold-limit=", "-outline=", "-outline", "-target=", "--help", "--version",
	"-quantize=", "-quantize-exclude=", "-quantize-block=", "-quantize-zero-points", "-quantize-accuracy-level=",
	"-ort-attention=",
	"-report=", "-report", "-bisect-accuracy=", "-bisect-accuracy", "-accuracy-rtol=", "-accuracy-atol=", "-progress", "-no-progress",
};

/* Edit distance of a[0..na) and b[0..nb), both at most 63 bytes. */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[64];
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

/* The option nearest to arg's name (the part before `=`), if it is near
 * enough to be a typo: at most a third of the name's length in edits.
 * Ties go to the later option (-O3: -O2; -external-data without `=`). */
static const char *nearest_option(const char *arg)
{
	size_t n = strcspn(arg, "="), best = (size_t)-1;
	const char *pick = NULL;
	if (n > 63)
		return NULL;
	for (size_t i = 0; i < sizeof option_names / sizeof *option_names; i++) {
		const char *o = option_names[i];
		size_t on = strcspn(o, "="), d = edit_distance(arg, n, o, on);
		if (d <= best) {
			best = d;
			pick = o;
		}
	}
	return best <= n / 3 ? pick : NULL;
}

/* An unknown option is a usage error.  -oFILE is not read as -o FILE:
 * options starting with -o (-opset=, -outline) would be taken for file
 * names; a name that looks like a file gets that hint instead. */
static void unknown_option(const char *a)
{
	char msg[512];
	const char *near = nearest_option(a);
	if (near && strcmp(near, "-o") == 0 && strncmp(a, "-o", 2) == 0)
		near = NULL;
	if (near)
		snprintf(msg, sizeof msg, "unknown option '%.200s' (did you mean %s?)", a, near);
	else if (strncmp(a, "-o", 2) == 0 && strpbrk(a + 2, "./"))
		snprintf(msg, sizeof msg, "unknown option '%.200s' (the output file is given as -o FILE)", a);
	else
		snprintf(msg, sizeof msg, "unknown option '%.200s'", a);
	usage_error("%s", msg);
}

static void parse_args(int argc, char **argv, Opts *o)
{
	long n;
	const char *v;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage_text, stdout);
			exit(0);
		} else if (strcmp(a, "--version") == 0 || strcmp(a, "-version") == 0) {
			printf("onnxc %s\n", ONNXC_VERSION);
			exit(0);
		} else if (strcmp(a, "-list-passes") == 0) {
			list_passes();
			exit(0);
		} else if (strcmp(a, "-o") == 0) {
			if (++i >= argc)
				usage_error("%s needs a file name", a);
			o->output = argv[i];
		} else if (match(a, "-emit", &v)) {
			parse_emit(o, v);
		} else if (strcmp(a, "-O0") == 0 || strcmp(a, "-O1") == 0 || strcmp(a, "-O2") == 0) {
			o->level = a[2] - '0';
		} else if (match(a, "-passes", &v)) {
			o->passes = v;
		} else if (match(a, "-target", &v)) {
			if (strcmp(v, "onnx") != 0 && strcmp(v, "ort") != 0)
				usage_error("-target=%s: the targets are onnx and ort", v);
			o->target_ort = strcmp(v, "ort") == 0;
		} else if (match(a, "-ort-attention", &v)) {
			if (strcmp(v, "matmul") != 0 && strcmp(v, "gqa") != 0)
				usage_error("-ort-attention=%s: the forms are matmul and gqa", v);
			o->ort_gqa = strcmp(v, "gqa") == 0;
			o->ort_attention_given = 1;
		} else if (match(a, "-decomp-path", &v)) {
			o->decomp_path = v;
		} else if (match(a, "-decomp", &v)) {
			o->decomp_files = xrealloc(o->decomp_files, (size_t)(o->ndecomp_files + 1) * sizeof *o->decomp_files);
			o->decomp_files[o->ndecomp_files++] = v;
		} else if (strcmp(a, "-allow-custom-ops") == 0) {
			o->allow_custom_ops = 1;
		} else if (strcmp(a, "-aten-fallback") == 0) {
			o->allow_custom_ops = o->aten_fallback = 1;
		} else if (strcmp(a, "-print-after-all") == 0) {
			o->print_after_all = 1;
		} else if (match(a, "-print-after", &v)) {
			o->print_after = v;
		} else if (match(a, "-print-before", &v)) {
			o->print_before = v;
		} else if (strcmp(a, "-verify-each") == 0) {
			o->verify_each = 1;
		} else if (strcmp(a, "-time-passes") == 0) {
			o->time_passes = 1;
		} else if (strcmp(a, "-stats") == 0) {
			o->stats = 1;
		} else if (strcmp(a, "-verify-diagnostics") == 0) {
			o->verify_diags = 1;
		} else if (strcmp(a, "-no-fast-lex") == 0) {
			fxir_fast_lex = 0;
		} else if (strcmp(a, "-split-input-file") == 0) {
			o->split = 1;
		} else if (match(a, "-max-errors", &v)) {
			parse_numeric(a, v, 0, 100000, &n);
			o->max_errors = (int)n;
		} else if (strcmp(a, "-keep-initializers-as-inputs") == 0) {
			o->w.keep_inits_as_inputs = 1;
		} else if (strcmp(a, "-opset-upgrade") == 0) {
			o->opset_upgrade = 1;
		} else if (match(a, "-opset", &v)) {
			parse_numeric(a, v, ONNXC_OPSET_MIN, ONNXC_OPSET_MAX, &n);
			o->w.opset = (int)n;
		} else if (strcmp(a, "-external-data") == 0) {
			o->w.external = 1;
		} else if (match(a, "-external-data", &v)) {
			o->w.external = 1;
			o->w.external_file = v;
		} else if (strcmp(a, "-external-in-place") == 0) {
			o->w.external = 1;
			o->w.external_in_place = 1;
		} else if (match(a, "-external-threshold", &v)) {
			parse_numeric(a, v, 0, 1L << 40, &n);
			o->w.external_threshold = (size_t)n;
		} else if (match(a, "-fold-limit", &v)) {
			parse_numeric(a, v, 1, 1L << 40, &n);
			o->fold_limit = n;
		} else if (strcmp(a, "-report") == 0) {
			o->report_file = "";
		} else if (match(a, "-report", &v)) {
			if (!*v)
				usage_error("%s: expected a file name", a);
			o->report_file = v;
		} else if (strcmp(a, "-progress") == 0) {
			progress_set_mode(PROGRESS_ON);
		} else if (strcmp(a, "-no-progress") == 0) {
			progress_set_mode(PROGRESS_OFF);
		} else if (strcmp(a, "-bisect-accuracy") == 0) {
			o->bisect = 1;
		} else if (match(a, "-bisect-accuracy", &v)) {
			if (!*v)
				usage_error("%s: expected a reference file (REF.safetensors)", a);
			o->bisect = 1;
			o->bisect_ref = v;
		} else if (match(a, "-accuracy-rtol", &v)) {
			o->rtol = run_parse_number(NULL, a, v);
		} else if (match(a, "-accuracy-atol", &v)) {
			o->atol = run_parse_number(NULL, a, v);
		} else if (match(a, "-quantize-block", &v)) {
			parse_numeric(a, v, 16, 4096, &n);
			if (n & (n - 1))
				usage_error("%s: the block size must be a power of two", a);
			o->quantize_block = n;
		} else if (match(a, "-quantize-accuracy-level", &v)) {
			parse_numeric(a, v, 0, 4, &n);
			o->quantize_accuracy = (int)n + 1;
		} else if (match(a, "-quantize-exclude", &v)) {
			if (!*v || v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
				usage_error("%s: expected a comma-separated list of patterns", a);
			o->quantize_exclude = v;
		} else if (strcmp(a, "-quantize-zero-points") == 0) {
			o->quantize_zero_points = 1;
		} else if (strcmp(a, "-quantize-embedding") == 0) {
			o->quantize_embedding = 1;
		} else if (match(a, "-quantize", &v)) {
			o->quantize_dynamic = strcmp(v, "int8-dynamic") == 0;
			if (strcmp(v, "int4") != 0 && strcmp(v, "int8") != 0 && !o->quantize_dynamic)
				usage_error("-quantize=%s: the formats are int4, int8 and int8-dynamic", v);
			o->quantize_bits = v[3] == '4' ? 4 : 8;
		} else if (strcmp(a, "-outline") == 0) {
			o->outline = 1;
		} else if (match(a, "-outline", &v)) {
			if (!*v || v[0] == ',' || v[strlen(v) - 1] == ',' || strstr(v, ",,"))
				usage_error("%s: expected a comma-separated list of module classes", a);
			o->outline = 1;
			o->outline_classes = v;
		} else if (a[0] == '-' && a[1]) {
			unknown_option(a);
		} else if (o->input) {
			usage_error("more than one input file ('%s')", a);
		} else {
			o->input = a;
		}
	}
	if (!o->input)
		usage_error("%s", "no input file");
	if (o->quantize_dynamic && (o->quantize_block || o->quantize_zero_points || o->quantize_accuracy))
		usage_error("%s", "-quantize=int8-dynamic has one scale a column, no zero points and no accuracy "
			    "level: -quantize-block, -quantize-zero-points and -quantize-accuracy-level are for int4|int8");
	if (!o->quantize_bits && o->quantize_exclude)
		usage_error("%s", "-quantize-exclude needs -quantize=");
	if (!o->quantize_bits && o->quantize_embedding)
		usage_error("%s", "-quantize-embedding needs -quantize=");
	if (!o->quantize_bits && (o->quantize_block || o->quantize_zero_points || o->quantize_accuracy))
		usage_error("%s", o->quantize_block ? "-quantize-block needs -quantize=int4|int8"
				  : o->quantize_accuracy ? "-quantize-accuracy-level needs -quantize=int4|int8"
				  : "-quantize-zero-points needs -quantize=int4|int8");
	if (o->ort_attention_given && !o->target_ort)
		usage_error("%s", "-ort-attention chooses among ONNX Runtime's forms: it needs -target=ort");
	if (o->quantize_accuracy && !o->target_ort)
		usage_error("%s", "-quantize-accuracy-level is MatMulNBits' attribute: it needs -target=ort");
	if (o->quantize_bits && (!o->quantize_dynamic || o->quantize_embedding) && !o->target_ort && o->w.opset &&
	    o->w.opset < 21) {
		char opset[16];
		snprintf(opset, sizeof opset, "%d", o->w.opset);
		usage_error("-quantize at -target=onnx writes DequantizeLinear with block_size, which needs opset 21: "
			    "-opset=%s is older (use -opset=21 or later, or -target=ort)", opset);
	}
}

/* ---- passes ------------------------------------------------------------ */
static void dump(const Module *m, const char *when, const char *pass)
{
	fprintf(stderr, "// -----// IR Dump %s %s //----- //\n", when, pass);
	print_module(stderr, m);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* With -keep-initializers-as-inputs the writer lists every initializer of
 * the main graph as an input the user may override; those the program
 * holds before the passes are marked so that no pass reads, merges or
 * folds them as constants.  Initializers the passes make later (folded
 * shape arithmetic) are derived from constants and stay ordinary. */
static void mark_overridable(Module *m, const Opts *o)
{
	if (!o->w.keep_inits_as_inputs || !m->graphs.n)
		return;
	const Graph *g = m->graphs.v[0];
	for (uint32_t i = 0; i < g->inits.n; i++)
		val(m, g->inits.v[i])->overridable = 1;
}

/* Under a pass's -stats line, each of its rewrites that fired in that
 * run and how often: `onnxc: stats   fuse.gemm              2 matches`. */
static void print_rewrite_stats(void)
{
	uint32_t n;
	const RewriteStat *st = rewrite_stats(&n);
	char name[96];
	for (uint32_t i = 0; i < n; i++) {
		if (!st[i].run)
			continue;
		snprintf(name, sizeof name, "%s.%s", st[i].pass, st[i].rule);
		fprintf(stderr, "onnxc: stats   %-28s %7llu match%s\n", name, (unsigned long long)st[i].run,
			st[i].run == 1 ? "" : "es");
	}
}

static int run_pipeline(Module *m, const Pipeline *pl, const Opts *o)
{
	mark_overridable(m, o);
	PassOptions po = { o->w.opset ? o->w.opset : 18, o->allow_custom_ops, o->lib, o->fold_limit,
			   o->w.weights_dir, o->outline_classes, o->outline, o->target_ort, o->quantize_bits,
			   (int)o->quantize_block, o->quantize_zero_points, o->quantize_accuracy,
			   o->quantize_dynamic, o->quantize_exclude, o->quantize_embedding, o->aten_fallback,
			   o->ort_gqa };
	if (o->bisector && bisect_begin(o->bisector, m) != OK)
		return 1;
	double total_ms = 0;
	uint32_t first = 0, last = 0, ran = 0;
	uint32_t round = 0;                    /* the bracketed group (passes.h) */
	uint64_t round_start = 0;
	for (uint32_t i = 0; i < pl->n; i++) {
		const Pass *p = pl->v[i];
		if (i == pl->loop_first && pl->loop_end)
			round_start = module_digest(m);
		if (o->print_before && strcmp(o->print_before, p->name) == 0)
			dump(m, "Before", p->name);
		uint32_t before = o->stats || o->time_passes ? module_node_count(m) : 0;
		rewrite_stats_new_run();
		double t0 = now();
		Status st = p->run(m, &po);
		double ms = (now() - t0) * 1e3;
		if (o->stats || o->time_passes) {
			uint32_t after = module_node_count(m);
			/* -time-passes shows the counts too: one line a pass. */
			if (o->time_passes)
				fprintf(stderr, "onnxc: pass %-14s %9.3f ms %7u -> %7u nodes (%+lld)\n", p->name, ms, before, after,
					(long long)after - (long long)before);
			else
				fprintf(stderr, "onnxc: stats %-14s %7u -> %7u nodes (%+lld)\n", p->name, before, after,
					(long long)after - (long long)before);
			if (o->stats)
				print_rewrite_stats();
			total_ms += ms;
			last = after;
			if (ran == 0)
				first = before;
		}
		int failed = st != OK || diag_error_count();
		if (o->report)
			report_stage(o->report, report_stage_of_pass(p->name), failed ? STAGE_FAILED : STAGE_OK, NULL);
		if (failed)
			return 1;
		infer_module(m, WALK_PROGRAM);
		if (o->print_after_all || (o->print_after && strcmp(o->print_after, p->name) == 0))
			dump(m, "After", p->name);
		if (o->verify_each && verify_module(m)) {
			diag_error((Loc){ 0 }, "the IR is invalid after pass '%s'", p->name);
			if (o->report)
				report_stage(o->report, report_stage_of_pass(p->name), STAGE_FAILED, NULL);
			return 1;
		}
		if (o->bisector && bisect_after(o->bisector, m, p->name) != OK) {
			if (o->report)  /* the note names the pass whose values left the tolerance */
				report_stage(o->report, STAGE_ACCURACY, STAGE_FAILED, p->name);
			return 1;
		}
		ran++;
		if (i + 1 == pl->loop_end && ++round < PIPELINE_MAX_ROUNDS && module_digest(m) != round_start)
			i = pl->loop_first - 1;
	}
	if (o->bisector)
		bisect_end(o->bisector);
	if (o->bisector && o->report)
		report_stage(o->report, STAGE_ACCURACY, STAGE_OK, "every pass within the tolerance, -bisect-accuracy");
	if (o->time_passes && pl->n)
		fprintf(stderr, "onnxc: pass %-14s %9.3f ms %7u -> %7u nodes (%+lld), %u passes\n", "total", total_ms, first, last,
			(long long)last - (long long)first, ran);
	/* What is written must read back: a type a pass wrote that inference
	 * contradicts is refused here, at the node, not by the next reader. */
	if (pl->n && !o->verify_each && verify_module(m)) {
		diag_error((Loc){ 0 }, "the IR is invalid after the passes (-verify-each names the pass)");
		return 1;
	}
	return 0;
}

/* ---- output ------------------------------------------------------------ */
static char *default_output(const Opts *o)
{
	if (o->emit != EMIT_ONNX)
		return NULL;
	const char *base = strrchr(o->input, '/');
	base = base ? base + 1 : o->input;
	if (strcmp(o->input, "-") == 0)
		base = "out";
	size_t n = strlen(base);
	const char *dot = strrchr(base, '.');
	if (dot && dot != base)
		n = (size_t)(dot - base);
	char *out = xmalloc(n + 6);
	memcpy(out, base, n);
	strcpy(out + n, ".onnx");
	return out;
}

/* Text goes to a temporary file renamed into place at the end, so a
 * failed run leaves nothing half-written. */
static int emit_text(Module *m, const Opts *o, FILE *dst)
{
	if (o->emit == EMIT_LISTING)
		return listing_write(m, dst, &o->w);
	if (o->emit == EMIT_DOT)
		return dot_write(m, dst);
	print_module(dst, m);
	return 0;
}

/* An ONNX file never holds ATen ops by accident: without -allow-custom-ops
 * the same listing as the decompose pass's refuses the module, and so does
 * an op of a domain neither ONNX's nor declared.  Nor does it hold complex
 * values, which ONNX's ops take as pairs of reals. */
static int emit_onnx(Module *m, const Opts *o)
{
	if (!o->allow_custom_ops && decompose_report_unsupported(m))
		return 1;
	if (!o->allow_custom_ops && report_foreign_ops(m, o->target_ort))
		return 1;
	if (complex_report_unlowered(m))
		return 1;
	return onnx_write(m, o->output, &o->w);
}

/* What is written as ONNX uses only ops of its opset, in their form there. */
static int emit(Module *m, const Opts *o)
{
	if (o->emit != EMIT_FXIR && verify_opset(m, o->w.opset ? o->w.opset : 18, o->opset_upgrade)) {
		if (o->report)
			report_stage(o->report, STAGE_WRITE, STAGE_FAILED, NULL);
		return 1;
	}
	if (o->emit == EMIT_ONNX) {
		int rc = emit_onnx(m, o);
		if (o->report)
			report_stage(o->report, STAGE_WRITE, rc ? STAGE_FAILED : STAGE_OK, NULL);
		return rc;
	}
	if (!o->output || strcmp(o->output, "-") == 0)
		return emit_text(m, o, stdout);
	size_t n = strlen(o->output);
	char *tmp = xmalloc(n + 32);
	snprintf(tmp, n + 32, "%s.tmp%ld", o->output, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f) {
		diag_error((Loc){ sym_cstr(o->output), 0, 0 }, "cannot write: %s", strerror(errno));
		free(tmp);
		return 1;
	}
	int rc = emit_text(m, o, f);
	rc |= ferror(f) != 0;
	rc |= fclose(f) != 0;
	if (rc == 0 && rename(tmp, o->output) != 0) {
		diag_error((Loc){ sym_cstr(o->output), 0, 0 }, "cannot write: %s", strerror(errno));
		rc = 1;
	}
	if (rc)
		remove(tmp);
	free(tmp);
	return rc;
}

/* ---- -verify-diagnostics ------------------------------------------------ */
typedef struct Expect { DiagKind kind; uint32_t line; char *text; int seen; uint32_t at; } Expect;

static int parse_expect(const char *p, const char *end, uint32_t line, Expect *e)
{
	static const struct { const char *w; DiagKind k; } kinds[] = {
		{ "expected-error", DIAG_ERROR }, { "expected-warning", DIAG_WARNING }, { "expected-note", DIAG_NOTE },
	};
	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(kinds[i].w);
		const char *at = p;
		if ((size_t)(end - p) < n || memcmp(p, kinds[i].w, n) != 0)
			continue;
		at += n;
		long off = 0;
		if (*at == '@') {
			char *q;
			off = strtol(at + 1, &q, 10);
			at = q;
		}
		while (at < end && *at == ' ')
			at++;
		const char *close = NULL;
		if (end - at >= 2 && at[0] == '{' && at[1] == '{')
			for (const char *c = at + 2; c + 1 < end && !close; c++)
				if (c[0] == '}' && c[1] == '}')
					close = c;
		if (!close)
			return -1;
		e->kind = kinds[i].k;
		e->line = (uint32_t)((long)line + off);
		e->text = strndup(at + 2, (size_t)(close - at - 2));
		e->at = line;
		e->seen = 0;
		return 1;
	}
	return 0;
}

/* Finds every expected-* annotation in text[first_line..]. */
static Expect *collect_expects(const char *text, size_t len, uint32_t first_line, size_t *n)
{
	Expect *v = NULL;
	size_t cap = 0;
	*n = 0;
	uint32_t line = first_line;
	for (const char *p = text, *end = text + len; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		for (const char *c = p; c + 9 < le; c++) {
			if (memcmp(c, "expected-", 9) != 0)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 16;
				v = xreallocarray(v, cap, sizeof *v);
			}
			int r = parse_expect(c, le, line, &v[*n]);
			if (r < 0)
				fprintf(stderr, "onnxc: error: line %u: malformed expected-* annotation (missing {{...}})\n", line);
			else if (r > 0)
				(*n)++;
		}
		p = le + 1;
	}
	return v;
}

/* Every expectation must be met by a diagnostic on its line containing
 * its text, and every diagnostic must be expected. */
static int check_expects(Sym file, Expect *ex, size_t nex)
{
	size_t nd;
	const Diag *d = diag_collected(&nd);
	int bad = 0;
	static const char *const kn[] = { "error", "warning", "note" };
	for (size_t i = 0; i < nd; i++) {
		int ok = 0;
		for (size_t j = 0; j < nex && !ok; j++)
			if (!ex[j].seen && ex[j].kind == d[i].kind && ex[j].line == d[i].loc.line &&
			    strstr(d[i].msg, ex[j].text))
				ex[j].seen = ok = 1;
		if (!ok) {
			fprintf(stderr, "%s:%u:%u: error: unexpected %s: %s\n", sym_str(d[i].loc.file ? d[i].loc.file : file),
				d[i].loc.line, d[i].loc.col, kn[d[i].kind], d[i].msg);
			bad = 1;
		}
	}
	for (size_t j = 0; j < nex; j++)
		if (!ex[j].seen) {
			fprintf(stderr, "%s:%u: error: expected %s \"%s\" was not produced (on line %u)\n", sym_str(file),
				ex[j].at, kn[ex[j].kind], ex[j].text, ex[j].line);
			bad = 1;
		}
	return bad;
}

/* ---- -report ------------------------------------------------------------ */
/* <input base>.report.md in the current directory, like the default model. */
static char *default_report(const char *input)
{
	const char *base = strrchr(input, '/');
	base = base ? base + 1 : strcmp(input, "-") ? input : "out";
	const char *dot = strrchr(base, '.');
	size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	char *out = xmalloc(n + 11);
	memcpy(out, base, n);
	strcpy(out + n, ".report.md");
	return out;
}

/* The report keeps the command line and every diagnostic, printed as usual. */
static char *start_report(Opts *o, int argc, char **argv, const char *text, size_t len)
{
	char *cmd = NULL;
	size_t n;
	FILE *f = xmemstream(&cmd, &n);
	fputs("onnxc", f);
	for (int i = 1; i < argc; i++)
		fprintf(f, " %s", argv[i]);
	fclose(f);
	if (!*o->report_file)
		o->report_file = o->owned_report = default_report(o->input);
	int onnx = text && looks_like_onnx(o->input, text, len);
	o->report = report_new(o->input, text && !onnx ? text : NULL, len, cmd);
	diag_set_collect(DIAG_KEEP_PRINT);
	return cmd;
}

/* ---- one input --------------------------------------------------------- */
static Module *read_input(const Opts *o, const char *text, size_t len, uint32_t first_line)
{
	Module *m = looks_like_onnx(o->input, text, len) ? onnx_import(o->input)
		: parse_fxir_at(o->input, text, len, first_line);
	if (m && o->report)
		report_input(o->report, m);
	return m;
}

/* -opset=N on a module that names another default-domain opset converts
 * it (passes/opset_convert.c) before the passes, so that decompose, fuse
 * and the final check all see opset N.  The decomposition library writes
 * opset 17 and up: a program holding PyTorch calls is lowered at 17 when N
 * is older, and converted to N after the passes (after = 1). */
enum { DECOMP_MIN_OPSET = 17 };

static Status count_torch(const GraphVisit *gv, void *ctx)
{
	for (const Node *n = gv->g->first; n; n = n->next)
		if (node_is_torch(n)) {
			*(int *)ctx = 1;
			return FAILED;          /* one is enough */
		}
	return OK;
}

static int convert_opset(Module *m, const Opts *o, int after)
{
	int64_t n = o->w.opset, to = n;
	if (!n)
		return 0;
	if (!after && n < DECOMP_MIN_OPSET) {
		int torch = 0;
		module_walk(m, WALK_PROGRAM, count_torch, &torch);
		if (torch)
			to = DECOMP_MIN_OPSET;
	}
	if (opsets_onnx(&m->opsets, 0) == to)
		return 0;
	if (opset_convert(m, to, o->lib))
		return 1;
	infer_module(m, WALK_PROGRAM);
	return 0;
}

/* Each stage is marked in the report as it ends; the report sees the
 * module as read and as it stands when the run stops. */
static int compile(const Opts *o, const Pipeline *pl, const char *text, size_t len, uint32_t first_line)
{
	Report *r = o->report;
	double t0 = now();
	Module *m = read_input(o, text, len, first_line);
	/* -time-passes: the reading and the writing around the passes' times,
	 * so that the three add up to the run. */
	if (o->time_passes && pl->n)
		fprintf(stderr, "onnxc: time read %9.3f ms\n", (now() - t0) * 1e3);
	int rc = 1, verified = m && verify_module(m) == 0, lowered = verified && convert_opset(m, o, 0) == 0 &&
		run_pipeline(m, pl, o) == 0 && convert_opset(m, o, 1) == 0;
	if (r) {
		report_stage(r, STAGE_PARSE, m ? STAGE_OK : STAGE_FAILED, looks_like_onnx(o->input, text, len) ? "ONNX import" : NULL);
		if (m)
			report_stage(r, STAGE_VERIFY, verified ? STAGE_OK : STAGE_FAILED, NULL);
		if (o->emit != EMIT_ONNX)
			report_stage(r, STAGE_WRITE, STAGE_NOT_RUN, o->emit == EMIT_LISTING ? "not asked: -emit=listing"
				     : o->emit == EMIT_DOT ? "not asked: -emit=dot" : "not asked: -emit=fxir");
	}
	if (lowered) {
		t0 = now();
		rc = emit(m, o);
		if (o->time_passes && pl->n)
			fprintf(stderr, "onnxc: time write %9.3f ms\n", (now() - t0) * 1e3);
	}
	if (r && m)
		report_result(r, m, lowered && !rc, &o->w);
	module_free(m);
	return rc || diag_error_count() ? 1 : 0;
}

static int compile_checked(const Opts *o, const Pipeline *pl, const char *text, size_t len, uint32_t first_line)
{
	if (!o->verify_diags)
		return compile(o, pl, text, len, first_line);
	size_t nex;
	Expect *ex = collect_expects(text, len, first_line, &nex);
	diag_set_collect(1);
	diag_clear();
	compile(o, pl, text, len, first_line);
	int bad = check_expects(sym_cstr(o->input), ex, nex);
	for (size_t i = 0; i < nex; i++)
		free(ex[i].text);
	free(ex);
	diag_clear();
	diag_set_collect(0);
	return bad;
}

/* Runs each `// -----`-separated chunk on its own, keeping line numbers. */
static int compile_split(const Opts *o, const Pipeline *pl, const char *text, size_t len)
{
	int rc = 0, first = 1;
	uint32_t line = 1, start_line = 1;
	const char *start = text, *p = text, *end = text + len;
	while (p <= end) {
		const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		const char *le = nl ? nl : end;
		const char *t = p;
		while (t < le && (*t == ' ' || *t == '\t'))
			t++;
		int sep = (size_t)(le - t) >= 8 && memcmp(t, "// -----", 8) == 0 && le - t == 8;
		if (sep || !nl) {
			const char *cend = sep ? p : end;
			if (!first && !o->verify_diags && o->emit != EMIT_ONNX)
				fputs("// -----\n", stdout);
			fflush(stdout);
			rc |= compile_checked(o, pl, start, (size_t)(cend - start), start_line);
			first = 0;
			start = nl ? nl + 1 : end;
			start_line = line + 1;
		}
		if (!nl)
			break;
		p = nl + 1;
		line++;
	}
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return run_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "check") == 0)
		return check_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "verify") == 0)
		return verify_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "diff") == 0)
		return diff_main(argc, argv);
	Opts o = { 0 };
	o.level = 1;
	o.max_errors = 20;
	o.rtol = 1e-4;
	o.atol = 1e-5;
	parse_args(argc, argv, &o);
	/* The test suites turn the verifier on for every compile this way,
	 * whatever flags a test gives. */
	const char *ve = getenv("ONNXC_VERIFY_EACH");
	if (ve && strcmp(ve, "1") == 0)
		o.verify_each = 1;
	diag_set_max_errors(o.max_errors);
	if (o.emit == EMIT_DEFAULT) {
		size_t n = o.output ? strlen(o.output) : 0;
		o.emit = n > 5 && strcmp(o.output + n - 5, ".onnx") == 0 ? EMIT_ONNX : EMIT_FXIR;
	}
	if (o.report_file && (o.split || o.verify_diags))
		usage_error("%s", "-report writes one report for one conversion: not with -split-input-file or -verify-diagnostics");
	if (o.bisect && (o.split || o.verify_diags))
		usage_error("%s", "-bisect-accuracy runs one program: not with -split-input-file or -verify-diagnostics");
	if (o.split && o.emit == EMIT_ONNX)
		usage_error("%s", "-split-input-file writes one output per input: use -emit=fxir or -emit=listing, not onnx");
	if (!o.output)
		o.output = o.owned_output = default_output(&o);
	/* Weights files are named relative to the input, not the working dir. */
	char *dir = strdup(o.input);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		*slash = 0;
	o.w.weights_dir = slash ? dir : ".";
	const char *ps = o.passes ? o.passes : pipeline_for_level(o.level), *bad;
	char quantized[256], targeted[288], outlined[320];
	if (o.quantize_bits && !o.passes) {
		/* After the pipeline, which folds the weights' Transposes; dce
		 * drops the float weights no longer read. */
		snprintf(quantized, sizeof quantized, "%s,quantize%s", ps, o.target_ort && o.level == 2 ? "" : ",dce");
		ps = quantized;
	}
	if (o.target_ort && !o.passes && o.level == 2) {
		/* Last: the other passes do not know the contrib ops. */
		snprintf(targeted, sizeof targeted, "%s,fuse_ort,dce", ps);
		ps = targeted;
	} else if (o.target_ort && !o.passes && !o.quantize_bits) {
		fprintf(stderr, "onnxc: note: -target=ort adds fusions at -O2 only; -O%d writes standard ONNX ops\n",
			o.level);
	}
	if (o.outline && !o.passes) {
		/* After the pipeline; dce then drops the constants bodies copied. */
		snprintf(outlined, sizeof outlined, "%s%s", ps, o.level ? ",outline,dce" : ",outline");
		ps = outlined;
	}
	size_t badlen;
	Pipeline pl;
	if (pipeline_parse(ps, &pl, &bad, &badlen) != OK) {
		char msg[200];
		if (memchr(bad, '[', badlen) || memchr(bad, ']', badlen) || pass_lookup(bad, badlen))
			snprintf(msg, sizeof msg, "'%.*s': one group of passes in brackets is allowed, closed before the end", (int)badlen, bad);
		else
			snprintf(msg, sizeof msg, "unknown pass '%.*s' (see -list-passes)", (int)badlen, bad);
		usage_error("%s", msg);
	}
	const char *named[] = { o.print_after, o.print_before };
	for (size_t i = 0; i < 2; i++)
		if (named[i] && !pass_lookup(named[i], strlen(named[i])))
			usage_error("unknown pass '%s' (see -list-passes)", named[i]);
	o.lib = decomp_lib_new(o.decomp_path, o.decomp_files, o.ndecomp_files);
	if (o.bisect)
		o.bisector = bisect_new(o.bisect_ref, o.w.weights_dir, o.rtol, o.atol);
	size_t len;
	char *text = strcmp(o.input, "-") == 0 ? read_stdin(&len) : read_file(o.input, &len);
	int rc = 1;
	char *command = o.report_file ? start_report(&o, argc, argv, text, len) : NULL;
	if (text) {
		diag_add_source(sym_cstr(o.input), text, len);
		rc = o.split ? compile_split(&o, &pl, text, len) : compile_checked(&o, &pl, text, len, 1);
	}
	if (o.report && report_write(o.report, o.report_file) != OK)
		rc = 1;
	report_free(o.report);
	bisect_free(o.bisector);
	free(command);
	free(o.owned_report);
	free(o.owned_output);

	pipeline_free(&pl);
	decomp_lib_free(o.lib);
	free(o.decomp_files);
	free(text);
	free(dir);
	return rc ? 1 : 0;
}
