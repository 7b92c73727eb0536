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

static int unescape(P *p, const unsigned char *s, const unsigned char *end, Str *out);

/* Decodes a "..." string whose opening quote is just behind l->cur.  A
 * string without escapes points into the source; one with escapes is
 * decoded into the scratch arena.  Either way a grammar action that keeps
 * it copies it.  A bad string is reported and still becomes a token (an
 * empty one), so one mistake makes one message. */
/* Bytes a string's fast loop must stop at: the quote, a backslash, a
 * newline, NUL (also the end sentinel) and every non-ASCII byte. */
static const unsigned char str_stop[256] = {
	[0] = 1, ['\n'] = 1, ['"'] = 1, ['\\'] = 1,
#define R16(b) [b] = 1, [b + 1] = 1, [b + 2] = 1, [b + 3] = 1, [b + 4] = 1, [b + 5] = 1, [b + 6] = 1, \
	[b + 7] = 1, [b + 8] = 1, [b + 9] = 1, [b + 10] = 1, [b + 11] = 1, [b + 12] = 1, [b + 13] = 1, [b + 14] = 1, [b + 15] = 1,
	R16(0x80) R16(0x90) R16(0xa0) R16(0xb0) R16(0xc0) R16(0xd0) R16(0xe0) R16(0xf0)
#undef R16
};

static void lex_string(P *p, const char *quote, Str *out)
{
	Lexer *l = &p->lex;
	const unsigned char *s = (const unsigned char *)l->cur, *end = (const unsigned char *)l->lim;
	const unsigned char *body = s;
	int escapes = 0, bad = 0;
	for (;;) {
		while (!str_stop[*s])   /* the buffer ends in NUL, which stops it */
			s++;
		if (s >= end || *s == '\n') {
			diag_error(loc_at(p, quote), "unterminated string");
			l->cur = (const char *)s;
			*out = (Str){ "", 0 };
			return;
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
		size_t k = *s ? utf8_len(s, end) : 0;
		if (k == 0 && !bad) {
			diag_error(loc_at(p, (const char *)s), *s ? "invalid UTF-8 in string" : "NUL byte in string");
			bad = 1;
		}
		s += k ? k : 1;
	}
	l->cur = (const char *)s + 1;
	if (bad || (escapes && !unescape(p, body, s, out)))
		*out = (Str){ "", 0 };
	else if (!escapes)
		*out = (Str){ (const char *)body, (uint32_t)(s - body) };
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
		l->cur = q < l->lim && *q == '"' ? q + 1 : q;
		*out = (Str){ "", 0 };
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
	/* Up to 18 digits cannot overflow: add them up directly. */
	if (e - s <= 18) {
		const char *c = s + (*s == '-');
		int64_t v = 0;
		for (; c < e; c++)
			v = v * 10 + (*c - '0');
		*out = *s == '-' ? -v : v;
		return 1;
	}
	char tmp[32];
	size_t n = (size_t)(e - s);
	*out = 0;
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
	*out = 0;
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

/* The raw scanner: one token per call, no error-recovery skipping. */
static int scan(P *p, YYSTYPE *lval, YYLTYPE *lloc)
{
	/* The cursor lives in a local so the DFA keeps it in a register; it is
	 * stored back before anything that reads the lexer state. */
	Lexer *l = &p->lex;
	const char *cur = l->cur, *lim = l->lim, *YYMARKER = NULL, *start;
	int tok;
loop:
	while (*cur == ' ')     /* the common separator, without the DFA */
		cur++;
	start = cur;
	/*!re2c
	re2c:api = custom;
	re2c:api:style = free-form;
	re2c:define:YYCTYPE = "unsigned char";
	re2c:define:YYPEEK = "(unsigned char)*cur";
	re2c:define:YYSKIP = "++cur;";
	re2c:define:YYBACKUP = "YYMARKER = cur;";
	re2c:define:YYRESTORE = "cur = YYMARKER;";
	re2c:define:YYLESSTHAN = "cur >= lim";
	re2c:yyfill:enable = 0;
	re2c:eof = 0;

	ident = [A-Za-z_][A-Za-z0-9_]* ("." [A-Za-z_0-9]+)*;
	dotted = [A-Za-z_][A-Za-z0-9_]* ("." [A-Za-z_][A-Za-z0-9_]*)*;
	digits = [0-9]+;
	exp = [eE] [+-]? digits;

	$ { l->cur = cur; set_loc(p, lloc, start); return 0; }
	"\n" { l->line++; l->bol = cur; goto loop; }
	[ \t\r]+ { goto loop; }
	"//" [^\n\x00]* {
		for (const unsigned char *c = (const unsigned char *)start; c < (const unsigned char *)cur;) {
			size_t k = utf8_len(c, (const unsigned char *)cur);
			if (!k) {
				diag_error(loc_at(p, (const char *)c), "invalid UTF-8 in comment");
				break;
			}
			c += k;
		}
		goto loop;
	}

	"%" [A-Za-z0-9_.]+ { lval->sym = sym_intern(start + 1, (size_t)(cur - start - 1)); tok = VALNAME; goto done; }
	"%\"" { Str s; l->cur = cur; lex_string(p, start + 1, &s); cur = l->cur; lval->sym = sym_intern(s.s, s.n); tok = VALNAME; goto done; }
	"@" ident { lval->sym = sym_intern(start + 1, (size_t)(cur - start - 1)); tok = SYMNAME; goto done; }
	"@\"" { Str s; l->cur = cur; lex_string(p, start + 1, &s); cur = l->cur; lval->sym = sym_intern(s.s, s.n); tok = SYMNAME; goto done; }
	"$" ident { lval->sym = sym_intern(start + 1, (size_t)(cur - start - 1)); tok = PARAMNAME; goto done; }
	dotted "::" ident { lex_opname(start, cur, &lval->op); tok = OPNAME; goto done; }

	"-"? digits { lex_int(p, start, cur, &lval->i); tok = INT; goto done; }
	"-"? digits "." [0-9]* exp? | "-"? digits exp {
		lex_float(p, start, cur, &lval->f);
		tok = FLOAT; goto done;
	}
	"inf" { lval->f = INFINITY; tok = FLOAT; goto done; }
	"-inf" { lval->f = -INFINITY; tok = FLOAT; goto done; }
	"nan" { lval->f = NAN; tok = FLOAT; goto done; }
	"\"" { l->cur = cur; lex_string(p, start, &lval->str); cur = l->cur; tok = STRING; goto done; }
	"x\"" { l->cur = cur; lex_hex(p, start, &lval->str); cur = l->cur; tok = HEXSTR; goto done; }

	"->" { tok = ARROW; goto done; }
	"==" { tok = EQEQ; goto done; }
	"!=" { tok = NEQ; goto done; }
	"_" { tok = UNDERSCORE; goto done; }
	[(){}[\],=:<>?] { tok = (unsigned char)*start; goto done; }

	/* Keywords and dtype names are matched here, before ident: re2c
	 * prefers the longest match, then the first rule. */
	"module" { tok = KW_MODULE; goto done; }
	"graph" { tok = KW_GRAPH; goto done; }
	"func" { tok = KW_FUNC; goto done; }
	"decomp" { tok = KW_DECOMP; goto done; }
	"weights" { tok = KW_WEIGHTS; goto done; }
	"opset" { tok = KW_OPSET; goto done; }
	"param" { tok = KW_PARAM; goto done; }
	"buffer" { tok = KW_BUFFER; goto done; }
	"const" { tok = KW_CONST; goto done; }
	"return" { tok = KW_RETURN; goto done; }
	"where" { tok = KW_WHERE; goto done; }
	"none" { tok = KW_NONE; goto done; }
	"true" { tok = KW_TRUE; goto done; }
	"false" { tok = KW_FALSE; goto done; }
	"tensor" { tok = KW_TENSOR; goto done; }
	"seq" { tok = KW_SEQ; goto done; }
	"opt" { tok = KW_OPT; goto done; }
	"scope" { tok = KW_SCOPE; goto done; }
	"loc" { tok = KW_LOC; goto done; }
	"trace" { tok = KW_TRACE; goto done; }
	"name" { tok = KW_NAME; goto done; }
	"doc" { tok = KW_DOC; goto done; }
	"meta" { tok = KW_META; goto done; }
	"attrs" { tok = KW_ATTRS; goto done; }
	"type" { tok = KW_TYPE; goto done; }
	"f32" { lval->i = DT_F32; tok = DTYPE; goto done; }
	"u8" { lval->i = DT_U8; tok = DTYPE; goto done; }
	"i8" { lval->i = DT_I8; tok = DTYPE; goto done; }
	"u16" { lval->i = DT_U16; tok = DTYPE; goto done; }
	"i16" { lval->i = DT_I16; tok = DTYPE; goto done; }
	"i32" { lval->i = DT_I32; tok = DTYPE; goto done; }
	"i64" { lval->i = DT_I64; tok = DTYPE; goto done; }
	"str" { lval->i = DT_STR; tok = DTYPE; goto done; }
	"bool" { lval->i = DT_BOOL; tok = DTYPE; goto done; }
	"f16" { lval->i = DT_F16; tok = DTYPE; goto done; }
	"f64" { lval->i = DT_F64; tok = DTYPE; goto done; }
	"u32" { lval->i = DT_U32; tok = DTYPE; goto done; }
	"u64" { lval->i = DT_U64; tok = DTYPE; goto done; }
	"c64" { lval->i = DT_C64; tok = DTYPE; goto done; }
	"c128" { lval->i = DT_C128; tok = DTYPE; goto done; }
	"bf16" { lval->i = DT_BF16; tok = DTYPE; goto done; }
	"f8e4m3fn" { lval->i = DT_F8E4M3FN; tok = DTYPE; goto done; }
	"f8e4m3fnuz" { lval->i = DT_F8E4M3FNUZ; tok = DTYPE; goto done; }
	"f8e5m2" { lval->i = DT_F8E5M2; tok = DTYPE; goto done; }
	"f8e5m2fnuz" { lval->i = DT_F8E5M2FNUZ; tok = DTYPE; goto done; }
	"u4" { lval->i = DT_U4; tok = DTYPE; goto done; }
	"i4" { lval->i = DT_I4; tok = DTYPE; goto done; }
	"f4e2m1" { lval->i = DT_F4E2M1; tok = DTYPE; goto done; }
	"f8e8m0" { lval->i = DT_F8E8M0; tok = DTYPE; goto done; }
	ident { lval->sym = sym_intern(start, (size_t)(cur - start)); tok = IDENT; goto done; }
	* {
		unsigned char c = (unsigned char)*start;
		if (c == 0)
			diag_error(loc_at(p, start), "unexpected NUL byte");
		else if (c >= 0x80 && !utf8_len((const unsigned char *)start, (const unsigned char *)lim))
			diag_error(loc_at(p, start), "invalid UTF-8");
		else if (c >= 0x80)
			diag_error(loc_at(p, start), "unexpected character outside a string");
		else if (c >= 0x20 && c < 0x7f)
			diag_error(loc_at(p, start), "unexpected character '%c'", c);
		else
			diag_error(loc_at(p, start), "unexpected character 0x%02x", c);
		if (c >= 0x80) {
			size_t k = utf8_len((const unsigned char *)start, (const unsigned char *)lim);
			cur = start + (k ? k : 1);
		}
		if (diag_too_many()) { l->cur = cur; set_loc(p, lloc, start); return 0; }
		goto loop;
	}
	*/
done:
	l->cur = cur;
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
		l->last_tok = tok;
		if (!p->skipping || tok == 0)
			return tok;
		if (tok == '}' && p->skip_depth == 0)
			return p->skipping = 0, tok;
		if (p->skip_depth == 0 && lex_first_on_line(p, lloc))
			return p->skipping = 0, tok;
		if (tok == '{')
			p->skip_depth++;
		else if (tok == '}')
			p->skip_depth--;
	}
}

/* Only blanks stand before the token on its line.  Asked only around
 * syntax errors, so it looks back instead of keeping count per token. */
int lex_first_on_line(P *p, const YYLTYPE *lloc)
{
	const char *at = p->lex.bol + lloc->first_column - 1;
	if ((uint32_t)lloc->first_line != p->lex.line)
		return 1;       /* not the last token read: cannot tell, say yes */
	for (const char *c = p->lex.bol; c < at; c++)
		if (*c != ' ' && *c != '\t' && *c != '\r')
			return 0;
	return 1;
}
