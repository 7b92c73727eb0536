/* passes.h - the pass registry and pipelines.
 *
 * Every pass has one signature and one row in the registry (registry.c);
 * that table drives -passes=, -list-passes, --help and the -O pipelines,
 * which are strings parsed by the same code as -passes=. */
#ifndef ONNXC_PASSES_H
#define ONNXC_PASSES_H

#include "ir.h"

struct DecompLib;

typedef struct PassOptions {
	int opset;                  /* target default-domain opset */
	int allow_custom_ops;       /* decompose: keep ATen ops it cannot lower */
	struct DecompLib *lib;      /* decompose: the library, loaded on first use */
	int64_t fold_limit;         /* fold: largest result in bytes; 0: never grow the model */
	const char *weights_dir;    /* fold, fuse: where the module's weights file is; NULL: "." */
	const char *outline_classes; /* outline: "A,B" limits it to those module classes; NULL: all */
	int outline;                /* -outline was given: cse keeps module instances apart */
	int target_ort;             /* -target=ort: ONNX Runtime's contrib ops may be written */
	int quantize_bits;          /* quantize: 4 or 8; 0: the pass does nothing */
	int quantize_block;         /* quantize: values along K a scale covers (0: 32) */
	int quantize_zero_points;   /* quantize: unsigned codes and a zero point a block */
	int quantize_accuracy;      /* quantize: MatMulNBits' accuracy_level + 1; 0: not written */
	int quantize_dynamic;       /* quantize: int8-dynamic (quantize_bits 8): MatMulInteger or
				     * DynamicQuantizeMatMul, A quantized at run time */
	const char *quantize_exclude; /* quantize: "P,Q" glob patterns of products left float; NULL: none */
	int quantize_embedding;     /* quantize: also the tables of Gather (embeddings), -quantize-embedding */
	int aten_fallback;          /* decompose: an ATen op kept (allow_custom_ops) is written
				     * as org.pytorch.aten::ATen(operator = ...) */
	int ort_gqa;                /* fuse_ort: attention over a key/value cache as
				     * GroupQueryAttention (-ort-attention=gqa) */
} PassOptions;

/* FAILED after reporting through diag (ir.h: Status). */
typedef Status (*PassFn)(Module *m, const PassOptions *opt);

typedef struct Pass {
	const char *name;
	const char *summary;
	PassFn run;
} Pass;

const Pass *pass_lookup(const char *name, size_t len);
const Pass *pass_at(size_t i);             /* NULL past the end */

/* The pipeline of an -O level (0, 1 or 2), as a string. */
const char *pipeline_for_level(int level);

/* loop_first..loop_end-1 (loop_end 0: none) is the group written in
 * brackets, "a,[b,c],d": it runs again while a round changes the graph
 * (module_digest), at most PIPELINE_MAX_ROUNDS rounds. */
enum { PIPELINE_MAX_ROUNDS = 4 };
typedef struct Pipeline { const Pass **v; uint32_t n, cap, loop_first, loop_end; } Pipeline;
/* Parses "a,b,c" with at most one bracketed group; an empty string is the
 * empty pipeline.  On an unknown name or a misplaced bracket returns
 * FAILED (reporting nothing) and sets *bad to it (and *badlen). */
Status pipeline_parse(const char *s, Pipeline *out, const char **bad, size_t *badlen);
void pipeline_free(Pipeline *p);

/* Per-rewrite statistics (-stats, the report): how often each named
 * rewrite of a pass fired.  rewrite_count adds one to pass.rule (both
 * static strings); the counters keep the order in which rules first
 * fired, `run` since the last rewrite_stats_new_run, `total` since the
 * start.  A few dozen rules exist, so lookup is a scan. */
typedef struct RewriteStat { const char *pass, *rule; uint64_t run, total; } RewriteStat;
void rewrite_count(const char *pass, const char *rule);
const RewriteStat *rewrite_stats(uint32_t *n);
void rewrite_stats_new_run(void);

/* The passes themselves: one file each. */
#define PASS(name, fn, summary) Status fn(Module *m, const PassOptions *opt);
#include "passes.def"
#undef PASS

/* opset_convert.c: converts every ONNX node of the program (graphs and
 * function bodies) from the default-domain opset its module or function
 * names to `target`, which the module and its functions then name;
 * returns the number of nodes reported as having no conversion (the
 * opsets are then left unchanged).  An op newer than the target that
 * `lib` (may be NULL) decomposes is left for the decompose pass. */
int opset_convert(Module *m, int64_t target, struct DecompLib *lib);
/* The opsets -opset=N may name: 13 to the newest of the onnx package
 * attrs.def is generated from (onnx 1.23.1). */
enum { ONNXC_OPSET_MIN = 13, ONNXC_OPSET_MAX = 28 };

/* decompose.c: reports every ATen-level node left anywhere in m (one error
 * each and a summary note); returns how many there were. */
uint32_t decompose_report_unsupported(Module *m);
/* foreign_ops.c: reports every op of m whose domain is neither ONNX's
 * (com.microsoft too when target_ort), a local function's nor declared by
 * an opset line, one error an op; returns how many nodes there were. */
uint32_t report_foreign_ops(Module *m, int target_ort);

/* promote.c: PyTorch's type promotion.  dtype_promote is
 * torch.promote_types, result_type torch.result_type over tensor and
 * number operands; both DT_UNDEF when a dtype is unknown or unpromotable. */
DType dtype_promote(DType a, DType b);
DType result_type(const Module *m, const Arg *const *ops, uint32_t n);

/* outline.c: what a call made by outline replaced (Module.outlined, keyed
 * by the call).  inline puts these nodes back, reading the call's current
 * arguments for in[], when the call still names func, the body still has
 * nbody nodes and every free constant is still defined; otherwise it
 * inlines a copy of the body like any function's. */
typedef struct OutlineRecord {
	Node *call;
	Func *func;
	uint32_t nbody;             /* nodes of func's body when it was made */
	uint32_t nnodes, nin, nconst;
	Node **nodes;               /* the instance's nodes, in order, unlinked;
				     * onnx::Constant nodes among them are still
				     * in the graph (outline leaves them) */
	ValueId *in;                /* the call's arguments when it was made */
	ValueId *consts;            /* onnx::Constant results the nodes read */
} OutlineRecord;
int outline_record_is(uintptr_t item, const void *call);

/* decomp_lib.c: the decomposition library.  User files (-decomp=FILE, in
 * order) come before the built-in directory (every *.fxir in it, sorted by
 * name); the first decomposition that matches a call wins.  Loading is
 * deferred to the first lookup, so runs without ATen ops never read it. */
typedef struct DecompLib DecompLib;
typedef struct DecompEntry {
	const Decomp *d;
	Module *m;                  /* the module holding d's values */
	const uint32_t *local;      /* ValueId in m -> index among d's values */
	uint32_t nlocal;            /* how many values d's body has */
} DecompEntry;

/* dir NULL: the decomps/ directory next to the onnxc binary. */
DecompLib *decomp_lib_new(const char *dir, const char *const *files, int nfiles);
void decomp_lib_free(DecompLib *lib);
/* Reads and indexes the files once. */
Status decomp_lib_load(DecompLib *lib);
/* The decompositions of domain::name in priority order; *n is their count. */
const DecompEntry *decomp_lib_find(const DecompLib *lib, Sym domain, Sym name, uint32_t *n);

/* A table of decompositions by (domain, name), for the library and for the
 * ones a module defines itself. */
typedef struct DecompTable DecompTable;
DecompTable *decomp_table_new(void);
void decomp_table_free(DecompTable *t);
/* Adds m's decompositions after the ones already there. */
Status decomp_table_add(DecompTable *t, Module *m);
const DecompEntry *decomp_table_find(const DecompTable *t, Sym domain, Sym name, uint32_t *n);

/* complex.c: complex values as real tensors with a trailing dim of 2
 * (docs/decompositions.md, "Complex values").  decompose lowers a call
 * touching a complex value only by a decomposition whose guards name c64 or
 * c128, collects the complex values of the calls it lowers, and makes them
 * real at the end (c64[d..] is f32[d.., 2], c128 f64).
 * complex_report_unlowered reports every complex value left, located, and
 * returns their count. */
typedef struct ComplexVals { ValueId *v; uint32_t n, cap; } ComplexVals;
int node_touches_complex(const Module *m, const Node *n);
int decomp_takes_complex(const Decomp *d);
void complex_collect(const Module *m, ComplexVals *out, const Node *call);
void complex_make_real(Module *m, const ComplexVals *vs);
uint32_t complex_report_unlowered(Module *m);

/* attn_groups.c: a scaled_dot_product_attention whose key and value are
 * G copies of each key/value head (unsqueeze, expand, reshape: the form
 * of transformers' repeat_kv) takes the heads themselves and
 * enable_gqa = true, the same computation without the copies. */
void attn_ungroup_kv(Module *m, Node *call);

/* decomp_guard.c: d's where clause on the arguments a call binds (vals, by
 * parameter index; definitions are written there).  1 when every
 * condition holds and every definition is known; lists it computes go in
 * tmp.  shapes (by ValueId, nshapes entries; may be NULL) gives rank and
 * dims, never the dtype, of untyped values a decomposition body made.
 * decomp_lit_eq is literal equality: numbers by value, strings and bare
 * words by text, lists element by element. */
int decomp_where(Module *m, const Decomp *d, Arg *vals, Arena *tmp, Type *const *shapes, uint32_t nshapes);
int decomp_lit_eq(const Arg *a, const Arg *b);
Str decomp_arg_text(const Arg *a);      /* a string's or bare word's text */

#endif
