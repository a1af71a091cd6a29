#!/usr/bin/env bash
# CIFAR-10 "full" as Caffe trains it (about 81% test accuracy): 60,000 iterations at lr 0.001
# (models/cifar10_full/solver.prototxt), then 5,000 at 0.0001 and 5,000 at 0.00001, each
# resumed from the previous stage's last snapshot (examples/cifar10/cifar10_full_solver_lr*).
#   NP=2 examples/cifar10/train_full.sh
# Needs data/cifar10/ built by data/cifar10/get_cifar10.sh. See examples/launch.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
need_data data/cifar10/get_cifar10.sh data/cifar10/cifar10_train_lmdb \
  data/cifar10/cifar10_test_lmdb data/cifar10/mean.binaryproto
log="examples/cifar10/cifar10_full_np${NP:-1}.log"
doppio_train "$log" --solver=models/cifar10_full/solver.prototxt "$@"
doppio_train "${log%.log}_lr1.log" --solver=examples/cifar10/cifar10_full_solver_lr1.prototxt \
  --snapshot=models/cifar10_full/cifar10_full_iter_60000.solverstate "$@"
doppio_train "${log%.log}_lr2.log" --solver=examples/cifar10/cifar10_full_solver_lr2.prototxt \
  --snapshot=models/cifar10_full/cifar10_full_iter_65000.solverstate "$@"
report "${log%.log}_lr2.log"
