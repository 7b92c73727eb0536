/* parser.y - the .fxir grammar (bison, pure, with locations).
 *
 * Actions only gather pieces; building and checking the IR is parse.c's
 * job (the b_* functions).  Newlines do not end statements; after a syntax
 * error the lexer skips to the next line (lexer.re) and the `error` rules
 * below resume there, so one run reports many errors. */

%code requires {
#include "ir.h"

typedef struct OpName { Sym dom, name; } OpName;
typedef VEC(Arg) ArgVec;
typedef VEC(Named) NamedVec;
typedef VEC(Type *) TypeVec;
typedef VEC(Dim) DimVec;
typedef VEC(Sym) SymVec;
typedef VEC(ScopeEntry) ScopeVec;
typedef VEC(MetaProp) MetaVec;
typedef VEC(GExpr *) GExprVec;
/* Where a token or rule starts: all the parser keeps of a location.  An
 * empty rule starts where the symbol before it does. */
typedef struct SrcPos { int first_line, first_column; } SrcPos;
#define YYLLOC_DEFAULT(Cur, Rhs, N) ((Cur) = (N) ? YYRHSLOC(Rhs, 1) : YYRHSLOC(Rhs, 0))
typedef struct LocTok { Sym file; uint32_t line, col; } LocTok;
typedef struct Call { OpName op; ArgVec pos; NamedVec kw; } Call;
typedef struct Trailers {
	Prov prov;
	int has_prov;
	Sym node_name;
	Str doc;
	ScopeVec scope;
	int scope_shared;           /* scope.v is already the shared copy */
	MetaVec meta;
} Trailers;

typedef struct Lexer {
	const char *cur, *lim, *bol;
	uint32_t line;
	int last_tok;               /* kind of the last token read */
	uint32_t lists, types, all; /* open '[', '<', and brackets of any kind */
	int dims;                   /* inside a type's dims, `f32 [2, 3]` */
	int too_deep;               /* nesting passed a limit: input ended */
} Lexer;

typedef struct SymTab SymTab;
typedef struct HashCons HashCons;
typedef struct Parser {
	Module *m;
	Arena *a;                   /* the module's arena: what the IR keeps */
	Arena t;                    /* scratch: one top-level statement's pieces */
	Arena pa;                   /* parse-lifetime tables */
	HashCons *hc;               /* shared types and scope lists */
	HashCons *memo;             /* fast-path results by spelling (b_memo) */
	Prov *last_prov;            /* the last node's, shared by the next if equal */
	Str last_type;              /* the last tensor type read by the fast path */
	Type *last_type_val;        /*   and its Type */
	Str last_scope;             /* the last scope(...) read by the fast path */
	ScopeVec *last_scopes;      /*   and what it built */
	Str last_file;              /* the last loc(...) file read by the fast path */
	Sym last_file_sym;          /*   and its interned name */
	Sym file;
	Lexer lex;
	int fast;                   /* fxir_fast_lex when the parse began */
	int skipping, skip_depth;
	Graph *g;                   /* graph being parsed */
	Func *func;                 /* function being parsed, if any */
	Decomp *decomp;             /* decomposition being parsed, if any */
	int returned;               /* the current graph has had its return */
	uint32_t incap;             /* capacity of the current graph's inputs */
	SymTab *tab;
	OpsetVec *opsets;           /* where `opset` lines go */
} Parser;
}

%code provides {
int yylex(YYSTYPE *lval, YYLTYPE *lloc, Parser *p);
int lex_first_on_line(Parser *p, const YYLTYPE *lloc);
void yyerror(YYLTYPE *lloc, Parser *p, const char *msg);
Loc b_loc(Parser *p, YYLTYPE l);
void b_module_name(Parser *p, Sym name);
void b_weights(Parser *p, Str file, YYLTYPE l);
void b_opset(Parser *p, Sym dom, int64_t v, YYLTYPE l);
void b_module_meta(Parser *p, MetaVec *kv);
void b_module_doc(Parser *p, Str s);
Graph *b_graph_begin(Parser *p, Sym name, YYLTYPE l);
void b_graph_end(Parser *p, YYLTYPE l);
Graph *b_subgraph_begin(Parser *p, Sym name, YYLTYPE l);
Graph *b_subgraph_end(Parser *p);
void b_graph_abandon(Parser *p, Graph *g);
void b_input(Parser *p, Sym name, Type *t, YYLTYPE l);
void b_input_default(Parser *p, Sym name, Type *t, Arg *data, YYLTYPE l, YYLTYPE ld);
void b_outsig(Parser *p, TypeVec *t);
void b_graph_meta(Parser *p, MetaVec *kv);
void b_graph_doc(Parser *p, Str s);
void b_init(Parser *p, int kind, Sym name, Type *t, Str key, Trailers *tr, YYLTYPE l);
void b_const(Parser *p, Sym name, Type *t, Arg *data, Trailers *tr, YYLTYPE l, YYLTYPE ld);
void b_node(Parser *p, SymVec *res, Call *c, TypeVec *types, Trailers *tr, YYLTYPE l, YYLTYPE lr);
void b_return(Parser *p, SymVec *vals, YYLTYPE l);
void b_stmt_after_return(Parser *p, YYLTYPE l);
Func *b_func_begin(Parser *p, OpName op, YYLTYPE l);
void b_func_attrs(Parser *p, SymVec *names);
void b_func_end(Parser *p, YYLTYPE l);
Decomp *b_decomp_begin(Parser *p, OpName op, YYLTYPE l);
void b_dparam(Parser *p, int kind, Sym name, Arg *deflt, YYLTYPE l);
void b_guard(Parser *p, Sym def, GExpr *e, YYLTYPE l);
GExpr *b_gx(Parser *p, int kind, GExpr *a, GExpr *b, YYLTYPE l);
GExpr *b_gx_lit(Parser *p, Arg lit, YYLTYPE l);
GExpr *b_gx_param(Parser *p, Sym name, int is_value, YYLTYPE l);
GExpr *b_gx_list(Parser *p, GExprVec *v, YYLTYPE l);
GExpr *b_gx_fn(Parser *p, Sym name, GExprVec *args, YYLTYPE l);
GExpr *b_gx_in(Parser *p, GExpr *a, Sym w1, Sym w2, GExpr *list, YYLTYPE l);
GExpr *b_gx_minus(Parser *p, GExpr *a, int64_t negint, YYLTYPE l);
GExprVec *b_gxs(Parser *p, GExprVec *v, GExpr *e);
void b_decomp_end(Parser *p, YYLTYPE l);
Arg b_value_ref(Parser *p, Sym name, YYLTYPE l);
Arg b_param_ref(Parser *p, Sym name, YYLTYPE l);
Arg b_attr_ref(Parser *p, Sym name, YYLTYPE l);
Arg b_list(Parser *p, ArgVec *v);
Arg b_empty_list(Parser *p, Sym kind, YYLTYPE l);
Arg b_tensor(Parser *p, Type *t, Arg *data, YYLTYPE lt, YYLTYPE ld);
Arg b_hex(Parser *p, Str s);
Type *b_tensor_type(Parser *p, int64_t dt, DimVec *dims, int ranked);
Type *b_wrap_type(Parser *p, int kind, Type *elem);
void b_call_arg(Parser *p, Call *c, Sym kw, Arg a, YYLTYPE l);
void b_trailer_loc(Parser *p, Trailers *t, Str file, int64_t line, int64_t col);
void b_reset(Parser *p);
DimVec *b_dims(Parser *p, DimVec *v, Dim d);
Dim b_dim_int(Parser *p, int64_t v, YYLTYPE l);
Dim b_dim_str(Str s);
TypeVec *b_types(Parser *p, TypeVec *v, Type *t);
SymVec *b_syms(Parser *p, SymVec *v, Sym s);
Call *b_call_new(Parser *p);
void **b_memo(Parser *p, const char *text, uint32_t n);
ScopeEntry *b_scope_shared(Parser *p, const ScopeEntry *v, uint32_t n);
}

%define api.pure full
%define parse.error detailed
%define api.location.type {SrcPos}
%locations
%lex-param {Parser *p}
%parse-param {Parser *p}

%union {
	int64_t i;
	double f;
	Sym sym;
	Str str;
	OpName op;
	Arg arg;
	Type *type;
	Dim dim;
	ArgVec *args;
	TypeVec *types;
	DimVec *dims;
	SymVec *syms;
	Call *call;
	Trailers *tr;
	MetaVec *meta;
	ScopeVec *scopes;
	Graph *graph;
	Func *func;
	Decomp *decomp;
	LocTok loc;
	GExpr *gx;
	GExprVec *gxs;
}

%token <sym> VALNAME "value name" SYMNAME "@name" PARAMNAME "$name" IDENT "identifier"
%token <op> OPNAME "op name"
/* Fused by the lexer: `%name =` (not ==), `ident =`, and `op::name(`. */
%token <sym> DEF "definition" KWARG "keyword argument"
%token <op> CALL "call"
%token <i> INT "integer" DTYPE "dtype"
%token <f> FLOAT "float"
%token <str> STRING "string" HEXSTR "hex string"
%token KW_MODULE "module" KW_GRAPH "graph" KW_FUNC "func" KW_DECOMP "decomp"
%token KW_WEIGHTS "weights" KW_OPSET "opset" KW_PARAM "param" KW_BUFFER "buffer"
%token KW_CONST "const" KW_RETURN "return" KW_WHERE "where" KW_NONE "none"
%token KW_TRUE "true" KW_FALSE "false" KW_TENSOR "tensor" KW_SEQ "seq" KW_OPT "opt"
%token KW_SCOPE "scope" KW_LOC "loc" KW_TRACE "trace" KW_NAME "name" KW_DOC "doc"
%token KW_META "meta" KW_ATTRS "attrs" KW_TYPE "type"
/* One-token forms of common constructs, read by the lexer's fast paths. */
%token <type> TTYPE "tensor type"
%token <scopes> SCOPE "scope(...)"
%token <loc> LOCATION "loc(...)"
%token ARROW "->" EQEQ "==" NEQ "!=" LEQ "<=" GEQ ">=" UNDERSCORE "_"

%type <arg> value xvalue literal lit tdata
%type <args> values
%type <type> type stype
%type <types> otypes
%type <dims> dims
%type <syms> results defs retvals attr_names
%type <call> call args
%type <op> opopen
%type <tr> trailers
%type <meta> kvs
%type <scopes> scopes
%type <sym> kwname subname attr_name
%type <graph> graph_head subgraph_head
%type <func> func_head
%type <decomp> decomp_head
%type <gx> gcmp gsum gterm gunary gpost gatom gbrack glist
%type <gxs> gexprs

%destructor { b_graph_abandon(p, $$); } <graph>

%%

file
	: "module" SYMNAME { b_module_name(p, $2); } '{' items '}'
	| "module" '{' items '}'
	| items
	;

items
	: %empty
	| items item                        { b_reset(p); }
	;

item
	: "weights" STRING                  { b_weights(p, $2, @2); }
	| "opset" IDENT INT                 { b_opset(p, $2, $3, @$); }
	| "meta" '(' kvs ')'                { b_module_meta(p, $3); }
	| "doc" '(' STRING ')'              { b_module_doc(p, $3); }
	| graph_head '{' body '}'           { (void)$1; b_graph_end(p, @4); }
	| func_head '{' body '}'            { b_func_end(p, @4); }
	| decomp_head '{' body '}'          { b_decomp_end(p, @4); }
	| error
	;

graph_head
	: "graph" SYMNAME <graph>{ $$ = b_graph_begin(p, $2, @2); } '(' params_opt ')' outsig_opt gtrailers
	                                    { $$ = $3; }
	;

params_opt
	: %empty
	| params
	;

params
	: param
	| params ',' param
	;

param
	: VALNAME                           { b_input(p, $1, NULL, @1); }
	| VALNAME ':' type                  { b_input(p, $1, $3, @1); }
	| VALNAME ':' type '=' tdata        { b_input_default(p, $1, $3, &$5, @1, @5); }
	;

outsig_opt
	: %empty
	| "->" '(' ')'                      { b_outsig(p, NULL); }
	| "->" '(' otypes ')'               { b_outsig(p, $3); }
	;

/* `type | '?'` spelled out in both rules, again to save a reduction. */
otypes
	: TTYPE                             { $$ = b_types(p, NULL, $1); }
	| stype                             { $$ = b_types(p, NULL, $1); }
	| '?'                               { $$ = b_types(p, NULL, NULL); }
	| otypes ',' TTYPE                  { $$ = b_types(p, $1, $3); }
	| otypes ',' stype                  { $$ = b_types(p, $1, $3); }
	| otypes ',' '?'                    { $$ = b_types(p, $1, NULL); }
	;

gtrailers
	: %empty
	| gtrailers "meta" '(' kvs ')'      { b_graph_meta(p, $4); }
	| gtrailers "doc" '(' STRING ')'    { b_graph_doc(p, $4); }
	;

type
	: TTYPE
	| stype
	;

/* Every type but the one-token tensor type, which result types take
 * directly (otypes) to save a reduction on every line. */
stype
	: DTYPE                             { $$ = b_tensor_type(p, $1, NULL, 0); }
	| DTYPE '[' ']'                     { $$ = b_tensor_type(p, $1, NULL, 1); }
	| DTYPE '[' dims ']'                { $$ = b_tensor_type(p, $1, $3, 1); }
	| "seq" '<' type '>'                { $$ = b_wrap_type(p, TY_SEQ, $3); }
	| "opt" '<' type '>'                { $$ = b_wrap_type(p, TY_OPT, $3); }
	;

/* The dim alternatives are spelled out in both rules of dims (rather than
 * a `dim` rule) to spare one reduction per dim: types are on every line. */
dims
	: INT                               { $$ = b_dims(p, NULL, b_dim_int(p, $1, @1)); }
	| IDENT                             { $$ = b_dims(p, NULL, (Dim){ -1, $1 }); }
	| STRING                            { $$ = b_dims(p, NULL, b_dim_str($1)); }
	| '?'                               { $$ = b_dims(p, NULL, (Dim){ -1, 0 }); }
	| dims ',' INT                      { $$ = b_dims(p, $1, b_dim_int(p, $3, @3)); }
	| dims ',' IDENT                    { $$ = b_dims(p, $1, (Dim){ -1, $3 }); }
	| dims ',' STRING                   { $$ = b_dims(p, $1, b_dim_str($3)); }
	| dims ',' '?'                      { $$ = b_dims(p, $1, (Dim){ -1, 0 }); }
	;

body
	: %empty
	| body stmt                         { b_reset(p); }
	;

stmt
	: "param" VALNAME ':' type '=' STRING trailers   { b_init(p, VK_PARAM, $2, $4, $6, $7, @2); }
	| "buffer" VALNAME ':' type '=' STRING trailers  { b_init(p, VK_BUFFER, $2, $4, $6, $7, @2); }
	| "const" VALNAME ':' type '=' tdata trailers    { b_const(p, $2, $4, &$6, $7, @2, @6); }
	| "opset" IDENT INT                      { b_opset(p, $2, $3, @$); }
	| results '=' call trailers              { b_node(p, $1, $3, NULL, $4, @3, @1); }
	| results '=' call ':' otypes trailers   { b_node(p, $1, $3, $5, $6, @3, @1); }
	| defs call trailers                     { b_node(p, $1, $2, NULL, $3, @2, @1); }
	| defs call ':' otypes trailers          { b_node(p, $1, $2, $4, $5, @2, @1); }
	| call trailers                          { b_node(p, NULL, $1, NULL, $2, @1, @1); }
	| call ':' otypes trailers               { b_node(p, NULL, $1, $3, $4, @1, @1); }
	| "return" retvals                       { b_return(p, $2, @1); }
	| "return" '(' retvals ')'               { b_return(p, $3, @1); }
	| "return" '(' ')'                       { b_return(p, NULL, @1); }
	| error
	;

retvals
	: VALNAME                           { $$ = ARENA_NEW(&p->t, SymVec); VEC_PUSH(&p->t, *$$, $1); }
	| retvals ',' VALNAME               { $$ = $1; VEC_PUSH(&p->t, *$$, $3); }
	;

results
	: VALNAME                           { $$ = b_syms(p, NULL, $1); }
	| "_"                               { $$ = b_syms(p, NULL, 0); }
	| results ',' VALNAME               { $$ = $1; VEC_PUSH(&p->t, *$$, $3); }
	| results ',' "_"                   { $$ = $1; VEC_PUSH(&p->t, *$$, 0); }
	;

/* The last result and its `=` as one DEF token, the common case. */
defs
	: DEF                               { $$ = b_syms(p, NULL, $1); }
	| results ',' DEF                   { $$ = $1; VEC_PUSH(&p->t, *$$, $3); }
	;

call
	: CALL ')'                          { $$ = b_call_new(p); $$->op = $1; }
	| CALL args ')'                     { $$ = $2; $$->op = $1; }
	| OPNAME '(' ')'                    { $$ = b_call_new(p); $$->op = $1; }
	| OPNAME '(' args ')'               { $$ = $3; $$->op = $1; }
	;

opopen
	: CALL
	| OPNAME '('
	;

/* A value name is spelled out beside xvalue, here and in lists, to spare
 * a reduction on the most common argument. */
args
	: VALNAME                           { $$ = b_call_new(p); b_call_arg(p, $$, 0, b_value_ref(p, $1, @1), @1); }
	| xvalue                            { $$ = b_call_new(p); b_call_arg(p, $$, 0, $1, @1); }
	| kwname '=' value                  { $$ = b_call_new(p); b_call_arg(p, $$, $1, $3, @1); }
	| KWARG VALNAME                     { $$ = b_call_new(p); b_call_arg(p, $$, $1, b_value_ref(p, $2, @2), @1); }
	| KWARG xvalue                      { $$ = b_call_new(p); b_call_arg(p, $$, $1, $2, @1); }
	| args ',' VALNAME                  { $$ = $1; b_call_arg(p, $$, 0, b_value_ref(p, $3, @3), @3); }
	| args ',' xvalue                   { $$ = $1; b_call_arg(p, $$, 0, $3, @3); }
	| args ',' kwname '=' value         { $$ = $1; b_call_arg(p, $$, $3, $5, @3); }
	| args ',' KWARG VALNAME            { $$ = $1; b_call_arg(p, $$, $3, b_value_ref(p, $4, @4), @3); }
	| args ',' KWARG xvalue             { $$ = $1; b_call_arg(p, $$, $3, $4, @3); }
	;

kwname
	: IDENT
	| STRING                            { $$ = sym_intern($1.s, $1.n); }
	| "name"                            { $$ = sym_cstr("name"); }
	| "doc"                             { $$ = sym_cstr("doc"); }
	| "meta"                            { $$ = sym_cstr("meta"); }
	| "scope"                           { $$ = sym_cstr("scope"); }
	| "loc"                             { $$ = sym_cstr("loc"); }
	| "trace"                           { $$ = sym_cstr("trace"); }
	| "seq"                             { $$ = sym_cstr("seq"); }
	| "opt"                             { $$ = sym_cstr("opt"); }
	| "attrs"                           { $$ = sym_cstr("attrs"); }
	;

trailers
	: %empty                            { $$ = ARENA_NEW(&p->t, Trailers); }
	| trailers "scope" '(' ')'          { $$ = $1; $$->has_prov = 1; }
	| trailers "scope" '(' scopes ')'   { $$ = $1; $$->scope = *$4; $$->scope_shared = 0; $$->has_prov = 1; }
	| trailers SCOPE                    { $$ = $1; $$->scope = *$2; $$->scope_shared = 1; $$->has_prov = 1; }
	| trailers LOCATION                 { $$ = $1; $$->prov.file = $2.file; $$->prov.line = $2.line;
	                                      $$->prov.col = $2.col; $$->has_prov = 1; }
	| trailers "loc" '(' STRING ':' INT ')'          { $$ = $1; b_trailer_loc(p, $$, $4, $6, 0); }
	| trailers "loc" '(' STRING ':' INT ':' INT ')'  { $$ = $1; b_trailer_loc(p, $$, $4, $6, $8); }
	| trailers "trace" '(' STRING ')'   { $$ = $1; $$->prov.trace = $4; $$->has_prov = 1; }
	| trailers "name" '(' STRING ')'    { $$ = $1; $$->node_name = sym_intern($4.s, $4.n); }
	| trailers "doc" '(' STRING ')'     { $$ = $1; $$->doc = $4; }
	| trailers "meta" '(' kvs ')'       { $$ = $1; $$->meta = *$4; $$->has_prov = 1; }
	;

scopes
	: STRING ':' STRING                 { $$ = ARENA_NEW(&p->t, ScopeVec);
	                                      VEC_PUSH(&p->t, *$$, ((ScopeEntry){ sym_intern($1.s, $1.n), sym_intern($3.s, $3.n) })); }
	| scopes ',' STRING ':' STRING      { $$ = $1;
	                                      VEC_PUSH(&p->t, *$$, ((ScopeEntry){ sym_intern($3.s, $3.n), sym_intern($5.s, $5.n) })); }
	;

kvs
	: %empty                            { $$ = ARENA_NEW(&p->t, MetaVec); }
	| STRING ':' STRING                 { $$ = ARENA_NEW(&p->t, MetaVec); VEC_PUSH(&p->t, *$$, ((MetaProp){ $1, $3 })); }
	| kvs ',' STRING ':' STRING         { $$ = $1; VEC_PUSH(&p->t, *$$, ((MetaProp){ $3, $5 })); }
	;

value
	: VALNAME                           { $$ = b_value_ref(p, $1, @1); }
	| xvalue
	;

/* Every value but a value name.  Numbers are spelled out here as well as
 * in literal, to spare a reduction on the most common literal arguments. */
xvalue
	: INT                               { $$ = (Arg){ .kind = A_INT, .u.i = $1 }; }
	| FLOAT                             { $$ = (Arg){ .kind = A_FLOAT, .u.f = $1 }; }
	| lit
	| PARAMNAME                         { $$ = b_param_ref(p, $1, @1); }
	| SYMNAME                           { $$ = b_attr_ref(p, $1, @1); }
	| "tensor" '(' type ',' tdata ')'   { $$ = b_tensor(p, $3, &$5, @3, @5); }
	| "type" '(' type ')'               { $$ = (Arg){ .kind = A_TYPE, .u.ty = $3 }; }
	| subgraph_head '{' body '}'        { (void)$1; $$ = (Arg){ .kind = A_GRAPH, .u.g = b_subgraph_end(p) }; }
	;

literal
	: INT                               { $$ = (Arg){ .kind = A_INT, .u.i = $1 }; }
	| FLOAT                             { $$ = (Arg){ .kind = A_FLOAT, .u.f = $1 }; }
	| lit
	;

lit
	: "true"                            { $$ = (Arg){ .kind = A_BOOL, .u.i = 1 }; }
	| "false"                           { $$ = (Arg){ .kind = A_BOOL, .u.i = 0 }; }
	| "none"                            { $$ = (Arg){ .kind = A_NONE }; }
	| STRING                            { $$ = (Arg){ .kind = A_STR, .u.s = $1 }; }
	| DTYPE                             { $$ = (Arg){ .kind = A_DTYPE, .u.i = $1 }; }
	| IDENT                             { $$ = (Arg){ .kind = A_IDENT, .u.sym = $1 }; }
	| '[' ']'                           { $$ = b_empty_list(p, 0, @$); }
	| '[' ':' IDENT ']'                 { $$ = b_empty_list(p, $3, @3); }
	| '[' ':' "tensor" ']'              { $$ = b_empty_list(p, sym_cstr("tensor"), @3); }
	| '[' ':' "graph" ']'               { $$ = b_empty_list(p, sym_cstr("graph"), @3); }
	| '[' ':' "type" ']'                { $$ = b_empty_list(p, sym_cstr("type"), @3); }
	| '[' values ']'                    { $$ = b_list(p, $2); }
	;

values
	: VALNAME                           { $$ = ARENA_NEW(&p->t, ArgVec); VEC_PUSH(&p->t, *$$, b_value_ref(p, $1, @1)); }
	| xvalue                            { $$ = ARENA_NEW(&p->t, ArgVec); VEC_PUSH(&p->t, *$$, $1); }
	| values ',' VALNAME                { $$ = $1; VEC_PUSH(&p->t, *$$, b_value_ref(p, $3, @3)); }
	| values ',' xvalue                 { $$ = $1; VEC_PUSH(&p->t, *$$, $3); }
	;

tdata
	: value
	| HEXSTR                            { $$ = b_hex(p, $1); }
	;

subgraph_head
	: "graph" subname <graph>{ $$ = b_subgraph_begin(p, $2, @1); } '(' params_opt ')' outsig_opt gtrailers
	                                    { $$ = $3; }
	;

subname
	: %empty                            { $$ = 0; }
	| SYMNAME
	;

func_head
	: "func" opopen <func>{ $$ = b_func_begin(p, $2, @2); } params_opt ')' outsig_opt attrs_opt
	                                    { $$ = $3; }
	;

attrs_opt
	: %empty
	| "attrs" '(' ')'
	| "attrs" '(' attr_names ')'        { b_func_attrs(p, $3); }
	;

/* A function attribute's name: an identifier, or a string for any other
 * name ONNX allows ("inferred::alpha"). */
attr_names
	: attr_name                         { $$ = ARENA_NEW(&p->t, SymVec); VEC_PUSH(&p->t, *$$, $1); }
	| attr_names ',' attr_name          { $$ = $1; VEC_PUSH(&p->t, *$$, $3); }
	;

attr_name
	: IDENT
	| STRING                            { $$ = sym_intern($1.s, $1.n); }
	;

decomp_head
	: "decomp" opopen <decomp>{ $$ = b_decomp_begin(p, $2, @2); } dparams_opt ')' where_opt
	                                    { $$ = $3; }
	;

dparams_opt
	: %empty
	| dparams
	;

dparams
	: dparam
	| dparams ',' dparam
	;

dparam
	: VALNAME                           { b_dparam(p, DP_TENSOR, $1, NULL, @1); }
	| VALNAME '=' "none"                { Arg n = { .kind = A_NONE }; b_dparam(p, DP_TENSOR, $1, &n, @1); }
	| DEF "none"                        { Arg n = { .kind = A_NONE }; b_dparam(p, DP_TENSOR, $1, &n, @1); }
	| PARAMNAME                         { b_dparam(p, DP_LITERAL, $1, NULL, @1); }
	| PARAMNAME '=' literal             { b_dparam(p, DP_LITERAL, $1, &$3, @1); }
	;

where_opt
	: %empty
	| "where" guards
	;

guards
	: guard
	| guards ',' guard
	;

/* A condition, or `$name = expr` defining a literal parameter.  Guard
 * expressions have their own rules (operators bind as in Python; `in` and
 * `not` are plain identifiers, checked by b_gx_in). */
guard
	: gcmp                              { b_guard(p, 0, $1, @1); }
	| PARAMNAME '=' gcmp                { b_guard(p, $1, $3, @1); }
	;

gcmp
	: gsum
	| gsum "==" gsum                    { $$ = b_gx(p, GX_EQ, $1, $3, @2); }
	| gsum "!=" gsum                    { $$ = b_gx(p, GX_NE, $1, $3, @2); }
	| gsum '<' gsum                     { $$ = b_gx(p, GX_LT, $1, $3, @2); }
	| gsum "<=" gsum                    { $$ = b_gx(p, GX_LE, $1, $3, @2); }
	| gsum '>' gsum                     { $$ = b_gx(p, GX_GT, $1, $3, @2); }
	| gsum ">=" gsum                    { $$ = b_gx(p, GX_GE, $1, $3, @2); }
	| gsum IDENT glist                  { $$ = b_gx_in(p, $1, $2, 0, $3, @2); }
	| gsum IDENT IDENT glist            { $$ = b_gx_in(p, $1, $2, $3, $4, @2); }
	;

/* `a -2` is read as `a` and the integer -2: a subtraction. */
gsum
	: gterm
	| gsum '+' gterm                    { $$ = b_gx(p, GX_ADD, $1, $3, @2); }
	| gsum '-' gterm                    { $$ = b_gx(p, GX_SUB, $1, $3, @2); }
	| gsum INT                          { $$ = b_gx_minus(p, $1, $2, @2); }
	;

gterm
	: gunary
	| gterm '*' gunary                  { $$ = b_gx(p, GX_MUL, $1, $3, @2); }
	| gterm '/' gunary                  { $$ = b_gx(p, GX_DIV, $1, $3, @2); }
	;

gunary
	: gpost
	| '-' gunary                        { $$ = b_gx(p, GX_NEG, $2, NULL, @1); }
	;

gpost
	: gatom
	| gpost '[' gcmp ']'                { $$ = b_gx(p, GX_INDEX, $1, $3, @2); }
	;

gatom
	: INT                               { $$ = b_gx_lit(p, (Arg){ .kind = A_INT, .u.i = $1 }, @1); }
	| FLOAT                             { $$ = b_gx_lit(p, (Arg){ .kind = A_FLOAT, .u.f = $1 }, @1); }
	| "true"                            { $$ = b_gx_lit(p, (Arg){ .kind = A_BOOL, .u.i = 1 }, @1); }
	| "false"                           { $$ = b_gx_lit(p, (Arg){ .kind = A_BOOL, .u.i = 0 }, @1); }
	| "none"                            { $$ = b_gx_lit(p, (Arg){ .kind = A_NONE }, @1); }
	| STRING                            { $$ = b_gx_lit(p, (Arg){ .kind = A_STR, .u.s = $1 }, @1); }
	| DTYPE                             { $$ = b_gx_lit(p, (Arg){ .kind = A_DTYPE, .u.i = $1 }, @1); }
	| IDENT                             { $$ = b_gx_lit(p, (Arg){ .kind = A_IDENT, .u.sym = $1 }, @1); }
	| PARAMNAME                         { $$ = b_gx_param(p, $1, 0, @1); }
	| VALNAME                           { $$ = b_gx_param(p, $1, 1, @1); }
	| IDENT '(' gexprs ')'              { $$ = b_gx_fn(p, $1, $3, @1); }
	| '(' gcmp ')'                      { $$ = $2; }
	| gbrack
	;

gbrack
	: '[' ']'                           { $$ = b_gx_list(p, NULL, @1); }
	| '[' ':' IDENT ']'                 { $$ = b_gx_lit(p, b_empty_list(p, $3, @3), @1); }
	| '[' gexprs ']'                    { $$ = b_gx_list(p, $2, @1); }
	;

glist
	: gbrack
	| PARAMNAME                         { $$ = b_gx_param(p, $1, 0, @1); }
	;

gexprs
	: gcmp                              { $$ = b_gxs(p, NULL, $1); }
	| gexprs ',' gcmp                   { $$ = b_gxs(p, $1, $3); }
	;

%%
