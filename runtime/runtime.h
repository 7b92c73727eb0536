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
/* Drops the pages of [p, p + n) that lie in the mapping from the process's
 * resident set once they have been read (streamed to a file, say).  They
 * stay in the page cache and a later read faults them back in unchanged:
 * the mapping is private and never written.  Memory outside the mapping is
 * left alone, so any payload pointer may be passed; st may be NULL. */
void safetensors_release(const SafeTensors *st, const void *p, size_t n);

#endif
