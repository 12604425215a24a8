#!/usr/bin/env bash
# One command on a GPU machine: build mixp with the CUDA backend, run the
# whole test suite (CPU and MIXP_TEST_DEVICE=cuda), run the GPU benchmarks
# beside their PyTorch references, and write gpu-report.md.
#
#   tools/gpu-check.sh [OUT_DIR]        (default: $OUT, else ./gpu-report)
#
# Environment: BUILD_DIR (default build-gpu), JOBS (default nproc),
# CUDA_ARCHS (default: the build's own default, sm_80 + sm_90 + PTX),
# PYTHON (an interpreter with torch 2.x + CUDA; default: the first of
# python3, /usr/bin/python3 that has one), SKIP_BENCH=1, SKIP_TESTS=1.
# Exit status: 0 when the build, every test and the benchmark run succeeded
# (benchmark numbers are measured, never judged), 1 otherwise; the report is
# written either way.
set -u
cd "$(dirname "$0")/.."
SRC=$(pwd)
OUT_DIR=${1:-${OUT:-$SRC/gpu-report}}
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT_DIR"
REPORT=$OUT_DIR/gpu-report.md
LOG=$OUT_DIR/logs
mkdir -p "$LOG"
status=0

say() { printf '%s\n' "$*" | tee -a "$LOG/gpu-check.log"; }

pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  for p in python3 /usr/bin/python3 python; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
      echo "$p"; return
    fi
  done
  echo ""
}
PY=$(pick_python)

# ---- environment -----------------------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "host: $(uname -n), $(nproc) cores"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  echo "nvcc: $("$NVCC" --version 2>/dev/null | tail -1 || echo missing)"
  echo "cmake: $(cmake --version | head -1)"
  if [ -n "$PY" ]; then
    echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
    echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1)"
  else
    echo "torch: no python3 with a CUDA-enabled torch found (set PYTHON=...); references skipped"
  fi
} > "$LOG/env.txt" 2>&1
cat "$LOG/env.txt"

# ---- preflight: what the build needs ----------------------------------------------------
missing=()
command -v cmake >/dev/null 2>&1 || missing+=("cmake (>= 3.22)")
command -v c++ >/dev/null 2>&1 || missing+=("a C++20 compiler (g++ >= 12)")
{ command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; } || missing+=("nvcc (CUDA toolkit)")
have_header() {
  for d in /usr/include /usr/local/include /usr/local/cuda/include /usr/include/x86_64-linux-gnu; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}
have_header cmocka.h || missing+=("cmocka (libcmocka-dev)")
have_header dnnl.hpp || missing+=("oneDNN (libdnnl-dev)")
have_header zlib.h || missing+=("zlib (zlib1g-dev)")
have_header cudnn.h || missing+=("cuDNN 9 headers (cudnn.h)")
have_header cublasLt.h || missing+=("cuBLASLt headers (cublasLt.h)")
if [ ${#missing[@]} -gt 0 ]; then
  say "missing prerequisites: ${missing[*]}"
  status=1
fi

# ---- build -------------------------------------------------------------------------
ARCH_FLAG=()
[ -n "${CUDA_ARCHS:-}" ] && ARCH_FLAG=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS")
say "== configure ($BUILD_DIR)"
if [ $status -ne 0 ]; then
  say "configure skipped: prerequisites missing"
elif ! cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DMIXP_WITH_CUDA=ON "${ARCH_FLAG[@]}" \
    > "$LOG/configure.txt" 2>&1; then
  say "configure FAILED (see logs/configure.txt)"; status=1
fi
build_ok=0
plugin_s="n/a"; all_s="n/a"
if [ $status -eq 0 ]; then
  say "== build: libmixp_cuda.so, then everything (-j$JOBS)"
  t0=$(date +%s.%N)
  cmake --build "$BUILD_DIR" --target mixp_cuda -j"$JOBS" > "$LOG/build-plugin.txt" 2>&1 && plugin_ok=1 || plugin_ok=0
  t1=$(date +%s.%N)
  cmake --build "$BUILD_DIR" -j"$JOBS" > "$LOG/build.txt" 2>&1 && build_ok=$plugin_ok
  t2=$(date +%s.%N)
  plugin_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.0f", b-a}')
  all_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.0f", b-a}')
  [ $build_ok -eq 1 ] || { say "build FAILED (see logs/build*.txt)"; status=1; }
fi

# ---- tests -------------------------------------------------------------------------
tests_summary="not run"
cuda_summary="not run"
if [ $build_ok -eq 1 ] && [ -z "${SKIP_TESTS:-}" ]; then
  say "== ctest: the CPU tests, then (serially, one GPU) everything labelled cuda"
  ctest --test-dir "$BUILD_DIR" -LE cuda -j"$(( JOBS > 8 ? 8 : JOBS ))" --output-on-failure --timeout 1200 \
    > "$LOG/ctest-cpu.txt" 2>&1 || status=1
  tests_summary=$(grep -E "tests passed|tests failed" "$LOG/ctest-cpu.txt" | tail -1)
  ctest --test-dir "$BUILD_DIR" -L cuda --output-on-failure --timeout 1200 \
    > "$LOG/ctest-cuda.txt" 2>&1 || status=1
  cuda_summary=$(grep -E "tests passed|tests failed" "$LOG/ctest-cuda.txt" | tail -1)
  skipped=$(grep -c '\*\*\*Skipped' "$LOG/ctest-cuda.txt")
  cuda_summary="$cuda_summary; $skipped skipped"
  # With a GPU present a skipped CUDA suite means the device was not usable.
  if [ "$skipped" -gt 0 ] && nvidia-smi -L >/dev/null 2>&1; then
    say "a GPU is present but $skipped CUDA test(s) skipped: the device was not usable"
    status=1
  fi
  say "cpu: $tests_summary"
  say "cuda: $cuda_summary"
fi

# ---- benchmarks ----------------------------------------------------------------------
bench_rc="not run"
if [ $build_ok -eq 1 ] && [ -z "${SKIP_BENCH:-}" ]; then
  say "== mixp-bench --device cuda (beside PyTorch)"
  BENCH_ARGS=(--device cuda)
  if [ -n "$PY" ]; then BENCH_ARGS+=(--python "$PY"); else BENCH_ARGS+=(--no-torch); fi
  "$BUILD_DIR/tools/mixp-bench" "${BENCH_ARGS[@]}" > "$LOG/bench.txt" 2> "$LOG/bench-stderr.txt"
  bench_rc=$?
  if [ "$bench_rc" -ne 0 ]; then
    say "mixp-bench exited with $bench_rc (see logs/bench-stderr.txt)"
    status=1
  fi
fi

# ---- report ---------------------------------------------------------------------------
{
  echo "# mixp GPU check"
  echo
  echo '```'
  cat "$LOG/env.txt"
  echo '```'
  echo
  echo "## Build"
  echo
  [ ${#missing[@]} -gt 0 ] && echo "- missing prerequisites: ${missing[*]}"
  echo "- libmixp_cuda.so alone: ${plugin_s} s; the rest: ${all_s} s (-j$JOBS)"
  echo "- result: $([ $build_ok -eq 1 ] && echo OK || echo FAILED)"
  echo
  echo "## Tests"
  echo
  echo "- CPU tests (ctest -LE cuda): ${tests_summary}"
  echo "- GPU tests (ctest -L cuda: the cuda_<suite> copies with MIXP_TEST_DEVICE=cuda, test_cuda_*, mixp_bench_cuda_device): ${cuda_summary}"
  if [ -f "$LOG/ctest-cuda.txt" ]; then
    echo
    echo "Skipped or failed (label cuda):"
    echo
    echo '```'
    grep -E "\*\*\*(Skipped|Failed)|Not Run|\(Failed\)|\(Timeout\)" "$LOG/ctest-cuda.txt" || echo "(none)"
    echo '```'
  fi
  echo
  echo "## Benchmarks (mixp-bench --device cuda; ratio > 1 = mixp faster)"
  echo
  if [ -f "$LOG/bench.txt" ]; then
    echo '```'
    cat "$LOG/bench.txt"
    [ -s "$LOG/bench-stderr.txt" ] && { echo "--- stderr:"; tail -20 "$LOG/bench-stderr.txt"; }
    echo '```'
  else
    echo "not run"
  fi
  echo
  echo "Logs: logs/ beside this file."
} > "$REPORT"
say "report: $REPORT"
exit $status
