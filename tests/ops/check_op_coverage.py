#!/usr/bin/env python3
"""Walks the op table (src/core/ops.def) and checks that every public op has

  gradcheck  a call of its C function reachable from a gradcheck function of
             a CMocka suite (a function with mt_gradcheck's mt_fn signature,
             following the helpers it calls in the same file)
  parity     a CPU/CUDA parity row (tests/c/test_cuda_parity*.c calls it)
  python     a use in the Python package (capi.<c_function>)
  go         a use in the Go package (raw.Mixp_<name>)
  java       a use in the Java package (mixp.<c_function>)

A unary or binary row is covered for gradcheck and parity by a test that
walks the rows tests/c/op_rows.h generates from ops.def (mt_unary_rows,
mt_binary_rows: in a gradcheck function for gradcheck, anywhere in the
parity suites for parity), so a new row needs no test edit -- except a row
with c_args Custom, which the generated rows cannot call: its C function
must be called as for any other op.

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


ROWS_HEADER = "tests/c/op_rows.h"
ROW_ARRAYS = {"UNARY": "mt_unary_rows", "BINARY": "mt_binary_rows"}


def public_ops(root):
    """(name, c_function, kind, c_args) of every public row."""
    text = open(os.path.join(root, "src/core/ops.def")).read()
    ops = []
    for kind, args in ROW.findall(text):
        a = [x.strip() for x in args.split(",")]
        name, c_function = (a[0], a[1]) if kind == "OP" else (a[1], a[2])
        c_args = a[5].split(")")[0].strip() if kind == "UNARY" else ""
        ops.append((name, c_function, kind, c_args))
    return ops


def generated_arrays(root):
    """The row arrays tests/c/op_rows.h really generates from ops.def."""
    path = os.path.join(root, ROWS_HEADER)
    if not os.path.exists(path):
        return set()
    text = open(path, encoding="utf-8", errors="replace").read()
    if not re.search(r'#include\s+"\.\./\.\./src/core/ops\.def"', text):
        return set()
    return {array for kind, array in ROW_ARRAYS.items()
            if re.search(r"#define\s+MIXP_%s\(" % kind, text) and array in text}


def generated_covers(kind, c_args, arrays, text_has):
    """Whether a walk over the generated rows covers this row."""
    array = ROW_ARRAYS.get(kind)
    return array in arrays and c_args != "Custom" and text_has(array)


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


def closure(funcs, start):
    """The functions of one file reachable from `start`: called, or passed
    as a function pointer (a Custom row's caller)."""
    pending, seen = list(start), set()
    while pending:
        f = pending.pop()
        if f in seen or f not in funcs:
            continue
        seen.add(f)
        pending.extend(c for c in re.findall(r"\b(\w+)\b", funcs[f]) if c in funcs)
    return seen


def gradchecked(root):
    """The mixp_* functions reachable from gradcheck functions, and the
    generated row arrays a function walks on its way to mt_gradcheck."""
    reached = set()
    for path in glob.glob(os.path.join(root, "tests/c/*.c")) + glob.glob(os.path.join(root, "tests/c/*.h")):
        text = open(path, encoding="utf-8", errors="replace").read()
        if "mt_gradcheck(" not in text:
            continue
        funcs = functions(text)
        for f in closure(funcs, [m.group(1) for m in MT_FN.finditer(text)]):
            reached.update(re.findall(r"\bmixp_\w+", funcs[f]))
        for f, body in funcs.items():
            arrays = set(re.findall(r"\bmt_(?:unary|binary)_rows\b", body))
            if arrays and any("mt_gradcheck(" in funcs[g] for g in closure(funcs, [f])):
                reached.update(arrays)
    return reached


def words_in(paths):
    text = ""
    for p in paths:
        text += open(p, encoding="utf-8", errors="replace").read()
    return text


def coverage(root):
    ops = public_ops(root)
    grad = gradchecked(root)
    arrays = generated_arrays(root)
    parity = words_in(glob.glob(os.path.join(root, "tests/c/test_cuda_parity*.c")))
    py = words_in(glob.glob(os.path.join(root, "bindings/python/mixp/*.py")))
    go = words_in(p for p in glob.glob(os.path.join(root, "bindings/go/*.go")) if not p.endswith("_test.go"))
    java = words_in(glob.glob(os.path.join(root, "bindings/java/src/main/java/**/*.java"), recursive=True))
    missing = set()
    for name, fn, kind, c_args in ops:
        has = {
            "gradcheck": fn in grad or generated_covers(kind, c_args, arrays, lambda a: a in grad),
            "parity": re.search(r"\b%s\b" % fn, parity) is not None
                      or generated_covers(kind, c_args, arrays,
                                          lambda a: re.search(r"\b%s\b" % a, parity) is not None),
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
    names = {op[0] for op in ops}
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
        # Generated rows: a walk over mt_unary_rows on the way to mt_gradcheck
        # (and in a parity suite) covers an X row, not a Custom one; and
        # nothing when op_rows.h does not generate the rows from ops.def.
        write("src/core/ops.def", "MIXP_UNARY(Bar, bar, mixp_bar, None, Other, X)\n"
              "MIXP_UNARY(Qux, qux, mixp_qux, None, Other, Custom)\n")
        rows = ("#define MIXP_UNARY(Enum, name, c_function, reads, category, c_args) {#name},\n"
                "static const mt_unary_row mt_unary_rows[] = {\n%s};\n")
        write("tests/c/op_rows.h", rows % '#include "../../src/core/ops.def"\n')
        write("tests/c/test_x.c",
              "static void check_on(int r) {\n  mt_gradcheck(s, g_fn, (void *)&r, 0, 1, 0, 0);\n}\n"
              "static void t(void) {\n  for (int r = 0; r < 2; ++r) if (mt_unary_rows[r].x) check_on(r);\n}\n")
        write("tests/c/test_cuda_parity_ops.c", "row = &mt_unary_rows[op];\n")
        write("bindings/python/mixp/f.py", "capi.mixp_bar(x)\ncapi.mixp_qux(x)\n")
        write("bindings/go/f.go", "raw.Mixp_bar(x)\nraw.Mixp_qux(x)\n")
        write("bindings/java/src/main/java/org/mixp/F.java", "mixp.mixp_bar(x); mixp.mixp_qux(x);\n")
        write("tests/ops/coverage_skips.txt", "")
        n, problems = check(root)
        want = ["op 'qux' has no gradcheck", "op 'qux' has no parity"]
        if len(problems) != 2 or not all(p.startswith(w) for p, w in zip(problems, want)):
            print("self-test: expected only the Custom row's gradcheck and parity, got", problems)
            return 1
        write("tests/c/op_rows.h", rows % "")
        n, problems = check(root)
        if not any(p.startswith("op 'bar' has no gradcheck") for p in problems) or \
                not any(p.startswith("op 'bar' has no parity") for p in problems):
            print("self-test: rows not generated from ops.def still counted, got", problems)
            return 1
    print("self-test: a missing gradcheck, a stale skip, a Custom row and rows not generated "
          "from ops.def were all reported")
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
