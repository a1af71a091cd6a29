#!/usr/bin/env bash
# The MNIST autoencoder trained by AdaGrad
# (examples/mnist/mnist_autoencoder_solver_adagrad.prototxt); see train_mnist_autoencoder.sh.
#   NP=2 examples/mnist/train_mnist_autoencoder_adagrad.sh
AUTOENCODER_SOLVER=adagrad exec "$(dirname "$0")/train_mnist_autoencoder.sh" "$@"
