/* bisect.c - -bisect-accuracy: which pass, and which node, makes the
 * program's values leave the tolerance.
 *
 * After every pass the main graph is run by the interpreter on the same
 * inputs (a reference file's input.<name>, or seeded random ones).  Values
 * are aligned by name: a pass that keeps a value keeps its name (decompose
 * gives the ATen result's name to the last node of its expansion, fold and
 * fuse rewrite in place), so a value computed before and after a pass under
 * one name must agree.  The first program the interpreter can run (ATen ops
 * have no kernels: usually the one after decompose) is compared with the
 * reference instead: value.<name> tensors for intermediate values, when the
 * file has them, and output.<name> for the outputs, which are compared with
 * the reference after every pass.
 *
 * Only the values of the last program run are kept (one tensor per named
 * value of the main graph), so memory is about two runs' worth.
 */
#include <stdlib.h>
#include <string.h>
#include "driver.h"
#include "runtime.h"

struct Bisect {
	const char *ref, *weights_dir;
	double rtol, atol;
	SafeTensors *st;
	RTensor **feeds;
	uint32_t nfeeds;
	RtValues prev;                /* the last program evaluated */
	const char *prev_pass;      /* the pass that made it; NULL: none yet */
	uint32_t evaluated, skipped;
	int diverged;
	int has_values;             /* the reference holds value.<name> tensors */
};

typedef struct Eval {
	Bisect *b;
	Module *m;
	RtValues cur;
	uint32_t aligned;
	double max_abs;
	ValueId bad;                /* the first value outside the tolerance */
	RtCompare badc;
} Eval;

Bisect *bisect_new(const char *ref, const char *weights_dir, double rtol, double atol)
{
	Bisect *b = xcalloc(1, sizeof *b);
	b->ref = ref;
	b->weights_dir = weights_dir;
	b->rtol = rtol;
	b->atol = atol;
	return b;
}

void bisect_free(Bisect *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i < b->nfeeds; i++)
		rt_free(b->feeds[i]);
	free(b->feeds);
	rt_values_free(&b->prev);
	safetensors_close(b->st);
	free(b);
}

/* "fc1 (torch.nn.modules.linear.Linear)": the innermost module of a scope. */
static void scope_text(const Prov *p, char *buf, size_t n)
{
	buf[0] = 0;
	if (p && p->nscope) {
		const ScopeEntry *e = &p->scope[p->nscope - 1];
		snprintf(buf, n, "module %s (%s)", *sym_str(e->path) ? sym_str(e->path) : "<root>", sym_str(e->cls));
	}
}

/* The reference's tensor for a value: value.<name>, else output.<name>. */
static RTensor *ref_value(const Bisect *b, Sym name)
{
	char key[512];
	const SafeTensor *e = NULL;
	for (int i = 0; i < 2 && !e; i++) {
		snprintf(key, sizeof key, "%s%s", i ? "output." : "value.", sym_str(name));
		e = safetensors_find(b->st, key);
	}
	return e ? rt_from_safetensor(b->ref, e) : NULL;
}

static void observe(void *ctx, ValueId id, const Node *def, const RTensor *t)
{
	(void)def;
	Eval *e = ctx;
	Sym name = val(e->m, id)->name;
	progress_add(1);
	if (!name || rt_values_get(&e->cur, name))
		return;
	RTensor *own = NULL;
	const RTensor *want = e->b->prev_pass ? rt_values_get(&e->b->prev, name) : e->b->st ? (own = ref_value(e->b, name)) : NULL;
	if (want) {
		RtCompare c = rt_compare(t, want, e->b->rtol, e->b->atol);
		e->aligned++;
		if (c.shape_ok && c.max_abs > e->max_abs)
			e->max_abs = c.max_abs;
		if ((!c.shape_ok || c.bad) && !e->bad) {
			e->bad = id;
			e->badc = c;
		}
	}
	rt_free(own);
	rt_values_put(&e->cur, name, t);
}

static Status bind_feeds(Bisect *b, Module *m)
{
	if (b->ref) {
		b->st = safetensors_open(b->ref);
		for (size_t i = 0; b->st && i < safetensors_count(b->st); i++)
			b->has_values |= !strncmp(safetensors_at(b->st, i)->name, "value.", 6);
		return b->st ? run_ref_inputs(m, b->ref, b->st, &b->feeds, &b->nfeeds) : FAILED;
	}
	Graph *g = m->graphs.v[0];
	uint64_t seed = 0;
	Status s = OK;
	b->feeds = xcalloc(g->nin + 1, sizeof *b->feeds);
	for (uint32_t i = 0; i < g->nin; i++)
		if (val(m, g->in[i])->kind == VK_INPUT && !(b->feeds[b->nfeeds++] = rt_random_for(val(m, g->in[i]), &seed)))
			s = FAILED;
	return s;
}

/* Each output with a reference against it; the number that fail, each
 * printed as verify prints it. */
static uint32_t check_outputs(Bisect *b, Module *m, const RtValues *cur, uint32_t *nchecked)
{
	Graph *g = m->graphs.v[0];
	uint32_t bad = 0;
	*nchecked = 0;
	for (uint32_t i = 0; b->st && i < g->nout; i++) {
		const RTensor *got = rt_values_get(cur, val(m, g->out[i])->name);
		RTensor *want = got ? ref_value(b, val(m, g->out[i])->name) : NULL;
		if (!want)
			continue;
		(*nchecked)++;
		RtCompare c = rt_compare(got, want, b->rtol, b->atol);
		if (c.bad || !c.shape_ok) {
			fprintf(stderr, "onnxc: bisect-accuracy:   output ");
			bad += run_compare_line(stderr, sym_str(val(m, g->out[i])->name), got, want, b->rtol, b->atol);
		}
		rt_free(want);
	}
	return bad;
}

/* The located error naming the pass and the first value out of tolerance,
 * and a note at the Python source of the node that computes it. */
static void report_divergence(Bisect *b, Module *m, const char *pass, const Eval *e, const char *against)
{
	const Value *v = val(m, e->bad);
	const Node *n = v->kind == VK_NODE ? v->def : NULL;
	char when[96], scope[256];
	if (strcmp(pass, "input") == 0)
		snprintf(when, sizeof when, "in the input program");
	else
		snprintf(when, sizeof when, "after pass '%s'", pass);
	if (!e->badc.shape_ok)
		diag_error(n ? n->loc : v->loc, "accuracy: %s, %%%s has another shape than in %s", when, sym_str(v->name),
			   against);
	else
		diag_error(n ? n->loc : v->loc,
			   "accuracy: %s, %%%s leaves the tolerance: max abs error %.3g, max rel error %.3g "
			   "(%lld elements outside rtol=%g, atol=%g) compared with %s",
			   when, sym_str(v->name), e->badc.max_abs, e->badc.max_rel, (long long)e->badc.bad, b->rtol, b->atol,
			   against);
	if (!b->prev_pass && !b->has_values && !strcmp(against, "the reference"))
		diag_note((Loc){ 0 }, "the reference holds only outputs: with intermediate values (value.<name>, as "
			  "fxir_export.py --save-reference writes them) the first value that differs would be named");
	if (!n)
		return;
	scope_text(n->prov, scope, sizeof scope);
	Loc src = n->prov && n->prov->file ? (Loc){ n->prov->file, n->prov->line, n->prov->col } : n->loc;
	diag_note(src, "%%%s is computed by %s::%s%s%s", sym_str(v->name), sym_str(n->domain), sym_str(n->name),
		  *scope ? ", in " : "", scope);
}

/* The first output that differs from the reference (outputs are named
 * only when no aligned intermediate value differs). */
static void first_bad_output(Bisect *b, Module *m, Eval *e)
{
	Graph *g = m->graphs.v[0];
	for (uint32_t i = 0; i < g->nout && !e->bad; i++) {
		RTensor *want = ref_value(b, val(m, g->out[i])->name);
		const RTensor *got = rt_values_get(&e->cur, val(m, g->out[i])->name);
		if (want && got && ((e->badc = rt_compare(got, want, b->rtol, b->atol)).bad || !e->badc.shape_ok))
			e->bad = g->out[i];
		rt_free(want);
	}
}

/* Runs m and compares it; FAILED once values leave the tolerance. */
static Status evaluate(Bisect *b, Module *m, const char *pass)
{
	Eval e = { b, m, { 0 }, 0, 0, VNONE, { 0 } };
	RTensor **outs = NULL;
	char what[160];
	snprintf(what, sizeof what, "bisect-accuracy: running the program after %s (values)", pass);
	Graph *g = m->graphs.v[0];
	progress_begin(what, (uint64_t)g->nnodes + g->inits.n, 2000);
	diag_mute(1);
	Status s = rt_run_graph_observe(m, b->weights_dir, b->feeds, &outs, observe, &e);
	unsigned hidden = diag_mute(0);
	progress_end();
	for (uint32_t i = 0; outs && i < m->graphs.v[0]->nout; i++)
		rt_free(outs[i]);
	free(outs);
	if (s != OK) {
		fprintf(stderr, "onnxc: bisect-accuracy: %-14s not evaluated: the interpreter failed on it (%u errors)\n",
			pass, hidden);
		rt_values_free(&e.cur);
		b->skipped++;
		return OK;
	}
	char against[160];
	if (b->prev_pass)
		snprintf(against, sizeof against, "the program after '%s'", b->prev_pass);
	else
		snprintf(against, sizeof against, "%s", b->st ? "the reference" : "");
	if (!b->evaluated && strcmp(pass, "input") != 0)
		fprintf(stderr, "onnxc: bisect-accuracy: %-14s the first program the interpreter can run: comparing "
			"starts here\n", pass);
	if (*against)
		fprintf(stderr, "onnxc: bisect-accuracy: %-14s values aligned with %s: %u, max abs error %.3g%s\n", pass,
			against, e.aligned, e.max_abs, e.bad ? ": FAILED" : "");
	else
		fprintf(stderr, "onnxc: bisect-accuracy: %-14s values computed: %u, the baseline\n", pass, e.cur.names.n);
	uint32_t nout, badout = check_outputs(b, m, &e.cur, &nout);
	if (nout)
		fprintf(stderr, "onnxc: bisect-accuracy: %-14s outputs within the tolerance of the reference: %u of %u\n",
			pass, nout - badout, nout);
	if (badout && !e.bad) {
		first_bad_output(b, m, &e);
		snprintf(against, sizeof against, "the reference");
	}
	rt_values_free(&b->prev);
	b->prev = e.cur;
	b->evaluated++;
	if (e.bad) {
		report_divergence(b, m, pass, &e, against);
		b->diverged = 1;
		return FAILED;
	}
	b->prev_pass = pass;
	return OK;
}

Status bisect_after(Bisect *b, Module *m, const char *pass)
{
	const Node *n = rt_first_unrunnable(m);
	if (n) {
		fprintf(stderr, "onnxc: bisect-accuracy: %-14s not evaluated: no runtime kernel for %s::%s (%s:%u:%u)%s\n",
			pass, sym_str(n->domain), sym_str(n->name), sym_str(n->loc.file), n->loc.line, n->loc.col,
			node_is_torch(n) ? ", ATen ops run once decompose has lowered them" : "");
		b->skipped++;
		return OK;
	}
	return evaluate(b, m, pass);
}

Status bisect_begin(Bisect *b, Module *m)
{
	if (bind_feeds(b, m) != OK)
		return FAILED;
	fprintf(stderr, "onnxc: bisect-accuracy: inputs from %s; tolerance rtol=%g, atol=%g\n",
		b->ref ? b->ref : "a seeded random generator", b->rtol, b->atol);
	return rt_first_unrunnable(m) ? OK : evaluate(b, m, "input");
}

void bisect_end(Bisect *b)
{
	if (b->diverged)
		return;
	if (!b->evaluated)
		fprintf(stderr, "onnxc: bisect-accuracy: no program could be run: nothing was compared\n");
	else
		fprintf(stderr, "onnxc: bisect-accuracy: every pass keeps the values within the tolerance (%u programs run, "
			"%u not)\n", b->evaluated, b->skipped);
}
