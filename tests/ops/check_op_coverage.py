#!/usr/bin/env python3
"""Walks the op table (src/core/ops.def) and checks that every public op has

  gradcheck  a call of its C function reachable from a gradcheck function of
             a CMocka suite (a function with mt_gradcheck's mt_fn signature,
             following the helpers it calls in the same file)
  parity     a CPU/CUDA parity row (tests/c/test_cuda_parity*.c calls it)
  python     a use in the Python package (capi.<c_function>)
  go         a use in the Go package (raw.Mixp_<name>)
  java       a use in the Java package (mixp.<c_function>)

unless tests/ops/coverage_skips.txt lists the (op, check) pair with the
reason it is skipped on purpose. A skip that is no longer needed is an error
too, so the list stays true.

Run: check_op_coverage.py REPO_ROOT  (or --self-test).
"""
import glob
import os
import re
import sys
import tempfile

CHECKS = ("gradcheck", "parity", "python", "go", "java")
ROW = re.compile(r"^MIXP_(OP|UNARY|BINARY)\(([^)]*)\)", re.M)
MT_FN = re.compile(
    r"^(?:static\s+)?mixp_status\s+(\w+)\s*\(\s*mixp_tensor\s*\*\*\s*\w+\s*,\s*int\s+\w+\s*,"
    r"\s*void\s*\*\s*\w+\s*,\s*mixp_tensor\s*\*\*\s*\w+\s*\)\s*\{", re.M)
FUNC = re.compile(r"^(?:static\s+)?(?:inline\s+)?[\w\s\*]+?\b(\w+)\s*\([^;{]*\)\s*\{", re.M)


def public_ops(root):
    text = open(os.path.join(root, "src/core/ops.def")).read()
    ops = []
    for kind, args in ROW.findall(text):
        a = [x.strip() for x in args.split(",")]
        name, c_function = (a[0], a[1]) if kind == "OP" else (a[1], a[2])
        ops.append((name, c_function))
    return ops


def functions(text):
    """name -> body of each top-level function (brace matched)."""
    out = {}
    for m in FUNC.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out[m.group(1)] = text[m.end():i]
    return out


def gradchecked(root):
    """The mixp_* functions reachable from gradcheck functions."""
    reached = set()
    for path in glob.glob(os.path.join(root, "tests/c/*.c")) + glob.glob(os.path.join(root, "tests/c/*.h")):
        text = open(path, encoding="utf-8", errors="replace").read()
        if "mt_gradcheck(" not in text:
            continue
        funcs = functions(text)
        pending = [m.group(1) for m in MT_FN.finditer(text)]
        seen = set()
        while pending:
            f = pending.pop()
            if f in seen or f not in funcs:
                continue
            seen.add(f)
            body = funcs[f]
            reached.update(re.findall(r"\bmixp_\w+", body))
            pending.extend(c for c in re.findall(r"\b(\w+)\s*\(", body) if c in funcs)
    return reached


def words_in(paths):
    text = ""
    for p in paths:
        text += open(p, encoding="utf-8", errors="replace").read()
    return text


def coverage(root):
    ops = public_ops(root)
    grad = gradchecked(root)
    parity = words_in(glob.glob(os.path.join(root, "tests/c/test_cuda_parity*.c")))
    py = words_in(glob.glob(os.path.join(root, "bindings/python/mixp/*.py")))
    go = words_in(p for p in glob.glob(os.path.join(root, "bindings/go/*.go")) if not p.endswith("_test.go"))
    java = words_in(glob.glob(os.path.join(root, "bindings/java/src/main/java/**/*.java"), recursive=True))
    missing = set()
    for name, fn in ops:
        has = {
            "gradcheck": fn in grad,
            "parity": re.search(r"\b%s\b" % fn, parity) is not None,
            "python": re.search(r"\bcapi\.%s\b" % fn, py) is not None,
            "go": re.search(r"\braw\.Mixp_%s\b" % fn[len("mixp_"):], go) is not None,
            "java": re.search(r"\bmixp\.%s\s*\(" % fn, java) is not None,
        }
        missing.update((name, c) for c in CHECKS if not has[c])
    return ops, missing


def read_skips(root):
    skips = {}
    path = os.path.join(root, "tests/ops/coverage_skips.txt")
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[1] not in CHECKS:
            raise SystemExit(f"{path}:{n}: expected '<op> <{'|'.join(CHECKS)}> <reason>'")
        skips[(parts[0], parts[1])] = parts[2]
    return skips


def check(root):
    ops, missing = coverage(root)
    skips = read_skips(root)
    names = {n for n, _ in ops}
    problems = []
    for name, c in sorted(missing):
        if (name, c) not in skips:
            problems.append(f"op '{name}' has no {c} coverage (add it, or list it with a reason "
                            "in tests/ops/coverage_skips.txt)")
    for (name, c), _ in sorted(skips.items()):
        if name not in names:
            problems.append(f"coverage_skips.txt names '{name}', which is not an op")
        elif (name, c) not in missing:
            problems.append(f"coverage_skips.txt skips {c} of '{name}', which has it now: "
                            "remove the line")
    return len(ops), problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "w").write(text)
        write("src/core/ops.def", "MIXP_OP(foo, mixp_foo, Other)\n"
              "MIXP_UNARY(Bar, bar, mixp_bar, None, Other, X)\n")
        write("tests/c/test_x.c",
              "static mixp_status call(int op, mixp_tensor *x, mixp_tensor **out) {\n"
              "  return op ? mixp_bar(x, out) : MIXP_OK;\n}\n"
              "static mixp_status g_fn(mixp_tensor **in, int n, void *ctx, mixp_tensor **out) {\n"
              "  return call(1, in[0], out);\n}\n"
              "static void t(void) { mt_gradcheck(s, g_fn, 0, 0, 1, 0, 0); mixp_foo(0, 0); }\n")
        write("tests/c/test_cuda_parity_ops.c", "mixp_foo(a); mixp_bar(b);\n")
        write("bindings/python/mixp/f.py", "capi.mixp_foo(x)\ncapi.mixp_bar(x)\n")
        write("bindings/go/f.go", "raw.Mixp_foo(x)\nraw.Mixp_bar(x)\n")
        write("bindings/java/src/main/java/org/mixp/F.java", "mixp.mixp_foo(x); mixp.mixp_bar(x);\n")
        write("tests/ops/coverage_skips.txt", "")
        n, problems = check(root)
        # foo is called beside mt_gradcheck but not from a gradcheck function.
        want = ["op 'foo' has no gradcheck coverage"]
        if n != 2 or len(problems) != 1 or not problems[0].startswith(want[0]):
            print("self-test: expected only foo's missing gradcheck, got", problems)
            return 1
        write("tests/ops/coverage_skips.txt", "foo gradcheck reason\nbar java stale\n")
        n, problems = check(root)
        if len(problems) != 1 or "remove the line" not in problems[0]:
            print("self-test: expected the stale skip to be reported, got", problems)
            return 1
    print("self-test: a missing gradcheck and a stale skip were both reported")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    n, problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"all {n} ops have gradcheck, CUDA parity and Python/Go/Java coverage or a listed reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
