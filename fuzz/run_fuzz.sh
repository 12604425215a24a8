#!/bin/sh
# Builds the libFuzzer targets with clang++-14 and runs each for a bounded
# time on a copy of the seed corpus. Exits 77 (SKIPPED) when clang++-14 or
# libFuzzer (Debian: clang-14 libfuzzer-14-dev) is missing, 1 when a target
# finds a crash, leak, timeout or memory blow-up (its output says which, and
# the reproducer is left in BUILD_DIR).
#
#   fuzz/run_fuzz.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]
set -u
src=$(cd "$(dirname "$0")" && pwd)
build=$1
secs=$2
shift 2
targets=${*:-"safetensors idx"}

cxx=${MIXP_FUZZ_CXX:-$(command -v clang++-14 || true)}
if [ -z "$cxx" ]; then
  echo "SKIPPED: clang++-14 is not installed (apt-get install clang-14 libfuzzer-14-dev)"
  exit 77
fi
probe=$(mktemp -d)
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }\n' >"$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>/dev/null; then
  rm -rf "$probe"
  echo "SKIPPED: $cxx cannot link libFuzzer (apt-get install libfuzzer-14-dev)"
  exit 77
fi
rm -rf "$probe"

cmake -S "$src" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
cmake --build "$build" -j2 >/dev/null || { cmake --build "$build" -j1; exit 1; }

status=0
for t in $targets; do
  corpus="$build/corpus-$t"
  mkdir -p "$corpus"
  dict=""
  [ -f "$src/$t.dict" ] && dict="-dict=$src/$t.dict"
  log="$build/fuzz_$t.log"
  (cd "$build" && "./fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
     -print_final_stats=1 $dict "$corpus" "$src/corpus/$t") >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "fuzz_$t: FAILED (exit $rc); see $log"
    tail -n 40 "$log"
    status=1
  else
    echo "fuzz_$t: clean: $runs(s), $cov, corpus $(ls "$corpus" | wc -l) inputs"
  fi
done
exit $status
