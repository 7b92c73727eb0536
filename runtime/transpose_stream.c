/* transpose_stream.c - a 2-D transposition streamed from a mapping into a
 * file.
 *
 * Folding Transpose(W) with the kernel holds W and its transpose in memory
 * whole: twice the largest weight of a model.  Here W is read a band of
 * rows at a time (about MAPPED_SLICE bytes), the band is transposed into a
 * buffer of the same size, each of its columns goes to the output file
 * with one pwrite (a contiguous run of an output row), and the band's
 * pages are released (rt_weights_release).  Memory stays near two slices
 * whatever the size of W; the output's pages are page cache, not the
 * process's.  rt_scale_rows_to_fd streams a row scaling the same way (a
 * BatchNormalization folded into a Conv weight). */
#define _XOPEN_SOURCE 700       /* pwrite */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime.h"

static int write_at(int fd, const uint8_t *p, size_t n, size_t off)
{
	while (n) {
		ssize_t k = pwrite(fd, p, n, (off_t)off);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += (size_t)k;
	}
	return 0;
}

/* buf[c][r] = band[r][c] for r < nb, c < cols. */
static void transpose_band(uint8_t *buf, const uint8_t *band, int64_t nb, int64_t cols, size_t es)
{
	if (es == 4) {
		uint32_t *o = (uint32_t *)buf;
		for (int64_t r = 0; r < nb; r++) {
			const uint8_t *row = band + (size_t)(r * cols) * 4;
			for (int64_t c = 0; c < cols; c++)
				memcpy(&o[c * nb + r], row + (size_t)c * 4, 4);
		}
		return;
	}
	for (int64_t r = 0; r < nb; r++)
		for (int64_t c = 0; c < cols; c++)
			memcpy(buf + (size_t)(c * nb + r) * es, band + (size_t)(r * cols + c) * es, es);
}

Status rt_transpose_to_fd(RtWeights *w, const uint8_t *src, int64_t rows, int64_t cols, size_t es, int fd)
{
	size_t row_bytes = (size_t)cols * es;
	int64_t band = row_bytes ? (int64_t)(MAPPED_SLICE / row_bytes) : rows;
	if (band < 1)
		band = 1;
	if (band > rows)
		band = rows;
	uint8_t *buf = xmalloc((size_t)band * row_bytes + 1);
	Status st = OK;
	for (int64_t r0 = 0; r0 < rows && st == OK; r0 += band) {
		int64_t nb = rows - r0 < band ? rows - r0 : band;
		const uint8_t *b = src + (size_t)r0 * row_bytes;
		transpose_band(buf, b, nb, cols, es);
		rt_weights_release(w, b, (size_t)nb * row_bytes);
		for (int64_t c = 0; c < cols && st == OK; c++)
			if (write_at(fd, buf + (size_t)(c * nb) * es, (size_t)nb * es, (size_t)(c * rows + r0) * es))
				st = FAILED;
	}
	free(buf);
	return st;
}

Status rt_scale_rows_to_fd(RtWeights *w, const uint8_t *src, DType dt, int64_t rows, int64_t cols, const double *scale,
			   int64_t inner, int64_t reps, int fd)
{
	size_t es = (size_t)dtype_bits(dt) / 8, row = (size_t)cols * es;
	int64_t band = row && row < MAPPED_SLICE ? (int64_t)(MAPPED_SLICE / row) : 1;
	uint8_t *buf = xmalloc((size_t)band * row + 1);
	Status st = OK;
	for (int64_t r0 = 0; r0 < rows && st == OK; r0 += band) {
		int64_t nb = rows - r0 < band ? rows - r0 : band;
		const uint8_t *in = src + (size_t)r0 * row;
		for (int64_t r = 0; r < nb; r++) {
			double k = scale[rt_row_channel(r0 + r, inner, reps)];
			for (int64_t c = 0; c < cols; c++) {
				size_t i = (size_t)(r * cols + c);
				tensor_put(dt, buf, i, tensor_get_f(dt, in, i) * k, 0, 0);
			}
		}
		if (write_at(fd, buf, (size_t)nb * row, (size_t)r0 * row) != 0)
			st = FAILED;
		rt_weights_release(w, in, (size_t)nb * row);
	}
	free(buf);
	return st;
}
