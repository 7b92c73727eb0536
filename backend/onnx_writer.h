/* onnx_writer.h - what the parts of the ONNX writer share (private to
 * backend/onnx_writer*.c): the writer's state, its small helpers, and the
 * builders each part offers the others.
 */
#ifndef ONNXC_ONNX_WRITER_H
#define ONNXC_ONNX_WRITER_H

#include "backend.h"

enum { DEFAULT_OPSET = 18 };
#define AUTO_EXTERNAL_BYTES ((uint64_t)2048 * 1024 * 1024 - (uint64_t)64 * 1024 * 1024)
#define EXTERNAL_ALIGN 4096
#define PAYLOAD_SLICE ((size_t)8 * 1024 * 1024)

typedef struct Writer {
	Module *m;
	const OnnxWriteOptions *opt;
	Arena *a;
	OnnxBuilt *out;
	int with_data;
	int failed;
	Sym s_onnx;
	int64_t default_version;    /* the model's default-domain opset */
	const Func *func;           /* the function whose body is being built */
} Writer;

/* onnx_writer_names.c: the names taken in a graph. */
typedef struct Suffix { Sym base; uint32_t next; } Suffix;

typedef struct Names {
	HashMap used;               /* names taken in this graph (items: Syms) */
	HashMap next;               /* base name -> Suffix *, the next suffix to try */
	Arena *a;                   /* where the Suffixes live */
} Names;

typedef VEC(Onnx__NodeProto *) NodeVec;
typedef VEC(Onnx__ValueInfoProto *) InfoVec;

/* Small helpers. */
static inline Loc file_loc(const char *path) { return (Loc){ sym_cstr(path), 0, 0 }; }
/* protobuf-c wants char *; the strings are never written through. */
static inline char *cs(Sym s) { return (char *)sym_str(s); }
static inline char *str_dup(Writer *w, Str s) { return s.n ? arena_strndup(w->a, s.s, s.n) : NULL; }
#define NEW(w, T, init) new_msg((w), sizeof(T), &(T)init)
static inline void *new_msg(Writer *w, size_t sz, const void *init) { return arena_dup(w->a, init, sz); }
#define PTRS(w, T, n) ARENA_ARRAY((w)->a, T *, (n) ? (n) : 1)
static inline char *dom_str(Writer *w, Sym d) { return d == w->s_onnx ? "" : cs(d); }
static inline int is_input(const Value *v) { return v->kind == VK_INPUT; }

/* onnx_writer.c: helpers. */
char *afmt(Writer *w, const char *fmt, ...);
const char *vname(Writer *w, ValueId v);
Onnx__StringStringEntryProto *kv(Writer *w, const char *k, const char *v);
Onnx__StringStringEntryProto **meta_list(Writer *w, const MetaProp *mp, uint32_t n);

/* onnx_writer_tensors.c */
Onnx__TypeProto *type_proto(Writer *w, const Type *t);
Onnx__TensorProto *tensor_proto(Writer *w, const Tensor *t, const char *name);
Onnx__TensorProto *init_proto(Writer *w, ValueId id);

/* onnx_writer_attrs.c */
Onnx__AttributeProto *attr_proto(Writer *w, const Node *n, const Named *kw);

/* onnx_writer_meta.c */
void prov_props(Writer *w, const Prov *p, Onnx__NodeProto *np);
void signature_props(Writer *w, const Graph *g, Onnx__GraphProto *p);

/* onnx_writer_sig.c */
const char *torch_signature(Writer *w, const char *sig, const MetaProp *meta, uint32_t nmeta);

/* onnx_writer_names.c */
void take_name(Names *nm, Sym s);
Sym op_type(Sym name);
Sym derive_name(Names *nm, const Node *n);

/* onnx_writer_graphs.c */
const char *overload_dot(Sym domain, const char *name);
Onnx__ValueInfoProto *value_info(Writer *w, ValueId v, const Type *t);
void collect_info(Writer *w, const Graph *g, InfoVec *iv);
void graph_nodes(Writer *w, const Graph *g, NodeVec *nv);
const char *output_name(Writer *w, const Graph *g, uint32_t i, NodeVec *nv);
Onnx__GraphProto *graph_proto(Writer *w, const Graph *g);

/* onnx_writer_funcs.c */
Onnx__OperatorSetIdProto **model_opsets(Writer *w, size_t *n);
int64_t default_version(Writer *w);
Onnx__FunctionProto *func_proto(Writer *w, const Func *f);

#endif
