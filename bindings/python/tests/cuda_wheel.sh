#!/bin/sh
# The GPU for `pip install`: the distribution mixp-cuda13 (bindings/python-cuda)
# packages this build's libmixp_cuda.so with a RUNPATH into NVIDIA's PyPI
# wheels. Checked here: what the wheel holds and links (nothing from
# /usr/local/cuda at run time: NEEDED only cuBLAS(Lt), cuDNN and system
# libraries, RUNPATH only $ORIGIN/../nvidia/*), that auditwheel repairs it
# with NVIDIA's libraries left to their wheels, and that installed beside
# the CPU wheel of the python_wheel_manylinux test, with NVIDIA's wheels from
# PyPI, in a fresh virtual environment, the plugin resolves every library
# inside that environment and a cuda session reports the missing GPU cleanly
# (on a GPU machine: trains a small MLP on cuda and names the libraries'
# files). Downloads ~1.3 GB from PyPI; without the network it says SKIPPED.
# Usage: cuda_wheel.sh SOURCE_DIR WORK_DIR PYTHON PLUGIN CPU_WHEEL_DIR
set -eu
src=$1 work=$2 python=$3 plugin=$4 cpu_wheels=$5
fail() { echo "FAIL: $*"; exit 1; }
for m in pip scikit_build_core auditwheel; do
  "$python" -c "import $m" 2>/dev/null || { echo "SKIPPED: $python lacks $m"; exit 77; }
done
command -v patchelf >/dev/null 2>&1 || { echo "SKIPPED: patchelf not found"; exit 77; }
[ -f "$plugin" ] || fail "no plugin at $plugin"
cpu=$(ls "$cpu_wheels"/mixp-*.whl 2>/dev/null | head -1) || true
[ -n "$cpu" ] || fail "no CPU wheel in $cpu_wheels (the python_wheel_manylinux test makes it)"
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)

# 0. The two distributions move together (the plugin must match libmixp's
# op table): same version, and mixp-cuda13 requires exactly that mixp.
"$python" - "$src" <<'PY' || fail "bindings/python-cuda/pyproject.toml does not follow mixp's version"
import sys, tomllib
root = sys.argv[1]
cpu = tomllib.load(open(f"{root}/bindings/python/pyproject.toml", "rb"))["project"]
gpu = tomllib.load(open(f"{root}/bindings/python-cuda/pyproject.toml", "rb"))["project"]
assert gpu["version"] == cpu["version"], (gpu["version"], cpu["version"])
assert f"mixp=={cpu['version']}" in gpu["dependencies"], gpu["dependencies"]
PY

# 1. The wheel, from the built plugin (offline: build tools installed).
"$python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir -w "$work/dist" \
  --config-settings=cmake.define.MIXP_CUDA_PLUGIN="$plugin" \
  --config-settings=build-dir="$work/build" "$src/bindings/python-cuda" >"$work/wheel.log" 2>&1 ||
  { tail -40 "$work/wheel.log"; fail "pip wheel failed"; }
whl=$(ls "$work"/dist/mixp_cuda13-*.whl) || fail "no wheel in $work/dist"
echo "built $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"

# 2. What it holds and links.
"$python" - "$whl" "$work/unpacked" <<'PY' || fail "unexpected wheel contents"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
files = sorted(n for n in names if ".dist-info/" not in n)
assert files == ["mixp_cuda13/__init__.py", "mixp_cuda13/libmixp_cuda.so"], files
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
so="$work/unpacked/mixp_cuda13/libmixp_cuda.so"
runpath=$(readelf -d "$so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$runpath" = '$ORIGIN/../nvidia/cu13/lib:$ORIGIN/../nvidia/cudnn/lib:$ORIGIN/../nvidia/nccl/lib' ] ||
  fail "RUNPATH is '$runpath'"
readelf -d "$so" | grep -q '(RPATH)' && fail "the plugin has a DT_RPATH"
for lib in $(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  case $lib in
    libcublasLt.so.13|libcublas.so.13|libcudnn.so.9|libnvrtc.so.13) ;;
    libstdc++.so.6|libgcc_s.so.1|libc.so.6|libm.so.6|ld-linux-x86-64.so.2|libdl.so.2|libpthread.so.0|librt.so.1) ;;
    *) fail "the plugin links $lib, which neither NVIDIA's wheels nor manylinux provide" ;;
  esac
done
echo "links: $(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
echo "RUNPATH: $runpath"

# 3. auditwheel: NVIDIA's libraries stay in their wheels, nothing vendored.
"$python" -m auditwheel repair --exclude libcublas.so.13 --exclude libcublasLt.so.13 \
  --exclude libcudnn.so.9 --exclude libnvrtc.so.13 -w "$work/repaired" "$whl" >"$work/repair.log" 2>&1 ||
  { cat "$work/repair.log"; fail "auditwheel repair failed"; }
fixed=$(ls "$work"/repaired/mixp_cuda13-*.whl) || fail "no repaired wheel"
case $(basename "$fixed") in *manylinux*) ;; *) fail "repaired wheel has no manylinux tag: $fixed" ;; esac
"$python" -c "import sys, zipfile; n = zipfile.ZipFile(sys.argv[1]).namelist(); \
v = [x for x in n if '.libs/' in x]; assert not v, v" "$fixed" || fail "auditwheel vendored libraries"
echo "repaired: $(basename "$fixed")"

# 4. A fresh environment: the CPU wheel offline, then this wheel with its
# dependencies (NVIDIA's wheels) from PyPI.
"$python" -m venv --system-site-packages "$work/venv"
vpy="$work/venv/bin/python"
"$vpy" -m pip install --no-deps --no-index -q "$cpu" || fail "pip install of the CPU wheel failed"
if ! "$vpy" -m pip install -q --no-cache-dir "$fixed" >"$work/install.log" 2>&1; then
  if grep -q -i -E 'network|connection|resolve|temporary failure|No matching distribution' "$work/install.log"; then
    tail -5 "$work/install.log"; echo "SKIPPED: NVIDIA's wheels could not be downloaded from PyPI"; exit 77
  fi
  tail -30 "$work/install.log"; fail "pip install of the CUDA wheel with its dependencies failed"
fi
cd "$work"
env -u LD_LIBRARY_PATH -u MIXP_BACKEND_PATH "$vpy" - "$work/venv" <<'PY' || fail "the installed wheels do not work together"
import os, subprocess, sys
venv = sys.argv[1]
import mixp, mixp_cuda13
assert mixp.__file__.startswith(venv) and mixp_cuda13.__file__.startswith(venv)
info = mixp.build_info()
assert "cuda plugin: " + mixp_cuda13.plugin_path() in info, info
ldd = subprocess.run(["ldd", mixp_cuda13.plugin_path()], capture_output=True, text=True).stdout
needed = subprocess.run(["readelf", "-d", mixp_cuda13.plugin_path()], capture_output=True, text=True).stdout
for lib in ("libcublasLt.so.13", "libcublas.so.13", "libcudnn.so.9", "libnvrtc.so.13"):
    if lib not in needed:
        continue  # libnvrtc only when built with the cuDNN frontend
    line = next(l for l in ldd.splitlines() if lib in l)
    assert "=> " + venv in line and "/usr/local/cuda" not in line, line
found = sorted({os.path.dirname(os.path.realpath(l.split("=>")[1].split()[0]))
                for l in ldd.splitlines() if "=> " + venv in l})
print("resolved in the venv:", ", ".join(os.path.relpath(d, venv) for d in found))
try:
    s = mixp.Session(device="cuda")
except mixp.DeviceError as e:
    msg = str(e)
    # No GPU here: the driver is what is missing, not a library of the plugin
    # (that would be the loader's "exists but cannot be loaded").
    assert "no GPU" in msg and "exists but cannot be loaded" not in msg, msg
    print("cuda session without a GPU:", msg)
    sys.exit(0)
note = s.device_note
assert os.path.realpath(venv) in note and "cuDNN from" in note, note  # real paths
import numpy as np
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 16)).astype(np.float32)
y = (x[:, 0] > 0).astype(np.int64)
model = mixp.nn.Sequential(mixp.nn.Linear(16, 32, session=s), mixp.relu,
                           mixp.nn.Linear(32, 2, session=s))
opt = mixp.optim.AdamW(model.parameters(), lr=1e-2)
xs, ys = mixp.tensor(x, session=s), mixp.tensor(y, session=s)
losses = []
for _ in range(40):
    loss = mixp.cross_entropy(model(xs), ys)
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
assert losses[-1] < 0.5 * losses[0], losses
print(f"trained on {note.split(';')[0]}: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
PY
rm -rf "$work/venv"  # ~2.5 GB of NVIDIA libraries
echo "ok: mixp + mixp-cuda13 from wheels, NVIDIA's libraries from their wheels"
