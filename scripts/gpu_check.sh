#!/usr/bin/env bash
# Proves the GPU build on a machine with a GPU and nothing of ours installed, in one command:
#
#   scripts/gpu_check.sh [OUTDIR]        # OUTDIR: default $OUT, else build-gpu/out
#
# 1. inventory: the GPU, driver and toolkit; OUTDIR/target_inventory.txt lists the libraries
#    and headers this machine has (scripts/device_bundle.sh --target takes it).
# 2. dependencies: each library group of scripts/device_groups.txt comes from the system when
#    it has it, else from .device-bundle/bundle.tar.xz or $DOPPIO_DEVICE_BUNDLE
#    (scripts/device_bundle.sh, run on a Debian machine that has the packages).
# 3. build into build-gpu/ for this machine's GPU architecture only, the targets the GPU
#    tests need.
# 4. the GPU tests of every label (ctest -R '[Gg]pu|parallel_distributed_np2$': layers, core,
#    solvers, util, tools, parallel with the 2-rank staged and NCCL jobs), and NCCL on the one
#    GPU (scripts/gpu_nccl_check.sh: one rank, and two ranks with their own NCCL_HOSTID).
# 5. bench/gpu_train_vs_pytorch.py: AlexNet b256, GoogLeNet b128, ResNet-50 b64 against
#    PyTorch (images/s, TF32 stated, peak memory).
# 6. compute-sanitizer memcheck, then racecheck (slow: about 150 s a shard on an H100), over
#    the layer tests, in four shards each.
#
# Steps that passed are stamped in build-gpu/gpu_check/ and skipped when the script runs
# again, so a call cut short by its time limit resumes where it stopped while the machine
# (and build-gpu/) is still there; failed steps run again. DOPPIO_GPU_CHECK_SECONDS (default 540) is this call's
# budget: a step that would not fit is left for the next call. OUTDIR gets summary.md,
# target_inventory.txt, bench.json and logs.tar.gz (every step's log). Exit code: 0 when
# every step ran and passed, 3 when steps are left for another call, 1 when a step failed.
# Extra cmake arguments: DOPPIO_GPU_CHECK_CMAKE_ARGS. DOPPIO_GPU_CHECK_RACECHECK_SHARDS (default
# "0 1 2 3") orders racecheck's shards, so that a short lease starts with those not yet proven.
set -uo pipefail
set -m
cd "$(dirname "$0")/.."
root="$PWD"

out="$(realpath -m "${1:-${OUT:-build-gpu/out}}")"
budget="${DOPPIO_GPU_CHECK_SECONDS:-540}"
build="$root/build-gpu"
state="$build/gpu_check"
mkdir -p "$out" "$state/logs" "$state/done"
results="$state/results.txt"
touch "$results"
# Stamps hold for one source tree: another tree (a later call with changed files) runs every
# step again, on an incremental build.
tree="$(find CMakeLists.txt cmake proto include src tests tools bench models -type f \
  -print0 | sort -z | xargs -0 sha1sum | sha1sum | cut -c1-12)"
if [ "$(cat "$state/tree" 2>/dev/null)" != "$tree" ]; then
  rm -f "$state/done/"* "$state/tests.txt" "$state/bench.txt" "$state/bench.json"
  : >"$results"
  echo "$tree" >"$state/tree"
fi
arch=x86_64-linux-gnu
jobs="$(nproc)"
status=0

log() { echo "gpu_check: $*"; }

# Records one line of the summary; a line for the same step replaces the earlier one.
record() {  # step text
  grep -v "^| $1 |" "$results" >"$results.new" || true
  echo "| $1 | $2 |" >>"$results.new"
  mv "$results.new" "$results"
}

write_summary() {
  {
    echo "# Doppio GPU check"
    echo
    cat "$state/machine.txt" 2>/dev/null
    echo
    echo "| step | result |"
    echo "|---|---|"
    cat "$results"
    for part in tests.txt nccl.txt bench.txt; do
      [ -s "$state/$part" ] && { echo; cat "$state/$part"; }
    done
  } >"$out/summary.md"
  cp "$state/bench.json" "$out/" 2>/dev/null
  tar -C "$state" -czf "$out/logs.tar.gz" logs
}

# step NAME SECONDS COMMAND...: runs COMMAND once (later calls skip it), its output in
# logs/NAME.log, if SECONDS (a fair estimate) still fit in this call's budget.
step() {
  local name="$1" need="$2"
  shift 2
  # A step that passed in an earlier call is not run again; one that failed is.
  [ -e "$state/done/$name" ] && return 0
  local left=$((budget - SECONDS))
  if ((left < need)); then
    record "$name" "not run: ${left} s left of this call, about ${need} s needed; run again to resume"
    status=$((status == 1 ? 1 : 3))
    return 3
  fi
  log "$name (at most ${left} s)"
  local begin=$SECONDS rc expired="$state/expired"
  rm -f "$expired"
  # A subshell (so the step may be a function) in a process group of its own (set -m), which
  # a watchdog ends, children included, when the call's budget runs out.
  ("$@") >"$state/logs/$name.log" 2>&1 &
  local pid=$!
  (
    sleep "$left"
    touch "$expired"
    kill -TERM -- "-$pid" 2>/dev/null
    sleep 10
    kill -KILL -- "-$pid" 2>/dev/null
  ) >/dev/null 2>&1 &
  local watchdog=$!
  wait "$pid"
  rc=$?
  kill -- "-$watchdog" 2>/dev/null
  wait "$watchdog" 2>/dev/null
  local took=$((SECONDS - begin))
  if [ -e "$expired" ]; then
    record "$name" "stopped by this call's time limit after ${took} s; run again to resume"
    status=$((status == 1 ? 1 : 3))
    return 3
  fi
  if ((rc == 0)); then
    touch "$state/done/$name"
    record "$name" "passed in ${took} s"
  else
    record "$name" "FAILED (exit ${rc}) in ${took} s: see logs/$name.log"
    status=1
  fi
  return "$rc"
}

# 1. Inventory.
has_gpu=0
nvidia-smi -L >/dev/null 2>&1 && has_gpu=1
{
  echo "- date: $(date -u '+%F %T UTC')"
  echo "- host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(nproc) cores; source tree $tree"
  if ((has_gpu)); then
    echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader)"
  else
    echo "- GPU: none visible (nvidia-smi: $(nvidia-smi -L 2>&1 | head -1)); the GPU steps skip"
  fi
  echo "- CUDA: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'no nvcc')"
} >"$state/machine.txt"
sonames="$(ldconfig -p | awk '/=>/ {print $1}' | sort -u)"
{
  sed 's/^/soname /' <<<"$sonames"
  grep -v '^#' scripts/device_groups.txt | cut -d'|' -f3 | while read -r header; do
    [ -e "/usr/$header" ] && echo "header /usr/$header"
  done
} >"$out/target_inventory.txt"

# 2. Dependencies: the system's, else the bundle's (unpacked once per build-gpu/).
bundle="${DOPPIO_DEVICE_BUNDLE:-$root/.device-bundle/bundle.tar.xz}"
prefixes=()
from_bundle=()
while IFS='|' read -r group _ header soname; do
  if [ -e "/usr/$header" ] && { [ -z "$soname" ] || grep -qxF "$soname" <<<"$sonames"; }; then
    continue
  fi
  if [ ! -d "$build/deps/$group" ]; then
    if [ -f "$bundle" ] && [ ! -e "$build/deps/MANIFEST" ]; then
      tar -C "$build" -xJf "$bundle"
    fi
  fi
  if [ ! -d "$build/deps/$group" ]; then
    log "this machine lacks $group (/usr/$header) and .device-bundle has none:" \
      "run scripts/device_bundle.sh on a Debian machine with the packages, and carry .device-bundle"
    record dependencies "FAILED: $group missing"
    write_summary
    exit 1
  fi
  from_bundle+=("$group")
  prefix="$build/deps/$group/usr"
  prefixes+=("$prefix")
  export LD_LIBRARY_PATH="$prefix/lib/$arch:$prefix/lib/$arch/openblas-pthread:$prefix/lib/$arch/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$prefix/bin:$PATH"
  # Debian's Open MPI finds its plugins and help files under OPAL_PREFIX when relocated.
  [ "$group" = mpi ] && export OPAL_PREFIX="$prefix"
done < <(grep -v '^#' scripts/device_groups.txt)
if ((${#from_bundle[@]})); then
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$build/deps/runtime/usr/lib/$arch"
  record dependencies "system, and from the bundle: ${from_bundle[*]}"
else
  record dependencies "all from the system"
fi

# 3. Configure and build.
cuda_arch=80-real\;90-real
((has_gpu)) && cuda_arch=native
prefix_path="$(IFS=';'; echo "${prefixes[*]}")"
extra=()
[ -n "${DOPPIO_GPU_CHECK_CMAKE_ARGS:-}" ] && read -r -a extra <<<"$DOPPIO_GPU_CHECK_CMAKE_ARGS"
configure() {
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" -DCMAKE_PREFIX_PATH="$prefix_path" "${extra[@]}"
}
# The executables that hold GPU test cases (named as tests/CMakeLists.txt names them), and
# the doppio command the end-to-end tests and the benchmark run.
gpu_targets() {
  echo doppio_cli
  grep -rlE '^(TYPED_)?TEST(_F|_P)?\(([A-Za-z0-9]*Gpu|[A-Za-z0-9]*, *[A-Za-z0-9]*Gpu)' tests |
    sed -E 's#^tests/##; s#_mpitest\.cpp$#_mpi#; s#_test\.cpp$##; s#/#_#g; s#^#test_#'
}
# Those the configuration has (a build without CUDA has no *_gpu tests).
build_targets() {
  mapfile -t targets < <(gpu_targets | grep -xFf <(ninja -C "$build" -t targets all | cut -d: -f1))
  cmake --build "$build" -j "$jobs" --target "${targets[@]}"
}
step configure 60 configure && step build 120 build_targets
built=$?

# 4. The GPU tests.
run_tests() {
  ctest --test-dir "$build" -R '[Gg]pu|parallel_distributed_np2$' -j 4 --timeout 300 \
    --output-on-failure
}
if ((built == 0)); then
  step tests 120 run_tests
  {
    echo "## GPU tests"
    echo
    grep -E 'tests passed|tests failed' "$state/logs/tests.log" | tail -1
    echo
    echo "Skipped (and why):"
    grep -E 'Skipped|SKIPPED' "$state/logs/tests.log" | sed 's/^/    /' | sort -u | head -40
    echo
    echo "Failed:"
    sed -n '/The following tests FAILED/,$p' "$state/logs/tests.log" | sed 's/^/    /'
  } >"$state/tests.txt" 2>/dev/null
fi

# 4b. NCCL on the one GPU: one rank through NCCL's whole path, and two ranks each with its own
# NCCL_HOSTID (reported either way).
nccl_check() {
  scripts/gpu_nccl_check.sh "$build/tools/doppio" "$state/nccl.txt"
}
if ((built == 0 && has_gpu)); then
  step nccl 40 nccl_check
fi

# 5. The benchmark against PyTorch.
bench() {
  python3 bench/gpu_train_vs_pytorch.py --doppio="$build/tools/doppio" --json="$state/bench.json"
}
if ((built == 0 && has_gpu)); then
  if step bench 90 bench; then
    {
      echo "## Training throughput against PyTorch"
      echo
      awk '/^#/ {print} /^\|/ {print; table = 1; next} table {exit}' "$state/logs/bench.log"
    } >"$state/bench.txt"
  fi
elif ((built == 0)); then
  record bench "skipped: no GPU"
fi

# 6. compute-sanitizer over the layer tests, four shards per tool so that a call cut short
# resumes by shard.
sanitize() {  # tool shard
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX="$2" compute-sanitizer --tool "$1" --error-exitcode 1 \
    --print-limit 20 "$build/tests/test_layers_layers_gpu" --gtest_brief=1
}
if ((built == 0 && has_gpu)) && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    shards="0 1 2 3"
    [ "$tool" = racecheck ] && shards="${DOPPIO_GPU_CHECK_RACECHECK_SHARDS:-$shards}"
    for shard in $shards; do
      step "$tool-$shard" "$( [ "$tool" = memcheck ] && echo 30 || echo 200)" sanitize "$tool" "$shard"
    done
  done
elif ((built == 0)); then
  record sanitizer "skipped: $( ((has_gpu)) && echo 'no compute-sanitizer' || echo 'no GPU')"
fi

write_summary
cat "$out/summary.md"
exit "$status"
