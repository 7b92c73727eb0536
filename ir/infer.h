/* infer.h - what the parts of type inference share (private to ir/infer*.c):
 * the walk's state, the dims and types it builds, the readers of attributes
 * and constant operands, broadcasting and shape arithmetic, the op-family
 * rules the dispatcher calls, and the tracking of dim vectors.
 */
#ifndef ONNXC_INFER_H
#define ONNXC_INFER_H

#include "ir.h"

enum { MAXR = 64 };             /* ranks past this are left unknown */

static const Dim UNK = { -1, 0 };
/* An element of a tracked int vector that is not known: unlike UNK it
 * cannot be mistaken for the constant -1 (Reshape's "the rest"). */
static const Dim NOTCONST = { INT64_MIN, 0 };

typedef struct DimVec { Dim *d; int32_t n; } DimVec;   /* n < 0: unknown */

typedef struct Infer {
	Module *m;
	DimVec *sv;                 /* by ValueId: the elements of small int vectors, or NULL */
	uint32_t nsv;
	uint32_t typed;
} Infer;

/* Small helpers. */
static inline Sym S(const char *s) { return sym_cstr(s); }
static inline int known(Dim d) { return !d.sym && d.v >= 0; }
static inline Dim stat(int64_t v) { return (Dim){ v, 0 }; }
static inline int shaped(const Type *t) { return t && t->rank >= 0 && t->rank <= MAXR; }
static inline int dt_of(const Type *t) { return t ? t->dtype : 0; }


/* infer_attrs.c: attributes, constant operands, axes. */
int kw_int(const Node *n, const char *name, int64_t *v);
int64_t kw_int_or(const Node *n, const char *name, int64_t dflt);
int kw_ints(const Node *n, const char *name, int64_t *buf, int cap);
const char *kw_str(const Node *n, const char *name, uint32_t *len);
int dtype_attr(const Node *n, const char *name);
int int_vec(Infer *I, ValueId v, Dim *buf, int cap);
int int_consts(Infer *I, ValueId v, int64_t *buf, int cap);
int ints_attr_or_input(Infer *I, const Node *n, const char *name, uint32_t i, int64_t *buf, int cap);
int norm_axis(int64_t a, int32_t rank, int32_t *out);

/* infer_shape.c: dims and types, broadcasting, shape arithmetic. */
Dim sum_dim(int64_t a, int64_t b);
Dim prod_dim(int64_t a, int64_t b);
const Type *ty(const Module *m, const Node *n, uint32_t i);
Type *mk(Infer *I, int dt, int32_t rank, const Dim *d);
Type *like(Infer *I, int dt, const Type *shape);
Type *unknown_dims(Infer *I, int dt, int32_t rank);
int bcast_into(int32_t *rank, Dim *d, const Type *t);
Type *bcast_all(Infer *I, const Node *n, int dt, uint32_t from);
int is_compare(OpId op);
Dim dims_product(const Dim *d, int32_t lo, int32_t hi);
Dim reshape_rest(const Type *in, const Dim *to, int32_t n, int32_t skip);
Dim slice_dim(Dim d, int64_t s, int64_t e, int64_t st);

/* infer_ops.c: the rules of op families, If/Loop bodies. */
Type *infer_matmul(Infer *I, const Type *a, const Type *b, int dt);
Type *infer_window(Infer *I, const Node *n, const Type *x, const Type *w, Dim channels, int transpose);
Type *infer_reduce(Infer *I, const Node *n, const Type *x, int dt);
Type *infer_reshape(Infer *I, const Node *n, const Type *x);
Type *infer_slice(Infer *I, const Node *n, const Type *x);
Type *infer_concat(Infer *I, const Node *n);
void infer_split(Infer *I, const Node *n, const Type *x, Type **out);
Type *infer_gather(Infer *I, const Node *n, const Type *x, const Type *idx);
Type *infer_gather_nd(Infer *I, const Node *n, const Type *x, const Type *idx);
Type *infer_squeeze(Infer *I, const Node *n, const Type *x, int un);
Type *infer_transpose(Infer *I, const Node *n, const Type *x);
Type *infer_einsum(Infer *I, const Node *n);
Type *merge_types(Infer *I, const Type *a, const Type *b);
const Graph *graph_attr(const Node *n, const char *name);
const Type *graph_out_type(const Module *m, const Graph *g, uint32_t i);
Type *infer_dft(Infer *I, const Node *n, const Type *x);
Type *infer_stft(Infer *I, const Node *n, const Type *x);

/* infer.c: the walk of one graph, subgraphs first. */
void infer_graph(Infer *I, Graph *g);

/* infer_calls.c: function bodies, inputs typed from agreeing call sites. */
void infer_funcs(Infer *I);

/* infer_onnx.c: the dispatcher. */
void infer_onnx(Infer *I, const Node *n, Type **out);

/* infer_dims.c: dim vectors (Shape and what is computed from it). */
void track_vec(Infer *I, const Node *n);

#endif
