"""Stage times of a conversion, and its progress on standard error when it
runs long.

    progress = Progress()                 # quiet unless it runs past 5 s
    with progress.stage("capture") as st:
        ...
        st.name = "capture (torch.export)"
    progress.done()

Every stage's wall and CPU seconds are kept in `stages` (the bench reads
them).  What is shown: `show=True` every stage as it ends; `show=None`
(the default) nothing until the conversion has run `after` seconds, then
the stages so far, the one running, and each later one as it ends;
`show=False` nothing.  A timer thread notices the threshold, so a single
long stage (a trace of minutes) is announced while it runs.
"""

import contextlib
import sys
import threading
import time

# Seconds a conversion runs before show=None starts showing its stages.
AFTER = 5.0


class _Running:
    """The stage being timed; its name may change once its outcome is
    known (the capture that worked)."""

    def __init__(self, name):
        self.name = name


class Progress:
    def __init__(self, show=None, after=AFTER, stream=None, prefix="onnxc"):
        self.show = show
        self.after = after
        self.stream = stream
        self.prefix = prefix
        self.stages = []          # (name, wall seconds, CPU seconds), in order
        self.start = time.perf_counter()
        self.loud = show is True
        self.current = None       # (_Running, its start) while a stage runs
        self.lock = threading.Lock()
        self.timer = None
        if show is None:
            self.timer = threading.Timer(after, self._wake)
            self.timer.daemon = True
            self.timer.start()

    def _say(self, text):
        out = self.stream or sys.stderr
        out.write("%s: %s\n" % (self.prefix, text))
        out.flush()

    def _wake(self):
        """The threshold passed: show what was done, and what runs."""
        with self.lock:
            if self.loud or self.show is False:
                return
            self.loud = True
            for name, wall, _ in self.stages:
                self._say("%-34s %8.2f s" % (name, wall))
            if self.current is not None:
                run, t0 = self.current
                self._say("%-34s running (%.1f s so far)" % (run.name, time.perf_counter() - t0))

    @contextlib.contextmanager
    def stage(self, name):
        run = _Running(name)
        w, c = time.perf_counter(), time.process_time()
        with self.lock:
            self.current = (run, w)
        try:
            yield run
        finally:
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            with self.lock:
                self.current = None
                self.stages.append((run.name, wall, cpu))
                if self.loud:
                    self._say("%-34s %8.2f s" % (run.name, wall))

    def add(self, name, wall, cpu=0.0):
        """A stage timed elsewhere (a subprocess)."""
        with self.lock:
            self.stages.append((name, wall, cpu))
            if self.loud:
                self._say("%-34s %8.2f s" % (name, wall))

    def seconds(self, prefix):
        """Wall seconds of the stages whose names start with `prefix`."""
        return sum(w for n, w, _ in self.stages if n.startswith(prefix))

    def done(self):
        """Stop the timer; a conversion that was shown ends with its total."""
        if self.timer is not None:
            self.timer.cancel()
        with self.lock:
            if self.loud:
                self._say("%-34s %8.2f s" % ("total", time.perf_counter() - self.start))
            self.show = False if self.show is None else self.show
