#!/usr/bin/env bash
# The MNIST autoencoder trained by Nesterov's accelerated gradient
# (examples/mnist/mnist_autoencoder_solver_nesterov.prototxt); see train_mnist_autoencoder.sh.
#   NP=2 examples/mnist/train_mnist_autoencoder_nesterov.sh
AUTOENCODER_SOLVER=nesterov exec "$(dirname "$0")/train_mnist_autoencoder.sh" "$@"
