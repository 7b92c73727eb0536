/* bench_parse.c - parse, verify and print speed on a generated graph.
 *
 *   onnxc-bench [NODES [REPEATS]] [--plain] [--no-fast-lex]
 *
 * Generates a straight-line graph of NODES ATen/ONNX nodes (default
 * 100000) with types and provenance like an exported model's, then times
 * parse, verify and print REPEATS times (default 5) and prints the median
 * of each, nodes per second and arena bytes per node. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "frontend.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *generate(long nodes, int plain, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	fputs("module @Bench {\n  graph @forward(%x: f32[s0,64], %y: f32[s0,64]) -> (f32[s0,64]) {\n", f);
	fputs("    param %w: f32[64,64] = \"w\"\n", f);
	fputs("    %v0 = aten::add.Tensor(%x, %y) : f32[s0,64]\n", f);
	for (long i = 1; i < nodes; i++) {
		switch (i % 4) {
		case 0: fprintf(f, "    %%v%ld = aten::mm(%%v%ld, %%w) : f32[s0,64]", i, i - 1); break;
		case 1: fprintf(f, "    %%v%ld = onnx::Relu(%%v%ld) : f32[s0,64]", i, i - 1); break;
		case 2: fprintf(f, "    %%v%ld = aten::mul.Tensor(%%v%ld, 0.5) : f32[s0,64]", i, i - 1); break;
		default: fprintf(f, "    %%v%ld = aten::add.Tensor(%%v%ld, %%x, alpha = 1) : f32[s0,64]", i, i - 1); break;
		}
		if (plain)
			fputc('\n', f);
		else
			fprintf(f, " scope(\"\": \"__main__.Bench\", \"layer%ld\": \"torch.nn.Linear\") loc(\"model.py\":%ld)\n",
				i / 4, 10 + i % 50);
	}
	fprintf(f, "    return %%v%ld\n  }\n}\n", nodes - 1);
	fclose(f);
	return buf;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	long nodes = 100000;
	int reps = 5, plain = 0, npos = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--plain") == 0)
			plain = 1;
		else if (strcmp(argv[i], "--no-fast-lex") == 0)
			fxir_fast_lex = 0;
		else if (argv[i][0] != '-' && npos == 0)
			nodes = atol(argv[i]), npos++;
		else if (argv[i][0] != '-' && npos == 1)
			reps = atoi(argv[i]), npos++;
		else
			bad = 1;
	}
	if (bad || nodes < 1 || reps < 1 || reps > 1000) {
		fprintf(stderr, "usage: onnxc-bench [NODES [REPEATS]] [--plain] [--no-fast-lex]\n");
		return 2;
	}
	size_t len;
	char *text = generate(nodes, plain, &len);
	double *tp = calloc((size_t)reps, sizeof *tp), *tv = calloc((size_t)reps, sizeof *tv),
	       *to = calloc((size_t)reps, sizeof *to);
	size_t bytes = 0, reserved = 0;
	FILE *null = fopen("/dev/null", "w");
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		Module *m = parse_fxir("bench.fxir", text, len);
		double t1 = now();
		if (!m || verify_module(m)) {
			fprintf(stderr, "bench: generated input did not parse\n");
			return 1;
		}
		double t2 = now();
		print_module(null, m);
		double t3 = now();
		tp[r] = t1 - t0, tv[r] = t2 - t1, to[r] = t3 - t2;
		bytes = arena_used(&m->arena) + m->vals.n * sizeof(Value);
		reserved = m->arena.total + m->vals.cap * sizeof(Value);
		module_free(m);
	}
	double pv[1000];
	for (int r = 0; r < reps; r++)
		pv[r] = tp[r] + tv[r];
	double p = median(tp, reps), v = median(tv, reps), o = median(to, reps), best = pv[0];
	for (int r = 1; r < reps; r++)
		best = pv[r] < best ? pv[r] : best;
	printf("nodes            %ld%s%s\n", nodes, plain ? " (no provenance trailers)" : " (with scope and loc on each)",
	       fxir_fast_lex ? "" : ", read token by token");
	printf("input            %.1f MB\n", (double)len / 1e6);
	printf("parse   median   %8.1f ms  %10.0f nodes/s\n", p * 1e3, (double)nodes / p);
	printf("verify  median   %8.1f ms  %10.0f nodes/s\n", v * 1e3, (double)nodes / v);
	printf("parse+verify     %8.1f ms  %10.0f nodes/s\n", (p + v) * 1e3, (double)nodes / (p + v));
	printf("parse+verify best%8.1f ms  %10.0f nodes/s  (fastest of %d runs)\n", best * 1e3, (double)nodes / best, reps);
	printf("print   median   %8.1f ms  %10.0f nodes/s\n", o * 1e3, (double)nodes / o);
	printf("IR memory        %.1f bytes/node used (arena + value table), %.1f reserved\n",
	       (double)bytes / (double)nodes, (double)reserved / (double)nodes);
	fclose(null);
	free(tp), free(tv), free(to), free(text);
	return 0;
}
