#!/bin/sh
# Builds the libFuzzer targets with clang++-14 and runs each for a bounded
# time on a copy of the seed corpus. Exits 77 (SKIPPED) when clang++-14 or
# libFuzzer (Debian: clang-14 libfuzzer-14-dev) is missing, 1 when a target
# finds a crash, leak, timeout or memory blow-up (its output says which, and
# the reproducer is left in BUILD_DIR).
#
#   fuzz/run_fuzz.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]
#   (targets: safetensors idx api c-suites; default: safetensors idx;
#   c-suites runs the CMocka suites against the ASan+UBSan library that
#   fuzz_api links, without fuzzing)
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

cc=$(echo "$cxx" | sed 's/clang++/clang/')
cmake -S "$src" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
# Only the targets asked for: fuzz_api compiles the whole library, and
# c-suites (the CMocka suites against the same instrumented library) needs it
# too.
# The suites that load shared libraries are left out, as in CMakeLists.txt.
suites=$(cd "$src/../tests/c" && ls test_*.c | sed -e 's/\.c$//' \
  -e '/^test_\(abi_dlopen\|cuda_device\|plugin_table\|plugin_capabilities\)$/d')
set --
for t in $targets; do
  if [ "$t" = c-suites ]; then
    for s in $suites; do set -- "$@" --target "asan_$s"; done
  else
    set -- "$@" --target "fuzz_$t"
  fi
done
cmake --build "$build" -j"$(nproc)" "$@" >"$build/build.log" 2>&1 || { tail -n 60 "$build/build.log"; exit 1; }

status=0
for t in $targets; do
  if [ "$t" = c-suites ]; then
    ctest --test-dir "$build" -L c_suite -j"$(nproc)" --output-on-failure >"$build/c-suites.log" 2>&1
    rc=$?
    summary=$(grep -E "tests passed|Total Test time" "$build/c-suites.log" | tr '\n' ' ')
    if [ $rc -ne 0 ]; then
      echo "C suites under ASan+UBSan: FAILED; see $build/c-suites.log"
      grep -E "Failed|\*\*\*|ERROR|runtime error|SUMMARY" "$build/c-suites.log" | head -n 40
      status=1
    else
      echo "C suites under ASan+UBSan: clean: $summary"
    fi
    continue
  fi
  corpus="$build/corpus-$t"
  mkdir -p "$corpus"
  dict=""
  [ -f "$src/$t.dict" ] && dict="-dict=$src/$t.dict"
  log="$build/fuzz_$t.log"
  seeds="$src/corpus/$t"
  [ -d "$seeds" ] || seeds=""
  # fuzz_api asks for absurd sizes on purpose: ASan refuses allocations over
  # 1 GiB (the library then reports MIXP_ERR_OUT_OF_MEMORY, which is what is
  # tested) before libFuzzer's malloc limit would call them a finding.
  (cd "$build" && "./fuzz_$t" -max_total_time="$secs" -rss_limit_mb=3072 -malloc_limit_mb=1100 -timeout=20 \
     -print_final_stats=1 $dict "$corpus" $seeds) >"$log" 2>&1
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
