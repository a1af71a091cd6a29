"""The base class of layers written in Python (caffe.Layer)."""


class Layer:
    """A layer of type "Python": python_param { module: "m" layer: "ThisClass" }.

    Before __init__(param) runs (param: the layer's LayerParameter), Doppio gives the object `param_str` (also as `param_str_`, as
    py-faster-rcnn reads it), `phase` (TRAIN or TEST), `shard_rank` and `shard_size` (the
    part of the data this rank reads in a data-parallel job: 0 and 1 otherwise) and
    `blobs`, the layer's parameter blobs (add them in setup with blobs.add_blob(*shape)).
    setup, reshape, forward and backward get lists of Blob; backward also gets
    propagate_down, one bool per bottom.
    """

    type = 'Python'

    def __init__(self, param=None):
        """pycaffe passes the layer's LayerParameter; Doppio too (param_str & co. are
        attributes already). A subclass's __init__(self, param) may call this."""
        self.layer_param = param

    def setup(self, bottom, top):
        """Reads param_str and checks the bottoms; nothing by default."""

    def reshape(self, bottom, top):
        raise NotImplementedError('%s defines no reshape(bottom, top)'
                                  % type(self).__name__)

    def forward(self, bottom, top):
        raise NotImplementedError('%s defines no forward(bottom, top)'
                                  % type(self).__name__)

    def backward(self, top, propagate_down, bottom):
        raise NotImplementedError('%s defines no backward(top, propagate_down, bottom)'
                                  % type(self).__name__)
