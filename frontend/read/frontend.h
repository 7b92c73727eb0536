/* frontend.h - reading programs: the .fxir lexer and parser, the .onnx
 * importer.
 *
 * Every reader reports problems through diag (ir.h) with file:line:col and
 * returns NULL when the input had errors; it never aborts on bad input.
 */
#ifndef ONNXC_FRONTEND_H
#define ONNXC_FRONTEND_H

#include "ir.h"

/* parse.c: parse .fxir text of length len (need not be NUL-terminated).
 * `file` names the buffer in messages; the text must stay alive while
 * diagnostics may still print its lines.  Returns NULL after errors. */
Module *parse_fxir(const char *file, const char *text, size_t len);
/* The same for a piece of a larger buffer (-split-input-file) that starts
 * at line first_line; the caller has registered the whole buffer with
 * diag_add_source. The text must be followed by a NUL or more text. */
Module *parse_fxir_at(const char *file, const char *text, size_t len, uint32_t first_line);
/* The lexer reads common constructs (tensor types, scope and loc trailers,
 * `%v =`, `op::name(`) as one token each; 0 turns that off, which must not
 * change what any input parses to (-no-fast-lex, the parser fuzzer). */
extern int fxir_fast_lex;

/* Reads a whole file (mmap or read); NULL after a diagnostic. */
char *read_file(const char *path, size_t *len);
char *read_stdin(size_t *len);

/* onnx_import.c: read a binary ONNX model (external data included, relative
 * to the model's directory).  Returns NULL after errors. */
Module *onnx_import(const char *path);
/* The same for a model already in memory.  `name` stands for the model's
 * path: it names it in messages and its directory is where external data
 * is looked for.  The module does not point into data. */
Module *onnx_import_buffer(const char *name, const void *data, size_t len);

/* True if the file starts like a binary ONNX model rather than .fxir text. */
int looks_like_onnx(const char *path, const char *data, size_t len);

#endif
