/* decomp_lib.c - loading and indexing decompositions.
 *
 * A DecompTable maps (domain, name) to the decompositions of that op in
 * priority order, through one open-addressing hash table: lookups are O(1)
 * however large the library.  Each decomposition's values (body inputs and
 * node results) are numbered 0..nlocal-1 once, at load time, so expanding
 * a body needs a map of nlocal entries rather than one the size of the
 * library module.
 *
 * A DecompLib is the table of one run: the -decomp files, then the built-in
 * directory.  Its modules and their source texts live until the run ends,
 * because diagnostics may quote library lines. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "frontend.h"
#include "passes.h"

typedef struct Bucket {
	Sym dom, name;              /* name 0: empty slot */
	DecompEntry *v;
	uint32_t n, cap;
} Bucket;

struct DecompTable {
	Bucket *slots;
	uint32_t cap, used;         /* cap is a power of two */
	uint32_t **locals;          /* numbering arrays, one per module added */
	uint32_t nlocals;
};

struct DecompLib {
	char *dir;
	char **files;
	int nfiles;
	int loaded, ok;
	DecompTable *table;
	Module **mods;
	char **texts;
	uint32_t nmods;
};

/* ---- the table ----------------------------------------------------------- */
DecompTable *decomp_table_new(void)
{
	DecompTable *t = xrealloc(NULL, sizeof *t);
	memset(t, 0, sizeof *t);
	t->cap = 64;
	t->slots = calloc(t->cap, sizeof *t->slots);
	if (!t->slots)
		ONNXC_BUG("out of memory");
	return t;
}

void decomp_table_free(DecompTable *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->cap; i++)
		free(t->slots[i].v);
	for (uint32_t i = 0; i < t->nlocals; i++)
		free(t->locals[i]);
	free(t->locals);
	free(t->slots);
	free(t);
}

static uint32_t slot_hash(Sym dom, Sym name)
{
	uint64_t k[2] = { dom, name };
	return (uint32_t)hash_mem(k, sizeof k);
}

static Bucket *probe(Bucket *slots, uint32_t cap, Sym dom, Sym name)
{
	uint32_t i = slot_hash(dom, name) & (cap - 1);
	while (slots[i].name && (slots[i].dom != dom || slots[i].name != name))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static void grow(DecompTable *t)
{
	uint32_t cap = t->cap * 2;
	Bucket *ns = calloc(cap, sizeof *ns);
	if (!ns)
		ONNXC_BUG("out of memory");
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].name)
			*probe(ns, cap, t->slots[i].dom, t->slots[i].name) = t->slots[i];
	free(t->slots);
	t->slots = ns;
	t->cap = cap;
}

static void push(DecompTable *t, DecompEntry e)
{
	if ((t->used + 1) * 2 > t->cap)
		grow(t);
	Bucket *b = probe(t->slots, t->cap, e.d->domain, e.d->name);
	if (!b->name) {
		b->dom = e.d->domain;
		b->name = e.d->name;
		t->used++;
	}
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 2;
		b->v = xrealloc(b->v, b->cap * sizeof *b->v);
	}
	b->v[b->n++] = e;
}

/* Numbers d's values; 0 if the body holds something expansion cannot copy. */
static int number_values(const Decomp *d, uint32_t *local, uint32_t *n)
{
	const Graph *g = d->body;
	*n = 0;
	for (uint32_t i = 0; i < g->nin; i++)
		local[g->in[i]] = (*n)++;
	for (const Node *nd = g->first; nd; nd = nd->next) {
		for (uint32_t i = 0; i < nd->nargs + nd->nkw; i++)
			if (arg_contains(i < nd->nargs ? &nd->args[i] : &nd->kw[i - nd->nargs].val, A_GRAPH)) {
				diag_error(nd->loc, "decomposition bodies may not hold subgraphs");
				return 0;
			}
		for (uint32_t i = 0; i < nd->nres; i++)
			if (nd->res[i])
				local[nd->res[i]] = (*n)++;
	}
	if (g->inits.n) {
		diag_error(d->loc, "decomposition bodies may not declare param, buffer or const values");
		return 0;
	}
	return 1;
}

int decomp_table_add(DecompTable *t, Module *m)
{
	if (!m->decomps.n)
		return 1;
	uint32_t *local = calloc(m->vals.n + 1, sizeof *local);
	if (!local)
		ONNXC_BUG("out of memory");
	t->locals = xrealloc(t->locals, (t->nlocals + 1) * sizeof *t->locals);
	t->locals[t->nlocals++] = local;
	int ok = 1;
	for (uint32_t i = 0; i < m->decomps.n; i++) {
		uint32_t n;
		if (!number_values(m->decomps.v[i], local, &n)) {
			ok = 0;
			continue;
		}
		push(t, (DecompEntry){ m->decomps.v[i], m, local, n });
	}
	return ok;
}

const DecompEntry *decomp_table_find(const DecompTable *t, Sym domain, Sym name, uint32_t *n)
{
	Bucket *b = probe(t->slots, t->cap, domain, name);
	*n = b->n;
	return b->v;
}

/* ---- the library ---------------------------------------------------------- */
DecompLib *decomp_lib_new(const char *dir, const char *const *files, int nfiles)
{
	DecompLib *lib = xrealloc(NULL, sizeof *lib);
	memset(lib, 0, sizeof *lib);
	lib->dir = dir ? xstrdup(dir) : NULL;
	lib->files = xrealloc(NULL, (size_t)nfiles * sizeof *lib->files);
	for (int i = 0; i < nfiles; i++)
		lib->files[i] = xstrdup(files[i]);
	lib->nfiles = nfiles;
	return lib;
}

void decomp_lib_free(DecompLib *lib)
{
	if (!lib)
		return;
	decomp_table_free(lib->table);
	for (uint32_t i = 0; i < lib->nmods; i++) {
		module_free(lib->mods[i]);
		free(lib->texts[i]);
	}
	for (int i = 0; i < lib->nfiles; i++)
		free(lib->files[i]);
	free(lib->files);
	free(lib->mods);
	free(lib->texts);
	free(lib->dir);
	free(lib);
}

static int load_file(DecompLib *lib, const char *path)
{
	size_t len;
	char *text = read_file(path, &len);
	if (!text)
		return 0;
	diag_add_source(sym_cstr(path), text, len);
	Module *m = parse_fxir(path, text, len);
	lib->mods = xrealloc(lib->mods, (lib->nmods + 1) * sizeof *lib->mods);
	lib->texts = xrealloc(lib->texts, (lib->nmods + 1) * sizeof *lib->texts);
	lib->mods[lib->nmods] = m;
	lib->texts[lib->nmods++] = text;
	return m && decomp_table_add(lib->table, m);
}

/* The directory of the running binary, from /proc/self/exe. */
static char *default_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return xstrdup("decomps");
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = 0;
	size_t len = strlen(buf) + sizeof "/decomps";
	char *d = xrealloc(NULL, len);
	snprintf(d, len, "%s/decomps", buf);
	return d;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Every *.fxir in dir, in name order so priorities do not depend on the
 * file system. */
static int load_dir(DecompLib *lib, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		diag_error((Loc){ sym_cstr(dir), 0, 0 }, "cannot open the decomposition library: %s "
			   "(use -decomp-path=DIR)", strerror(errno));
		return 0;
	}
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (ends_with(e->d_name, ".fxir")) {
			names = xrealloc(names, (n + 1) * sizeof *names);
			names[n++] = xstrdup(e->d_name);
		}
	closedir(d);
	qsort(names, n, sizeof *names, cmp_str);
	int ok = 1;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 2;
		char *path = xrealloc(NULL, len);
		snprintf(path, len, "%s/%s", dir, names[i]);
		ok &= load_file(lib, path);
		free(path);
		free(names[i]);
	}
	free(names);
	return ok;
}

int decomp_lib_load(DecompLib *lib)
{
	if (lib->loaded)
		return lib->ok;
	lib->loaded = 1;
	lib->table = decomp_table_new();
	int ok = 1;
	for (int i = 0; i < lib->nfiles; i++)
		ok &= load_file(lib, lib->files[i]);
	char *dir = lib->dir ? xstrdup(lib->dir) : default_dir();
	ok &= load_dir(lib, dir);
	free(dir);
	lib->ok = ok;
	return ok;
}

const DecompEntry *decomp_lib_find(const DecompLib *lib, Sym domain, Sym name, uint32_t *n)
{
	if (!lib->table) {
		*n = 0;
		return NULL;
	}
	return decomp_table_find(lib->table, domain, name, n);
}
