/* quantize.c - -quantize=int4|int8: weight-only quantization of the
 * constant weights of MatMul and Gemm, blockwise along K (the reduction
 * dim), round to nearest; -quantize=int8-dynamic: int8 weights, A
 * quantized at run time (below).
 *
 *   MatMul(a, w)  w: f32[K,N] a weight or constant, or Transpose(w') of
 *                 one w': f32[N,K]; Gemm(a, w[, c]) with transA = 0,
 *                 alpha = beta = 1 (transB = 1: w is [N,K])
 *   -target=ort:  com.microsoft::MatMulNBits(a, B, scales[, zero_points]
 *                 [, none, c], K, N, bits, block_size[, accuracy_level])
 *                 in place of the node
 *   -target=onnx: the same node reading DequantizeLinear(q, scale[, zp],
 *                 axis = w's K axis, block_size) instead of w (opset 21)
 *
 * Each block of `block` consecutive values along K (the last one shorter
 * when K is not a multiple) gets its own scale, in w's dtype (f32 or
 * f16).  Symmetric (the default): s = m / -(qmax + 1), qmax = 7 or 127,
 * m the block's value of largest magnitude (the first of them), q =
 * clamp(rint(x / s), -qmax - 1, qmax): m's code is -8 (-128), the codes
 * use the whole signed range, and s is negative when m is positive (a
 * step of max|x| / 8 where max|x| / 7 would leave -8 unused: 0.77x the
 * rounding error's power).  With zero points: lo = min(x, 0),
 * hi = max(x, 0), s = (hi - lo) / umax, umax = 15 or 255, z =
 * clamp(rint(-lo / s), 0, umax), q = clamp(rint(x / s) + z, 0, umax).
 * s is rounded to its dtype before q is computed from it, in f32, so that
 * (q - z) * s is what both forms dequantize.  A block of zeros has s = 0
 * and q = z.
 *
 * MatMulNBits holds B as uint8 [N, nblocks, block * bits / 8]: each row
 * of N a run of blocks, codes packed low bits first; the last block of a
 * row is padded with the zero point's code (its dequantized value is 0,
 * and A has no column to multiply it by).  Symmetric codes are stored
 * offset by 2^(bits-1), the op's zero point when none is given;
 * scales are [N * nblocks]; zero points, packed the same way, are
 * [N * ceil(nblocks * bits / 8)].  DequantizeLinear keeps w's own layout:
 * q is int4/int8 (uint4/uint8 with zero points) of w's shape, packed as
 * ONNX packs 4-bit tensors, and scale and zero point have w's shape with
 * the K axis counted in blocks.
 *
 * At -target=ort fold leaves Transpose(w') of a 2-D weight to this pass
 * (fold.c: kept_for_quantize): w' [N,K] is read as it is.
 *
 * Memory.  A weight is read a band of rows at a time, each band's pages
 * released once read (a [K,N] weight quantized for MatMulNBits is first
 * transposed so, into a temporary file); every output is produced in order and goes
 * to a temporary file (ir/mapped.c) once it passes a slice, so the writer
 * streams it out as it streams a weight.  A 7B model's weights are never
 * all in memory.  A weight read by several MatMuls is quantized once.
 *
 * int8-dynamic: the weight, f32 only, as MatMulInteger's B: int8 [K,N],
 * one f32 scale a column, s = max|x| / 127, symmetric codes (a [N,K]
 * weight is transposed into a temporary file first; the weight is read
 * twice, maxima then codes).  The node becomes
 *   -target=onnx: DynamicQuantizeLinear(a) -> (a_q, a_s, a_zp),
 *                 Cast(MatMulInteger(a_q, B, a_zp), f32) * (a_s * b_s)
 *                 [+ c], n the last node (the form ONNX Runtime fuses into
 *                 DynamicQuantizeMatMul)
 *   -target=ort:  com.microsoft::DynamicQuantizeMatMul(a, B, b_s[, , c]),
 *                 c the Gemm's bias or that of an Add reading n alone; the
 *                 products that read one a share its DynamicQuantizeLinear
 *                 and are com.microsoft::MatMulIntegerToFloat(a_q, B, a_s,
 *                 b_s, a_zp[, , c]).
 *
 * -quantize-exclude=P,Q (every mode): a node whose weight name, node name
 * or module path matches a glob stays as it is.
 *
 * -quantize-embedding (every mode): Gather(w, ids) along axis 0 of a
 * weight w [V,K] too, ids given by a graph input (token, position or
 * token-type ids: not indices the model computes, such as a mixture's
 * experts gathering their biases), each row's K values in blocks as above
 * (int8-dynamic: 8 bits, symmetric, blocks of 32):
 *   -target=ort:  com.microsoft::GatherBlockQuantized(B, ids, scales[,
 *                 zero_points], gather_axis = 0, quantize_axis = 1,
 *                 block_size, bits) in place: B uint8 [V, K * bits / 8],
 *                 each row's codes packed low bits first, offset like
 *                 MatMulNBits' but the last block not padded (K even at 4
 *                 bits); scales [V, nblocks], zero points [V, ceil(nblocks *
 *                 bits / 8)], a row's packed like MatMulNBits'
 *   -target=onnx: DequantizeLinear(Gather(q, ids), Gather(scale, ids)[,
 *                 Gather(zp, ids)], axis = -1, block_size) in place: q int8
 *                 (uint8 with zero points) [V, K] even at 4 bits, as ONNX
 *                 Runtime's Gather takes no 4-bit tensor; scale and zero
 *                 point [V, nblocks] (opset 21)
 * A table the LM head also reads (tied embeddings) is quantized once for
 * each: MatMulNBits and GatherBlockQuantized lay their codes out apart.
 *
 * Not quantized: weights of other dtypes, shapes that are not static, a
 * MatMul whose A has rank below 2 (ort), a Gemm whose bias is not a vector
 * of N (ort), graphs other than the top-level ones; without
 * -quantize-embedding, Gather's embedding table, even when it is the LM
 * head's weight (the float copy stays for the Gather).  Linear: one walk,
 * use counts computed once. */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "passes.h"
#include "runtime.h"

enum { QZ_OPSET = 21 };         /* DequantizeLinear's block_size and int4 */
enum { QZ_SMALL = 1 << 20 };    /* outputs below this stay in the arena */

/* ---- sinks: an output written in order, to memory or a file ---------- */

typedef struct Sink {
	uint8_t *buf;
	size_t n, cap;              /* bytes in buf; buf holds at most cap */
	size_t off;                 /* bytes already written to fd */
	int fd;                     /* -1 until buf first fills */
	int bits;                   /* 4: codes are nibbles, low first; 8: bytes */
	int half;                   /* a low nibble is waiting in buf[n - 1] */
	Status st;
} Sink;

static void sink_init(Sink *s, int bits)
{
	*s = (Sink){ .cap = MAPPED_SLICE, .fd = -1, .bits = bits };
	s->buf = xmalloc(s->cap);
}

static void sink_flush(Sink *s)
{
	if (s->fd < 0 && (s->fd = mapped_tmp()) < 0)
		s->st = FAILED;
	for (size_t i = 0; i < s->n && s->st == OK;) {
		ssize_t k = pwrite(s->fd, s->buf + i, s->n - i, (off_t)(s->off + i));
		if (k <= 0)
			s->st = FAILED;
		i += k > 0 ? (size_t)k : 0;
	}
	s->off += s->n;
	s->n = 0;
}

static void sink_byte(Sink *s, uint8_t b)
{
	if (s->n == s->cap)
		sink_flush(s);
	s->buf[s->n++] = b;
}

/* One code of s->bits bits (its low bits are kept). */
static void sink_code(Sink *s, int q)
{
	if (s->bits == 8) {
		sink_byte(s, (uint8_t)q);
		return;
	}
	if (s->half)
		s->buf[s->n - 1] |= (uint8_t)((q & 15) << 4);
	else
		sink_byte(s, (uint8_t)(q & 15));
	s->half = !s->half;
}

/* Ends a run of nibbles on a byte boundary (a row of packed codes). */
static void sink_align(Sink *s) { s->half = 0; }

static void sink_raw(Sink *s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sink_byte(s, p[i]);
}

/* The bytes as a tensor of type t: in the arena when they never left
 * memory, else mapped from the file.  NULL if a write failed. */
static Tensor *sink_tensor(Module *m, Sink *s, Type *t)
{
	Tensor *r = ARENA_NEW(&m->arena, Tensor);
	r->type = t;
	r->nbytes = s->off + s->n;
	if (s->fd < 0 && s->n < QZ_SMALL) {
		uint8_t *d = arena_alloc(&m->arena, s->n + 1);
		memcpy(d, s->buf, s->n);
		r->data = d;
	} else {
		sink_flush(s);
		r->data = s->st == OK ? mapped_fd(m, s->fd, r->nbytes) : NULL;
		if (s->st != OK && s->fd >= 0)
			close(s->fd);
		s->fd = -1;
	}
	free(s->buf);
	s->buf = NULL;
	return r->data || !r->nbytes ? r : NULL;
}

/* ---- the arithmetic ---------------------------------------------------- */

typedef struct Quant {
	int bits, block, zp;        /* zp: with zero points (asymmetric) */
	DType dt;                   /* the weight's and the scales' dtype */
} Quant;

/* x rounded to the scales' dtype. */
static float stored(DType dt, float x)
{
	uint8_t b[4];
	if (dt == DT_F32 || !tensor_put(dt, b, 0, x, 0, 0))
		return x;
	return (float)tensor_get_f(dt, b, 0);
}

/* x (a rounded value) clamped to [lo, hi]; a NaN weight gives lo, not
 * an undefined conversion. */
static int clampi(float x, int lo, int hi)
{
	return !(x >= (float)lo) ? lo : x > (float)hi ? hi : (int)x;
}

/* The symmetric code of x at scale s (s != 0): the whole signed range,
 * -qmax - 1 .. qmax. */
static int sym_code(float x, float s, int qmax) { return clampi(rintf(x / s), -qmax - 1, qmax); }

/* The codes of the n values at x (n <= block), their scale and zero
 * point: symmetric codes are signed, the others unsigned (header). */
static void quant_block(const Quant *q, const float *x, int n, int *code, float *scale, int *zp)
{
	int qmax = q->zp ? (1 << q->bits) - 1 : (1 << (q->bits - 1)) - 1;
	float lo = 0, hi = 0, m = 0;
	for (int i = 0; i < n; i++) {
		lo = x[i] < lo ? x[i] : lo;
		hi = x[i] > hi ? x[i] : hi;
		m = fabsf(x[i]) > fabsf(m) ? x[i] : m;
	}
	float s = stored(q->dt, q->zp ? (hi - lo) / (float)qmax : m / (float)(-qmax - 1));
	int z = q->zp && s != 0 ? clampi(rintf(-lo / s), 0, qmax) : 0;
	for (int i = 0; i < n; i++)
		code[i] = s == 0 ? z : q->zp ? clampi(rintf(x[i] / s) + (float)z, 0, qmax) : sym_code(x[i], s, qmax);
	*scale = s;
	*zp = z;
}

/* Element i of a weight of dtype dt, as f32 (exact for f32 and f16). */
static float elem(DType dt, const uint8_t *p, size_t i)
{
	float f;
	if (dt == DT_F32) {
		memcpy(&f, p + 4 * i, 4);
		return f;
	}
	return (float)tensor_get_f(dt, p, i);
}

static void put_scale(Sink *s, DType dt, float x)
{
	uint8_t b[4];
	tensor_put(dt, b, 0, x, 0, 0);
	sink_raw(s, b, (size_t)dtype_bits(dt) / 8);
}

/* ---- one weight -------------------------------------------------------- */

/* What one weight becomes: codes, scales and zero points (VNONE: none),
 * and the DequantizeLinear made of them (-target=onnx, once made). */
typedef struct QOut { ValueId q, scale, zp, dq; } QOut;

/* The layouts a weight's codes are written in (header). */
typedef enum Form {
	F_DQ,                       /* DequantizeLinear: the weight's own layout, 4-bit codes packed */
	F_NBITS,                    /* MatMulNBits: rows of N, blocks padded, codes offset */
	F_DYN,                      /* int8-dynamic: MatMulInteger's int8 [K,N] */
	F_GATHER,                   /* GatherBlockQuantized: rows of V, codes offset, not padded */
	F_GATHER_DQ,                /* Gather + DequantizeLinear: rows of V, a byte a code */
} Form;

typedef struct Job {
	const Quant *q;
	Form form;
	RtWeights *w;
	const uint8_t *src;
	int64_t rows, cols;         /* the weight's shape */
	int kaxis;                  /* 0: [K,N]; 1: [N,K] */
	int64_t k, n, nblk;
	Sink codes, scales, zps;
	float *x;                   /* one block, or a band of rows of K */
	int *code;
} Job;

/* One block, at x: codes and scale to their sinks.  The contrib ops'
 * symmetric codes are offset by their default zero point, and
 * MatMulNBits' are padded to a whole block with the zero point's code. */
static int emit_block(Job *j, const float *x, int len)
{
	float s;
	int z;
	quant_block(j->q, x, len, j->code, &s, &z);
	int packed = j->form == F_NBITS || j->form == F_GATHER;
	int off = packed && !j->q->zp ? 1 << (j->q->bits - 1) : 0;
	for (int i = 0; i < len; i++)
		sink_code(&j->codes, j->code[i] + off);
	for (int i = len; j->form == F_NBITS && i < j->q->block; i++)
		sink_code(&j->codes, z + off);
	put_scale(&j->scales, j->q->dt, s);
	return z;
}

/* MatMulNBits and GatherBlockQuantized from a row's K values at x: its
 * blocks, then its packed zero points. */
static void packed_row(Job *j, const float *x)
{
	for (int64_t b = 0; b < j->nblk; b++) {
		int64_t k0 = b * j->q->block, len = j->k - k0 < j->q->block ? j->k - k0 : j->q->block;
		int z = emit_block(j, x + k0, (int)len);
		if (j->q->zp)
			sink_code(&j->zps, z);
	}
	sink_align(&j->zps);
}

/* A [N,K] weight: each row is one output row, whatever the form; a band
 * of rows is read, then released. */
static void run_rows(Job *j)
{
	size_t es = (size_t)dtype_bits(j->q->dt) / 8, row = (size_t)j->k * es, done = 0;
	for (int64_t r = 0; r < j->n; r++) {
		const uint8_t *p = j->src + (size_t)r * row;
		for (int64_t c = 0; c < j->k; c++)
			j->x[c] = elem(j->q->dt, p, (size_t)c);
		if (j->form == F_NBITS || j->form == F_GATHER) {
			packed_row(j, j->x);
		} else {
			for (int64_t b = 0; b < j->nblk; b++) {
				int64_t k0 = b * j->q->block, len = j->k - k0 < j->q->block ? j->k - k0 : j->q->block;
				int z = emit_block(j, j->x + k0, (int)len);
				if (j->q->zp)
					sink_code(&j->zps, z);
			}
		}
		size_t end = (size_t)(r + 1) * row;
		if (end - done >= MAPPED_SLICE || r + 1 == j->n) {
			rt_weights_release(j->w, j->src + done, end - done);
			done = end;
		}
	}
}

/* A [K,N] weight for DequantizeLinear: a band of `block` rows at a time;
 * in it, column by column, one block each.  Codes come out in row order,
 * so a column's codes go to a band buffer first. */
static void run_kn_dq(Job *j, int *band)
{
	size_t es = (size_t)dtype_bits(j->q->dt) / 8;
	for (int64_t b = 0; b < j->nblk; b++) {
		int64_t k0 = b * j->q->block, len = j->k - k0 < j->q->block ? j->k - k0 : j->q->block;
		const uint8_t *p = j->src + (size_t)(k0 * j->n) * es;
		for (int64_t c = 0; c < j->n; c++) {
			for (int64_t i = 0; i < len; i++)
				j->x[i] = elem(j->q->dt, p, (size_t)(i * j->n + c));
			float s;
			int z;
			quant_block(j->q, j->x, (int)len, j->code, &s, &z);
			for (int64_t i = 0; i < len; i++)
				band[i * j->n + c] = j->code[i];
			put_scale(&j->scales, j->q->dt, s);
			if (j->q->zp)
				sink_code(&j->zps, z);
		}
		for (int64_t i = 0; i < len * j->n; i++)
			sink_code(&j->codes, band[i]);
		rt_weights_release(j->w, p, (size_t)(len * j->n) * es);
	}
}

/* j->src, a rows x cols matrix, becomes its transpose in a temporary
 * file, mapped for j (mapped_drop(j) frees it). */
static Status transpose_src(Job *j, int64_t rows, int64_t cols)
{
	size_t es = (size_t)dtype_bits(j->q->dt) / 8, nbytes = (size_t)(rows * cols) * es;
	int fd = mapped_tmp();
	if (fd < 0 || rt_transpose_to_fd(j->w, j->src, rows, cols, es, fd) != OK) {
		if (fd >= 0)
			close(fd);
		return FAILED;
	}
	const uint8_t *t = mapped_fd(j, fd, nbytes);
	if (!t)
		return FAILED;
	j->src = t;
	return OK;
}

/* A [K,N] weight for MatMulNBits: its output rows are the weight's
 * columns.  Reading a column band of every row would map most of the
 * weight at once (each fault maps the pages around it too), so the weight
 * is first transposed into a temporary file, a band of rows at a time
 * (runtime/transpose_stream.c), and that file's rows are quantized; the
 * file is unmapped, and so freed, once done. */
static Status run_kn_nbits(Job *j)
{
	if (transpose_src(j, j->k, j->n) != OK)
		return FAILED;
	run_rows(j);
	mapped_drop(j);
	return OK;
}

/* int8-dynamic: B as MatMulInteger reads it, int8 [K,N] (a [N,K] weight
 * is first transposed so), one f32 scale a column, s = max|x| / 127,
 * symmetric codes.  The weight is read twice, a band of rows at a time:
 * the columns' maxima, then the codes. */
static Status run_dynamic(Job *j)
{
	if (j->kaxis && transpose_src(j, j->n, j->k) != OK)
		return FAILED;
	float *s = xcalloc((size_t)j->n, sizeof *s);
	size_t row = (size_t)j->n * 4;
	for (int pass = 0; pass < 2; pass++) {
		size_t done = 0;
		for (int64_t r = 0; r < j->k; r++) {
			const uint8_t *p = j->src + (size_t)r * row;
			for (int64_t c = 0; c < j->n; c++) {
				float x = elem(DT_F32, p, (size_t)c);
				if (!pass)
					s[c] = fabsf(x) > s[c] ? fabsf(x) : s[c];
				else
					sink_code(&j->codes, s[c] == 0 ? 0 : sym_code(x, s[c], 127));
			}
			size_t end = (size_t)(r + 1) * row;
			if (end - done >= MAPPED_SLICE || r + 1 == j->k) {
				rt_weights_release(j->w, j->src + done, end - done);
				done = end;
			}
		}
		for (int64_t c = 0; !pass && c < j->n; c++) {
			s[c] /= 127.0f;
			put_scale(&j->scales, DT_F32, s[c]);
		}
	}
	free(s);
	if (j->kaxis)
		mapped_drop(j);
	return OK;
}

/* ---- the pass ---------------------------------------------------------- */

typedef struct Qz {
	Module *m;
	const PassOptions *opt;
	Quant q;                    /* q.dt: the dtype of the weight being quantized */
	RtWeights w;
	uint32_t *uses;
	QOut *done[3];              /* by ValueId, for products by K axis, [2] for Gather: the
				     * weight's quantized values */
	Node **user;                /* int8-dynamic at ort: by ValueId, a node that reads it */
	uint32_t *areads;           /* int8-dynamic at ort: by ValueId, the products quantized with it as A */
	Node **aq;                  /* int8-dynamic at ort: by ValueId, A's DynamicQuantizeLinear */
	uint32_t nv;                /* values before the pass */
	uint32_t count;
	uint32_t rows;              /* Gathers of a quantized table */
	Status st;
} Qz;

static Type *tensor_type(Module *m, DType dt, int rank, const int64_t *d)
{
	Dim *dims = ARENA_ARRAY(&m->arena, Dim, rank);
	for (int i = 0; i < rank; i++)
		dims[i] = (Dim){ d[i], 0 };
	return type_tensor(&m->arena, dt, rank, dims);
}

/* A new `const` value of graph g named after weight wv, with the
 * provenance of node n, the first that reads it. */
static ValueId new_const(Qz *z, Graph *g, const Node *n, ValueId wv, const char *suffix, Tensor *t)
{
	char buf[400];
	snprintf(buf, sizeof buf, "%.300s_%s", sym_str(val(z->m, wv)->name), suffix);
	ValueId id = value_new(z->m, value_fresh_name(z->m, sym_cstr(buf)), t->type, VK_CONST);
	val(z->m, id)->init = t;
	val(z->m, id)->loc = n->loc;
	val(z->m, id)->prov = n->prov;
	VEC_PUSH(&z->m->arena, g->inits, id);
	return id;
}

/* Runs job j over its weight in the order its layout and form need. */
static Status run_job(Job *j)
{
	Status st = OK;
	j->x = xmalloc((size_t)(j->k > j->q->block ? j->k : j->q->block) * sizeof *j->x);
	j->code = xmalloc((size_t)j->q->block * sizeof *j->code);
	if (j->kaxis) {
		run_rows(j);
	} else if (j->form == F_NBITS) {
		st = run_kn_nbits(j);
	} else {
		int *band = xmalloc((size_t)(j->q->block * j->n) * sizeof *band);
		run_kn_dq(j, band);
		free(band);
	}
	free(j->x);
	free(j->code);
	return st;
}

/* The types of j's three outputs (header: the forms' layouts). */
static void job_types(Qz *z, const Job *j, Type **tq, Type **ts, Type **tz)
{
	const Quant *q = &z->q;
	DType cdt = j->form == F_NBITS || j->form == F_GATHER ? DT_U8
		  : q->bits == 4 && j->form == F_DQ ? (q->zp ? DT_U4 : DT_I4) : q->zp ? DT_U8 : DT_I8;
	if (j->form == F_GATHER) {
		int64_t b[2] = { j->n, (j->k * q->bits + 7) / 8 }, s[2] = { j->n, j->nblk };
		int64_t zs[2] = { j->n, (j->nblk * q->bits + 7) / 8 };
		*tq = tensor_type(z->m, cdt, 2, b);
		*ts = tensor_type(z->m, q->dt, 2, s);
		*tz = tensor_type(z->m, DT_U8, 2, zs);
		return;
	}
	if (j->form == F_NBITS) {
		int64_t b[3] = { j->n, j->nblk, (int64_t)q->block * q->bits / 8 }, s[1] = { j->n * j->nblk };
		int64_t zs[1] = { j->n * ((j->nblk * q->bits + 7) / 8) };
		*tq = tensor_type(z->m, cdt, 3, b);
		*ts = tensor_type(z->m, q->dt, 1, s);
		*tz = tensor_type(z->m, DT_U8, 1, zs);
		return;
	}
	int64_t w[2] = { j->rows, j->cols };
	int64_t s[2] = { j->kaxis ? j->rows : j->nblk, j->kaxis ? j->nblk : j->cols };
	*tq = tensor_type(z->m, cdt, 2, w);
	*ts = tensor_type(z->m, q->dt, 2, s);
	*tz = tensor_type(z->m, cdt, 2, s);
}

/* Quantizes weight wv (of shape [rows, cols], K along kaxis) in form f;
 * 0 after a failed read or write (the weight then stays as it is). */
static int quantize_weight(Qz *z, Graph *g, const Node *n, ValueId wv, int kaxis, Form f, QOut *out)
{
	const Type *t = val(z->m, wv)->type;
	size_t nbytes;
	diag_mute(1);
	const uint8_t *src = rt_value_bytes(&z->w, wv, &nbytes);
	diag_mute(0);
	if (!src || nbytes != tensor_nbytes(z->q.dt, type_numel(t)))
		return 0;
	Job j = { .q = &z->q, .form = f, .w = &z->w, .src = src, .rows = t->dims[0].v, .cols = t->dims[1].v,
		  .kaxis = kaxis };
	j.k = kaxis ? j.cols : j.rows;
	j.n = kaxis ? j.rows : j.cols;
	j.nblk = (j.k + z->q.block - 1) / z->q.block;
	int dyn = f == F_DYN, gather = f == F_GATHER || f == F_GATHER_DQ;
	sink_init(&j.codes, f == F_GATHER_DQ ? 8 : z->q.bits);
	sink_init(&j.scales, 8);
	sink_init(&j.zps, f == F_GATHER_DQ ? 8 : z->q.bits);
	Status st = dyn ? run_dynamic(&j) : run_job(&j);
	Type *ty[3];
	if (dyn) {
		int64_t b[2] = { j.k, j.n };
		ty[0] = tensor_type(z->m, DT_I8, 2, b);
		ty[1] = ty[2] = tensor_type(z->m, DT_F32, 1, b + 1);
	} else {
		job_types(z, &j, &ty[0], &ty[1], &ty[2]);
	}
	Tensor *tq = sink_tensor(z->m, &j.codes, ty[0]), *ts = sink_tensor(z->m, &j.scales, ty[1]);
	Tensor *tz = sink_tensor(z->m, &j.zps, ty[2]);
	if (st != OK || !tq || !ts || !tz)
		return 0;
	*out = (QOut){ new_const(z, g, n, wv, gather ? "rows_quant" : f == F_NBITS ? "q" : "quant", tq),
		       new_const(z, g, n, wv, gather ? "rows_scale" : "scale", ts),
		       z->q.zp ? new_const(z, g, n, wv, gather ? "rows_zero_point" : "zero_point", tz) : VNONE, VNONE };
	z->count++;
	return 1;
}

/* v is a weight or constant of static shape [a, b] in a float dtype the
 * forms take (f32, f16). */
static int quantizable(Qz *z, ValueId v)
{
	const Value *x = v ? val(z->m, v) : NULL;
	const Type *t = x ? x->type : NULL;
	if (!t || t->kind != TY_TENSOR || t->rank != 2 || type_numel(t) <= 0 || (t->dtype != DT_F32 && t->dtype != DT_F16))
		return 0;
	return x->kind == VK_PARAM || x->kind == VK_BUFFER || const_tensor(z->m, v) != NULL;
}

/* The quantized values of weight wv along kaxis in form f, made on first
 * use (a product's by its K axis, a Gather's apart). */
static QOut *quantized(Qz *z, Graph *g, const Node *n, ValueId wv, int kaxis, Form f)
{
	QOut *o = &z->done[f == F_GATHER || f == F_GATHER_DQ ? 2 : kaxis][wv];
	if (o->q)
		return o;
	z->q.dt = (DType)val(z->m, wv)->type->dtype;
	return quantize_weight(z, g, n, wv, kaxis, f, o) ? o : NULL;
}

static Named int_attr(const char *name, int64_t v) { return (Named){ sym_cstr(name), { .kind = A_INT, .u.i = v } }; }

static Arg value_arg(ValueId v) { return v ? (Arg){ .kind = A_VALUE, .u.v = v } : (Arg){ .kind = A_NONE }; }

/* DequantizeLinear of o, of wv's type, before node `at` (once per
 * weight: later readers are after it in the graph), with the provenance
 * of n, the MatMul or Gemm it is made for. */
static ValueId dequantized(Qz *z, Graph *g, Node *at, const Node *n, ValueId wv, int kaxis, QOut *o)
{
	if (o->dq)
		return o->dq;
	Node *d = node_new_op(z->m, OP_ONNX_DequantizeLinear, 1, o->zp ? 3 : 2, 2);
	char buf[400];
	snprintf(buf, sizeof buf, "%.300s_dequant", sym_str(val(z->m, wv)->name));
	d->res[0] = value_new(z->m, value_fresh_name(z->m, sym_cstr(buf)), val(z->m, wv)->type, VK_NODE);
	val(z->m, d->res[0])->def = d;
	d->args[0] = value_arg(o->q);
	d->args[1] = value_arg(o->scale);
	if (o->zp)
		d->args[2] = value_arg(o->zp);
	d->kw[0] = int_attr("axis", kaxis);
	d->kw[1] = int_attr("block_size", z->q.block);
	d->prov = n->prov;
	d->loc = n->loc;
	node_insert_before(g, at, d);
	o->dq = d->res[0];
	return o->dq;
}

static double attr_f(const Node *n, const char *name, double dflt)
{
	const Named *a = node_kw(n, sym_cstr(name));
	return !a ? dflt : a->val.kind == A_FLOAT ? a->val.u.f : a->val.kind == A_INT ? (double)a->val.u.i : NAN;
}

static int64_t attr_i(const Node *n, const char *name, int64_t dflt)
{
	const Named *a = node_kw(n, sym_cstr(name));
	return !a ? dflt : a->val.kind == A_INT ? a->val.u.i : -1;
}

/* The weight that B of n (a MatMul or Gemm) reads and its K axis; the
 * Transpose it reads it through, if any (*tr).  VNONE: none. */
static ValueId weight_of(Qz *z, Node *n, int *kaxis, Node **tr)
{
	ValueId b = operand(n, 1);
	*tr = NULL;
	*kaxis = n->op == OP_ONNX_Gemm && attr_i(n, "transB", 0) == 1;
	if (quantizable(z, b))
		return b;
	Node *t = n->op == OP_ONNX_MatMul && b ? match_op(z->m, b, OP_ONNX_Transpose) : NULL;
	const Named *perm = t ? node_kw(t, S_perm) : NULL;
	if (!t || !one_use(z->uses, b) || !quantizable(z, operand(t, 0)) ||
	    (perm && (perm->val.kind != A_LIST || perm->val.n != 2 || perm->val.u.list[0].u.i != 1)))
		return VNONE;
	*tr = t;
	*kaxis = 1;
	return operand(t, 0);
}

/* n's A and, for a Gemm, bias c suit the node's form. */
static int legal(Qz *z, const Node *n, ValueId w, int kaxis, ValueId *bias)
{
	const Type *ta = operand(n, 0) ? val(z->m, operand(n, 0))->type : NULL;
	const Type *tw = val(z->m, w)->type;
	int64_t nn = tw->dims[1 - kaxis].v;
	*bias = VNONE;
	if (!ta || ta->kind != TY_TENSOR || ta->dtype != tw->dtype || ta->rank < 1)
		return 0;
	if (n->op == OP_ONNX_Gemm) {
		if (attr_i(n, "transA", 0) != 0 || attr_f(n, "alpha", 1.0) != 1.0 || attr_f(n, "beta", 1.0) != 1.0)
			return 0;
		*bias = n->nargs > 2 ? operand(n, 2) : VNONE;
	}
	if (z->opt->quantize_dynamic && tw->dtype != DT_F32)
		return 0;           /* the ops' scales and A are f32 */
	if (!z->opt->target_ort)
		return 1;
	const Type *tc = *bias ? val(z->m, *bias)->type : NULL;
	return ta->rank >= 2 && (!*bias || (tc && tc->kind == TY_TENSOR && tc->dtype == tw->dtype && tc->rank == 1 &&
					    !tc->dims[0].sym && tc->dims[0].v == nn));
}

/* n becomes the contrib op com.microsoft::name in place (its result, name
 * and provenance stay), with nargs operands, all absent, and room for nkw
 * attributes. */
static void to_contrib(Qz *z, Node *n, const char *name, uint32_t nargs, uint32_t nkw)
{
	n->op = OP_GENERIC;
	n->domain = sym_cstr("com.microsoft");
	n->name = sym_cstr(name);
	n->nargs = nargs;
	n->args = ARENA_ARRAY(&z->m->arena, Arg, nargs);
	for (uint32_t i = 0; i < nargs; i++)
		n->args[i] = (Arg){ .kind = A_NONE };
	n->nkw = nkw;
	n->kw = nkw ? ARENA_ARRAY(&z->m->arena, Named, nkw) : NULL;
}

/* n becomes MatMulNBits in place. */
static void to_nbits(Qz *z, Node *n, ValueId w, int kaxis, const QOut *o, ValueId bias)
{
	const Type *tw = val(z->m, w)->type;
	ValueId a = operand(n, 0);
	to_contrib(z, n, "MatMulNBits", bias ? 6 : o->zp ? 4 : 3, z->opt->quantize_accuracy ? 5 : 4);
	n->args[0] = value_arg(a);
	n->args[1] = value_arg(o->q);
	n->args[2] = value_arg(o->scale);
	if (o->zp)
		n->args[3] = value_arg(o->zp);
	if (bias)
		n->args[5] = value_arg(bias);
	n->kw[0] = int_attr("K", tw->dims[kaxis].v);
	n->kw[1] = int_attr("N", tw->dims[1 - kaxis].v);
	n->kw[2] = int_attr("bits", z->q.bits);
	n->kw[3] = int_attr("block_size", z->q.block);
	if (z->opt->quantize_accuracy)
		n->kw[4] = int_attr("accuracy_level", z->opt->quantize_accuracy - 1);
}

/* ---- int8-dynamic's nodes ---------------------------------------------- */

/* Result i of d, new, of type t, named after n's result with suffix. */
static ValueId new_result(Qz *z, const Node *n, Node *d, uint32_t i, const char *suffix, Type *t)
{
	char buf[400];
	snprintf(buf, sizeof buf, "%.300s_%s", sym_str(val(z->m, n->res[0])->name), suffix);
	d->res[i] = value_new(z->m, value_fresh_name(z->m, sym_cstr(buf)), t, VK_NODE);
	val(z->m, d->res[i])->def = d;
	return d->res[i];
}

/* A node of op with n's provenance, before n. */
static Node *node_before(Qz *z, Graph *g, Node *n, OpId op, uint32_t nres, uint32_t nargs, uint32_t nkw)
{
	Node *d = node_new_op(z->m, op, nres, nargs, nkw);
	d->prov = n->prov;
	d->loc = n->loc;
	node_insert_before(g, n, d);
	return d;
}

/* DynamicQuantizeLinear(a) -> (a_quant u8, a_scale, a_zero_point), before n. */
static Node *quant_activation(Qz *z, Graph *g, Node *n, ValueId a)
{
	const Type *ta = val(z->m, a)->type;
	Arena *ar = &z->m->arena;
	Node *dq = node_before(z, g, n, OP_ONNX_DynamicQuantizeLinear, 3, 1, 0);
	dq->args[0] = value_arg(a);
	new_result(z, n, dq, 0, "a_quant", type_tensor(ar, DT_U8, ta->rank, ta->dims));
	new_result(z, n, dq, 1, "a_scale", type_tensor(ar, DT_F32, 0, NULL));
	new_result(z, n, dq, 2, "a_zero_point", type_tensor(ar, DT_U8, 0, NULL));
	return dq;
}

/* The onnx form: Cast(MatMulInteger(a_q, B, a_zp)) * (a_scale * b_scale)
 * [+ bias], n becoming the last node (its result, name and provenance
 * stay).  The form ONNX Runtime fuses into DynamicQuantizeMatMul. */
static void to_dynamic_onnx(Qz *z, Graph *g, Node *n, const QOut *o, ValueId bias)
{
	const Type *ty = val(z->m, n->res[0])->type;
	Arena *ar = &z->m->arena;
	Node *dq = quant_activation(z, g, n, operand(n, 0));
	Node *mi = node_before(z, g, n, OP_ONNX_MatMulInteger, 1, 3, 0);
	mi->args[0] = value_arg(dq->res[0]);
	mi->args[1] = value_arg(o->q);
	mi->args[2] = value_arg(dq->res[2]);
	new_result(z, n, mi, 0, "int", type_tensor(ar, DT_I32, ty->rank, ty->dims));
	Node *c = node_before(z, g, n, OP_ONNX_Cast, 1, 1, 1);
	c->args[0] = value_arg(mi->res[0]);
	c->kw[0] = int_attr("to", dtype_onnx(DT_F32));
	new_result(z, n, c, 0, "float", (Type *)ty);
	Node *sc = node_before(z, g, n, OP_ONNX_Mul, 1, 2, 0);
	sc->args[0] = value_arg(dq->res[1]);
	sc->args[1] = value_arg(o->scale);
	new_result(z, n, sc, 0, "scale", val(z->m, o->scale)->type);
	ValueId last = VNONE;
	if (bias) {
		Node *mu = node_before(z, g, n, OP_ONNX_Mul, 1, 2, 0);
		mu->args[0] = value_arg(c->res[0]);
		mu->args[1] = value_arg(sc->res[0]);
		last = new_result(z, n, mu, 0, "unbiased", (Type *)ty);
	}
	n->op = bias ? OP_ONNX_Add : OP_ONNX_Mul;
	n->name = op_name_of(n->op);
	n->nargs = 2;
	n->args = ARENA_ARRAY(ar, Arg, 2);
	n->args[0] = value_arg(bias ? last : c->res[0]);
	n->args[1] = value_arg(bias ? bias : sc->res[0]);
	n->nkw = 0;
}

/* An Add reading only n's result and a constant vector of N, which
 * DynamicQuantizeMatMul takes as its bias; NULL if none. */
static Node *bias_add(Qz *z, const Node *n, ValueId w, int kaxis, ValueId *bias)
{
	ValueId y = n->res[0];
	Node *add = y < z->nv && z->uses[y] == 1 ? z->user[y] : NULL;
	if (!add || add->op != OP_ONNX_Add || add->domain != S_onnx || add->nargs != 2 || add->nres != 1)
		return NULL;
	ValueId c = operand(add, 0) == y ? operand(add, 1) : operand(add, 0);
	const Value *cv = c ? val(z->m, c) : NULL;
	const Type *tc = cv ? cv->type : NULL;
	if (!tc || tc->kind != TY_TENSOR || tc->dtype != DT_F32 || tc->rank != 1 || tc->dims[0].sym ||
	    tc->dims[0].v != val(z->m, w)->type->dims[1 - kaxis].v ||
	    !(cv->kind == VK_PARAM || cv->kind == VK_BUFFER || const_tensor(z->m, c)) ||
	    !type_equal(val(z->m, add->res[0])->type, val(z->m, y)->type))
		return NULL;
	*bias = c;
	return add;
}

/* A's DynamicQuantizeLinear, shared by the products that read A, made
 * before n, the first of them. */
static Node *shared_quant(Qz *z, Graph *g, Node *n, ValueId a)
{
	return z->aq[a] ? z->aq[a] : (z->aq[a] = quant_activation(z, g, n, a));
}

/* -target=ort: n becomes com.microsoft::DynamicQuantizeMatMul(a, B,
 * b_scale, , bias) in place, taking over an Add of a bias after it; when
 * other products read a too (attention's Q, K and V), a is quantized once
 * and n becomes com.microsoft::MatMulIntegerToFloat(a_q, B, a_scale,
 * b_scale, a_zp[, , bias]). */
static void to_dynamic_ort(Qz *z, Graph *g, Node *n, ValueId w, int kaxis, const QOut *o, ValueId bias)
{
	Node *add = bias ? NULL : bias_add(z, n, w, kaxis, &bias);
	ValueId a = operand(n, 0);
	Node *dq = a < z->nv && z->areads[a] > 1 ? shared_quant(z, g, n, a) : NULL;
	to_contrib(z, n, dq ? "MatMulIntegerToFloat" : "DynamicQuantizeMatMul", dq ? (bias ? 7 : 5) : bias ? 5 : 3, 0);
	if (dq) {
		ValueId in[5] = { dq->res[0], o->q, dq->res[1], o->scale, dq->res[2] };
		for (int i = 0; i < 5; i++)
			n->args[i] = value_arg(in[i]);
	} else {
		n->args[0] = value_arg(a);
		n->args[1] = value_arg(o->q);
		n->args[2] = value_arg(o->scale);
	}
	if (bias)
		n->args[n->nargs - 1] = value_arg(bias);
	if (add) {
		n->res[0] = add->res[0];
		val(z->m, n->res[0])->def = n;
		node_remove(g, add);
	}
}

/* n's weight w, or n itself, matches a pattern of -quantize-exclude=:
 * the weight's name, the node's name or the path of a module it is in. */
static int excluded(Qz *z, const Node *n, ValueId w)
{
	const char *p = z->opt->quantize_exclude;
	while (p && *p) {
		size_t len = strcspn(p, ",");
		char pat[256];
		snprintf(pat, sizeof pat, "%.*s", (int)(len < 255 ? len : 255), p);
		p += len + (p[len] == ',');
		if (fnmatch(pat, sym_str(val(z->m, w)->name), 0) == 0 ||
		    (n->node_name && fnmatch(pat, sym_str(n->node_name), 0) == 0))
			return 1;
		for (uint32_t i = 0; n->prov && i < n->prov->nscope; i++)
			if (n->prov->scope[i].path && fnmatch(pat, sym_str(n->prov->scope[i].path), 0) == 0)
				return 1;
	}
	return 0;
}

/* The weight n (a MatMul or Gemm) is quantized for; VNONE: n stays. */
static ValueId taken(Qz *z, Node *n, int *kaxis, Node **tr, ValueId *bias)
{
	if (n->domain != S_onnx || (n->op != OP_ONNX_MatMul && n->op != OP_ONNX_Gemm) || n->nargs < 2 || n->nres != 1)
		return VNONE;
	ValueId w = weight_of(z, n, kaxis, tr);
	return w && legal(z, n, w, *kaxis, bias) && !excluded(z, n, w) ? w : VNONE;
}

static void quantize_node(Qz *z, Graph *g, Node *n)
{
	int kaxis;
	Node *tr;
	ValueId bias, w = taken(z, n, &kaxis, &tr, &bias);
	if (!w)
		return;
	Form f = z->opt->quantize_dynamic ? F_DYN : z->opt->target_ort ? F_NBITS : F_DQ;
	QOut *o = quantized(z, g, n, w, kaxis, f);
	if (!o)
		return;
	if (z->opt->quantize_dynamic) {
		if (z->opt->target_ort)
			to_dynamic_ort(z, g, n, w, kaxis, o, bias);
		else
			to_dynamic_onnx(z, g, n, o, bias);
		return;
	}
	if (z->opt->target_ort) {
		to_nbits(z, n, w, kaxis, o, bias);
		return;
	}
	Node *at = tr ? tr : n;
	ValueId dq = dequantized(z, g, at, n, w, kaxis, o);
	at->args[tr ? 0 : 1] = value_arg(dq);
}

/* ---- -quantize-embedding ----------------------------------------------- */

/* The onnx form: DequantizeLinear(Gather(q, ids), Gather(scale, ids)[,
 * Gather(zp, ids)], axis = -1, block_size), n (the Gather) becoming the
 * DequantizeLinear. */
static void to_gather_dq(Qz *z, Graph *g, Node *n, const QOut *o)
{
	static const char *const suffix[3] = { "rows_quant", "rows_scale", "rows_zero_point" };
	ValueId ids = operand(n, 1), part[3] = { o->q, o->scale, o->zp }, got[3] = { VNONE, VNONE, VNONE };
	const Type *ti = val(z->m, ids)->type;
	for (int i = 0; i < 3; i++) {
		if (!part[i])
			continue;
		const Type *tp = val(z->m, part[i])->type;
		Dim *dims = ARENA_ARRAY(&z->m->arena, Dim, ti->rank + 1);
		memcpy(dims, ti->dims, (size_t)ti->rank * sizeof *dims);
		dims[ti->rank] = tp->dims[1];
		Node *d = node_before(z, g, n, OP_ONNX_Gather, 1, 2, 0);
		d->args[0] = value_arg(part[i]);
		d->args[1] = value_arg(ids);
		got[i] = new_result(z, n, d, 0, suffix[i], type_tensor(&z->m->arena, (DType)tp->dtype, ti->rank + 1, dims));
	}
	n->op = OP_ONNX_DequantizeLinear;
	n->name = op_name_of(n->op);
	n->nargs = o->zp ? 3 : 2;
	n->args = ARENA_ARRAY(&z->m->arena, Arg, n->nargs);
	for (uint32_t i = 0; i < n->nargs; i++)
		n->args[i] = value_arg(got[i]);
	n->nkw = 2;
	n->kw = ARENA_ARRAY(&z->m->arena, Named, 2);
	n->kw[0] = int_attr("axis", -1);
	n->kw[1] = int_attr("block_size", z->q.block);
}

/* ids is a graph input, or one reshaped or cast: the model's caller
 * chooses the rows (token, position, token-type ids), as opposed to
 * indices the model computes (a mixture's routed experts gathering their
 * bias rows), whose tables are parameters of another kind. */
static int input_indices(Qz *z, ValueId ids)
{
	for (int depth = 0; ids && depth < 8; depth++) {
		if (val(z->m, ids)->kind == VK_INPUT)
			return 1;
		const Node *d = def_of(z->m, ids);
		if (!d || d->domain != S_onnx || (d->op != OP_ONNX_Cast && d->op != OP_ONNX_Reshape &&
						 d->op != OP_ONNX_Unsqueeze && d->op != OP_ONNX_Squeeze &&
						 d->op != OP_ONNX_Flatten && d->op != OP_ONNX_Identity))
			return 0;
		ids = operand(d, 0);
	}
	return 0;
}

/* Gather(w, ids) along axis 0 of a weight w [V,K], ids an integer tensor
 * of known rank that a graph input gives (input_indices): the table
 * quantized by rows (header), the Gather rewritten in place.  A 4-bit
 * GatherBlockQuantized packs two codes a byte along each row: an odd K
 * stays float. */
static void quantize_gather(Qz *z, Graph *g, Node *n)
{
	if (!z->opt->quantize_embedding || n->domain != S_onnx || n->op != OP_ONNX_Gather || n->nargs != 2 || n->nres != 1)
		return;
	ValueId w = operand(n, 0), ids = operand(n, 1);
	const Type *ti = ids ? val(z->m, ids)->type : NULL;
	int64_t axis = attr_i(n, "axis", 0);
	int ort = z->opt->target_ort;
	if (!quantizable(z, w) || (axis != 0 && axis != -2) || !ti || ti->kind != TY_TENSOR ||
	    (ti->dtype != DT_I64 && ti->dtype != DT_I32) || !input_indices(z, ids) || excluded(z, n, w) ||
	    (ort && z->q.bits == 4 && val(z->m, w)->type->dims[1].v % 2))
		return;
	QOut *o = quantized(z, g, n, w, 1, ort ? F_GATHER : F_GATHER_DQ);
	if (!o)
		return;
	z->rows++;
	if (!ort) {
		to_gather_dq(z, g, n, o);
		return;
	}
	to_contrib(z, n, "GatherBlockQuantized", o->zp ? 4 : 3, 4);
	n->args[0] = value_arg(o->q);
	n->args[1] = value_arg(ids);
	n->args[2] = value_arg(o->scale);
	if (o->zp)
		n->args[3] = value_arg(o->zp);
	n->kw[0] = int_attr("gather_axis", 0);
	n->kw[1] = int_attr("quantize_axis", 1);
	n->kw[2] = int_attr("block_size", z->q.block);
	n->kw[3] = int_attr("bits", z->q.bits);
}

static Status quantize_graph(const GraphVisit *v, void *ctx)
{
	Qz *z = ctx;
	if (v->depth)
		return OK;              /* weights live in the top-level graphs */
	for (Node *n = v->g->first; z->opt->quantize_dynamic && z->opt->target_ort && n; n = n->next) {
		for (uint32_t i = 0; i < n->nargs; i++)    /* the reader of a value read once */
			if (n->args[i].kind == A_VALUE && n->args[i].u.v < z->nv)
				z->user[n->args[i].u.v] = n;
		int kaxis;
		Node *tr;
		ValueId bias, a = operand(n, 0);
		if (a && a < z->nv && taken(z, n, &kaxis, &tr, &bias))
			z->areads[a]++;
	}
	for (Node *n = v->g->first; n; n = n->next) {   /* new nodes go before n; an Add after it may go */
		quantize_node(z, v->g, n);
		quantize_gather(z, v->g, n);
	}
	return OK;
}

/* DequantizeLinear's block_size needs opset 21: a module below it is
 * converted (the driver refuses an -opset= below it).  int8-dynamic's
 * products need no more than opset 11 (DynamicQuantizeLinear), its
 * quantized tables (rows > 0) do. */
static Status raise_opset(Module *m, const PassOptions *opt, uint32_t rows)
{
	if (opt->target_ort || (opt->quantize_dynamic && !rows))
		return OK;
	int64_t now = opsets_onnx(&m->opsets, opt->opset);
	if (now >= QZ_OPSET)
		return OK;
	if (!opsets_onnx(&m->opsets, 0) && opset_convert(m, now, opt->lib))
		return FAILED;
	return opset_convert(m, QZ_OPSET, opt->lib) ? FAILED : OK;
}

Status pass_quantize(Module *m, const PassOptions *opt)
{
	if (!opt->quantize_bits)
		return OK;
	Qz z = { .m = m, .opt = opt, .q = { opt->quantize_bits, opt->quantize_block ? opt->quantize_block : 32,
					     opt->quantize_zero_points, DT_F32 },
		 .w = { m, opt->weights_dir ? opt->weights_dir : ".", NULL } };
	z.uses = module_use_counts(m, WALK_PROGRAM);
	uint32_t nv = z.nv = m->vals.n;
	z.done[0] = xcalloc(nv + 1, sizeof(QOut));
	z.done[1] = xcalloc(nv + 1, sizeof(QOut));
	z.done[2] = xcalloc(nv + 1, sizeof(QOut));
	z.user = xcalloc(nv + 1, sizeof(Node *));
	z.aq = xcalloc(nv + 1, sizeof(Node *));
	z.areads = xcalloc(nv + 1, sizeof(uint32_t));
	/* Values made here are past nv: the walk only looks up older ones. */
	module_walk(m, WALK_GRAPHS, quantize_graph, &z);
	rt_weights_close(&z.w);
	free(z.done[0]);
	free(z.done[1]);
	free(z.done[2]);
	free(z.user);
	free(z.aq);
	free(z.areads);
	free(z.uses);
	return z.count ? raise_opset(m, opt, z.rows) : OK;
}
