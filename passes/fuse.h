/* fuse.h - what the files of the fuse pass share (fuse.c runs the walk;
 * fuse_norm.c, fuse_gelu.c, fuse_attention.c, fuse_layout.c and
 * fuse_pad.c hold fusion families). */
#ifndef ONNXC_FUSE_H
#define ONNXC_FUSE_H

#include "passes.h"
#include "runtime.h"

typedef struct Fuse {
	Module *m;
	uint32_t *uses;             /* counted once per run, kept up to date */
	uint32_t nuses;             /* values counted: those made later have none */
	RtWeights weights;          /* params and buffers, for the BatchNormalization fusions */
	int opset;                  /* the target default-domain opset */
	uint32_t edits;             /* nodes rewritten (fuse_set_generic and in-place
				     * rewrites): with n's fingerprint, says a rule fired */
} Fuse;

/* v's type when it is a tensor with every dim known, else NULL. */
const Type *fuse_static_type(const Fuse *f, ValueId v);
/* v's type when it is a tensor of known rank (dims may be symbolic or
 * unknown), else NULL. */
const Type *fuse_ranked_type(const Fuse *f, ValueId v);
/* n (made with one result) stands before `at` in g with the provenance
 * of `from`; its result is a new value named after `like` + "_" +
 * suffix, of type t (NULL: inference types it after the pass). */
ValueId fuse_place(Module *m, Graph *g, Node *n, Node *at, const Node *from, ValueId like, const char *suffix,
		   Type *t);
/* By ValueId (below m->vals.n at the call): the first node of g reading
 * it (as node_each_use sees its reads), else NULL.  calloc'd. */
Node **fuse_readers(Module *m, const Graph *g);
/* Transpose t's perm is p[0..rank). */
int fuse_perm_is(const Node *t, const int64_t *p, int32_t rank);
/* v is read by exactly one node (a value made during the run never is). */
int fuse_one_use(const Fuse *f, ValueId v);
/* n becomes op with fresh argument and attribute arrays (filled by the
 * caller); its results, name and provenance stay. */
void fuse_set_op(Fuse *f, Node *n, OpId op, uint32_t nargs, uint32_t nkw);
/* The same for an op outside the table (another domain's). */
void fuse_set_generic(Fuse *f, Node *n, Sym domain, Sym name, uint32_t nargs, uint32_t nkw);
/* A new `const` value of g holding r, named after `like` + suffix. */
ValueId fuse_new_const(Fuse *f, Graph *g, const RTensor *r, ValueId like, const char *suffix);
/* An int attribute; dflt when absent, -1 when not an int. */
int64_t fuse_attr_int(const Node *n, const char *name, int64_t dflt);
/* A float attribute (an int one converts); dflt when absent. */
double fuse_attr_float(const Node *n, Sym name, double dflt);
/* v is a one-element floating constant; its value into *x. */
int fuse_scalar(const Fuse *f, ValueId v, double *x);
/* v is a one-element floating constant within 1e-6 (relative) of x: the
 * decimal constants of a hand-written formula, rounded to f32. */
int fuse_scalar_near(const Fuse *f, ValueId v, double x);
/* How many trailing dims the mean n (ReduceMean with keepdims=1 over the
 * last k dims, or GlobalAveragePool: dims 2..) averages of its input of
 * rank `rank`; 0 if n is neither. */
int fuse_trailing_mean(const Fuse *f, const Node *n, int32_t rank);

static inline Arg fuse_value_arg(ValueId v) { return (Arg){ .kind = A_VALUE, .u.v = v }; }
static inline Named fuse_int_kw(const char *name, int64_t v)
{
	return (Named){ sym_cstr(name), { .kind = A_INT, .u.i = v } };
}
static inline Named fuse_float_kw(const char *name, double v)
{
	return (Named){ sym_cstr(name), { .kind = A_FLOAT, .u.f = v } };
}
/* An attribute list of n ints (a perm, axes), in m's arena. */
static inline Arg fuse_int_list(Module *m, const int64_t *v, uint32_t n)
{
	Arg *e = ARENA_ARRAY(&m->arena, Arg, n ? n : 1);
	for (uint32_t i = 0; i < n; i++)
		e[i] = (Arg){ .kind = A_INT, .u.i = v[i] };
	return (Arg){ .kind = A_LIST, .elem = A_INT, .n = n, .u.list = e };
}

/* The fusion families: each looks at one node (the last of its pattern)
 * and rewrites it in place, or leaves it. */
void fuse_norm(Fuse *f, Graph *g, Node *n);        /* fuse_norm.c */
void fuse_gelu(Fuse *f, Node *n);                  /* fuse_gelu.c */
/* n, a Mul, ends a GELU written out: 1 (erf form) or 2 (tanh form), with
 * its input in *x and the inner Mul's result (read only by n) in *inner;
 * else 0. */
int fuse_gelu_form(const Fuse *f, const Node *n, ValueId *x, ValueId *inner);
/* n, a Div or Mul, ends t / sqrt(mean_k(t^2) + eps) written out, of
 * rank `rank` (the nodes inside read only by the pattern): t, k and eps
 * set, 1; else 0. */
int fuse_rms_form(const Fuse *f, const Node *n, int32_t rank, ValueId *t, int *k, double *eps);
void fuse_attention(Fuse *f, Graph *g, Node *n);   /* fuse_attention.c */
/* t = Transpose(x, p) with p a permutation of rank >= 2 dims (at most
 * 16): p with its last two entries swapped into p1 (Transpose(x, p) is
 * k^T for k = Transpose(x, p1)); 1 if p1 is the identity (t swaps x's
 * last two dims and keeps the others).  -1 if p is not such a
 * permutation. */
int fuse_key_perm(const Node *t, int32_t rank, int64_t *p1);
void fuse_flatten(Fuse *f, Node *n);               /* fuse_layout.c */
void fuse_unit_transpose(Fuse *f, Graph *g, Node *n);
void fuse_lead_one_add(Fuse *f, Graph *g, Node *n);
/* n, a Conv, ConvTranspose, AveragePool or MaxPool, reads a constant Pad
 * it can do itself: n takes the pads and reads the Pad's input. */
void fuse_pad(Fuse *f, Node *n);                   /* fuse_pad.c */

/* The MatMulNBits products of one activation in top-level graph g become
 * one and a Split (fuse_ort_products.c, run by fuse_ort). */
void fuse_ort_products(Module *m, RtWeights *w, Graph *g, Sym ms);
/* After it: a joined product's Split whose parts are each split into
 * heads becomes one head split (fuse_ort_heads.c). */
void fuse_ort_heads(Module *m, Graph *g);
/* Attention over a key/value cache in top-level graph g: its rotary
 * embeddings become RotaryEmbedding, and with gqa the attention
 * GroupQueryAttention (fuse_ort_gqa.c, run by fuse_ort before its walk). */
void fuse_ort_gqa(Fuse *f, Graph *g, Sym ms, int gqa);

#endif
