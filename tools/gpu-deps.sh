#!/usr/bin/env bash
# The build dependencies a bare GPU machine lacks, taken there as Debian
# packages (the GPU machine has the CUDA toolkit, cmake and ninja, but no
# package registry and no oneDNN, CMocka or zlib headers).
#
#   tools/gpu-deps.sh [DIR]                 fetch (on a machine with Debian's registry)
#   tools/gpu-deps.sh --unpack DIR PREFIX   unpack (on the GPU machine)
#
# DIR defaults to gpu-deps/ in the repository, which .gitignore ignores, so
# the device tool can carry it (`carry: ["gpu-deps"]`). Fetching needs no
# root: `apt-get download` writes the .deb files (~8 MB) and pip the cuDNN
# frontend wheel (~11 MB) into DIR with a SHA256SUMS beside them. Unpacking
# uses `dpkg-deb -x` (or ar + tar where dpkg is missing) into PREFIX, never
# into /: point the build at it with
# MIXP_DEPS_PREFIX=PREFIX (tools/gpu-check.sh does, and unpacks for you
# when given MIXP_DEPS_DEBS=DIR).
#
# What and why:
#   libdnnl2 libdnnl-dev     oneDNN 2.6, libmixp.so's CPU backend
#   ocl-icd-libopencl1       Debian's libdnnl.so.2 needs libOpenCL.so.1
#   libcmocka0 libcmocka-dev the C test suites
#   libdlpack-dev            dlpack.h, for the DLPack suites (test_cuda_dlpack)
#   zlib1g-dev               zlib.h (checkpoints); its libz.so is an absolute
#                            link to Debian's libz.so.1.2.13, so the build
#                            links the GPU machine's own libz.so.1 instead
#   wheels/mixp_cuda13-*.whl the mixp-cuda13 wheel made here from this tree's
#                            built plugin (build/libmixp_cuda.so, or
#                            MIXP_CUDA_PLUGIN=FILE), when there is one: the
#                            GPU machine has no scikit-build-core or patchelf;
#                            tools/gpu-check.sh's wheel phase installs it
#                            beside PyTorch's NVIDIA libraries
# and one wheel from PyPI (`pip download --no-deps`, ~11 MB):
#   nvidia-cudnn-frontend    the cuDNN frontend's C++ headers (fused attention,
#                            kernels/attention.cpp), the version .ci/run pins;
#                            only its include/ is unpacked, into
#                            PREFIX/cudnn_frontend/include
set -euo pipefail
PACKAGES=(libdnnl2 libdnnl-dev ocl-icd-libopencl1 libcmocka0 libcmocka-dev zlib1g-dev libdlpack-dev)
FRONTEND=nvidia-cudnn-frontend==1.32.0  # keep equal to .ci/run's pin
REPO=$(cd "$(dirname "$0")/.." && pwd)

unpack() {
  local dir=$1 prefix=$2 n=0
  mkdir -p "$prefix"
  for deb in "$dir"/*.deb; do
    [ -e "$deb" ] || { echo "gpu-deps.sh: no .deb files in $dir (run tools/gpu-deps.sh $dir where apt-get works)" >&2; exit 1; }
    if command -v dpkg-deb >/dev/null 2>&1; then
      dpkg-deb -x "$deb" "$prefix"
    else
      local data
      data=$(ar t "$deb" | grep '^data\.tar')
      ar p "$deb" "$data" | tar -x -C "$prefix" -f - --no-same-owner
    fi
    n=$((n + 1))
  done
  local whl
  for whl in "$dir"/nvidia_cudnn_frontend-*.whl; do
    [ -e "$whl" ] || { echo "gpu-deps.sh: no cuDNN frontend wheel in $dir: CUDA attention will run composed" >&2; continue; }
    # A wheel is a zip; only its headers are wanted.
    python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [m for m in z.namelist() if m.startswith("include/")])' "$whl" "$prefix/cudnn_frontend"
    n=$((n + 1))
  done
  echo "gpu-deps.sh: unpacked $n packages into $prefix"
}

fetch() {
  local dir=$1
  command -v apt-get >/dev/null 2>&1 || { echo "gpu-deps.sh: apt-get not found: fetch on a Debian machine" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  rm -f "$dir"/*.deb "$dir"/*.whl "$dir/SHA256SUMS"
  # apt-get download writes into the working directory; as root it warns that
  # the _apt user cannot write there, which is harmless.
  (cd "$dir" && apt-get download "${PACKAGES[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed') || true
  local missing=()
  for p in "${PACKAGES[@]}"; do
    compgen -G "$dir/${p}_*.deb" >/dev/null || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "gpu-deps.sh: could not download: ${missing[*]} (is 'apt-get update' done?)" >&2
    exit 1
  fi
  python3 -m pip download --quiet --no-deps "$FRONTEND" -d "$dir" ||
    { echo "gpu-deps.sh: could not download $FRONTEND from PyPI" >&2; exit 1; }
  (cd "$dir" && sha256sum ./*.deb ./*.whl > SHA256SUMS)
  echo "gpu-deps.sh: $(ls "$dir"/*.deb "$dir"/*.whl | wc -l) packages, $(du -sh "$dir" | cut -f1) in $dir"
  cuda_wheel "$dir"
}

# The mixp-cuda13 wheel (bindings/python-cuda) from an already built plugin
# of this tree; not fatal when there is none (the wheel phase then says so).
cuda_wheel() {
  local dir=$1 plugin=${MIXP_CUDA_PLUGIN:-$REPO/build/libmixp_cuda.so}
  # Debian's interpreter, where the README's pip line installs the build tools.
  local py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
  rm -rf "$dir/wheels"
  if [ ! -f "$plugin" ]; then
    echo "gpu-deps.sh: no $plugin: no mixp-cuda13 wheel carried (build the tree first)"
    return 0
  fi
  if "$py" -m pip wheel -q --no-build-isolation --no-deps -w "$dir/wheels" \
       --config-settings=cmake.define.MIXP_CUDA_PLUGIN="$plugin" \
       --config-settings=build-dir="$dir/wheels/build" "$REPO/bindings/python-cuda" >/dev/null 2>&1; then
    rm -rf "$dir/wheels/build"
    echo "gpu-deps.sh: $(basename "$(ls "$dir"/wheels/mixp_cuda13-*.whl)") from $plugin"
  else
    rm -rf "$dir/wheels"
    echo "gpu-deps.sh: could not build the mixp-cuda13 wheel (needs scikit-build-core and patchelf)" >&2
  fi
}

if [ "${1:-}" = "--unpack" ]; then
  [ $# -eq 3 ] || { echo "usage: tools/gpu-deps.sh --unpack DIR PREFIX" >&2; exit 2; }
  unpack "$2" "$3"
else
  [ $# -le 1 ] || { echo "usage: tools/gpu-deps.sh [DIR] | --unpack DIR PREFIX" >&2; exit 2; }
  fetch "${1:-$REPO/gpu-deps}"
fi
