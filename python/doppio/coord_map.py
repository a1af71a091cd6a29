"""Relate the spatial coordinates of blobs in a NetSpec net.

pycaffe's ``caffe.coord_map``.  Every spatial layer maps an input
coordinate x to an output coordinate ``a * x + b`` along its spatial axes;
a map is the triple ``(axis, a, b)``, where ``axis`` is the last
non-spatial axis (1 for N x C x H x W blobs) or None for layers that leave
coordinates alone.  Composing the maps along a path between two blobs
tells how far one must be cropped to line up with the other, which is what
fully convolutional nets need after upsampling (see crop()).
"""

import numpy as np

from .net_spec import layers as L

PASS_THROUGH_LAYERS = ['AbsVal', 'BatchNorm', 'Bias', 'BNLL', 'Dropout',
                       'Eltwise', 'ELU', 'Log', 'LRN', 'Exp', 'MVN', 'Power',
                       'ReLU', 'PReLU', 'Scale', 'Sigmoid', 'Split', 'TanH',
                       'Threshold']


class UndefinedMapException(Exception):
    """The layer has no fixed coordinate mapping (e.g. InnerProduct, or
    global pooling, whose output does not depend on positions)."""


class AxisMismatchException(Exception):
    """Two maps work on different axes and so cannot be composed."""


def _layer_params(fn, message):
    """The layer's keywords, with those of ``<message>=dict(...)`` merged
    in, since NetSpec accepts either form."""
    params = dict(fn.params)
    params.update(params.pop(message, {}))
    return params


def _pair_or_list(fn, params, name, hw_names, default):
    """A spatial parameter as an array: from ``name`` (one value or one per
    axis) or from the legacy ``<x>_h``/``<x>_w`` pair."""
    hw = [params.get(key) for key in hw_names]
    if any(v is not None for v in hw):
        if any(v is None for v in hw) or name in params:
            raise ValueError('{} layer: give either {} or both of {}'.format(
                fn.type_name, name, ' and '.join(hw_names)))
        return np.array(hw)
    value = params.get(name, default)
    if value is None:
        raise ValueError('{} layer has no {}, so its coordinate map is '
                         'unknown'.format(fn.type_name, name))
    return np.array(value, ndmin=1)


def conv_params(fn):
    """Return (axis, stride, kernel extent, pad) of a Convolution,
    Deconvolution, Im2col or Pooling Function.

    The kernel extent is the dilated size ``(kernel - 1) * dilation + 1``,
    the span of input pixels one output pixel sees.
    """
    if fn.type_name == 'Pooling':
        params = _layer_params(fn, 'pooling_param')
        if params.get('global_pooling'):
            raise UndefinedMapException
        axis = 1
        dilation = np.array([1])
    else:
        params = _layer_params(fn, 'convolution_param')
        axis = params.get('axis', 1)
        dilation = np.array(params.get('dilation', 1), ndmin=1)
    kernel = _pair_or_list(fn, params, 'kernel_size', ('kernel_h', 'kernel_w'),
                           None)
    stride = _pair_or_list(fn, params, 'stride', ('stride_h', 'stride_w'), 1)
    pad = _pair_or_list(fn, params, 'pad', ('pad_h', 'pad_w'), 0)
    return axis, stride, (kernel - 1) * dilation + 1, pad


def crop_params(fn):
    """Return (axis, offset) of a Crop Function, with Caffe's defaults
    (crop from axis 2, offset 0)."""
    params = _layer_params(fn, 'crop_param')
    return (params.get('axis', 2),
            np.array(params.get('offset', 0), ndmin=1))


def coord_map(fn):
    """Return the map (axis, a, b) of one layer: input coordinate x lands
    at output coordinate a * x + b.

    A convolution or pooling output pixel y is centred on input pixel
    ``stride * y - pad + (extent - 1) / 2``; a deconvolution inverts that.
    Pointwise layers give (None, 1, 0).  Other layer types raise
    UndefinedMapException.
    """
    if fn.type_name in PASS_THROUGH_LAYERS:
        return None, 1, 0
    if fn.type_name in ['Convolution', 'Pooling', 'Im2col']:
        axis, stride, extent, pad = conv_params(fn)
        return axis, 1 / stride, (pad - (extent - 1) / 2) / stride
    if fn.type_name == 'Deconvolution':
        axis, stride, extent, pad = conv_params(fn)
        return axis, stride, (extent - 1) / 2 - pad
    if fn.type_name == 'Crop':
        axis, offset = crop_params(fn)
        # Crop's axis is the first cropped one; maps name the one before.
        return axis - 1, 1, -offset
    raise UndefinedMapException


def compose(base_map, next_map):
    """Return the map that applies ``next_map`` and then ``base_map``:
    x -> a1 * (a2 * x + b2) + b1.

    An axis of None (a pointwise map) agrees with any axis; two different
    axes raise AxisMismatchException.
    """
    ax1, a1, b1 = base_map
    ax2, a2, b2 = next_map
    if ax1 is None:
        ax = ax2
    elif ax2 is None or ax1 == ax2:
        ax = ax1
    else:
        raise AxisMismatchException(
            'cannot compose maps on axes {} and {}'.format(ax1, ax2))
    return ax, a1 * a2, a1 * b2 + b1


def inverse(coord_map):
    """Return the map that undoes ``coord_map``: y -> (y - b) / a."""
    ax, a, b = coord_map
    return ax, 1 / a, -b / a


def _mapped_bottoms(top):
    """The bottoms whose coordinates a layer maps: all of them, except that
    Crop's second bottom only gives the output size."""
    bottoms = top.fn.inputs
    if top.fn.type_name == 'Crop':
        bottoms = bottoms[:1]
    return bottoms


def _maps_to(top):
    """Maps from every blob upstream of ``top`` to ``top``'s coordinates,
    following layers whose map is defined."""
    maps = {top: (None, 1, 0)}
    frontier = [top]
    while frontier:
        current = frontier.pop()
        try:
            layer_map = coord_map(current.fn)
        except UndefinedMapException:
            continue
        for bottom in _mapped_bottoms(current):
            maps[bottom] = compose(maps[current], layer_map)
            frontier.append(bottom)
    return maps


def coord_map_from_to(top_from, top_to):
    """Return the map (axis, a, b) from ``top_from``'s coordinates to
    ``top_to``'s: a point at x in top_from is at a * x + b in top_to.

    Both tops are walked back to a common ancestor blob; the result is the
    ancestor-to-``top_to`` map composed with the inverse of the
    ancestor-to-``top_from`` map.  Raises RuntimeError when the tops share
    no ancestor through layers with a coordinate map.
    """
    from_maps = _maps_to(top_from)
    to_maps = {top_to: (None, 1, 0)}
    frontier = [top_to]
    while frontier:
        top = frontier.pop(0)
        if top in from_maps:
            return compose(to_maps[top], inverse(from_maps[top]))
        try:
            layer_map = coord_map(top.fn)
        except UndefinedMapException:
            continue
        for bottom in _mapped_bottoms(top):
            to_maps[bottom] = compose(to_maps[top], layer_map)
            frontier.append(bottom)
    raise RuntimeError('could not map between {} and {} tops: they share no '
                       'ancestor through layers with a coordinate map'.format(
                           top_from.fn.type_name, top_to.fn.type_name))


def crop(top_from, top_to):
    """Return a Crop layer's Top that crops ``top_from`` to line up with
    ``top_to``, with the axis and offsets worked out from the coordinate
    map between them.

    Raises ValueError when the two differ in scale or the offset is
    negative or fractional, since a crop cannot align them then.
    """
    ax, a, b = coord_map_from_to(top_from, top_to)
    a = np.array(a, ndmin=1)
    b = np.array(b, ndmin=1)
    if not (a == 1).all():
        raise ValueError('cannot crop: the tops differ in scale (a = {})'
                         .format(a))
    if not (b <= 0).all():
        raise ValueError('cannot crop a negative offset (b = {})'.format(b))
    if not (np.round(b) == b).all():
        raise ValueError('cannot crop a fractional offset (b = {})'.format(b))
    if ax is None:
        ax = 1  # only pointwise layers between: crop the N x C x H x W axes
    return L.Crop(top_from, top_to,
                  crop_param=dict(axis=ax + 1,
                                  offset=[int(v) for v in -np.round(b)]))
