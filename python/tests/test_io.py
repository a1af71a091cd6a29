"""Tests of doppio.io: proto conversions, image IO, oversampling and the
Transformer, checked against values computed by hand or with plain numpy."""

import numpy as np
import pytest
import skimage.io

from doppio import io
from doppio.proto import doppio_pb2


# BlobProto

def test_blobproto_round_trip_keeps_shape_and_values():
    arr = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    diff = -arr
    blob = io.array_to_blobproto(arr, diff)
    assert list(blob.shape.dim) == [2, 3, 4]
    np.testing.assert_array_equal(io.blobproto_to_array(blob), arr)
    np.testing.assert_array_equal(
        io.blobproto_to_array(blob, return_diff=True), diff)


def test_blobproto_survives_serialization():
    arr = np.linspace(-1, 1, 10).reshape(5, 2)
    blob = doppio_pb2.BlobProto.FromString(
        io.array_to_blobproto(arr).SerializeToString())
    np.testing.assert_allclose(io.blobproto_to_array(blob), arr, rtol=1e-7)


def test_blobproto_legacy_4d_fields_win_over_shape():
    blob = doppio_pb2.BlobProto(num=1, channels=2, height=1, width=3,
                                data=[1, 2, 3, 4, 5, 6])
    expected = np.array([[[[1, 2, 3]], [[4, 5, 6]]]])
    np.testing.assert_array_equal(io.blobproto_to_array(blob), expected)


def test_blobproto_double_data_is_read():
    blob = doppio_pb2.BlobProto(double_data=[0.5, 1.5])
    blob.shape.dim.extend([2])
    np.testing.assert_array_equal(io.blobproto_to_array(blob), [0.5, 1.5])


def test_blobproto_size_mismatch_names_both_sizes():
    blob = doppio_pb2.BlobProto(data=[1, 2, 3])
    blob.shape.dim.extend([2, 2])
    with pytest.raises(ValueError, match=r'3 data.*\(2, 2\).*4'):
        io.blobproto_to_array(blob)


def test_array_to_blobproto_rejects_diff_of_other_shape():
    with pytest.raises(ValueError, match=r'\(3,\).*\(2,\)'):
        io.array_to_blobproto(np.zeros(2), diff=np.zeros(3))


def test_blobprotovector_string_round_trip():
    arrays = [np.arange(6.0).reshape(2, 3), np.array([[[7.0]]]),
              np.ones((1, 2, 1, 2))]
    serialized = io.arraylist_to_blobprotovector_str(arrays)
    assert isinstance(serialized, bytes)
    back = io.blobprotovector_str_to_arraylist(serialized)
    assert len(back) == 3
    for original, restored in zip(arrays, back):
        np.testing.assert_array_equal(restored, original)


# Datum

def test_uint8_datum_stores_raw_bytes():
    arr = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)
    datum = io.array_to_datum(arr, label=4)
    assert (datum.channels, datum.height, datum.width) == (3, 2, 2)
    assert datum.data == bytes(range(12))
    assert len(datum.float_data) == 0
    assert datum.label == 4
    back = io.datum_to_array(doppio_pb2.Datum.FromString(
        datum.SerializeToString()))
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, arr)


def test_float_datum_stores_float_data():
    arr = np.array([[[0.25, -1.5]]])
    datum = io.array_to_datum(arr)
    assert list(datum.float_data) == [0.25, -1.5]
    assert datum.data == b''
    assert not datum.HasField('label')
    np.testing.assert_array_equal(io.datum_to_array(datum), arr)


def test_array_to_datum_needs_three_axes():
    with pytest.raises(ValueError, match=r'\(2, 2\)'):
        io.array_to_datum(np.zeros((2, 2)))


def test_datum_size_mismatch_is_reported():
    datum = doppio_pb2.Datum(channels=1, height=2, width=2, data=b'abc')
    with pytest.raises(ValueError, match=r'3 data bytes.*\(1, 2, 2\).*4'):
        io.datum_to_array(datum)


def test_encoded_datum_decodes_to_bgr_chw(tmp_path):
    rgb = np.zeros((2, 3, 3), dtype=np.uint8)
    rgb[..., 0] = 200  # red
    rgb[0, 1, 2] = 50  # one pixel with some blue
    path = tmp_path / 'im.png'
    skimage.io.imsave(str(path), rgb, check_contrast=False)
    datum = doppio_pb2.Datum(encoded=True, data=path.read_bytes(), label=1)
    arr = io.datum_to_array(datum)
    assert arr.shape == (3, 2, 3)
    assert arr.dtype == np.uint8
    np.testing.assert_array_equal(arr[2], np.full((2, 3), 200))  # red last
    np.testing.assert_array_equal(arr[1], np.zeros((2, 3)))
    assert arr[0, 0, 1] == 50 and arr[0].sum() == 50


def test_encoded_datum_that_is_not_an_image_fails_clearly():
    datum = doppio_pb2.Datum(encoded=True, data=b'not an image')
    with pytest.raises(ValueError, match='cannot decode the encoded Datum'):
        io.datum_to_array(datum)


# Images

def test_load_image_color_and_grey(tmp_path):
    grey = np.array([[0, 255], [51, 102]], dtype=np.uint8)
    path = str(tmp_path / 'grey.png')
    skimage.io.imsave(path, grey, check_contrast=False)
    as_grey = io.load_image(path, color=False)
    assert as_grey.shape == (2, 2, 1)
    assert as_grey.dtype == np.float32
    np.testing.assert_allclose(as_grey[..., 0], grey / 255.0, rtol=1e-6)
    tiled = io.load_image(path)
    assert tiled.shape == (2, 2, 3)
    for c in range(3):
        np.testing.assert_array_equal(tiled[..., c], as_grey[..., 0])


def test_load_image_rgba_drops_alpha(tmp_path):
    rgba = np.zeros((3, 2, 4), dtype=np.uint8)
    rgba[..., 1] = 255
    rgba[..., 3] = 128
    path = str(tmp_path / 'rgba.png')
    skimage.io.imsave(path, rgba, check_contrast=False)
    image = io.load_image(path)
    assert image.shape == (3, 2, 3)
    np.testing.assert_array_equal(image[..., 1], np.ones((3, 2)))
    np.testing.assert_array_equal(image[..., 0], np.zeros((3, 2)))


def test_resize_image_bilinear_matches_hand_values():
    # Output pixel centres fall at -0.25, 0.25, 0.75, 1.25 in input pixels;
    # the borders repeat, so the row [0, 1] becomes [0, .25, .75, 1].
    im = np.array([[[0.0], [1.0]]])
    out = io.resize_image(im, (1, 4))
    assert out.shape == (1, 4, 1)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[0, :, 0], [0, 0.25, 0.75, 1], atol=1e-6)


def test_resize_image_nearest_replicates_blocks():
    im = np.array([[1.0, 2.0], [3.0, 4.0]])[:, :, np.newaxis] * [1, 10]
    out = io.resize_image(im, (4, 4), interp_order=0)
    expected = np.kron([[1.0, 2.0], [3.0, 4.0]], np.ones((2, 2)))
    np.testing.assert_array_equal(out[..., 0], expected)
    np.testing.assert_array_equal(out[..., 1], 10 * expected)


def test_resize_image_keeps_range_and_channels():
    im = np.full((5, 7, 6), 300.0)
    out = io.resize_image(im, (3, 2))
    assert out.shape == (3, 2, 6)
    np.testing.assert_array_equal(out, 300.0)
    same = np.random.RandomState(0).rand(4, 5, 3) * 1000
    np.testing.assert_allclose(io.resize_image(same, (4, 5)), same,
                               rtol=1e-6)


# Oversampling

def test_oversample_order_and_mirrors():
    h, w, ch, cw = 5, 6, 2, 3
    images = [np.arange(h * w * 2, dtype=np.float32).reshape(h, w, 2) + k
              for k in (0, 1000)]
    crops = io.oversample(images, (ch, cw))
    assert crops.shape == (20, ch, cw, 2)
    # Centre: (5 - 2) // 2 = 1 down, (6 - 3) // 2 = 1 across.
    origins = [(0, 0), (0, 3), (3, 0), (3, 3), (1, 1)]
    for n, im in enumerate(images):
        for k, (y, x) in enumerate(origins):
            window = im[y:y + ch, x:x + cw]
            np.testing.assert_array_equal(crops[10 * n + k], window)
            np.testing.assert_array_equal(crops[10 * n + 5 + k],
                                          window[:, ::-1])


def test_oversample_accepts_a_4d_array_and_checks_sizes():
    batch = np.zeros((3, 4, 4, 1))
    assert io.oversample(batch, (4, 4)).shape == (30, 4, 4, 1)
    with pytest.raises(ValueError, match='larger than the image'):
        io.oversample(batch, (5, 2))
    with pytest.raises(ValueError, match='one shape'):
        io.oversample([np.zeros((4, 4, 1)), np.zeros((4, 5, 1))], (2, 2))


# Transformer

def make_transformer(shape=(1, 3, 4, 5)):
    return io.Transformer({'data': shape})


def test_preprocess_applies_every_step_in_order():
    rng = np.random.RandomState(1)
    image = rng.rand(4, 5, 3).astype(np.float32)
    mean = np.array([10.0, 20.0, 30.0])
    t = make_transformer()
    t.set_transpose('data', (2, 0, 1))
    t.set_channel_swap('data', (2, 1, 0))
    t.set_raw_scale('data', 255.0)
    t.set_mean('data', mean)
    t.set_input_scale('data', 0.5)
    before = image.copy()
    out = t.preprocess('data', image)
    expected = ((image.transpose(2, 0, 1)[::-1] * 255.0
                 - mean[:, None, None]) * 0.5)
    assert out.shape == (3, 4, 5)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(image, before)  # input left untouched
    back = t.deprocess('data', out[np.newaxis])
    np.testing.assert_allclose(back, image, atol=1e-5)


def test_preprocess_resizes_to_the_input_size():
    t = make_transformer((1, 3, 4, 5))
    t.set_transpose('data', (2, 0, 1))
    out = t.preprocess('data', np.full((8, 10, 3), 0.5))
    assert out.shape == (3, 4, 5)
    np.testing.assert_allclose(out, 0.5)


def test_preprocess_reports_a_shape_it_cannot_fill():
    t = make_transformer()
    with pytest.raises(ValueError, match=r"'data'.*\(4, 5, 3\).*\(3, 4, 5\)"):
        t.preprocess('data', np.zeros((4, 5, 3)))  # no transpose set


def test_mean_image_is_subtracted_elementwise():
    t = make_transformer((1, 2, 2, 2))
    t.set_transpose('data', (2, 0, 1))
    mean = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    t.set_mean('data', mean)
    image = np.ones((2, 2, 2), dtype=np.float32)
    np.testing.assert_allclose(t.preprocess('data', image),
                               image.transpose(2, 0, 1) - mean)


def test_mean_image_of_other_size_is_resized():
    t = make_transformer((1, 3, 4, 5))
    t.set_mean('data', np.full((3, 8, 8), 2.0))
    assert t.mean['data'].shape == (3, 4, 5)
    np.testing.assert_allclose(t.mean['data'], 2.0)


def test_grey_deprocess_keeps_the_channel_axis():
    t = make_transformer((1, 1, 4, 5))
    t.set_transpose('data', (2, 0, 1))
    image = np.random.RandomState(2).rand(4, 5, 1).astype(np.float32)
    back = t.deprocess('data', t.preprocess('data', image)[np.newaxis])
    assert back.shape == (4, 5, 1)
    np.testing.assert_allclose(back, image)


@pytest.mark.parametrize('setter, value, pattern', [
    ('set_transpose', (1, 0), r"\(1, 0\).*'data'.*3 axes"),
    ('set_channel_swap', (1, 0), r"\(1, 0\).*'data'.*3 entries"),
    ('set_mean', np.zeros(2), r"\(2,\).*'data'.*3 channels"),
    ('set_mean', np.zeros((2, 4, 5)), r"\(2, 4, 5\).*'data'"),
    ('set_mean', np.zeros((1, 3, 4, 5)), r"\(1, 3, 4, 5\).*'data'"),
])
def test_setters_reject_wrong_shapes(setter, value, pattern):
    t = make_transformer()
    with pytest.raises(ValueError, match=pattern):
        getattr(t, setter)('data', value)


def test_unknown_input_is_named():
    t = make_transformer()
    with pytest.raises(ValueError, match=r"'label'.*\['data'\]"):
        t.set_raw_scale('label', 255)
    with pytest.raises(ValueError, match="'label'"):
        t.preprocess('label', np.zeros((4, 5, 3)))


def test_deprocess_rejects_a_batch():
    t = make_transformer()
    with pytest.raises(ValueError, match=r'\(2, 3, 4, 5\)'):
        t.deprocess('data', np.zeros((2, 3, 4, 5)))
