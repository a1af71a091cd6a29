# Sourced by the examples' scripts: runs `doppio train` on NP ranks.
#
#   NP=2 examples/mnist/train_lenet.sh          # 2 ranks on this machine (mpirun -np 2)
#   NP=1 examples/mnist/train_lenet.sh          # one process, no MPI (the default)
#   NP=8 HOSTFILE=hosts examples/...            # 8 ranks over the machines in `hosts`
#   LAUNCHER="srun" examples/...                # inside a Slurm allocation (srun starts the ranks)
#
# NP: number of ranks (default 1). HOSTFILE: an Open MPI hostfile ("node1 slots=4" lines).
# LAUNCHER: a command that starts the ranks itself (srun, or an mpirun with options of your
# own); NP and HOSTFILE are then not used. MPIRUN_ARGS: more options for mpirun. DOPPIO: the
# binary (default build/tools/doppio). DRY_RUN=1 prints the commands instead of running them.
# The examples run from the repository root.

DOPPIO="${DOPPIO:-build/tools/doppio}"

# doppio_train LOG ARGS...: `doppio train ARGS` on the ranks asked for, its log (stderr) shown
# and copied to LOG.
doppio_train() {
  local log="$1"
  shift
  if [ ! -x "$DOPPIO" ] && [ -z "${DRY_RUN:-}" ]; then
    echo "$DOPPIO not found: build first (scripts/setup.sh)" >&2
    return 1
  fi
  local launcher=()
  local np="${NP:-1}"
  if [ -n "${LAUNCHER:-}" ]; then
    read -r -a launcher <<< "$LAUNCHER"
  elif [ "$np" -gt 1 ] || [ -n "${HOSTFILE:-}" ]; then
    command -v mpirun > /dev/null || {
      echo "mpirun not found: apt-get install openmpi-bin" >&2
      return 1
    }
    launcher=(mpirun -np "$np")
    if [ -n "${HOSTFILE:-}" ]; then
      launcher+=(--hostfile "$HOSTFILE")
    elif [ "$(nproc)" -lt "$np" ]; then
      launcher+=(--oversubscribe)
    fi
    [ "$(id -u)" -ne 0 ] || launcher+=(--allow-run-as-root)
    if [ -n "${MPIRUN_ARGS:-}" ]; then
      local extra=()
      read -r -a extra <<< "$MPIRUN_ARGS"
      launcher+=("${extra[@]}")
    fi
  fi
  echo "+ ${launcher[*]} $DOPPIO train $*" >&2
  [ -z "${DRY_RUN:-}" ] || return 0
  set -o pipefail
  GLOG_logtostderr=1 "${launcher[@]}" "$DOPPIO" train "$@" 2>&1 | tee "$log"
}

# report LOG: the last test scores and the last weights written, from a training log.
report() {
  local log="$1"
  [ -z "${DRY_RUN:-}" ] || return 0
  local accuracy weights
  accuracy="$(grep -o 'Test net output #[0-9]*: [^ ]*accuracy[^ ]* = [0-9.e-]*' "$log" | tail -n 1 |
    sed 's/.*: //')"
  weights="$(grep -o 'Snapshotting to binary proto file .*' "$log" | tail -n 1 | sed 's/.*file //')"
  local seconds
  seconds="$(grep -E '^I[0-9]+ ' "$log" | sed -n '1p;$p' | awk '{ split($2, t, ":");
    s = t[1] * 3600 + t[2] * 60 + t[3]; if (NR == 1) first = s; else { d = s - first;
    if (d < 0) d += 86400; printf "%.0f", d } }')"
  echo "result: ${accuracy:-no test score} after ${seconds:-?} s; weights: ${weights:-none written}"
  echo "result: log in $log (plot: tools/plot_training_log $log)"
}

# need_data SCRIPT PATH...: runs SCRIPT when one of the PATHs does not exist yet.
need_data() {
  local script="$1"
  shift
  local path
  for path in "$@"; do
    if [ ! -e "$path" ]; then
      if [ -n "${DRY_RUN:-}" ]; then
        echo "+ $script" >&2
      else
        "$script"
      fi
      return
    fi
  done
}
