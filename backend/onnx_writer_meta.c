/* onnx_writer_meta.c - the ONNX writer: metadata_props, from a node's
 * provenance and from the program's signature.
 */
#include <stdlib.h>
#include <string.h>
#include "onnx_writer.h"

/* ---- provenance -> metadata_props ------------------------------------------ */

/* Python's repr of a str, which is how PyTorch writes its list-valued keys. */
static void py_repr(FILE *f, const char *s, size_t n)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	fputc(q, f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\' || c == (unsigned char)q)
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
	fputc(q, f);
}

typedef enum { PV_NAMESPACE, PV_CLASSES, PV_PATHS } ProvKey;

/* namespace: "path: class" per scope joined by "/", the root scope ("")
 * as its class alone; the other two are Python lists of strings.  Each
 * ends with the FX node's own entry when there is one (leaf >= 0). */
static char *prov_string(Writer *w, const Prov *p, ProvKey k, int leaf, Str lname, Str ltarget)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&buf, &len);
	if (k != PV_NAMESPACE)
		fputc('[', f);
	for (uint32_t i = 0; i < p->nscope + (leaf >= 0); i++) {
		int own = i == p->nscope;
		Str path = own ? lname : (Str){ sym_str(p->scope[i].path), sym_len(p->scope[i].path) };
		Str cls = own ? ltarget : (Str){ sym_str(p->scope[i].cls), sym_len(p->scope[i].cls) };
		fputs(i ? (k == PV_NAMESPACE ? "/" : ", ") : "", f);
		if (k == PV_NAMESPACE)
			fprintf(f, "%.*s%s%.*s", (int)path.n, path.s, path.n ? ": " : "", (int)cls.n, cls.s);
		else
			py_repr(f, k == PV_CLASSES ? cls.s : path.s, k == PV_CLASSES ? cls.n : path.n);
	}
	if (k != PV_NAMESPACE)
		fputc(']', f);
	fclose(f);
	char *s = arena_strndup(w->a, buf, len);
	free(buf);
	return s;
}

/* PyTorch's order: namespace, class_hierarchy, name_scopes, fx_node,
 * stack_trace; then onnxc's source location and the other entries.  v
 * has room for p->nmeta + 5; returns the count. */
static size_t prov_entries(Writer *w, const Prov *p, Onnx__StringStringEntryProto **v)
{
	size_t n = 0;
	Str lname, ltarget;
	int leaf = prov_fx_leaf(p, &lname, &ltarget);
	if (p->nscope || leaf >= 0) {
		v[n++] = kv(w, "namespace", prov_string(w, p, PV_NAMESPACE, leaf, lname, ltarget));
		v[n++] = kv(w, "pkg.torch.onnx.class_hierarchy", prov_string(w, p, PV_CLASSES, leaf, lname, ltarget));
		v[n++] = kv(w, "pkg.torch.onnx.name_scopes", prov_string(w, p, PV_PATHS, leaf, lname, ltarget));
	}
	Onnx__StringStringEntryProto **rest = meta_list(w, p->meta, p->nmeta);
	if (leaf >= 0)
		v[n++] = rest[leaf];
	if (p->trace.n)
		v[n++] = kv(w, "pkg.torch.onnx.stack_trace", str_dup(w, p->trace));
	if (p->file)
		v[n++] = kv(w, "pkg.onnxc.source_location", p->col
			? afmt(w, "%s:%u:%u", sym_str(p->file), p->line, p->col)
			: afmt(w, "%s:%u", sym_str(p->file), p->line));
	for (uint32_t i = 0; i < p->nmeta; i++)
		if ((int)i != leaf)
			v[n++] = rest[i];
	return n;
}

void prov_props(Writer *w, const Prov *p, Onnx__NodeProto *np)
{
	np->metadata_props = PTRS(w, Onnx__StringStringEntryProto, p->nmeta + 5);
	np->n_metadata_props = prov_entries(w, p, np->metadata_props);
}

/* ---- the program's signature on inputs, outputs and initializers ---------- */

/* What PyTorch's exporter writes on graph values: InputSpec kind and
 * persistent from the value's kind (a buffer is persistent), OutputSpec
 * kind from functionalize's graph_signature entry (else USER_OUTPUT), and
 * any graph `meta("input:NAME:KEY": "v")` entry (`initializer:`,
 * `output:`) as KEY on that input, initializer or output (the bridge's
 * original_node_name, a non-persistent buffer), in place of the graph
 * entry.  An input returned as an output has one name and two slots. */

#define SIG_IN_KIND "pkg.torch.export.graph_signature.InputSpec.kind"
#define SIG_IN_PERSISTENT "pkg.torch.export.graph_signature.InputSpec.persistent"
#define SIG_OUT_KIND "pkg.torch.export.graph_signature.OutputSpec.kind"
#define SIG_TEXT "pkg.torch.export.ExportedProgram.graph_signature"

typedef VEC(Onnx__StringStringEntryProto *) PropVec;
typedef struct SigSlot {
	const char *name;
	Sym sym;
	const char *role;           /* "input:", "initializer:" or "output:" */
	PropVec props;
	uint32_t next;              /* 1 + the next slot of the same name, or 0 */
	size_t *np;                 /* where the entries go in the proto */
	Onnx__StringStringEntryProto ***vp;
} SigSlot;
typedef struct SigKey { const void *base; Sym sym; } SigKey;

static void put_prop(Writer *w, PropVec *pv, const char *k, const char *v)
{
	for (uint32_t i = 0; i < pv->n; i++)
		if (!strcmp(pv->v[i]->key, k)) {
			pv->v[i]->value = (char *)v;
			return;
		}
	VEC_PUSH(w->a, *pv, kv(w, k, v));
}

static void input_kind(Writer *w, SigSlot *sl, const Value *v)
{
	static const char *const kinds[] = { [VK_INPUT] = "USER_INPUT", [VK_PARAM] = "PARAMETER",
		[VK_BUFFER] = "BUFFER" };
	if (v->kind == VK_NODE || v->kind == VK_CONST)
		return;
	put_prop(w, &sl->props, SIG_IN_KIND, kinds[v->kind]);
	put_prop(w, &sl->props, SIG_IN_PERSISTENT, v->kind == VK_BUFFER ? "True" : "None");
}

/* The outputs' kinds, in order, from the "output KIND ..." lines of the
 * signature text, upper-cased (user_output -> USER_OUTPUT); USER_OUTPUT
 * where there is no such line. */
static void output_kinds(Writer *w, const char *sig, SigSlot *out, size_t nout)
{
	size_t i = 0;
	for (const char *l = sig; l && *l && i < nout; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "output ", 7))
			continue;
		char *k = arena_strndup(w->a, l + 7, strcspn(l + 7, " \n"));
		for (char *c = k; *c; c++)
			*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
		put_prop(w, &out[i++].props, SIG_OUT_KIND, k);
	}
	for (; i < nout; i++)
		put_prop(w, &out[i].props, SIG_OUT_KIND, "USER_OUTPUT");
}

static int slot_is(uintptr_t item, const void *key)
{
	const SigKey *k = key;
	return ((const SigSlot *)k->base)[item - 1].sym == k->sym;
}

static int value_is(uintptr_t item, const void *key)
{
	const SigKey *k = key;
	return ((const Module *)k->base)->vals.v[item].name == k->sym;
}

/* Value entries of the graph meta go to the slots of that name; the rest
 * stay on the graph. */
static void value_meta(Writer *w, Onnx__GraphProto *p, SigSlot *sl, uint32_t ns)
{
	HashMap by_name = { 0 };
	for (uint32_t i = 0; i < ns; i++) {
		SigKey key = { sl, sl[i].sym };
		uint32_t first = (uint32_t)hashmap_intern(&by_name, hash_u64(key.sym), slot_is, &key, i + 1);
		if (first != i + 1) {
			sl[i].next = sl[first - 1].next;
			sl[first - 1].next = i + 1;
		}
	}
	size_t kept = 0;
	for (size_t i = 0; i < p->n_metadata_props; i++) {
		Onnx__StringStringEntryProto *e = p->metadata_props[i];
		size_t rl = strcspn(e->key, ":");
		const char *colon = e->key[rl] && (!strncmp(e->key, "input:", rl + 1)
			|| !strncmp(e->key, "initializer:", rl + 1) || !strncmp(e->key, "output:", rl + 1))
			? strrchr(e->key + rl + 1, ':') : NULL;
		if (!colon) {
			p->metadata_props[kept++] = e;
			continue;
		}
		SigKey key = { sl, sym_intern(e->key + rl + 1, (size_t)(colon - e->key - rl - 1)) };
		for (uint32_t at = (uint32_t)hashmap_get(&by_name, hash_u64(key.sym), slot_is, &key); at; at = sl[at - 1].next)
			if (!strncmp(sl[at - 1].role, e->key, rl + 1))
				put_prop(w, &sl[at - 1].props, colon + 1, e->value);
	}
	p->n_metadata_props = kept;
	hashmap_free(&by_name);
}

/* A const made from a node (fold, initializers) carries that node's
 * provenance, as the node did. */
static void const_prov(Writer *w, SigSlot *sl, const Prov *p)
{
	Onnx__StringStringEntryProto **v = PTRS(w, Onnx__StringStringEntryProto, p->nmeta + 5);
	size_t n = prov_entries(w, p, v);
	for (size_t i = 0; i < n; i++)
		put_prop(w, &sl->props, v[i]->key, v[i]->value);
}

/* A name as is, or in double quotes with \" \\ \n \t escapes when it
 * holds a space, quote, backslash, newline or tab (functionalize's form). */
static void sig_name(FILE *f, const char *s)
{
	if (!strpbrk(s, " \"\\\n\t")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s == '\n' ? 'n' : *s == '\t' ? 't' : *s, f);
	}
	fputc('"', f);
}

/* The signature of a graph functionalize left without one (nothing is
 * mutated): its inputs, parameters and buffers, and its outputs, all
 * user outputs; added to the graph's metadata_props. */
static const char *plain_signature(Writer *w, const Graph *g, Onnx__GraphProto *p)
{
	static const char *const kinds[] = { [VK_INPUT] = "user_input", [VK_PARAM] = "parameter",
		[VK_BUFFER] = "buffer" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = xmemstream(&buf, &len);
	for (uint32_t i = 0; i < g->nin + g->inits.n; i++) {
		ValueId id = i < g->nin ? g->in[i] : g->inits.v[i - g->nin];
		const Value *v = val(w->m, id);
		if (v->kind != VK_INPUT && v->kind != VK_PARAM && v->kind != VK_BUFFER)
			continue;
		fprintf(f, "input %s ", kinds[v->kind]);
		sig_name(f, vname(w, id));
		if (v->kind != VK_INPUT && v->key) {
			fputc(' ', f);
			sig_name(f, sym_str(v->key));
		}
		fputc('\n', f);
	}
	for (size_t i = 0; i < p->n_output; i++) {
		fputs("output user_output ", f);
		sig_name(f, p->output[i]->name);
		fputc('\n', f);
	}
	fclose(f);
	char *s = arena_strndup(w->a, buf, len);
	free(buf);
	Onnx__StringStringEntryProto **mp = PTRS(w, Onnx__StringStringEntryProto, p->n_metadata_props + 1);
	if (p->n_metadata_props)
		memcpy(mp, p->metadata_props, p->n_metadata_props * sizeof *mp);
	mp[p->n_metadata_props++] = kv(w, SIG_TEXT, s);
	p->metadata_props = mp;
	return s;
}

/* Slot i: the graph's inputs, then its initializers, then its outputs. */
static void slot_init(SigSlot *sl, Onnx__GraphProto *p, size_t i)
{
	size_t ni = p->n_input, nt = p->n_initializer;
	if (i < ni)
		*sl = (SigSlot){ p->input[i]->name, 0, "input:", { 0 }, 0,
			&p->input[i]->n_metadata_props, &p->input[i]->metadata_props };
	else if (i < ni + nt)
		*sl = (SigSlot){ p->initializer[i - ni]->name, 0, "initializer:", { 0 }, 0,
			&p->initializer[i - ni]->n_metadata_props, &p->initializer[i - ni]->metadata_props };
	else
		*sl = (SigSlot){ p->output[i - ni - nt]->name, 0, "output:", { 0 }, 0,
			&p->output[i - ni - nt]->n_metadata_props, &p->output[i - ni - nt]->metadata_props };
	sl->sym = sym_cstr(sl->name ? sl->name : "");
}

void signature_props(Writer *w, const Graph *g, Onnx__GraphProto *p)
{
	uint32_t ns = (uint32_t)(p->n_input + p->n_initializer + p->n_output);
	uint32_t nin = (uint32_t)(p->n_input + p->n_initializer);
	SigSlot *sl = ARENA_ARRAY(w->a, SigSlot, ns + 1);
	HashMap values = { 0 };     /* graph inputs and initializers (ValueIds) by name */
	for (uint32_t i = 0; i < g->nin + g->inits.n; i++) {
		ValueId v = i < g->nin ? g->in[i] : g->inits.v[i - g->nin];
		SigKey key = { w->m, val(w->m, v)->name };
		if (key.sym && v)
			hashmap_intern(&values, hash_u64(key.sym), value_is, &key, v);
	}
	for (uint32_t i = 0; i < ns; i++) {
		slot_init(&sl[i], p, i);
		SigKey key = { w->m, sl[i].sym };
		ValueId v = i < nin ? (ValueId)hashmap_get(&values, hash_u64(key.sym), value_is, &key) : 0;
		if (v)
			input_kind(w, &sl[i], val(w->m, v));
		if (v && i >= p->n_input && val(w->m, v)->prov)
			const_prov(w, &sl[i], val(w->m, v)->prov);
	}
	hashmap_free(&values);
	const char *sig = NULL;
	for (uint32_t i = 0; i < g->nmeta; i++)
		if (g->meta[i].key.n == strlen(SIG_TEXT) && !memcmp(g->meta[i].key.s, SIG_TEXT, g->meta[i].key.n))
			sig = str_dup(w, g->meta[i].val);
	if (!sig)
		sig = plain_signature(w, g, p);
	output_kinds(w, sig, sl + nin, p->n_output);
	for (size_t i = 0; i < p->n_metadata_props; i++)
		if (!strcmp(p->metadata_props[i]->key, SIG_TEXT))
			p->metadata_props[i]->value = (char *)torch_signature(w, sig, g->meta, g->nmeta);
	value_meta(w, p, sl, ns);
	for (uint32_t i = 0; i < ns; i++) {
		*sl[i].np = sl[i].props.n;
		*sl[i].vp = sl[i].props.v;
	}
}
