"""Keeps the guides from rotting (run by CTest from tests/docs.cmake).

1. Every relative link and image in README.md and docs/*.md resolves to a
   file of the repository or to a directory holding a README.md (which is
   what GitHub shows for it), and a #fragment that points into a Markdown
   file names one of its headings (GitHub's anchor rules). The guides link
   Markdown files outside docs/ through their directory: Doxygen, which
   renders docs/*.md too, fails on a link to a .md file it does not render.
2. Every C code block in those files is quoted, verbatim, from a source file
   that CMake compiles: the block follows a line
       <!-- quote: examples/c/amp_train.c -->            (the whole file)
       <!-- quote: examples/c/amp_o2.c#accumulate -->    (one region)
   where a region is the lines between `/* <doc:NAME> */` and
   `/* </doc:NAME> */` in the file, dedented; marker lines are never part of
   a quote. Files listed in FRAGMENTS may hold unquoted C fragments.

  check_docs.py REPO_ROOT
"""
import os
import re
import sys
import textwrap
import unicodedata

# Files whose ```c blocks are fragments by design (they do not compile alone).
FRAGMENTS = {"docs/model-zoo.md"}

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
QUOTE = re.compile(r"^<!--\s*quote:\s*(\S+?)\s*-->\s*$")
MARK = re.compile(r"^\s*/\*\s*<(/?)doc:([\w-]+)>\s*\*/\s*$")


def slug(heading):
    """GitHub's anchor of a heading (github-slugger)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip())
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in " -" or cat[0] in "LMN" or cat == "Pc":
            out.append(ch)
    return "".join(out).replace(" ", "-")


def headings(path):
    anchors, seen, fence = set(), {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                anchors.add(base if n == 0 else f"{base}-{n}")
    return anchors


def strip_inline_code(line):
    return re.sub(r"`[^`]*`", "", line)


def quoted_text(root, spec, where):
    path, _, region = spec.partition("#")
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        raise ValueError(f"{where}: quoted file {path} does not exist")
    with open(full, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if not region:
        return "\n".join(l for l in lines if not MARK.match(l))
    inside, body = False, None
    for line in lines:
        m = MARK.match(line)
        if m and m.group(2) == region:
            if m.group(1) == "":
                inside, body = True, []
            else:
                inside = False
            continue
        if inside and not MARK.match(line):
            body.append(line)
    if body is None or inside:
        raise ValueError(f"{where}: no complete region <doc:{region}> in {path}")
    return textwrap.dedent("\n".join(body))


def check_file(root, rel, errors):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    fence, fence_lang, fence_start, block, pending_quote = None, "", 0, [], None
    links = 0
    for i, line in enumerate(lines, 1):
        where = f"{rel}:{i}"
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                if fence_lang == "c":
                    text = "\n".join(block)
                    if pending_quote:
                        try:
                            want = quoted_text(root, pending_quote, where)
                            if text.strip("\n") != want.strip("\n"):
                                errors.append(f"{rel}:{fence_start}: the C block differs from "
                                              f"{pending_quote}; copy it again")
                        except ValueError as e:
                            errors.append(str(e))
                    elif rel not in FRAGMENTS:
                        errors.append(f"{rel}:{fence_start}: a C block that is not quoted from a "
                                      "compiled file (add <!-- quote: PATH[#REGION] --> above it)")
                fence, pending_quote = None, None
            else:
                block.append(line)
            continue
        m = re.match(r"^(```+|~~~+)\s*([\w+-]*)", stripped)
        if m:
            fence, fence_lang, fence_start, block = m.group(1), m.group(2).lower(), i, []
            continue
        q = QUOTE.match(stripped)
        if q:
            pending_quote = q.group(1)
            continue
        if stripped and pending_quote:
            errors.append(f"{where}: a quote marker not followed by a code block")
            pending_quote = None
        for target in LINK.findall(strip_inline_code(line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto:
            links += 1
            file_part, _, fragment = target.partition("#")
            dest = path if not file_part else os.path.normpath(
                os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                errors.append(f"{where}: broken link '{target}' "
                              f"({os.path.relpath(dest, root)} does not exist)")
                continue
            if os.path.isdir(dest) and not os.path.isfile(os.path.join(dest, "README.md")):
                errors.append(f"{where}: '{target}' is a directory without a README.md")
                continue
            if fragment and dest.endswith(".md") and fragment not in headings(dest):
                errors.append(f"{where}: '{target}': no heading with anchor #{fragment} in "
                              f"{os.path.relpath(dest, root)}")
    if fence is not None:
        errors.append(f"{rel}:{fence_start}: unterminated code block")
    return links


def main(root):
    files = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    errors, total = [], 0
    for rel in files:
        n = check_file(root, rel, errors)
        total += n
        print(f"{rel}: {n} relative links")
    for e in errors:
        print(f"FAIL: {e}")
    if errors:
        return 1
    print(f"ok: {total} relative links in {len(files)} files resolve; every C block is current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
