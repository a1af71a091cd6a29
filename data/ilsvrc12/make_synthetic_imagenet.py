"""Writes a synthetic ImageNet: photograph-like JPEGs in ILSVRC 2012's own layout.

    make_synthetic_imagenet.py OUT [--classes 10] [--train-per-class 20] [--val 50]
                               [--quality 90] [--seed 1]

OUT/train/<synset>/<synset>_<i>.JPEG, OUT/val/ILSVRC2012_val_<n>.JPEG and
OUT/LOC_val_solution.csv (the validation labels as Kaggle's ILSVRC copy gives them), which
create_imagenet.sh turns into JPEG LMDBs (FULL_SIZE=true) for benchmarks and tests
without the real data. Sizes follow ImageNet's: most images 500 pixels on their long side
at 4:3, 3:2 or 5:4, landscape three times in four, the rest between 150 and 800 pixels at
other ratios. Pixels are smooth random fields with shapes, edges and sensor-like noise, so
that they compress like photographs (about 65 KB at 500 x 375, quality 90; real ImageNet
JPEGs average about 110 KB).
"""

import argparse
import os
import random

import numpy as np
from PIL import Image, ImageDraw

COMMON_RATIOS = [(4 / 3, 0.55), (3 / 2, 0.25), (5 / 4, 0.12), (1.0, 0.08)]


def image_size(rng):
    if rng.random() < 0.8:
        ratio = rng.choices([r for r, _ in COMMON_RATIOS], [w for _, w in COMMON_RATIOS])[0]
        long_side = 500
    else:
        ratio = rng.uniform(1.0, 2.0)
        long_side = rng.randint(150, 800)
    short_side = max(1, int(round(long_side / ratio)))
    if rng.random() < 0.75:
        return long_side, short_side
    return short_side, long_side


def photo(width, height, rng, np_rng):
    # A smooth field: random colours on a coarse grid, upsampled bicubically.
    grid = np_rng.integers(0, 256, (max(2, height // 25), max(2, width // 25), 3), np.uint8)
    image = Image.fromarray(grid, "RGB").resize((width, height), Image.BICUBIC)
    draw = ImageDraw.Draw(image)
    for _ in range(rng.randint(3, 12)):
        x0, y0 = rng.randrange(width), rng.randrange(height)
        x1 = x0 + rng.randint(1, max(2, width // 2))
        y1 = y0 + rng.randint(1, max(2, height // 2))
        colour = tuple(rng.randrange(256) for _ in range(3))
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x1, y1), fill=colour)
        else:
            draw.rectangle((x0, y0, x1, y1), fill=colour)
    pixels = np.asarray(image, np.float32)
    pixels += np_rng.normal(0, 9, pixels.shape)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--train-per-class", type=int, default=20)
    parser.add_argument("--val", type=int, default=50)
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    np_rng = np.random.default_rng(args.seed)
    synsets = sorted({"n%08d" % rng.randrange(10**8) for _ in range(args.classes * 2)})
    synsets = sorted(rng.sample(synsets, args.classes))

    def save(image, path):
        image.save(path, "JPEG", quality=args.quality)

    for synset in synsets:
        folder = os.path.join(args.out, "train", synset)
        os.makedirs(folder, exist_ok=True)
        for i in range(args.train_per_class):
            width, height = image_size(rng)
            save(photo(width, height, rng, np_rng),
                 os.path.join(folder, "%s_%d.JPEG" % (synset, i)))
    os.makedirs(os.path.join(args.out, "val"), exist_ok=True)
    with open(os.path.join(args.out, "LOC_val_solution.csv"), "w") as labels:
        labels.write("ImageId,PredictionString\n")
        for n in range(1, args.val + 1):
            name = "ILSVRC2012_val_%08d" % n
            width, height = image_size(rng)
            save(photo(width, height, rng, np_rng),
                 os.path.join(args.out, "val", name + ".JPEG"))
            synset = rng.choice(synsets)
            labels.write("%s,%s 0 0 %d %d \n" % (name, synset, width - 1, height - 1))
    print("make_synthetic_imagenet: %d classes, %d training and %d validation JPEGs in %s"
          % (len(synsets), len(synsets) * args.train_per_class, args.val, args.out))


if __name__ == "__main__":
    main()
