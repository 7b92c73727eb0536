#!/usr/bin/env python3
"""Checks that what docs/ and the registries say about themselves is true.

    check_docs.py REPO overloads   docs/decompositions.md lists exactly the
                                   overloads decomps/*.fxir decomposes, and
                                   its count is theirs
    check_docs.py REPO overloads --write   rewrites that list and count
    check_docs.py REPO ops         the counts table of docs/ops.md matches
                                   ir/ops.def
    check_docs.py REPO decomp-tests  every decomposed overload is called by a
                                   lit test under test/lit/decompose
    check_docs.py REPO passes ONNXC  the pass table and pipelines of
                                   docs/passes.md match `onnxc -list-passes`

Each prints `ok: ...` and exits 0, or prints what differs and exits 1.
"""
import glob
import os
import re
import subprocess
import sys


def read(repo, path):
    with open(os.path.join(repo, path), encoding="utf-8") as f:
        return f.read()


def library_overloads(repo):
    """The generation rule docs/decompositions.md quotes, per file."""
    per_file = {}
    for path in sorted(glob.glob(os.path.join(repo, "decomps", "*.fxir"))):
        with open(path, encoding="utf-8") as f:
            names = re.findall(r"^decomp ([a-z_]*::[A-Za-z0-9_.]*)", f.read(), re.M)
        names = sorted({n for n in names if "_onnxc" not in n})
        if names:
            per_file[os.path.basename(path)] = names
    return per_file


def fail(lines):
    for line in lines:
        print(line)
    sys.exit(1)


def check_overloads(repo):
    per_file = library_overloads(repo)
    doc = read(repo, "docs/decompositions.md")
    section = doc.split("## Covered overloads", 1)[1]
    m = re.search(r"^(\d+) overloads:", section, re.M)
    listed = {}
    for line in section.splitlines():
        lm = re.match(r"- `([^`]+\.fxir)`: (.*)", line)
        if lm:
            listed[lm.group(1)] = sorted(re.findall(r"`([^`]+)`", lm.group(2)))
    total = len({n for v in per_file.values() for n in v})
    bad = []
    if not m or int(m.group(1)) != total:
        bad.append(f"docs/decompositions.md says {m.group(1) if m else '?'} overloads; the library has {total}")
    for name in sorted(set(per_file) | set(listed)):
        if per_file.get(name) != listed.get(name):
            extra = sorted(set(listed.get(name, [])) - set(per_file.get(name, [])))
            missing = sorted(set(per_file.get(name, [])) - set(listed.get(name, [])))
            bad.append(f"{name}: listed but not in the library: {extra}; in the library but not listed: {missing}")
    if bad:
        fail(bad)
    print(f"ok: {total} overloads in {len(per_file)} files, as listed")


def write_overloads(repo):
    """Rewrites the count and the per-file lines of the covered-overloads
    section from the library (the rest of the page is left as it is)."""
    per_file = library_overloads(repo)
    path = os.path.join(repo, "docs", "decompositions.md")
    head, section = read(repo, "docs/decompositions.md").split("## Covered overloads", 1)
    total = len({n for v in per_file.values() for n in v})
    lines = [f"- `{name}`: " + ", ".join(f"`{n}`" for n in names) for name, names in per_file.items()]
    out, listed = [], False
    for line in section.splitlines():
        if re.match(r"^\d+ overloads:", line):
            line = f"{total} overloads:"
        elif re.match(r"- `[^`]+\.fxir`: ", line):
            if not listed:
                out.extend(lines)
                listed = True
            continue
        out.append(line)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + "## Covered overloads" + "\n".join(out) + "\n")
    print(f"wrote {total} overloads in {len(per_file)} files to docs/decompositions.md")


def check_ops(repo):
    text = read(repo, "ir/ops.def")
    onnx = len(re.findall(r"^OP\([A-Za-z0-9_]+, *ONNX,", text, re.M))
    aten = len(re.findall(r"^OP\([A-Za-z0-9_]+, *ATEN,", text, re.M))
    doc = read(repo, "docs/ops.md")
    got = {
        "onnx": re.search(r"^\| ONNX default domain \| (\d+):", doc, re.M),
        "aten": re.search(r"^\| ATen overloads \| (\d+) \|", doc, re.M),
        "total": re.search(r"^\| total \| (\d+) \(`OP_COUNT` = (\d+)", doc, re.M),
    }
    want = {"onnx": onnx, "aten": aten, "total": onnx + aten}
    bad = []
    for k, w in want.items():
        if not got[k] or int(got[k].group(1)) != w:
            bad.append(f"docs/ops.md: {k} count is {got[k].group(1) if got[k] else '?'}, ops.def has {w}")
    if got["total"] and int(got["total"].group(2)) != onnx + aten + 1:
        bad.append(f"docs/ops.md: OP_COUNT is {got['total'].group(2)}, ops.def gives {onnx + aten + 1}")
    if bad:
        fail(bad)
    print(f"ok: {onnx} ONNX ops, {aten} ATen overloads")


def check_decomp_tests(repo):
    tests = ""
    for path in glob.glob(os.path.join(repo, "test", "lit", "decompose", "*.fxir")):
        with open(path, encoding="utf-8") as f:
            tests += f.read()
    names = sorted({n for v in library_overloads(repo).values() for n in v})
    missing = [n for n in names if not re.search(re.escape(n) + r"\(", tests)]
    if missing:
        fail([f"no lit test in test/lit/decompose calls {n}" for n in missing])
    print(f"ok: every one of {len(names)} decomposed overloads has a lit test")


def check_passes(repo, onnxc):
    out = subprocess.run([onnxc, "-list-passes"], capture_output=True, text=True, check=True).stdout
    passes = re.findall(r"^  (\S+) +\S", out.split("Pipelines:")[0], re.M)
    pipelines = dict(re.findall(r"^  (-O\d)  (.*)$", out, re.M))
    doc = read(repo, "docs/passes.md")
    table = doc.split("## The passes", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    bad = []
    if sorted(documented) != sorted(passes):
        bad.append(f"docs/passes.md documents {sorted(documented)}; the registry has {sorted(passes)}")
    levels = doc.split("## Pipelines", 1)[1].split("\n## ", 1)[0]
    for level, pipeline in pipelines.items():
        if not re.search(r"^\| `" + level + r"`[^|]*\| `" + re.escape(pipeline) + r"`", levels, re.M):
            bad.append(f"docs/passes.md: the {level} row does not say `{pipeline}`")
    if bad:
        fail(bad)
    print(f"ok: {len(passes)} passes and {len(pipelines)} pipelines, as documented")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    repo, what = sys.argv[1], sys.argv[2]
    if what == "overloads" and sys.argv[3:] == ["--write"]:
        write_overloads(repo)
    elif what == "overloads":
        check_overloads(repo)
    elif what == "ops":
        check_ops(repo)
    elif what == "decomp-tests":
        check_decomp_tests(repo)
    elif what == "passes" and len(sys.argv) == 4:
        check_passes(repo, sys.argv[3])
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
