#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every relative link in the README and docs/*.md names a file that exists and, where it
has a #fragment, a heading of that file (GitHub's anchors: lower case, punctuation dropped,
spaces to hyphens, a repeated heading's anchor suffixed -1, -2, ...). Links inside fenced
code blocks and web addresses are not checked.

    link_check.py ROOT           check ROOT's README.md and docs/*.md; one line per problem
    link_check.py --self-test    the check finds a missing file and missing anchors
"""
import os
import re
import sys
import tempfile

LINK = re.compile(r"\]\(([^)\s]+)\)")


def without_fences(text):
    """The text with fenced code blocks blanked out (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return out


def anchor(heading):
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


HEADING = re.compile(r"#{1,6}\s+(.*)")
_anchors = {}  # a file's anchors, read once however many links name it


def anchors(path):
    if path not in _anchors:
        seen, names = {}, set()
        for line in without_fences(open(path, encoding="utf-8").read()):
            if heading := HEADING.fullmatch(line):
                base = anchor(heading.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                names.add(base if count == 0 else f"{base}-{count}")
        _anchors[path] = names
    return _anchors[path]


def problems(root):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    found = []
    for path in files:
        for number, line in enumerate(without_fences(open(path, encoding="utf-8").read()), 1):
            for match in LINK.finditer(line):
                target = match.group(1)
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:
                name, _, fragment = target.partition("#")
                resolved = (os.path.normpath(os.path.join(os.path.dirname(path), name))
                            if name else path)
                where = f"{os.path.relpath(path, root)}:{number}"
                if not os.path.exists(resolved):
                    found.append(f"{where}: {target}: no such file")
                elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                    found.append(f"{where}: {target}: no heading with that anchor")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, "docs"))
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("[ok](docs/a.md#a-heading-with-code) [ok](docs/a.md#twice-1)\n"
                    "[missing](docs/b.md) [anchor](docs/a.md#nothing) [no](docs/a.md#not-a-heading)\n"
                    "```\n[fenced](docs/none.md)\n```\n[web](https://example.org/x)\n")
        with open(os.path.join(root, "docs", "a.md"), "w") as f:
            f.write("# A heading, with `code`\n## Twice\n## Twice\n#not-a-heading\n")
        found = problems(root)
        expected = ["README.md:2: docs/b.md: no such file",
                    "README.md:2: docs/a.md#nothing: no heading with that anchor",
                    "README.md:2: docs/a.md#not-a-heading: no heading with that anchor"]
        if found != expected:
            sys.exit(f"self-test: expected {expected}, found {found}")
    print("self-test: a missing file and two missing anchors found, nothing else")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        sys.exit(__doc__)
    found = problems(argv[1])
    for line in found:
        print(line)
    if found:
        sys.exit(f"{len(found)} broken link(s)")
    print("every relative link resolves")


if __name__ == "__main__":
    main(sys.argv)
