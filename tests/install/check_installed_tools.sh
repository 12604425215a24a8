#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, moves the prefix to another
# folder (a prefix the build never knew), and runs the installed tools there
# with no LD_LIBRARY_PATH: each must load the libmixp.so.0 installed beside
# it through its relative run path ($ORIGIN/../lib), not a build tree's or
# a system-wide one.
set -euo pipefail
build_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/prefix"
prefix=$work/prefix
unset LD_LIBRARY_PATH
lib=$(find "$prefix" -name 'libmixp.so.0' | head -n 1)
[ -n "$lib" ] || { echo "FAIL: no libmixp.so.0 under $prefix"; exit 1; }
for tool in mixp-train mixp-bench; do
  exe=$prefix/bin/$tool
  [ -x "$exe" ] || { echo "FAIL: $exe was not installed"; exit 1; }
  runpath=$(readelf -d "$exe" | sed -n 's/.*(RUN\{0,1\}PATH).*\[\(.*\)\]/\1/p')
  case "$runpath" in
    *'$ORIGIN/'*) ;;
    *) echo "FAIL: $tool's run path is '$runpath', expected one relative to \$ORIGIN"; exit 1 ;;
  esac
  found=$(ldd "$exe" | awk '$1 == "libmixp.so.0" { print $3 }')
  if [ "$found" = "not" ] || [ -z "$found" ] || [ "$(realpath "$found")" != "$(realpath "$lib")" ]; then
    echo "FAIL: $tool (run path '$runpath') loads libmixp.so.0 from '${found:-nowhere}', not $lib"
    ldd "$exe" | grep mixp || true
    exit 1
  fi
  "$exe" --help >/dev/null
  echo "$tool: run path $runpath, loads $(realpath --relative-to="$prefix" "$found")"
done
# And a real run of the installed trainer.
"$prefix/bin/mixp-train" --data synthetic --epochs 1 --limit-train 512 --limit-test 128 --hidden 16 \
  --batch 64 --threads 2 | grep 'final: test_accuracy='
