"""Tests of doppio.classifier and doppio.detector on a tiny net
(Input -> InnerProduct -> Softmax) whose weights the test sets, so every
prediction can be recomputed with numpy."""

import importlib.util

import numpy as np
import pytest
import skimage.io

from doppio import io  # noqa: E402
from doppio._doppio import TEST  # noqa: E402
from doppio.classifier import Classifier  # noqa: E402
from doppio.detector import Detector  # noqa: E402
from doppio.pycaffe import Net  # noqa: E402

# A batch of 2 makes forward_all split the ten crops into batches.
TINY_NET = """
name: "tiny"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 2 dim: 3 dim: 4 dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 3 } }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
"""


@pytest.fixture
def tiny_model(tmp_path):
    """The model file, a weights file saved by Net.save, and the weights."""
    model = tmp_path / 'tiny.prototxt'
    model.write_text(TINY_NET)
    rng = np.random.RandomState(7)
    weights = rng.randn(3, 48).astype(np.float32) * 0.5
    bias = rng.randn(3).astype(np.float32) * 0.1
    net = Net(str(model), TEST)
    net.params['ip'][0].data[...] = weights
    net.params['ip'][1].data[...] = bias
    weights_file = tmp_path / 'tiny.caffemodel'
    net.save(str(weights_file))
    return str(model), str(weights_file), weights, bias


def probabilities(chw_batch, weights, bias):
    logits = chw_batch.reshape(len(chw_batch), -1) @ weights.T + bias
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def test_weights_file_loads_into_a_new_net(tiny_model):
    model, weights_file, weights, bias = tiny_model
    net = Net(model, TEST, weights=weights_file)
    np.testing.assert_allclose(net.params['ip'][0].data, weights)
    np.testing.assert_allclose(net.params['ip'][1].data, bias)


def test_classifier_oversampled_and_centre_predictions(tiny_model):
    model, weights_file, weights, bias = tiny_model
    mean = np.array([0.1, 0.2, 0.3])
    clf = Classifier(model, weights_file, image_dims=(6, 6), mean=mean,
                     raw_scale=2.0, channel_swap=(2, 1, 0))
    assert list(clf.crop_dims) == [4, 4]
    assert list(clf.image_dims) == [6, 6]
    rng = np.random.RandomState(3)
    images = [rng.rand(7, 9, 3).astype(np.float32) for _ in range(3)]

    def preprocess(crop):  # HxWxRGB -> BGR CxHxW, scaled, mean removed
        return crop.transpose(2, 0, 1)[::-1] * 2.0 - mean[:, None, None]

    expected_ten, expected_centre = [], []
    for image in images:
        resized = io.resize_image(image, (6, 6))
        crops = []
        for y, x in [(0, 0), (0, 2), (2, 0), (2, 2), (1, 1)]:
            crops.append(resized[y:y + 4, x:x + 4])
        crops += [crop[:, ::-1] for crop in crops]
        batch = np.stack([preprocess(crop) for crop in crops])
        expected_ten.append(probabilities(batch, weights, bias).mean(0))
        expected_centre.append(probabilities(batch[4:5], weights, bias)[0])

    ten = clf.predict(images)
    assert ten.shape == (3, 3)
    np.testing.assert_allclose(ten, expected_ten, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ten.sum(axis=1), 1, rtol=1e-5)
    centre = clf.predict(images, oversample=False)
    np.testing.assert_allclose(centre, expected_centre, rtol=1e-4,
                               atol=1e-5)


def test_classifier_rejects_image_dims_below_the_input(tiny_model):
    model, weights_file, _, _ = tiny_model
    with pytest.raises(ValueError, match='smaller than the net input'):
        Classifier(model, weights_file, image_dims=(3, 6))


@pytest.fixture
def image_file(tmp_path):
    rng = np.random.RandomState(5)
    pixels = rng.randint(0, 256, size=(8, 10, 3)).astype(np.uint8)
    path = tmp_path / 'scene.png'
    skimage.io.imsave(str(path), pixels, check_contrast=False)
    return str(path)


def test_detect_windows_classifies_each_warped_window(tiny_model,
                                                      image_file):
    model, weights_file, weights, bias = tiny_model
    det = Detector(model, weights_file, raw_scale=255.0)
    assert list(det.crop_dims) == [4, 4, 3]
    windows = [np.array([0, 0, 4, 4]), np.array([2, 3, 8, 10]),
               np.array([1, 1, 7, 5])]
    detections = det.detect_windows([(image_file, windows)])
    image = io.load_image(image_file)
    assert len(detections) == 3
    for det_out, window in zip(detections, windows):
        y0, x0, y1, x1 = window
        warped = io.resize_image(image[y0:y1, x0:x1], (4, 4))
        chw = warped.transpose(2, 0, 1)[np.newaxis] * 255.0
        assert det_out['filename'] == image_file
        np.testing.assert_array_equal(det_out['window'], window)
        np.testing.assert_allclose(det_out['prediction'],
                                   probabilities(chw, weights, bias)[0],
                                   rtol=1e-4, atol=1e-5)


def test_context_padding_fills_outside_with_the_mean(tiny_model,
                                                     image_file):
    model, weights_file, _, _ = tiny_model
    mean = np.array([10.0, 20.0, 30.0])
    det = Detector(model, weights_file, mean=mean, raw_scale=255.0,
                   context_pad=1)
    image = io.load_image(image_file)
    crop = det.crop(image, np.array([0, 0, 4, 4]))
    # Input 4, pad 1: the box scales by 4 / 2 about its centre (2.5, 2.5)
    # to [-2, -2, 8, 8]; the 2 rows/columns before the image become
    # round(2 * 4 / 11) = 1 input pixel of mean, and the clipped box
    # [0, 0, 8, 8] fills the remaining 3 x 3.
    assert crop.shape == (4, 4, 3)
    np.testing.assert_allclose(crop[0], np.tile(mean / 255.0, (4, 1)),
                               rtol=1e-6)
    np.testing.assert_allclose(crop[:, 0], np.tile(mean / 255.0, (4, 1)),
                               rtol=1e-6)
    np.testing.assert_allclose(crop[1:, 1:],
                               io.resize_image(image[0:8, 0:8], (3, 3)),
                               rtol=1e-6)
    plain = Detector(model, weights_file)
    np.testing.assert_array_equal(plain.crop(image, (1, 2, 5, 7)),
                                  image[1:5, 2:7])


def test_selective_search_reports_the_missing_package(tiny_model,
                                                      image_file):
    if importlib.util.find_spec('selective_search_ijcv_with_python'):
        pytest.skip('selective search is installed here')
    det = Detector(*tiny_model[:2])
    with pytest.raises(ImportError, match='selective_search_ijcv'):
        det.detect_selective_search([image_file])
