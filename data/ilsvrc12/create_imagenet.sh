#!/usr/bin/env bash
# Builds the ImageNet (ILSVRC12) LMDBs and mean from a user-supplied copy of the images:
#   data/ilsvrc12/ilsvrc12_train_lmdb, ilsvrc12_val_lmdb, imagenet_mean.binaryproto
# (the paths models/alexnet, googlenet and resnet50 read). See README.md beside this file.
#
# Environment (defaults in brackets):
#   TRAIN_DATA_ROOT  folder of the training images, one subfolder per class [required]
#   VAL_DATA_ROOT    folder of the validation images [required]
#   TRAIN_LIST       "relative/path label" lines [data/ilsvrc12/train.txt; made from the
#                    class subfolders of TRAIN_DATA_ROOT, labels in sorted folder order, when
#                    missing]
#   VAL_LIST         the same for validation [data/ilsvrc12/val.txt; required]
#   RESIZE           resize every image to RESIZE_HEIGHT x RESIZE_WIDTH [true]
#   RESIZE_HEIGHT, RESIZE_WIDTH [256, 256]
#   ENCODED          store JPEG bytes instead of raw pixels (about 10x smaller) [false]
#   DOPPIO_TOOLS     folder of the converter tools [build/tools]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tools="${DOPPIO_TOOLS:-$root/build/tools}"
: "${TRAIN_DATA_ROOT:?set TRAIN_DATA_ROOT to the folder of the training images (see data/ilsvrc12/README.md)}"
: "${VAL_DATA_ROOT:?set VAL_DATA_ROOT to the folder of the validation images (see data/ilsvrc12/README.md)}"
TRAIN_LIST="${TRAIN_LIST:-$here/train.txt}"
VAL_LIST="${VAL_LIST:-$here/val.txt}"
RESIZE="${RESIZE:-true}"
RESIZE_HEIGHT="${RESIZE_HEIGHT:-256}"
RESIZE_WIDTH="${RESIZE_WIDTH:-256}"
ENCODED="${ENCODED:-false}"

for tool in convert_imageset compute_image_mean; do
  if [ ! -x "$tools/$tool" ]; then
    echo "create_imagenet: $tools/$tool not found; build first (scripts/setup.sh)" >&2
    exit 1
  fi
done
for folder in "$TRAIN_DATA_ROOT" "$VAL_DATA_ROOT"; do
  if [ ! -d "$folder" ]; then
    echo "create_imagenet: $folder is not a folder" >&2
    exit 1
  fi
done

if [ ! -s "$TRAIN_LIST" ]; then
  echo "create_imagenet: $TRAIN_LIST missing; listing $TRAIN_DATA_ROOT (one class per subfolder)"
  label=0
  : > "$TRAIN_LIST.part"
  while IFS= read -r class; do
    (cd "$TRAIN_DATA_ROOT" && find "$class" -type f \( -iname '*.jpeg' -o -iname '*.jpg' -o -iname '*.png' \) |
      LC_ALL=C sort | sed "s/\$/ $label/") >> "$TRAIN_LIST.part"
    label=$((label + 1))
  done < <(cd "$TRAIN_DATA_ROOT" && find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | LC_ALL=C sort)
  mv "$TRAIN_LIST.part" "$TRAIN_LIST"
  echo "create_imagenet: $label classes, $(wc -l < "$TRAIN_LIST") images in $TRAIN_LIST"
fi
if [ ! -s "$VAL_LIST" ]; then
  echo "create_imagenet: $VAL_LIST missing: give the validation labels as 'file.JPEG label' lines" >&2
  echo "  with the same label numbering as $TRAIN_LIST (see data/ilsvrc12/README.md)" >&2
  exit 1
fi

flags=(--shuffle)
if [ "$RESIZE" = true ]; then
  flags+=(--resize_height="$RESIZE_HEIGHT" --resize_width="$RESIZE_WIDTH")
fi
if [ "$ENCODED" = true ]; then
  flags+=(--encoded --encode_type=jpg)
fi

cd "$here"
rm -rf ilsvrc12_train_lmdb ilsvrc12_val_lmdb
"$tools/convert_imageset" "${flags[@]}" "${TRAIN_DATA_ROOT%/}/" "$TRAIN_LIST" ilsvrc12_train_lmdb
"$tools/convert_imageset" "${flags[@]}" "${VAL_DATA_ROOT%/}/" "$VAL_LIST" ilsvrc12_val_lmdb
"$tools/compute_image_mean" ilsvrc12_train_lmdb imagenet_mean.binaryproto
echo "create_imagenet: built data/ilsvrc12/ilsvrc12_train_lmdb, ilsvrc12_val_lmdb and imagenet_mean.binaryproto"
