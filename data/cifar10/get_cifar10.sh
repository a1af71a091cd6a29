#!/usr/bin/env bash
# Obtains CIFAR-10 (binary version) and builds data/cifar10/cifar10_train_lmdb,
# data/cifar10/cifar10_test_lmdb and data/cifar10/mean.binaryproto (the paths
# models/cifar10_quick and models/cifar10_full read).
#
# Uses, first that exists: data/cifar10/cifar-10-batches-bin/ (the unpacked archive),
# data/cifar10/cifar-10-binary.tar.gz, or a download of that archive. With no network it
# says what to fetch and where to put it. Needs build/tools/convert_cifar_data and
# compute_image_mean (scripts/setup.sh builds them; DOPPIO_TOOLS=folder points elsewhere).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools="${DOPPIO_TOOLS:-$root/build/tools}"
url="https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
cd "$here"

for tool in convert_cifar_data compute_image_mean; do
  if [ ! -x "$tools/$tool" ]; then
    echo "get_cifar10: $tools/$tool not found; build first (scripts/setup.sh)" >&2
    exit 1
  fi
done

batches=cifar-10-batches-bin
have_batches() {
  local f
  for f in data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin; do
    [ -s "$batches/$f" ] || return 1
  done
}

if ! have_batches && [ ! -s cifar-10-binary.tar.gz ]; then
  echo "get_cifar10: downloading $url"
  if curl -fsSL --connect-timeout 5 --max-time 900 -o cifar-10-binary.tar.gz.part "$url"; then
    mv cifar-10-binary.tar.gz.part cifar-10-binary.tar.gz
  else
    rm -f cifar-10-binary.tar.gz.part
    cat >&2 << MESSAGE
get_cifar10: CIFAR-10 cannot be downloaded from this machine.
  Fetch the binary version, cifar-10-binary.tar.gz (about 162 MB), from
    $url
  on a machine with network access and put it at
    $here/cifar-10-binary.tar.gz
  (or unpack it so that $here/$batches/ holds data_batch_1.bin .. data_batch_5.bin and
  test_batch.bin), then run this script again.
MESSAGE
    exit 1
  fi
fi
if ! have_batches; then
  tar -xzf cifar-10-binary.tar.gz
fi
if ! have_batches; then
  echo "get_cifar10: cifar-10-binary.tar.gz did not unpack to $batches/ with the six .bin files" >&2
  exit 1
fi

rm -rf cifar10_train_lmdb cifar10_test_lmdb
"$tools/convert_cifar_data" "$batches" .
"$tools/compute_image_mean" cifar10_train_lmdb mean.binaryproto
echo "get_cifar10: built data/cifar10/cifar10_train_lmdb, cifar10_test_lmdb and mean.binaryproto"
