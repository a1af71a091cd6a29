"""Classify images with a trained net, as pycaffe's ``caffe.Classifier``."""

import numpy as np

from . import io
from ._doppio import TEST
from .pycaffe import Net


class Classifier(Net):
    """A Net in the TEST phase that predicts class probabilities of images.

    Images are resized to ``image_dims`` and then cropped to the net's
    input size: ten crops (corners, centre and mirrors) averaged, or the
    centre crop alone.  ``mean``, ``input_scale``, ``raw_scale`` and
    ``channel_swap`` configure ``self.transformer`` (see io.Transformer);
    images are H x W x K arrays as io.load_image returns them.
    """

    def __init__(self, model_file, pretrained_file, image_dims=None,
                 mean=None, input_scale=None, raw_scale=None,
                 channel_swap=None):
        Net.__init__(self, model_file, TEST, weights=pretrained_file)
        in_ = self.inputs[0]
        self.transformer = io.image_transformer(
            in_, self.blobs[in_].data.shape, mean=mean, input_scale=input_scale,
            raw_scale=raw_scale, channel_swap=channel_swap)

        self.crop_dims = np.array(self.blobs[in_].data.shape[2:])
        if image_dims is None:
            image_dims = self.crop_dims
        self.image_dims = np.array(image_dims)
        if (self.image_dims < self.crop_dims).any():
            raise ValueError('image_dims {} are smaller than the net input '
                             '{} of {!r}'.format(tuple(self.image_dims),
                                                 tuple(self.crop_dims), in_))

    def predict(self, inputs, oversample=True):
        """Return an N x C array of class probabilities for N images.

        With ``oversample`` each image's prediction is the mean over its
        ten crops; otherwise only its centre crop is classified.
        """
        inputs = list(inputs)
        if not inputs:
            raise ValueError('predict needs at least one image')
        channels = inputs[0].shape[2]
        resized = np.zeros((len(inputs), self.image_dims[0],
                            self.image_dims[1], channels), dtype=np.float32)
        for ix, image in enumerate(inputs):
            resized[ix] = io.resize_image(image, self.image_dims)

        if oversample:
            crops = io.oversample(resized, self.crop_dims)
        else:
            top, left = (self.image_dims - self.crop_dims) // 2
            crops = resized[:, top:top + self.crop_dims[0],
                            left:left + self.crop_dims[1], :]

        in_ = self.inputs[0]
        caffe_in = np.stack([self.transformer.preprocess(in_, crop)
                             for crop in crops])
        out = self.forward_all(**{in_: caffe_in})
        predictions = out[self.outputs[0]]
        if oversample:
            predictions = predictions.reshape(
                (len(predictions) // 10, 10, -1)).mean(axis=1)
        return predictions
