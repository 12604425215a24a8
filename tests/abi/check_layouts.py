#!/usr/bin/env python3
"""The part of the ABI check that abidiff's suppressions cannot express
(run by tests/abi/check_abi.cmake beside abidiff).

abi.suppr lets a mixp struct grow at its end; libabigail then hides every
change of that struct, including one to a member that was already there. So
this script compares the two ABI dumps (abidw's XML) itself:

  structs  every struct of the baseline is in the current dump, its members
           are a prefix of the current members (same name, offset and type),
           and its size did not shrink;
  enums    every enumerator of the baseline keeps its value (new ones may be
           added).

Run: check_layouts.py BASELINE.abi CURRENT.abi  (or --self-test)
"""
import sys
import tempfile
import os
import xml.etree.ElementTree as ET


def load(path):
    """The corpus's types by id, its mixp_ structs and its enums."""
    root = ET.parse(path).getroot()
    types, structs, enums = {}, {}, {}
    for el in root.iter():
        tid = el.get("id")
        if tid:
            types[tid] = el
    for el in root.iter("class-decl"):
        name = el.get("name", "")
        if name.startswith("mixp_") and el.get("is-declaration-only") != "yes":
            structs[name] = el
    for el in root.iter("enum-decl"):
        enums[el.get("name")] = {e.get("name"): int(e.get("value")) for e in el.findall("enumerator")}
    return types, structs, enums


def describe(types, tid, depth=0):
    """A type by what makes its layout: names, sizes, pointers, arrays."""
    el = types.get(tid)
    if el is None or depth > 8:
        return tid
    tag = el.tag
    if tag == "type-decl":
        return "%s:%s" % (el.get("name"), el.get("size-in-bits", "?"))
    if tag == "typedef-decl":
        return "%s=%s" % (el.get("name"), describe(types, el.get("type-id"), depth + 1))
    if tag == "pointer-type-def":
        return describe(types, el.get("type-id"), depth + 1) + "*"
    if tag == "qualified-type-def":
        q = " ".join(k for k in ("const", "volatile", "restrict") if el.get(k) == "yes")
        return "%s %s" % (q, describe(types, el.get("type-id"), depth + 1))
    if tag == "array-type-def":
        return "%s[%s]" % (describe(types, el.get("type-id"), depth + 1), el.get("size-in-bits", "?"))
    if tag in ("class-decl", "union-decl", "enum-decl"):
        return "%s %s" % (tag, el.get("name"))
    if tag == "function-type":
        params = [describe(types, p.get("type-id"), depth + 1) for p in el.findall("parameter")]
        ret = el.find("return")
        return "fn(%s)->%s" % (",".join(params), describe(types, ret.get("type-id"), depth + 1) if ret is not None else "?")
    return tag


def members(types, el):
    out = []
    for dm in el.findall("data-member"):
        var = dm.find("var-decl")
        out.append((var.get("name"), int(dm.get("layout-offset-in-bits")), describe(types, var.get("type-id"))))
    return out


def compare(base_path, cur_path):
    btypes, bstructs, benums = load(base_path)
    ctypes, cstructs, cenums = load(cur_path)
    errors = []
    for name in sorted(bstructs):
        if name not in cstructs:
            errors.append("struct %s: gone (or no longer defined in the header)" % name)
            continue
        old, new = members(btypes, bstructs[name]), members(ctypes, cstructs[name])
        for i, m in enumerate(old):
            if i >= len(new):
                errors.append("struct %s: member %s (offset %d bits) removed" % (name, m[0], m[1]))
                break
            if new[i] != m:
                errors.append("struct %s: member %d was %s at %d bits (%s), is %s at %d bits (%s); "
                              "members may only be appended" % (name, i, m[0], m[1], m[2], new[i][0], new[i][1], new[i][2]))
                break
        osize, nsize = int(bstructs[name].get("size-in-bits")), int(cstructs[name].get("size-in-bits"))
        if nsize < osize or (nsize != osize and len(new) == len(old)):
            errors.append("struct %s: size %d -> %d bits" % (name, osize, nsize))
    for name in sorted(benums):
        if name not in cenums:
            errors.append("enum %s: gone" % name)
            continue
        for e, v in benums[name].items():
            if e not in cenums[name]:
                errors.append("enum %s: enumerator %s (%d) removed" % (name, e, v))
            elif cenums[name][e] != v:
                errors.append("enum %s: %s was %d, is %d" % (name, e, v, cenums[name][e]))
    return errors, len(bstructs), len(benums)


SELF_TEST_BASE = """<abi-corpus version='2.1'>
  <abi-instr address-size='64' path='a.cpp' language='LANG_C_plus_plus_14'>
    <type-decl name='int' size-in-bits='32' id='t-int'/>
    <type-decl name='long int' size-in-bits='64' id='t-long'/>
    <enum-decl name='mixp_e' id='t-e'>
      <underlying-type type-id='t-int'/>
      <enumerator name='A' value='0'/>
      <enumerator name='B' value='1'/>
    </enum-decl>
    <class-decl name='mixp_s' size-in-bits='128' is-struct='yes' visibility='default' id='t-s'>
      <data-member access='public' layout-offset-in-bits='0'>
        <var-decl name='struct_size' type-id='t-int' visibility='default'/>
      </data-member>
      <data-member access='public' layout-offset-in-bits='64'>
        <var-decl name='x' type-id='t-long' visibility='default'/>
      </data-member>
    </class-decl>
  </abi-instr>
</abi-corpus>
"""


def self_test():
    cases = {
        "unchanged": (lambda s: s, 0),
        "appended member": (lambda s: s.replace("size-in-bits='128' is-struct", "size-in-bits='192' is-struct").replace(
            "</class-decl>", "<data-member access='public' layout-offset-in-bits='128'><var-decl name='y' "
            "type-id='t-int' visibility='default'/></data-member></class-decl>"), 0),
        "appended enumerator": (lambda s: s.replace("<enumerator name='B' value='1'/>",
                                                    "<enumerator name='B' value='1'/><enumerator name='C' value='2'/>"), 0),
        "retyped member": (lambda s: s.replace("name='x' type-id='t-long'", "name='x' type-id='t-int'"), 1),
        "moved member": (lambda s: s.replace("layout-offset-in-bits='64'", "layout-offset-in-bits='32'"), 1),
        "renamed member": (lambda s: s.replace("name='x'", "name='z'"), 1),
        "removed member": (lambda s: s.replace("size-in-bits='128' is-struct", "size-in-bits='64' is-struct").replace(
            "<var-decl name='x' type-id='t-long' visibility='default'/>", "").replace(
            "<data-member access='public' layout-offset-in-bits='64'>\n        \n      </data-member>", ""), 1),
        "grown without a member": (lambda s: s.replace("size-in-bits='128' is-struct", "size-in-bits='192' is-struct"), 1),
        "enumerator value": (lambda s: s.replace("name='B' value='1'", "name='B' value='2'"), 1),
        "enumerator removed": (lambda s: s.replace("<enumerator name='B' value='1'/>", ""), 1),
        "struct gone": (lambda s: s.replace("name='mixp_s' size-in-bits='128' is-struct='yes'",
                                            "name='mixp_s' is-declaration-only='yes' is-struct='yes'"), 1),
    }
    ok = True
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.abi")
        with open(base, "w") as f:
            f.write(SELF_TEST_BASE)
        for name, (mutate, want) in cases.items():
            cur = os.path.join(d, "cur.abi")
            text = mutate(SELF_TEST_BASE)
            if want and text == SELF_TEST_BASE:
                print("self-test case %s does not change the dump" % name)
                ok = False
                continue
            with open(cur, "w") as f:
                f.write(text)
            errors, _, _ = compare(base, cur)
            if bool(errors) != bool(want):
                print("self-test %s: expected %s, got %s" % (name, "errors" if want else "none", errors))
                ok = False
    print("check_layouts self-test: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print(__doc__)
        return 2
    errors, n_structs, n_enums = compare(argv[1], argv[2])
    for e in errors:
        print("ABI: " + e)
    if errors:
        return 1
    print("check_layouts: %d structs and %d enums of %s kept (members and enumerators only added)"
          % (n_structs, n_enums, os.path.basename(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
