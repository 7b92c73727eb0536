/* fuse_ort_products.c - -target=ort (the pass fuse_ort, after its walk):
 * the MatMulNBits products of one activation become one product and a
 * Split, as the Q/K/V projections of an attention or the gate and up
 * projections of a gated MLP: one kernel call, which reads the activation
 * once, where there were two or three.
 *
 *   y_i = MatMulNBits(a, B_i, s_i[, z_i][, none, b_i], N = N_i), i = 1..m
 *       -> y_1, ..., y_m = Split(MatMulNBits(a, B, s[, z][, none, b],
 *                                            N = N_1 + ... + N_m),
 *                                [N_1, ..., N_m], axis = -1)
 *
 * MatMulNBits holds its constants row by row of N: B is uint8 [N, blocks,
 * bytes], the scales [N * blocks], the zero points [N * bytes of a row],
 * the bias [N].  The fused product's constants are the members' bytes one
 * after the other, and its result's last dim the members' results side by
 * side, which the Split takes apart.
 *
 * Legality.  The members read the same a; B, the scales and the zero
 * points and bias they have are weights or constants; none has
 * g_idx (input 4).  They agree with the first with K, bits, block_size and
 * accuracy_level, have the same inputs, each of the dtype, rank and dims
 * past the first of the first's; their results are f32 of one rank whose
 * dims agree but the last, N_i (static).  Products of one a that do not
 * agree with the first reader are left as they are.  (Split takes its
 * sizes as an input, from opset 13, the lowest onnxc writes.)
 *
 * The fused product and the Split stand where the first member stood and
 * carry its scope and location (its result becomes the Split's first):
 * the constants are defined throughout the graph and a before the first
 * member, so each result is now made earlier than it was.  The other
 * members are removed (dce keeps ops of other domains).
 *
 * Memory.  A concatenated constant of MAPPED_SLICE bytes or more is
 * written to a temporary file a slice at a time and mapped (ir/mapped.c),
 * the members' pages released once copied: it is never gathered in
 * memory, and the writer streams it out as it streams a weight.
 *
 * Linear: one walk finds the products, chained by the activation they
 * read; each chain is looked at once.  Top-level graphs only (where the
 * quantize pass puts its constants). */
#define _XOPEN_SOURCE 700       /* pwrite */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuse.h"

enum { NB_B = 1, NB_SCALES = 2, NB_ZP = 3, NB_GIDX = 4, NB_BIAS = 5 };
static const int nb_consts[] = { NB_B, NB_SCALES, NB_ZP, NB_BIAS };

/* v is a weight or constant of static shape. */
static int constant(Module *m, ValueId v)
{
	const Value *x = val(m, v);
	const Type *t = x->type;
	if ((x->kind != VK_PARAM && x->kind != VK_BUFFER && !const_tensor(m, v)) || !t || t->kind != TY_TENSOR ||
	    t->rank < 1 || t->dtype == DT_STR)
		return 0;
	for (int32_t i = 0; i < t->rank; i++)
		if (t->dims[i].sym || t->dims[i].v < 0)
			return 0;
	return 1;
}

/* n = MatMulNBits(a, ...) whose B, scales, zero points and bias are
 * weights or constants, without g_idx, of an f32 result whose last dim
 * is N. */
static int product(Module *m, Sym ms, const Node *n)
{
	if (n->domain != ms || n->name != sym_cstr("MatMulNBits") || n->nres != 1 || !n->res[0] || n->nargs > 6 ||
	    !operand(n, 0) || !operand(n, NB_B) || !operand(n, NB_SCALES) || operand(n, NB_GIDX))
		return 0;
	for (size_t i = 0; i < sizeof nb_consts / sizeof *nb_consts; i++) {
		ValueId c = operand(n, (uint32_t)nb_consts[i]);
		if (c && !constant(m, c))
			return 0;
	}
	const Type *t = val(m, n->res[0])->type;
	int64_t nn = fuse_attr_int(n, "N", -1);
	return t && t->kind == TY_TENSOR && t->dtype == DT_F32 && t->rank >= 1 && !t->dims[t->rank - 1].sym &&
	       t->dims[t->rank - 1].v == nn && nn > 0;
}

/* Constants c and d have one dtype and rank, and the same dims but the first. */
static int same_rows(Module *m, ValueId c, ValueId d)
{
	if (!c || !d)
		return !c && !d;
	const Type *a = val(m, c)->type, *b = val(m, d)->type;
	if (a->dtype != b->dtype || a->rank != b->rank)
		return 0;
	for (int32_t i = 1; i < a->rank; i++)
		if (a->dims[i].v != b->dims[i].v)
			return 0;
	return 1;
}

/* Member n can join the product of p. */
static int agrees(Module *m, const Node *p, const Node *n)
{
	static const char *attrs[] = { "K", "bits", "block_size", "accuracy_level" };
	for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
		if (fuse_attr_int(p, attrs[i], -2) != fuse_attr_int(n, attrs[i], -2))
			return 0;
	for (size_t i = 0; i < sizeof nb_consts / sizeof *nb_consts; i++)
		if (!same_rows(m, operand(p, (uint32_t)nb_consts[i]), operand(n, (uint32_t)nb_consts[i])))
			return 0;
	const Type *a = val(m, p->res[0])->type, *b = val(m, n->res[0])->type;
	if (a->rank != b->rank)
		return 0;
	for (int32_t i = 0; i + 1 < a->rank; i++)
		if (!dim_same(a->dims[i], b->dims[i]))
			return 0;
	return 1;
}

static int write_at(int fd, const uint8_t *p, size_t n, size_t off)
{
	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);
		if (k <= 0)
			return -1;
		p += k, n -= (size_t)k, off += (size_t)k;
	}
	return 0;
}

static size_t nbytes_of(Module *m, ValueId v)
{
	const Type *t = val(m, v)->type;
	return tensor_nbytes((DType)t->dtype, type_numel(t));
}

/* The bytes of the members' input i one after the other, to a temporary
 * file when large: NULL if a member's cannot be read or the file written. */
static const uint8_t *joined_bytes(Module *m, RtWeights *w, Node **mem, uint32_t k, uint32_t i, size_t total)
{
	int fd = total < MAPPED_SLICE ? -1 : mapped_tmp();
	uint8_t *b = total < MAPPED_SLICE ? arena_alloc(&m->arena, total ? total : 1) : NULL;
	size_t off = 0;
	int ok = total < MAPPED_SLICE || fd >= 0;
	for (uint32_t j = 0; j < k && ok; j++) {
		size_t nb;
		diag_mute(1);
		const uint8_t *p = rt_value_bytes(w, operand(mem[j], i), &nb);
		diag_mute(0);
		ok = p && nb == nbytes_of(m, operand(mem[j], i));
		for (size_t s = 0; ok && s < nb; s += MAPPED_SLICE) {
			size_t n = nb - s < MAPPED_SLICE ? nb - s : MAPPED_SLICE;
			if (b)
				memcpy(b + off, p + s, n);
			else
				ok = !write_at(fd, p + s, n, off);
			rt_weights_release(w, p + s, n);
			off += n;
		}
	}
	if (!ok || !b) {
		if (fd >= 0 && !ok)
			close(fd);
		return !ok ? NULL : mapped_fd(m, fd, total);
	}
	return b;
}

/* A new `const` of g: the members' input i joined along its first dim,
 * named after the first member's, with n's provenance; VNONE on failure. */
static ValueId joined(Module *m, RtWeights *w, Graph *g, Node **mem, uint32_t k, uint32_t i)
{
	ValueId c0 = operand(mem[0], i);
	const Type *t0 = val(m, c0)->type;
	size_t total = 0;
	int64_t rows = 0;
	for (uint32_t j = 0; j < k; j++) {
		total += nbytes_of(m, operand(mem[j], i));
		rows += val(m, operand(mem[j], i))->type->dims[0].v;
	}
	const uint8_t *data = joined_bytes(m, w, mem, k, i, total);
	if (!data)
		return VNONE;
	Dim *dims = ARENA_ARRAY(&m->arena, Dim, t0->rank);
	memcpy(dims, t0->dims, (size_t)t0->rank * sizeof *dims);
	dims[0] = (Dim){ rows, 0 };
	Tensor *t = ARENA_NEW(&m->arena, Tensor);
	t->type = type_tensor(&m->arena, (DType)t0->dtype, t0->rank, dims);
	t->nbytes = total;
	t->data = data;
	char buf[400];
	snprintf(buf, sizeof buf, "%.300s_joined", sym_str(val(m, c0)->name));
	ValueId v = value_new(m, value_fresh_name(m, sym_cstr(buf)), t->type, VK_CONST);
	val(m, v)->init = t;
	val(m, v)->loc = mem[0]->loc;
	val(m, v)->prov = mem[0]->prov;
	VEC_PUSH(&m->arena, g->inits, v);
	return v;
}

/* The k members become one product and a Split at the first. */
static void join(Module *m, RtWeights *w, Graph *g, Node **mem, uint32_t k)
{
	ValueId cat[6] = { 0 };
	for (size_t i = 0; i < sizeof nb_consts / sizeof *nb_consts; i++) {
		uint32_t in = (uint32_t)nb_consts[i];
		if (operand(mem[0], in) && !(cat[in] = joined(m, w, g, mem, k, in)))
			return;             /* the constants made are unread: dce drops them */
	}
	Node *p = mem[0];
	int64_t *sizes = xmalloc(k * sizeof *sizes), total = 0;
	for (uint32_t j = 0; j < k; j++)
		total += sizes[j] = fuse_attr_int(mem[j], "N", 0);
	const Type *t0 = val(m, p->res[0])->type;
	Dim *dims = ARENA_ARRAY(&m->arena, Dim, t0->rank);
	memcpy(dims, t0->dims, (size_t)t0->rank * sizeof *dims);
	dims[t0->rank - 1] = (Dim){ total, 0 };
	char buf[400];
	snprintf(buf, sizeof buf, "%.300s_joined", sym_str(val(m, p->res[0])->name));
	ValueId r = value_new(m, value_fresh_name(m, sym_cstr(buf)), type_tensor(&m->arena, DT_F32, t0->rank, dims),
			      VK_NODE);

	Node *s = node_new_op(m, OP_ONNX_Split, k, 2, 1);
	s->args[0] = fuse_value_arg(r);
	s->args[1] = fuse_value_arg(const_i64s(m, g, sizes, (int32_t)k, p->res[0], "split"));
	s->kw[0] = (Named){ S_axis, { .kind = A_INT, .u.i = -1 } };
	s->prov = p->prov;
	s->loc = p->loc;
	for (uint32_t j = 0; j < k; j++) {
		s->res[j] = mem[j]->res[0];
		val(m, s->res[j])->def = s;
		val(m, s->res[j])->res = j;
	}
	free(sizes);
	node_insert_before(g, p->next, s);

	Arg *args = ARENA_ARRAY(&m->arena, Arg, p->nargs);
	memcpy(args, p->args, p->nargs * sizeof *args);
	for (uint32_t i = 1; i < p->nargs; i++)
		if (cat[i])
			args[i] = fuse_value_arg(cat[i]);
	Named *kw = ARENA_ARRAY(&m->arena, Named, p->nkw);
	memcpy(kw, p->kw, p->nkw * sizeof *kw);
	for (uint32_t i = 0; i < p->nkw; i++)
		if (kw[i].name == sym_cstr("N"))
			kw[i].val = (Arg){ .kind = A_INT, .u.i = total };
	p->args = args;
	p->kw = kw;
	p->res[0] = r;
	val(m, r)->def = p;
	val(m, r)->res = 0;
	for (uint32_t j = 1; j < k; j++)
		node_remove(g, mem[j]);
}

void fuse_ort_products(Module *m, RtWeights *w, Graph *g, Sym ms)
{
	uint32_t n = 0, nv = m->vals.n;
	for (Node *x = g->first; x; x = x->next)
		n += product(m, ms, x);
	if (n < 2)
		return;
	Node **prod = xmalloc(n * sizeof *prod), **mem = xmalloc(n * sizeof *mem);
	uint32_t *next = xmalloc(n * sizeof *next), *last = xmalloc(nv * sizeof *last);
	for (uint32_t v = 0; v < nv; v++)
		last[v] = UINT32_MAX;
	uint32_t k = 0;
	/* next[i]: the next product reading what product i reads. */
	for (Node *x = g->first; x; x = x->next) {
		if (!product(m, ms, x))
			continue;
		ValueId a = operand(x, 0);
		if (a >= nv)
			continue;
		prod[k] = x;
		next[k] = UINT32_MAX;
		if (last[a] != UINT32_MAX)
			next[last[a]] = k;
		last[a] = k++;
	}
	/* A chain starts at a product no earlier one links to. */
	uint8_t *linked = xcalloc(n, 1);
	for (uint32_t i = 0; i < n; i++)
		if (next[i] != UINT32_MAX)
			linked[next[i]] = 1;
	for (uint32_t i = 0; i < n; i++) {
		if (linked[i])
			continue;
		uint32_t km = 0;
		for (uint32_t j = i; j != UINT32_MAX; j = next[j])
			if (j == i || agrees(m, prod[i], prod[j]))
				mem[km++] = prod[j];
		if (km >= 2)
			join(m, w, g, mem, km);
	}
	free(linked);
	free(prod);
	free(mem);
	free(next);
	free(last);
}
