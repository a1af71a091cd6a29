#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang, ASan + UBSan) into build-fuzz/ and runs
# each for a bounded time, one after the other on one core; prints per target the
# executions, coverage and findings, and exits non-zero when any target found something.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      SECONDS per target (default 20); all targets
#                                              unless named
#   DOPPIO_FUZZ_RUNS=N scripts/fuzz.sh 0 ...   N executions per target instead of a time
#
# Corpora grow in build-fuzz/fuzz/corpus/<target>/ from run to run; a finding is written to
# build-fuzz/fuzz/findings/<target>/ and its log to build-fuzz/fuzz/logs/<target>.log.
# docs/fuzzing.md says how to turn a finding into a regression case.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
shift || true

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
# The targets carry line tables for the sanitizers' stack traces, and ccache hashes the
# working directory into any compilation with debug information: without this, a clone in
# another folder (CI's) recompiles every object. (Those that use a precompiled header still
# do: clang's .pch differs from folder to folder.) Traces name files relative to build-fuzz/.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
jobs="${DOPPIO_JOBS:-$(nproc)}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DDOPPIO_CUDA=OFF -DDOPPIO_FUZZ=ON -DDOPPIO_BUILD_TESTS=OFF -DDOPPIO_PYTHON=OFF > /dev/null
# build-fuzz/fuzz-targets.txt: one line per target, its name and its seed files and folders.
mapfile -t listing < build-fuzz/fuzz-targets.txt
all_targets=()
for line in "${listing[@]}"; do all_targets+=("${line%% *}"); done
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
cmake --build build-fuzz -j "$jobs" --target "${targets[@]/%/_fuzzer}"

work=build-fuzz/fuzz
# Leaks are findings; memory is bounded by the harness, not by the machine: one allocation
# over 2 GiB fails (the product answers with an Error), and libFuzzer stops a run whose
# resident memory passes 3 GiB.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=2048}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
limit=(-max_total_time="$seconds")
if [ -n "${DOPPIO_FUZZ_RUNS:-}" ]; then limit=(-runs="$DOPPIO_FUZZ_RUNS"); fi

failed=()
printf '%-14s %10s %8s %8s %8s  %s\n' target executions seconds cov ft result
for target in "${targets[@]}"; do
  corpus="$work/corpus/$target"
  mkdir -p "$corpus" "$work/findings/$target" "$work/logs"
  for line in "${listing[@]}"; do
    [ "${line%% *}" = "$target" ] || continue
    read -r -a seeds <<< "${line#* }"
    for seed in "${seeds[@]}"; do
      # Seed files are copied in: libFuzzer runs a file argument once instead of fuzzing.
      if [ -d "$seed" ]; then cp -n "$seed"/* "$corpus"/ 2>/dev/null || true; else cp -n "$seed" "$corpus"/; fi
    done
  done
  log="$work/logs/$target.log"
  start=$(date +%s)
  status=0
  "build-fuzz/tests/fuzz/${target}_fuzzer" "${limit[@]}" -timeout=30 -rss_limit_mb=3072 \
    -malloc_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$work/findings/$target/" \
    "$corpus" > "$log" 2>&1 || status=$?
  elapsed=$(($(date +%s) - start))
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  coverage=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
  cov=$(echo "$coverage" | awk '{print $2}')
  ft=$(echo "$coverage" | awk '{print $4}')
  result=ok
  if ((status != 0)); then
    result="FINDING: $(grep -m1 -E 'ERROR: |runtime error|Check failed|terminate called|deadly signal' "$log" || echo "exit $status") (see $log)"
    failed+=("$target")
  fi
  printf '%-14s %10s %8s %8s %8s  %s\n' "$target" "${executions:-?}" "$elapsed" "${cov:-?}" "${ft:-?}" "$result"
done
if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}; inputs in $work/findings/" >&2
  exit 1
fi
