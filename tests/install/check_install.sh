#!/usr/bin/env bash
# Installs the built tree into a scratch prefix, then builds a consumer with
# find_package(mixp) and another with pkg-config, and runs both.
set -euo pipefail
build_dir=$1
src_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name 'libmixp.so.0' -printf '%h\n' | head -n 1)
cmake -S "$src_dir" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/consumer/consumer"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src_dir/consumer.c" $(pkg-config --cflags --libs mixp) -o "$work/consumer_pc"
LD_LIBRARY_PATH="$libdir" "$work/consumer_pc"
