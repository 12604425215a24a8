#!/usr/bin/env bash
# Stores a release's ABI as the baseline of the ABI check
# (abi_compatible_with_last_release, tests/abi/abi.cmake): builds the libmixp
# target of COMMIT in a scratch worktree (debug information, no tools, tests
# or CUDA), writes its ABI to tests/abi/baseline/libmixp-<version>.abi with
# the check's own abidw flags, and removes the previous baseline. Run it on
# the release commit once the release is made, check, and commit the file
# (docs/embedding.md, "Checking the ABI").
#   tests/abi/make_baseline.sh COMMIT [BUILD_DIR]
# BUILD_DIR: an existing build of COMMIT's libmixp with debug information
# (its source folder must be a checkout of COMMIT); skips the build.
set -euo pipefail
commit=${1:?usage: $0 COMMIT [BUILD_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
cleanup() {
  if [ -d "$work/src" ]; then git -C "$repo" worktree remove --force "$work/src"; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [ $# -ge 2 ]; then
  build=$(cd "$2" && pwd)
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  [ "$(git -C "$src" rev-parse HEAD)" = "$(git -C "$repo" rev-parse "$commit^{commit}")" ] ||
    { echo "$build was not built from $commit" >&2; exit 1; }
else
  src=$work/src
  build=$work/build
  git -C "$repo" worktree add --detach "$src" "$commit" >/dev/null
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DMIXP_WITH_CUDA=OFF -DMIXP_BUILD_TESTS=OFF \
    -DMIXP_BUILD_TOOLS=OFF >/dev/null
  cmake --build "$build" --target mixp -j"${JOBS:-2}"
fi
version=$(sed -n 's/^project(mixp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
out=$here/baseline/libmixp-$version.abi
cmake -DABIDW="$(command -v abidw)" -DLIB="$build/libmixp.so.$version" -DHEADERS="$src/include/mixp" \
  -DSOURCE_DIR="$src" -DDUMP_ONLY="$out" -P "$here/check_abi.cmake"
for old in "$here"/baseline/libmixp-*.abi; do
  [ "$old" = "$out" ] || rm -f "$old"
done
echo "$out: the ABI of $version ($(grep -c "<function-decl name='mixp_" "$out") functions)"
