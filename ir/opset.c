/* opset.c - every ONNX op of the program checked against the opset it is
 * written for.
 *
 * An op exists from its `since` opset on (ops.def); where its operands
 * moved between attributes and inputs, opforms.def gives the form each
 * opset takes.  A node carrying an `.opsetN` suffix asks for opset N at
 * least.  The check runs once over the final program, before it is
 * written: linear in its size (the forms of one op are a handful). */
#include <string.h>
#include "ir.h"

typedef struct Form {
	OpId op;
	int since;
	int min_in, max_in;         /* -1, -1: the op is gone from `since` on */
	const char *attrs;          /* the version-dependent attributes it has */
} Form;

static const Form forms[] = {
#define FORM(op, since, mi, ma, at) { OP_##op, since, mi, ma, at },
#define GONE(op, since) { OP_##op, since, -1, -1, "" },
#include "opforms.def"
#undef FORM
#undef GONE
};
enum { NFORMS = sizeof forms / sizeof *forms };
_Static_assert(NFORMS < 255, "first_form holds an index + 1 in a byte");

/* Index + 1 of each op's first FORM line, 0 for none; built once. */
static uint8_t first_form[OP_COUNT];

static void index_forms(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	for (int i = NFORMS - 1; i >= 0; i--)
		first_form[forms[i].op] = (uint8_t)(i + 1);
}

/* The FORM line of op in force at opset v, or NULL (no forms, or v older
 * than the first). */
static const Form *form_at(OpId op, int64_t v)
{
	const Form *f = NULL;
	for (int i = first_form[op] - 1; i >= 0 && i < NFORMS && forms[i].op == op; i++)
		if (forms[i].since <= v)
			f = &forms[i];
	return f;
}

static int attr_listed(const char *list, Sym name)
{
	size_t n = sym_len(name);
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && memcmp(p, sym_str(name), n) == 0)
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

/* Some FORM line of op lists the attribute: it is version-dependent. */
static int attr_versioned(OpId op, Sym name)
{
	for (int i = first_form[op] - 1; i >= 0 && i < NFORMS && forms[i].op == op; i++)
		if (attr_listed(forms[i].attrs, name))
			return 1;
	return 0;
}

/* The first attribute of n that form f does not have, or 0. */
static Sym stray_attr(const Node *n, const Form *f)
{
	for (uint32_t i = 0; i < n->nkw; i++)
		if (!attr_listed(f->attrs, n->kw[i].name) && attr_versioned(n->op, n->kw[i].name))
			return n->kw[i].name;
	return 0;
}

static int fits(const Node *n, const Form *f)
{
	return !f || (f->min_in >= 0 && n->nargs >= (uint32_t)f->min_in && n->nargs <= (uint32_t)f->max_in &&
		      !stray_attr(n, f));
}

/* The smallest opset at which n is valid: its op's `since`, its suffix's
 * N, or the first form from then on that n fits.  Only raising: a node in an old form
 * keeps its smallest opset, and the check reports it if others need more. */
static int64_t node_needs(const Node *n)
{
	int64_t v = op_info[n->op].since;
	if (n->opset > v)
		v = n->opset;
	const Form *f = form_at(n->op, v);
	if ((f || !first_form[n->op]) && fits(n, f))
		return v;
	for (int i = first_form[n->op] - 1; i >= 0 && i < NFORMS && forms[i].op == n->op; i++)
		if (forms[i].since > v && fits(n, &forms[i]))
			return forms[i].since;
	return v;
}

/* Where the form n is written in holds: "from opset N on" or "before
 * opset N", or "" when no form fits. */
static void form_hint(const Node *n, char *buf, size_t sz, int64_t target)
{
	*buf = 0;
	for (int i = first_form[n->op] - 1; i >= 0 && i < NFORMS && forms[i].op == n->op; i++) {
		if (!fits(n, &forms[i]))
			continue;
		int last = i + 1 >= NFORMS || forms[i + 1].op != n->op;
		if (forms[i].since > target)
			snprintf(buf, sz, " (that is its form from opset %d on)", forms[i].since);
		else if (!last)
			snprintf(buf, sz, " (that is its form before opset %d)", forms[i + 1].since);
		return;
	}
}

typedef struct Check {
	Module *m;
	int64_t model;              /* the model's default-domain opset */
	int errors;
	int gather;                 /* 1: find what the nodes need; 0: check them */
	int64_t need;               /* the most any node needs */
	const Node *needer;         /* the node that needs it */
} Check;

static void report(Check *c, const Node *n, const char *fmt, ...)
{
	char msg[600], full[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* An imported node has no line: its name says which it is. */
	if (!n->loc.line && n->node_name)
		snprintf(full, sizeof full, "node '%s': %s", sym_str(n->node_name), msg);
	else
		snprintf(full, sizeof full, "%s", msg);
	diag_error(n->loc, "%s", full);
	c->errors++;
}

/* "2" or "1 to 3". */
static const char *range(const Form *f, char *buf, size_t sz)
{
	if (f->min_in == f->max_in)
		snprintf(buf, sz, "%d", f->min_in);
	else
		snprintf(buf, sz, "%d to %d", f->min_in, f->max_in);
	return buf;
}

static void check_node(Check *c, const Node *n, int64_t v)
{
	const OpInfo *oi = &op_info[n->op];
	const char *op = oi->name;
	char hint[120], count[40];
	if (oi->since > v) {
		report(c, n, "onnx::%s is not in opset %lld: it first appears in opset %d (-opset-upgrade raises the opset)",
		       op, (long long)v, oi->since);
		return;
	}
	if (n->opset > v) {
		report(c, n, "onnx::%s.opset%u asks for opset %u; the target is opset %lld (-opset-upgrade raises the opset)",
		       op, n->opset, n->opset, (long long)v);
		return;
	}
	const Form *f = form_at(n->op, v);
	if (!f || fits(n, f))
		return;
	form_hint(n, hint, sizeof hint, v);
	Sym a = stray_attr(n, f);
	if (f->min_in < 0)
		report(c, n, "onnx::%s is deprecated from opset %d on; the target is opset %lld", op, f->since, (long long)v);
	else if (n->nargs < (uint32_t)f->min_in || n->nargs > (uint32_t)f->max_in)
		report(c, n, "onnx::%s takes %s input%s at opset %lld, got %u%s", op, range(f, count, sizeof count),
		       f->max_in == 1 ? "" : "s", (long long)v, n->nargs, hint);
	else
		report(c, n, "onnx::%s has no attribute '%s' at opset %lld%s", op, sym_str(a), (long long)v, hint);
}

static Status visit(const GraphVisit *gv, void *ctx)
{
	Check *c = ctx;
	int64_t v = gv->func ? opsets_onnx(&gv->func->opsets, c->model) : c->model;
	for (const Node *n = gv->g->first; n; n = n->next) {
		if (n->domain != S_onnx || n->op == OP_GENERIC)
			continue;
		if (c->gather) {
			int64_t need = node_needs(n);
			if (need > c->need) {
				c->need = need;
				c->needer = n;
			}
		} else {
			check_node(c, n, v);
		}
	}
	return OK;
}

int64_t opsets_onnx(const OpsetVec *v, int64_t fallback)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (v->v[i].domain == S_onnx)
			return v->v[i].version;
	return fallback;
}

static void raise_to(Arena *a, OpsetVec *v, int64_t to, int add)
{
	for (uint32_t i = 0; i < v->n; i++)
		if (v->v[i].domain == S_onnx) {
			if (v->v[i].version < to)
				v->v[i].version = to;
			return;
		}
	if (add)
		VEC_PUSH(a, *v, ((Opset){ S_onnx, to }));
}

/* The module and the functions that name their own default-domain opset
 * all move to the opset the program needs (ONNX wants one version per
 * domain across a model and its functions). */
static void upgrade(Check *c)
{
	Module *m = c->m;
	c->gather = 1;
	module_walk(m, WALK_PROGRAM, visit, c);
	c->gather = 0;
	if (c->need <= c->model)
		return;
	diag_note(c->needer->loc, "default-domain opset raised from %lld to %lld for onnx::%s",
		  (long long)c->model, (long long)c->need, op_info[c->needer->op].name);
	raise_to(&m->arena, &m->opsets, c->need, 1);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		raise_to(&m->arena, &m->funcs.v[i]->opsets, c->need, 0);
	c->model = c->need;
}

int verify_opset(Module *m, int64_t fallback, int raise)
{
	index_forms();
	Check c = { .m = m, .model = opsets_onnx(&m->opsets, fallback) };
	if (raise)
		upgrade(&c);
	module_walk(m, WALK_PROGRAM, visit, &c);
	return c.errors;
}
