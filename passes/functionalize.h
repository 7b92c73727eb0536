/* functionalize.h - what the files of the functionalize pass share.
 *
 * functionalize.c: the walk: storages and their versions, views, one node at a time, the pass.
 * functionalize_writeback.c: writing a mutated view back into its base, link by link.
 * functionalize_ops.c: mutating ops: in-place, out= variants, copy_, resize_, in-place shape changes.
 * functionalize_outputs.c: mutated inputs, parameters and buffers become outputs; the graph signature.
 * functionalize_subgraphs.c: subgraphs (If, Loop and the others) as scopes of their own.
 * functionalize_funcs.c: local function bodies, and calls that mutate what they pass.
 * The pass and its invariants are described in functionalize.c. */
#ifndef ONNXC_FUNCTIONALIZE_H
#define ONNXC_FUNCTIONALIZE_H

#include "passes.h"

typedef struct VState {
	ValueId canon;              /* in-place/out= result: the storage it names */
	ValueId cur;                /* latest contents of this storage; 0: itself */
	ValueId base;               /* view: the canonical value it aliases; 0: none */
	ValueId root;               /* view: the non-view storage under the chain */
	Node *vdef;                 /* view: its defining node */
	uint32_t ver;               /* root: mutations so far; view: count cur reflects */
} VState;

typedef struct Saved { ValueId v; VState old; } Saved;

/* A local function whose body mutates parameters returns their latest
 * versions after its own nout results, in parameter order. */
typedef struct FuncMut {
	uint32_t nout;              /* the results it had before the pass */
	uint32_t nmut;
	uint32_t *param;            /* indices of the mutated parameters */
	uint8_t state;              /* 0 new, 1 on the walk's stack, 2 done */
} FuncMut;

typedef struct Functionalize {
	Module *m;
	Graph *g;                   /* the graph or subgraph being walked */
	VState *st;
	uint32_t nst;               /* values that existed when the pass began */
	int err;                    /* in the graph being rewritten */
	int failed;                 /* in any graph */
	uint32_t depth;             /* subgraph nesting of g */
	VEC(Saved) log;             /* states changed inside subgraphs (see walk_sub) */
	uint32_t *mark, epoch;      /* per value: sets of values, one epoch a set */
	Sym s_then, s_else, s_body;
	HashMap funcs;              /* (domain, name) -> function index + 1 */
	FuncMut *fm;                /* per function: the parameters it mutates */
} Functionalize;

/* One write-back step (functionalize_writeback.c). */
typedef struct WriteBack {
	Functionalize *f;
	const Node *d;              /* the view node */
	uint32_t res;               /* which of its results was mutated */
	ValueId base;               /* the base's current version */
	ValueId src;                /* the view's new contents */
	Type *ty;                   /* the base's type */
	Sym name;                   /* the base's name, for the new value */
	const Node *at;             /* the mutating node (provenance) */
	Node *before;
} WriteBack;

/* An op with named outputs (out_variants.def, functionalize_ops.c). */
typedef struct OutVariant {
	const char *name, *functional;
	uint32_t npos;              /* positional arguments before the outputs */
	const char *out[2];
} OutVariant;

static inline Arg fz_varg(ValueId v) { return (Arg){ .kind = A_VALUE, .u.v = v }; }
static inline Arg fz_iarg(int64_t i) { return (Arg){ .kind = A_INT, .u.i = i }; }

/* ---- functionalize.c ---- */
/* The state of v, a value that existed when the pass began. */
VState *fz_st(Functionalize *f, ValueId v);
/* A value the pass made is a version, its own storage. */
ValueId fz_canon(Functionalize *f, ValueId v);
/* Inside a subgraph, a state about to change is saved first: leaving the
 * subgraph restores it (walk_sub). */
void fz_touch(Functionalize *f, ValueId v);
/* Reports `functionalize: what` at n; returns 1. */
int fz_fail(Functionalize *f, const Node *n, const char *what);
/* Result i of n: a fresh value named after base. */
ValueId fz_new_result(Functionalize *f, Node *n, uint32_t i, Sym base, Type *ty);
/* An aten node with one result, carrying the provenance of `like` (the node
 * it stands for), inserted before `before` (NULL: at the end). */
Node *fz_make(Functionalize *f, OpId op, uint32_t nargs, uint32_t nkw, const Node *like,
	      Node *before, Sym rname, Type *rty);
/* Turns n into a call of `op` with fresh, empty argument arrays. */
void fz_recall(Functionalize *f, Node *n, OpId op, uint32_t nargs, uint32_t nkw);
/* n calls the aten op `name` (same arguments). */
void fz_rename_op(Node *n, Sym name);
/* The value holding canonical storage c's latest contents; re-derives a
 * stale view (before `before`).  Invariant: a fresh view's bases are fresh. */
ValueId fz_current(Functionalize *f, ValueId c, Node *before);
/* Subgraph arguments are left alone (see the file comment). */
void fz_rewrite_operands(Functionalize *f, Node *n);
/* n is a view op with a tensor first argument. */
int fz_is_view(const Node *n);
/* Records the results of view node n as aliases of canonical value c0. */
void fz_note_view(Functionalize *f, Node *n, ValueId c0);
/* One node of the graph being walked, in order. */
int fz_visit(Functionalize *f, Node *n, Node *next);

/* ---- functionalize_writeback.c ---- */
/* The base's shape as an aten int list: known dims literally, the others
 * read with sym_size.int from the base's current version. */
int fz_shape_list(WriteBack *w, Arg *out);
/* Storage c now holds v.  A view passes its new contents on to its base,
 * up to the root, whose mutation count goes up; returns that count (every
 * link of the chain reflects it). */
uint32_t fz_write_back(Functionalize *f, ValueId c, ValueId v, const Node *at, Node *before);

/* ---- functionalize_ops.c ---- */
/* `name_.ovl` -> `name.ovl`, `__iand__.Tensor` -> `__and__.Tensor` (the
 * in-place dunders ATen has); 0 if not in place. */
Sym fz_functional_name(Sym name);
/* n's entry of out_variants.def, or NULL. */
const OutVariant *fz_out_variant_of(const Node *n);
/* Output k of named-output node n: its tensor (0 if it is not one) and
 * its argument index (positional, then keywords) in *at. */
ValueId fz_named_out(const Node *n, const OutVariant *ov, uint32_t k, uint32_t *at);
/* The view op an in-place op stands for when it changes only its tensor's
 * shape and strides (transpose_ -> transpose.int, t_, squeeze_.dim,
 * unsqueeze_, as_strided_...); OP_GENERIC when it writes data. */
OpId fz_shape_view(Sym fname);
/* n, an ATen node: its operands read their storages' latest versions; a
 * mutating op becomes functional, a view is recorded. */
int fz_visit_aten(Functionalize *f, Node *n, Node *next);

/* ---- functionalize_outputs.c ---- */
/* v becomes one more output of g (of the graph being walked). */
void fz_push_output_to(Functionalize *f, Graph *g, ValueId v);
void fz_push_output(Functionalize *f, ValueId v);
/* Storage v holds a version other than its own. */
int fz_is_mutated(Functionalize *f, ValueId v);
/* User outputs read the latest versions; mutated storages are appended. */
void fz_finish_graph(Functionalize *f);

/* ---- functionalize_subgraphs.c ---- */
/* Walks the subgraphs of n (rewritten operands), each as a scope. */
int fz_subgraphs(Functionalize *f, Node *n, Node *next);

/* ---- functionalize_funcs.c ---- */
/* What the local function n calls mutates, or NULL if nothing. */
const FuncMut *fz_callee_mut(Functionalize *f, const Node *n);
/* Call n of a function that mutates parameters: the storages passed there
 * get n's new results as their next versions. */
int fz_call_mutates(Functionalize *f, Node *n, const FuncMut *fm, Node *next);
/* Every function, each after the functions it calls (a depth-first walk
 * with an explicit stack; a cycle, which inline reports, is cut where the
 * walk meets it again). */
void fz_run_funcs(Functionalize *f);

#endif
