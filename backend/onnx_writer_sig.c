/* onnx_writer_sig.c - the program's signature in the text PyTorch writes.
 *
 * Inside the compiler the signature is one line per input and output,
 * `<input|output> <kind> <name>[ <target>]` (functionalize writes it; a
 * name may be quoted).  The ONNX file carries what torch.export prints
 * for an ExportedProgram's graph_signature:
 *
 *   \n# inputs\np_fc_weight: PARAMETER target='fc.weight'\n
 *   b_count: BUFFER target='count' persistent=True\nx: USER_INPUT\n
 *   \n# outputs\nadd: BUFFER_MUTATION target='count'\nlinear: USER_OUTPUT\n
 *
 * in torch's order (parameters, buffers, then user inputs; mutations,
 * then user outputs), each value under the FX graph's name the bridge
 * recorded (`input:NAME:pkg.torch.onnx.original_node_name`, with
 * `initializer:` and `output:`) and a buffer's persistence from its
 * `initializer:NAME:...InputSpec.persistent` entry (True without one).
 * One pass over the graph's entries and one over the lines. */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

#define ORIGINAL_NAME "pkg.torch.onnx.original_node_name"
#define PERSISTENT "pkg.torch.export.graph_signature.InputSpec.persistent"
#define SPEC_KIND ":pkg.torch.export.graph_signature.InputSpec.kind"

typedef struct SigLine {
	int out;                    /* an output line */
	char kind[32];              /* upper-cased */
	Str name, target;           /* unquoted */
} SigLine;

typedef struct MetaIndex { HashMap by_key; const Sym *keys; const MetaProp *meta; uint32_t nmeta; } MetaIndex;

static int key_is(uintptr_t item, const void *key)
{
	const MetaIndex *ix = ((const void *const *)key)[0];
	return ix->keys[item - 1] == *(const Sym *)((const void *const *)key)[1];
}

static const Str *meta_get(MetaIndex *ix, Writer *w, const char *role, Str name, const char *k)
{
	const char *full = afmt(w, "%s:%.*s:%s", role, (int)name.n, name.s, k);
	Sym s = sym_cstr(full);
	const void *key[2] = { ix, &s };
	uintptr_t at = hashmap_get(&ix->by_key, hash_u64(s), key_is, key);
	return at ? &ix->meta[at - 1].val : NULL;
}

/* One token of a line: a bare word, or a quoted name with \" \\ \n \t. */
static const char *token(Writer *w, const char *p, Str *t)
{
	if (*p != '"') {
		size_t n = strcspn(p, " \n");
		*t = (Str){ p, n };
		return p + n;
	}
	char *buf = arena_alloc(w->a, strcspn(p, "\n") + 1);   /* the rest of the line */
	size_t n = 0;
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++, buf[n++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
		else
			buf[n++] = *p;
	}
	*t = (Str){ buf, n };
	return *p ? p + 1 : p;
}

/* Parses one line at p into l; returns the next line, or NULL when the
 * line is not of the compiler's form. */
static const char *parse_line(Writer *w, const char *p, SigLine *l)
{
	*l = (SigLine){ 0 };
	if (!strncmp(p, "input ", 6))
		p += 6;
	else if (!strncmp(p, "output ", 7))
		p += 7, l->out = 1;
	else
		return NULL;
	size_t kn = strcspn(p, " \n");
	if (kn == 0 || kn >= sizeof l->kind || p[kn] != ' ')
		return NULL;
	for (size_t i = 0; i < kn; i++)
		l->kind[i] = (char)(p[i] >= 'a' && p[i] <= 'z' ? p[i] - 'a' + 'A' : p[i]);
	p = token(w, p + kn + 1, &l->name);
	if (*p == ' ')
		p = token(w, p + 1, &l->target);
	if (*p != '\n' && *p)
		return NULL;
	return *p ? p + 1 : p;
}

static int is_mutation(const SigLine *l)
{
	size_t n = strlen(l->kind);
	return n > 9 && !strcmp(l->kind + n - 9, "_MUTATION");
}

/* The group a line is printed in: parameters, buffers, other inputs,
 * user inputs; mutations, other outputs. */
static int group(const SigLine *l)
{
	if (l->out)
		return is_mutation(l) ? 4 : 5;
	return !strcmp(l->kind, "PARAMETER") ? 0 : !strcmp(l->kind, "BUFFER") ? 1
		: !strcmp(l->kind, "USER_INPUT") ? 3 : 2;
}

static void print_line(Writer *w, FILE *f, MetaIndex *ix, const SigLine *l)
{
	const char *role = l->out ? "output" : !strcmp(l->kind, "USER_INPUT") ? "input" : "initializer";
	const Str *orig = meta_get(ix, w, role, l->name, ORIGINAL_NAME);
	Str name = orig ? *orig : l->name;
	fprintf(f, "%.*s: %s", (int)name.n, name.s, l->kind);
	Str target = l->target;
	if (!strcmp(l->kind, "USER_INPUT_MUTATION") && target.n) {
		/* the mutated input, under its FX name */
		const Str *t = meta_get(ix, w, "input", target, ORIGINAL_NAME);
		target = t ? *t : target;
	}
	if (target.n)
		fprintf(f, " target='%.*s'", (int)target.n, target.s);
	if (!strcmp(l->kind, "BUFFER")) {
		const Str *p = meta_get(ix, w, "initializer", l->name, PERSISTENT);
		fprintf(f, " persistent=%.*s", p ? (int)p->n : 4, p ? p->s : "True");
	}
	fputc('\n', f);
}

/* The tensors the trace captured (`initializer:NAME:...InputSpec.kind`
 * is CONSTANT_TENSOR, written by the bridge): torch lists them after the
 * buffers, under their FX name, whether or not a pass folded them away. */
static void print_constants(Writer *w, FILE *f, MetaIndex *ix, size_t *in_section)
{
	static const char pre[] = "initializer:";
	const size_t np = sizeof pre - 1, ns = sizeof SPEC_KIND - 1;
	for (const MetaProp *m = ix->meta, *e = m + ix->nmeta; m < e; m++) {
		Str k = m->key;
		if (k.n <= np + ns || memcmp(k.s, pre, np) || memcmp(k.s + k.n - ns, SPEC_KIND, ns)
		    || m->val.n != 15 || memcmp(m->val.s, "CONSTANT_TENSOR", 15))
			continue;
		Str target = { k.s + np, k.n - np - ns };
		const Str *orig = meta_get(ix, w, "initializer", target, ORIGINAL_NAME);
		Str name = orig ? *orig : target;
		fprintf(f, "%.*s: CONSTANT_TENSOR target='%.*s'\n", (int)name.n, name.s, (int)target.n, target.s);
		(*in_section)++;
	}
}

const char *torch_signature(Writer *w, const char *sig, const MetaProp *meta, uint32_t nmeta)
{
	size_t nl = 0;
	for (const char *c = sig; *c; c++)
		nl += *c == '\n';
	SigLine *lines = ARENA_ARRAY(w->a, SigLine, nl + 1);
	size_t n = 0;
	for (const char *p = sig; p && *p; n++)
		if (n > nl || !(p = parse_line(w, p, &lines[n])))
			return sig;         /* not the compiler's form: kept as it is */
	Sym *keys = ARENA_ARRAY(w->a, Sym, nmeta + 1);
	MetaIndex ix = { { 0 }, keys, meta, nmeta };
	for (uint32_t i = 0; i < nmeta; i++) {
		keys[i] = sym_intern(meta[i].key.s, meta[i].key.n);
		const void *key[2] = { &ix, &keys[i] };
		hashmap_intern(&ix.by_key, hash_u64(keys[i]), key_is, key, i + 1);
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&buf, &len);
	/* torch joins a section's lines with newlines: an empty one is an
	 * empty line. */
	size_t in_section = 0;
	for (int gi = 0; gi <= 6; gi++) {
		if (gi == 4 || gi == 6) {
			fputs(in_section ? "" : "\n", f);
			in_section = 0;
		}
		if (gi == 0 || gi == 4)
			fputs(gi ? "\n# outputs\n" : "\n# inputs\n", f);
		if (gi == 2)
			print_constants(w, f, &ix, &in_section);
		for (size_t i = 0; i < n && gi < 6; i++)
			if (group(&lines[i]) == gi) {
				print_line(w, f, &ix, &lines[i]);
				in_section++;
			}
	}
	fclose(f);
	hashmap_free(&ix.by_key);
	char *s = arena_strndup(w->a, buf, len);
	free(buf);
	return s;
}
