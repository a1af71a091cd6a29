#!/usr/bin/env bash
# Sets up (packages and build) and runs the whole test suite through ctest; runs every fuzz
# target briefly (scripts/fuzz.sh, its own clang build in build-fuzz/); then builds the
# CUDA code once more under the host emulation of CUDA (-DDOPPIO_CUDA=EMULATE, see
# tests/cuda_emulation/) and runs the GPU tests there, so that on a machine without a GPU the
# kernels and device code paths still run.
set -euo pipefail
cd "$(dirname "$0")/.."
# No include may cross a part of the system upwards (docs/layering.md).
python3 scripts/check_layering.py
scripts/setup.sh "$@"
jobs="${DOPPIO_JOBS:-$(nproc)}"
ctest --test-dir build --output-on-failure -j "$jobs"

# Every fuzz target for a short while under ASan and UBSan (docs/fuzzing.md); the normal
# ctest run above has already replayed their seeds and regression cases.
scripts/fuzz.sh "${DOPPIO_FUZZ_SECONDS:-20}"

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake -S . -B build-emulation -G Ninja -DCMAKE_BUILD_TYPE=Release -DDOPPIO_CUDA=EMULATE
# Only the suites with GPU cases (doppio_gpu_suite, tests/CMakeLists.txt): the others ran
# above. The GPU suites, the emulation's own tests, and the MPI job whose GPU case runs two
# ranks on one device through the staged path.
cmake --build build-emulation -j "$jobs" --target doppio_gpu_suite
ctest --test-dir build-emulation --output-on-failure -j "$jobs" \
  -R '[Gg]pu|CudaEmulation|parallel_distributed_np2$'
