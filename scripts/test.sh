#!/usr/bin/env bash
# Sets up (packages and build) and runs the whole test suite through ctest; runs every fuzz
# target briefly (scripts/fuzz.sh, its own clang build in build-fuzz/); then builds the
# CUDA code once more under the host emulation of CUDA (-DDOPPIO_CUDA=EMULATE, see
# tests/cuda_emulation/) and runs the GPU tests there, so that on a machine without a GPU the
# kernels and device code paths still run. Ends with the time each step took, to hold
# against the budget in docs/installing.md ("Its time budget").
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${DOPPIO_JOBS:-$(nproc)}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"

step_times=()
start=$SECONDS
report() {
  local status=$?
  echo
  echo "test.sh: the time of each step"
  for line in "${step_times[@]}"; do echo "  $line"; done
  printf '  %-34s %5d s  (budget: 2700 s from a cold ccache)\n' "total" $((SECONDS - start))
  return $status
}
trap report EXIT
# step NAME COMMAND...: runs the command and records how long it took.
step() {
  local name="$1" began=$SECONDS
  shift
  "$@"
  step_times+=("$(printf '%-34s %5d s' "$name" $((SECONDS - began)))")
}

# No include may cross a part of the system upwards (docs/layering.md).
step "layering check" python3 scripts/check_layering.py
# The CUDA kernels for one architecture (sm_90: H100 and H200, the GPUs the device checks
# run on): the build proves they compile, and no GPU runs them here.
export DOPPIO_CUDA_ARCHITECTURES="${DOPPIO_CUDA_ARCHITECTURES:-90}"
step "packages and build (build/)" scripts/setup.sh "$@"
# The Slurm cluster tests (tests/cluster/slurm_test.py) need Debian's Slurm; as root (which
# the namespace cluster needs anyway) it is installed where missing, elsewhere they skip.
if [ "$(id -u)" -eq 0 ]; then
  step "Slurm packages (cluster tests)" scripts/cluster.sh install-slurm
fi
step "tests (build/)" ctest --test-dir build --output-on-failure -j "$jobs"

# Every fuzz target for a short while under ASan and UBSan (docs/fuzzing.md); the normal
# ctest run above has already replayed their seeds and regression cases.
step "fuzz build and runs (build-fuzz/)" scripts/fuzz.sh "${DOPPIO_FUZZ_SECONDS:-20}"

# Python's tests ran above; the GPU suites need none of it.
step "emulation configure" cmake -S . -B build-emulation -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DDOPPIO_CUDA=EMULATE -DDOPPIO_PYTHON=OFF
# Only the suites with GPU cases (doppio_gpu_suite, tests/CMakeLists.txt): the others ran
# above. The GPU suites, the emulation's own tests, and the MPI job whose GPU case runs two
# ranks on one device through the staged path.
step "emulation build (build-emulation/)" cmake --build build-emulation -j "$jobs" \
  --target doppio_gpu_suite
step "GPU tests under emulation" ctest --test-dir build-emulation --output-on-failure -j "$jobs" \
  -R '[Gg]pu|CudaEmulation|parallel_distributed_np2$'
