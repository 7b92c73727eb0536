/* backend.h - writing programs out: ONNX protobuf, the listing, external
 * data.
 *
 * Writers produce a temporary file beside the destination and rename it at
 * the end, so a failed run never leaves a partial file behind.
 */
#ifndef ONNXC_BACKEND_H
#define ONNXC_BACKEND_H

#include "ir.h"

typedef struct OnnxWriteOptions {
	int opset;                  /* default-domain opset when the module has none; 0 = 18 */
	int external;               /* 1: tensors above threshold go to a side file */
	const char *external_file;  /* NULL: <output>.data */
	size_t external_threshold;  /* bytes; default 1024 */
	const char *weights_dir;    /* where the module's weights file is looked for */
} OnnxWriteOptions;

/* onnx_writer.c: returns 0 on success, nonzero after a diagnostic. */
int onnx_write(Module *m, const char *path, const OnnxWriteOptions *opt);

/* listing.c: a listing a person reads (like the ONNX section of a
 * conversion report). */
int listing_write(Module *m, FILE *out, const OnnxWriteOptions *opt);

#endif
