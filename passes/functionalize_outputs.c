/* functionalize_outputs.c - mutated inputs, parameters and buffers become outputs; the graph signature (see functionalize.c). */
#include <stdlib.h>
#include <string.h>
#include "functionalize.h"

static const char SIG_KEY[] = "pkg.torch.export.ExportedProgram.graph_signature";

typedef VEC(char) Buf;

static void buf_add(Functionalize *f, Buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		VEC_PUSH(&f->m->arena, *b, s[i]);
}

/* A name as is, or quoted when it holds a space, quote or backslash. */
static void buf_name(Functionalize *f, Buf *b, Sym name)
{
	const char *s = sym_str(name);
	if (!strpbrk(s, " \"\\\n\t")) {
		buf_add(f, b, s, strlen(s));
		return;
	}
	buf_add(f, b, "\"", 1);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_add(f, b, "\\", 1);
		buf_add(f, b, *s == '\n' ? "n" : *s == '\t' ? "t" : s, 1);
	}
	buf_add(f, b, "\"", 1);
}

/* "<input|output> <kind> <name>[ <target>]\n" */
static void sig_line(Functionalize *f, Buf *b, const char *io, const char *kind, Sym name, Sym target)
{
	buf_add(f, b, io, strlen(io));
	buf_add(f, b, " ", 1);
	buf_add(f, b, kind, strlen(kind));
	buf_add(f, b, " ", 1);
	buf_name(f, b, name);
	if (target) {
		buf_add(f, b, " ", 1);
		buf_name(f, b, target);
	}
	buf_add(f, b, "\n", 1);
}

static int user_output(const Graph *g, uint32_t nuser, ValueId v)
{
	for (uint32_t i = 0; i < nuser; i++)
		if (g->out[i] == v)
			return 1;
	return 0;
}

void fz_push_output_to(Functionalize *f, Graph *g, ValueId v)
{
	ValueId *out = ARENA_ARRAY(&f->m->arena, ValueId, g->nout + 1);
	Type **decl = ARENA_ARRAY(&f->m->arena, Type *, g->nout + 1);
	if (g->nout) {
		memcpy(out, g->out, g->nout * sizeof *out);
		if (g->out_decl)
			memcpy(decl, g->out_decl, g->nout * sizeof *decl);
	}
	out[g->nout] = v;
	decl[g->nout] = val(f->m, v)->type;
	g->out = out;
	g->out_decl = decl;
	g->nout++;
}

void fz_push_output(Functionalize *f, ValueId v)
{
	fz_push_output_to(f, f->g, v);
}

/* Storage v (an input, parameter or buffer) was mutated: return its latest
 * version, named `<v>_updated` when it is a version this pass made or
 * renamed, i.e. a node result not otherwise returned. */
static void add_mutation(Functionalize *f, Buf *b, ValueId v)
{
	static const char *const kinds[] = {
		[VK_INPUT] = "user_input_mutation", [VK_PARAM] = "parameter_mutation",
		[VK_BUFFER] = "buffer_mutation",
	};
	Value *in = val(f->m, v);
	ValueId nv = fz_current(f, v, NULL);
	Value *x = val(f->m, nv);
	if (x->kind == VK_NODE && !user_output(f->g, f->g->nout, nv)) {
		char name[512];
		snprintf(name, sizeof name, "%.400s_updated", sym_str(in->name));
		x->name = value_fresh_name(f->m, sym_cstr(name));
	}
	fz_push_output(f, nv);
	sig_line(f, b, "output", kinds[in->kind], x->name, in->kind == VK_INPUT ? in->name : in->key);
}

int fz_is_mutated(Functionalize *f, ValueId v)
{
	VState *s = fz_st(f, v);
	return s->ver > 0 && s->cur && s->cur != v;
}

static void set_meta(Functionalize *f, Buf *b)
{
	Graph *g = f->g;
	Str s = { arena_strndup(&f->m->arena, b->v, b->n), b->n };
	for (uint32_t i = 0; i < g->nmeta; i++)
		if (g->meta[i].key.n == sizeof SIG_KEY - 1 && !memcmp(g->meta[i].key.s, SIG_KEY, g->meta[i].key.n)) {
			g->meta[i].val = s;
			return;
		}
	MetaProp *mp = ARENA_ARRAY(&f->m->arena, MetaProp, g->nmeta + 1);
	if (g->nmeta)
		memcpy(mp, g->meta, g->nmeta * sizeof *mp);
	mp[g->nmeta].key = (Str){ SIG_KEY, sizeof SIG_KEY - 1 };
	mp[g->nmeta].val = s;
	g->meta = mp;
	g->nmeta++;
}

/* The graph's storages in signature order: inputs, then params and
 * buffers (consts are inline and never outputs). */
static uint32_t nstorage(const Graph *g) { return g->nin + g->inits.n; }

static ValueId storage_at(const Graph *g, uint32_t i)
{
	return i < g->nin ? g->in[i] : g->inits.v[i - g->nin];
}

static int is_storage(Functionalize *f, uint32_t i)
{
	const Value *v = val(f->m, storage_at(f->g, i));
	return i < f->g->nin ? v->kind == VK_INPUT : v->kind == VK_PARAM || v->kind == VK_BUFFER;
}

static void describe_inputs(Functionalize *f, Buf *b)
{
	static const char *const kinds[] = {
		[VK_INPUT] = "user_input", [VK_PARAM] = "parameter", [VK_BUFFER] = "buffer",
	};
	for (uint32_t i = 0; i < nstorage(f->g); i++) {
		Value *v = val(f->m, storage_at(f->g, i));
		if (is_storage(f, i))
			sig_line(f, b, "input", kinds[v->kind], v->name, v->kind == VK_INPUT ? 0 : v->key);
	}
}

static int has_signature(const Graph *g)
{
	for (uint32_t i = 0; i < g->nmeta; i++)
		if (g->meta[i].key.n == sizeof SIG_KEY - 1 && !memcmp(g->meta[i].key.s, SIG_KEY, g->meta[i].key.n))
			return 1;
	return 0;
}

/* User outputs read the latest versions; mutated storages are appended.
 * The signature is written here, before any pass folds or merges a
 * parameter, so that it is the program's as captured. */
void fz_finish_graph(Functionalize *f)
{
	Graph *g = f->g;
	uint32_t nuser = g->nout, nmut = 0;
	for (uint32_t i = 0; i < nuser; i++)
		if (g->out[i])
			g->out[i] = fz_current(f, fz_canon(f, g->out[i]), NULL);
	for (uint32_t i = 0; i < nstorage(g); i++)
		nmut += is_storage(f, i) && fz_is_mutated(f, storage_at(g, i));
	if (!nmut && has_signature(g))
		return;                 /* one read from a model is kept */
	Buf b = { 0 };
	describe_inputs(f, &b);
	for (uint32_t i = 0; i < nuser; i++)
		sig_line(f, &b, "output", "user_output",
			 g->out[i] ? val(f->m, g->out[i])->name : S_underscore, 0);
	for (uint32_t i = 0; i < nstorage(g); i++)
		if (is_storage(f, i) && fz_is_mutated(f, storage_at(g, i)))
			add_mutation(f, &b, storage_at(g, i));
	set_meta(f, &b);
}
