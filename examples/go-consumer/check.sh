#!/bin/sh
# CTest go_consumer_pkg_config: installs the build into a scratch prefix,
# points a copy of this example's go.mod at the Go module installed there
# (the one line a user changes for a prefix other than /usr/local), and
# builds and runs it with only pkg-config to find mixp: no build tree, no
# network (GOPROXY=off), no workspace.
# Usage: check.sh BUILD_DIR EXAMPLE_DIR GO WORK_DIR
set -eu
build=$1 example=$2 go=$3 work=$4
command -v pkg-config >/dev/null 2>&1 || { echo "SKIPPED: pkg-config not found"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(find "$work/prefix" -name 'libmixp.so.0' -printf '%h\n' | head -n 1)
module="$work/prefix/share/mixp/go"
[ -f "$module/go.mod" ] && [ -f "$module/internal/raw/mixpGO_wrap.cxx" ] || { echo "FAIL: no Go module installed in $module"; exit 1; }
mkdir "$work/app"
cp "$example/go.mod" "$example/main.go" "$work/app/"
cd "$work/app"
export GOWORK=off GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=1 \
       GOCACHE="$work/gocache" GOPATH="$work/gopath" PKG_CONFIG_PATH="$libdir/pkgconfig"
"$go" mod edit -replace "mixp.dev/mixp=$module"
"$go" build -o mixp-consumer . || { echo "FAIL: go build against the installed module"; exit 1; }
LD_LIBRARY_PATH="$libdir" ./mixp-consumer
