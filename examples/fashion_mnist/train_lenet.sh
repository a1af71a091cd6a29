#!/usr/bin/env bash
# LeNet on Fashion-MNIST with Caffe's LeNet schedule
# (examples/fashion_mnist/lenet_solver.prototxt: batch 64 per rank, 10,000 iterations).
#   examples/fashion_mnist/train_lenet.sh         # one process
#   NP=2 examples/fashion_mnist/train_lenet.sh    # 2 MPI ranks (global batch 128)
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
need_data data/fashion_mnist/get_fashion_mnist.sh data/fashion_mnist/fashion_mnist_train_lmdb \
  data/fashion_mnist/fashion_mnist_test_lmdb
log="examples/fashion_mnist/lenet_np${NP:-1}.log"
doppio_train "$log" --solver=examples/fashion_mnist/lenet_solver.prototxt "$@"
report "$log"
