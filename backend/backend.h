/* backend.h - writing programs out: ONNX protobuf, the listing, external
 * data.
 *
 * Writers produce a temporary file beside the destination and rename it at
 * the end, so a failed run never leaves a partial file behind.
 */
#ifndef ONNXC_BACKEND_H
#define ONNXC_BACKEND_H

#include "ir.h"
#include "runtime.h"
#include "onnx.pb-c.h"

typedef struct OnnxWriteOptions {
	int opset;                  /* default-domain opset when the module has none; 0 = 18 */
	int external;               /* 1: tensors above threshold go to a side file */
	const char *external_file;  /* NULL: <output>.data */
	size_t external_threshold;  /* bytes; default 1024 */
	int external_in_place;      /* weights-file tensors: external data point into that file */
	const char *weights_dir;    /* where the module's weights file is looked for */
	int keep_inits_as_inputs;   /* list every initializer of the main graph as an input too */
} OnnxWriteOptions;

/* onnx_writer_file.c: returns 0 on success, nonzero after a diagnostic. */
int onnx_write(Module *m, const char *path, const OnnxWriteOptions *opt);

/* listing.c: a listing a person reads (like the ONNX section of a
 * conversion report). */
int listing_write(Module *m, FILE *out, const OnnxWriteOptions *opt);

/* dot.c: the program for Graphviz (-emit=dot): nodes by op, edges by
 * value with its type, module scopes as clusters, function bodies and
 * subgraphs as clusters of their own, calls of local functions as 3-D
 * boxes.  Nonzero after a write error. */
int dot_write(Module *m, FILE *out);

/* onnx_writer.c, shared with listing.c: the ModelProto that the writer
 * packs and the listing prints, so the listing shows exactly what the file
 * holds (node names, opset imports, value types, metadata). */
#define ONNXC_IR_VERSION 10

typedef struct OnnxBuilt {
	Onnx__ModelProto *model;
	Arena arena;                /* every proto struct lives here */
	SafeTensors *weights;       /* open while raw_data points into it */
	uint64_t init_bytes;        /* payload bytes of all initializers */
} OnnxBuilt;

/* Builds the proto of m.  with_data = 0 leaves initializer payloads out
 * (dims and dtype only) and never opens the weights file.  Returns 0, or
 * nonzero after a diagnostic; onnx_built_free is due either way. */
int onnx_build(Module *m, const OnnxWriteOptions *opt, int with_data, OnnxBuilt *out);
void onnx_built_free(OnnxBuilt *b);

/* report.c: the Markdown conversion report (-report).  The driver marks
 * each stage, shows the module as read (report_input) and as it stands at
 * the end (report_result, finished = the pipeline ran to the end), then
 * writes the file; it is written whether or not the conversion worked. */
typedef enum {
	STAGE_PARSE, STAGE_VERIFY, STAGE_FUNCTIONALIZE, STAGE_DECOMPOSE, STAGE_OPTIMIZE,
	STAGE_WRITE, STAGE_ORT, STAGE_ACCURACY, STAGE_COUNT
} Stage;
typedef enum { STAGE_NOT_RUN, STAGE_OK, STAGE_FAILED } StageState;
typedef struct Report Report;

/* text: the .fxir source (NULL for an .onnx input, which is printed). */
Report *report_new(const char *input, const char *text, size_t len, const char *command);
void report_free(Report *r);
/* note: a word on the stage, or NULL. */
void report_stage(Report *r, Stage s, StageState st, const char *note);
Stage report_stage_of_pass(const char *pass);
void report_input(Report *r, Module *m);
void report_result(Report *r, Module *m, int finished, const OnnxWriteOptions *w);
Status report_write(Report *r, const char *path);

#endif
