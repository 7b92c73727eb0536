/* driver.h - the command line: the subcommands the driver (driver.c)
 * dispatches to (run, verify, check, diff), what they share (run.c), and
 * -bisect-accuracy (bisect.c).
 */
#ifndef ONNXC_DRIVER_H
#define ONNXC_DRIVER_H

#include "frontend.h"

/* run.c: `onnxc run MODEL --input NAME=FILE ... [-o OUT]`, called by the
 * driver when argv[1] is "run"; returns the exit code. */
int run_main(int argc, char **argv);

/* check.c: `onnxc check MODEL.onnx`, the structural checks of a model
 * (every error located by graph and node); returns the exit code. */
int check_main(int argc, char **argv);
/* run.c: `onnxc verify MODEL --ref REF.safetensors`: run on the reference
 * inputs (input.<name>) and compare with its outputs (output.<name>). */
int verify_main(int argc, char **argv);
/* diff.c: `onnxc diff A B`: both run on the same inputs, their values
 * aligned by name; exit 0 when the outputs agree. */
int diff_main(int argc, char **argv);

/* run.c, shared by verify, diff and -bisect-accuracy. */
struct RTensor;
struct SafeTensors;
typedef struct Given { const char *name, *file; } Given;
typedef struct RunInputs { Given *given; uint32_t ngiven; } RunInputs;
/* A usage error of subcommand sub (NULL: of onnxc itself): prints fmt
 * (with arg) and exits 2. */
_Noreturn void sub_usage_error(const char *sub, const char *fmt, const char *arg);
/* A number >= 0 (a tolerance, a seed) given to option opt, else a usage error. */
double run_parse_number(const char *sub, const char *opt, const char *s);
/* --input NAME=FILE.npy, NAME=FILE.safetensors or FILE.safetensors. */
void run_add_input(RunInputs *in, const char *sub, const char *spec);
void run_inputs_free(RunInputs *in);
/* Reads, verifies and lowers (the -O0 pipeline) a model; NULL after errors.
 * *text holds the file's text, which diagnostics show (free it last). */
Module *run_load_model(const char *path, char **text);
/* The directory of path, where its weights file is looked for (malloc'd). */
char *run_model_dir(const char *path);
/* One tensor per input of the main graph, in order: from the given files,
 * or from a reference file's input.<name> tensors. */
Status run_bind_inputs(const RunInputs *in, Module *m, struct RTensor ***feeds, uint32_t *nfeeds);
Status run_ref_inputs(Module *m, const char *path, const struct SafeTensors *st, struct RTensor ***feeds,
		      uint32_t *nfeeds);
/* The tensor prefix+name of a reference file; NULL after an error at loc. */
struct RTensor *run_ref_tensor(const char *path, const struct SafeTensors *st, const char *prefix, const char *name,
			       Loc loc);
/* "NAME: f32[2], max abs error X, max rel error Y: ok" (or FAILED ...) on
 * f; 1 when got is outside the tolerance or of another shape. */
int run_compare_line(FILE *f, const char *name, const struct RTensor *got, const struct RTensor *want, double rtol,
		     double atol);

/* bisect.c: -bisect-accuracy[=REF.safetensors].  The driver calls
 * bisect_begin before the first pass (it reads the inputs: REF's
 * input.<name>, or seeded random ones) and bisect_after after each; the
 * first pass whose values leave the tolerance is reported (a located
 * error and a note) and bisect_after returns FAILED.  bisect_end prints
 * the verdict when nothing diverged. */
typedef struct Bisect Bisect;
Bisect *bisect_new(const char *ref, const char *weights_dir, double rtol, double atol);
Status bisect_begin(Bisect *b, Module *m);
Status bisect_after(Bisect *b, Module *m, const char *pass);
void bisect_end(Bisect *b);
void bisect_free(Bisect *b);

#endif
