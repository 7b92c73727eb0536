#!/usr/bin/python3
"""Round trip and idempotence over every .fxir file the project ships.

For each .fxir under test/, examples/ and decomps/ (each `// -----` piece
of a file that lit runs with -split-input-file on its own):

  print    `onnxc F -passes= -emit=fxir` gives A, `onnxc A -passes=
           -emit=fxir` gives B: A and B must be byte-identical (print ->
           parse -> print is a fixed point, docs/ir.md);
  -O0, -O1, -O2
           `onnxc F -ON -emit=fxir` gives P, `onnxc P -ON -emit=fxir`
           gives Q: P and Q must be byte-identical (a pipeline applied to
           its own output changes nothing).

Every check of every input counts once.  A check is skipped, with its
reason, only when the input is meant to be refused: a lit test that
expects an error (an `expected-error` annotation, or a RUN line with
`not %onnxc`) or a fuzz seed (test/fuzz/: hostile inputs by design) that
onnxc refuses; or, for the -O checks, when the first run of the pipeline
refuses an input whose tests never run that pipeline (a parser test
holding an op with no decomposition, say), which -v names with the
message.  Anything else that onnxc refuses is a failure, and so is any
crash.

    /usr/bin/python3 test/roundtrip/run_roundtrip.py [--onnxc PATH] [-k PATTERN] [-v] [-jN]

The last line is `N passed, N failed, N skipped`; exit status 1 when a
check fails.
"""

import argparse
import concurrent.futures
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
ROOTS = ("examples", "decomps", "test")
LEVELS = ("-O0", "-O1", "-O2")
TIMEOUT = 120


class Input:
    """One program: a file, or one `// -----` piece of a split file."""

    def __init__(self, path, piece, text, refusable):
        self.path = path
        self.piece = piece
        self.text = text
        self.refusable = refusable

    def name(self):
        rel = os.path.relpath(self.path, REPO)
        return rel if self.piece is None else "%s (piece %d)" % (rel, self.piece + 1)


def refused_helpers():
    """Helper inputs (Inputs/ directories) that some lit RUN line expects onnxc to refuse."""
    names = set()
    for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, "test", "lit")):
        for fn in filenames:
            if not fn.endswith((".fxir", ".test")):
                continue
            with open(os.path.join(dirpath, fn), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if "RUN:" in line and re.search(r"\bnot\s+(--crash\s+)?(env\s+[^%]*)?%onnxc", line):
                        names.update(re.findall(r"%(?:inputs|S/Inputs)/([\w./-]+\.fxir)", line))
    return names


REFUSED_HELPERS = None


def refusal_reason(path, text):
    """Why an input is meant to be refused, or None."""
    global REFUSED_HELPERS
    rel = os.path.relpath(path, REPO)
    if "/Inputs/" in rel:
        if REFUSED_HELPERS is None:
            REFUSED_HELPERS = refused_helpers()
        if any(rel.endswith("/Inputs/" + n) for n in REFUSED_HELPERS):
            return "a helper input a lit test expects to be refused (RUN: not %onnxc)"
        return None
    if rel.startswith("test/fuzz/"):
        return "fuzz seed (hostile input by design)"
    if "expected-error" in text:
        return "expects an error (expected-error)"
    if re.search(r"^\s*//\s*RUN:.*\bnot\s+(--crash\s+)?(env\s+[^%\n]*)?%onnxc", text, re.M):
        return "expects an error (RUN: not %onnxc)"
    return None


def split_pieces(text):
    return re.split(r"^[ \t]*// -----[ \t]*$\n?", text, flags=re.M)


def collect(pattern):
    inputs = []
    for root in ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, root)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for fn in sorted(filenames):
                if not fn.endswith(".fxir"):
                    continue
                path = os.path.join(dirpath, fn)
                if pattern and not fnmatch.fnmatch(os.path.relpath(path, REPO), "*%s*" % pattern):
                    continue
                with open(path, encoding="utf-8", errors="surrogateescape") as f:
                    text = f.read()
                if "-split-input-file" in text:
                    for i, piece in enumerate(split_pieces(text)):
                        # A piece of comments only (the RUN lines) holds no program.
                        if any(ln.strip() and not ln.strip().startswith("//") for ln in piece.splitlines()):
                            inputs.append(Input(path, i, piece, refusal_reason(path, piece)))
                else:
                    inputs.append(Input(path, None, text, refusal_reason(path, text)))
    return inputs


def run(onnxc, src, args):
    """onnxc SRC ARGS -emit=fxir: (ok, stdout bytes, first error line)."""
    try:
        p = subprocess.run([onnxc, src] + args + ["-emit=fxir"], capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, b"", "timed out after %ds" % TIMEOUT
    err = p.stderr.decode("utf-8", "replace").strip()
    if p.returncode < 0 or p.returncode > 2:
        return None, b"", "crashed (exit %d): %s" % (p.returncode, err[-400:])
    first = next((ln for ln in err.splitlines() if "error" in ln), err.splitlines()[0] if err else "")
    return p.returncode == 0, p.stdout, first


def first_difference(a, b):
    la, lb = a.decode("utf-8", "replace").splitlines(), b.decode("utf-8", "replace").splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            return "line %d: first %r, then %r" % (i + 1, x.strip(), y.strip())
    return "same lines, different bytes"


def workdir_for(path, cache, tmp):
    """A directory beside which relative weights resolve: links to the input's directory."""
    d = os.path.dirname(path)
    if d not in cache:
        w = tempfile.mkdtemp(dir=tmp)
        for e in os.listdir(d):
            if not e.endswith(".fxir"):
                os.symlink(os.path.join(d, e), os.path.join(w, e))
        cache[d] = w
    return cache[d]


def check_input(onnxc, inp, work, index):
    """[(check, status, message)] for one input; status is pass, fail or skip."""
    base = os.path.join(work, "in%d" % index)
    src = base + ".fxir"
    with open(src, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(inp.text)
    results = []
    for check, args in [("print", ["-passes="])] + [(lv, [lv]) for lv in LEVELS]:
        ok, first, msg = run(onnxc, src, args)
        if ok is None:
            results.append((check, "fail", msg))
            continue
        if not ok:
            if inp.refusable:
                results.append((check, "skip", inp.refusable))
            elif check != "print" and not ran_by_tests(inp, check):
                results.append((check, "skip", "the input is not meant for %s, which refuses it: %s" % (check, msg)))
            else:
                results.append((check, "fail", "first run refused: " + msg))
            continue
        again = base + ".out.fxir"
        with open(again, "wb") as f:
            f.write(first)
        ok2, second, msg2 = run(onnxc, again, args)
        if not ok2:
            results.append((check, "fail", "its own output is refused: " + msg2))
        elif second != first:
            results.append((check, "fail", "second run differs, " + first_difference(first, second)))
        else:
            results.append((check, "pass", ""))
    return results


def ran_by_tests(inp, level):
    """Whether the input's own lit RUN lines (or the default -O1) use this pipeline."""
    rel = os.path.relpath(inp.path, REPO)
    if not rel.startswith("test/lit/") or "/Inputs/" in rel:
        return True
    runs = re.findall(r"^\s*//\s*RUN:(.*)$", inp.text if inp.piece is None else open(inp.path).read(), re.M)
    for r in runs:
        if "%onnxc" not in r:
            continue
        if level in r:
            return True
        if level == "-O1" and "-passes=" not in r and not re.search(r"-O[02]\b", r):
            return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnxc", default=os.environ.get("ONNXC_BUILD", os.path.join(REPO, "build", "onnxc")))
    ap.add_argument("-k", dest="pattern", help="only files whose path contains PATTERN (a glob)")
    ap.add_argument("-v", action="store_true", help="name every skip with its reason")
    ap.add_argument("-j", dest="jobs", type=int, default=2)
    a = ap.parse_args()
    onnxc = a.onnxc
    if os.path.isdir(onnxc):
        onnxc = os.path.join(onnxc, "onnxc")
    if not os.access(onnxc, os.X_OK):
        print("run_roundtrip: no onnxc at %s" % onnxc, file=sys.stderr)
        return 2
    inputs = collect(a.pattern)
    counts = {"pass": 0, "fail": 0, "skip": 0}
    with tempfile.TemporaryDirectory(prefix="onnxc-roundtrip.") as tmp:
        cache = {}
        works = [workdir_for(inp.path, cache, tmp) for inp in inputs]
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
            futures = [pool.submit(check_input, onnxc, inp, w, i) for i, (inp, w) in enumerate(zip(inputs, works))]
            for inp, fut in zip(inputs, futures):
                for check, status, msg in fut.result():
                    counts[status] += 1
                    if status == "fail":
                        print("FAIL %s [%s]: %s" % (inp.name(), check, msg))
                    elif status == "skip" and a.v:
                        print("skip %s [%s]: %s" % (inp.name(), check, msg))
    print("%d inputs from %d files, 4 checks each" % (len(inputs), len({i.path for i in inputs})))
    print("%d passed, %d failed, %d skipped" % (counts["pass"], counts["fail"], counts["skip"]))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
