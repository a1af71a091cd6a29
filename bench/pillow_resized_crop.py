"""Pillow + numpy doing bench_data_pipeline's full-size case in one thread.

Decodes each JPEG file (read into memory first, as the LMDB records are), takes a
torchvision RandomResizedCrop (scale 0.08-1, ratio 3/4-4/3, 10 tries, then the centre
crop) resized to 224 x 224 with Pillow's bilinear filter, flips half the records, and
subtracts the per-channel mean into a float32 C x H x W array: torchvision's
RandomResizedCrop and RandomHorizontalFlip, then the mean. Prints the best records per
second of --repeats timed runs of about --seconds each.

    python3 bench/pillow_resized_crop.py FOLDER [--seconds 2] [--repeats 3]
"""

import argparse
import io
import math
import os
import random
import sys
import time

import numpy as np
from PIL import Image

SIZE = 224
MEAN = np.array([123, 117, 104], dtype=np.float32).reshape(3, 1, 1)


def window(width, height, rng):
    """torchvision.transforms.RandomResizedCrop.get_params."""
    area = width * height
    log_ratio = (math.log(3 / 4), math.log(4 / 3))
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, width - w), rng.randint(0, height - h), w, h
    ratio = width / height
    if ratio < 3 / 4:
        w, h = width, int(round(width / (3 / 4)))
    elif ratio > 4 / 3:
        w, h = int(round(height * (4 / 3))), height
    else:
        w, h = width, height
    return (width - w) // 2, (height - h) // 2, w, h


def transform(data, rng):
    image = Image.open(io.BytesIO(data)).convert("RGB")
    x, y, w, h = window(image.width, image.height, rng)
    image = image.resize((SIZE, SIZE), Image.BILINEAR, box=(x, y, x + w, y + h))
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    pixels = np.asarray(image, dtype=np.float32).transpose(2, 0, 1)
    return pixels - MEAN


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    names = sorted(os.listdir(args.folder))
    if not names:
        sys.exit(f"pillow_resized_crop: no files in {args.folder}")
    records = []
    for name in names:
        with open(os.path.join(args.folder, name), "rb") as file:
            records.append(file.read())
    rng = random.Random(1)
    start = time.perf_counter()
    warm = 0
    while warm < 20 or time.perf_counter() - start < 0.2:
        transform(records[warm % len(records)], rng)
        warm += 1
    per_record = (time.perf_counter() - start) / warm
    count = max(20, int(args.seconds / args.repeats / per_record))
    best = 0.0
    for _ in range(args.repeats):
        start = time.perf_counter()
        for i in range(count):
            transform(records[i % len(records)], rng)
        best = max(best, count / (time.perf_counter() - start))
    print(f"{best:.1f}")


if __name__ == "__main__":
    main()
