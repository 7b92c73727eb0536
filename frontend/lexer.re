/* lexer.re - the .fxir lexer (re2c, reentrant: all state is in Lexer).
 *
 * The buffer must hold a NUL at text[len]; an embedded NUL is an error, not
 * the end.  Strings and hex strings are decoded by hand after the opening
 * quote so that escapes and UTF-8 are checked in one place. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "frontend.h"
#include "parser.h"

static Loc loc_at(P *p, const char *at)
{
	Lexer *l = &p->lex;
	return (Loc){ p->file, l->line, (uint32_t)(at - l->bol) + 1 };
}

static void set_loc(P *p, YYLTYPE *lloc, const char *start)
{
	Lexer *l = &p->lex;
	lloc->first_line = lloc->last_line = (int)l->line;
	lloc->first_column = (int)(start - l->bol) + 1;
	lloc->last_column = (int)(l->cur - l->bol);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes a "..." string whose opening quote is just behind l->cur.  A
 * string without escapes points into the source; one with escapes is
 * decoded into the scratch arena.  Either way a grammar action that keeps
 * it copies it.  Returns 0 and reports if it is unterminated or invalid. */
static int unescape(P *p, const unsigned char *s, const unsigned char *end, Str *out);

static int lex_string(P *p, const char *quote, Str *out)
{
	Lexer *l = &p->lex;
	const unsigned char *s = (const unsigned char *)l->cur, *end = (const unsigned char *)l->lim;
	const unsigned char *body = s;
	int escapes = 0;
	for (;;) {
		if (s >= end || *s == '\n') {
			diag_error(loc_at(p, quote), "unterminated string");
			l->cur = (const char *)s;
			return 0;
		}
		if (*s == '"')
			break;
		if (*s == '\\') {
			escapes = 1;
			if (s + 1 < end && s[1] != '\n')
				s++;
			s++;
			continue;
		}
		size_t k = *s < 0x80 ? 1 : utf8_len(s, end);
		if (k == 0 || *s == 0) {
			diag_error(loc_at(p, (const char *)s), *s ? "invalid UTF-8 in string" : "NUL byte in string");
			l->cur = (const char *)s + 1;
			return 0;
		}
		s += k;
	}
	l->cur = (const char *)s + 1;
	if (!escapes) {
		*out = (Str){ (const char *)body, (uint32_t)(s - body) };
		return 1;
	}
	return unescape(p, body, s, out);
}

/* The escapes: \n \t \r \" \\ \xHH. */
static int unescape(P *p, const unsigned char *s, const unsigned char *end, Str *out)
{
	char *buf = arena_alloc(&p->t, (size_t)(end - s) + 1);
	size_t n = 0;
	while (s < end) {
		if (*s != '\\') {
			buf[n++] = (char)*s++;
			continue;
		}
		int c = s[1], v;
		switch (c) {
		case 'n': buf[n++] = '\n'; break;
		case 't': buf[n++] = '\t'; break;
		case 'r': buf[n++] = '\r'; break;
		case '"': buf[n++] = '"'; break;
		case '\\': buf[n++] = '\\'; break;
		case 'x':
			if (s + 3 < end && (v = hexval(s[2])) >= 0 && hexval(s[3]) >= 0) {
				buf[n++] = (char)(v * 16 + hexval(s[3]));
				s += 4;
				continue;
			}
			/* fallthrough */
		default:
			diag_error(loc_at(p, (const char *)s), "invalid escape sequence in string");
			return 0;
		}
		s += 2;
	}
	*out = (Str){ buf, (uint32_t)n };
	return 1;
}

/* x"0a1b..." : pairs of hex digits, white space not allowed. */
static int lex_hex(P *p, const char *start, Str *out)
{
	Lexer *l = &p->lex;
	const char *s = l->cur, *q = s;
	while (q < l->lim && hexval((unsigned char)*q) >= 0)
		q++;
	if (q >= l->lim || *q != '"' || (q - s) % 2) {
		diag_error(loc_at(p, start), "malformed hex string: expected pairs of hex digits and a closing quote");
		l->cur = q < l->lim ? q + 1 : q;
		return 0;
	}
	size_t n = (size_t)(q - s) / 2;
	char *buf = arena_alloc(&p->t, n + 1);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(hexval((unsigned char)s[2 * i]) * 16 + hexval((unsigned char)s[2 * i + 1]));
	*out = (Str){ buf, (uint32_t)n };
	l->cur = q + 1;
	return 1;
}

static int lex_int(P *p, const char *s, const char *e, int64_t *out)
{
	char tmp[32];
	size_t n = (size_t)(e - s);
	if (n >= sizeof tmp) {
		diag_error(loc_at(p, s), "integer literal out of range");
		return 0;
	}
	memcpy(tmp, s, n);
	tmp[n] = 0;
	errno = 0;
	long long v = strtoll(tmp, NULL, 10);
	if (errno == ERANGE) {
		diag_error(loc_at(p, s), "integer literal out of range");
		return 0;
	}
	*out = v;
	return 1;
}

static int lex_float(P *p, const char *s, const char *e, double *out)
{
	char tmp[512];
	size_t n = (size_t)(e - s);
	if (n >= sizeof tmp) {
		diag_error(loc_at(p, s), "float literal too long");
		return 0;
	}
	memcpy(tmp, s, n);
	tmp[n] = 0;
	errno = 0;
	double v = strtod(tmp, NULL);
	if (errno == ERANGE && isinf(v)) {
		diag_error(loc_at(p, s), "float literal out of range");
		return 0;
	}
	*out = v;
	return 1;
}

/* Splits "dom.ain::na.me" into the two interned halves. */
static void lex_opname(const char *s, const char *e, OpName *out)
{
	const char *c = s;
	while (!(c[0] == ':' && c[1] == ':'))
		c++;
	out->dom = sym_intern(s, (size_t)(c - s));
	const char *n = c + 2;
	size_t len = (size_t)(e - n);
	/* aten::op.default is spelled aten::op */
	if (len > 8 && memcmp(e - 8, ".default", 8) == 0)
		len -= 8;
	out->name = sym_intern(n, len);
}

/* Keywords and dtype names, found by their interned Sym: the identifier
 * is interned anyway, so one hash lookup classifies it. */
enum { KWMAP = 128 };
static struct { Sym sym; int tok; int64_t dtype; } kwmap[KWMAP];

static void kw_add(const char *w, int tok, int64_t dt)
{
	Sym s = sym_cstr(w);
	uint32_t h = (s * 2654435761u) & (KWMAP - 1);
	while (kwmap[h].sym)
		h = (h + 1) & (KWMAP - 1);
	kwmap[h].sym = s;
	kwmap[h].tok = tok;
	kwmap[h].dtype = dt;
}

static void kw_init(void)
{
	static const struct { const char *w; int tok; } kw[] = {
		{ "module", KW_MODULE }, { "graph", KW_GRAPH }, { "func", KW_FUNC },
		{ "decomp", KW_DECOMP }, { "weights", KW_WEIGHTS }, { "opset", KW_OPSET },
		{ "param", KW_PARAM }, { "buffer", KW_BUFFER }, { "const", KW_CONST },
		{ "return", KW_RETURN }, { "where", KW_WHERE }, { "none", KW_NONE },
		{ "true", KW_TRUE }, { "false", KW_FALSE }, { "tensor", KW_TENSOR },
		{ "seq", KW_SEQ }, { "opt", KW_OPT }, { "scope", KW_SCOPE },
		{ "loc", KW_LOC }, { "trace", KW_TRACE }, { "name", KW_NAME },
		{ "doc", KW_DOC }, { "meta", KW_META }, { "attrs", KW_ATTRS },
		{ "type", KW_TYPE },
	};
	for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
		kw_add(kw[i].w, kw[i].tok, 0);
	for (int t = 1; t < DT_COUNT; t++)
		kw_add(dtype_name((DType)t), DTYPE, t);
}

/* The token for an identifier: a keyword, a dtype or IDENT. */
static int classify(Sym s, YYSTYPE *lval)
{
	static int ready;
	if (!ready) {
		kw_init();
		ready = 1;
	}
	for (uint32_t h = (s * 2654435761u) & (KWMAP - 1); kwmap[h].sym; h = (h + 1) & (KWMAP - 1))
		if (kwmap[h].sym == s) {
			lval->i = kwmap[h].dtype;
			return kwmap[h].tok;
		}
	lval->sym = s;
	return IDENT;
}

/* The raw scanner: one token per call, no error-recovery skipping. */
static int scan(P *p, YYSTYPE *lval, YYLTYPE *lloc)
{
	Lexer *l = &p->lex;
	const char *YYMARKER = NULL, *start;
	int tok;
loop:
	start = l->tok = l->cur;
	/*!re2c
	re2c:api = custom;
	re2c:api:style = free-form;
	re2c:define:YYCTYPE = "unsigned char";
	re2c:define:YYPEEK = "(unsigned char)*l->cur";
	re2c:define:YYSKIP = "++l->cur;";
	re2c:define:YYBACKUP = "YYMARKER = l->cur;";
	re2c:define:YYRESTORE = "l->cur = YYMARKER;";
	re2c:define:YYLESSTHAN = "l->cur >= l->lim";
	re2c:yyfill:enable = 0;
	re2c:eof = 0;

	ident = [A-Za-z_][A-Za-z0-9_]* ("." [A-Za-z_0-9]+)*;
	dotted = [A-Za-z_][A-Za-z0-9_]* ("." [A-Za-z_][A-Za-z0-9_]*)*;
	digits = [0-9]+;
	exp = [eE] [+-]? digits;

	$ { set_loc(p, lloc, start); return 0; }
	"\n" { l->line++; l->bol = l->cur; goto loop; }
	[ \t\r]+ { goto loop; }
	"//" [^\n\x00]* {
		for (const unsigned char *c = (const unsigned char *)start; c < (const unsigned char *)l->cur;) {
			size_t k = utf8_len(c, (const unsigned char *)l->cur);
			if (!k) {
				diag_error(loc_at(p, (const char *)c), "invalid UTF-8 in comment");
				break;
			}
			c += k;
		}
		goto loop;
	}

	"%" [A-Za-z0-9_.]+ { lval->sym = sym_intern(start + 1, (size_t)(l->cur - start - 1)); tok = VALNAME; goto done; }
	"%\"" { Str s; if (!lex_string(p, start + 1, &s)) goto loop; lval->sym = sym_intern(s.s, s.n); tok = VALNAME; goto done; }
	"@" ident { lval->sym = sym_intern(start + 1, (size_t)(l->cur - start - 1)); tok = SYMNAME; goto done; }
	"@\"" { Str s; if (!lex_string(p, start + 1, &s)) goto loop; lval->sym = sym_intern(s.s, s.n); tok = SYMNAME; goto done; }
	"$" ident { lval->sym = sym_intern(start + 1, (size_t)(l->cur - start - 1)); tok = PARAMNAME; goto done; }
	dotted "::" ident { lex_opname(start, l->cur, &lval->op); tok = OPNAME; goto done; }

	"-"? digits { if (!lex_int(p, start, l->cur, &lval->i)) goto loop; tok = INT; goto done; }
	"-"? digits "." [0-9]* exp? | "-"? digits exp {
		if (!lex_float(p, start, l->cur, &lval->f)) goto loop;
		tok = FLOAT; goto done;
	}
	"inf" { lval->f = INFINITY; tok = FLOAT; goto done; }
	"-inf" { lval->f = -INFINITY; tok = FLOAT; goto done; }
	"nan" { lval->f = NAN; tok = FLOAT; goto done; }
	"\"" { if (!lex_string(p, start, &lval->str)) goto loop; tok = STRING; goto done; }
	"x\"" { if (!lex_hex(p, start, &lval->str)) goto loop; tok = HEXSTR; goto done; }

	"->" { tok = ARROW; goto done; }
	"==" { tok = EQEQ; goto done; }
	"!=" { tok = NEQ; goto done; }
	"_" { tok = UNDERSCORE; goto done; }
	[(){}[\],=:<>?] { tok = (unsigned char)*start; goto done; }

	ident { tok = classify(sym_intern(start, (size_t)(l->cur - start)), lval); goto done; }
	* {
		unsigned char c = (unsigned char)*start;
		if (c == 0)
			diag_error(loc_at(p, start), "unexpected NUL byte");
		else if (c >= 0x80 && !utf8_len((const unsigned char *)start, (const unsigned char *)l->lim))
			diag_error(loc_at(p, start), "invalid UTF-8");
		else if (c >= 0x80)
			diag_error(loc_at(p, start), "unexpected character outside a string");
		else if (c >= 0x20 && c < 0x7f)
			diag_error(loc_at(p, start), "unexpected character '%c'", c);
		else
			diag_error(loc_at(p, start), "unexpected character 0x%02x", c);
		if (c >= 0x80) {
			size_t k = utf8_len((const unsigned char *)start, (const unsigned char *)l->lim);
			l->cur = start + (k ? k : 1);
		}
		if (diag_too_many()) { set_loc(p, lloc, start); return 0; }
		goto loop;
	}
	*/
done:
	set_loc(p, lloc, start);
	return tok;
}

/* After a syntax error the lexer drops the rest of the broken statement:
 * tokens on the error's line and everything inside braces opened there (so
 * a broken graph header skips its whole body).  It resumes at the first
 * token of a later line, or at a `}` that closes the enclosing block. */
int yylex(YYSTYPE *lval, YYLTYPE *lloc, P *p)
{
	Lexer *l = &p->lex;
	for (;;) {
		if (diag_too_many())
			return 0;
		int tok = scan(p, lval, lloc);
		l->first_on_line = l->line != l->prev_line;
		l->prev_line = l->line;
		l->last_tok = tok;
		if (!p->skipping || tok == 0)
			return tok;
		if (tok == '}' && p->skip_depth == 0)
			return p->skipping = 0, tok;
		if (p->skip_depth == 0 && l->first_on_line)
			return p->skipping = 0, tok;
		if (tok == '{')
			p->skip_depth++;
		else if (tok == '}')
			p->skip_depth--;
	}
}
