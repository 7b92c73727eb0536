/* foreign_ops.c - an ONNX file holds only ops a reader can resolve.
 *
 * A node's domain must be one of ONNX's ("" / onnx / ai.onnx,
 * ai.onnx.ml), com.microsoft when the target is ONNX Runtime, the domain
 * of a local function of the module (a call of it), or a custom domain
 * the program declared with an `opset DOMAIN N` line (the exporter's
 * custom_opsets).  Anything else (a `math::trunc` the strict capture left,
 * a custom op nobody declared) would be written with an opset import of
 * its own and refused by ONNX Runtime when loaded, so it is refused here,
 * each op once at its first node with the count of the others.
 * -allow-custom-ops declares every domain (the driver skips the check).
 *
 * One walk over the program; the allowed domains are a short list. */
#include <stdlib.h>
#include "passes.h"

typedef struct Foreign {
	Module *m;
	int target_ort;
	Sym ml, ai_onnx, ms;
	Node **first;               /* one node of each foreign op met */
	uint32_t *count;
	uint32_t n, cap, total;
} Foreign;

static int declared(const Foreign *f, Sym d)
{
	const Module *m = f->m;
	if (d == S_onnx || d == f->ai_onnx || d == f->ml || (d == f->ms && f->target_ort))
		return 1;
	for (uint32_t i = 0; i < m->opsets.n; i++)
		if (m->opsets.v[i].domain == d)
			return 1;
	for (uint32_t i = 0; i < m->funcs.n; i++)
		if (m->funcs.v[i]->domain == d)
			return 1;
	return 0;
}

static void note_op(Foreign *f, Node *n)
{
	f->total++;
	for (uint32_t i = 0; i < f->n; i++)
		if (f->first[i]->domain == n->domain && f->first[i]->name == n->name) {
			f->count[i]++;
			return;
		}
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 8;
		f->first = xrealloc(f->first, f->cap * sizeof *f->first);
		f->count = xrealloc(f->count, f->cap * sizeof *f->count);
	}
	f->first[f->n] = n;
	f->count[f->n++] = 1;
}

static Status scan(const GraphVisit *v, void *ctx)
{
	Foreign *f = ctx;
	for (Node *n = v->g->first; n; n = n->next)
		if (!declared(f, n->domain))
			note_op(f, n);
	return OK;
}

uint32_t report_foreign_ops(Module *m, int target_ort)
{
	Foreign f = { m, target_ort, sym_cstr("ai.onnx.ml"), sym_cstr("ai.onnx"), sym_cstr("com.microsoft"),
		      NULL, NULL, 0, 0, 0 };
	module_walk(m, WALK_PROGRAM, scan, &f);
	int limit = diag_max_errors();
	diag_set_max_errors(0);     /* every op is named */
	for (uint32_t i = 0; i < f.n; i++) {
		const Node *n = f.first[i];
		uint32_t more = f.count[i] - 1;
		if (more)
			diag_error(n->loc, "%s::%s is not an ONNX op: domain '%s' is neither ONNX's nor declared "
				   "(%u more node%s)", sym_str(n->domain), sym_str(n->name), sym_str(n->domain),
				   more, more == 1 ? "" : "s");
		else
			diag_error(n->loc, "%s::%s is not an ONNX op: domain '%s' is neither ONNX's nor declared",
				   sym_str(n->domain), sym_str(n->name), sym_str(n->domain));
	}
	if (f.total)
		diag_note(f.first[0]->loc, "ONNX Runtime refuses a domain it has no kernels for; give the op a "
			  "decomposition (-decomp=FILE), declare the domain (`opset DOMAIN N`, the exporter's "
			  "custom_opsets) or keep custom ops (-allow-custom-ops)%s",
			  f.n && f.first[0]->domain == sym_cstr("com.microsoft") ? "; com.microsoft is ONNX Runtime's "
			  "(-target=ort)" : "");
	diag_set_max_errors(limit);
	free(f.first);
	free(f.count);
	return f.total;
}
