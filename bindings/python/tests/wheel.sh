#!/bin/sh
# The wheel a user installs: `pip wheel ./bindings/python` (libmixp built
# from this source tree and bundled), `auditwheel repair` (oneDNN, libgomp
# and libOpenCL vendored beside it), then `auditwheel show` must name only
# the libraries every manylinux system has, and the wheel, installed into a
# fresh virtual environment, must train from there with the vendored
# libraries it carries. The CUDA plugin is left out here (its cuBLAS/cuDNN
# are not system libraries; a CUDA wheel would depend on NVIDIA's wheels).
# Usage: wheel.sh SOURCE_DIR WORK_DIR PYTHON
set -eu
src=$1 work=$2 python=$3
for m in pip scikit_build_core numpy auditwheel; do
  if ! "$python" -c "import $m" 2>/dev/null; then
    echo "SKIPPED: $python lacks $m (pip install auditwheel scikit-build-core)"; exit 77
  fi
done
command -v patchelf >/dev/null 2>&1 || { echo "SKIPPED: patchelf not found (apt-get install patchelf)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# Offline, like the pip_install test: the build tools are already installed.
if ! "$python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir -w "$work/dist" \
     --config-settings=cmake.define.MIXP_WITH_CUDA=OFF --config-settings=build-dir="$work/build" \
     "$src/bindings/python" \
     >"$work/wheel.log" 2>&1; then
  tail -40 "$work/wheel.log"; fail "pip wheel failed"
fi
whl=$(ls "$work"/dist/mixp-*.whl) || fail "no wheel in $work/dist"
echo "built $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"

"$python" -m auditwheel repair -w "$work/repaired" "$whl" >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log"; fail "auditwheel repair failed"; }
fixed=$(ls "$work"/repaired/mixp-*.whl) || fail "no repaired wheel"
"$python" -m auditwheel show "$fixed" >"$work/show.txt" 2>&1 || { cat "$work/show.txt"; fail "auditwheel show failed"; }
cat "$work/show.txt"
# auditwheel wraps its sentences: read them as one line.
show=$(tr -s ' \n' '  ' < "$work/show.txt")
case $show in *"is consistent with the following platform tag: \"manylinux_"*) ;;
  *) fail "auditwheel finds the wheel consistent with no manylinux tag" ;; esac
if echo "$show" | grep -q 'external shared libraries are required'; then
  fail "the repaired wheel still needs libraries outside the manylinux policy"
fi
echo "repaired: $(basename "$fixed") ($(du -k "$fixed" | cut -f1) KiB)"

# A fresh environment (system numpy visible, no mixp), installed offline.
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --no-deps --no-index -q "$fixed" || fail "pip install of the wheel failed"
cd "$work"
"$work/venv/bin/python" - "$work/venv" <<'PY'
import os
import subprocess
import sys

import numpy as np
import mixp

venv = sys.argv[1]
assert mixp.__file__.startswith(venv), mixp.__file__
pkg = os.path.dirname(mixp.__file__)
# libmixp is the wheel's, and its oneDNN the vendored copy, not the system's.
lib = [f for f in os.listdir(pkg) if f.startswith("libmixp.so")]
assert lib, os.listdir(pkg)
ldd = subprocess.run(["ldd", os.path.join(pkg, lib[0])], capture_output=True, text=True).stdout
dnnl = [l for l in ldd.splitlines() if "libdnnl" in l]
assert dnnl and venv in dnnl[0], ldd

# Train: a two-layer MLP on separable synthetic data, AdamW.
rng = np.random.default_rng(0)
centers = rng.normal(size=(4, 16)).astype(np.float32) * 3
y = rng.integers(0, 4, size=512)
x = (centers[y] + rng.normal(size=(512, 16)).astype(np.float32)).astype(np.float32)
model = mixp.nn.Sequential(mixp.nn.Linear(16, 32), mixp.relu, mixp.nn.Linear(32, 4))
opt = mixp.optim.AdamW(model.parameters(), lr=1e-2)
xs, ys = mixp.tensor(x), mixp.tensor(y.astype(np.int64))
first = last = None
for step in range(60):
    loss = mixp.cross_entropy(model(xs), ys)
    opt.zero_grad()
    loss.backward()
    opt.step()
    first = loss.item() if first is None else first
    last = loss.item()
assert last < 0.5 * first, (first, last)
print(f"trained from the installed wheel: loss {first:.3f} -> {last:.3f}; oneDNN: {dnnl[0].split('=>')[1].split()[0]}")
PY
