/* path.c - keeping file access inside a directory.
 *
 * Model files name other files (external data); a name without `..` can
 * still lead elsewhere through a symbolic link, on the file itself or on a
 * directory along the way.  Resolving both real paths and comparing them
 * catches every such link at once. */
#define _XOPEN_SOURCE 700       /* realpath */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

char *path_inside(const char *dir, const char *path)
{
	char *d = realpath(dir, NULL), *r = realpath(path, NULL);
	int err = errno;
	size_t n = d ? strlen(d) : 0;
	int inside = d && r && !strncmp(r, d, n) && (r[n] == '/' || (n == 1 && r[1]));
	free(d);
	if (!inside) {
		errno = r ? EXDEV : err;
		free(r);
		return NULL;
	}
	return r;
}
