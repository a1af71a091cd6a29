#!/usr/bin/env bash
# CIFAR-10 "quick" as Caffe trains it (about 75% test accuracy): 4,000 iterations at
# lr 0.001 (models/cifar10_quick/solver.prototxt), then 1,000 more at 0.0001 resumed from the
# 4,000-iteration snapshot (examples/cifar10/cifar10_quick_solver_lr1.prototxt).
#   examples/cifar10/train_quick.sh          # one process
#   NP=2 examples/cifar10/train_quick.sh     # 2 MPI ranks, batch 100 each
# Needs data/cifar10/ built by data/cifar10/get_cifar10.sh. See examples/launch.sh for
# HOSTFILE, LAUNCHER (Slurm) and DRY_RUN.
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
need_data data/cifar10/get_cifar10.sh data/cifar10/cifar10_train_lmdb \
  data/cifar10/cifar10_test_lmdb data/cifar10/mean.binaryproto
log="examples/cifar10/cifar10_quick_np${NP:-1}.log"
doppio_train "$log" --solver=models/cifar10_quick/solver.prototxt "$@"
doppio_train "${log%.log}_lr1.log" --solver=examples/cifar10/cifar10_quick_solver_lr1.prototxt \
  --snapshot=models/cifar10_quick/cifar10_quick_iter_4000.solverstate "$@"
report "${log%.log}_lr1.log"
