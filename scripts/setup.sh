#!/usr/bin/env bash
# Installs every Debian package Doppio needs that is missing, then configures and builds
# into build/ (Ninja, ccache): with CUDA where the toolkit is found, GPU or not. Extra
# arguments go to cmake, e.g. -DDOPPIO_CUDA=OFF.
# DOPPIO_TARGETS="a b" builds only those targets (scripts/quickstart.sh: the doppio tool);
# DOPPIO_CUDA_ARCHITECTURES="80;90" (the default) the GPU architectures to compile for.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libprotobuf-dev protobuf-compiler libgoogle-glog-dev libgflags-dev liblmdb-dev
  # Caffe's HDF5 files: HDF5Data / HDF5Output layers, snapshot_format HDF5, .h5 weights.
  libhdf5-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  libopenblas-dev libopenmpi-dev openmpi-bin libgtest-dev
  # The CPU engine ONEDNN (without OpenCL, which its CMake package would want).
  libdnnl-dev
  python3-matplotlib
  # The Python packages (docs/python.md): the extension, caffe.io, caffe.draw, and their tests.
  python3-dev pybind11-dev python3-numpy python3-protobuf python3-skimage python3-pydot graphviz
  python3-h5py python3-pytest
  # The fuzz targets (scripts/fuzz.sh): clang, and libFuzzer with the sanitizer runtimes,
  # which clang only recommends.
  clang libclang-rt-14-dev
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
jobs="${DOPPIO_JOBS:-$(nproc)}"
# DOPPIO_CUDA=AUTO and the kernels for DOPPIO_CUDA_ARCHITECTURES unless an argument says
# otherwise (a later -D wins): build/ may hold the quick start's configuration without CUDA,
# or scripts/test.sh's with one architecture.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDOPPIO_CUDA=AUTO \
  -DCMAKE_CUDA_ARCHITECTURES="${DOPPIO_CUDA_ARCHITECTURES:-80;90}" "$@"
if [ -n "${DOPPIO_TARGETS:-}" ]; then
  read -r -a targets <<< "$DOPPIO_TARGETS"
  cmake --build build -j "$jobs" --target "${targets[@]}"
  echo "setup: built ${targets[*]} in build/"
else
  cmake --build build -j "$jobs"
  echo "setup: built build/tools/doppio and the tests"
fi
