#!/usr/bin/env python3
"""Fails on a file of src/ or kernels/ over 500 lines or a function over 80.

One concept per file and per function: a file that grows past 500 lines, or
a function past 80, mixes concepts that want a room of their own. The
function extents come from a brace-matching scan of C, C++ and CUDA that
knows comments, string and character literals (raw strings included),
digit separators, preprocessor lines (an #if's #else branch is skipped so
that the braces of both branches are not counted twice), constructor
initialiser lists, and containers (namespaces, classes, extern "C"). A
function runs from the line of its name to the line of its closing brace,
as universal-ctags reports it (`ctags --fields=+ne`: line .. end); lambdas
count inside the function that holds them. Brace initialisers outside
functions (tables, `= [](...) {...}` constants) are not functions.

Exceptions are listed below, each with the reason it cannot be split; an
exception that no longer applies is reported too, so the list stays short.

Run: check_sizes.py REPO_ROOT [--list N]  (--list N prints every function
of N lines or more, largest first, and the longest files), or --self-test,
which scans planted sources and expects exactly the planted violations.
"""
import os
import re
import sys
import tempfile

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
TOPS = ("src", "kernels")
SOURCE = re.compile(r"\.(c|cc|cpp|cxx|h|hpp|cu|cuh|def|inc)$")

# (path, what) -> why. `what` is a function name as reported below, or None
# for the file's length.
EXCEPTIONS = {
}

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "return", "sizeof",
           "alignof", "decltype", "noexcept", "requires"}
ANNOTATIONS = {"__attribute__", "__launch_bounds__", "alignas", "__declspec", "decltype",
               "noexcept", "requires", "__align__"}
IDENT = re.compile(r"[A-Za-z_]\w*")
# The colon opening a constructor's initialiser list (not `::`).
INIT_LIST = re.compile(r"(?<!:):(?!:)")


def branch_counts(text):
    """The number of branches of each preprocessor conditional, in the order
    of their #if lines."""
    counts, stack = [], []
    for m in re.finditer(r"^[ \t]*#\s*(\w+)", text, re.M):
        d = m.group(1)
        if d in ("if", "ifdef", "ifndef"):
            stack.append(len(counts))
            counts.append(1)
        elif d in ("else", "elif", "elifdef", "elifndef") and stack:
            counts[stack[-1]] += 1
        elif d == "endif" and stack:
            stack.pop()
    return counts


def blank(text, branch=0):
    """The text with comments, literals and preprocessor lines turned into
    spaces (newlines kept, so offsets and line numbers stay). Of each
    preprocessor conditional only branch `branch` is kept (its last one if
    it has fewer), the others blanked too, so that the braces of both
    branches of an #if are not counted twice."""
    out = []
    i, n = 0, len(text)
    line_start = True
    counts = branch_counts(text)
    # Per open conditional: [branch being read, branch kept].
    cond = []
    len_seen = [0]  # conditionals opened so far

    def skipping():
        return any(now != kept for now, kept in cond)

    def emit(chunk):
        out.append(re.sub(r"[^\n]", " ", chunk) if skipping() else chunk)

    def spaces(chunk):
        out.append(re.sub(r"[^\n]", " ", chunk))

    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] == "\\" or (text[k - 1] == "\r" and text[k - 2] == "\\"):
                    j = k + 1
                    continue
                break
            directive = re.match(r"#\s*(\w*)", text[i:k]).group(1)
            if directive in ("if", "ifdef", "ifndef"):
                total = counts[len_seen[0]] if len_seen[0] < len(counts) else 1
                len_seen[0] += 1
                cond.append([0, min(branch, total - 1)])
            elif directive in ("else", "elif", "elifdef", "elifndef") and cond:
                cond[-1][0] += 1
            elif directive == "endif" and cond:
                cond.pop()
            spaces(text[i:k])
            i = k
            continue
        line_start = c == "\n"
        if c == "/" and text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            spaces(text[i:k])
            i = k
            continue
        if c == "/" and text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            spaces(text[i:k])
            i = k
            continue
        if c == '"':
            raw = re.search(r"(?:^|[^\w])(?:u8|u|U|L)?R$", text[max(0, i - 3):i])
            if raw:
                m = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
                if m:
                    end = text.find(")" + m.group(1) + '"', i)
                    k = n if end < 0 else end + len(m.group(1)) + 2
                    spaces(text[i:k])
                    i = k
                    continue
            k = i + 1
            while k < n and text[k] != '"' and text[k] != "\n":
                k += 2 if text[k] == "\\" else 1
            k = min(k + 1, n)
            spaces(text[i:k])
            i = k
            continue
        if c == "'":
            prev = text[i - 1] if i else ""
            nxt = text[i + 1] if i + 1 < n else ""
            # A digit separator (1'000'000, 0xFF'FF) is no literal.
            if prev.isalnum() and nxt.isalnum() and re.search(r"\b\d[\w']*$", text[max(0, i - 40):i]):
                emit(c)
                i += 1
                continue
            k = i + 1
            while k < n and text[k] != "'" and text[k] != "\n":
                k += 2 if text[k] == "\\" else 1
            k = min(k + 1, n)
            spaces(text[i:k])
            i = k
            continue
        emit(c)
        i += 1
    return "".join(out)


def matching(code, i):
    """The index of the brace closing the one at i (or len(code))."""
    depth = 0
    for k in range(i, len(code)):
        if code[k] == "{":
            depth += 1
        elif code[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code)


def strip_template_heads(head):
    """The head without its leading `template <...>` clauses."""
    while True:
        m = re.match(r"\s*template\s*<", head)
        if not m:
            return head
        depth, k = 0, m.end() - 1
        while k < len(head):
            if head[k] == "<":
                depth += 1
            elif head[k] == ">":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        head = head[k + 1:]


def paren_groups(head):
    """(start, end) of each parenthesised group at depth 0 of the head."""
    groups, depth, start = [], 0, 0
    for k, ch in enumerate(head):
        if ch == "(":
            if depth == 0:
                start = k
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0:
                groups.append((start, k))
    return groups


def at_depth0(head, pattern):
    """Whether `pattern` (a regex) matches outside every () [] of the head."""
    depth, flat = 0, []
    for ch in head:
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
        flat.append(ch if depth == 0 else " ")
    return re.search(pattern, "".join(flat)) is not None


def function_name(head):
    """The function's name and its offset in the head, or (None, None): the
    name before the last parenthesised group that is not an annotation
    (noexcept(...), decltype(...)), so that the invocations of macros
    without a semicolon before a function are not taken for its name; a
    constructor's initialiser list is cut off first."""
    groups = paren_groups(head)
    if groups:
        init = INIT_LIST.search(head, groups[0][1])
        if init and at_depth0(head[groups[0][1]:], INIT_LIST.pattern):
            head = head[:init.start()]
    for start, _ in reversed(paren_groups(head)):
        m = re.search(r"((?:~?[A-Za-z_]\w*\s*(?:<[^(){};]*>)?\s*::\s*)*"
                      r"(?:operator\s*(?:\(\s*\)|[^\s(\w]+|\w[\w\s]*?)|~?[A-Za-z_]\w*)"
                      r"(?:\s*<[^(){};]*>)?)\s*$",
                      head[:start])
        if not m:
            continue
        name = re.sub(r"\s+", "", m.group(1))
        if name.split("::")[-1] in ANNOTATIONS or name in CONTROL:
            continue
        return name, m.start(1)
    return None, None


def functions(text):
    """[(name, first_line, last_line)] of the function definitions of a
    C/C++/CUDA source, lines counted from 1: those of every branch of its
    preprocessor conditionals (first branches, then second ones...)."""
    found, seen = [], set()
    for branch in range(max(branch_counts(text), default=1)):
        for f in functions_in(blank(text, branch)):
            if f[:2] not in seen:
                seen.add(f[:2])
                found.append(f)
    return found


def functions_in(code):
    """functions() of one blanked text."""
    found = []
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_of[k] = line
        if ch == "\n":
            line += 1
    line_of[len(code)] = line

    def scan(lo, hi):
        head_start = lo
        k = lo
        parens = 0
        while k < hi:
            ch = code[k]
            if ch in ";}":
                head_start = k + 1
                parens = 0
            elif ch == "(":
                parens += 1
            elif ch == ")":
                parens = max(0, parens - 1)
            elif ch == "{" and parens:
                k = matching(code, k) + 1  # a braced default argument
                continue
            elif ch == "{":
                head = code[head_start:k]
                body = strip_template_heads(head)
                stripped = body.strip()
                kw = IDENT.match(stripped)
                word = kw.group(0) if kw else ""
                groups = paren_groups(body)
                end = matching(code, k)
                if word == "namespace" or (word == "extern" and not groups):
                    scan(k + 1, end)
                elif word in ("class", "struct", "union") and not groups:
                    scan(k + 1, end)
                elif word == "enum" or not groups or at_depth0(body, r"(?<![=!<>+\-*/%&|^])=(?!=)") \
                        and not re.search(r"\boperator\s*\S*=", body):
                    pass  # an initialiser, an enum or a lambda constant
                elif at_depth0(body[groups[0][1]:], INIT_LIST.pattern) and \
                        re.search(r"[\w>]\s*$", body):
                    # A member initialiser `x_{...}` of a constructor's list:
                    # part of the head, not the body.
                    k = end + 1
                    continue
                else:
                    name, at = function_name(body)
                    if name is not None:
                        offset = head_start + (len(head) - len(body)) + at
                        while code[offset] in " \t\n":
                            offset += 1
                        found.append((name, line_of[offset], line_of[min(end, len(code) - 1)]))
                k = end + 1
                head_start = k
                parens = 0
                continue
            k += 1

    scan(0, len(code))
    return found


def scan_tree(root):
    """(file_lengths {rel: lines}, function list [(rel, name, lines, first)])."""
    files, funcs = {}, []
    for top in TOPS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for f in sorted(names):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                try:
                    with open(path, encoding="utf-8") as fh:
                        text = fh.read()
                except (UnicodeDecodeError, OSError):
                    continue  # not a text file
                files[rel] = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                if SOURCE.search(f):
                    for name, first, last in functions(text):
                        funcs.append((rel, name, last - first + 1, first))
    return files, funcs


def violations(root, exceptions):
    files, funcs = scan_tree(root)
    found, used = [], set()
    for rel, lines in sorted(files.items()):
        if lines > MAX_FILE_LINES:
            if (rel, None) in exceptions:
                used.add((rel, None))
            else:
                found.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES}): split it along "
                             "the concepts it holds")
    for rel, name, lines, first in funcs:
        if lines > MAX_FUNCTION_LINES:
            if (rel, name) in exceptions:
                used.add((rel, name))
            else:
                found.append(f"{rel}:{first}: {name} is {lines} lines (at most "
                             f"{MAX_FUNCTION_LINES}): split it along the steps it mixes")
    for key in sorted(set(exceptions) - used, key=str):
        found.append(f"{key[0]}: the exception for {key[1] or 'its length'} no longer applies; "
                     "remove it from tests/layering/check_sizes.py")
    return found


PLANTED_FUNCTION = r'''// braces in comments: { { {
#include <cstdio>
namespace outer {
namespace {
struct Holder {
  int x_, y_;
  Holder(int a) : x_{a}, y_(a) {
    if (a) { x_ = 1; }
  }
  int get() const noexcept { return x_; }
};
const char *table[] = {"{", "}", "{{"};
}  // namespace
extern "C" {
int long_one(int v) {
  const char *s = "}}}";  // }
  char c = '}';
  auto f = [&](int q) -> int {
    return q + 1;
  };
  int big = 1'000'000;
  const char *r = R"x( } } )x";
#if defined(A)
  if (v) {
#else
  if (!v) {
#endif
    v += f(c);
  }
%s  return v + big + s[0] + r[0];
}
}
}  // namespace outer
template <class T>
T fits(T v) {
%s  return v;
}
'''


def planted(extra):
    """The planted source with both long functions at 80 + extra lines."""
    return PLANTED_FUNCTION % ("  v += 1;\n" * (63 + extra), "  v += 2;\n" * (77 + extra))


def self_test():
    failures = []
    # The scanner against hand-counted extents: long_one's head is line 15
    # and its fixed lines 17; fits starts four lines after long_one ends.
    got = {name: (first, last) for name, first, last in functions(planted(0))}
    want = {"Holder": (7, 9), "get": (10, 10), "long_one": (15, 94), "fits": (98, 177)}
    if got != want:
        failures.append(f"extents: expected {want}, got {got}")
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as fh:
                fh.write(text)
        # 80 lines of function and 500 lines of file are allowed.
        write("src/ops/ok.cpp", planted(0))
        write("kernels/ok.cu", "int x;\n" * 500)
        clean = violations(root, {})
        if clean:
            failures.append(f"a clean tree was reported: {clean}")
        # One line more of each, and an exception that applies to nothing.
        write("src/ops/bad.cpp", planted(1))
        write("kernels/bad.cu", "int x;\n" * 501)
        found = violations(root, {("src/ops/gone.cpp", "gone"): "planted"})
        expected = ["src/ops/bad.cpp:15: long_one is 81 lines",
                    "src/ops/bad.cpp:99: fits is 81 lines",
                    "kernels/bad.cu: 501 lines",
                    "src/ops/gone.cpp: the exception for gone no longer applies"]
        missed = [e for e in expected if not any(v.startswith(e) for v in found)]
        if missed or len(found) != len(expected):
            failures.append(f"expected {expected}, got {found}")
        # ... and an exception silences its violation.
        found = violations(root, {("src/ops/bad.cpp", "long_one"): "planted",
                                  ("kernels/bad.cu", None): "planted"})
        if len(found) != 1 or "fits" not in found[0]:
            failures.append(f"exceptions: expected only fits reported, got {found}")
    for f in failures:
        print("self-test:", f)
    if failures:
        return 1
    print("self-test: extents as counted by hand; every planted violation reported, no more")
    return 0


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--list"):
        print(__doc__)
        return 2
    root = args[0]
    if len(args) == 3:
        files, funcs = scan_tree(root)
        floor = int(args[2])
        for rel, name, lines, first in sorted(funcs, key=lambda f: -f[2]):
            if lines >= floor:
                print(f"{lines:5d}  {rel}:{first}  {name}")
        for rel, lines in sorted(files.items(), key=lambda f: -f[1])[:10]:
            print(f"{lines:5d}  {rel}")
        return 0
    found = violations(root, EXCEPTIONS)
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} size violation(s) (limits and exceptions: {__file__})")
        return 1
    print(f"every file of {' and '.join(TOPS)} is at most {MAX_FILE_LINES} lines and every "
          f"function at most {MAX_FUNCTION_LINES} (exceptions: {len(EXCEPTIONS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
