#!/usr/bin/env bash
# Builds the ImageNet (ILSVRC12) LMDBs and mean from a user-supplied copy of the images:
#   data/ilsvrc12/ilsvrc12_train_lmdb, ilsvrc12_val_lmdb, imagenet_mean.binaryproto
# (the paths models/alexnet, googlenet and resnet50 read). See README.md beside this file.
#
# Environment (defaults in brackets):
#   TRAIN_DATA_ROOT  folder of the training images, one subfolder per class [required]
#   VAL_DATA_ROOT    folder of the validation images [required]
#   OUTPUT_DIR       where the LMDBs, the mean and the made lists go [data/ilsvrc12]
#   TRAIN_LIST       "relative/path label" lines [OUTPUT_DIR/train.txt; made from the
#                    class subfolders of TRAIN_DATA_ROOT, labels in sorted folder order, when
#                    missing]
#   VAL_LIST         the same for validation [OUTPUT_DIR/val.txt; made from VAL_LABELS when
#                    missing]
#   VAL_LABELS       the validation images' synsets, to make VAL_LIST from: Kaggle's
#                    LOC_val_solution.csv ("ILSVRC2012_val_00000001,n01751748 ...") or
#                    "file synset" lines; numbered as the training class folders
#   FULL_SIZE        keep each JPEG's own bytes, unresized (the input of random-resized
#                    crops, docs/data_transforms.md): RESIZE=false ENCODED=true, no mean
#                    image (give mean_value) [false]
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
OUTPUT_DIR="${OUTPUT_DIR:-$here}"
mkdir -p "$OUTPUT_DIR"
OUTPUT_DIR="$(cd "$OUTPUT_DIR" && pwd)"
TRAIN_LIST="${TRAIN_LIST:-$OUTPUT_DIR/train.txt}"
VAL_LIST="${VAL_LIST:-$OUTPUT_DIR/val.txt}"
VAL_LABELS="${VAL_LABELS:-}"
FULL_SIZE="${FULL_SIZE:-false}"
RESIZE="${RESIZE:-true}"
RESIZE_HEIGHT="${RESIZE_HEIGHT:-256}"
RESIZE_WIDTH="${RESIZE_WIDTH:-256}"
ENCODED="${ENCODED:-false}"
if [ "$FULL_SIZE" = true ]; then
  RESIZE=false
  ENCODED=true
fi

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
if [ ! -s "$VAL_LIST" ] && [ -n "$VAL_LABELS" ]; then
  if [ ! -s "$VAL_LABELS" ]; then
    echo "create_imagenet: VAL_LABELS $VAL_LABELS is missing or empty" >&2
    exit 1
  fi
  # Label n is the n-th training class folder in sorted order, as in the training list.
  (cd "$TRAIN_DATA_ROOT" && find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | LC_ALL=C sort) \
    > "$VAL_LIST.synsets"
  if ! awk -v labels="$VAL_LABELS" '
      NR == FNR { number[$1] = NR - 1; next }
      FNR == 1 && $0 ~ /^ImageId,/ { next }
      {
        if (index($0, ",") > 0) { split($0, f, ","); split(f[2], p, " "); file = f[1] ".JPEG"; synset = p[1] }
        else { file = $1; synset = $2 }
        if (!(synset in number)) {
          printf "create_imagenet: %s line %d: synset %s is no training class folder\n", labels, FNR, synset > "/dev/stderr"
          exit 1
        }
        print file, number[synset]
      }' "$VAL_LIST.synsets" "$VAL_LABELS" | LC_ALL=C sort > "$VAL_LIST.part"; then
    rm -f "$VAL_LIST.synsets" "$VAL_LIST.part"
    exit 1
  fi
  rm -f "$VAL_LIST.synsets"
  mv "$VAL_LIST.part" "$VAL_LIST"
  echo "create_imagenet: $(wc -l < "$VAL_LIST") validation images labelled from $VAL_LABELS in $VAL_LIST"
fi
if [ ! -s "$VAL_LIST" ]; then
  echo "create_imagenet: $VAL_LIST missing: give the validation labels as 'file.JPEG label' lines" >&2
  echo "  with the same label numbering as $TRAIN_LIST, or VAL_LABELS (see data/ilsvrc12/README.md)" >&2
  exit 1
fi

flags=(--shuffle)
if [ "$RESIZE" = true ]; then
  flags+=(--resize_height="$RESIZE_HEIGHT" --resize_width="$RESIZE_WIDTH")
fi
if [ "$ENCODED" = true ]; then
  flags+=(--encoded --encode_type=jpg)
fi

cd "$OUTPUT_DIR"
rm -rf ilsvrc12_train_lmdb ilsvrc12_val_lmdb
"$tools/convert_imageset" "${flags[@]}" "${TRAIN_DATA_ROOT%/}/" "$TRAIN_LIST" ilsvrc12_train_lmdb
"$tools/convert_imageset" "${flags[@]}" "${VAL_DATA_ROOT%/}/" "$VAL_LIST" ilsvrc12_val_lmdb
if [ "$FULL_SIZE" = true ]; then
  echo "create_imagenet: built $OUTPUT_DIR/ilsvrc12_train_lmdb and ilsvrc12_val_lmdb (full-size JPEGs; no mean image: use mean_value)"
else
  "$tools/compute_image_mean" ilsvrc12_train_lmdb imagenet_mean.binaryproto
  echo "create_imagenet: built $OUTPUT_DIR/ilsvrc12_train_lmdb, ilsvrc12_val_lmdb and imagenet_mean.binaryproto"
fi
