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
#   6. PyTorch's profile of the same two steps (bench/torch/gpu_workloads.py
#      --profile: its top 25 kernels by device time) in torch-profile.txt
#   7. resnet50 O2 with MIXP_BATCH_NORM=native (what cuDNN's batch norm buys)
#   8. gpt2 O2 with MIXP_CUBLASLT_AUTOTUNE=1 (timed GEMM algorithms)
#   9. resnet18 and mobilenet_v3_large O2 beside PyTorch, until the budget ends
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

# torch_profile MODEL SPEC ITEM BATCH ARGS...: PyTorch's eager AMP step of
# the twin, profiled once after 3 timed steps, at most 50 s.
torch_profile() {
  local l
  l=$(left)
  [ "$l" -gt 60 ] || { echo "gpu-window: skipped ($l s left): torch profile $1"; return 0; }
  timeout $(( l - 10 < 50 ? l - 10 : 50 )) "${PY:-python3}" bench/torch/gpu_workloads.py --model "$1" \
    --spec "$2" --item "$3" --batch "$4" --rows amp --warmup 3 --steps 3 --compile-timeout 0 --profile 25 \
    "${@:5}" >> "$OUT_DIR/torch-profile.txt" 2>> "$OUT_DIR/torch-profile.err" || echo "gpu-window: torch profile $1 failed"
}

PHASE=build,test TEST_TIMEOUT=${TEST_TIMEOUT:-100} timeout $(( $(left) - 60 )) tools/gpu-check.sh "$OUT_DIR"
echo "gpu-window: $(left) s left after build and tests"
[ -f "${BUILD_DIR:-build-gpu}/.gpu-check-built" ] || exit 1
models 60 110 --workload gpt2 --mode o2 --step-seconds 1 --compile-timeout 45
MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 models 50 90 --workload resnet50 --mode o2 --step-seconds 1
[ "$(left)" -gt 30 ] && PHASE=wheel timeout 25 tools/gpu-check.sh "$OUT_DIR"
profile --workload resnet50 --mode o2 --channels-last 1
profile --workload gpt2 --mode o2
torch_profile resnet50 "resnet50 classes=1000" 3x224x224 256 --amp-dtype f16 --channels-last 1
torch_profile gpt2 "gpt n_layer=12 n_head=12 n_embd=768 vocab=50257 block_size=1024" 1024 8 --amp-dtype bf16
MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 MIXP_BATCH_NORM=native models 35 30 --workload resnet50 --mode o2 \
  --step-seconds 1 --no-torch
MIXP_CUBLASLT_AUTOTUNE=1 models 35 40 --workload gpt2 --mode o2 --step-seconds 1 --no-torch
MIXP_CUDNN_BENCHMARK=1 MIXP_CUDNN_DETERMINISTIC=0 models 50 600 --workload resnet18 --workload mobilenet_v3_large \
  --mode o2 --step-seconds 1
echo "gpu-window: done, $(left) s of the budget left"
