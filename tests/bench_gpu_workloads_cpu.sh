#!/bin/sh
# The GPU benchmark's code on the CPU: mixp-bench --device cpu --quick runs
# every --device cuda workload (the kernel rows and the whole models) at tiny
# sizes through the same functions, so that a broken workload or PyTorch twin
# is caught here rather than in a lent GPU machine's minutes. Numbers are
# not judged, only that every row has them.
#
#   bench_gpu_workloads_cpu.sh MIXP_BENCH mixp    the mixp side of every row (no PyTorch), and
#                                                 --profile DIR (gpu-check.sh's profile phase)
#   bench_gpu_workloads_cpu.sh MIXP_BENCH twins   both sides; parameter counts equal. Exit 77
#                                                 (skipped) when no python imports torch:
#                                                 $MIXP_BENCH_PYTHON, else python3.
# MIXP_BENCH_COMPILE_TIMEOUT (default 3) is the seconds torch.compile gets: enough to
# start and stop its child process, not to compile (which takes minutes on 2 cores);
# its row must show numbers or say why it was skipped.
bench=$1
mode=$2
out=bench-gpu-$mode.txt
if [ "$mode" = twins ]; then
  py=${MIXP_BENCH_PYTHON:-python3}
  if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    echo "no python with torch ($py): the twins are not checked"
    exit 77
  fi
  "$bench" --device cpu --quick --python "$py" --compile-timeout "${MIXP_BENCH_COMPILE_TIMEOUT:-3}" >"$out" 2>"$out.err"
else
  "$bench" --device cpu --quick --no-torch >"$out" 2>"$out.err"
fi
rc=$?
cat "$out"
fail=0
if [ $rc -ne 0 ]; then
  echo "FAIL: mixp-bench exited with $rc"; cat "$out.err"; fail=1
fi
num='[0-9][0-9.]*'

# The kernel and small-step rows: "| name | value unit | torch | ratio".
for name in 'gemm bf16 256x256x256' 'unscale\+adamw [0-9]+ tensors' 'mlp-launch 4x1024 b64 f16' \
            'fmnist epoch O0' 'fmnist epoch O1' 'fmnist epoch O2'; do
  if [ "$mode" = twins ]; then pat="^${name}[^|]*\| $num [a-zA-Z/]+[^|]*\| $num [a-zA-Z/]+"; else pat="^${name}[^|]*\| $num "; fi
  grep -qE "$pat" "$out" || { echo "FAIL: no row '$name' with numbers"; fail=1; }
done

# One model table: from its heading to the next.
section() { awk -v h="### $1, batch $2:" 'index($0, h) == 1 { on = 1; print; next } on && /^##/ { exit } on' "$out"; }

# expect MODEL BATCH SIDE WHAT LAYOUT [NOTE]: a row with samples/s, ms/step and
# steps, or (with NOTE) one whose note begins with NOTE.
expect() {
  sec=$(section "$1" "$2")
  printf '%s\n' "$sec" | grep -qE "^\| $3 \| $4 \| $5 \| $num \| $num \| [0-9]+ \|" && return 0
  if [ -n "${6:-}" ] && printf '%s\n' "$sec" | grep -E "^\| $3 \| $4 \| $5 \|" | grep -qE "\| $6[^|]*\|\$"; then
    return 0
  fi
  echo "FAIL: $1 batch $2: no $3 row '$4' ($5) with numbers${6:+ or the note '$6'}"; fail=1
}

# expect_params MODEL BATCH COUNT: mixp's count (the twins' when run, and equal).
expect_params() {
  sec=$(section "$1" "$2")
  [ -n "$sec" ] || { echo "FAIL: no table '### $1, batch $2:'"; fail=1; return; }
  if [ "$mode" = twins ]; then
    printf '%s\n' "$sec" | grep -qF "Parameters: mixp $3, PyTorch twin $3 (equal)" ||
      { echo "FAIL: $1 batch $2: parameter counts not both $3 and equal"; fail=1; }
  else
    printf '%s\n' "$sec" | grep -qF "Parameters: mixp $3." ||
      { echo "FAIL: $1 batch $2: mixp's parameter count is not $3 (the twin's, bench/torch/twins.py)"; fail=1; }
  fi
}

fp32='fp32 \(O0\)'
o1b='O1 bf16'
o2b='O2 bf16'
o1h='O1 f16 \+ GradScaler'
o2h='O2 f16 \+ GradScaler'
expect_params gpt2 2 136,960
expect_params gpt2 4 136,960
expect_params resnet50 2 376,722
expect_params mobilenet_v3_large 2 299,210
expect_params resnet18 4 177,362
for w in "$fp32" "$o1b" "$o2b"; do expect gpt2 2 mixp "$w" -; done
for w in "$o1b" "$o2b"; do expect gpt2 4 mixp "$w" -; done
for l in NCHW channels_last; do
  for w in "$fp32" "$o1h" "$o2h"; do
    expect resnet50 2 mixp "$w" $l
    expect mobilenet_v3_large 2 mixp "$w" $l
    expect resnet18 4 mixp "$w" $l
  done
done

if [ "$mode" = twins ]; then
  # Torch 1.13 cannot autocast the CPU to f16: its rows run bf16 and say so.
  amp='b?f16 autocast( \+ GradScaler)? \(eager\)'
  expect gpt2 2 torch 'fp32 \(eager\)' -
  expect gpt2 2 torch 'bf16 autocast \(eager\)' -
  expect gpt2 2 torch 'bf16 autocast \(torch.compile[^|]*' - 'skipped: '
  expect gpt2 4 torch 'bf16 autocast \(eager\)' -
  for m in resnet50 mobilenet_v3_large resnet18; do
    b=2; [ $m = resnet18 ] && b=4
    for l in NCHW channels_last; do
      expect $m $b torch 'fp32 \(eager\)' $l
      expect $m $b torch "$amp" $l
    done
  done
fi

if [ "$mode" = mixp ]; then
  # One profiled step per row: a top-20 table and a Chrome trace that parses.
  rm -rf bench-gpu-profile
  "$bench" --device cpu --quick --no-torch --workload gpt2 --workload resnet50 --mode o2 --profile bench-gpu-profile \
    >bench-gpu-profile.txt 2>&1 || { echo "FAIL: mixp-bench --profile exited with $?"; cat bench-gpu-profile.txt; fail=1; }
  for t in gpt2-b2-o2-bf16 resnet50-b2-o2-f16-nchw resnet50-b2-o2-f16-cl; do
    grep -q "^profile of one .*; trace bench-gpu-profile/$t.trace.json\$" bench-gpu-profile.txt ||
      { echo "FAIL: no profile table for $t"; fail=1; }
    python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); assert t["traceEvents"]' \
      "bench-gpu-profile/$t.trace.json" || { echo "FAIL: bench-gpu-profile/$t.trace.json is not a trace"; fail=1; }
  done
  for op in linear conv2d; do
    grep -q "^$op  *backward " bench-gpu-profile.txt ||
      { echo "FAIL: the profiles have no '$op backward' row"; cat bench-gpu-profile.txt; fail=1; }
  done
fi

if [ "$mode" = mixp ]; then
  # Flags the GPU window must not find wrong: each a usage error (exit 2).
  for args in '--mode o3' '--channels-last 2' '--steps 0' '--steps x' '--compile-timeout -1' \
              '--step-seconds 0' '--workload vgg' '--workload gemm --profile p'; do
    # shellcheck disable=SC2086
    "$bench" --device cpu --quick --no-torch $args >/dev/null 2>&1
    st=$?
    [ $st -eq 2 ] || { echo "FAIL: mixp-bench --device cpu --quick $args: exit $st, expected 2"; fail=1; }
  done
fi

if grep -q 'FAILED' "$out"; then echo "FAIL: a row FAILED"; fail=1; fi
[ $fail -eq 0 ] && echo "all rows present"
exit $fail
