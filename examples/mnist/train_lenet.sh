#!/usr/bin/env bash
# LeNet on MNIST with Caffe's published solver (models/lenet/solver.prototxt: batch 64 per
# rank, 10,000 iterations, lr 0.01 with the "inv" policy).
#   examples/mnist/train_lenet.sh             # one process
#   NP=2 examples/mnist/train_lenet.sh        # 2 MPI ranks (global batch 128)
# See examples/launch.sh for HOSTFILE and LAUNCHER (several machines, Slurm).
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
need_data data/mnist/get_mnist.sh data/mnist/mnist_train_lmdb data/mnist/mnist_test_lmdb
log="examples/mnist/lenet_np${NP:-1}.log"
doppio_train "$log" --solver=models/lenet/solver.prototxt "$@"
report "$log"
