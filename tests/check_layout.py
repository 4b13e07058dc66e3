#!/usr/bin/env python3
"""check_layout.py — the shape of the source tree, checked.

    python3 tests/check_layout.py SOURCE_DIR LIBRARY.a
    python3 tests/check_layout.py --self-test   (proves it finds a planted loop)

Fails (exit 1, one line per finding) when:

1. two source files call each other, directly or around a loop: the
   "defines" / "uses" graph between object files of the static library
   (read with `nm`: a global symbol U in one object and T/D/B/R in another)
   has a cycle.  This is the loop the rule "a function is declared in the
   header named after the file that defines it" prevents;
2. a folder includes a layer above it: core/ may include only core/;
   reference/ and backends/ may include core/ and themselves, never
   harness/; reference/ never includes backends/ (the oracle shares no code
   with what it judges) and backends/ never includes reference/; harness/
   may include every layer but bench/; bench/ (the benchmarks of the
   reference, the kernels, the harness and the peers, and the bench
   command) sits on top and may include every layer, and nothing includes
   bench/ (harness/cli.h declares the bench command with the others, and
   the program's main.c calls it through that declaration);
3. a command file (harness/cli_*.c) includes another command file's header
   or source (shared helpers live in harness/cli.c);
4. an include names a file that does not exist (a header left behind by a
   move).

Run by CTest as `layout` (tests/CMakeLists.txt)."""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LAYERS = {
    "core": {"core"},
    "reference": {"core", "reference"},
    "backends": {"core", "backends"},
    "harness": {"core", "reference", "backends", "harness"},
    "bench": {"core", "reference", "backends", "harness", "bench"},
}


def object_graph(library):
    """{object: set(objects it uses)} from `nm` over the archive."""
    out = subprocess.run(["nm", "-A", "--defined-only", library], capture_output=True, text=True, check=True).stdout
    defined = {}
    for line in out.splitlines():
        m = re.match(r"^[^:]+:([^:]+):\s*[0-9a-fA-F]*\s+([TDBRVW])\s+(\S+)$", line)
        if m:
            defined.setdefault(m.group(3), m.group(1))
    out = subprocess.run(["nm", "-A", "-u", library], capture_output=True, text=True, check=True).stdout
    uses = {}
    for line in out.splitlines():
        m = re.match(r"^[^:]+:([^:]+):\s+U\s+(\S+)$", line)
        if m and m.group(2) in defined and defined[m.group(2)] != m.group(1):
            uses.setdefault(m.group(1), set()).add(defined[m.group(2)])
    for obj in set(defined.values()):
        uses.setdefault(obj, set())
    return uses


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def source_files(root):
    for top in LAYERS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def include_findings(root):
    findings = []
    for rel in sorted(source_files(root)):
        layer = rel.split(os.sep)[0]
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            target = inc if os.path.exists(os.path.join(root, inc)) else os.path.normpath(
                os.path.join(os.path.dirname(rel), inc))
            if not os.path.exists(os.path.join(root, target)):
                findings.append(f"{rel}: includes \"{inc}\", which does not exist")
                continue
            tlayer = target.split(os.sep)[0]
            if tlayer in LAYERS and tlayer not in LAYERS[layer]:
                findings.append(f"{rel}: includes {target}: {layer}/ may include only "
                                f"{', '.join(sorted(LAYERS[layer]))}/")
            base = os.path.basename(rel)
            tbase = os.path.basename(target)
            if (base.startswith("cli_") and tbase.startswith("cli_")
                    and os.path.splitext(tbase)[0] != os.path.splitext(base)[0]):
                findings.append(f"{rel}: includes {target}: a command file includes another command file "
                                f"(shared helpers belong in harness/cli.c)")
    return findings


def self_test():
    """The check can fail: a two-file call loop and two upward includes
    (core/ into harness/, harness/ into bench/), built in a temporary folder,
    must all be found, and bench/ including harness/ must not."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        for layer in ("core", "harness", "backends", "reference", "bench"):
            os.makedirs(os.path.join(tmp, layer))
        files = {
            "core/a.c": '#include "harness/b.h"\nint b(void);\nint a(void) { return b() + 1; }\n',
            "harness/b.h": "int b(void);\n",
            "harness/b.c": "int a(void);\nint b(void) { return a() - 1; }\n",
            "harness/c.c": '#include "bench/d.h"\n',
            "bench/d.h": '#include "harness/b.h"\n',
        }
        for rel, text in files.items():
            with open(os.path.join(tmp, rel), "w") as fh:
                fh.write(text)
        objs = []
        for rel in ("core/a.c", "harness/b.c"):
            obj = os.path.join(tmp, os.path.basename(rel) + ".o")
            subprocess.run(["cc", "-c", "-I", tmp, os.path.join(tmp, rel), "-o", obj], check=True)
            objs.append(obj)
        lib = os.path.join(tmp, "libx.a")
        subprocess.run(["ar", "rcs", lib] + objs, check=True)
        loops = cycles(object_graph(lib))
        upward = [f for f in include_findings(tmp) if "may include only" in f]
        ok = loops == [["a.c.o", "b.c.o"]] and len(upward) == 2 and not any(f.startswith("bench/") for f in upward)
        print(f"self-test: loops {loops}, upward includes {upward}: {'ok' if ok else 'NOT FOUND'}")
        return 0 if ok else 1


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root, library = sys.argv[1], sys.argv[2]
    findings = include_findings(root)
    graph = object_graph(library)
    for comp in cycles(graph):
        names = [c.rsplit(".", 2)[0] if c.endswith(".o") else c for c in comp]
        findings.append("call loop between source files: " + " <-> ".join(names) +
                        " (each uses a symbol the other defines; move the shared piece down a layer)")
    for f in findings:
        print(f)
    print(f"layout: {len(graph)} objects, {sum(len(v) for v in graph.values())} uses, "
          f"{len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
