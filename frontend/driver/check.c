/* check.c - `onnxc check MODEL.onnx`: the structural checks that decide
 * whether a model loads, each error naming the graph and node it is about.
 *
 * The importer stops at the first problem (it builds the IR as it reads),
 * so the checks walk the protobuf itself and report every problem they
 * find; only a model that passes them is imported and run through the IR
 * verifier, which adds the arity and element-type checks of the op
 * registry.  Exit codes: 0 valid, 1 errors, 2 usage. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "driver.h"
#include "onnx.pb-c.h"

typedef VEC(Sym) SymList;

/* A local function's signature, by domain and name. */
typedef struct FnSig { Sym domain, name; size_t nin, nout; } FnSig;

typedef struct Checker {
	const char *path;
	Loc loc;                    /* the model file, no line */
	char *dir;                  /* the model's directory, for external data */
	uint8_t *defined;           /* by Sym: visible in the graph being checked */
	uint32_t ndefined;
	SymList used_domains;       /* of the graph or function being checked */
	FnSig *fns;
	size_t nfns;
	int in_function;
	int allow_custom;           /* -allow-custom-ops: any domain with an opset import */
	unsigned errors, nodes, graphs;
} Checker;

/* Where a message is: "graph 'g'" or "graph 'g', node 'n' (onnx::Add)". */
typedef struct Where {
	const char *kind;           /* "graph" or "function" */
	const char *name;
	const Onnx__NodeProto *node;
	size_t index;               /* the node's position, named when it has no name */
} Where;

static void report(Checker *c, const Where *w, const char *fmt, ...)
{
	char head[512] = "", msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (w && w->node && w->node->name && w->node->name[0])
		snprintf(head, sizeof head, "%s '%s', node '%s' (%s::%s): ", w->kind, w->name, w->node->name,
			 w->node->domain && w->node->domain[0] ? w->node->domain : "onnx", w->node->op_type);
	else if (w && w->node)
		snprintf(head, sizeof head, "%s '%s', node #%zu (%s::%s): ", w->kind, w->name, w->index,
			 w->node->domain && w->node->domain[0] ? w->node->domain : "onnx", w->node->op_type);
	else if (w)
		snprintf(head, sizeof head, "%s '%s': ", w->kind, w->name);
	diag_error(c->loc, "%s%s", head, msg);
	c->errors++;
}

/* ---- names ----------------------------------------------------------------- */

static uint8_t *def_slot(Checker *c, Sym s)
{
	if (s >= c->ndefined) {
		uint32_t n = c->ndefined ? c->ndefined : 1024;
		while (n <= s)
			n *= 2;
		c->defined = xrealloc(c->defined, n);
		memset(c->defined + c->ndefined, 0, n - c->ndefined);
		c->ndefined = n;
	}
	return &c->defined[s];
}

/* SSA: a name is defined once in a graph and the graphs around it. */
static void define(Checker *c, const Where *w, SymList *defs, const char *name, const char *what)
{
	if (!name || !name[0]) {
		report(c, w, "%s has an empty name", what);
		return;
	}
	Sym s = sym_cstr(name);
	uint8_t *d = def_slot(c, s);
	if (*d) {
		report(c, w, "%s '%s' is already defined: every name is assigned once (SSA)", what, name);
		return;
	}
	*d = 1;
	XVEC_PUSH(*defs, s);
}

static int is_defined(Checker *c, const char *name)
{
	Sym s = sym_cstr(name);
	return s < c->ndefined && c->defined[s];
}

static void undefine(Checker *c, SymList *defs)
{
	for (uint32_t i = 0; i < defs->n; i++)
		c->defined[defs->v[i]] = 0;
	free(defs->v);
}

/* "" and "ai.onnx" are one domain. */
static const char *domain_of(const char *d)
{
	return !d || !d[0] || !strcmp(d, "ai.onnx") ? "" : d;
}

static void use_domain(Checker *c, const char *d)
{
	Sym s = sym_cstr(domain_of(d));
	for (uint32_t i = 0; i < c->used_domains.n; i++)
		if (c->used_domains.v[i] == s)
			return;
	XVEC_PUSH(c->used_domains, s);
}

/* ---- tensors ---------------------------------------------------------------- */

static int bad_location(const char *loc)
{
	if (!loc[0] || loc[0] == '/')
		return 1;
	for (const char *p = loc; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
		if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2]))
			return 1;
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return !errno && !*end;
}

static void check_external(Checker *c, const Where *w, const Onnx__TensorProto *t, uint64_t need)
{
	const char *loc = NULL, *off = "0", *len = NULL, *name = t->name ? t->name : "";
	for (size_t i = 0; i < t->n_external_data; i++) {
		const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
		if (k && v && !strcmp(k, "location")) loc = v;
		else if (k && v && !strcmp(k, "offset")) off = v;
		else if (k && v && !strcmp(k, "length")) len = v;
	}
	uint64_t o, l = need;
	if (!loc || bad_location(loc)) {
		report(c, w, "tensor '%s': external data location '%s' must be a relative path inside the model's directory",
		       name, loc ? loc : "");
		return;
	}
	if (!parse_u64(off, &o) || (len && !parse_u64(len, &l))) {
		report(c, w, "tensor '%s': external data offset '%s' or length '%s' is not a number", name, off, len ? len : "");
		return;
	}
	if (l != need)
		report(c, w, "tensor '%s': external data length %llu, its type needs %llu bytes", name,
		       (unsigned long long)l, (unsigned long long)need);
	size_t n = strlen(c->dir) + strlen(loc) + 2;
	char *path = xmalloc(n);
	snprintf(path, n, "%s/%s", c->dir, loc);
	struct stat sb;
	if (stat(path, &sb) != 0)
		report(c, w, "tensor '%s': external data file '%s': %s", name, loc, strerror(errno));
	else if ((uint64_t)sb.st_size < o || (uint64_t)sb.st_size - o < l)
		report(c, w, "tensor '%s': external data [%llu, +%llu) lies outside '%s' (%lld bytes)", name,
		       (unsigned long long)o, (unsigned long long)l, loc, (long long)sb.st_size);
	free(path);
}

/* How many entries of the typed field the dtype uses, and how many there are. */
static size_t typed_count(const Onnx__TensorProto *t, DType dt, int64_t numel, size_t *want)
{
	*want = (size_t)numel;
	switch (dt) {
	case DT_F32: return t->n_float_data;
	case DT_C64: *want *= 2; return t->n_float_data;
	case DT_F64: return t->n_double_data;
	case DT_C128: *want *= 2; return t->n_double_data;
	case DT_I64: return t->n_int64_data;
	case DT_U32: case DT_U64: return t->n_uint64_data;
	case DT_STR: return t->n_string_data;
	default:
		if (dtype_bits(dt) == 4)
			*want = (size_t)(numel + 1) / 2;
		return t->n_int32_data;
	}
}

/* The shape against the data: raw bytes, typed entries or external bytes. */
static void check_tensor(Checker *c, const Where *w, const Onnx__TensorProto *t)
{
	const char *name = t->name ? t->name : "";
	DType dt = dtype_from_onnx(t->data_type);
	if (dt == DT_UNDEF) {
		report(c, w, "tensor '%s': unknown data type %d", name, t->data_type);
		return;
	}
	int64_t numel = 1;
	for (size_t i = 0; i < t->n_dims; i++) {
		if (t->dims[i] < 0 || (t->dims[i] && numel > (INT64_MAX / 16) / t->dims[i])) {
			report(c, w, "tensor '%s': bad dimension %lld", name, (long long)t->dims[i]);
			return;
		}
		numel *= t->dims[i];
	}
	uint64_t need = dt == DT_STR ? 0 : (uint64_t)(numel * dtype_bits(dt) + 7) / 8;
	size_t want, have;
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		check_external(c, w, t, need);
	else if (t->has_raw_data && dt != DT_STR) {
		if (t->raw_data.len != need)
			report(c, w, "tensor '%s': raw_data has %zu bytes, its shape and type need %llu", name,
			       t->raw_data.len, (unsigned long long)need);
	} else if ((have = typed_count(t, dt, numel, &want)) != want)
		report(c, w, "tensor '%s': %zu data entries, its shape needs %zu", name, have, want);
}

/* ---- graphs and nodes ------------------------------------------------------------ */

static void check_graph(Checker *c, const Onnx__GraphProto *g, const char *kind);

static const FnSig *find_fn(const Checker *c, const char *domain, const char *name)
{
	Sym d = sym_cstr(domain_of(domain)), n = sym_cstr(name);
	for (size_t i = 0; i < c->nfns; i++)
		if (c->fns[i].domain == d && c->fns[i].name == n)
			return &c->fns[i];
	return NULL;
}

/* A name no earlier node defines: a later node may (order) or none does. */
static void check_use(Checker *c, const Where *w, const char *name, Onnx__NodeProto **rest, size_t nrest)
{
	if (!name[0] || is_defined(c, name))
		return;
	for (size_t i = 0; i < nrest; i++)
		for (size_t k = 0; k < rest[i]->n_output; k++)
			if (!strcmp(rest[i]->output[k], name)) {
				report(c, w, "input '%s' is defined by a later node: the graph is not in topological order", name);
				return;
			}
	report(c, w, "input '%s' is not defined", name);
}

static void check_attr(Checker *c, const Where *w, OpId op, const Onnx__AttributeProto *a)
{
	const char *name = a->name ? a->name : "";
	if (!name[0]) {
		report(c, w, "an attribute has no name");
		return;
	}
	if (a->ref_attr_name && a->ref_attr_name[0]) {
		if (!c->in_function)
			report(c, w, "attribute '%s' refers to '%s' outside a function", name, a->ref_attr_name);
		return;
	}
	AttrKind want = op_attr_kind(op, sym_cstr(name));
	if (want == AK_UNDEFINED && op_attrs_known(op))
		report(c, w, "%s has no attribute '%s'", sym_str(op_name_of(op)), name);
	else if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
		report(c, w, "attribute '%s' has no type", name);
	else if (want != AK_UNDEFINED && (AttrKind)a->type != want)
		report(c, w, "attribute '%s' is %s, the operator takes %s", name, attr_kind_name((AttrKind)a->type),
		       attr_kind_name(want));
	if (a->t)
		check_tensor(c, w, a->t);
	for (size_t i = 0; i < a->n_tensors; i++)
		check_tensor(c, w, a->tensors[i]);
	if (a->g)
		check_graph(c, a->g, "graph");
	for (size_t i = 0; i < a->n_graphs; i++)
		check_graph(c, a->graphs[i], "graph");
}

/* "2", "2 to 3" or "at least 1". */
static const char *count_range(char *buf, size_t n, int lo, int hi)
{
	if (lo == hi)
		snprintf(buf, n, "%d", lo);
	else if (hi < 0)
		snprintf(buf, n, "at least %d", lo);
	else
		snprintf(buf, n, "%d to %d", lo, hi);
	return buf;
}

static void check_arity(Checker *c, const Where *w, const Onnx__NodeProto *n, OpId op)
{
	const OpInfo *oi = &op_info[op];
	char r[64];
	if ((int64_t)n->n_input < oi->min_in || (oi->max_in >= 0 && (int64_t)n->n_input > oi->max_in))
		report(c, w, "%zu input%s, the operator takes %s", n->n_input, n->n_input == 1 ? "" : "s",
		       count_range(r, sizeof r, oi->min_in, oi->max_in));
	if ((int64_t)n->n_output < oi->min_out || (oi->max_out >= 0 && (int64_t)n->n_output > oi->max_out))
		report(c, w, "%zu output%s, the operator has %s", n->n_output, n->n_output == 1 ? "" : "s",
		       count_range(r, sizeof r, oi->min_out, oi->max_out));
}

/* Against the registry for the default domain, against the signature for
 * a local function; of the other domains only ONNX's own (ai.onnx.ml) and
 * ONNX Runtime's (com.microsoft) load without a custom-op library, so any
 * other is an error unless -allow-custom-ops. */
static OpId check_op(Checker *c, const Where *w, const Onnx__NodeProto *n)
{
	const char *d = domain_of(n->domain);
	const FnSig *f = find_fn(c, d, n->op_type);
	if (f) {
		if (n->n_input > f->nin || n->n_output > f->nout)
			report(c, w, "calls function %s::%s with %zu input(s) and %zu output(s); it declares %zu and %zu",
			       d[0] ? d : "onnx", n->op_type, n->n_input, n->n_output, f->nin, f->nout);
		return OP_GENERIC;
	}
	if (d[0] && !c->allow_custom && strcmp(d, "ai.onnx.ml") != 0 && strcmp(d, "com.microsoft") != 0)
		report(c, w, "domain '%s' is not an ONNX domain (nor ai.onnx.ml, com.microsoft, a local "
		       "function's): ONNX Runtime refuses it without a custom-op library (-allow-custom-ops "
		       "accepts it)", d);
	if (d[0])
		return OP_GENERIC;
	OpId op = op_lookup(S_onnx, sym_cstr(n->op_type));
	if (op == OP_GENERIC)
		report(c, w, "'%s' is not an operator of the default domain", n->op_type);
	else
		check_arity(c, w, n, op);
	return op;
}

static void check_node(Checker *c, Where *w, SymList *defs, Onnx__NodeProto **rest, size_t nrest)
{
	const Onnx__NodeProto *n = rest[0];
	w->node = n;
	c->nodes++;
	if (!n->op_type || !n->op_type[0]) {
		report(c, w, "the node has no op_type");
		w->node = NULL;
		return;
	}
	use_domain(c, n->domain);
	for (size_t i = 0; i < n->n_input; i++)
		check_use(c, w, n->input[i], rest + 1, nrest - 1);
	OpId op = check_op(c, w, n);
	for (size_t i = 0; i < n->n_attribute; i++) {
		for (size_t k = 0; k < i; k++)
			if (n->attribute[k]->name && n->attribute[i]->name && !strcmp(n->attribute[k]->name, n->attribute[i]->name))
				report(c, w, "attribute '%s' is given twice", n->attribute[i]->name);
		check_attr(c, w, op, n->attribute[i]);
	}
	for (size_t i = 0; i < n->n_output; i++)
		if (n->output[i][0])
			define(c, w, defs, n->output[i], "output");
	w->node = NULL;
}

static void check_nodes(Checker *c, Where *w, SymList *defs, Onnx__NodeProto **nodes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		w->index = i;
		check_node(c, w, defs, nodes + i, n - i);
	}
}

static void check_graph(Checker *c, const Onnx__GraphProto *g, const char *kind)
{
	Where w = { kind, g->name ? g->name : "", NULL, 0 };
	SymList defs = { 0 };
	c->graphs++;
	for (size_t i = 0; i < g->n_initializer; i++) {
		check_tensor(c, &w, g->initializer[i]);
		define(c, &w, &defs, g->initializer[i]->name, "initializer");
	}
	/* Old models list initializers as inputs too. */
	for (size_t i = 0; i < g->n_input; i++) {
		const char *name = g->input[i]->name;
		int init = 0;
		for (size_t k = 0; k < g->n_initializer && !init && name; k++)
			init = g->initializer[k]->name && !strcmp(g->initializer[k]->name, name);
		if (!init)
			define(c, &w, &defs, name, "input");
	}
	check_nodes(c, &w, &defs, g->node, g->n_node);
	for (size_t i = 0; i < g->n_output; i++) {
		const char *name = g->output[i]->name ? g->output[i]->name : "";
		if (!is_defined(c, name))
			report(c, &w, "output '%s' is not defined", name);
	}
	undefine(c, &defs);
}

/* ---- opsets, functions and the model ---------------------------------------------- */

static int imports(Onnx__OperatorSetIdProto **o, size_t n, Sym d)
{
	for (size_t i = 0; i < n; i++)
		if (sym_cstr(domain_of(o[i]->domain)) == d)
			return 1;
	return 0;
}

static void check_opsets(Checker *c, const Where *w, Onnx__OperatorSetIdProto **o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(domain_of(o[i]->domain), domain_of(o[k]->domain)))
				report(c, w, "domain '%s' is imported twice", domain_of(o[i]->domain));
	for (uint32_t i = 0; i < c->used_domains.n; i++)
		if (!imports(o, n, c->used_domains.v[i]))
			report(c, w, "nodes use domain '%s', which has no opset import", sym_str(c->used_domains.v[i]));
	c->used_domains.n = 0;
}

static void check_function(Checker *c, const Onnx__FunctionProto *f)
{
	Where w = { "function", f->name ? f->name : "", NULL, 0 };
	SymList defs = { 0 };
	c->in_function = 1;
	for (size_t i = 0; i < f->n_input; i++)
		define(c, &w, &defs, f->input[i], "input");
	check_nodes(c, &w, &defs, f->node, f->n_node);
	for (size_t i = 0; i < f->n_output; i++)
		if (!is_defined(c, f->output[i]))
			report(c, &w, "output '%s' is not defined", f->output[i]);
	undefine(c, &defs);
	check_opsets(c, &w, f->opset_import, f->n_opset_import);
	c->in_function = 0;
}

/* Signatures first: a graph may call a function defined after it. */
static void collect_functions(Checker *c, const Onnx__ModelProto *mp)
{
	c->fns = xcalloc(mp->n_functions + 1, sizeof *c->fns);
	for (size_t i = 0; i < mp->n_functions; i++) {
		const Onnx__FunctionProto *f = mp->functions[i];
		FnSig s = { sym_cstr(domain_of(f->domain)), sym_cstr(f->name ? f->name : ""), f->n_input, f->n_output };
		Where w = { "function", f->name ? f->name : "", NULL, 0 };
		if (!f->name || !f->name[0])
			report(c, &w, "a local function has no name");
		else if (find_fn(c, sym_str(s.domain), f->name))
			report(c, &w, "function %s::%s is defined twice", domain_of(f->domain)[0] ? f->domain : "onnx", f->name);
		c->fns[c->nfns++] = s;
	}
}

static void check_model(Checker *c, const Onnx__ModelProto *mp)
{
	if (!mp->has_ir_version || mp->ir_version < 3)
		report(c, NULL, "the model has no IR version (or one older than 3)");
	if (!mp->graph) {
		report(c, NULL, "the model has no graph");
		return;
	}
	collect_functions(c, mp);
	check_graph(c, mp->graph, "graph");
	Where w = { "graph", mp->graph->name ? mp->graph->name : "", NULL, 0 };
	for (size_t i = 0; i < mp->n_functions; i++)
		use_domain(c, mp->functions[i]->domain);
	check_opsets(c, &w, mp->opset_import, mp->n_opset_import);
	for (size_t i = 0; i < mp->n_functions; i++)
		check_function(c, mp->functions[i]);
}

/* ---- the command ------------------------------------------------------------------ */

static const char check_usage[] =
	"usage: onnxc check [-allow-custom-ops] <model.onnx>\n"
	"\n"
	"Checks the structure of an ONNX model: SSA names and topological order,\n"
	"defined inputs, opset imports for every domain used, operator arity and\n"
	"attribute types, calls of local functions against their signatures,\n"
	"initializer shapes against their data, external data bounds, and that\n"
	"every node's domain is ONNX's (ai.onnx.ml and ONNX Runtime's com.microsoft\n"
	"too) or a local function's; -allow-custom-ops accepts any other domain.\n"
	"Prints every error with the graph and node it is about; exit 1 if there\n"
	"are any.\n";

static _Noreturn void check_usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "onnxc: error: ");
	fprintf(stderr, msg, arg);
	fprintf(stderr, "\nrun 'onnxc check --help' for usage\n");
	exit(2);
}

static const char *parse_check_args(int argc, char **argv, int *allow_custom)
{
	const char *model = NULL;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(check_usage, stdout);
			exit(0);
		} else if (!strcmp(argv[i], "-allow-custom-ops")) {
			*allow_custom = 1;
		} else if (argv[i][0] == '-' && argv[i][1])
			check_usage_error("unknown option '%s'", argv[i]);
		else if (model)
			check_usage_error("more than one model ('%s')", argv[i]);
		else
			model = argv[i];
	}
	if (!model)
		check_usage_error("%s", "no model file");
	return model;
}

static char *dir_of(const char *path)
{
	char *d = xstrdup(path);
	char *s = strrchr(d, '/');
	if (!s)
		strcpy(d, ".");
	else
		s[s == d] = 0;
	return d;
}

/* What the IR layer adds once the protobuf is sound: arity and
 * element types through the verifier. */
static void check_ir(Checker *c)
{
	Module *m = onnx_import(c->path);
	if (m)
		c->errors += (unsigned)verify_module(m);
	else
		c->errors++;
	module_free(m);
}

int check_main(int argc, char **argv)
{
	Checker c = { 0 };
	c.path = parse_check_args(argc, argv, &c.allow_custom);
	c.loc = (Loc){ sym_cstr(c.path), 0, 0 };
	c.dir = dir_of(c.path);
	diag_set_max_errors(0);
	size_t len;
	char *data = read_file(c.path, &len);
	Onnx__ModelProto *mp = data ? onnx__model_proto__unpack(NULL, len, (const uint8_t *)data) : NULL;
	if (data && !mp)
		report(&c, NULL, "not an ONNX model: malformed or truncated protobuf");
	if (mp)
		check_model(&c, mp);
	if (mp && !c.errors)
		check_ir(&c);
	if (mp && !c.errors)
		printf("%s: ok: %u graph%s, %u nodes, %zu initializers, %zu functions, opsets", c.path, c.graphs,
		       c.graphs == 1 ? "" : "s", c.nodes, mp->graph->n_initializer, mp->n_functions);
	for (size_t i = 0; mp && !c.errors && i < mp->n_opset_import; i++)
		printf(" %s:%lld", domain_of(mp->opset_import[i]->domain)[0] ? mp->opset_import[i]->domain : "onnx",
		       (long long)mp->opset_import[i]->version);
	if (mp && !c.errors)
		printf("\n");
	else if (c.errors)
		fprintf(stderr, "%s: %u error%s\n", c.path, c.errors, c.errors == 1 ? "" : "s");
	if (mp)
		onnx__model_proto__free_unpacked(mp, NULL);
	free(c.used_domains.v);
	free(c.defined);
	free(c.fns);
	free(c.dir);
	free(data);
	return data && !c.errors ? 0 : 1;
}
