#!/usr/bin/env bash
# Obtains Fashion-MNIST (60,000 training and 10,000 test images of 10 kinds of clothing, in
# MNIST's idx format) and builds data/fashion_mnist/fashion_mnist_train_lmdb and
# fashion_mnist_test_lmdb.
#
# Where the files come from, first that works:
# 1. idx files already in data/fashion_mnist/;
# 2. Debian's package dataset-fashion-mnist, installed (/usr/share/datasets/fashion-mnist);
# 3. the same package fetched with `apt-get download` and unpacked here (no root needed);
# 4. a download of the original files (short timeouts).
# Needs build/tools/convert_mnist_data (scripts/setup.sh builds it; DOPPIO_TOOLS=folder
# points elsewhere).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools="${DOPPIO_TOOLS:-$root/build/tools}"
cd "$here"

if [ ! -x "$tools/convert_mnist_data" ]; then
  echo "get_fashion_mnist: $tools/convert_mnist_data not found; build first (scripts/setup.sh)" >&2
  exit 1
fi

files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
have_all() {
  local f
  for f in "${files[@]}"; do [ -s "$f" ] || return 1; done
}
# Unpacks the four .gz files from folder $1 into data/fashion_mnist/.
take_from() {
  local f
  for f in "${files[@]}"; do [ -s "$1/$f.gz" ] || return 1; done
  for f in "${files[@]}"; do gunzip -c "$1/$f.gz" > "$f.part" && mv "$f.part" "$f"; done
}

source_note="existing idx files in data/fashion_mnist/"
[ -s SOURCE ] && source_note="$(cat SOURCE)"
package_dir=/usr/share/datasets/fashion-mnist
if ! have_all && take_from "$package_dir" 2> /dev/null; then
  source_note="Debian's package dataset-fashion-mnist ($package_dir)"
fi
if ! have_all && command -v apt-get > /dev/null; then
  echo "get_fashion_mnist: fetching Debian's package dataset-fashion-mnist"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  if (cd "$work" && apt-get download -q dataset-fashion-mnist > /dev/null 2>&1) &&
    dpkg-deb -x "$work"/dataset-fashion-mnist_*.deb "$work/root" &&
    take_from "$work/root$package_dir"; then
    source_note="Debian's package dataset-fashion-mnist (apt-get download)"
  else
    echo "get_fashion_mnist: apt-get download failed (run 'apt-get update' first?)"
  fi
fi
if ! have_all; then
  mirror="http://fashion-mnist.s3-website.eu-central-1.amazonaws.com"
  echo "get_fashion_mnist: trying $mirror"
  for f in "${files[@]}"; do
    curl -fsSL --connect-timeout 5 --max-time 300 -o "$f.gz" "$mirror/$f.gz" || break
    gunzip -f "$f.gz"
  done
  rm -f ./*.gz
  have_all && source_note="the original files from $mirror"
fi
if ! have_all; then
  echo "get_fashion_mnist: could not obtain Fashion-MNIST. Install Debian's package" >&2
  echo "  (apt-get install dataset-fashion-mnist) or put the four idx files" >&2
  echo "  (${files[*]}) into $here" >&2
  exit 1
fi

echo "$source_note" > SOURCE
rm -rf fashion_mnist_train_lmdb fashion_mnist_test_lmdb
"$tools/convert_mnist_data" train-images-idx3-ubyte train-labels-idx1-ubyte fashion_mnist_train_lmdb
"$tools/convert_mnist_data" t10k-images-idx3-ubyte t10k-labels-idx1-ubyte fashion_mnist_test_lmdb
echo "get_fashion_mnist: built data/fashion_mnist/fashion_mnist_train_lmdb and fashion_mnist_test_lmdb from $source_note"
