"""Counts the values that have no type.

    untyped.py fxir FILE   node results printed without a type in .fxir text
    untyped.py onnx FILE   node outputs of the main graph with neither a
                           value_info nor a graph output entry
Prints `N values, M untyped`."""
import re
import sys


def fxir_counts(text):
    total = untyped = 0
    head = re.compile(r"^\s*((?:%[^\s,=]+|_)(?:, (?:%[^\s,=]+|_))*) = [\w.]+::[\w.]+\(")
    for line in text.splitlines():
        m = head.match(line)
        if not m:
            continue
        nres = len(m.group(1).split(", "))
        # the closing parenthesis of the call, strings skipped
        depth, i, instr = 1, m.end(), False
        while i < len(line) and depth:
            c = line[i]
            if instr:
                if c == "\\":
                    i += 1
                elif c == '"':
                    instr = False
            elif c == '"':
                instr = True
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
            i += 1
        names = [r for r in m.group(1).split(", ")]
        total += sum(r != "_" for r in names)
        if depth:       # a subgraph opens on this line: its types follow it
            continue
        rest = line[i:]
        if not rest.startswith(" : "):
            untyped += sum(r != "_" for r in names)
            continue
        types = re.findall(r"\?|[a-z0-9]+(?:\[[^\]]*\])?|(?:seq|opt)<", rest[3:])[:len(names)]
        untyped += sum(r != "_" and t == "?" for r, t in zip(names, types))
    return total, untyped


def onnx_counts(path):
    import onnx
    g = onnx.load(path).graph
    typed = {v.name for v in list(g.value_info) + list(g.output) if v.type.HasField("tensor_type")}
    outs = [o for n in g.node for o in n.output if o]
    return len(outs), sum(o not in typed for o in outs)


kind, path = sys.argv[1], sys.argv[2]
total, untyped = fxir_counts(open(path).read()) if kind == "fxir" else onnx_counts(path)
print("%d values, %d untyped" % (total, untyped))
