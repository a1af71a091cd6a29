"""Array, image and protobuf conversions for feeding Doppio nets.

This module offers pycaffe's ``caffe.io`` API so that scripts written for
Caffe run unchanged: numpy arrays to and from ``BlobProto`` and ``Datum``
messages, image loading and resizing, ten-crop oversampling, and the
``Transformer`` that turns H x W x K images into a net's C x H x W input.
"""

import io as _bytes_io

import numpy as np
import skimage
import skimage.io
import skimage.transform

from .proto import doppio_pb2 as caffe_pb2


# Protobuf message <-> ndarray conversion

def blobproto_to_array(blob, return_diff=False):
    """Return a BlobProto's data (or its diff) as an ndarray.

    The legacy num/channels/height/width fields take precedence over
    ``shape`` when any of them is set, as Caffe reads old .caffemodel files
    that way.  Blobs saved in double precision (double_data/double_diff)
    are read too, since Caffe writes them for double nets.
    """
    if return_diff:
        values = blob.diff if len(blob.diff) else blob.double_diff
    else:
        values = blob.data if len(blob.data) else blob.double_data
    array = np.array(values)
    legacy = [f for f in ('num', 'channels', 'height', 'width')
              if blob.HasField(f)]
    if legacy:
        shape = (blob.num, blob.channels, blob.height, blob.width)
    else:
        shape = tuple(blob.shape.dim)
    if array.size != int(np.prod(shape)):
        raise ValueError('BlobProto holds {} {} values but its shape {} '
                         'needs {}'.format(array.size,
                                           'diff' if return_diff else 'data',
                                           shape, int(np.prod(shape))))
    return array.reshape(shape)


def array_to_blobproto(arr, diff=None):
    """Return a BlobProto holding ``arr`` (and ``diff`` when given).

    Values are stored as float32, the precision of Caffe's float blobs.
    """
    arr = np.asarray(arr)
    blob = caffe_pb2.BlobProto()
    blob.shape.dim.extend(arr.shape)
    blob.data.extend(arr.astype(np.float32).flat)
    if diff is not None:
        diff = np.asarray(diff)
        if diff.shape != arr.shape:
            raise ValueError('diff shape {} differs from data shape {}'
                             .format(diff.shape, arr.shape))
        blob.diff.extend(diff.astype(np.float32).flat)
    return blob


def arraylist_to_blobprotovector_str(arraylist):
    """Serialize a list of arrays as a BlobProtoVector byte string."""
    vec = caffe_pb2.BlobProtoVector()
    vec.blobs.extend(array_to_blobproto(arr) for arr in arraylist)
    return vec.SerializeToString()


def blobprotovector_str_to_arraylist(serialized):
    """Parse a serialized BlobProtoVector into a list of arrays."""
    vec = caffe_pb2.BlobProtoVector()
    vec.ParseFromString(serialized)
    return [blobproto_to_array(blob) for blob in vec.blobs]


def array_to_datum(arr, label=None):
    """Return a Datum holding a C x H x W array.

    A uint8 array is stored as raw bytes in ``data`` (what convert_imageset
    writes); any other dtype goes to ``float_data``.
    """
    arr = np.asarray(arr)
    if arr.ndim != 3:
        raise ValueError('array_to_datum needs a 3-d C x H x W array, '
                         'got shape {}'.format(arr.shape))
    datum = caffe_pb2.Datum()
    datum.channels, datum.height, datum.width = arr.shape
    if arr.dtype == np.uint8:
        datum.data = arr.tobytes()
    else:
        datum.float_data.extend(arr.astype(np.float32).flat)
    if label is not None:
        datum.label = label
    return datum


def datum_to_array(datum):
    """Return a Datum's C x H x W array (its label is ``datum.label``).

    Raw datums give uint8 arrays and float datums give float arrays.  An
    encoded datum (a JPEG or PNG file's bytes) is decoded into the array a
    raw datum of the same image would hold: uint8, C x H x W, channels in
    BGR order, since Caffe decodes images with OpenCV.
    """
    if datum.encoded:
        return _decode_datum(datum)
    shape = (datum.channels, datum.height, datum.width)
    size = int(np.prod(shape))
    if len(datum.data):
        array = np.frombuffer(datum.data, dtype=np.uint8)
        kind = 'data bytes'
    else:
        array = np.array(datum.float_data, dtype=float)
        kind = 'float_data values'
    if array.size != size:
        raise ValueError('Datum holds {} {} but its shape {} needs {}'
                         .format(array.size, kind, shape, size))
    return array.reshape(shape).copy()


def _decode_datum(datum):
    """Decode an encoded Datum's image bytes to a C x H x W BGR array."""
    try:
        image = skimage.io.imread(_bytes_io.BytesIO(datum.data))
    except (ValueError, OSError) as err:
        raise ValueError('cannot decode the encoded Datum ({} bytes): {}'
                         .format(len(datum.data), err)) from err
    if image.ndim == 2:
        image = image[:, :, np.newaxis]
    elif image.shape[2] == 4:
        image = image[:, :, :3]
    if image.shape[2] == 3:
        image = image[:, :, ::-1]
    return np.ascontiguousarray(image.transpose(2, 0, 1))


# Pre-processing

class Transformer:
    """Prepare H x W x K images for a net's inputs, and undo it.

    ``inputs`` maps each input blob's name to its shape (N, C, H, W).
    preprocess() applies, in this order: conversion to float32, resizing to
    the input's H x W, transpose, channel swap, raw scale, mean subtraction
    and input scale; deprocess() inverts them.  Nothing is configured by
    default, so each step is opted into with its setter.
    """

    def __init__(self, inputs):
        self.inputs = {name: tuple(shape) for name, shape in inputs.items()}
        self.transpose = {}
        self.channel_swap = {}
        self.raw_scale = {}
        self.mean = {}
        self.input_scale = {}

    def _check_input(self, in_):
        if in_ not in self.inputs:
            raise ValueError('{!r} is not one of the net inputs: {}'.format(
                in_, sorted(self.inputs)))

    def preprocess(self, in_, data):
        """Turn one H' x W' x K image into a C x H x W array for ``in_``.

        The caller's array is never modified.
        """
        self._check_input(in_)
        caffe_in = np.asarray(data).astype(np.float32, copy=False)
        in_dims = self.inputs[in_][2:]
        if caffe_in.shape[:2] != in_dims:
            caffe_in = resize_image(caffe_in, in_dims)
        transpose = self.transpose.get(in_)
        if transpose is not None:
            caffe_in = caffe_in.transpose(transpose)
        channel_swap = self.channel_swap.get(in_)
        if channel_swap is not None:
            caffe_in = caffe_in[list(channel_swap), :, :]
        raw_scale = self.raw_scale.get(in_)
        if raw_scale is not None:
            caffe_in = caffe_in * raw_scale
        mean = self.mean.get(in_)
        if mean is not None:
            caffe_in = caffe_in - mean
        input_scale = self.input_scale.get(in_)
        if input_scale is not None:
            caffe_in = caffe_in * input_scale
        expected = self.inputs[in_][1:]
        if caffe_in.shape != expected:
            raise ValueError('preprocess of input {!r}: image of shape {} '
                             'became {} but the input needs {}'.format(
                                 in_, np.shape(data), caffe_in.shape,
                                 expected))
        return caffe_in.astype(np.float32, copy=False)

    def deprocess(self, in_, data):
        """Invert preprocess(): a C x H x W array back to H x W x K.

        A leading batch axis of size 1 (a blob's data for one image) is
        dropped; unlike pycaffe's squeeze() this keeps a single channel, so
        grey inputs come back as H x W x 1.
        """
        self._check_input(in_)
        decaf_in = np.array(data, copy=True)
        if decaf_in.ndim == 4:
            if decaf_in.shape[0] != 1:
                raise ValueError('deprocess of input {!r} takes one image, '
                                 'got a batch of shape {}'.format(
                                     in_, decaf_in.shape))
            decaf_in = decaf_in[0]
        input_scale = self.input_scale.get(in_)
        if input_scale is not None:
            decaf_in = decaf_in / input_scale
        mean = self.mean.get(in_)
        if mean is not None:
            decaf_in = decaf_in + mean
        raw_scale = self.raw_scale.get(in_)
        if raw_scale is not None:
            decaf_in = decaf_in / raw_scale
        channel_swap = self.channel_swap.get(in_)
        if channel_swap is not None:
            decaf_in = decaf_in[np.argsort(channel_swap), :, :]
        transpose = self.transpose.get(in_)
        if transpose is not None:
            decaf_in = decaf_in.transpose(np.argsort(transpose))
        return decaf_in

    def set_transpose(self, in_, order):
        """Set the axis order applied to the image, e.g. (2, 0, 1) turns
        H x W x C into the C x H x W a net takes."""
        self._check_input(in_)
        dims = len(self.inputs[in_]) - 1
        if len(order) != dims:
            raise ValueError('transpose order {} for input {!r} needs {} axes '
                             'to match input shape {}'.format(
                                 tuple(order), in_, dims, self.inputs[in_]))
        self.transpose[in_] = order

    def set_channel_swap(self, in_, order):
        """Set the channel order taken after transposing, e.g. (2, 1, 0)
        turns RGB into the BGR of Caffe's reference models."""
        self._check_input(in_)
        channels = self.inputs[in_][1]
        if len(order) != channels:
            raise ValueError('channel swap {} for input {!r} needs {} entries '
                             'to match input shape {}'.format(
                                 tuple(order), in_, channels,
                                 self.inputs[in_]))
        self.channel_swap[in_] = order

    def set_raw_scale(self, in_, scale):
        """Set the factor applied before mean subtraction, e.g. 255 for
        models trained on [0, 255] pixels fed images loaded in [0, 1]."""
        self._check_input(in_)
        self.raw_scale[in_] = scale

    def set_mean(self, in_, mean):
        """Set the mean subtracted after raw scaling.

        ``mean`` is either one value per channel (shape (C,)) or a mean
        image (C, H, W) or (H, W); a mean image of another H x W is resized
        to the input's, as Caffe's ImageNet mean is 256 x 256 while its
        models take 227 x 227 crops.
        """
        self._check_input(in_)
        mean = np.asarray(mean, dtype=np.float32)
        shape = self.inputs[in_]
        channels = shape[1]
        if mean.ndim == 1:
            if mean.shape[0] != channels:
                raise ValueError('mean of shape {} for input {!r} needs {} '
                                 'channels to match input shape {}'.format(
                                     mean.shape, in_, channels, shape))
            mean = mean[:, np.newaxis, np.newaxis]
        else:
            if mean.ndim == 2:
                mean = mean[np.newaxis]
            if mean.ndim != 3 or mean.shape[0] not in (1, channels):
                raise ValueError('mean of shape {} for input {!r} must be '
                                 '(C,), (H, W) or (C, H, W) with C = {} to '
                                 'match input shape {}'.format(
                                     mean.shape, in_, channels, shape))
            if mean.shape[1:] != shape[2:]:
                mean = resize_image(mean.transpose(1, 2, 0),
                                    shape[2:]).transpose(2, 0, 1)
        self.mean[in_] = mean

    def set_input_scale(self, in_, scale):
        """Set the factor applied last, after mean subtraction (raw_scale,
        by contrast, is applied before it)."""
        self._check_input(in_)
        self.input_scale[in_] = scale


# Image IO

def image_transformer(input_name, shape, mean=None, input_scale=None,
                      raw_scale=None, channel_swap=None):
    """A Transformer for images (H x W x K, as load_image gives them) into
    the net input `input_name` of `shape`, set up as Classifier and Detector
    take their arguments; the settings left at None are not applied."""
    transformer = Transformer({input_name: shape})
    transformer.set_transpose(input_name, (2, 0, 1))
    if mean is not None:
        transformer.set_mean(input_name, mean)
    if input_scale is not None:
        transformer.set_input_scale(input_name, input_scale)
    if raw_scale is not None:
        transformer.set_raw_scale(input_name, raw_scale)
    if channel_swap is not None:
        transformer.set_channel_swap(input_name, channel_swap)
    return transformer


def load_image(filename, color=True):
    """Load an image as float32 in [0, 1], shaped H x W x K.

    With ``color`` the result is RGB (H x W x 3): grey images are tiled to
    three channels and an alpha channel is dropped.  Without it the image
    is read as intensity, H x W x 1.
    """
    image = skimage.img_as_float(
        skimage.io.imread(filename, as_gray=not color)).astype(np.float32)
    if image.ndim == 2:
        image = image[:, :, np.newaxis]
    elif image.shape[2] in (2, 4):
        # Grey + alpha or RGB + alpha: keep the colour channels only.
        image = image[:, :, :image.shape[2] - 1]
    if color and image.shape[2] == 1:
        image = np.tile(image, (1, 1, 3))
    return image


def resize_image(im, new_dims, interp_order=1):
    """Resize an H x W x K array to new_dims[0] x new_dims[1] x K.

    ``interp_order`` is the spline order (0 nearest, 1 bilinear, up to 5).
    Values keep their range and any number of channels is accepted.  Edges
    are extended by repeating border pixels and no anti-aliasing blur is
    applied, which matches the bilinear resizing Caffe's tools use.
    """
    im = np.asarray(im)
    if len(new_dims) != 2:
        raise ValueError('new_dims must be (height, width), got {}'
                         .format(tuple(new_dims)))
    resized = skimage.transform.resize(
        im, tuple(int(d) for d in new_dims), order=interp_order, mode='edge',
        preserve_range=True, anti_aliasing=False)
    return resized.astype(np.float32)


def oversample(images, crop_dims):
    """Take ten crops of each image: the four corners and the centre, then
    the same five mirrored left to right.

    ``images`` is an iterable of H x W x K arrays of one shape; the result
    is a (10 * N) x h x w x K float32 array, each image's ten crops in the
    order top-left, top-right, bottom-left, bottom-right, centre, and then
    their mirrors in that order.
    """
    images = [np.asarray(im) for im in images]
    if not images:
        raise ValueError('oversample needs at least one image')
    im_shape = images[0].shape
    crop_h, crop_w = (int(d) for d in crop_dims)
    height, width = im_shape[:2]
    if crop_h > height or crop_w > width:
        raise ValueError('crop {} is larger than the image {}'.format(
            (crop_h, crop_w), im_shape))
    origins = [(0, 0), (0, width - crop_w), (height - crop_h, 0),
               (height - crop_h, width - crop_w),
               ((height - crop_h) // 2, (width - crop_w) // 2)]
    crops = np.empty((10 * len(images), crop_h, crop_w) + im_shape[2:],
                     dtype=np.float32)
    for n, im in enumerate(images):
        if im.shape != im_shape:
            raise ValueError('oversample needs images of one shape: image '
                             '{} is {}, image 0 is {}'.format(
                                 n, im.shape, im_shape))
        for k, (top, left) in enumerate(origins):
            crop = im[top:top + crop_h, left:left + crop_w]
            crops[10 * n + k] = crop
            crops[10 * n + 5 + k] = crop[:, ::-1]
    return crops
