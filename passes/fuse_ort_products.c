/* fuse_ort_products.c - -target=ort (the pass fuse_ort, after its walk):
 * the MatMulNBits (or f32 MatMul, FusedMatMul) products of one activation
 * with constant weights become one product and a Split, as the Q/K/V
 * projections of an attention or the gate and up projections of a gated
 * MLP: one kernel call, which reads the activation once, where there were
 * two or three.
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
 * side, which the Split takes apart.  The same holds for FusedMatMul(a,
 * W_i, transB = 1), what fuse_ort's walk made of an f32 Linear: W_i [N_i,
 * K] row by row of N, joined into W [N_1 + ... + N_m, K] (members of one
 * alpha, without transA or the batch transposes); an f32 MatMul(a, W_i)
 * with W_i [K, N_i] joins side by side, W [K, N_1 + ... + N_m] (row r the
 * members' rows r).  The f32 members' bias Adds, one a part, become one
 * Add of the biases joined, before the Split (join_bias).
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
 * quantize pass puts its constants; the weights are initializers there). */
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

/* n is the default domain's MatMul (its weight [K, N]). */
static int is_matmul(const Node *n) { return n->domain == S_onnx && n->op == OP_ONNX_MatMul; }

/* n = MatMulNBits(a, ...) whose B, scales, zero points and bias are
 * weights or constants, without g_idx, of an f32 result whose last dim
 * is N; or n = FusedMatMul(a, W, transB = 1) (what fuse_ort made of a
 * Linear) with W an f32 weight or constant [N, K], which holds its rows
 * of N one after the other as MatMulNBits' B does. */
static int product(Module *m, Sym ms, const Node *n)
{
	if (n->nres != 1 || !n->res[0] || !operand(n, 0) || !operand(n, NB_B))
		return 0;
	int64_t nn;
	int matmul = is_matmul(n), fused = n->domain == ms && n->name == sym_cstr("FusedMatMul");
	if (matmul || fused) {
		const Type *w = constant(m, operand(n, NB_B)) ? val(m, operand(n, NB_B))->type : NULL;
		if (n->nargs != 2 || !w || w->dtype != DT_F32 || w->rank != 2 ||
		    (fused && (fuse_attr_int(n, "transB", 0) != 1 || fuse_attr_int(n, "transA", 0) ||
			       fuse_attr_int(n, "transBatchA", 0) || fuse_attr_int(n, "transBatchB", 0))))
			return 0;
		nn = w->dims[matmul ? 1 : 0].v;     /* MatMul's [K, N], FusedMatMul's [N, K] */
	} else {
		if (n->domain != ms || n->name != sym_cstr("MatMulNBits") || n->nargs > 6 || !operand(n, NB_SCALES) ||
		    operand(n, NB_GIDX))
			return 0;
		for (size_t i = 0; i < sizeof nb_consts / sizeof *nb_consts; i++) {
			ValueId c = operand(n, (uint32_t)nb_consts[i]);
			if (c && !constant(m, c))
				return 0;
		}
		nn = fuse_attr_int(n, "N", -1);
	}
	const Type *t = val(m, n->res[0])->type;
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
	if (p->domain != n->domain || p->name != n->name ||
	    fuse_attr_float(p, sym_cstr("alpha"), 1.0) != fuse_attr_float(n, sym_cstr("alpha"), 1.0))
		return 0;
	if (is_matmul(p) && val(m, operand(p, NB_B))->type->dims[0].v != val(m, operand(n, NB_B))->type->dims[0].v)
		return 0;
	for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
		if (fuse_attr_int(p, attrs[i], -2) != fuse_attr_int(n, attrs[i], -2))
			return 0;
	for (size_t i = 0; i < sizeof nb_consts / sizeof *nb_consts && !is_matmul(p); i++)
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

/* The members' weights W_j [K, N_j] side by side, [K, N_1 + ... + N_m]
 * (row r is the members' rows r one after the other), to a temporary file
 * when large, a block of rows at a time, the members' pages released once
 * copied: NULL if a member's cannot be read or the file written. */
static const uint8_t *joined_cols(Module *m, RtWeights *w, Node **mem, uint32_t k, size_t total)
{
	int64_t rows = val(m, operand(mem[0], NB_B))->type->dims[0].v;
	const uint8_t **src = xcalloc(k, sizeof *src);
	size_t *len = xcalloc(k, sizeof *len), width = 0;
	int ok = rows > 0;
	for (uint32_t j = 0; j < k && ok; j++) {
		size_t nb;
		diag_mute(1);
		src[j] = rt_value_bytes(w, operand(mem[j], NB_B), &nb);
		diag_mute(0);
		ok = src[j] && nb == nbytes_of(m, operand(mem[j], NB_B));
		len[j] = nb / (size_t)rows;
		width += len[j];
	}
	int fd = total < MAPPED_SLICE ? -1 : mapped_tmp();
	uint8_t *b = total < MAPPED_SLICE ? arena_alloc(&m->arena, total ? total : 1) : NULL;
	ok = ok && (b || fd >= 0);
	size_t block = width && MAPPED_SLICE / width ? MAPPED_SLICE / width : 1;
	uint8_t *buf = ok && !b ? xmalloc(block * width) : NULL;
	for (size_t r0 = 0; ok && r0 < (size_t)rows; r0 += block) {
		size_t r1 = r0 + block < (size_t)rows ? r0 + block : (size_t)rows;
		uint8_t *dst = b ? b + r0 * width : buf;
		for (size_t r = r0; r < r1; r++)
			for (uint32_t j = 0, off = 0; j < k; off += (uint32_t)len[j], j++)
				memcpy(dst + (r - r0) * width + off, src[j] + r * len[j], len[j]);
		if (!b)
			ok = !write_at(fd, buf, (r1 - r0) * width, r0 * width);
		for (uint32_t j = 0; j < k; j++)
			rt_weights_release(w, src[j] + r0 * len[j], (r1 - r0) * len[j]);
	}
	free(buf);
	free(src);
	free(len);
	if (!ok || !b) {
		if (fd >= 0 && !ok)
			close(fd);
		return !ok ? NULL : mapped_fd(m, fd, total);
	}
	return b;
}

/* A new `const` of g holding t, named after c0 + "_joined", with the
 * location and provenance of n. */
static ValueId new_joined(Module *m, Graph *g, Tensor *t, ValueId c0, const Node *n)
{
	char buf[400];
	snprintf(buf, sizeof buf, "%.300s_joined", sym_str(val(m, c0)->name));
	ValueId v = value_new(m, value_fresh_name(m, sym_cstr(buf)), t->type, VK_CONST);
	val(m, v)->init = t;
	val(m, v)->loc = n->loc;
	val(m, v)->prov = n->prov;
	VEC_PUSH(&m->arena, g->inits, v);
	return v;
}

/* A new `const` of g: the members' input i joined along its first dim
 * (along N, its second, for MatMul's weight [K, N]),
 * named after the first member's, with n's provenance; VNONE on failure. */
static ValueId joined(Module *m, RtWeights *w, Graph *g, Node **mem, uint32_t k, uint32_t i)
{
	ValueId c0 = operand(mem[0], i);
	const Type *t0 = val(m, c0)->type;
	int32_t along = is_matmul(mem[0]) ? 1 : 0;     /* MatMul's [K, N]: along N */
	size_t total = 0;
	int64_t len = 0;
	for (uint32_t j = 0; j < k; j++) {
		total += nbytes_of(m, operand(mem[j], i));
		len += val(m, operand(mem[j], i))->type->dims[along].v;
	}
	const uint8_t *data = along ? joined_cols(m, w, mem, k, total) : joined_bytes(m, w, mem, k, i, total);
	if (!data)
		return VNONE;
	Dim *dims = ARENA_ARRAY(&m->arena, Dim, t0->rank);
	memcpy(dims, t0->dims, (size_t)t0->rank * sizeof *dims);
	dims[along] = (Dim){ len, 0 };
	Tensor *t = ARENA_NEW(&m->arena, Tensor);
	t->type = type_tensor(&m->arena, (DType)t0->dtype, t0->rank, dims);
	t->nbytes = total;
	t->data = data;
	return new_joined(m, g, t, c0, mem[0]);
}

/* Who reads what, counted before any join: the parts' Adds are found so. */
typedef struct Readers {
	uint32_t *uses;             /* module_use_counts */
	Node **reader;              /* fuse_readers */
	uint32_t nv;
} Readers;

/* The parts y_j of Split s (of a joined f32 product r) each read only by
 * Add(y_j, b_j) or Add(b_j, y_j), b_j an f32 weight or constant [N_j]
 * (the biases of Q/K/V projections, Qwen2's): one Add(r, b) of the
 * biases joined, before the Split, whose results become the Adds'.
 * Add broadcasts b_j along the last dim of y_j, b along r's, where y_j is
 * its slice: the same sums. */
static void join_bias(Module *m, RtWeights *w, Graph *g, Node *s, const Readers *rd)
{
	uint32_t k = s->nres;
	Node **add = xcalloc(k, sizeof *add);
	ValueId *b = xcalloc(k, sizeof *b);
	size_t total = 0;
	int ok = 1;
	for (uint32_t j = 0; j < k && ok; j++) {
		ValueId y = s->res[j];
		Node *a = y < rd->nv && rd->uses[y] == 1 ? rd->reader[y] : NULL;
		ok = a && a->domain == S_onnx && a->op == OP_ONNX_Add && a->nargs == 2 && a->nres == 1 &&
		     operand(a, 0) != operand(a, 1);
		if (!ok)
			break;
		b[j] = operand(a, 0) == y ? operand(a, 1) : operand(a, 0);
		const Type *ty = val(m, y)->type, *tb = b[j] ? val(m, b[j])->type : NULL, *ta = val(m, a->res[0])->type;
		ok = b[j] && constant(m, b[j]) && tb->dtype == DT_F32 && tb->rank == 1 &&
		     tb->dims[0].v == ty->dims[ty->rank - 1].v && ta && type_equal(ta, ty);
		add[j] = a;
		total += ok ? nbytes_of(m, b[j]) : 0;
	}
	uint8_t *data = ok ? arena_alloc(&m->arena, total ? total : 1) : NULL;
	for (uint32_t j = 0, off = 0; ok && j < k; j++) {
		size_t nb;
		diag_mute(1);
		const uint8_t *p = rt_value_bytes(w, b[j], &nb);
		diag_mute(0);
		ok = p && nb == nbytes_of(m, b[j]);
		if (ok)
			memcpy(data + off, p, nb);
		off += (uint32_t)nb;
	}
	if (ok) {
		Dim *d = ARENA_NEW(&m->arena, Dim);
		*d = (Dim){ (int64_t)(total / 4), 0 };
		Tensor *t = ARENA_NEW(&m->arena, Tensor);
		t->type = type_tensor(&m->arena, DT_F32, 1, d);
		t->nbytes = total;
		t->data = data;
		ValueId r = operand(s, 0), bias = new_joined(m, g, t, b[0], add[0]);
		Node *na = node_new_op(m, OP_ONNX_Add, 1, 2, 0);
		na->args[0] = fuse_value_arg(r);
		na->args[1] = fuse_value_arg(bias);
		s->args[0] = fuse_value_arg(fuse_place(m, g, na, s, add[0], r, "bias", val(m, r)->type));
		for (uint32_t j = 0; j < k; j++) {
			ValueId y = add[j]->res[0];
			val(m, s->res[j])->def = NULL;
			s->res[j] = y;
			val(m, y)->def = s;
			val(m, y)->res = j;
			node_remove(g, add[j]);
		}
	}
	free(add);
	free(b);
}

/* The k members become one product and a Split at the first. */
static void join(Module *m, RtWeights *w, Graph *g, Node **mem, uint32_t k, const Readers *rd)
{
	ValueId cat[6] = { 0 };
	for (size_t i = 0; i < sizeof nb_consts / sizeof *nb_consts; i++) {
		uint32_t in = (uint32_t)nb_consts[i];
		if (operand(mem[0], in) && !(cat[in] = joined(m, w, g, mem, k, in)))
			return;             /* the constants made are unread: dce drops them */
	}
	Node *p = mem[0];
	int64_t *sizes = xmalloc(k * sizeof *sizes), total = 0;
	for (uint32_t j = 0; j < k; j++) {
		const Type *tj = val(m, mem[j]->res[0])->type;
		total += sizes[j] = tj->dims[tj->rank - 1].v;
	}
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
	Named *kw = ARENA_ARRAY(&m->arena, Named, p->nkw ? p->nkw : 1);
	if (p->nkw)                 /* a MatMul has no attributes (kw NULL) */
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
	if (p->name != sym_cstr("MatMulNBits"))      /* which takes its bias itself */
		join_bias(m, w, g, s, rd);
}

void fuse_ort_products(Module *m, RtWeights *w, Graph *g, Sym ms)
{
	uint32_t n = 0, nv = m->vals.n;
	for (Node *x = g->first; x; x = x->next)
		n += product(m, ms, x);
	if (n < 2)
		return;
	Readers rd = { module_use_counts(m, WALK_PROGRAM), fuse_readers(m, g), nv };
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
			join(m, w, g, mem, km, &rd);
	}
	free(linked);
	free(rd.uses);
	free(rd.reader);
	free(prod);
	free(mem);
	free(next);
	free(last);
}
