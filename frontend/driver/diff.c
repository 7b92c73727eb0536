/* diff.c - `onnxc diff A B`: run two versions of a model on the same
 * inputs and say where they differ.
 *
 * Both are read like `onnxc run` reads a model (.fxir or .onnx, lowered by
 * the -O0 pipeline when they hold ATen ops) and run by the interpreter,
 * which hands over every intermediate value.  Values are aligned by name:
 * onnxc's passes keep the name of a value they keep (decompose gives an
 * ATen result's name to its expansion, fold, simplify and fuse rewrite in
 * place).  A node of A none of whose results B computes was fused, folded
 * or removed; when a node of B has the same provenance (module scope and
 * Python source) it is named as what the node went into.  Exit 0 when the
 * outputs agree, 1 when they do not (or on bad input), 2 on usage errors.
 */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "runtime.h"

static const char diff_usage[] =
	"usage: onnxc diff <a.fxir | a.onnx> <b.fxir | b.onnx> [--input NAME=FILE]... [--seed=N]\n"
	"                  [--rtol=X] [--atol=X]\n"
	"\n"
	"Runs both models with onnxc's reference kernels on the same inputs (the\n"
	"given ones, else seeded random ones), aligns their intermediate values by\n"
	"name, and prints the nodes only one has (fused, folded or removed), the\n"
	"values whose op changed, the first aligned value outside the tolerance and\n"
	"each output's errors.  Exit 1 when an output differs.\n"
	"\n"
	"  --input NAME=FILE.npy|FILE.safetensors, --input FILE.safetensors\n"
	"                  inputs, as for 'onnxc run'\n"
	"  --seed=N        seed of the random inputs (default 0)\n"
	"  --rtol=X, --atol=X\n"
	"                  the tolerance: |a - b| <= atol + rtol * |a| (default 1e-4, 1e-5)\n";

typedef struct DiffOpts {
	const char *path[2];
	RunInputs in;
	uint64_t seed;
	double rtol, atol;
} DiffOpts;

/* One side: the model, its text, the values its run computed. */
typedef struct Side {
	const char *path;
	char *text, *dir;
	Module *m;
	RTensor **feeds, **outs;
	uint32_t nfeeds;
	RtValues vals;
	Sym *op_of;                 /* by value name: "domain::op" of its node (0: a const) */
	uint32_t nop, nloc;
	Loc *loc_of;                /* by value name: where it is defined */
} Side;

static void parse_diff_args(int argc, char **argv, DiffOpts *o)
{
	int n = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(diff_usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--input")) {
			if (++i >= argc)
				sub_usage_error("diff", "%s needs NAME=FILE", a);
			run_add_input(&o->in, "diff", argv[i]);
		} else if (!strncmp(a, "--input=", 8)) {
			run_add_input(&o->in, "diff", a + 8);
		} else if (!strncmp(a, "--seed=", 7)) {
			o->seed = (uint64_t)run_parse_number("diff", a, a + 7);
		} else if (!strncmp(a, "--rtol=", 7)) {
			o->rtol = run_parse_number("diff", a, a + 7);
		} else if (!strncmp(a, "--atol=", 7)) {
			o->atol = run_parse_number("diff", a, a + 7);
		} else if (a[0] == '-' && a[1]) {
			sub_usage_error("diff", "unknown option '%s'", a);
		} else if (n == 2) {
			sub_usage_error("diff", "more than two models ('%s')", a);
		} else
			o->path[n++] = a;
	}
	if (n < 2)
		sub_usage_error("diff", "%s", "two models are needed");
}

/* ---- running both ------------------------------------------------------------ */

static void observe(void *ctx, ValueId id, const Node *def, const RTensor *t)
{
	Side *s = ctx;
	Sym name = val(s->m, id)->name;
	if (!name || rt_values_get(&s->vals, name))
		return;
	rt_values_put(&s->vals, name, t);
	s->op_of = xgrow_index(s->op_of, &s->nop, name, sizeof *s->op_of);
	s->loc_of = xgrow_index(s->loc_of, &s->nloc, name, sizeof *s->loc_of);
	s->loc_of[name] = def ? def->loc : val(s->m, id)->loc;
	if (def) {
		char op[200];
		snprintf(op, sizeof op, "%s::%s", sym_str(def->domain), sym_str(def->name));
		s->op_of[name] = sym_cstr(op);
	}
}

/* B's inputs by name from A's random ones. */
static Status feeds_from(Side *b, const Side *a)
{
	Graph *ga = a->m->graphs.v[0], *gb = b->m->graphs.v[0];
	Status s = OK;
	b->feeds = xcalloc(gb->nin + 1, sizeof *b->feeds);
	for (uint32_t i = 0; i < gb->nin; i++) {
		const Value *v = val(b->m, gb->in[i]);
		if (v->kind != VK_INPUT)
			continue;
		const RTensor *t = NULL;
		uint32_t k = 0;
		for (uint32_t j = 0; j < ga->nin && !t; j++) {
			const Value *w = val(a->m, ga->in[j]);
			if (w->kind != VK_INPUT)
				continue;
			if (w->name == v->name)
				t = a->feeds[k];
			k++;
		}
		if (!t) {
			diag_error(v->loc, "input '%s' is not an input of %s: give it with --input", sym_str(v->name), a->path);
			s = FAILED;
		}
		b->feeds[b->nfeeds++] = t ? rt_copy(v->loc, t) : NULL;
	}
	return s;
}

static Status random_feeds(Side *a, uint64_t seed)
{
	Graph *g = a->m->graphs.v[0];
	Status s = OK;
	a->feeds = xcalloc(g->nin + 1, sizeof *a->feeds);
	for (uint32_t i = 0; i < g->nin; i++)
		if (val(a->m, g->in[i])->kind == VK_INPUT &&
		    !(a->feeds[a->nfeeds++] = rt_random_for(val(a->m, g->in[i]), &seed)))
			s = FAILED;
	return s;
}

static Status run_side(Side *s)
{
	return rt_run_graph_observe(s->m, s->dir, s->feeds, &s->outs, observe, s);
}

static void side_free(Side *s)
{
	for (uint32_t i = 0; i < s->nfeeds; i++)
		rt_free(s->feeds[i]);
	for (uint32_t i = 0; s->outs && i < s->m->graphs.v[0]->nout; i++)
		rt_free(s->outs[i]);
	free(s->feeds);
	free(s->outs);
	rt_values_free(&s->vals);
	free(s->op_of);
	free(s->loc_of);
	module_free(s->m);
	free(s->text);
	free(s->dir);
}

/* ---- what differs ------------------------------------------------------------ */

/* "module fc1 (torch.nn.Linear), model.py:12": where a node came from. */
static void where_text(const Node *n, char *buf, size_t len)
{
	const Prov *p = n->prov;
	buf[0] = 0;
	if (!p)
		return;
	size_t k = 0;
	if (p->nscope) {
		const ScopeEntry *e = &p->scope[p->nscope - 1];
		k = (size_t)snprintf(buf, len, "module %s (%s)", *sym_str(e->path) ? sym_str(e->path) : "<root>",
				     sym_str(e->cls));
	}
	if (p->file && k < len)
		snprintf(buf + k, len - k, "%s%s:%u", k ? ", " : "", sym_str(p->file), p->line);
}

/* Some result of n, a node of `own`, is computed by `other` too. */
static int computed(const Side *own, const Side *other, const Node *n)
{
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i] && rt_values_get(&other->vals, val(own->m, n->res[i])->name))
			return 1;
	return 0;
}

static const char *first_name(Module *m, const Node *n)
{
	for (uint32_t i = 0; i < n->nres; i++)
		if (n->res[i])
			return sym_str(val(m, n->res[i])->name);
	return "_";
}

/* Provenance as a key: the module path and the Python source. */
static uint64_t prov_hash(const Prov *p)
{
	uint64_t h = hash_u64(((uint64_t)p->file << 32) ^ p->line) ^ hash_u64(p->col + 1);
	for (uint32_t i = 0; i < p->nscope; i++)
		h = hash_u64(h ^ p->scope[i].path);
	return h;
}

static int prov_same(const Prov *p, const Prov *q)
{
	if (p->nscope != q->nscope || p->file != q->file || p->line != q->line || p->col != q->col)
		return 0;
	for (uint32_t i = 0; i < p->nscope; i++)
		if (p->scope[i].path != q->scope[i].path)
			return 0;
	return 1;
}

static int node_prov_eq(uintptr_t item, const void *key)
{
	return prov_same(((const Node *)item)->prov, key);
}

/* By provenance, the first node of `in` that `other` does not compute
 * the same way (new there, or another op): what a node of `other` with
 * that provenance went into. */
static void map_targets(const Side *in, const Side *other, HashMap *h)
{
	for (const Node *c = in->m->graphs.v[0]->first; c; c = c->next) {
		Sym name = c->nres && c->res[0] ? val(in->m, c->res[0])->name : 0;
		if (!c->prov || !name)
			continue;
		Sym op = name < in->nop ? in->op_of[name] : 0;
		Sym was = name < other->nop ? other->op_of[name] : 0;
		if (!rt_values_get(&other->vals, name) || op != was)
			hashmap_intern(h, prov_hash(c->prov), node_prov_eq, c->prov, (uintptr_t)c);
	}
}

/* Nodes of `s` none of whose results `other` computes. */
static uint32_t list_only(const Side *s, const Side *other, const char *which, const char *what, const HashMap *into_map)
{
	uint32_t n = 0;
	for (const Node *x = s->m->graphs.v[0]->first; x; x = x->next)
		n += !computed(s, other, x);
	printf("only in %s (%s): %u node%s\n", which, what, n, n == 1 ? "" : "s");
	for (const Node *x = s->m->graphs.v[0]->first; x; x = x->next) {
		if (computed(s, other, x))
			continue;
		char where[512];
		where_text(x, where, sizeof where);
		printf("  %%%s = %s::%s  %s:%u:%u%s%s", first_name(s->m, x), sym_str(x->domain), sym_str(x->name),
		       sym_str(x->loc.file), x->loc.line, x->loc.col, *where ? "  " : "", where);
		const Node *into = into_map && x->prov ? (const Node *)hashmap_get(into_map, prov_hash(x->prov), node_prov_eq,
										  x->prov) : NULL;
		if (into)
			printf("  -> into %%%s = %s::%s", first_name(other->m, into), sym_str(into->domain),
			       sym_str(into->name));
		printf("\n");
	}
	return n;
}

/* Values both compute whose op differs (fused in place, folded). */
static void list_changed(const Side *a, const Side *b)
{
	uint32_t n = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			printf("changed op: %u value%s\n", n, n == 1 ? "" : "s");
		for (uint32_t i = 0; i < b->vals.names.n; i++) {
			Sym name = b->vals.names.v[i];
			Sym oa = name < a->nop ? a->op_of[name] : 0, ob = name < b->nop ? b->op_of[name] : 0;
			if (!rt_values_get(&a->vals, name) || oa == ob)
				continue;
			if (!pass)
				n++;
			else
				printf("  %%%s: %s in a, %s in b\n", sym_str(name), oa ? sym_str(oa) : "a constant",
				       ob ? sym_str(ob) : "a constant");
		}
	}
}

/* The aligned values in B's order: the first outside the tolerance, or
 * the largest error. */
static int list_aligned(const DiffOpts *o, const Side *a, const Side *b)
{
	uint32_t n = 0;
	Sym first = 0, worst = 0;
	RtCompare fc = { 0 }, wc = { 0 };
	for (uint32_t i = 0; i < b->vals.names.n; i++) {
		Sym name = b->vals.names.v[i];
		const RTensor *x = rt_values_get(&a->vals, name);
		if (!x)
			continue;
		RtCompare c = rt_compare(rt_values_get(&b->vals, name), x, o->rtol, o->atol);
		n++;
		if (!first && (!c.shape_ok || c.bad)) {
			first = name;
			fc = c;
		}
		if (c.shape_ok && (!worst || c.max_abs > wc.max_abs)) {
			worst = name;
			wc = c;
		}
	}
	printf("aligned by name: %u value%s\n", n, n == 1 ? "" : "s");
	if (worst)
		printf("  largest error: %%%s, max abs error %.3g, max rel error %.3g\n", sym_str(worst), wc.max_abs,
		       wc.max_rel);
	if (!first) {
		printf("  all within rtol=%g, atol=%g\n", o->rtol, o->atol);
		return 0;
	}
	Sym ob = first < b->nop ? b->op_of[first] : 0;
	Loc at = b->loc_of[first];
	printf("  first divergence: %%%s (%s in b, %s:%u:%u)", sym_str(first), ob ? sym_str(ob) : "a constant",
	       sym_str(at.file), at.line, at.col);
	if (!fc.shape_ok)
		printf(": another shape\n");
	else
		printf(", max abs error %.3g, max rel error %.3g (%lld elements outside rtol=%g, atol=%g)\n", fc.max_abs,
		       fc.max_rel, (long long)fc.bad, o->rtol, o->atol);
	return 1;
}

/* Outputs by position; 1 when one differs. */
static int list_outputs(const DiffOpts *o, const Side *a, const Side *b)
{
	Graph *ga = a->m->graphs.v[0], *gb = b->m->graphs.v[0];
	int bad = ga->nout != gb->nout;
	printf("outputs:\n");
	if (bad)
		printf("  a has %u outputs, b has %u\n", ga->nout, gb->nout);
	for (uint32_t i = 0; i < ga->nout && i < gb->nout; i++) {
		printf("  ");
		bad |= run_compare_line(stdout, sym_str(val(b->m, gb->out[i])->name), b->outs[i], a->outs[i], o->rtol,
					o->atol);
	}
	return bad;
}

static int load_side(Side *s, const char *path)
{
	s->path = path;
	s->dir = run_model_dir(path);
	s->m = run_load_model(path, &s->text);
	return s->m != NULL;
}

int diff_main(int argc, char **argv)
{
	DiffOpts o = { { NULL, NULL }, { NULL, 0 }, 0, 1e-4, 1e-5 };
	parse_diff_args(argc, argv, &o);
	diag_set_max_errors(20);
	Side a = { 0 }, b = { 0 };
	Status s = load_side(&a, o.path[0]) && load_side(&b, o.path[1]) ? OK : FAILED;
	if (s == OK && o.in.ngiven)
		s = run_bind_inputs(&o.in, a.m, &a.feeds, &a.nfeeds) == OK &&
		    run_bind_inputs(&o.in, b.m, &b.feeds, &b.nfeeds) == OK ? OK : FAILED;
	else if (s == OK)
		s = random_feeds(&a, o.seed) == OK && feeds_from(&b, &a) == OK ? OK : FAILED;
	if (s == OK)
		s = run_side(&a) == OK && run_side(&b) == OK ? OK : FAILED;
	int differ = 1;
	if (s == OK) {
		printf("a: %s (%u nodes)\nb: %s (%u nodes)\n", a.path, a.m->graphs.v[0]->nnodes, b.path,
		       b.m->graphs.v[0]->nnodes);
		if (o.in.ngiven)
			printf("inputs: given\n");
		else
			printf("inputs: random, seed %llu\n", (unsigned long long)o.seed);
		HashMap into = { 0 };
		map_targets(&b, &a, &into);
		list_only(&a, &b, "a", "fused, folded or removed", &into);
		list_only(&b, &a, "b", "new", NULL);
		hashmap_free(&into);
		list_changed(&a, &b);
		list_aligned(&o, &a, &b);
		differ = list_outputs(&o, &a, &b);
		printf("%s\n", differ ? "the outputs differ" : "the outputs agree");
	}
	side_free(&a);
	side_free(&b);
	run_inputs_free(&o.in);
	return s == OK && !differ && !diag_error_count() ? 0 : 1;
}
