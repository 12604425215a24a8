#!/usr/bin/env python3
"""Fails on any #include that points the wrong way between mixp's layers.

The layers of the library, bottom to top, and what each folder may include
(besides itself and the public header mixp/mixp.h) -- docs/architecture.md
explains them:

    core       the ground floor; owns memory through the backend interface
    backend    core                   (the contract: interface, arguments, formulas)
    cpu        core, backend          (the CPU backend)
    kernels    core, backend          (the CUDA plugin)
    device     core, backend, cpu     (device selection, the plugin loader:
                                       what constructs backends)
    autocast   core                   (the policy half of mixed precision)
    autograd   core                   (the graph and the checkpoint tape)
    ops        core, backend, autocast, autograd
    optim      ops and below
    nn, models the public API only, plus core's types and nn's helpers
    amp        optim, nn and below    (GradScaler, O2 decorate)
    data       core, backend
    state      everything above except api
    dist       optim, nn and below    (collectives, data parallelism)
    graph      core, backend          (captured steps: the recorder and replay)
    api        everything

tools/, bindings/ and examples/ include the public header only.

Run: check_includes.py REPO_ROOT  (or --self-test, which plants a violation in
a scratch tree and expects this checker to report it).
"""
import os
import re
import sys
import tempfile

BELOW_OPS = {"core", "backend", "autocast", "autograd"}
ALLOWED = {
    "core": {"core"},
    "backend": {"core", "backend"},
    "cpu": {"core", "backend", "cpu"},
    "kernels": {"core", "backend"},
    "device": {"core", "backend", "cpu", "device"},
    "autocast": {"core", "autocast"},
    "autograd": {"core", "autograd"},
    "ops": BELOW_OPS | {"ops"},
    "optim": BELOW_OPS | {"ops", "optim"},
    "nn": {"core", "nn"},
    "models": {"core", "nn", "models"},
    "amp": BELOW_OPS | {"ops", "optim", "nn", "amp"},
    "data": {"core", "backend", "data"},
    "state": BELOW_OPS | {"ops", "optim", "nn", "models", "amp", "data", "state"},
    "dist": BELOW_OPS | {"ops", "optim", "nn", "dist"},
    "graph": {"core", "backend", "graph"},
    "api": None,  # anything
}

# Single files allowed one step further than their folder, each with the
# reason it needs to.
EXCEPTIONS = {
    # Tensors own their memory through the session's backend: the ground
    # floor sees the backend interface (not the CPU backend, not the loader).
    ("src/core/tensor.cpp", "backend/backend.hpp"),
    ("src/core/session.cpp", "backend/backend.hpp"),
    # The host transport sums what it receives in host memory with the CPU
    # backend's multi-versioned loops (run_kernel).
    ("src/dist/dist.cpp", "cpu/simd.hpp"),
    # ... and loads the MPI transport plugin with the loader's dlopen search
    # (load_plugin_entry), as the session loads the CUDA backend.
    ("src/dist/transport.cpp", "device/loader.hpp"),
    # The backward engine runs the recorded formulas and sums gradients,
    # which are ops; the graph it walks is recorded below the ops.
    ("src/autograd/engine.cpp", "ops/ops.hpp"),
    # ... and the profiler times each formula it runs, as the op scope
    # times the ops.
    ("src/autograd/engine.cpp", "ops/profile.hpp"),
    # The generated build description (commit, CUDA architectures).
    ("src/api/api_base.cpp", "build_config.h"),
}

SOURCE = re.compile(r"\.(c|cc|cpp|h|hpp|cu|cuh|def|i)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] in ("tools", "bindings", "examples"):
        return "public"
    return None


def violations(root):
    found = []
    # Every folder of src/ has its row, even one whose files include nothing
    # yet: a new folder is placed in the layers when it is created.
    src = os.path.join(root, "src")
    if os.path.isdir(src):
        for d in sorted(os.listdir(src)):
            if os.path.isdir(os.path.join(src, d)) and d not in ALLOWED:
                found.append(f"src/{d}/: folder has no place in the layer table of "
                             "tests/layering/check_includes.py")
    for top in ("src", "kernels", "tools", "bindings", "examples"):
        base = os.path.join(root, top)
        for dirpath, _, files in os.walk(base):
            for f in files:
                if not SOURCE.search(f):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                layer = layer_of(rel)
                if layer is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                for inc in INCLUDE.findall(text):
                    if inc == "mixp/mixp.h" or (rel, inc) in EXCEPTIONS:
                        continue
                    if "/" not in inc:
                        # A header of the same folder (kernels/common.cuh,
                        # tools/mixp-train.h) or a generated one.
                        if os.path.exists(os.path.join(dirpath, inc)):
                            continue
                        found.append(f"{rel}: includes \"{inc}\", which is not beside it")
                        continue
                    target = inc.split("/")[0]
                    if layer == "public":
                        found.append(f"{rel}: includes the internal header \"{inc}\"; "
                                     "tools, bindings and examples use mixp/mixp.h only")
                        continue
                    allowed = ALLOWED.get(layer)
                    if layer not in ALLOWED:
                        break  # reported once for the folder, above
                    if allowed is not None and target not in allowed:
                        found.append(f"{rel}: includes \"{inc}\": {layer}/ may include only "
                                     f"{', '.join(sorted(allowed))}")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(rel, text):
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as fh:
                fh.write(text)
        write("src/core/ok.cpp", '#include "core/x.hpp"\n#include "mixp/mixp.h"\n')
        write("src/ops/ok.cpp", '#include "autograd/node.hpp"\n')
        write("src/cpu/ok.cpp", '#include "backend/backend.hpp"\n#include "cpu/simd.hpp"\n')
        write("src/device/ok.cpp", '#include "cpu/cpu_backend.hpp"\n#include "device/loader.hpp"\n')
        if violations(root):
            print("self-test: a clean tree was reported:", violations(root))
            return 1
        planted = {
            "src/core/bad.cpp": '#include "ops/ops.hpp"\n',
            "tools/bad.c": '#include "core/tensor.hpp"\n',
            # The CPU backend sits below the ops, beside the CUDA plugin.
            "src/cpu/bad.cpp": '#include "ops/ops.hpp"\n',
            # The contract knows no device, and no device constructs another.
            "src/backend/bad.hpp": '#include "cpu/cpu_backend.hpp"\n',
            "src/cpu/bad_device.cpp": '#include "device/device.hpp"\n',
            # A folder outside the table, though it includes nothing.
            "src/attic/": None,
        }
        for rel, text in planted.items():
            if text is None:
                os.makedirs(os.path.join(root, rel))
            else:
                write(rel, text)
        found = violations(root)
        missed = [rel for rel in planted
                  if not any(v.startswith(rel + ":") or v.startswith(rel) and rel.endswith("/")
                             for v in found)]
        if len(found) != len(planted) or missed:
            print(f"self-test: expected {len(planted)} violations, one per planted file; missed",
                  missed, "got", found)
            return 1
    print(f"self-test: all {len(planted)} planted violations were reported")
    return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    found = violations(sys.argv[1])
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) point the wrong way (see the table in {__file__})")
        return 1
    print("every #include points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
