/* runtime.h - tensors outside the IR: weight files, runtime tensors, the
 * reference kernels used by constant folding and `onnxc run`, and the
 * interpreter that runs a graph with them.
 */
#ifndef ONNXC_RUNTIME_H
#define ONNXC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include "ir.h"

/* ---- safetensors.c: read-only, mmap'd safetensors files ------------------- */
/* Every entry has been validated when the file is opened: a known dtype,
 * non-negative dims, and a byte range inside the data region whose length
 * is exactly numel * itemsize and which overlaps no other entry.  `data`
 * points into the mapping and stays valid until safetensors_close. */
typedef struct SafeTensor {
	const char *name;           /* NUL-terminated, owned by the file handle */
	DType dtype;
	int32_t rank;
	const int64_t *shape;
	const uint8_t *data;
	size_t nbytes;
} SafeTensor;

typedef struct SafeTensors SafeTensors;

/* NULL after a diagnostic naming the file (and the tensor, if one is bad). */
SafeTensors *safetensors_open(const char *path);
void safetensors_close(SafeTensors *st);
/* NULL if there is no such tensor.  O(log n). */
const SafeTensor *safetensors_find(const SafeTensors *st, const char *name);
size_t safetensors_count(const SafeTensors *st);
const SafeTensor *safetensors_at(const SafeTensors *st, size_t i); /* sorted by name */
/* Drops the pages of [p, p + n) that lie in the mapping from the process's
 * resident set once they have been read (streamed to a file, say).  They
 * stay in the page cache and a later read faults them back in unchanged:
 * the mapping is private and never written.  Memory outside the mapping is
 * left alone, so any payload pointer may be passed; st may be NULL. */
void safetensors_release(const SafeTensors *st, const void *p, size_t n);
/* 1 when [p, p + n) lies in the data region of the mapping, with its byte
 * offset in the file (what ONNX external data names); else 0. */
int safetensors_locate(const SafeTensors *st, const void *p, size_t n, uint64_t *offset);
/* The path the file was opened by. */
const char *safetensors_path(const SafeTensors *st);

/* ---- value.c: runtime tensors --------------------------------------------- */
/* A dense tensor owned by the runtime: packed little-endian elements, row
 * major.  Ranks past RT_MAX_RANK are refused where tensors are made, so
 * kernels index shapes without checking.  numel and nbytes were checked
 * for overflow when the tensor was made. */
#define RT_MAX_RANK 16

typedef struct RTensor {
	DType dtype;
	int32_t rank;
	int64_t shape[RT_MAX_RANK];
	int64_t numel;
	size_t nbytes;
	uint8_t *data;              /* malloc'd, at least one byte */
} RTensor;

/* Bytes per element; 0 for dtypes the runtime cannot hold (str, 4-bit). */
size_t rt_elem_size(DType t);
/* The product of the dims, or -1 after a negative dim or an overflow of
 * int64 or of the byte count for elements of `elem` bytes. */
int64_t rt_numel(int32_t rank, const int64_t *shape, size_t elem);
/* A zeroed tensor; NULL after a diagnostic at loc (a rank past
 * RT_MAX_RANK, a size that overflows, a dtype the runtime cannot hold). */
RTensor *rt_new(Loc loc, DType t, int32_t rank, const int64_t *shape);
/* The same with the elements copied from data (nbytes must match). */
RTensor *rt_from_data(Loc loc, DType t, int32_t rank, const int64_t *shape, const void *data, size_t nbytes);
RTensor *rt_from_ir(Loc loc, const Tensor *t);
RTensor *rt_copy(Loc loc, const RTensor *t);
void rt_free(RTensor *t);
/* Element i as a number.  Reading converts (f16 and bf16 through f32);
 * writing an integer wraps to the dtype's width, writing a float into an
 * integer dtype truncates toward zero (NaN gives 0, out of range
 * saturates), anything nonzero into bool gives 1. */
double rt_get_f(const RTensor *t, int64_t i);
int64_t rt_get_i(const RTensor *t, int64_t i);
void rt_set_f(RTensor *t, int64_t i, double x);
void rt_set_i(RTensor *t, int64_t i, int64_t x);
/* The numpy broadcast of n shapes; FAILED after a diagnostic at loc. */
Status rt_broadcast(Loc loc, const char *op, uint32_t n, RTensor *const *ts, int32_t *rank, int64_t *shape);
/* Walks an output shape in row-major order, keeping each operand's element
 * offset: an operand broadcast along a dim has stride 0 there.  Operands
 * are right-aligned, as in numpy. */
#define RT_ITER_MAX 4
typedef struct RtIter {
	int32_t rank;
	uint32_t n;
	int64_t shape[RT_MAX_RANK], idx[RT_MAX_RANK];
	int64_t stride[RT_ITER_MAX][RT_MAX_RANK];
	int64_t off[RT_ITER_MAX];
} RtIter;
void rt_iter_init(RtIter *it, int32_t rank, const int64_t *shape, uint32_t n, RTensor *const *ts);
void rt_iter_next(RtIter *it);
/* Steps idx over the box dims[0..n) in row-major order; 0 (idx all 0
 * again) past the end. */
int rt_next_index(int64_t *idx, const int64_t *dims, int32_t n);
/* "f32[2,3]" into buf. */
const char *rt_describe(const RTensor *t, char *buf, size_t n);

/* ---- weights.c: the tensors behind params and buffers -------------------- */
typedef struct RtWeights {
	Module *m;
	const char *dir;            /* where the module's weights file is looked for */
	SafeTensors *st;            /* opened on the first request */
} RtWeights;
/* The tensor of param or buffer id (a copy); NULL after a diagnostic. */
RTensor *rt_weight(RtWeights *w, ValueId id);
/* The same for any constant value: a param, a buffer, a const, or the
 * result of an onnx::Constant; NULL (without a diagnostic) for a value
 * that is none of these. */
RTensor *rt_value_tensor(RtWeights *w, ValueId id);
void rt_weights_close(RtWeights *w);
/* The bytes of a param, buffer or constant where they lie (the weights
 * file's mapping, an imported model's external data, the IR), not a copy;
 * NULL for a value without bytes, after a diagnostic for a missing weight. */
const uint8_t *rt_value_bytes(RtWeights *w, ValueId id, size_t *nbytes);
/* Drops [p, p+n) from the resident set when it lies in the weights file's
 * mapping or an external-data mapping (ir/mapped.c); no-op otherwise. */
void rt_weights_release(RtWeights *w, const void *p, size_t n);
/* transpose_stream.c: the transpose of the rows x cols matrix at src
 * (elements of esize bytes) written to fd, a band of rows at a time,
 * releasing each band of src once read; FAILED if a write fails. */
Status rt_transpose_to_fd(RtWeights *w, const uint8_t *src, int64_t rows, int64_t cols, size_t esize, int fd);
/* The output channel of row r of a convolution weight: a Conv weight
 * [M, ...] is one output channel a row (inner = M, reps = 1); a
 * ConvTranspose weight [C, M/group, k...] is C * M/group rows whose output
 * channel is the row's within its input channel's group (inner = M/group,
 * reps = C/group). */
static inline int64_t rt_row_channel(int64_t r, int64_t inner, int64_t reps)
{
	return r / (inner * reps) * inner + r % inner;
}
/* The same streaming for the rows x cols matrix at src (dtype dt) with
 * row r multiplied by scale[rt_row_channel(r, inner, reps)] (computed in
 * double): a BatchNormalization folded into a large weight. */
Status rt_scale_rows_to_fd(RtWeights *w, const uint8_t *src, DType dt, int64_t rows, int64_t cols, const double *scale,
			   int64_t inner, int64_t reps, int fd);

/* ---- interp.c: running a graph, and what kernels ask of their node --------- */
/* A kernel reads its node's attributes through the context and reports
 * through rt_fail, which names the op at the node's location.  Inputs are
 * NULL where an optional input is omitted; the kernel makes every output. */
typedef struct KCtx {
	const Node *n;
	const char *op;             /* "onnx::Add" */
	int opset;                  /* the default domain's: some ops changed meaning */
} KCtx;

typedef Status (*Kernel)(const KCtx *k, RTensor *const *in, uint32_t nin, RTensor **out, uint32_t nout);

Status rt_fail(const KCtx *k, const char *fmt, ...);
Status rt_unsupported(const KCtx *k, const RTensor *t);    /* "unsupported dtype ..." */
/* OK when in[0..n) are present and floating point, else the error. */
Status rt_need_float(const KCtx *k, RTensor *const *in, uint32_t nin, uint32_t n);
const Arg *rt_attr(const KCtx *k, const char *name);       /* NULL if absent */
int64_t rt_attr_int(const KCtx *k, const char *name, int64_t dflt);
/* A string attribute copied into buf (n bytes, cut short to fit), or dflt
 * when absent or not a string. */
const char *rt_attr_str(const KCtx *k, const char *name, const char *dflt, char *buf, size_t n);
/* A dtype attribute, written as a dtype (`to = i64`) or ONNX's number;
 * DT_UNDEF if absent or neither. */
DType rt_attr_dtype(const KCtx *k, const char *name);
double rt_attr_float(const KCtx *k, const char *name, double dflt);
/* An ints attribute, or an i32/i64 tensor input, as int64s: *n = -1 when
 * absent.  The result is malloc'd (free it). */
Status rt_attr_ints(const KCtx *k, const char *name, int64_t **v, int64_t *n);
Status rt_input_ints(const KCtx *k, const RTensor *t, int64_t **v, int64_t *n);
/* An axis in [-rank, rank) made non-negative; FAILED out of range. */
Status rt_axis(const KCtx *k, int64_t axis, int32_t rank, int32_t *out);

/* The kernel of an op, or NULL. */
Kernel rt_kernel(OpId op);
/* The kernel of a node: a standard op's, or an ONNX Runtime contrib op's
 * (kernels_ms.c); NULL for anything else (ATen ops, function calls). */
Kernel rt_node_kernel(const Node *n);
/* Runs one node on its inputs under the given default-domain opset;
 * outputs are set on OK. */
Status rt_eval_node(const Node *n, int opset, RTensor *const *in, uint32_t nin, RTensor **out);
/* The module's default-domain opset (18 when it names none). */
int rt_module_opset(const Module *m);

/* Runs the main graph.  feeds holds one tensor per VK_INPUT input of the
 * graph, in order (borrowed); weights are read from the module's weights
 * file in weights_dir.  On OK outs (malloc'd, g->nout entries) holds the
 * outputs, owned by the caller. */
Status rt_run_graph(Module *m, const char *weights_dir, RTensor *const *feeds, RTensor ***outs);
/* The same, calling observe for every `const` value as it is bound (def
 * NULL) and every node result as it is computed (def its node), before
 * any of it is freed: t is borrowed, copy what must outlive the call
 * (diff and -bisect-accuracy keep intermediate values this way). */
typedef void (*RtObserve)(void *ctx, ValueId id, const Node *def, const RTensor *t);
Status rt_run_graph_observe(Module *m, const char *weights_dir, RTensor *const *feeds, RTensor ***outs,
			    RtObserve observe, void *ctx);
/* The first node of the main graph the interpreter has no kernel for
 * (an ATen op, a function call, an op of another domain without a
 * kernel), or NULL. */
const Node *rt_first_unrunnable(const Module *m);

/* ---- compare.c: tensors against a reference, random inputs ---------------- */
/* numpy's allclose, element by element: |got - want| <= atol + rtol * |want|
 * (equal infinities agree, NaN never does).  shape_ok is 0 when the shapes
 * differ; the errors are then not computed. */
typedef struct RtCompare {
	int shape_ok;
	double max_abs, max_rel;
	int64_t bad;                /* elements outside the tolerance */
} RtCompare;
RtCompare rt_compare(const RTensor *got, const RTensor *want, double rtol, double atol);
/* Tensors kept by value name (diff and -bisect-accuracy hold a run's
 * intermediate values this way).  put copies t; a name already held keeps
 * its first tensor. */
typedef struct RtValues {
	RTensor **by_sym;
	uint32_t cap;
	struct { Sym *v; uint32_t n, cap; } names;
} RtValues;
void rt_values_put(RtValues *s, Sym name, const RTensor *t);
const RTensor *rt_values_get(const RtValues *s, Sym name);   /* NULL if absent */
void rt_values_free(RtValues *s);
/* A tensor of the value's type filled from a seeded generator (*state):
 * normal floats, integers in [0, 10), random bools.  NULL after a
 * diagnostic at the value's location when its type is not a tensor of
 * known dtype and dims (a symbolic dim needs an input given by the user). */
RTensor *rt_random_for(const Value *v, uint64_t *state);

/* ---- kernels_*.c: the kernels ---------------------------------------------- */
/* Each family answers for its ops: elementwise math, comparisons, Where,
 * Clip and Cast (elem); data movement and shape ops (shape); reductions,
 * ArgMax/ArgMin, CumSum and MatMul (math); Softmax, LayerNormalization,
 * Gemm and Resize (nn); ONNX Runtime's contrib ops (ms). */
Kernel rt_elem_kernel(OpId op);
Kernel rt_shape_kernel(OpId op);
Kernel rt_math_kernel(OpId op);
Kernel rt_nn_kernel(OpId op);
/* ONNX Runtime's contrib ops that onnxc writes, by domain and name: of
 * com.microsoft FusedMatMul, Gelu, BiasGelu, FastGelu,
 * SkipLayerNormalization, SkipSimplifiedLayerNormalization, MatMulNBits,
 * DynamicQuantizeMatMul; of the default domain SimplifiedLayerNormalization.
 * rt_ms_kernel_name lists them (NULL past the end). */
Kernel rt_ms_kernel(Sym domain, Sym name);
const char *rt_ms_kernel_name(size_t i, const char **domain);

/* ---- tensorio.c: .npy and safetensors files of runtime tensors ------------- */
/* Readers return NULL after a diagnostic naming the file. */
RTensor *rt_read_npy(const char *path);
RTensor *rt_from_safetensor(const char *path, const SafeTensor *e);
/* Write to a temporary name and rename; FAILED after a diagnostic. */
Status rt_write_npy(const char *path, const RTensor *t);
Status rt_write_safetensors(const char *path, const char *const *names, RTensor *const *ts, uint32_t n);

#endif
