#!/usr/bin/env bash
# LeNet on 24 x 24 crops of MNIST with the quick start's schedule
# (examples/mnist/lenet_quick_solver.prototxt: batch 64 per rank, 2,500 iterations, made for
# 2 ranks; with NP=1 the global batch is 64 instead of 128).
#   NP=2 examples/mnist/train_lenet_quick.sh  # what scripts/quickstart.sh runs
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
need_data data/mnist/get_mnist.sh data/mnist/mnist_train_lmdb data/mnist/mnist_test_lmdb
log="examples/mnist/lenet_quick_np${NP:-1}.log"
doppio_train "$log" --solver=examples/mnist/lenet_quick_solver.prototxt "$@"
report "$log"
