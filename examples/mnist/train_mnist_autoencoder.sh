#!/usr/bin/env bash
# Caffe's MNIST autoencoder (examples/mnist/mnist_autoencoder.prototxt) with Caffe's SGD
# schedule (mnist_autoencoder_solver.prototxt: batch 100 per rank, 65,000 iterations, lr 0.01
# divided by 10 every 10,000, scored every 500 iterations on the training and the test digits).
#   examples/mnist/train_mnist_autoencoder.sh          # one process
#   NP=2 examples/mnist/train_mnist_autoencoder.sh     # 2 MPI ranks (global batch 200)
# train_mnist_autoencoder_{adadelta,adagrad,nesterov}.sh run it with the other solvers
# (AUTOENCODER_SOLVER names the variant). See examples/launch.sh for HOSTFILE and LAUNCHER.
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
variant="${AUTOENCODER_SOLVER:-}"
need_data data/mnist/get_mnist.sh data/mnist/mnist_train_lmdb data/mnist/mnist_test_lmdb
log="examples/mnist/mnist_autoencoder${variant:+_$variant}_np${NP:-1}.log"
doppio_train "$log" \
  --solver="examples/mnist/mnist_autoencoder_solver${variant:+_$variant}.prototxt" "$@"
report "$log"
