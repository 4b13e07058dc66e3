#!/usr/bin/env python3
"""check_docs_links.py — every relative link of the user documentation resolves.

    python3 tests/check_docs_links.py SOURCE_DIR
    python3 tests/check_docs_links.py --self-test   (proves it finds planted breakage)

Reads README.md, docs/*.md, adapters/*.md, examples/*/*.md and the READMEs
of reports/ (the current evidence: reports/README.md and one per machine).
Fails (exit 1, one line per finding,
`file:line: target: what is wrong`) when a relative Markdown link names a
file or folder that does not exist, or a `#anchor` that no heading of the
target page produces (GitHub's rule: lower case, punctuation dropped,
spaces to hyphens, `-1`, `-2`... for repeats). Links inside code blocks and
code spans are not links; http(s) and mailto links are not checked.

Run by CTest as `docs_links` (tests/CMakeLists.txt)."""
import glob
import os
import re
import sys
import tempfile

LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"(`+).*?\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text, blank_code_spans=True):
    """(line number, line) outside fenced code blocks, code spans blanked
    (or only their backticks dropped, for headings)."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * 3
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, CODE_SPAN.sub("", line) if blank_code_spans else line.replace("`", "")


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for _, line in prose_lines(text, blank_code_spans=False):
        m = HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else "%s-%d" % (base, n))
    return out


def pages(root):
    found = [os.path.join(root, "README.md")]
    for pattern in ("docs/*.md", "adapters/*.md", "examples/*/*.md", "reports/README.md",
                    "reports/*/README.md", "reports/gpu/*/README.md"):
        found += sorted(glob.glob(os.path.join(root, pattern)))
    return [p for p in found if os.path.isfile(p)]


def findings(root):
    out = []
    for page in pages(root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(page, root)
        for number, line in prose_lines(text):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = "%s:%d: %s" % (rel, number, target)
                if not os.path.exists(dest):
                    out.append("%s: no such file or folder" % where)
                elif not os.path.realpath(dest).startswith(os.path.realpath(root) + os.sep):
                    out.append("%s: points outside the repository" % where)
                elif anchor:
                    if not dest.endswith(".md") or os.path.isdir(dest):
                        out.append("%s: an anchor into something that is not a Markdown page" % where)
                    elif anchor not in anchors(dest):
                        out.append("%s: no heading gives #%s" % (where, anchor))
    return out


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# T\n\n[ok](docs/a.md#run-to-run-checks---repeat-n) [ok](docs/a.md#same-1)\n"
                    "[gone](docs/missing.md) [bad anchor](docs/a.md#nope)\n"
                    "```\n[not a link](nowhere.md)\n```\n`[code](nowhere.md)`\n")
        with open(os.path.join(root, "docs", "a.md"), "w") as f:
            f.write("# A\n\n## Run-to-run checks: `--repeat N`\n\n## Same\n\n## Same\n\n[up](../README.md#t)\n")
        got = findings(root)
        want = ["README.md:4: docs/missing.md: no such file or folder",
                "README.md:4: docs/a.md#nope: no heading gives #nope"]
        if got != want:
            print("self-test: expected\n  %s\ngot\n  %s" % ("\n  ".join(want), "\n  ".join(got)))
            return 1
    print("self-test: the planted missing page and anchor were found, nothing else")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = findings(argv[1])
    for line in out:
        print(line)
    if out:
        print("%d broken link(s): fix the link or the heading it names" % len(out))
        return 1
    print("docs links: %d pages, every relative link resolves" % len(pages(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
