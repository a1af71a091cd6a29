"""Tests of doppio.coord_map against offsets worked out by hand.

A convolution or pooling output pixel y is centred on input pixel
stride * y - pad + (extent - 1) / 2, so the forward map is
y = (x + pad - (extent - 1) / 2) / stride; a deconvolution maps
y = stride * x + (extent - 1) / 2 - pad.
"""

import numpy as np
import pytest

from doppio import coord_map as cm
from doppio.coord_map import coord_map_from_to
from doppio.net_spec import NetSpec, layers as L, params as P


def chain(ks=3, stride=1, pad=0, pool=2, dstride=2, dpad=0):
    """Input -> conv -> max pool -> deconv (kernel twice its stride)."""
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[2, 1, 100, 100]))
    n.conv = L.Convolution(n.data, num_output=4, kernel_size=ks,
                           stride=stride, pad=pad)
    n.pool = L.Pooling(n.conv, pool=P.Pooling.MAX, kernel_size=pool,
                       stride=pool)
    n.deconv = L.Deconvolution(n.pool, num_output=4,
                               kernel_size=2 * dstride, stride=dstride,
                               pad=dpad)
    return n


def assert_map(actual, axis, a, b):
    ax, got_a, got_b = actual
    assert ax == axis
    np.testing.assert_allclose(got_a, a)
    np.testing.assert_allclose(got_b, b)


def test_single_conv_both_directions():
    n = chain()
    # 3x3, stride 1, no pad: conv pixel y is centred on data pixel y + 1.
    assert_map(coord_map_from_to(n.data, n.conv), 1, 1, -1)
    assert_map(coord_map_from_to(n.conv, n.data), 1, 1, 1)


def test_strided_padded_conv():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 9, 9]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=5, stride=2,
                           pad=1)
    # y = (x + 1 - 2) / 2, and back x = 2 y + 1.
    assert_map(coord_map_from_to(n.data, n.conv), 1, 0.5, -0.5)
    assert_map(coord_map_from_to(n.conv, n.data), 1, 2, 1)


def test_conv_pool_deconv_round_trip():
    # conv: y1 = x - 1; pool 2: y2 = (y1 - 0.5) / 2; deconv 2 (kernel 4):
    # y3 = 2 y2 + 1.5 = x, the identity.
    n = chain()
    assert_map(coord_map_from_to(n.deconv, n.data), 1, 1, 0)
    # pool 4: y2 = (y1 - 1.5) / 4; deconv 4 (kernel 8): y3 = 4 y2 + 3.5
    # = x + 1, so data = deconv - 1.
    n = chain(pool=4, dstride=4)
    assert_map(coord_map_from_to(n.deconv, n.data), 1, 1, -1)


def test_pointwise_and_1x1_layers_keep_the_map():
    n = chain()
    n.relu = L.ReLU(n.deconv)
    n.conv1x1 = L.Convolution(n.relu, num_output=4, kernel_size=1)
    n.drop = L.Dropout(n.conv1x1, in_place=True)
    for top in (n.relu, n.conv1x1, n.drop):
        assert_map(coord_map_from_to(top, n.data), 1, 1, 0)


@pytest.mark.parametrize('pad', [1, 4, 7])
def test_conv_pad_shifts_and_deconv_pad_unshifts(pad):
    # Conv padding p: y1 = x + p - 1, so deconv = data + p.
    n = chain(pad=pad)
    assert_map(coord_map_from_to(n.deconv, n.data), 1, 1, -pad)
    # Deconv padding q: y3 = 2 y2 + 1.5 - q, so deconv = data - q.
    n = chain(dpad=pad)
    assert_map(coord_map_from_to(n.deconv, n.data), 1, 1, pad)


def test_dilation_widens_the_kernel():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 20, 20]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=3, dilation=2)
    # Extent (3 - 1) * 2 + 1 = 5: y = x - 2.
    assert_map(coord_map_from_to(n.data, n.conv), 1, 1, -2)


def test_per_axis_and_legacy_hw_parameters():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 20, 20]))
    n.a = L.Convolution(n.data, num_output=1, kernel_size=[3, 5],
                        stride=[1, 2])
    n.b = L.Convolution(n.data, num_output=1, kernel_h=3, kernel_w=5,
                        stride_h=1, stride_w=2)
    n.c = L.Convolution(n.data, convolution_param=dict(
        num_output=1, kernel_size=[3, 5], stride=[1, 2]))
    for top in (n.a, n.b, n.c):
        # Height: y = x - 1; width: y = (x - 2) / 2.
        assert_map(coord_map_from_to(n.data, top), 1, [1, 0.5], [-1, -1])


def test_crop_offsets_a_padded_chain():
    n = chain(pad=10)
    n.crop = cm.crop(n.deconv, n.data)
    layer = n.to_proto().layer[-1]
    assert layer.type == 'Crop'
    assert list(layer.bottom) == ['deconv', 'data']
    assert layer.crop_param.axis == 2
    assert list(layer.crop_param.offset) == [10]
    # The cropped blob lines up with the data exactly.
    assert_map(coord_map_from_to(n.crop, n.data), 1, 1, 0)
    # Crop's own map: axis 2 counts as axis 1, shift by -offset.
    assert_map(cm.coord_map(n.crop.fn), 1, 1, -10)


def test_crop_per_axis_offsets():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 20, 20]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=[3, 5])
    n.crop = cm.crop(n.data, n.conv)
    assert list(n.to_proto().layer[-1].crop_param.offset) == [1, 2]


def test_crop_refuses_what_cannot_align():
    n = chain(pad=10)
    with pytest.raises(ValueError, match='negative offset'):
        cm.crop(n.data, n.deconv)
    with pytest.raises(ValueError, match='scale'):
        cm.crop(n.pool, n.data)
    m = NetSpec()
    m.data = L.Input(shape=dict(dim=[1, 1, 8, 8]))
    m.conv = L.Convolution(m.data, num_output=1, kernel_size=2)
    with pytest.raises(ValueError, match='fractional'):
        cm.crop(m.data, m.conv)  # a 2x2 kernel centres between pixels


def test_compose_and_inverse():
    assert cm.compose((None, 1, 0), (1, 2, 3)) == (1, 2, 3)
    assert cm.compose((1, 2, 3), (None, 1, 0)) == (1, 2, 3)
    # x -> 2 (3 x + 4) + 1 = 6 x + 9
    assert cm.compose((1, 2, 1), (1, 3, 4)) == (1, 6, 9)
    assert cm.inverse((1, 2, 3)) == (1, 0.5, -1.5)
    assert cm.compose((1, 2, 3), cm.inverse((1, 2, 3))) == (1, 1, 0)
    with pytest.raises(cm.AxisMismatchException):
        cm.compose((1, 1, 0), (2, 1, 0))


def test_layer_maps_and_their_parameters():
    n = chain(ks=5, stride=2, pad=1)
    assert_map(cm.coord_map(n.conv.fn), 1, 0.5, -0.5)
    assert_map(cm.coord_map(n.pool.fn), 1, 0.5, -0.25)
    assert_map(cm.coord_map(n.deconv.fn), 1, 2, 1.5)
    axis, stride, extent, pad = cm.conv_params(n.conv.fn)
    assert axis == 1
    assert list(stride) == [2] and list(extent) == [5] and list(pad) == [1]
    crop_fn = L.Crop(n.conv, n.data, crop_param=dict(axis=3, offset=[4]))
    axis, offset = cm.crop_params(crop_fn.fn)
    assert axis == 3 and list(offset) == [4]
    assert cm.crop_params(L.Crop(n.conv, n.data).fn)[0] == 2
    assert cm.coord_map(L.ReLU(n.conv).fn) == (None, 1, 0)


def test_undefined_maps():
    n = chain()
    n.ip = L.InnerProduct(n.conv, num_output=3)
    with pytest.raises(cm.UndefinedMapException):
        cm.coord_map(n.ip.fn)
    gpool = L.Pooling(n.conv, pooling_param=dict(global_pooling=True))
    with pytest.raises(cm.UndefinedMapException):
        cm.coord_map(gpool.fn)
    with pytest.raises(RuntimeError, match='share no ancestor'):
        coord_map_from_to(n.ip, n.data)


def test_mismatched_axes_are_reported():
    n = NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, 8, 8]))
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=3)
    n.crop = L.Crop(n.conv, n.data, crop_param=dict(axis=3, offset=[1]))
    with pytest.raises(cm.AxisMismatchException):
        coord_map_from_to(n.crop, n.data)


def test_missing_kernel_size_is_a_clear_error():
    n = chain()
    bad = L.Convolution(n.data, num_output=1)
    with pytest.raises(ValueError, match='Convolution layer has no '
                                         'kernel_size'):
        cm.coord_map(bad.fn)
