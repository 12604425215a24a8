#!/bin/sh
# pip install ./bindings/python with no installed mixp builds libmixp from the
# source tree; where nvcc is found the CUDA plugin must be built with it and
# installed into the package beside libmixp (the loader looks there), so that
# device="cuda" works from the installed package. Configures the package's
# CMake project as scikit-build-core would and reads its install rules.
# Usage: bundled_cuda_plugin.sh SOURCE_DIR WORK_DIR PYTHON
set -eu
src=$1 work=$2 python=$3
rm -rf "$work"
if ! cmake -S "$src/bindings/python" -B "$work" -DCMAKE_DISABLE_FIND_PACKAGE_mixp=TRUE \
     -DPython3_EXECUTABLE="$python" >"$work.log" 2>&1; then
  cat "$work.log"; exit 1
fi
grep -q 'no installed mixp found; building libmixp' "$work.log" || { cat "$work.log"; echo "FAIL: not the bundled path"; exit 1; }
grep -q 'CUDA backend plugin (libmixp_cuda.so) ships in the package' "$work.log" ||
  { cat "$work.log"; echo "FAIL: the package would not carry the CUDA plugin"; exit 1; }
# The python component installs the plugin into the package folder.
awk '/CMAKE_INSTALL_COMPONENT STREQUAL "python"/ { p = 1 } p && /^endif/ { p = 0 } p' "$work/cmake_install.cmake" |
  grep -q '/mixp" TYPE MODULE FILES "[^"]*/libmixp_cuda.so"' ||
  { echo "FAIL: no install rule puts libmixp_cuda.so in the package"; exit 1; }
echo "ok: the bundled package builds and ships libmixp_cuda.so"
