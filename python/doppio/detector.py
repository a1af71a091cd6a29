"""Windowed detection: classify many crops of images at once, as
pycaffe's ``caffe.Detector``.

Windows are given by the caller, or proposed by Selective Search when the
``selective_search_ijcv_with_python`` package (which runs MATLAB) is
installed.  The context padding follows R-CNN (Girshick et al., "Rich
feature hierarchies for accurate object detection and semantic
segmentation", arXiv:1311.2524).
"""

import os

import numpy as np

from . import io
from ._doppio import TEST
from .pycaffe import Net


class Detector(Net):
    """A Net in the TEST phase that classifies windows of images.

    ``mean``, ``input_scale``, ``raw_scale`` and ``channel_swap`` configure
    ``self.transformer`` (see io.Transformer).  With ``context_pad`` each
    window is enlarged so that a border of that many pixels of the net's
    input shows the window's surroundings, as in R-CNN; parts of that
    border outside the image are filled with the mean.
    """

    def __init__(self, model_file, pretrained_file, mean=None,
                 input_scale=None, raw_scale=None, channel_swap=None,
                 context_pad=None):
        Net.__init__(self, model_file, TEST, weights=pretrained_file)
        in_ = self.inputs[0]
        self.transformer = io.image_transformer(
            in_, self.blobs[in_].data.shape, mean=mean, input_scale=input_scale,
            raw_scale=raw_scale, channel_swap=channel_swap)
        self.configure_crop(context_pad)

    def detect_windows(self, images_windows):
        """Classify windows of images.

        ``images_windows`` is an iterable of (image filename, windows), each
        window (ymin, xmin, ymax, xmax) in pixels.  Returns one dict per
        window, in order, with keys 'filename', 'window' and 'prediction'
        (the net's first output for that window).
        """
        images_windows = [(fname, list(windows))
                          for fname, windows in images_windows]
        window_inputs = []
        for fname, windows in images_windows:
            image = io.load_image(fname).astype(np.float32)
            for window in windows:
                window_inputs.append(self.crop(image, window))
        if not window_inputs:
            raise ValueError('detect_windows needs at least one window')

        in_ = self.inputs[0]
        caffe_in = np.stack([self.transformer.preprocess(in_, window_in)
                             for window_in in window_inputs])
        out = self.forward_all(**{in_: caffe_in})
        predictions = out[self.outputs[0]]

        detections = []
        ix = 0
        for fname, windows in images_windows:
            for window in windows:
                detections.append({'window': window,
                                   'prediction': predictions[ix],
                                   'filename': fname})
                ix += 1
        return detections

    def detect_selective_search(self, image_fnames):
        """Classify the Selective Search proposals of each image.

        Needs the ``selective_search_ijcv_with_python`` package and MATLAB;
        raises ImportError saying so when the package is missing.
        """
        try:
            import selective_search_ijcv_with_python as selective_search
        except ImportError as err:
            raise ImportError(
                'detect_selective_search needs the '
                'selective_search_ijcv_with_python package (and MATLAB), '
                'which is not installed; pass your own windows to '
                'detect_windows instead') from err
        # MATLAB runs in another directory, so it needs absolute paths.
        image_fnames = [os.path.abspath(f) for f in image_fnames]
        windows_list = selective_search.get_windows(
            image_fnames, cmd='selective_search_rcnn')
        return self.detect_windows(zip(image_fnames, windows_list))

    def crop(self, im, window):
        """Return the crop of H x W x K image ``im`` for ``window``
        (ymin, xmin, ymax, xmax).

        Without context padding this is the window itself.  With it, the
        window is scaled up about its centre so that, once warped to the
        net's input size, a ``context_pad`` border holds its surroundings;
        the result then already has the input's size, with the mean where
        the enlarged box leaves the image.
        """
        y0, x0, y1, x1 = (int(v) for v in window[:4])
        if not self.context_pad:
            return im[y0:y1, x0:x1]

        crop_size = self.crop_dims[1]  # the input is taken to be square
        scale = crop_size / (1.0 * crop_size - 2 * self.context_pad)
        half_h = (y1 - y0 + 1) / 2.0
        half_w = (x1 - x0 + 1) / 2.0
        center = np.array([y0 + half_h, x0 + half_w] * 2)
        box = np.round(center + scale * np.array(
            [-half_h, -half_w, half_h, half_w]))
        scale_h = crop_size / (box[2] - box[0] + 1)
        scale_w = crop_size / (box[3] - box[1] + 1)
        # Where the enlarged box starts outside the image, the crop is
        # placed that far (in input pixels) into the mean-filled canvas.
        pad_y = int(round(max(0, -box[0]) * scale_h))
        pad_x = int(round(max(0, -box[1]) * scale_w))

        im_h, im_w = im.shape[:2]
        box = np.clip(box, 0, [im_h, im_w, im_h, im_w]).astype(int)
        clip_h = box[2] - box[0] + 1
        clip_w = box[3] - box[1] + 1
        crop_h = min(int(round(clip_h * scale_h)), crop_size - pad_y)
        crop_w = min(int(round(clip_w * scale_w)), crop_size - pad_x)
        if box[2] <= box[0] or box[3] <= box[1] or crop_h <= 0 \
                or crop_w <= 0:
            raise ValueError('window {} lies outside the {} x {} image'
                             .format(tuple(window), im_h, im_w))

        context_crop = io.resize_image(im[box[0]:box[2], box[1]:box[3]],
                                       (crop_h, crop_w))
        crop = np.ones(self.crop_dims, dtype=np.float32) * self.crop_mean
        crop[pad_y:pad_y + crop_h, pad_x:pad_x + crop_w] = context_crop
        return crop

    def configure_crop(self, context_pad):
        """Set the crop size (the net input's H x W x K) and the context
        padding, and with padding the mean that fills the border outside
        the image, taken back to the unprocessed image's layout, channel
        order and scale."""
        in_ = self.inputs[0]
        transpose = self.transformer.transpose[in_]
        to_image = np.argsort(transpose)
        self.crop_dims = np.array(self.blobs[in_].data.shape[1:])[to_image]
        self.context_pad = context_pad
        if not self.context_pad:
            return
        mean = self.transformer.mean.get(in_)
        if mean is None:
            self.crop_mean = np.zeros(self.crop_dims, dtype=np.float32)
            return
        crop_mean = mean.transpose(to_image)
        channel_swap = self.transformer.channel_swap.get(in_)
        if channel_swap is not None:
            crop_mean = crop_mean[:, :, np.argsort(channel_swap)]
        raw_scale = self.transformer.raw_scale.get(in_)
        if raw_scale is not None:
            crop_mean = crop_mean / raw_scale
        self.crop_mean = crop_mean
