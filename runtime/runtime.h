/* runtime.h - tensors outside the IR: weight files, and (later) the
 * reference kernels used by constant folding and `onnxc run`.
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

#endif
