#!/usr/bin/env bash
# The MNIST autoencoder trained by AdaDelta
# (examples/mnist/mnist_autoencoder_solver_adadelta.prototxt); see train_mnist_autoencoder.sh.
#   NP=2 examples/mnist/train_mnist_autoencoder_adadelta.sh
AUTOENCODER_SOLVER=adadelta exec "$(dirname "$0")/train_mnist_autoencoder.sh" "$@"
