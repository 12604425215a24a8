#!/usr/bin/env bash
# The GPU run, in phases that each fit one command on a lent GPU machine
# (10 minutes a command, the machine and its build gone when idle, at most
# 8 files brought back): build mixp with the CUDA backend, run the suites
# labelled cuda, run the GPU benchmarks beside PyTorch, time whole models
# beside their PyTorch twins, profile one step of each model.
#
#   PHASE=build,test tools/gpu-check.sh [OUT_DIR]     (default OUT_DIR: $OUT, else ./gpu-report)
#   PHASE=bench      tools/gpu-check.sh [OUT_DIR]
#   PHASE=models     tools/gpu-check.sh [OUT_DIR]
#   PHASE=profile    tools/gpu-check.sh [OUT_DIR]
#   PHASE=fused      tools/gpu-check.sh [OUT_DIR]     (issue 40: ~5 min)
#   PHASE=wheel      tools/gpu-check.sh [OUT_DIR]     (the mixp-cuda13 wheel on PyTorch's NVIDIA libraries)
#   PHASE=conv       tools/gpu-check.sh [OUT_DIR]
#
# OUT_DIR receives its files rewritten after every step so that a phase
# killed half-way leaves what it did: gpu-report.md (environment, then one
# section per phase, appended as each part ends), gpu-logs.tar.gz (every
# log) and, after the profile phase, gpu-traces.tar.gz (the Chrome traces).
# The logs themselves stay in $BUILD_DIR/gpu-check-logs.
#
# Environment:
#   PHASE            build | test | bench | models | profile | fused | conv |
#                    wheel | all (= build to fused, in that order); a comma
#                    list runs several in order. fused measures issue 40
#                    only: the cuDNN attention suites, the 8192x768x768 GEMM (heuristic vs
#                    MIXP_CUBLASLT_AUTOTUNE=1, and the kernels each side
#                    runs), GPT-2 O2 bf16 with fused vs composed attention
#                    beside PyTorch (eager AMP + SDPA + fused AdamW,
#                    torch.compile, peak memory).
#                    conv measures the conv nets under each
#                    convolution-algorithm mode (issue 35; not in all).
#                    wheel checks the mixp-cuda13 wheel (issue 38; not in all).
#                    The phases after build build first when the build is
#                    missing (a fresh machine).
#   MIXP_DEPS_PREFIX where oneDNN, CMocka and zlib headers/libraries were
#                    unpacked (tools/gpu-deps.sh --unpack); searched before
#                    the system, and put on LD_LIBRARY_PATH (libdnnl.so.2
#                    needs libOpenCL.so.1 from there).
#   MIXP_DEPS_DEBS   a folder of tools/gpu-deps.sh packages, unpacked into
#                    MIXP_DEPS_PREFIX (default /tmp/mixp-deps) first. Default:
#                    ./gpu-deps when it holds packages and the system has no
#                    oneDNN headers.
#   MIXP_CUDNN_ROOT  cuDNN 9 (include/, lib/); default: the toolkit's when it
#                    has cudnn.h, else PyTorch's wheel (python's nvidia.cudnn).
#   CUDA_ARCHS       default: the GPU's own (90-real on an H100), else 90-real.
#   CMAKE_ARGS       passed to cmake's configure step (word-split).
#   BUILD_DIR        default build-gpu.  JOBS: default nproc.
#   BUILD_TARGETS    default: everything; e.g. "mixp mixp_cuda test_cuda_parity".
#   PLUGIN_TARGET    what the build makes first, so that CUDA errors come
#                    early (default mixp_cuda; one object such as
#                    kernels/CMakeFiles/mixp_cuda.dir/runtime.cu.o checks the
#                    CUDA flags without the whole plugin, as CI's
#                    tests/gpu/check_deps_prefix_build.sh does).
#   CPU_TESTS=1      also run the CPU tests (CI runs them; skipped by default).
#   TEST_JOBS        suites run at once on the GPU (default 4); TEST_TIMEOUT
#                    seconds a suite may run (default 240).
#   BENCH_ARGS       extra mixp-bench arguments (e.g. --quick); BENCH_TIMEOUT
#                    seconds the benchmarks may run (default 540).
#   MODELS_ARGS      extra arguments of the models phase (e.g. "--workload gpt2"
#                    to run that model alone, "--compile-timeout 0"); default:
#                    every model. MODELS_TIMEOUT: seconds it may run (default 540).
#   PROFILE_ARGS     the profile phase's row selection (default "--mode o1
#                    --mode o2": every model's mixed-precision rows; a
#                    --workload narrows it); PROFILE_TIMEOUT seconds it may
#                    run (default 300).
#   CONV_ARGS        the conv phase's rows (default "--workload resnet50
#                    --workload mobilenet_v3_large --workload resnet18");
#                    CONV_TIMEOUT seconds its first run (beside PyTorch) may
#                    run (default 300), each of the two others half of it.
#   PYTHON           an interpreter with a CUDA-enabled torch 2.x for the
#                    benchmarks' references (default: the first python3 that has one).
# Exit status: 0 when every phase run succeeded (benchmark numbers are
# measured, never judged), 1 otherwise.
set -u
cd "$(dirname "$0")/.."
SRC=$(pwd)
OUT_DIR=${1:-${OUT:-$SRC/gpu-report}}
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
PHASES=${PHASE:-all}
[ "$PHASES" = all ] && PHASES=build,test,bench,models,profile,fused
mkdir -p "$OUT_DIR" "$BUILD_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
REPORT=$OUT_DIR/gpu-report.md
LOG=$BUILD_DIR/gpu-check-logs
mkdir -p "$LOG"
status=0

say() { printf '%s\n' "$*" | tee -a "$LOG/gpu-check.log"; }
report() { printf '%s\n' "$*" >> "$REPORT"; }
# Everything gathered so far goes back now, not at the end.
pack_logs() { tar -czf "$OUT_DIR/gpu-logs.tar.gz.tmp" -C "$BUILD_DIR" gpu-check-logs 2>/dev/null &&
  mv "$OUT_DIR/gpu-logs.tar.gz.tmp" "$OUT_DIR/gpu-logs.tar.gz"; }
secs_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}'; }

for p in ${PHASES//,/ }; do
  case $p in build|test|bench|models|profile|fused|conv|wheel) ;;
    *) echo "gpu-check.sh: unknown PHASE '$p' (build, test, bench, models, profile, fused, conv, wheel or all)" >&2; exit 2 ;; esac
done

# ---- dependencies: an unpacked prefix, cuDNN, the compiler ----------------------------
have_system_header() {
  for d in /usr/include /usr/local/include /usr/include/x86_64-linux-gnu; do
    [ -f "$d/$1" ] && return 0
  done
  return 1
}
if [ -z "${MIXP_DEPS_DEBS:-}" ] && [ -z "${MIXP_DEPS_PREFIX:-}" ] && ! have_system_header dnnl.hpp &&
    compgen -G "$SRC/gpu-deps/*.deb" >/dev/null; then
  MIXP_DEPS_DEBS=$SRC/gpu-deps
fi
if [ -n "${MIXP_DEPS_DEBS:-}" ]; then
  MIXP_DEPS_PREFIX=${MIXP_DEPS_PREFIX:-/tmp/mixp-deps}
  if [ ! -f "$MIXP_DEPS_PREFIX/.unpacked" ]; then
    bash "$SRC/tools/gpu-deps.sh" --unpack "$MIXP_DEPS_DEBS" "$MIXP_DEPS_PREFIX" > "$LOG/deps.txt" 2>&1 &&
      touch "$MIXP_DEPS_PREFIX/.unpacked" || { cat "$LOG/deps.txt"; status=1; }
  fi
fi
DEPS_ARGS=()
if [ -n "${MIXP_DEPS_PREFIX:-}" ]; then
  MIXP_DEPS_PREFIX=$(cd "$MIXP_DEPS_PREFIX" && pwd)
  DEPS_LIB=$MIXP_DEPS_PREFIX/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$DEPS_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  DEPS_ARGS+=(-DCMAKE_PREFIX_PATH="$MIXP_DEPS_PREFIX/usr" -DZLIB_INCLUDE_DIR="$MIXP_DEPS_PREFIX/usr/include")
  # The cuDNN frontend headers (fused attention), unpacked from their wheel.
  [ -f "$MIXP_DEPS_PREFIX/cudnn_frontend/include/cudnn_frontend.h" ] &&
    DEPS_ARGS+=(-DMIXP_CUDNN_FRONTEND_INCLUDE_DIR="$MIXP_DEPS_PREFIX/cudnn_frontend/include")
  # zlib1g-dev's libz.so points at Debian's absolute /lib path: link the
  # machine's own runtime instead (same ABI, soname libz.so.1).
  for z in /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 /lib64/libz.so.1 /usr/lib64/libz.so.1; do
    [ -e "$z" ] && { DEPS_ARGS+=(-DZLIB_LIBRARY="$z"); break; }
  done
fi

PY=""
if [ -n "${PYTHON:-}" ]; then PY=$PYTHON; else
  for p in python3 /usr/bin/python3 python; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
      PY=$p; break
    fi
  done
fi

NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME_DIR=$(cd "$(dirname "$NVCC")/.." 2>/dev/null && pwd)
if [ -z "${MIXP_CUDNN_ROOT:-}" ] && [ ! -f "$CUDA_HOME_DIR/include/cudnn.h" ] && ! have_system_header cudnn.h; then
  # PyTorch's wheel: site-packages/nvidia/cudnn/{include,lib}.
  for p in ${PY:-python3} python3; do
    r=$("$p" -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) if nvidia.cudnn.__file__ else list(nvidia.cudnn.__path__)[0])' 2>/dev/null) &&
      [ -n "$r" ] && { MIXP_CUDNN_ROOT=$r; break; }
  done
fi
if [ -n "${MIXP_CUDNN_ROOT:-}" ]; then
  export MIXP_CUDNN_ROOT
  # cuDNN 9 dlopens its engine libraries by name from its own folder.
  export LD_LIBRARY_PATH=$MIXP_CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# NCCL, which libmixp_cuda.so dlopens for the device collectives: the
# loader's (ldconfig, LD_LIBRARY_PATH), else the toolkit's, else PyTorch's
# wheel (site-packages/nvidia/nccl/lib); the folder of one of those last two
# goes on LD_LIBRARY_PATH, so the tests and benchmarks find it.
nccl_in() { for d in "$@"; do [ -e "$d/libnccl.so.2" ] && { echo "$d/libnccl.so.2"; return 0; }; done; return 1; }
NCCL_LIB=$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | awk '$1 == "libnccl.so.2" {print $NF; exit}')
# shellcheck disable=SC2086
[ -z "$NCCL_LIB" ] && NCCL_LIB=$(IFS=:; nccl_in ${LD_LIBRARY_PATH:-})
NCCL_FROM=""
if [ -z "$NCCL_LIB" ]; then
  NCCL_LIB=$(nccl_in "$CUDA_HOME_DIR/lib64" "$CUDA_HOME_DIR/lib" /usr/local/cuda/lib64) && NCCL_FROM="the CUDA toolkit"
  if [ -z "$NCCL_LIB" ]; then
    for p in ${PY:-python3} python3; do
      r=$("$p" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null) &&
        NCCL_LIB=$(nccl_in "$r/lib") && { NCCL_FROM="PyTorch's wheel ($p)"; break; }
    done
  fi
  [ -n "$NCCL_LIB" ] && export LD_LIBRARY_PATH=${NCCL_LIB%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

if [ -z "${CUDA_ARCHS:-}" ]; then
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  CUDA_ARCHS=${cc:+${cc}-real}
  CUDA_ARCHS=${CUDA_ARCHS:-90-real}
fi

GEN_ARGS=()
# shellcheck disable=SC2206
EXTRA_ARGS=(${CMAKE_ARGS:-})
case " ${CMAKE_ARGS:-} " in *" -G"*) ;; *)
  if ! command -v make >/dev/null 2>&1 || [ -f "$BUILD_DIR/build.ninja" ]; then GEN_ARGS=(-G Ninja); fi ;;
esac

# ---- environment, once per invocation -----------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  dirty=""
  git -C "$SRC" diff --quiet HEAD -- 2>/dev/null || dirty=" + uncommitted changes"
  echo "commit: $(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$dirty"
  echo "host: $(uname -n), $(nproc) cores; phases: $PHASES"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit,compute_cap --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: nvidia-smi not found"
  fi
  echo "nvcc: $("$NVCC" --version 2>/dev/null | tail -1 || echo missing)"
  echo "cmake: $(cmake --version | head -1); generator: ${GEN_ARGS[*]:-default}; CUDA archs: $CUDA_ARCHS"
  echo "deps prefix: ${MIXP_DEPS_PREFIX:-none (system headers)}"
  echo "cuDNN: ${MIXP_CUDNN_ROOT:-from the CUDA toolkit}"
  if [ -n "$NCCL_LIB" ]; then
    echo "NCCL: $(readlink -f "$NCCL_LIB")${NCCL_FROM:+ (from $NCCL_FROM, put on LD_LIBRARY_PATH)}"
  else
    echo "NCCL: libnccl.so.2 not found (device collectives fail with MIXP_ERR_DEVICE)"
  fi
  if [ -n "$PY" ]; then
    echo "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
    echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1)"
  else
    echo "torch: no python3 with a CUDA-enabled torch found (set PYTHON=...); references skipped"
  fi
} > "$LOG/env.txt" 2>&1
cat "$LOG/env.txt"
{ echo; echo "# mixp GPU check ($PHASES)"; echo; echo '```'; cat "$LOG/env.txt"; echo '```'; } >> "$REPORT"
pack_logs

# ---- phases -----------------------------------------------------------------------------
built() { [ -f "$BUILD_DIR/CMakeCache.txt" ] && [ -f "$BUILD_DIR/.gpu-check-built" ]; }

phase_build() {
  report ""; report "## Build (started $(date -u +%H:%M:%S))"; report ""
  local missing=()
  command -v cmake >/dev/null 2>&1 || missing+=("cmake (>= 3.22)")
  command -v c++ >/dev/null 2>&1 || missing+=("a C++20 compiler (g++ >= 12)")
  [ -x "$NVCC" ] || missing+=("nvcc (CUDA toolkit)")
  if [ ${#GEN_ARGS[@]} -gt 0 ] && ! command -v ninja >/dev/null 2>&1; then missing+=("make or ninja"); fi
  if [ ${#missing[@]} -gt 0 ]; then
    say "missing prerequisites: ${missing[*]}"; report "- missing prerequisites: ${missing[*]}"; return 1
  fi
  say "== configure ($BUILD_DIR)"
  local t0; t0=$(date +%s.%N)
  if ! cmake -S "$SRC" -B "$BUILD_DIR" "${GEN_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release -DMIXP_WITH_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS" "${DEPS_ARGS[@]}" "${EXTRA_ARGS[@]}" > "$LOG/configure.txt" 2>&1; then
    say "configure FAILED (see configure.txt)"; report "- configure FAILED:"; report '```'
    tail -25 "$LOG/configure.txt" >> "$REPORT"; report '```'; return 1
  fi
  report "- configure: $(secs_since "$t0") s ($(grep -E 'mixp: cuDNN' "$LOG/configure.txt" | sed 's/^-- //' | paste -sd';'))"
  pack_logs
  local plugin=${PLUGIN_TARGET:-mixp_cuda}
  say "== build: $plugin first, then ${BUILD_TARGETS:-everything} (-j$JOBS)"
  t0=$(date +%s.%N)
  if ! cmake --build "$BUILD_DIR" --target "$plugin" -j"$JOBS" > "$LOG/build-plugin.txt" 2>&1; then
    say "build of $plugin FAILED"; report "- $plugin FAILED:"; report '```'
    grep -E 'error|Error' "$LOG/build-plugin.txt" | head -30 >> "$REPORT"; report '```'; return 1
  fi
  report "- $plugin: $(secs_since "$t0") s"
  pack_logs
  t0=$(date +%s.%N)
  local targets=()
  # shellcheck disable=SC2206
  [ -n "${BUILD_TARGETS:-}" ] && targets=(--target ${BUILD_TARGETS})
  if ! cmake --build "$BUILD_DIR" "${targets[@]}" -j"$JOBS" > "$LOG/build.txt" 2>&1; then
    say "build FAILED"; report "- build FAILED:"; report '```'
    grep -E 'error|Error' "$LOG/build.txt" | head -30 >> "$REPORT"; report '```'; return 1
  fi
  report "- ${BUILD_TARGETS:-everything else}: $(secs_since "$t0") s; result: OK"
  # Only a full build lets the test and bench phases skip building.
  [ -z "${BUILD_TARGETS:-}" ] && touch "$BUILD_DIR/.gpu-check-built"
  return 0
}

phase_test() {
  report ""; report "## Tests (started $(date -u +%H:%M:%S))"; report ""
  local rc=0 t0
  if [ -n "${CPU_TESTS:-}" ]; then
    say "== ctest -LE cuda (CPU tests)"
    t0=$(date +%s.%N)
    ctest --test-dir "$BUILD_DIR" -LE cuda -j"$(( JOBS > 8 ? 8 : JOBS ))" --output-on-failure --timeout 300 \
      > "$LOG/ctest-cpu.txt" 2>&1 || rc=1
    report "- CPU tests (ctest -LE cuda, $(secs_since "$t0") s): $(grep -E 'tests passed|tests failed' "$LOG/ctest-cpu.txt" | tail -1)"
    pack_logs
  else
    report "- CPU tests: skipped (CI runs them; CPU_TESTS=1 to run them here)"
  fi
  say "== ctest -L cuda -j${TEST_JOBS:-4}"
  t0=$(date +%s.%N)
  # Several suites at once share the one GPU; each opens its own session.
  ctest --test-dir "$BUILD_DIR" -L cuda -j"${TEST_JOBS:-4}" --output-on-failure --timeout "${TEST_TIMEOUT:-240}" \
    > "$LOG/ctest-cuda.txt" 2>&1 || rc=1
  local summary skipped
  summary=$(grep -E 'tests passed|tests failed' "$LOG/ctest-cuda.txt" | tail -1)
  skipped=$(grep -c '\*\*\*Skipped' "$LOG/ctest-cuda.txt")
  report "- GPU tests (ctest -L cuda: cuda_<suite> with MIXP_TEST_DEVICE=cuda, test_cuda_*, mixp_bench_cuda_device; $(secs_since "$t0") s): ${summary:-no summary}; $skipped skipped"
  if [ "$skipped" -gt 0 ] && nvidia-smi -L >/dev/null 2>&1; then
    say "a GPU is present but $skipped CUDA test(s) skipped: the device was not usable"
    rc=1
  fi
  report ""; report "Skipped, failed or timed out (label cuda):"; report '```'
  grep -E "\*\*\*(Skipped|Failed)|Not Run|\(Failed\)|\(Timeout\)|Exception" "$LOG/ctest-cuda.txt" >> "$REPORT" || report "(none)"
  report '```'
  say "cuda: $summary; $skipped skipped"
  return $rc
}

phase_bench() {
  report ""; report "## Benchmarks (started $(date -u +%H:%M:%S); mixp-bench --device cuda; ratio > 1 = mixp faster)"; report ""
  # The kernel and small-step rows; the models have a phase of their own.
  local args=(--device cuda --workload gemm --workload adamw --workload mlp-launch --workload fmnist) rc=0 t0
  if [ -n "$PY" ]; then args+=(--python "$PY"); else args+=(--no-torch); fi
  # shellcheck disable=SC2206
  args+=(${BENCH_ARGS:-})
  say "== mixp-bench ${args[*]}"
  t0=$(date +%s.%N)
  timeout "${BENCH_TIMEOUT:-540}" "$BUILD_DIR/tools/mixp-bench" "${args[@]}" > "$LOG/bench.txt" 2> "$LOG/bench-stderr.txt" || rc=$?
  report '```'; cat "$LOG/bench.txt" >> "$REPORT"
  [ -s "$LOG/bench-stderr.txt" ] && { report "--- stderr:"; tail -20 "$LOG/bench-stderr.txt" >> "$REPORT"; }
  report '```'
  report "- $(secs_since "$t0") s; exit status $rc"
  [ $rc -eq 0 ] || say "mixp-bench exited with $rc (see bench-stderr.txt)"
  return $rc
}

phase_models() {
  report ""; report "## Whole models (started $(date -u +%H:%M:%S); mixp-bench --device cuda --workload models)"; report ""
  local args=(--device cuda) rc=0 t0
  # Every model, unless MODELS_ARGS names some.
  case " ${MODELS_ARGS:-} " in *" --workload "*|*" --only "*) ;; *) args+=(--workload models) ;; esac
  if [ -n "$PY" ]; then args+=(--python "$PY"); else args+=(--no-torch); fi
  # shellcheck disable=SC2206
  args+=(${MODELS_ARGS:-})
  say "== mixp-bench ${args[*]}"
  t0=$(date +%s.%N)
  timeout "${MODELS_TIMEOUT:-540}" "$BUILD_DIR/tools/mixp-bench" "${args[@]}" > "$LOG/models.txt" 2> "$LOG/models-stderr.txt" || rc=$?
  # The tables are markdown: the header lines go in a block, the rest as printed.
  report '```'; sed -n '1,/^## Whole models/p' "$LOG/models.txt" | grep -v '^## Whole models' >> "$REPORT"; report '```'
  sed '1,/^## Whole models/d' "$LOG/models.txt" >> "$REPORT"
  [ -s "$LOG/models-stderr.txt" ] && { report ""; report "stderr (last 30 lines):"; report '```'; tail -30 "$LOG/models-stderr.txt" >> "$REPORT"; report '```'; }
  report ""; report "- $(secs_since "$t0") s; exit status $rc$([ $rc -eq 124 ] && echo " (killed at MODELS_TIMEOUT=${MODELS_TIMEOUT:-540} s)")"
  [ $rc -eq 0 ] || say "mixp-bench (models) exited with $rc (see models.txt, models-stderr.txt)"
  return $rc
}

phase_profile() {
  report ""; report "## Profiles (started $(date -u +%H:%M:%S); one step of each model, mixp_profile_report top 20 by device time)"; report ""
  local dir=$LOG/profile rc=0 t0
  rm -rf "$dir"
  local args=(--device cuda --profile "$dir")
  case " ${PROFILE_ARGS:-} " in *" --workload "*|*" --only "*) ;; *) args+=(--workload models) ;; esac
  # shellcheck disable=SC2206
  args+=(${PROFILE_ARGS:---mode o1 --mode o2})
  say "== mixp-bench ${args[*]}"
  t0=$(date +%s.%N)
  timeout "${PROFILE_TIMEOUT:-300}" "$BUILD_DIR/tools/mixp-bench" "${args[@]}" > "$LOG/profile.txt" 2> "$LOG/profile-stderr.txt" || rc=$?
  sed '1,/^## Whole models/d' "$LOG/profile.txt" >> "$REPORT"
  [ -s "$LOG/profile-stderr.txt" ] && { report ""; report "stderr (last 30 lines):"; report '```'; tail -30 "$LOG/profile-stderr.txt" >> "$REPORT"; report '```'; }
  if compgen -G "$dir/*.trace.json" >/dev/null; then
    tar -czf "$OUT_DIR/gpu-traces.tar.gz.tmp" -C "$LOG" profile && mv "$OUT_DIR/gpu-traces.tar.gz.tmp" "$OUT_DIR/gpu-traces.tar.gz"
    local traces=("$dir"/*.trace.json)
    report ""; report "- traces (chrome://tracing, ui.perfetto.dev): gpu-traces.tar.gz, ${#traces[@]} files"
  fi
  report "- $(secs_since "$t0") s; exit status $rc"
  [ $rc -eq 0 ] || say "mixp-bench --profile exited with $rc (see profile.txt, profile-stderr.txt)"
  return $rc
}

# The mixp-cuda13 wheel that tools/gpu-deps.sh made (MIXP_DEPS_DEBS/wheels),
# unpacked beside the NVIDIA libraries of PyTorch's wheels (the same
# site-packages/nvidia/* its RUNPATH names), then the quick start trained on
# cuda through it, with no CUDA folder on LD_LIBRARY_PATH: the device note
# must name those files.
phase_wheel() {
  report ""; report "## The mixp-cuda13 wheel on PyTorch's NVIDIA libraries (started $(date -u +%H:%M:%S))"; report ""
  local whl site dir rc=0
  whl=$(ls "${MIXP_DEPS_DEBS:-$SRC/gpu-deps}"/wheels/mixp_cuda13-*.whl 2>/dev/null | head -1)
  [ -n "$whl" ] || { report "- no wheel carried (tools/gpu-deps.sh makes it from a built plugin)"; return 1; }
  site=$("${PY:-python3}" -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null) ||
    { report "- no site-packages/nvidia (PyTorch's NVIDIA wheels) found"; return 1; }
  dir=$site/mixp_cuda13
  rm -rf "$dir" && "${PY:-python3}" -m zipfile -e "$whl" "$site" || { report "- could not unpack $whl into $site"; return 1; }
  say "== mixp-train --device cuda through $dir/libmixp_cuda.so"
  env LD_LIBRARY_PATH="${DEPS_LIB:-}" MIXP_BACKEND_PATH="$dir/libmixp_cuda.so" \
    "$BUILD_DIR/tools/mixp-train" --device cuda --data synthetic --epochs 2 > "$LOG/wheel.txt" 2>&1 || rc=$?
  report '```'; head -c 4000 "$LOG/wheel.txt" >> "$REPORT"; report '```'
  # The note gives real paths (kernels/library_origins.cpp).
  grep -qF "cuDNN from $(readlink -f "$site")/nvidia/cudnn" "$LOG/wheel.txt" ||
    { say "the device note does not name PyTorch's cuDNN"; rc=1; }
  report "- $(basename "$whl") in $site: exit status $rc"
  return $rc
}

# The kernels PyTorch runs for the bf16 8192x768x768 product (torch.profiler).
TORCH_GEMM_KERNELS='import torch
from torch.profiler import profile, ProfilerActivity
a = torch.randn(8192, 768, device="cuda", dtype=torch.bfloat16)
b = torch.randn(768, 768, device="cuda", dtype=torch.bfloat16)
for _ in range(3): a @ b
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(10): a @ b
    torch.cuda.synchronize()
for e in p.key_averages():
    print("torch kernel:", e.key, "x", e.count)'

phase_fused() {
  report ""; report "## Issue 40: fused attention, GEMM autotuning (started $(date -u +%H:%M:%S))"; report ""
  local rc=0 t0 py=(--no-torch) bench=$BUILD_DIR/tools/mixp-bench
  [ -n "$PY" ] && py=(--python "$PY")
  say "== cuDNN attention and the CUDA suites it touches"
  ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 240 -j4 \
    -R '^(test_cuda_attention|cuda_test_flash_attention|test_cuda_parity_ops|cuda_test_norm|cuda_test_reduce|cuda_test_layers|cuda_test_matmul)$' \
    > "$LOG/fused-tests.txt" 2>&1 || rc=1
  report "- suites: $(grep -E 'tests passed|tests failed' "$LOG/fused-tests.txt" | tail -1)"
  report '```'; grep -E '^device:|kept [0-9]+ of|fused error|\*\*\*(Failed|Skipped)' "$LOG/fused-tests.txt" >> "$REPORT"; report '```'
  pack_logs
  say "== gemm: cuBLASLt's first heuristic answer, then MIXP_CUBLASLT_AUTOTUNE=1"
  t0=$(date +%s.%N)
  timeout 240 "$bench" --device cuda --workload gemm "${py[@]}" > "$LOG/fused-gemm.txt" 2>&1 || rc=1
  MIXP_CUBLASLT_AUTOTUNE=1 timeout 240 "$bench" --device cuda --workload gemm --no-torch \
    > "$LOG/fused-gemm-autotune.txt" 2>&1 || rc=1
  # Once more with cuBLASLt's trace log (slower: not timed) for the algorithms.
  CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE=$LOG/cublaslt-mixp.log timeout 240 "$bench" --device cuda \
    --workload gemm --no-torch > "$LOG/fused-gemm-logged.txt" 2>&1 || rc=1
  report "- gemm rows ($(secs_since "$t0") s; first heuristic answer, beside PyTorch, then autotuned):"; report '```'
  grep -E '8192x768x768|8192x768x2304|8192x3072x768' "$LOG/fused-gemm.txt" "$LOG/fused-gemm-autotune.txt" >> "$REPORT"
  report '```'; report "- cuBLASLt algorithms mixp ran (CUBLASLT_LOG_LEVEL=2, count algo):"; report '```'
  grep -oE 'algo=\[[^]]*\]' "$LOG/cublaslt-mixp.log" | sort | uniq -c | sort -rn | head -12 >> "$REPORT"
  report '```'
  if [ -n "$PY" ]; then
    CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE=$LOG/cublaslt-torch.log timeout 120 "$PY" -c "$TORCH_GEMM_KERNELS" \
      > "$LOG/fused-torch-kernels.txt" 2>&1 || rc=1
    report "- PyTorch, bf16 8192x768x768 (torch.profiler kernels; cuBLASLt algorithms):"; report '```'
    grep 'torch kernel:' "$LOG/fused-torch-kernels.txt" >> "$REPORT"
    grep -oE 'algo=\[[^]]*\]' "$LOG/cublaslt-torch.log" | sort | uniq -c | sort -rn | head -5 >> "$REPORT"
    report '```'
  fi
  if command -v nsys >/dev/null 2>&1; then
    nsys profile --force-overwrite true -o "$LOG/gemm-mixp" "$bench" --device cuda --workload gemm --no-torch \
      > "$LOG/nsys-gemm.txt" 2>&1 &&
      nsys stats -q --report cuda_gpu_kern_sum --format csv "$LOG/gemm-mixp.nsys-rep" > "$LOG/nsys-kernels.csv" 2>&1
    report "- mixp's GEMM kernels (nsys cuda_gpu_kern_sum, top 10):"; report '```'
    head -11 "$LOG/nsys-kernels.csv" >> "$REPORT"; report '```'
  else
    report "- nsys not found: mixp's kernel names only as cuBLASLt algorithms (above)"
  fi
  pack_logs
  local path args
  for path in auto composed; do
    say "== gpt2 O2 bf16, MIXP_ATTENTION=$path"
    args=(--device cuda --workload gpt2 --only o2-bf16)
    # PyTorch's rows (eager AMP + SDPA + fused AdamW, torch.compile) once.
    if [ "$path" = auto ]; then args+=("${py[@]}"); else args+=(--no-torch); fi
    t0=$(date +%s.%N)
    MIXP_ATTENTION=$path timeout 300 "$bench" "${args[@]}" > "$LOG/fused-gpt2-$path.txt" 2>&1 || rc=1
    report ""; report "### GPT-2 124M, MIXP_ATTENTION=$path ($(secs_since "$t0") s)"; report ""
    sed '1,/^## Whole models/d' "$LOG/fused-gpt2-$path.txt" >> "$REPORT"
    pack_logs
  done
  return $rc
}

# The conv nets under mixp's three convolution-algorithm modes (issue 35):
# cudnn.benchmark's (timed, any algorithm) beside the PyTorch twins, which
# run channels_last and cudnn.benchmark=True; then without PyTorch the
# default (heuristic, deterministic) and timed deterministic, O2 only: what
# determinism costs. Each table has NCHW and channels_last rows and peak memory.
conv_run() {  # conv_run NAME TIMEOUT ENV... -- ARGS...
  local name=$1 limit=$2 rc=0 t0 envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  say "== ${envs[*]} mixp-bench $*"
  report ""; report "### ${envs[*]}"; report ""
  t0=$(date +%s.%N)
  env "${envs[@]}" timeout "$limit" "$BUILD_DIR/tools/mixp-bench" "$@" > "$LOG/conv-$name.txt" 2> "$LOG/conv-$name-stderr.txt" || rc=$?
  report '```'; sed -n '1,/^## Whole models/p' "$LOG/conv-$name.txt" | grep -v '^## Whole models' >> "$REPORT"; report '```'
  sed '1,/^## Whole models/d' "$LOG/conv-$name.txt" >> "$REPORT"
  [ -s "$LOG/conv-$name-stderr.txt" ] && { report ""; report "stderr (last 30 lines):"; report '```'; tail -30 "$LOG/conv-$name-stderr.txt" >> "$REPORT"; report '```'; }
  report ""; report "- $(secs_since "$t0") s; exit status $rc$([ $rc -eq 124 ] && echo " (killed at $limit s)")"
  return $rc
}

phase_conv() {
  report ""; report "## Conv nets by convolution-algorithm mode (started $(date -u +%H:%M:%S))"; report ""
  local rows torch=(--no-torch) limit=${CONV_TIMEOUT:-300} rc=0
  # shellcheck disable=SC2206
  rows=(${CONV_ARGS:---workload resnet50 --workload mobilenet_v3_large --workload resnet18})
  [ -n "$PY" ] && torch=(--python "$PY")
  conv_run bench-any "$limit" MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 -- \
    --device cuda "${rows[@]}" --mode fp32 --mode o2 "${torch[@]}" || rc=1
  conv_run heuristic-det $((limit / 2)) MIXP_CUDNN_BENCHMARK=0 MIXP_CUDNN_DETERMINISTIC=1 -- \
    --device cuda "${rows[@]}" --mode o2 --no-torch || rc=1
  conv_run bench-det $((limit / 2)) MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=1 -- \
    --device cuda "${rows[@]}" --mode o2 --no-torch || rc=1
  return $rc
}

for p in ${PHASES//,/ }; do
  if [ "$p" != build ] && ! built; then
    say "== $p needs a build: building first"
    phase_build || { status=1; pack_logs; break; }
  fi
  "phase_$p" || status=1
  pack_logs
  [ "$p" = build ] && [ $status -ne 0 ] && break
done
report ""; report "Result: $([ $status -eq 0 ] && echo OK || echo FAILED) ($(date -u +%H:%M:%S)); logs: gpu-logs.tar.gz"
pack_logs
say "report: $REPORT"
exit $status
