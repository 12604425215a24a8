#!/usr/bin/env bash
# tools/gpu-check.sh PHASE=build as on the bare GPU machine: oneDNN, CMocka
# and zlib come only from packages fetched by tools/gpu-deps.sh and unpacked
# into a prefix, and the objects that include their headers (oneDNN's:
# src/cpu/gemm.cpp, zlib's: src/data/idx.cpp, CMocka's: test_base.c) and one
# object of the CUDA plugin (its flags, cuDNN and cuBLASLt headers) are
# compiled for sm_90 with Ninja. Every object of a target shares its include
# paths, and the main build compiles and links everything: building all of
# libmixp and the plugin a second time here cost CI ~15 minutes of its two
# cores. Proves that
# the configure step finds every dependency in the prefix and that no object
# compiled a system copy of their headers (ninja's dependency log), so the
# build does not lean on this machine's /usr/include.
#
#   check_deps_prefix_build.sh SOURCE_DIR WORK_DIR
# Exit 77 (skipped) without nvcc, ninja or apt-get.
set -u
SRC=$1 WORK=$2
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
for need in "$NVCC" ninja apt-get; do
  command -v "$need" >/dev/null 2>&1 || { echo "skipped: $need not found"; exit 77; }
done
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$WORK/prefix" "$WORK/out"
mkdir -p "$WORK"
bash "$SRC/tools/gpu-deps.sh" "$WORK/debs" || fail "tools/gpu-deps.sh could not fetch the packages"
MIXP_DEPS_DEBS=$WORK/debs MIXP_DEPS_PREFIX=$WORK/prefix BUILD_DIR=$WORK/build CMAKE_ARGS="-G Ninja" \
  CUDA_ARCHS=90-real PLUGIN_TARGET=kernels/CMakeFiles/mixp_cuda.dir/runtime.cu.o \
  BUILD_TARGETS="CMakeFiles/mixp.dir/src/cpu/gemm.cpp.o CMakeFiles/mixp.dir/src/data/idx.cpp.o tests/CMakeFiles/test_base.dir/c/test_base.c.o" \
  PHASE=build JOBS=2 \
  bash "$SRC/tools/gpu-check.sh" "$WORK/out" || { cat "$WORK/out/gpu-report.md"; fail "gpu-check.sh PHASE=build failed"; }

grep -q '^Result: OK' "$WORK/out/gpu-report.md" || fail "the report does not say Result: OK"
[ -s "$WORK/out/gpu-logs.tar.gz" ] || fail "no gpu-logs.tar.gz"
n=$(ls "$WORK/out" | wc -l)
[ "$n" -eq 2 ] || fail "OUT holds $n files, want 2 (gpu-report.md, gpu-logs.tar.gz)"

cache=$WORK/build/CMakeCache.txt
for var in DNNL_INCLUDE_DIR DNNL_LIBRARY CMOCKA_INCLUDE_DIR CMOCKA_LIBRARY ZLIB_INCLUDE_DIR; do
  val=$(sed -n "s/^$var:[A-Z]*=//p" "$cache")
  case $val in "$WORK/prefix/"*) ;; *) fail "$var = '$val' is not in the deps prefix" ;; esac
done
fe=$(sed -n 's/^MIXP_CUDNN_FRONTEND_INCLUDE_DIR:[A-Z]*=//p' "$cache")
[ "$fe" = "$WORK/prefix/cudnn_frontend/include" ] || fail "MIXP_CUDNN_FRONTEND_INCLUDE_DIR = '$fe' is not the prefix's unpacked wheel"
zlib=$(sed -n 's/^ZLIB_LIBRARY[A-Z_]*:[A-Z]*=//p' "$cache" | head -1)
case $zlib in *libz.so.1) ;; *) fail "ZLIB_LIBRARY = '$zlib': want the machine's own libz.so.1" ;; esac

deps=$(ninja -C "$WORK/build" -t deps)
for h in dnnl.hpp cmocka.h zlib.h; do
  echo "$deps" | grep -q "^ *$WORK/prefix/usr/include/$h\$" || fail "no object compiled the prefix's $h"
done
if echo "$deps" | grep -E '^ */usr/(local/)?include/(dnnl|oneapi/dnnl|cmocka|zlib|zconf)'; then
  fail "objects above compiled the system's headers instead of the prefix's"
fi
for t in CMakeFiles/mixp.dir/src/cpu/gemm.cpp.o CMakeFiles/mixp.dir/src/data/idx.cpp.o \
         tests/CMakeFiles/test_base.dir/c/test_base.c.o kernels/CMakeFiles/mixp_cuda.dir/runtime.cu.o; do
  [ -e "$WORK/build/$t" ] || fail "$t was not built"
done
echo "ok: configured and built against $WORK/prefix only"
