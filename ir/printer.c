/* printer.c - .fxir text from the IR.
 *
 * Invariant: parse(print(m)) prints the same text again.  Everything the IR
 * holds is written; floats are written in the shortest form that reads back
 * to the same bits, and a tensor whose elements would not survive that is
 * written as hex bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct Printer { FILE *f; const Module *m; int ind; } Printer;

static void print_graph_body(Printer *p, const Graph *g);

size_t utf8_len(const unsigned char *s, const unsigned char *end)
{
	unsigned c = s[0];
	size_t n;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0)
		n = 2, cp = c & 0x1F, min = 0x80;
	else if ((c & 0xF0) == 0xE0)
		n = 3, cp = c & 0x0F, min = 0x800;
	else if ((c & 0xF8) == 0xF0)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)(end - s) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

static void indent(Printer *p)
{
	for (int i = 0; i < p->ind; i++)
		fputs("  ", p->f);
}

static void print_str(FILE *f, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s, *end = u + n;
	fputc('"', f);
	while (u < end) {
		const unsigned char *run = u;   /* printable ASCII goes out in one write */
		while (u < end && *u >= 0x20 && *u < 0x7f && *u != '"' && *u != '\\')
			u++;
		if (u > run)
			fwrite(run, 1, (size_t)(u - run), f);
		if (u >= end)
			break;
		unsigned c = *u;
		size_t k = c >= 0x80 ? utf8_len(u, end) : 1;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f || k == 0)
			fprintf(f, "\\x%02x", c);
		else {
			fwrite(u, 1, k, f);
			u += k;
			continue;
		}
		u++;
	}
	fputc('"', f);
}

static int is_keyword(const char *s)
{
	static const char *const kw[] = {
		"module", "graph", "func", "decomp", "weights", "opset", "param", "buffer", "const",
		"return", "where", "none", "true", "false", "tensor", "seq", "opt", "scope", "loc",
		"trace", "name", "doc", "meta", "attrs", "type", "inf", "nan", "_",
	};
	for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
		if (strcmp(s, kw[i]) == 0)
			return 1;
	return dtype_from_name(s, strlen(s)) != DT_UNDEF;
}

/* [A-Za-z_][A-Za-z0-9_]*("."[A-Za-z0-9_]+)*, and not a keyword: what the
 * lexer reads back as one identifier. */
static int is_ident(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	int after_dot = 0;
	for (const char *c = s; *c; c++) {
		int w = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
		if (*c == '.' && !after_dot && c[1])
			after_dot = 1;
		else if (!w)
			return 0;
		else
			after_dot = 0;
	}
	return !is_keyword(s);
}

/* What is_ident and the value-name test said of each Sym, so a name
 * printed on every line is classified once: bit 0 set when known, bit 1
 * the answer; bits 2 and 3 the same for value names, 4 and 5 for keyword
 * argument names. */
static uint8_t *sym_class;
static uint32_t nsym_class;

static int sym_test(Sym s, int shift, int (*test)(const char *))
{
	if (s >= nsym_class) {
		uint32_t n = nsym_class ? nsym_class : 1024;
		while (n <= s)
			n *= 2;
		uint8_t *c = realloc(sym_class, n);
		if (!c)
			return test(sym_str(s));
		memset(c + nsym_class, 0, n - nsym_class);
		sym_class = c;
		nsym_class = n;
	}
	uint8_t k = (uint8_t)(sym_class[s] >> shift);
	if (!(k & 1)) {
		k = (uint8_t)(1 | (test(sym_str(s)) ? 2 : 0));
		sym_class[s] |= (uint8_t)(k << shift);
	}
	return k >> 1 & 1;
}

static int sym_is_ident(Sym s) { return sym_test(s, 0, is_ident); }

/* A value name the lexer reads after % without quotes. */
static int is_plain_value_name(const char *n)
{
	if (!*n)
		return 0;
	for (const char *c = n; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '.'))
			return 0;
	return 1;
}

/* A keyword-argument name the parser reads bare: an identifier, or one of
 * the keywords the grammar allows there (parser.y, kwname). */
static int is_kwname(const char *s)
{
	static const char *const ok[] = { "name", "doc", "meta", "scope", "loc", "trace", "seq", "opt", "attrs" };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(s, ok[i]) == 0)
			return 1;
	return is_ident(s);
}

static void print_sym_name(FILE *f, char sigil, Sym s)
{
	fputc(sigil, f);
	if (sym_is_ident(s))
		fwrite(sym_str(s), 1, sym_len(s), f);
	else
		print_str(f, sym_str(s), sym_len(s));
}

void print_value_name(FILE *out, const Module *m, ValueId v)
{
	Sym s = m->vals.v[v].name;
	if (!s) {
		fprintf(out, "%%\"$%u\"", v);
		return;
	}
	fputc('%', out);
	if (sym_test(s, 2, is_plain_value_name))
		fwrite(sym_str(s), 1, sym_len(s), out);
	else
		print_str(out, sym_str(s), sym_len(s));
}

/* The shortest %g form that reads back as the same double; always looks
 * like a float to the lexer. */
static void print_double(FILE *f, double x)
{
	if (isnan(x)) {
		fputs("nan", f);
		return;
	}
	if (isinf(x)) {
		fputs(x < 0 ? "-inf" : "inf", f);
		return;
	}
	char buf[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, x);
		if (strtod(buf, NULL) == x)
			break;
	}
	fputs(buf, f);
	if (!strpbrk(buf, ".e"))
		fputs(".0", f);
}

static void print_dim(FILE *f, Dim d)
{
	if (d.sym) {
		if (sym_is_ident(d.sym))
			fwrite(sym_str(d.sym), 1, sym_len(d.sym), f);
		else
			print_str(f, sym_str(d.sym), sym_len(d.sym));
	} else if (d.v >= 0)
		fprintf(f, "%lld", (long long)d.v);
	else
		fputc('?', f);
}

void print_type(FILE *f, const Type *t)
{
	if (!t) {
		fputc('?', f);
		return;
	}
	if (t->kind != TY_TENSOR) {
		fputs(t->kind == TY_SEQ ? "seq<" : "opt<", f);
		print_type(f, t->elem);
		fputc('>', f);
		return;
	}
	fputs(dtype_name((DType)t->dtype), f);
	if (t->rank < 0)
		return;
	fputc('[', f);
	for (int i = 0; i < t->rank; i++) {
		if (i)
			fputc(',', f);
		print_dim(f, t->dims[i]);
	}
	fputc(']', f);
}

/* Writes element i in the shortest decimal form that converts back to the
 * same bytes; returns 0 if there is none (odd NaNs). */
static int print_elem(FILE *f, DType dt, const uint8_t *d, size_t i)
{
	size_t sz = (size_t)dtype_bits(dt) / 8;
	uint8_t back[8];
	if (dt == DT_BOOL) {
		fputs(d[i] ? "true" : "false", f);
		return d[i] <= 1;
	}
	if (!dtype_is_float(dt)) {
		if (dt == DT_U64)
			fprintf(f, "%llu", (unsigned long long)tensor_get_i(dt, d, i));
		else
			fprintf(f, "%lld", (long long)tensor_get_i(dt, d, i));
		return dt != DT_U64 || tensor_get_i(dt, d, i) >= 0;
	}
	double x = tensor_get_f(dt, d, i);
	char buf[40];
	for (int prec = 1; prec <= 17; prec++) {
		if (isnan(x))
			snprintf(buf, sizeof buf, "nan");
		else if (isinf(x))
			snprintf(buf, sizeof buf, x < 0 ? "-inf" : "inf");
		else
			snprintf(buf, sizeof buf, "%.*g", prec, x);
		double y = isnan(x) ? NAN : isinf(x) ? x : strtod(buf, NULL);
		if (tensor_put(dt, back, 0, y, 0, 0) && memcmp(back, d + i * sz, sz) == 0) {
			fputs(buf, f);
			if (!strpbrk(buf, ".eni"))
				fputs(".0", f);
			return 1;
		}
		if (isnan(x) || isinf(x))
			break;
	}
	return 0;
}

static void print_hex(FILE *f, const uint8_t *d, size_t n)
{
	fputs("x\"", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", d[i]);
	fputc('"', f);
}

/* Small numeric tensors are written as numbers, everything else as hex;
 * a tensor is written as numbers only if every element survives. */
static void print_tensor_data(FILE *f, const Tensor *t)
{
	DType dt = (DType)t->type->dtype;
	int64_t n = type_numel(t->type);
	int scalar = t->type->rank == 0;
	if (dt == DT_STR) {
		if (!scalar)
			fputc('[', f);
		for (int64_t i = 0; i < n; i++) {
			if (i)
				fputs(", ", f);
			print_str(f, t->strs[i].s, t->strs[i].n);
		}
		if (!scalar)
			fputc(']', f);
		return;
	}
	if ((dtype_is_float(dt) || dtype_is_int(dt)) && n <= 64) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = xmemstream(&buf, &len);
		int ok = 1;
		if (!scalar)
			fputc('[', mf);
		for (int64_t i = 0; i < n && ok; i++) {
			if (i)
				fputs(", ", mf);
			ok = print_elem(mf, dt, t->data, (size_t)i);
		}
		if (!scalar)
			fputc(']', mf);
		fclose(mf);
		if (ok)
			fputs(buf, f);
		free(buf);
		if (ok)
			return;
	}
	print_hex(f, t->data, t->nbytes);
}

static const char *list_kind_name(uint8_t k)
{
	switch (k) {
	case A_INT: return "int";
	case A_FLOAT: return "float";
	case A_STR: return "string";
	case A_TENSOR: return "tensor";
	case A_GRAPH: return "graph";
	case A_TYPE: return "type";
	default: return NULL;
	}
}

static void print_arg(Printer *p, const Arg *a)
{
	FILE *f = p->f;
	switch ((ArgKind)a->kind) {
	case A_NONE: fputs("none", f); break;
	case A_INT: fprintf(f, "%lld", (long long)a->u.i); break;
	case A_FLOAT: print_double(f, a->u.f); break;
	case A_BOOL: fputs(a->u.i ? "true" : "false", f); break;
	case A_STR: print_str(f, a->u.s.s, a->u.s.n); break;
	case A_IDENT:
		if (sym_is_ident(a->u.sym))
			fputs(sym_str(a->u.sym), f);
		else
			print_str(f, sym_str(a->u.sym), sym_len(a->u.sym));
		break;
	case A_DTYPE: fputs(dtype_name((DType)a->u.i), f); break;
	case A_VALUE: print_value_name(f, p->m, a->u.v); break;
	case A_ATTRREF: print_sym_name(f, '@', a->u.sym); break;
	case A_PARAM: fprintf(f, "$%s", sym_str(a->u.sym)); break;
	case A_TYPE: fputs("type(", f); print_type(f, a->u.ty); fputc(')', f); break;
	case A_LIST:
		if (a->n == 0 && list_kind_name(a->elem)) {
			fprintf(f, "[:%s]", list_kind_name(a->elem));
			break;
		}
		fputc('[', f);
		for (uint32_t i = 0; i < a->n; i++) {
			if (i)
				fputs(", ", f);
			print_arg(p, &a->u.list[i]);
		}
		fputc(']', f);
		break;
	case A_TENSOR:
		fputs("tensor(", f);
		print_type(f, a->u.t->type);
		fputs(", ", f);
		print_tensor_data(f, a->u.t);
		fputc(')', f);
		break;
	case A_GRAPH:
		fputs("graph", f);
		print_graph_body(p, a->u.g);
		break;
	}
}

static void print_meta(FILE *f, const char *kw, const MetaProp *m, uint32_t n)
{
	fprintf(f, " %s(", kw);
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		print_str(f, m[i].key.s, m[i].key.n);
		fputs(": ", f);
		print_str(f, m[i].val.s, m[i].val.n);
	}
	fputc(')', f);
}

static void print_prov(FILE *f, const Prov *pv)
{
	if (pv->nscope || (!pv->file && !pv->trace.n && !pv->nmeta)) {
		fputs(" scope(", f);
		for (uint32_t i = 0; i < pv->nscope; i++) {
			if (i)
				fputs(", ", f);
			print_str(f, sym_str(pv->scope[i].path), sym_len(pv->scope[i].path));
			fputs(": ", f);
			print_str(f, sym_str(pv->scope[i].cls), sym_len(pv->scope[i].cls));
		}
		fputc(')', f);
	}
	if (pv->file) {
		fputs(" loc(", f);
		print_str(f, sym_str(pv->file), sym_len(pv->file));
		fprintf(f, ":%u", pv->line);
		if (pv->col)
			fprintf(f, ":%u", pv->col);
		fputc(')', f);
	}
	if (pv->trace.n) {
		fputs(" trace(", f);
		print_str(f, pv->trace.s, pv->trace.n);
		fputc(')', f);
	}
	if (pv->nmeta)
		print_meta(f, "meta", pv->meta, pv->nmeta);
}

static void print_node(Printer *p, const Node *n)
{
	FILE *f = p->f;
	const Module *m = p->m;
	int typed = 0;
	indent(p);
	for (uint32_t i = 0; i < n->nres; i++) {
		if (i)
			fputs(", ", f);
		if (n->res[i])
			print_value_name(f, m, n->res[i]);
		else
			fputc('_', f);
		typed |= n->res[i] && m->vals.v[n->res[i]].type;
	}
	if (n->nres)
		fputs(" = ", f);
	fwrite(sym_str(n->domain), 1, sym_len(n->domain), f);
	fputs("::", f);
	fwrite(sym_str(n->name), 1, sym_len(n->name), f);
	if (n->opset)
		fprintf(f, ".opset%u", n->opset);
	fputc('(', f);
	for (uint32_t i = 0; i < n->nargs; i++) {
		if (i)
			fputs(", ", f);
		print_arg(p, &n->args[i]);
	}
	for (uint32_t i = 0; i < n->nkw; i++) {
		if (i || n->nargs)
			fputs(", ", f);
		if (sym_test(n->kw[i].name, 4, is_kwname))
			fputs(sym_str(n->kw[i].name), f);
		else
			print_str(f, sym_str(n->kw[i].name), sym_len(n->kw[i].name));
		fputs(" = ", f);
		print_arg(p, &n->kw[i].val);
	}
	fputc(')', f);
	for (uint32_t i = 0; typed && i < n->nres; i++) {
		fputs(i ? ", " : " : ", f);
		print_type(f, n->res[i] ? m->vals.v[n->res[i]].type : NULL);
	}
	if (n->prov)
		print_prov(f, n->prov);
	if (n->node_name) {
		fputs(" name(", f);
		print_str(f, sym_str(n->node_name), sym_len(n->node_name));
		fputc(')', f);
	}
	if (n->doc.n) {
		fputs(" doc(", f);
		print_str(f, n->doc.s, n->doc.n);
		fputc(')', f);
	}
	fputc('\n', f);
}

static void print_init(Printer *p, ValueId id)
{
	const Value *v = &p->m->vals.v[id];
	indent(p);
	fputs(v->kind == VK_PARAM ? "param " : v->kind == VK_BUFFER ? "buffer " : "const ", p->f);
	print_value_name(p->f, p->m, id);
	fputs(": ", p->f);
	print_type(p->f, v->type);
	fputs(" = ", p->f);
	if (v->kind == VK_CONST)
		print_tensor_data(p->f, v->init);
	else
		print_str(p->f, sym_str(v->key), sym_len(v->key));
	if (v->prov)
		print_prov(p->f, v->prov);
	fputc('\n', p->f);
}

static void print_params(Printer *p, const Graph *g)
{
	fputc('(', p->f);
	for (uint32_t i = 0; i < g->nin; i++) {
		if (i)
			fputs(", ", p->f);
		print_value_name(p->f, p->m, g->in[i]);
		if (p->m->vals.v[g->in[i]].type) {
			fputs(": ", p->f);
			print_type(p->f, p->m->vals.v[g->in[i]].type);
		}
		if (p->m->vals.v[g->in[i]].init) {
			fputs(" = ", p->f);
			print_tensor_data(p->f, p->m->vals.v[g->in[i]].init);
		}
	}
	fputc(')', p->f);
}

static void print_outsig(Printer *p, const Graph *g)
{
	fputs(" -> (", p->f);
	for (uint32_t i = 0; i < g->nout; i++) {
		if (i)
			fputs(", ", p->f);
		print_type(p->f, g->out[i] ? p->m->vals.v[g->out[i]].type : NULL);
	}
	fputc(')', p->f);
}

/* Prints the nodes and the return, then the closing brace. */
static void print_block(Printer *p, const Graph *g, const OpsetVec *opsets)
{
	fputs(" {\n", p->f);
	p->ind++;
	for (uint32_t i = 0; opsets && i < opsets->n; i++) {
		indent(p);
		fprintf(p->f, "opset %s %lld\n", sym_str(opsets->v[i].domain), (long long)opsets->v[i].version);
	}
	for (uint32_t i = 0; i < g->inits.n; i++)
		print_init(p, g->inits.v[i]);
	for (const Node *n = g->first; n; n = n->next)
		print_node(p, n);
	indent(p);
	fputs("return ", p->f);
	if (g->nout != 1)
		fputc('(', p->f);
	for (uint32_t i = 0; i < g->nout; i++) {
		if (i)
			fputs(", ", p->f);
		print_value_name(p->f, p->m, g->out[i]);
	}
	if (g->nout != 1)
		fputc(')', p->f);
	fputc('\n', p->f);
	p->ind--;
	indent(p);
	fputc('}', p->f);
}

/* name(params) -> (types) meta(...) doc(...) { body } */
static void print_graph_head_and_body(Printer *p, const Graph *g)
{
	if (g->name)
		print_sym_name(p->f, '@', g->name);
	print_params(p, g);
	print_outsig(p, g);
	if (g->nmeta)
		print_meta(p->f, "meta", g->meta, g->nmeta);
	if (g->doc.n) {
		fputs(" doc(", p->f);
		print_str(p->f, g->doc.s, g->doc.n);
		fputc(')', p->f);
	}
	print_block(p, g, NULL);
}

static void print_graph_body(Printer *p, const Graph *g)
{
	if (g->name)
		fputc(' ', p->f);
	print_graph_head_and_body(p, g);
}

static void print_graph(Printer *p, const Graph *g)
{
	indent(p);
	fputs(g->name ? "graph " : "graph @\"\"", p->f);
	print_graph_head_and_body(p, g);
	fputc('\n', p->f);
}

static void print_func(Printer *p, const Func *fn)
{
	indent(p);
	fprintf(p->f, "func %s::%s", sym_str(fn->domain), sym_str(fn->name));
	print_params(p, fn->body);
	print_outsig(p, fn->body);
	if (fn->nattr) {
		fputs(" attrs(", p->f);
		for (uint32_t i = 0; i < fn->nattr; i++) {
			if (i)
				fputs(", ", p->f);
			if (sym_is_ident(fn->attrs[i]))
				fputs(sym_str(fn->attrs[i]), p->f);
			else
				print_str(p->f, sym_str(fn->attrs[i]), sym_len(fn->attrs[i]));
		}
		fputc(')', p->f);
	}
	print_block(p, fn->body, &fn->opsets);
	fputc('\n', p->f);
}

/* Binding levels of guard expressions: comparisons 1, + - 2, * / 3,
 * unary minus 4, indexing 5, operands 6.  An operand is parenthesized
 * when it binds more loosely than its place asks. */
static int gx_level(const GExpr *e)
{
	switch ((GExprKind)e->kind) {
	case GX_ADD: case GX_SUB: return 2;
	case GX_MUL: case GX_DIV: return 3;
	case GX_NEG: return 4;
	case GX_INDEX: return 5;
	case GX_LIT: case GX_PARAM: case GX_VALUE: case GX_LIST: case GX_FN: return 6;
	default: return 1;
	}
}

static void print_gexpr(Printer *p, const GExpr *e, int need)
{
	static const char *const ops[] = {
		[GX_ADD] = "+", [GX_SUB] = "-", [GX_MUL] = "*", [GX_DIV] = "/", [GX_EQ] = "==",
		[GX_NE] = "!=", [GX_LT] = "<", [GX_LE] = "<=", [GX_GT] = ">", [GX_GE] = ">=",
		[GX_IN] = "in", [GX_NOTIN] = "not in",
	};
	int lv = gx_level(e);
	if (lv < need)
		fputc('(', p->f);
	switch ((GExprKind)e->kind) {
	case GX_LIT: print_arg(p, &e->lit); break;
	case GX_PARAM: fprintf(p->f, "$%s", sym_str(e->name)); break;
	case GX_VALUE: print_sym_name(p->f, '%', e->name); break;
	case GX_NEG: fputc('-', p->f); print_gexpr(p, e->sub[0], 4); break;
	case GX_INDEX:
		print_gexpr(p, e->sub[0], 5);
		fputc('[', p->f);
		print_gexpr(p, e->sub[1], 1);
		fputc(']', p->f);
		break;
	case GX_LIST: case GX_FN:
		fprintf(p->f, "%s%c", e->kind == GX_FN ? guard_fn_name[e->fn] : "", e->kind == GX_FN ? '(' : '[');
		for (uint32_t i = 0; i < e->n; i++) {
			fputs(i ? ", " : "", p->f);
			print_gexpr(p, e->sub[i], 1);
		}
		fputc(e->kind == GX_FN ? ')' : ']', p->f);
		break;
	default:        /* binary: left-associative, comparisons not associative */
		print_gexpr(p, e->sub[0], lv == 1 ? 2 : lv);
		fprintf(p->f, " %s ", ops[e->kind]);
		print_gexpr(p, e->sub[1], lv == 1 ? 2 : lv + 1);
		break;
	}
	if (lv < need)
		fputc(')', p->f);
}

static void print_decomp(Printer *p, const Decomp *d)
{
	indent(p);
	fprintf(p->f, "decomp %s::%s(", sym_str(d->domain), sym_str(d->name));
	for (uint32_t i = 0, k = 0; i < d->nparam; i++) {
		const DParam *dp = &d->params[i];
		if (dp->defined)
			continue;
		fprintf(p->f, "%s%c%s", k++ ? ", " : "", dp->kind == DP_TENSOR ? '%' : '$', sym_str(dp->name));
		if (dp->has_default) {
			fputs(" = ", p->f);
			print_arg(p, &dp->deflt);
		}
	}
	fputc(')', p->f);
	for (uint32_t i = 0; i < d->nguard; i++) {
		const Guard *gd = &d->guards[i];
		fputs(i ? ", " : " where ", p->f);
		if (gd->def)
			fprintf(p->f, "$%s = ", sym_str(gd->def));
		print_gexpr(p, gd->e, 1);
	}
	print_block(p, d->body, NULL);
	fputc('\n', p->f);
}

void print_module(FILE *out, const Module *m)
{
	Printer p = { out, m, 1 };
	fputs("module ", out);
	if (m->name) {
		print_sym_name(out, '@', m->name);
		fputc(' ', out);
	}
	fputs("{\n", out);
	if (m->weights) {
		fputs("  weights ", out);
		print_str(out, sym_str(m->weights), sym_len(m->weights));
		fputc('\n', out);
	}
	for (uint32_t i = 0; i < m->opsets.n; i++)
		fprintf(out, "  opset %s %lld\n", sym_str(m->opsets.v[i].domain), (long long)m->opsets.v[i].version);
	if (m->nmeta) {
		fputs(" ", out);
		print_meta(out, "meta", m->meta, m->nmeta);
		fputc('\n', out);
	}
	if (m->doc.n) {
		fputs("  doc(", out);
		print_str(out, m->doc.s, m->doc.n);
		fputs(")\n", out);
	}
	for (uint32_t i = 0; i < m->graphs.n; i++)
		print_graph(&p, m->graphs.v[i]);
	for (uint32_t i = 0; i < m->funcs.n; i++)
		print_func(&p, m->funcs.v[i]);
	for (uint32_t i = 0; i < m->decomps.n; i++)
		print_decomp(&p, m->decomps.v[i]);
	fputs("}\n", out);
}
