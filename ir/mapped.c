/* mapped.c - read-only file mappings that tensors point into.
 *
 * A tensor read from a large file (ONNX external data) keeps its bytes in
 * the file's private read-only mapping instead of a copy.  Every page read
 * through a mapping counts in the process's resident set until it is
 * released, although the kernel could reclaim it; code that streams
 * through a tensor (hashing it, writing it out) releases each slice once
 * done with it, so peak memory stays near one slice whatever the size of
 * the data.  A released page refaults from the page cache, with the same
 * bytes, if it is read again.  Mappings belong to an owner (the module
 * whose tensors point into them) and are unmapped with it. */
#define _DEFAULT_SOURCE             /* madvise(MADV_DONTNEED) is not POSIX */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ir.h"

typedef struct Mapping {
	const void *owner;
	const uint8_t *p;
	size_t n;
} Mapping;

static VEC(Mapping) maps;       /* few: one per external-data file */

void mapped_add(const void *owner, const void *p, size_t n)
{
	if (!n)
		return;
	XVEC_PUSH(maps, ((Mapping){ owner, p, n }));
}

void mapped_release(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (uint32_t i = 0; i < maps.n && n; i++) {
		const Mapping *m = &maps.v[i];
		if (b < m->p || b >= m->p + m->n || n > (size_t)(m->p + m->n - b))
			continue;
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		size_t lo = (size_t)(b - m->p) / page * page, hi = (size_t)(b - m->p) + n;
		madvise((void *)(m->p + lo), hi - lo, MADV_DONTNEED);
		return;
	}
}

void mapped_drop(const void *owner)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < maps.n; i++) {
		if (maps.v[i].owner == owner)
			munmap((void *)maps.v[i].p, maps.v[i].n);
		else
			maps.v[k++] = maps.v[i];
	}
	maps.n = k;
	if (!k) {
		free(maps.v);
		maps.v = NULL;
		maps.cap = 0;
	}
}

/* Results too large to keep in memory (weights a pass derives from other
 * weights) are written to an unlinked temporary file and mapped from it. */
int mapped_tmp(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/onnxc.XXXXXX", dir && dir[0] ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd >= 0)
		unlink(path);
	return fd;
}

const uint8_t *mapped_fd(const void *owner, int fd, size_t n)
{
	void *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	mapped_add(owner, p, n);
	return p;
}

const uint8_t *mapped_spill(const void *owner, const void *data, size_t n)
{
	int fd = n ? mapped_tmp() : -1;
	if (fd < 0)
		return NULL;
	for (size_t i = 0; i < n;) {
		ssize_t k = pwrite(fd, (const uint8_t *)data + i, n - i < MAPPED_SLICE ? n - i : MAPPED_SLICE, (off_t)i);
		if (k <= 0) {
			close(fd);
			return NULL;
		}
		i += (size_t)k;
	}
	return mapped_fd(owner, fd, n);
}
