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

static Loc loc_at(Parser *p, const char *at)
{
	Lexer *l = &p->lex;
	return (Loc){ p->file, l->line, (uint32_t)(at - l->bol) + 1 };
}

static void set_loc(Parser *p, YYLTYPE *lloc, const char *start)
{
	Lexer *l = &p->lex;
	lloc->first_line = (int)l->line;
	lloc->first_column = (int)(start - l->bol) + 1;
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

static int unescape(Parser *p, const unsigned char *s, const unsigned char *end, Str *out);

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

static void lex_string(Parser *p, const char *quote, Str *out)
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
static int unescape(Parser *p, const unsigned char *s, const unsigned char *end, Str *out)
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
static int lex_hex(Parser *p, const char *start, Str *out)
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

static int lex_int(Parser *p, const char *s, const char *e, int64_t *out)
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

/* Decimals like 0.5 or -1.25e-3 whose digits fit in 15 places, scaled by
 * at most 10^22: the digits and the power of ten are exact doubles, so one
 * multiplication or division gives the correctly rounded value, as strtod
 * would. */
static int small_decimal(const char *s, const char *e, double *out)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
					 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
	int neg = *s == '-', digits = 0, scale = 0;
	int64_t m = 0;
	const char *c = s + neg;
	for (; c < e && (unsigned char)*c - '0' < 10u && digits < 16; c++, digits++)
		m = m * 10 + (*c - '0');
	if (c < e && *c == '.')
		for (c++; c < e && (unsigned char)*c - '0' < 10u && digits < 16; c++, digits++, scale--)
			m = m * 10 + (*c - '0');
	if (digits > 15)        /* more digits than a double holds exactly */
		return 0;
	if (c < e) {            /* the exponent: [eE][+-]?digits */
		int eneg = 0, x = 0;
		c++;
		if (*c == '+' || *c == '-')
			eneg = *c++ == '-';
		for (; c < e && x < 1000; c++)
			x = x * 10 + (*c - '0');
		if (c < e)
			return 0;
		scale += eneg ? -x : x;
	}
	if (scale < -22 || scale > 22)
		return 0;
	double v = (double)m;
	v = scale < 0 ? v / pow10[-scale] : v * pow10[scale];
	*out = neg ? -v : v;
	return 1;
}

static int lex_float(Parser *p, const char *s, const char *e, double *out)
{
	if (small_decimal(s, e, out))
		return 1;
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

/* ---- fast paths ----------------------------------------------------------
 * Tensor types and the scope/loc trailers are on nearly every line of an
 * exported model, and spelled as a dozen tokens each they cost most of the
 * parse.  In their plain shape (on one line, no comments, strings without
 * escapes or non-ASCII bytes, integers of at most 18 digits) the lexer reads
 * each as one token: TTYPE, SCOPE, LOCATION.  Anything else is left to the
 * grammar token by token, which accepts the same language and is where
 * unusual spellings and mistakes are reported.  A fast path therefore
 * commits only once it has seen the whole construct, and reports nothing
 * before that. */

static int scan(Parser *p, YYSTYPE *lval, YYLTYPE *lloc);

static const char *blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static int is_ident_start(unsigned char c) { return (c | 0x20) - 'a' < 26u || c == '_'; }
static int is_ident_char(unsigned char c) { return is_ident_start(c) || c - '0' < 10u; }

/* [A-Za-z_][A-Za-z0-9_]* ("." [A-Za-z_0-9]+)*: the lexer's `ident`. */
static const char *ident_end(const char *s)
{
	while (is_ident_char((unsigned char)*s) || (*s == '.' && is_ident_char((unsigned char)s[1])))
		s++;
	return s;
}

/* The token the scanner reads at `at`, as if the lexer stood there. */
static int scan_at(Parser *p, const char *at, YYSTYPE *v)
{
	YYLTYPE ll;
	const char *keep = p->lex.cur;
	p->lex.cur = at;
	int tok = scan(p, v, &ll);
	p->lex.cur = keep;
	return tok;
}

/* A plain string "..." at s: its body, and the end past the closing quote. */
static const char *plain_string(const char *s, Str *out)
{
	if (*s != '"')
		return NULL;
	const char *b = ++s;
	while (!str_stop[(unsigned char)*s])
		s++;
	if (*s != '"')
		return NULL;
	*out = (Str){ b, (uint32_t)(s - b) };
	return s + 1;
}

/* At most 18 digits, so the value cannot overflow; longer numbers take
 * the slow path, which reports the ones past INT64_MAX. */
static const char *plain_uint(const char *s, int64_t *out)
{
	int64_t v = 0;
	const char *b = s;
	while ((unsigned char)*s - '0' < 10u && s - b < 18)
		v = v * 10 + (*s++ - '0');
	*out = v;
	return s > b && (unsigned char)*s - '0' >= 10u ? s : NULL;
}

/* The text at `at` starts with `last`, the spelling of the previous
 * construct of its kind: then it is that construct again, ending at the same
 * offset, since a fast path's extent depends only on the bytes it read. */
static int repeats(Parser *p, const char *at, Str last)
{
	return last.n && (size_t)(p->lex.lim - at) >= last.n && memcmp(at, last.s, last.n) == 0;
}

/* Characters a `[dims]` list may hold on the fast path. */
static const unsigned char dims_char[256] = {
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
	[' '] = 1, ['\t'] = 1, [','] = 1, ['?'] = 1, ['_'] = 1, ['.'] = 1,
#define L13(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1, [c + 4] = 1, [c + 5] = 1, [c + 6] = 1, \
	[c + 7] = 1, [c + 8] = 1, [c + 9] = 1, [c + 10] = 1, [c + 11] = 1, [c + 12] = 1,
	L13('a') L13('n') L13('A') L13('N')
#undef L13
};

/* The dims of `[...]` at s (past the '['), each an integer, a name or ?. */
static int plain_dims(Parser *p, const char *s, DimVec *dims)
{
	s = blanks(s);
	if (*s == ']')
		return 1;
	for (;;) {
		if (dims->n == dims->cap)
			return 0;
		if (*s == '?') {
			dims->v[dims->n++] = (Dim){ -1, 0 };
			s++;
		} else if (is_ident_start((unsigned char)*s)) {
			const char *e = ident_end(s);
			YYSTYPE v;
			if (scan_at(p, s, &v) != IDENT)   /* a keyword or dtype */
				return 0;
			dims->v[dims->n++] = (Dim){ -1, v.sym };
			s = e;
		} else {
			int64_t v;
			if (!(s = plain_uint(s, &v)))
				return 0;
			dims->v[dims->n++] = (Dim){ v, 0 };
		}
		s = blanks(s);
		if (*s == ']')
			return 1;
		if (*s != ',')
			return 0;
		s = blanks(s + 1);
	}
}

/* `[dims]` right after a dtype (lval->i; the dtype's text starts at start). */
static int fast_type(Parser *p, const char *start, const char **curp, YYSTYPE *lval)
{
	if (repeats(p, start, p->last_type)) {
		lval->type = p->last_type_val;
		*curp = start + p->last_type.n;
		return 1;
	}
	const char *e = *curp + 1;
	while (dims_char[(unsigned char)*e])
		e++;
	if (*e != ']')
		return 0;
	void **memo = b_memo(p, start, (uint32_t)(e + 1 - start));
	if (!*memo) {
		Dim d[64];
		DimVec dims = { d, 0, 64 };
		if (!plain_dims(p, *curp + 1, &dims))
			return 0;
		*memo = b_tensor_type(p, lval->i, &dims, 1);
	}
	lval->type = p->last_type_val = *memo;
	p->last_type = (Str){ start, (uint32_t)(e + 1 - start) };
	*curp = e + 1;
	return 1;
}

/* scope("path": "class", ...) after the keyword. */
static int fast_scope(Parser *p, const char **curp, YYSTYPE *lval)
{
	Str str[64];
	uint32_t n = 0;
	const char *open = *curp, *s = blanks(open + 1);
	if (repeats(p, open, p->last_scope)) {    /* a run of nodes from one module */
		lval->scopes = p->last_scopes;
		*curp = open + p->last_scope.n;
		return 1;
	}
	if (*s != ')')
		for (;;) {
			if (n == 64 || !(s = plain_string(s, &str[n])))
				return 0;
			if (*(s = blanks(s)) != ':' || !(s = plain_string(blanks(s + 1), &str[n + 1])))
				return 0;
			n += 2;
			s = blanks(s);
			if (*s == ')')
				break;
			if (*s != ',')
				return 0;
			s = blanks(s + 1);
		}
	uint32_t len = (uint32_t)(s + 1 - open);
	*curp = s + 1;
	void **memo = b_memo(p, open, len);
	if (!*memo) {
		ScopeEntry e[32];
		for (uint32_t i = 0; i < n; i += 2)
			e[i / 2] = (ScopeEntry){ sym_intern(str[i].s, str[i].n), sym_intern(str[i + 1].s, str[i + 1].n) };
		ScopeVec *v = ARENA_NEW(&p->pa, ScopeVec);
		v->n = v->cap = n / 2;
		v->v = n ? b_scope_shared(p, e, n / 2) : NULL;
		*memo = v;
	}
	lval->scopes = p->last_scopes = *memo;
	p->last_scope = (Str){ open, len };
	return 1;
}

/* loc("file": line) or loc("file": line: col) after the keyword. */
static int fast_loc(Parser *p, const char **curp, YYSTYPE *lval)
{
	Str file;
	int64_t line, col = 0;
	const char *s = plain_string(blanks(*curp + 1), &file);
	if (!s || *(s = blanks(s)) != ':' || !(s = plain_uint(blanks(s + 1), &line)))
		return 0;
	if (*(s = blanks(s)) == ':' && !(s = plain_uint(blanks(s + 1), &col)))
		return 0;
	if (*(s = blanks(s)) != ')')
		return 0;
	if (!p->last_file.s || file.n != p->last_file.n || memcmp(file.s, p->last_file.s, file.n) != 0) {
		p->last_file = file;
		p->last_file_sym = sym_intern(file.s, file.n);
	}
	lval->loc = (LocTok){ p->last_file_sym, line > UINT32_MAX ? 0 : (uint32_t)line, col > UINT32_MAX ? 0 : (uint32_t)col };
	*curp = s + 1;
	return 1;
}

/* The raw scanner: one token per call, no error-recovery skipping. */
static int scan(Parser *p, YYSTYPE *lval, YYLTYPE *lloc)
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

	"%" [A-Za-z0-9_.]+ { lval->sym = sym_intern(start + 1, (size_t)(cur - start - 1)); tok = VALNAME; goto assign; }
	"%\"" { Str s; l->cur = cur; lex_string(p, start + 1, &s); cur = l->cur; lval->sym = sym_intern(s.s, s.n); tok = VALNAME; goto done; }
	"@" ident { lval->sym = sym_intern(start + 1, (size_t)(cur - start - 1)); tok = SYMNAME; goto done; }
	"@\"" { Str s; l->cur = cur; lex_string(p, start + 1, &s); cur = l->cur; lval->sym = sym_intern(s.s, s.n); tok = SYMNAME; goto done; }
	"$" ident { lval->sym = sym_intern(start + 1, (size_t)(cur - start - 1)); tok = PARAMNAME; goto done; }
	dotted "::" ident {
		lex_opname(start, cur, &lval->op);
		tok = *cur == '(' && p->fast ? (cur++, CALL) : OPNAME;
		goto done;
	}

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
	"<=" { tok = LEQ; goto done; }
	">=" { tok = GEQ; goto done; }
	"_" { tok = UNDERSCORE; goto done; }
	[(){}[\],=:<>?+*/-] { tok = (unsigned char)*start; goto done; }

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
	"scope" { tok = *cur == '(' && p->fast && fast_scope(p, &cur, lval) ? SCOPE : KW_SCOPE; goto done; }
	"loc" { tok = *cur == '(' && p->fast && fast_loc(p, &cur, lval) ? LOCATION : KW_LOC; goto done; }
	"trace" { tok = KW_TRACE; goto done; }
	"name" { tok = KW_NAME; goto done; }
	"doc" { tok = KW_DOC; goto done; }
	"meta" { tok = KW_META; goto done; }
	"attrs" { tok = KW_ATTRS; goto done; }
	"type" { tok = KW_TYPE; goto done; }
	"f32" { lval->i = DT_F32; goto dtype; }
	"u8" { lval->i = DT_U8; goto dtype; }
	"i8" { lval->i = DT_I8; goto dtype; }
	"u16" { lval->i = DT_U16; goto dtype; }
	"i16" { lval->i = DT_I16; goto dtype; }
	"i32" { lval->i = DT_I32; goto dtype; }
	"i64" { lval->i = DT_I64; goto dtype; }
	"str" { lval->i = DT_STR; goto dtype; }
	"bool" { lval->i = DT_BOOL; goto dtype; }
	"f16" { lval->i = DT_F16; goto dtype; }
	"f64" { lval->i = DT_F64; goto dtype; }
	"u32" { lval->i = DT_U32; goto dtype; }
	"u64" { lval->i = DT_U64; goto dtype; }
	"c64" { lval->i = DT_C64; goto dtype; }
	"c128" { lval->i = DT_C128; goto dtype; }
	"bf16" { lval->i = DT_BF16; goto dtype; }
	"f8e4m3fn" { lval->i = DT_F8E4M3FN; goto dtype; }
	"f8e4m3fnuz" { lval->i = DT_F8E4M3FNUZ; goto dtype; }
	"f8e5m2" { lval->i = DT_F8E5M2; goto dtype; }
	"f8e5m2fnuz" { lval->i = DT_F8E5M2FNUZ; goto dtype; }
	"u4" { lval->i = DT_U4; goto dtype; }
	"i4" { lval->i = DT_I4; goto dtype; }
	"f4e2m1" { lval->i = DT_F4E2M1; goto dtype; }
	"f8e8m0" { lval->i = DT_F8E8M0; goto dtype; }
	ident { lval->sym = sym_intern(start, (size_t)(cur - start)); tok = IDENT; goto assign; }
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
dtype:
	tok = *cur == '[' && p->fast && fast_type(p, start, &cur, lval) ? TTYPE : DTYPE;
	goto done;
assign:         /* `%name =` is a DEF, `ident =` a KWARG; `==` is not `=` */
	{
		const char *e = blanks(cur);
		if (*e == '=' && e[1] != '=' && p->fast) {
			cur = e + 1;
			tok = tok == VALNAME ? DEF : KWARG;
		}
	}
done:
	l->cur = cur;
	set_loc(p, lloc, start);
	return tok;
}

/* The parser's stack, and the recursion over what it builds, grow with
 * nesting: lists and seq<>/opt<> types nest at most IR_MAX_DEPTH deep,
 * brackets of every kind together 4 * IR_MAX_DEPTH deep (a subgraph opens
 * two or three; the parser counts subgraphs themselves).  Past a limit the
 * input ends after one error. */
static int nest(Parser *p, int tok, const YYLTYPE *lloc)
{
	Lexer *l = &p->lex;
	/* '<' and '>' bracket a type only after seq/opt; elsewhere (guards)
	 * they compare. */
	int angle = tok == '<' ? l->last_tok == KW_SEQ || l->last_tok == KW_OPT : tok == '>' && l->types;
	int open = tok == '(' || tok == '[' || tok == '{' || (tok == '<' && angle) || tok == CALL;
	int close = tok == ')' || tok == ']' || tok == '}' || (tok == '>' && angle);
	uint32_t *k = tok == '[' || tok == ']' ? &l->lists : tok == '<' || tok == '>' ? &l->types : NULL;
	if (tok == '[' && l->last_tok == DTYPE)
		l->dims = 1, k = NULL;              /* a type's dims: never nested */
	else if (tok == ']' && l->dims)
		l->dims = 0, k = NULL;
	if (close) {
		l->all -= l->all > 0;
		if (k)
			*k -= *k > 0;
	}
	if (!open)
		return tok;
	l->all++;
	if (k)
		++*k;
	const char *what = l->lists > IR_MAX_DEPTH ? "lists" : l->types > IR_MAX_DEPTH ? "types" : NULL;
	if (!what && l->all <= 4 * IR_MAX_DEPTH)
		return tok;
	Loc at = { p->file, (uint32_t)lloc->first_line, (uint32_t)lloc->first_column };
	if (what)
		diag_error(at, "%s nest deeper than %d", what, IR_MAX_DEPTH);
	else
		diag_error(at, "brackets nest deeper than %d", 4 * IR_MAX_DEPTH);
	l->too_deep = 1;
	return 0;
}

/* After a syntax error the lexer drops the rest of the broken statement:
 * tokens on the error's line and everything inside braces opened there (so
 * a broken graph header skips its whole body).  It resumes at the first
 * token of a later line, or at a `}` that closes the enclosing block. */
int yylex(YYSTYPE *lval, YYLTYPE *lloc, Parser *p)
{
	Lexer *l = &p->lex;
	for (;;) {
		if (diag_too_many() || l->too_deep)
			return 0;
		int tok = nest(p, scan(p, lval, lloc), lloc);
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
int lex_first_on_line(Parser *p, const YYLTYPE *lloc)
{
	const char *at = p->lex.bol + lloc->first_column - 1;
	if ((uint32_t)lloc->first_line != p->lex.line)
		return 1;       /* not the last token read: cannot tell, say yes */
	for (const char *c = p->lex.bol; c < at; c++)
		if (*c != ' ' && *c != '\t' && *c != '\r')
			return 0;
	return 1;
}
