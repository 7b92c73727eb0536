/* ir.h - the onnxc intermediate representation.
 *
 * One header for the IR layer.  A Module owns one arena; everything reachable
 * from it (graphs, nodes, types, argument lists, strings) lives there and is
 * freed at once.  Names are interned process-wide (Sym), so modules parsed
 * from different files (a model and a decomposition library) share them.
 * Values are small integer handles (ValueId) into the module's value table;
 * subgraphs and functions draw from the same table, so a subgraph may use a
 * value of an enclosing graph by its handle.
 */
#ifndef ONNXC_IR_H
#define ONNXC_IR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ONNXC_VERSION "0.1.0"

/* Internal bugs abort with file:line (exit codes 1 and 2 are for users). */
#define ONNXC_BUG(...) onnxc_bug(__FILE__, __LINE__, __VA_ARGS__)
#define ONNXC_ASSERT(c) ((c) ? (void)0 : ONNXC_BUG("assertion failed: %s", #c))
_Noreturn void onnxc_bug(const char *file, int line, const char *fmt, ...);

/* ---- status: one failure convention ------------------------------------- */
/* Every pass and every fallible helper returns a Status.  FAILED means a
 * diagnostic has been reported through diag (the caller adds nothing and
 * stops); OK means nothing went wrong.  Lookups that may find nothing
 * return a pointer (NULL) instead. */
typedef enum { OK = 0, FAILED = 1 } Status;

/* ---- xalloc.c: allocation that does not fail ----------------------------- */
/* Out of memory is not an input error: it prints one line and exits 1.
 * Sizes are checked for overflow (n * size). */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);           /* zeroed; n may be 0 */
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
/* A zeroed-on-growth array indexed by a Sym or ValueId: grows *cap (from
 * 256, doubling) until index fits; new elements are zero. */
void *xgrow_index(void *p, uint32_t *cap, uint32_t index, size_t size);
/* open_memstream that does not fail. */
FILE *xmemstream(char **buf, size_t *len);
/* Grows a malloc'd vector {T *v; uint32_t n, cap;} by one slot (doubling). */
#define XVEC_PUSH(vec, x) do { \
	if ((vec).n == (vec).cap) { \
		(vec).cap = (vec).cap ? (vec).cap * 2 : 16; \
		(vec).v = xreallocarray((vec).v, (vec).cap, sizeof *(vec).v); \
	} \
	(vec).v[(vec).n++] = (x); } while (0)

/* ---- limits on input structure ------------------------------------------ */
/* Subgraphs (If, Loop and Scan bodies) nest at most IR_MAX_DEPTH deep, and
 * so do attribute lists and seq<>/opt<> types.  Every reader refuses deeper
 * input with a located error and the verifier checks graph nesting, so the
 * code that recurses over the IR (printer, writer, listing, runtime) needs
 * a bounded stack.  docs/security.md lists the limits. */
#define IR_MAX_DEPTH 256

/* ---- path.c: file access that stays inside a directory ------------------- */
/* The real path of `path` (malloc'd) when it lies strictly inside the real
 * path of `dir`, symbolic links resolved; else NULL with errno EXDEV (it
 * leads outside) or realpath's errno (it cannot be resolved). */
char *path_inside(const char *dir, const char *path);

/* ---- hashmap.c: one hash map ---------------------------------------------- */
/* Open addressing, linear probing, power-of-two capacity, load <= 1/2.
 * Entries are nonzero uintptr_t items (a pointer, or a small integer such
 * as a Sym) stored with their 64-bit hash.  Equality is the caller's: `eq`
 * compares a stored item with the key being looked up; NULL compares the
 * item with (uintptr_t)key.  Items are never removed (passes build a map,
 * use it and free it). */
typedef int (*HashEq)(uintptr_t item, const void *key);
typedef struct HashMap {
	uintptr_t *item;
	uint64_t *hash;
	uint32_t n, cap;
} HashMap;

void hashmap_free(HashMap *h);
/* The item equal to key, or 0. */
uintptr_t hashmap_get(const HashMap *h, uint64_t hash, HashEq eq, const void *key);
/* The item equal to key if there is one; else adds `item` and returns it. */
uintptr_t hashmap_intern(HashMap *h, uint64_t hash, HashEq eq, const void *key, uintptr_t item);
/* A 64-bit mix of an integer key (Syms, ValueIds, pointers). */
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* ---- arena.c: bump allocation, zeroed ------------------------------------ */
typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
	ArenaChunk *head;
	size_t total;               /* bytes obtained from malloc */
} Arena;

void *arena_alloc(Arena *a, size_t n);      /* zeroed, 8-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n); /* NUL-terminated */
void *arena_dup(Arena *a, const void *p, size_t n);
void arena_free(Arena *a);
/* Forget every allocation but keep the newest chunk for reuse. */
void arena_reset(Arena *a);
size_t arena_used(const Arena *a);          /* bytes handed out */
/* Grow an arena array of elements of size sz from *cap to at least need. */
void *arena_grow(Arena *a, void *p, uint32_t *cap, uint32_t need, size_t sz);
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))
/* Push onto an arena vector {T *v; uint32_t n, cap;}. */
#define VEC_PUSH(a, vec, x) do { \
	if ((vec).n == (vec).cap) \
		(vec).v = arena_grow((a), (vec).v, &(vec).cap, (vec).n + 1, sizeof *(vec).v); \
	(vec).v[(vec).n++] = (x); } while (0)
#define VEC(T) struct { T *v; uint32_t n, cap; }

/* ---- intern.c: process-wide interned names ------------------------------- */
typedef uint32_t Sym;           /* 0 is "no name" */
/* The fixed names of syms.def: S_onnx, S_value, ...  They are the first
 * Syms interned, in that order, so each S_ constant is its Sym. */
enum {
	S_NONE_ = 0,
#define SYM(id, text) S_##id,
#include "syms.def"
#undef SYM
	S_COUNT_
};
/* Interns the fixed names and then the op registry's; idempotent, and
 * called by module_new, op_lookup and sym_intern. */
void syms_init(void);
Sym sym_intern(const char *s, size_t n);
Sym sym_cstr(const char *s);
const char *sym_str(Sym s);     /* "" for 0 */
size_t sym_len(Sym s);
uint64_t hash_mem(const void *p, size_t n);   /* fast, not cryptographic */

/* ---- diag.c: diagnostics ------------------------------------------------- */
typedef struct Loc {
	Sym file;
	uint32_t line, col;         /* 1-based; line 0 means "no location" */
} Loc;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagKind;

/* Source buffers are registered so messages can show the line and a caret. */
void diag_add_source(Sym file, const char *text, size_t len);
void diag_error(Loc loc, const char *fmt, ...);
void diag_warning(Loc loc, const char *fmt, ...);
void diag_note(Loc loc, const char *fmt, ...);
void diag_emitv(DiagKind k, Loc loc, const char *fmt, va_list ap);
int diag_error_count(void);
/* The error cap was reached: readers stop.  Read on every token, so it is
 * a flag, not a call. */
extern int diag_stopped;
static inline int diag_too_many(void) { return diag_stopped; }
/* Collecting mode: DIAG_KEEP keeps messages instead of printing them
 * (-verify-diagnostics); DIAG_KEEP_PRINT keeps them and prints them too
 * (the conversion report lists what the user also saw). */
enum { DIAG_PRINT = 0, DIAG_KEEP = 1, DIAG_KEEP_PRINT = 2 };
void diag_set_collect(int mode);
typedef struct Diag { DiagKind kind; Loc loc; char *msg; } Diag;
const Diag *diag_collected(size_t *n);
void diag_clear(void);
/* The text of line loc.line of a registered source (without its newline),
 * or NULL. */
const char *diag_source_line(Loc loc, size_t *len);
void diag_set_max_errors(int n);
int diag_max_errors(void);                /* 0: no limit */
/* diag_mute(1) hides and stops counting every message until diag_mute(0),
 * which returns how many errors were hidden (for trying what may fail,
 * such as folding a node, without reporting it). */
unsigned diag_mute(int on);
void diag_set_stream(FILE *f);

/* ---- progress.c: progress of long work on standard error ---------------- */
/* PROGRESS_AUTO (the default) shows it when standard error is a terminal
 * and the work is at least min_size units; PROGRESS_ON always (-progress),
 * PROGRESS_OFF never.  One piece of work at a time: begin, update with the
 * units done so far, end. */
enum { PROGRESS_AUTO = 0, PROGRESS_ON = 1, PROGRESS_OFF = 2 };
void progress_set_mode(int mode);
int progress_enabled(void);
void progress_begin(const char *what, uint64_t total, uint64_t min_size);
void progress_update(uint64_t done);
void progress_add(uint64_t n);          /* n more units done */
void progress_end(void);

/* ---- element types (dtypes.def) ------------------------------------------ */
typedef enum {
	DT_UNDEF = 0,
#define DTYPE(e, name, onnx, bits, torch, st) e,
#include "dtypes.def"
	DT_COUNT
} DType;

const char *dtype_name(DType t);        /* fxir spelling */
int dtype_onnx(DType t);                /* TensorProto.DataType */
DType dtype_from_onnx(int onnx);        /* DT_UNDEF if unknown */
DType dtype_from_name(const char *s, size_t n);
int dtype_bits(DType t);                /* 0 for str */
const char *dtype_torch(DType t);
const char *dtype_safetensors(DType t);
DType dtype_from_safetensors(const char *s);

/* ---- types --------------------------------------------------------------- */
/* A dim is a known size (sym == 0, v >= 0), a symbolic size (sym != 0, the
 * user's name or expression), or unknown (sym == 0, v < 0: printed `?`). */
typedef struct Dim { int64_t v; Sym sym; } Dim;

typedef enum { TY_TENSOR, TY_SEQ, TY_OPT } TypeKind;

typedef struct Type {
	uint8_t kind;               /* TypeKind */
	uint8_t dtype;              /* DType, TY_TENSOR only */
	int32_t rank;               /* -1: shape unknown (`f32` alone) */
	Dim *dims;
	struct Type *elem;          /* TY_SEQ, TY_OPT */
} Type;

int type_equal(const Type *a, const Type *b);
/* a and b are the same size for certain: equal known sizes, or the same
 * symbol (a symbolic dim names one size wherever it appears). */
int dim_same(Dim a, Dim b);
/* Sizes are checked for overflow: a tensor holds at most INT64_MAX bytes
 * (the verifier refuses a static shape that would hold more).  a * b for
 * a, b >= 0, FAILED past INT64_MAX. */
Status mul_i64(int64_t a, int64_t b, int64_t *r);
/* The bytes of numel elements of t (4-bit types packed), FAILED past INT64_MAX. */
Status dtype_nbytes(DType t, int64_t numel, int64_t *r);
/* Every dim known: OK with the element count and byte size (a zero dim
 * makes both 0 whatever the others are); FAILED when either passes
 * INT64_MAX.  -1 in *numel when a dim is unknown (not a failure). */
Status type_size(const Type *t, int64_t *numel, int64_t *nbytes);
int64_t type_numel(const Type *t);      /* -1 unless every dim is known and the size fits */

/* ---- tensors (inline constants and tensor attributes) -------------------- */
typedef struct Str { const char *s; uint32_t n; } Str;

typedef struct Tensor {
	Type *type;                 /* TY_TENSOR with known dims */
	const uint8_t *data;        /* little-endian, packed; NULL for DT_STR */
	size_t nbytes;
	Str *strs;                  /* DT_STR: numel strings */
	Sym name;                   /* ONNX TensorProto.name, may be 0 */
} Tensor;

/* mapped.c: read-only file mappings tensors point into (ONNX external
 * data), owned by a module and unmapped by module_free.  mapped_release
 * drops the pages of [p, p+n) from the resident set when they lie in such
 * a mapping (no-op otherwise): code streaming through a large tensor calls
 * it on each slice once done, so RSS stays near one slice. */
void mapped_add(const void *owner, const void *p, size_t n);
void mapped_release(const void *p, size_t n);
void mapped_drop(const void *owner);
/* An unlinked temporary file ($TMPDIR, else /tmp), -1 on failure;
 * mapped_fd maps its first n bytes read-only for owner and closes it
 * (NULL on failure); mapped_spill writes data to such a file and maps it:
 * the bytes leave the heap and count in RSS only while being read. */
int mapped_tmp(void);
const uint8_t *mapped_fd(const void *owner, int fd, size_t n);
const uint8_t *mapped_spill(const void *owner, const void *data, size_t n);
enum { MAPPED_SLICE = 8 * 1024 * 1024 };

/* tensor.c: element access; tensor_put returns 0 if the number does not
 * fit the dtype (ints into int dtypes only). */
int dtype_is_float(DType t);
int dtype_is_int(DType t);
int tensor_put(DType t, uint8_t *d, size_t i, double f, int64_t v, int is_int);
double tensor_get_f(DType t, const uint8_t *d, size_t i);
int64_t tensor_get_i(DType t, const uint8_t *d, size_t i);
size_t tensor_nbytes(DType t, int64_t numel);      /* numel known to fit (dtype_nbytes) */

/* ---- operators (ops.def) ------------------------------------------------- */
enum { /* well-known domains; others are interned names */
	DOM_ONNX = 1, DOM_ATEN, DOM_OTHER
};

enum { /* op properties */
	OPF_ELEMWISE = 1 << 0,      /* broadcasting elementwise */
	OPF_SAMETYPE = 1 << 1,      /* inputs and outputs share one dtype */
	OPF_COMMUTATIVE = 1 << 2,
	OPF_INPLACE = 1 << 3,       /* ATen: mutates its first argument */
	OPF_VIEW = 1 << 4,          /* ATen: result aliases its first argument */
	OPF_SIDE_EFFECT = 1 << 5,   /* never dead */
	OPF_RANDOM = 1 << 6,        /* new values each run: never merged or folded; dead when unused */
};

typedef enum {
	OP_GENERIC = 0,             /* not in the registry */
#define OP(e, dom, name, mi, ma, mo, mx, since, fl) OP_##e,
#include "ops.def"
	OP_COUNT
} OpId;

typedef struct OpInfo {
	const char *name;           /* without domain, e.g. "add.Tensor" */
	uint8_t dom;                /* DOM_ONNX or DOM_ATEN */
	int16_t min_in, max_in, min_out, max_out;
	uint32_t flags;
	uint16_t since;             /* ONNX: the default-domain opset it first appears in; ATen: 0 */
} OpInfo;

extern const OpInfo op_info[OP_COUNT];
/* Domains are spelled as in the text: "onnx" (ONNX's "" / "ai.onnx"),
 * "aten", "com.microsoft", ... */
OpId op_lookup(Sym domain, Sym name);
Sym op_domain(OpId op);                 /* S_onnx or S_aten */
Sym op_name_of(OpId op);                 /* its name without the domain */
/* Called once by intern.c, right after syms.def: interns every op name. */
void op_registry_init(void);
/* Attribute kinds, numbered as ONNX's AttributeProto.AttributeType. */
typedef enum {
	AK_UNDEFINED = 0, AK_FLOAT, AK_INT, AK_STRING, AK_TENSOR, AK_GRAPH,
	AK_FLOATS, AK_INTS, AK_STRINGS, AK_TENSORS, AK_GRAPHS,
	AK_SPARSE_TENSOR, AK_SPARSE_TENSORS, AK_TYPE_PROTO, AK_TYPE_PROTOS
} AttrKind;
const char *attr_kind_name(AttrKind k);         /* "INTS", ... */
/* The kind attribute `name` of op must have (attrs.def), or AK_UNDEFINED
 * when the table does not say. */
AttrKind op_attr_kind(OpId op, Sym name);
/* Whether attrs.def lists every attribute op takes (every ONNX op): then
 * an attribute op_attr_kind does not know is one the op never had. */
int op_attrs_known(OpId op);

/* ---- arguments and attributes -------------------------------------------- */
typedef uint32_t ValueId;       /* index into Module.vals; 0 is "no value" */
#define VNONE ((ValueId)0)

typedef enum {
	A_NONE,                     /* none (also: omitted optional input) */
	A_INT, A_FLOAT, A_BOOL,
	A_STR,                      /* "text": s.s, s.n */
	A_IDENT,                    /* bare word such as contiguous_format */
	A_DTYPE,                    /* f32 as a value: i */
	A_VALUE,                    /* %x */
	A_LIST,                     /* [a, b, ...]: list, n; elem = kind hint */
	A_TENSOR,                   /* tensor(f32[2], [1.0, 2.0]) */
	A_GRAPH,                    /* graph(...) { ... } */
	A_ATTRREF,                  /* @name: a function's attribute parameter */
	A_PARAM,                    /* $name: a decomposition's literal parameter */
	A_TYPE,                     /* a type as a value (ONNX TypeProto attrs) */
} ArgKind;

struct Graph;
typedef struct Arg {
	uint8_t kind;               /* ArgKind */
	uint8_t elem;               /* A_LIST: kind of elements if empty (A_NONE = unknown) */
	uint32_t n;                 /* A_LIST length */
	union {
		int64_t i;              /* A_INT, A_BOOL, A_DTYPE */
		double f;
		Str s;                  /* A_STR */
		Sym sym;                /* A_IDENT, A_ATTRREF, A_PARAM */
		ValueId v;
		struct Arg *list;
		Tensor *t;
		struct Graph *g;
		Type *ty;
	} u;
} Arg;

typedef struct Named {          /* keyword argument or ONNX attribute */
	Sym name;
	Arg val;
} Named;

/* ---- provenance ---------------------------------------------------------- */
typedef struct ScopeEntry { Sym path; Sym cls; } ScopeEntry;  /* "layer1": "torch.nn.Linear" */
typedef struct MetaProp { Str key, val; } MetaProp;

/* Shared by pointer: a pass that replaces a node gives the new nodes the
 * old node's Prov, which is how provenance survives every pass. */
typedef struct Prov {
	uint32_t nscope;
	ScopeEntry *scope;          /* outermost first */
	Sym file;                   /* source location in the model's Python */
	uint32_t line, col;
	Str trace;                  /* stack trace, may be empty */
	uint32_t nmeta;
	MetaProp *meta;             /* other metadata_props */
} Prov;

/* The node's own entry PyTorch's exporter ends namespace, class_hierarchy
 * and name_scopes with ("add", "aten.add.Tensor"), read from the meta entry
 * pkg.torch.onnx.fx_node ("%add : [...] = call_function[target=torch.ops.
 * aten.add.Tensor](...)"); its index in meta, or -1 when there is none or
 * it does not have that form.  Strs point into the meta value. */
int prov_fx_leaf(const Prov *p, Str *name, Str *target);
/* The same from the text of an fx_node entry: 0, or -1 when not of that form. */
int fx_node_leaf(const char *s, size_t n, Str *name, Str *target);

/* ---- nodes, values, graphs ----------------------------------------------- */
typedef enum {
	VK_NODE,                    /* a node result */
	VK_INPUT,                   /* a graph or function input */
	VK_PARAM,                   /* param: a named weight */
	VK_BUFFER,                  /* buffer: a named non-trainable tensor */
	VK_CONST,                   /* const: an inline tensor */
} ValueKind;

typedef struct Node Node;

typedef struct Value {
	Sym name;
	Type *type;                 /* NULL: unknown */
	Node *def;                  /* VK_NODE */
	uint32_t res;               /* result index in def */
	uint8_t kind;               /* ValueKind */
	uint8_t overridable;        /* a param, buffer or const that is also a graph
				     * input (-keep-initializers-as-inputs): the user
				     * may give it another value, so no pass may read,
				     * merge or fold it as a constant */
	Sym key;                    /* VK_PARAM/VK_BUFFER: tensor name in the weights file */
	Tensor *init;               /* VK_CONST */
	const Prov *prov;           /* param, buffer, const: what the text's trailers or the
				     * pass that made it recorded (a const made from a node
				     * has the node's), or NULL */
	Loc loc;
} Value;

struct Node {
	Node *prev, *next;
	struct Graph *graph;
	OpId op;
	Sym domain, name;           /* e.g. "aten", "add.Tensor" */
	uint32_t nres, nargs, nkw;
	ValueId *res;               /* VNONE for an omitted result `_` */
	Arg *args;                  /* positional */
	Named *kw;                  /* keyword arguments / attributes */
	Prov *prov;                 /* may be NULL */
	Sym node_name;              /* ONNX NodeProto.name, may be 0 */
	Str doc;
	Loc loc;                    /* where the node is in the .fxir text */
	uint16_t opset;             /* onnx::Op.opsetN: needs opset N at least; 0: none */
};

typedef struct Graph {
	Sym name;
	struct Graph *parent;       /* enclosing graph of a subgraph, else NULL */
	uint32_t nin, nout;
	ValueId *in;                /* inputs, then params/buffers/consts in `init` order */
	ValueId *out;
	Type **out_decl;            /* declared output types (may hold NULLs) */
	VEC(ValueId) inits;         /* param, buffer and const values, in text order */
	Node *first, *last;
	uint32_t nnodes;
	uint32_t nmeta;
	MetaProp *meta;
	Str doc;
	Loc loc;
} Graph;

typedef struct Opset { Sym domain; int64_t version; } Opset;
typedef VEC(Opset) OpsetVec;

typedef struct Func {           /* an ONNX local function */
	Sym domain, name;
	Graph *body;
	uint32_t nattr;
	Sym *attrs;                 /* attribute parameter names */
	OpsetVec opsets;
	Loc loc;
} Func;

typedef enum { DP_TENSOR, DP_LITERAL } DParamKind;
typedef struct DParam {
	uint8_t kind;               /* %name or $name */
	uint8_t has_default;
	uint8_t defined;            /* $name = expr in the where clause: never bound by a call */
	Sym name;
	Arg deflt;
} DParam;

/* Guard expressions (docs/ir.md, "Guards"): literals, parameters, the
 * functions of GUARD_FNS on the bound arguments, integer and list
 * arithmetic, comparisons. */
typedef enum {
	GX_LIT, GX_PARAM, GX_VALUE, GX_LIST, GX_FN,     /* lit, $name, %name, [..], fn(..) */
	GX_INDEX,                                       /* list[i] */
	GX_NEG, GX_ADD, GX_SUB, GX_MUL, GX_DIV,
	GX_EQ, GX_NE, GX_LT, GX_LE, GX_GT, GX_GE, GX_IN, GX_NOTIN,
} GExprKind;

/* X(id, name, arity): what a guard may ask of a bound argument. */
#define GUARD_FNS(X) \
	X(GF_RANK, "rank", 1) X(GF_DTYPE, "dtype", 1) X(GF_DIM, "dim", 2) \
	X(GF_STATIC, "static", 2) X(GF_LEN, "len", 1)
#define X(id, name, arity) id,
typedef enum { GUARD_FNS(X) GF_COUNT } GuardFn;
#undef X
extern const char *const guard_fn_name[GF_COUNT];
extern const uint8_t guard_fn_arity[GF_COUNT];

typedef struct GExpr {
	uint8_t kind;               /* GExprKind */
	uint8_t fn;                 /* GX_FN: GuardFn */
	uint32_t n;                 /* operands */
	struct GExpr **sub;
	Sym name;                   /* GX_PARAM, GX_VALUE */
	Arg lit;                    /* GX_LIT */
	Loc loc;
} GExpr;

typedef struct Guard {          /* where cond, or where $def = expr */
	Sym def;                    /* the defined parameter, or 0 for a condition */
	GExpr *e;
	Loc loc;
} Guard;

typedef struct Decomp {         /* decomp aten::gelu(%self, $approximate = "none") where ... */
	Sym domain, name;
	uint32_t nparam, nguard;
	DParam *params;
	Guard *guards;
	Graph *body;                /* inputs are the %params, in order */
	Loc loc;
} Decomp;

typedef struct Module {
	Arena arena;
	Sym name;
	Sym weights;                /* safetensors file, relative to the .fxir */
	VEC(Value) vals;            /* malloc'd (value_new); vals.v[0] is the unused VNONE slot */
	VEC(Graph *) graphs;        /* graphs.v[0] is the main graph */
	VEC(Func *) funcs;
	VEC(Decomp *) decomps;
	OpsetVec opsets;
	uint32_t nmeta;
	MetaProp *meta;
	Str doc;
	Sym file;                   /* where it was read from */
	struct NameSet *names;      /* value names in use (ir.c), built on demand */
	/* Call Node * -> the nodes the outline pass replaced by that call
	 * (OutlineRecord, passes.h), so that inline in the same run puts back
	 * exactly what was there.  In memory only: the text does not keep it. */
	HashMap outlined;
} Module;

/* ---- ir.c: construction and edits --------------------------------------- */
Module *module_new(Sym name);
void module_free(Module *m);
Graph *graph_new(Module *m, Sym name, Graph *parent);
ValueId value_new(Module *m, Sym name, Type *type, ValueKind kind);
/* A value name not used anywhere in m: `base`, else `base_1`, `base_2`...
 * Passes name the values they create with it. */
Sym value_fresh_name(Module *m, Sym base);
static inline Value *val(Module *m, ValueId id) { return &m->vals.v[id]; }
Node *node_new(Module *m, Sym domain, Sym name, uint32_t nres, uint32_t nargs, uint32_t nkw);
/* A node of a registry op, named from ops.def. */
Node *node_new_op(Module *m, OpId op, uint32_t nres, uint32_t nargs, uint32_t nkw);
void node_append(Graph *g, Node *n);
void node_insert_before(Graph *g, Node *before, Node *n);
void node_remove(Graph *g, Node *n);
/* Result i of n becomes a `const` value of g holding t (n's location; its
 * type if it had none), keeping its ValueId; n itself is left in place. */
void value_to_const(Module *m, Graph *g, const Node *n, uint32_t i, Tensor *t);
/* Calls f(value, ctx) for every value an Arg uses, lists included (not
 * inside subgraphs). */
void arg_each_value(const Arg *a, void (*f)(ValueId, void *), void *ctx);
void node_each_use(const Node *n, void (*f)(ValueId, void *), void *ctx);
/* The same for every node of g and g's outputs (not inside subgraphs). */
void graph_each_use(const Graph *g, void (*f)(ValueId, void *), void *ctx);
int node_has_flag(const Node *n, uint32_t flag);
/* a is of kind k, or a list holding one at any depth. */
int arg_contains(const Arg *a, ArgKind k);
/* Some argument or attribute of n is a subgraph (in a list or not). */
int node_has_subgraph(const Node *n);
/* v is defined in g itself: a result of one of g's nodes, one of its
 * inputs or params/consts (not a value of an enclosing graph, nor one
 * defined inside a subgraph of g). */
int graph_defines(Module *m, const Graph *g, ValueId v);
/* A PyTorch call, for the decompose pass to lower: an op of PyTorch's
 * namespaces (aten; _operator, the Python int arithmetic on sizes;
 * math, Python's math module on scalars; torch, torch.sym_float and the
 * like; torchvision), or of any other domain but onnx with a positional
 * argument that is not a value (a custom op `torch.ops.NS.op`: no ONNX
 * node has a literal input). */
int node_is_torch(const Node *n);
/* Copies a string / an argument (lists and strings deeply; tensors and
 * graphs are shared) into arena a. */
Str str_copy(Arena *a, Str s);
Arg arg_copy(Arena *a, const Arg *src);
/* Structural identity: same kind (an int is not a float), floats by bits,
 * tensors by bytes, graphs by identity.  arg_hash agrees with it. */
int arg_identical(const Arg *a, const Arg *b);
uint64_t arg_hash(const Arg *a);
const Named *node_kw(const Node *n, Sym name);
/* A calloc'd array by ValueId: 1 for every value that is an output of a
 * graph, a function or a subgraph (names a pass must keep). */
uint8_t *module_output_marks(Module *m);

/* ---- walk.c: every graph of a module, in one defined order ---------------- */
/* What module_walk visits: top-level graphs (graphs.v[0] first), local
 * function bodies, decomposition bodies; each followed by the subgraphs
 * its nodes hold (graph-valued attributes, at any depth). */
enum { WALK_GRAPHS = 1, WALK_FUNCS = 2, WALK_DECOMPS = 4,
       WALK_PROGRAM = WALK_GRAPHS | WALK_FUNCS,     /* what the output holds */
       WALK_ALL = WALK_PROGRAM | WALK_DECOMPS };

typedef struct GraphVisit {
	Graph *g;
	Graph *parent;              /* the enclosing graph; NULL at the top */
	Node *owner;                /* the node whose attribute holds g; NULL at the top */
	Func *func;                 /* the function g is (in) the body of, or NULL */
	Decomp *decomp;             /* the decomposition g is (in) the body of, or NULL */
	uint32_t depth;             /* 0 at the top */
} GraphVisit;

/* Returning FAILED stops the walk, which returns FAILED. */
typedef Status (*GraphFn)(const GraphVisit *v, void *ctx);

/* Pre-order and depth-first: a graph is visited before its subgraphs, and
 * they follow in node order (positional arguments before attributes, list
 * elements in order).  A graph's subgraphs are collected after f returns
 * for it, so f may add, remove or rewrite nodes of the graph it is given:
 * the subgraphs of a removed node are not visited, those of a new node
 * are.  The walk keeps its own stack: nesting depth costs no C stack. */
Status module_walk(Module *m, unsigned what, GraphFn f, void *ctx);
/* The same for g and the subgraphs inside it (g is visited at depth 0). */
Status graph_walk(Graph *g, GraphFn f, void *ctx);
/* Calls f for each subgraph held by n's arguments and attributes, in the
 * walk's order (not deeper: a subgraph's own subgraphs are not included). */
void node_each_subgraph(const Node *n, void (*f)(Graph *g, void *ctx), void *ctx);
/* Replaces each subgraph held by n's arguments and attributes by f's
 * result, in the same order (a pass that copies a node deeply). */
void node_map_subgraphs(Node *n, Graph *(*f)(Graph *g, void *ctx), void *ctx);

/* ---- rewrite.c: replacing values, matching patterns ---------------------- */
/* A replacement table by ValueId.  A pass records `from reads as to` and
 * applies the table to each node as its walk reaches it; since uses follow
 * definitions, one walk rewrites every use without searching for any
 * (subgraphs included: they are visited after their enclosing graph).
 * Chains resolve (a -> b -> c reads c). */
typedef struct Rewriter {
	ValueId *to;                /* by ValueId; VNONE: itself */
	uint32_t cap;
} Rewriter;

void rw_free(Rewriter *rw);
void rw_set(Rewriter *rw, ValueId from, ValueId to);
ValueId rw_get(const Rewriter *rw, ValueId v);
/* Rewrites the values n reads (arguments and attributes, lists included;
 * not inside its subgraphs); returns how many changed. */
uint32_t rw_apply(const Rewriter *rw, Node *n);
/* The same for g's outputs. */
void rw_apply_outputs(const Rewriter *rw, Graph *g);

/* Use counts by ValueId over every graph the walk reaches in `what`:
 * operands, attributes, subgraph captures and graph outputs.  calloc'd. */
uint32_t *module_use_counts(Module *m, unsigned what);
/* Nodes in every graph, subgraph and function body (-stats). */
uint32_t module_node_count(Module *m);
/* A hash of every graph's nodes (ops, results, the values they read) and
 * initializer counts: equal before and after a pass that changed nothing
 * (the -O pipelines repeat their group until it is). */
uint64_t module_digest(Module *m);

/* Pattern helpers for rewrites (docs/passes.md has a worked example).
 * Each returns NULL / 0 when the pattern does not match. */
Node *def_of(const Module *m, ValueId v);        /* v's defining node */
/* v is result 0 of an op-`op` node in its registry domain: that node. */
Node *match_op(const Module *m, ValueId v, OpId op);
/* Operand i of n (a value, not none) is made by op: that node. */
Node *match_operand(const Module *m, const Node *n, uint32_t i, OpId op);
ValueId operand(const Node *n, uint32_t i);     /* VNONE unless a value */
/* A constant tensor: a `const` value or an onnx::Constant's `value`. */
const Tensor *const_tensor(const Module *m, ValueId v);
/* v is a constant whose every element equals x (numerically). */
int match_const(const Module *m, ValueId v, double x);
/* v = Range(0, n, 1) (start and delta constants, n anything): that node. */
Node *match_arange(const Module *m, ValueId v);
/* A new `const` i64[n] of g holding v, named `<like>_<suffix>`, at like's
 * location: the shape and axes operands rewrites build. */
ValueId const_i64s(Module *m, Graph *g, const int64_t *v, int32_t n, ValueId like, const char *suffix);
/* The same for a 0-d constant of dtype dt: x, or i for an integer dt. */
ValueId const_0d(Module *m, Graph *g, DType dt, double x, int64_t i, ValueId like, const char *suffix);
/* A new `const` holding constant c's elements (shared, not copied) as
 * static dims[0..rank), named as const_i64s names; VNONE when c is not a
 * constant of that many elements. */
ValueId const_reshaped(Module *m, Graph *g, ValueId c, const int64_t *dims, int32_t rank, ValueId like,
		       const char *suffix);
/* base's provenance (may be NULL) plus what a constant a pass computed
 * was made from: `pkg.onnxc.folded_op` naming op (unless NULL) and
 * `pkg.onnxc.folded_from` naming the constants among src[0..n)
 * (params, buffers, consts, onnx::Constant results), comma-separated,
 * each once, at most PROV_SOURCES_MAX (then `...`).  A source folded
 * itself contributes what it was folded from, so the list names the
 * program's own initializers.  base's entries of those keys are
 * replaced; a copy, as Prov is shared. */
enum { PROV_SOURCES_MAX = 32 };
Prov *prov_folded(Module *m, const Prov *base, const char *op, const ValueId *src, uint32_t n);
/* base plus `pkg.onnxc.merged_from` naming src[0..n) (merge_weights: the
 * equal weights that read the kept one now), as prov_folded lists them. */
Prov *prov_merged(Module *m, const Prov *base, const ValueId *src, uint32_t n);
/* A hash of what a rewrite of n in place changes (op, arguments and
 * attributes arrays, the values it reads): differs after a rewrite fired
 * on n.  O(n's arguments). */
uint64_t node_fingerprint(const Node *n);
/* v has exactly one use (counts from module_use_counts). */
static inline int one_use(const uint32_t *uses, ValueId v) { return uses[v] == 1; }

Type *type_tensor(Arena *a, DType dt, int32_t rank, const Dim *dims);
Type *type_wrap(Arena *a, TypeKind k, Type *elem);

/* ---- printer.c: .fxir text ---------------------------------------------- */
void print_module(FILE *out, const Module *m);
void print_type(FILE *out, const Type *t);
void print_value_name(FILE *out, const Module *m, ValueId v);
/* Length of the UTF-8 sequence at s, or 0 if it is not valid UTF-8
 * (overlong forms, surrogates and code points past U+10FFFF included). */
size_t utf8_len(const unsigned char *s, const unsigned char *end);

/* ---- infer.c: types of ONNX ops' results ---------------------------------- */
/* The types of n's results that follow from its operands' types, its
 * attributes and its constant operands: out[i] (n->nres slots), NULL where
 * nothing is known; a dim that cannot be derived is unknown.  Only ONNX
 * ops of the registry; types live in m's arena. */
void infer_node(Module *m, const Node *n, Type **out);
/* Gives every untyped result of an ONNX node in `what` (WALK_GRAPHS: the
 * graphs and their subgraphs; WALK_FUNCS: function bodies) its inferred
 * type, in one walk in node order; written types are kept.  Returns how
 * many values it typed.  Run after every pass (WALK_PROGRAM) and after
 * importing an .onnx model (WALK_GRAPHS: a function body read back is
 * left as written, so a model survives import and export unchanged). */
uint32_t infer_module(Module *m, unsigned what);
/* The same for the nodes from first up to end (not included), in order,
 * without following shape vectors through them: for a pass that needs the
 * shapes of the nodes it just made (decompose, for the guards of the calls
 * a body makes). */
uint32_t infer_nodes(Module *m, Node *first, const Node *end);
/* A written type and an inferred one cannot describe the same tensor:
 * different dtypes, ranks, or static sizes of one dim. */
int infer_conflict(const Type *written, const Type *inferred);

/* ---- verifier.c --------------------------------------------------------- */
/* Reports every problem through diag; returns the number of errors. */
int verify_module(Module *m);

/* ---- opset.c: ops checked against the target opset ----------------------- */
/* The default-domain opset v declares, or fallback. */
int64_t opsets_onnx(const OpsetVec *v, int64_t fallback);
/* Every ONNX op of the program (graphs and function bodies) exists, in the
 * form it is written, at the default-domain opset it targets: the
 * module's (a function's own if it names one), else `fallback`.  With
 * `raise`, the opset is first raised to the smallest every op needs (a
 * note says so).  Reports each problem at its node; returns the count. */
int verify_opset(Module *m, int64_t fallback, int raise);

#endif
