#!/usr/bin/env bash
# NCCL on one GPU (issue: two ranks cannot share a GPU in NCCL, "Duplicate GPU"): trains a
# small DummyData net with `doppio train --gpu=0 --gpu_comm=nccl`,
#   1. one rank: NCCL's whole training path on one communicator of one rank (must pass);
#   2. two ranks on the one GPU, each with its own NCCL_HOSTID, so that NCCL takes them for two
#      hosts (its socket transport): reported, pass or fail.
# Writes what happened to REPORT (Markdown) and exits with the first run's status.
#
#   scripts/gpu_nccl_check.sh DOPPIO REPORT
set -uo pipefail
doppio="$1"
report="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/net.prototxt" <<'NET'
name: "nccl_check"
layer { name: "data" type: "DummyData" top: "data" top: "label"
        dummy_data_param { shape { dim: 32 dim: 3 dim: 16 dim: 16 } shape { dim: 32 }
                           data_filler { type: "gaussian" std: 1 }
                           data_filler { type: "constant" value: 1 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 16 kernel_size: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
NET
cat >"$work/solver.prototxt" <<SOLVER
net: "$work/net.prototxt"
base_lr: 0.01 momentum: 0.9 lr_policy: "fixed" max_iter: 50 display: 25
snapshot_prefix: "$work/snap" solver_mode: GPU
SOLVER
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gradient_line() { grep -o "Gradient exchange between the GPUs: [^)]*)" "$1" | head -1; }

"$doppio" train --solver="$work/solver.prototxt" --gpu=0 --gpu_comm=nccl >"$work/one.log" 2>&1
one=$?
cat "$work/one.log"
mpirun -np 2 --oversubscribe bash -c \
  'NCCL_HOSTID="doppio-check-$OMPI_COMM_WORLD_RANK" exec "$0" "$@"' \
  "$doppio" train --solver="$work/solver.prototxt" --gpu=0 --gpu_comm=nccl --comm_timeout=60 \
  >"$work/two.log" 2>&1
two=$?
echo "=== two ranks ==="
cat "$work/two.log"
{
  echo "## NCCL on one GPU"
  echo
  echo "- one rank, \`--gpu_comm=nccl\`: $( ((one == 0)) && echo passed || echo "FAILED (exit $one)")." \
    "$(gradient_line "$work/one.log")"
  echo "- two ranks on the one GPU, each its own NCCL_HOSTID: $( ((two == 0)) && echo passed ||
    echo "failed (exit $two)")." "$(gradient_line "$work/two.log")"
  if ((two != 0)); then
    echo
    echo '```'
    grep -iE "nccl|error|duplicate" "$work/two.log" | head -8
    echo '```'
  fi
} >"$report"
exit "$one"
