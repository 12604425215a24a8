#!/bin/sh
# pip install ./bindings/python (offline: --no-build-isolation --no-deps)
# against the mixp of this build tree, installed into a scratch prefix; then
# imports the installed package from a fresh interpreter and uses it.
# Usage: pip_install.sh BUILD_DIR SOURCE_DIR PYTHON
set -eu
build=$1 src=$2 python=$3
if ! "$python" -c "import scikit_build_core, pip, numpy" 2>/dev/null; then
  echo "SKIPPED: pip, numpy or scikit-build-core missing for $python (pip install scikit-build-core)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
if ! CMAKE_PREFIX_PATH="$work/prefix" "$python" -m pip install --no-build-isolation --no-deps \
      --no-cache-dir --target "$work/site" "$src/bindings/python" >"$work/pip.log" 2>&1; then
  cat "$work/pip.log"
  exit 1
fi
cd "$work"
PYTHONPATH="$work/site" "$python" - "$work/site" <<'PY'
import sys
import numpy as np
import mixp
assert mixp.__file__.startswith(sys.argv[1]), mixp.__file__
a = np.arange(6, dtype=np.float32).reshape(2, 3)
t = mixp.from_numpy(a, copy=False)
np.testing.assert_array_equal((t @ t.T).numpy(), a @ a.T)
try:
    t @ t
except mixp.ShapeError as e:
    assert str(e).startswith("mixp_matmul"), e
else:
    raise AssertionError("no ShapeError")
print("installed mixp", mixp.__version__, "from", mixp.__file__)
PY
