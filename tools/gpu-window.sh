#!/usr/bin/env bash
# One lent GPU window in one command: tools/gpu-check.sh's phases in order of
# priority, each given what is left of a total budget, so that whatever the
# machine's speed the most important results come back first and the
# command ends inside the device tool's 10-minute limit. Everything goes to
# one report (OUT_DIR/gpu-report.md) and one log archive, rewritten as each
# step ends.
#
#   tools/gpu-window.sh [OUT_DIR]          (default: $OUT)
#
# Steps (skipped when less than their minimum is left):
#   1. build, test        the CUDA suites (TEST_TIMEOUT 100 s a suite)
#   2. gpt2 O2 beside PyTorch (eager; torch.compile given 45 s)
#   3. resnet50 O2 beside PyTorch, cudnn.benchmark on both sides
#   4. wheel              the mixp-cuda13 wheel on PyTorch's NVIDIA libraries
#   5. profile            one O2 step of resnet50 (channels_last) and of gpt2:
#                         mixp_profile_report's top 20 ops by device time
#   6. resnet50 O2 with MIXP_BATCH_NORM=native (what cuDNN's batch norm buys)
#   7. gpt2 O2 with MIXP_CUBLASLT_AUTOTUNE=1 (timed GEMM algorithms)
#   8. resnet18 and mobilenet_v3_large O2 beside PyTorch, until the budget ends
# Environment: WINDOW_SECONDS (default 575) is the whole budget; the rest is
# tools/gpu-check.sh's (carry gpu-deps/, made by tools/gpu-deps.sh).
set -u
cd "$(dirname "$0")/.." || exit 2
OUT_DIR=${1:-${OUT:-$PWD/gpu-report}}
export PYTHONUNBUFFERED=1
T0=$(date +%s)
BUDGET=${WINDOW_SECONDS:-575}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
check() { tools/gpu-check.sh "$OUT_DIR"; }
# models MIN MAX ARGS...: the models phase with MODELS_ARGS, given at most
# MAX seconds and at least MIN left; the environment passes through.
models() {
  local min=$1 max=$2 l
  shift 2
  l=$(left)
  [ "$l" -gt "$min" ] || { echo "gpu-window: skipped ($l s left): $*"; return 0; }
  PHASE=models MODELS_ARGS="$*" MODELS_TIMEOUT=$(( l - 10 < max ? l - 10 : max )) check
}
# profile ARGS...: the profile phase's rows, at most 60 s.
profile() {
  local l
  l=$(left)
  [ "$l" -gt 40 ] || { echo "gpu-window: skipped ($l s left): profile $*"; return 0; }
  PHASE=profile PROFILE_ARGS="$*" PROFILE_TIMEOUT=$(( l - 10 < 60 ? l - 10 : 60 )) check
}

PHASE=build,test TEST_TIMEOUT=${TEST_TIMEOUT:-100} timeout $(( $(left) - 60 )) tools/gpu-check.sh "$OUT_DIR"
echo "gpu-window: $(left) s left after build and tests"
[ -f "${BUILD_DIR:-build-gpu}/.gpu-check-built" ] || exit 1
models 60 110 --workload gpt2 --mode o2 --step-seconds 1 --compile-timeout 45
MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 models 50 90 --workload resnet50 --mode o2 --step-seconds 1
[ "$(left)" -gt 30 ] && PHASE=wheel timeout 25 tools/gpu-check.sh "$OUT_DIR"
profile --workload resnet50 --mode o2 --channels-last 1
profile --workload gpt2 --mode o2
MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 MIXP_BATCH_NORM=native models 35 30 --workload resnet50 --mode o2 \
  --step-seconds 1 --no-torch
MIXP_CUBLASLT_AUTOTUNE=1 models 35 40 --workload gpt2 --mode o2 --step-seconds 1 --no-torch
MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 models 50 600 --workload resnet18 --workload mobilenet_v3_large \
  --mode o2 --step-seconds 1
echo "gpu-window: done, $(left) s of the budget left"
