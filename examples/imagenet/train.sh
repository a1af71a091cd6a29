#!/usr/bin/env bash
# Trains an ImageNet (ILSVRC-2012) model with its published solver:
#   examples/imagenet/train.sh alexnet | googlenet | resnet50  [more doppio train flags]
#   NP=8 HOSTFILE=hosts examples/imagenet/train.sh resnet50
#   RESUME=models/alexnet/alexnet_train_iter_10000.solverstate examples/imagenet/train.sh alexnet
# Needs data/ilsvrc12/ilsvrc12_{train,val}_lmdb and imagenet_mean.binaryproto, built by
# data/ilsvrc12/create_imagenet.sh (see data/ilsvrc12/README.md). batch_size in the
# train_val prototxts is per rank; see examples/imagenet/README.md for the global batch.
set -euo pipefail
cd "$(dirname "$0")/../.."
source examples/launch.sh
model="${1:-}"
case "$model" in
  alexnet | googlenet | resnet50) shift ;;
  *)
    echo "usage: examples/imagenet/train.sh alexnet|googlenet|resnet50 [doppio train flags]" >&2
    exit 2
    ;;
esac
for path in data/ilsvrc12/ilsvrc12_train_lmdb data/ilsvrc12/ilsvrc12_val_lmdb \
  data/ilsvrc12/imagenet_mean.binaryproto; do
  if [ ! -e "$path" ] && [ -z "${DRY_RUN:-}" ]; then
    echo "$path is missing: build it with data/ilsvrc12/create_imagenet.sh (data/ilsvrc12/README.md)" >&2
    exit 1
  fi
done
flags=(--solver="models/$model/solver.prototxt")
[ -z "${RESUME:-}" ] || flags+=(--snapshot="$RESUME")
log="examples/imagenet/${model}_np${NP:-1}.log"
doppio_train "$log" "${flags[@]}" "$@"
report "$log"
