"""A Python data layer that reads its rank's shard, block-cyclic as Doppio's Data layer
does: of each run of shard_size * batch consecutive records, rank r reads the batch
starting at r * batch. So N ranks of batch B read what one process of batch N * B reads."""
import numpy as np

import caffe

RECORDS = np.random.RandomState(3).randn(64, 6).astype(np.float32)
LABELS = (np.abs(RECORDS[:, 0] * 2).astype(int) % 3).astype(np.float32)


class ShardData(caffe.Layer):
    def setup(self, bottom, top):
        self.batch = int(self.param_str)
        self.calls = 0
        self.first_records = []

    def reshape(self, bottom, top):
        top[0].reshape(self.batch, RECORDS.shape[1])
        top[1].reshape(self.batch)

    def forward(self, bottom, top):
        start = (self.calls * self.shard_size + self.shard_rank) * self.batch
        rows = np.arange(start, start + self.batch) % len(RECORDS)
        self.first_records.append(int(rows[0]))
        top[0].data[...] = RECORDS[rows]
        top[1].data[...] = LABELS[rows]
        self.calls += 1

    def backward(self, top, propagate_down, bottom):
        pass
