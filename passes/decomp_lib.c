/* decomp_lib.c - loading and indexing decompositions.
 *
 * A DecompTable maps (domain, name) to the decompositions of that op in
 * priority order, through a HashMap: lookups are O(1) however large the
 * library.  Each decomposition's values (body inputs and
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

typedef struct Bucket {         /* the decompositions of one op */
	Sym dom, name;
	DecompEntry *v;
	uint32_t n, cap;
} Bucket;

struct DecompTable {
	HashMap by_op;              /* (dom, name) -> Bucket * */
	VEC(Bucket *) buckets;      /* every bucket, for freeing */
	VEC(uint32_t *) locals;     /* numbering arrays, one per module added */
};

struct DecompLib {
	char *dir;
	char **files;
	int nfiles;
	int loaded;
	Status status;             /* of the load, once loaded */
	DecompTable *table;
	Module **mods;
	char **texts;
	uint32_t nmods;
};

/* ---- the table ----------------------------------------------------------- */
DecompTable *decomp_table_new(void)
{
	return xcalloc(1, sizeof(DecompTable));
}

void decomp_table_free(DecompTable *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->buckets.n; i++)
		free(t->buckets.v[i]->v);
	for (uint32_t i = 0; i < t->buckets.n; i++)
		free(t->buckets.v[i]);
	for (uint32_t i = 0; i < t->locals.n; i++)
		free(t->locals.v[i]);
	free(t->buckets.v);
	free(t->locals.v);
	hashmap_free(&t->by_op);
	free(t);
}

typedef struct OpKey { Sym dom, name; } OpKey;

static uint64_t op_hash(Sym dom, Sym name) { return hash_u64((uint64_t)dom << 32 | name); }

static int same_op(uintptr_t item, const void *key)
{
	const Bucket *b = (const Bucket *)item;
	const OpKey *k = key;
	return b->dom == k->dom && b->name == k->name;
}

static void push(DecompTable *t, DecompEntry e)
{
	OpKey k = { e.d->domain, e.d->name };
	uint64_t h = op_hash(k.dom, k.name);
	Bucket *b = (Bucket *)hashmap_get(&t->by_op, h, same_op, &k);
	if (!b) {
		b = xcalloc(1, sizeof *b);
		b->dom = k.dom;
		b->name = k.name;
		hashmap_intern(&t->by_op, h, same_op, &k, (uintptr_t)b);
		XVEC_PUSH(t->buckets, b);
	}
	XVEC_PUSH(*b, e);
}

/* Numbers d's values; FAILED if the body holds something expansion cannot
 * copy. */
static Status number_values(const Decomp *d, uint32_t *local, uint32_t *n)
{
	const Graph *g = d->body;
	*n = 0;
	for (uint32_t i = 0; i < g->nin; i++)
		local[g->in[i]] = (*n)++;
	for (const Node *nd = g->first; nd; nd = nd->next) {
		if (node_has_subgraph(nd)) {
			diag_error(nd->loc, "decomposition bodies may not hold subgraphs");
			return FAILED;
		}
		for (uint32_t i = 0; i < nd->nres; i++)
			if (nd->res[i])
				local[nd->res[i]] = (*n)++;
	}
	if (g->inits.n) {
		diag_error(d->loc, "decomposition bodies may not declare param, buffer or const values");
		return FAILED;
	}
	return OK;
}

Status decomp_table_add(DecompTable *t, Module *m)
{
	if (!m->decomps.n)
		return OK;
	uint32_t *local = xcalloc(m->vals.n + 1, sizeof *local);
	XVEC_PUSH(t->locals, local);
	Status st = OK;
	for (uint32_t i = 0; i < m->decomps.n; i++) {
		uint32_t n;
		if (number_values(m->decomps.v[i], local, &n) != OK) {
			st = FAILED;
			continue;
		}
		push(t, (DecompEntry){ m->decomps.v[i], m, local, n });
	}
	return st;
}

const DecompEntry *decomp_table_find(const DecompTable *t, Sym domain, Sym name, uint32_t *n)
{
	OpKey k = { domain, name };
	const Bucket *b = (const Bucket *)hashmap_get(&t->by_op, op_hash(domain, name), same_op, &k);
	*n = b ? b->n : 0;
	return b ? b->v : NULL;
}

/* ---- the library ---------------------------------------------------------- */
DecompLib *decomp_lib_new(const char *dir, const char *const *files, int nfiles)
{
	DecompLib *lib = xcalloc(1, sizeof *lib);
	lib->dir = dir ? xstrdup(dir) : NULL;
	lib->files = xcalloc((size_t)nfiles, sizeof *lib->files);
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

static Status load_file(DecompLib *lib, const char *path)
{
	size_t len;
	char *text = read_file(path, &len);
	if (!text)
		return FAILED;
	diag_add_source(sym_cstr(path), text, len);
	Module *m = parse_fxir(path, text, len);
	lib->mods = xreallocarray(lib->mods, lib->nmods + 1, sizeof *lib->mods);
	lib->texts = xreallocarray(lib->texts, lib->nmods + 1, sizeof *lib->texts);
	lib->mods[lib->nmods] = m;
	lib->texts[lib->nmods++] = text;
	return m ? decomp_table_add(lib->table, m) : FAILED;
}

static char *join(const char *a, const char *b)
{
	size_t len = strlen(a) + strlen(b) + 1;
	char *d = xmalloc(len);
	snprintf(d, len, "%s%s", a, b);
	return d;
}

/* The library next to the running binary (from /proc/self/exe): decomps/
 * in a build tree, else ../share/onnxc/decomps where an install (cmake
 * --install, or pip's wheel: bin/onnxc and share/onnxc/decomps under one
 * prefix) put it. */
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
	static const char *const rel[] = { "/decomps", "/../share/onnxc/decomps" };
	for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
		char *d = join(buf, rel[i]);
		DIR *probe = opendir(d);
		if (probe) {
			closedir(probe);
			return d;
		}
		free(d);
	}
	return join(buf, rel[0]);   /* the build tree's, also when none opens: load_dir names it */
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
static Status load_dir(DecompLib *lib, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		diag_error((Loc){ sym_cstr(dir), 0, 0 }, "cannot open the decomposition library: %s "
			   "(use -decomp-path=DIR)", strerror(errno));
		return FAILED;
	}
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (ends_with(e->d_name, ".fxir")) {
			names = xreallocarray(names, n + 1, sizeof *names);
			names[n++] = xstrdup(e->d_name);
		}
	closedir(d);
	if (n)          /* names is NULL for an empty directory: qsort wants a pointer */
		qsort(names, n, sizeof *names, cmp_str);
	Status st = OK;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 2;
		char *path = xmalloc(len);
		snprintf(path, len, "%s/%s", dir, names[i]);
		st |= load_file(lib, path);
		free(path);
		free(names[i]);
	}
	free(names);
	return st;
}

/* Every file is read even after one fails, so all errors are reported. */
Status decomp_lib_load(DecompLib *lib)
{
	if (lib->loaded)
		return lib->status;
	lib->loaded = 1;
	lib->table = decomp_table_new();
	Status st = OK;
	for (int i = 0; i < lib->nfiles; i++)
		st |= load_file(lib, lib->files[i]);
	char *dir = lib->dir ? xstrdup(lib->dir) : default_dir();
	st |= load_dir(lib, dir);
	free(dir);
	lib->status = st;
	return st;
}

const DecompEntry *decomp_lib_find(const DecompLib *lib, Sym domain, Sym name, uint32_t *n)
{
	if (!lib->table) {
		*n = 0;
		return NULL;
	}
	return decomp_table_find(lib->table, domain, name, n);
}
