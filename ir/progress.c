/* progress.c - progress of long work on standard error.
 *
 * Shown when standard error is a terminal (or when forced, -progress),
 * and only for work large enough to be worth it unless forced.  On a
 * terminal one line is rewritten in place; otherwise (forced into a file
 * or a pipe) a line is printed at each tenth, so tests can read it.
 */
#include <unistd.h>
#include "ir.h"

static int mode = PROGRESS_AUTO;
static int active, shown, tty;
static uint64_t total, done_so_far;
static const char *what;

void progress_set_mode(int m) { mode = m; }

int progress_enabled(void)
{
	return mode == PROGRESS_AUTO ? isatty(2) : mode == PROGRESS_ON;
}

void progress_begin(const char *label, uint64_t n, uint64_t min_size)
{
	active = n > 0 && progress_enabled() && (mode == PROGRESS_ON || n >= min_size);
	tty = isatty(2);
	total = n;
	what = label;
	shown = -1;
	done_so_far = 0;
	if (active)
		progress_update(0);
}

void progress_add(uint64_t n)
{
	if (active)
		progress_update(done_so_far + n);
}

/* On a terminal the line is rewritten when the percentage moves; in a
 * file, a line at each tenth. */
void progress_update(uint64_t done)
{
	if (!active)
		return;
	done_so_far = done;
	if (done > total)
		done = total;       /* the estimate was low: never past 100% */
	int pct = (int)(done >= total ? 100 : done * 100 / total);
	int step = tty ? pct : pct / 10 * 10;
	if (step == shown)
		return;
	shown = step;
	fprintf(stderr, "%sonnxc: %s: %3d%% (%llu of %llu)%s", tty ? "\r" : "", what, step, (unsigned long long)done,
		(unsigned long long)total, tty ? "\033[K" : "\n");
}

void progress_end(void)
{
	if (!active)
		return;
	progress_update(total);
	if (tty)
		fputs("\r\033[K", stderr);
	active = 0;
}
