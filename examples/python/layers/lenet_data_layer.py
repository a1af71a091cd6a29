"""A data layer written in Python: MNIST digits from the idx files, batch by batch.

Used by examples/python/lenet_python_data.prototxt as
    python_param { module: "lenet_data_layer" layer: "LeNetDataLayer" param_str: '{...}' }
param_str is JSON: "images" and "labels" (MNIST idx files), "batch_size", and optionally
"scale" (default 1/256, as the Data layers' transform_param) and "shuffle" (default false).
In a data-parallel job each rank reads its shard: every shard_size-th digit from
shard_rank on (0 and 1 outside a job), so batch_size is per rank, as for Data layers.
"""
import json

import numpy as np

import caffe


def _read_idx(path, header_bytes):
    return np.fromfile(path, dtype=np.uint8)[header_bytes:]


class LeNetDataLayer(caffe.Layer):

    def setup(self, bottom, top):
        if len(bottom) != 0 or len(top) != 2:
            raise ValueError('LeNetDataLayer takes no bottoms and gives two tops '
                             '(data, label), not %d and %d' % (len(bottom), len(top)))
        params = json.loads(self.param_str)
        self.batch_size = int(params['batch_size'])
        scale = float(params.get('scale', 1.0 / 256))
        images = _read_idx(params['images'], 16).reshape(-1, 1, 28, 28)
        labels = _read_idx(params['labels'], 8)
        # This rank's shard.
        self.images = images[self.shard_rank::self.shard_size].astype(np.float32) * scale
        self.labels = labels[self.shard_rank::self.shard_size].astype(np.float32)
        self.shuffle = bool(params.get('shuffle', False)) and self.phase == caffe.TRAIN
        self.rng = np.random.RandomState(self.shard_rank)
        self.order = np.arange(len(self.labels))
        self.cursor = 0

    def reshape(self, bottom, top):
        top[0].reshape(self.batch_size, *self.images.shape[1:])
        top[1].reshape(self.batch_size)

    def forward(self, bottom, top):
        indices = []
        while len(indices) < self.batch_size:
            if self.cursor == 0 and self.shuffle:
                self.rng.shuffle(self.order)
            take = min(self.batch_size - len(indices), len(self.order) - self.cursor)
            indices.extend(self.order[self.cursor:self.cursor + take])
            self.cursor = (self.cursor + take) % len(self.order)
        top[0].data[...] = self.images[indices]
        top[1].data[...] = self.labels[indices]

    def backward(self, top, propagate_down, bottom):
        pass  # a data layer has no bottoms to send gradients to
