"""doppio.Net (caffe.Net): construction, blobs as views, forward/backward, weights in and
out, callbacks, and bad input -- against numpy and against the doppio tool."""
import gc
import os
import re

import numpy as np
import pytest

import caffe
import doppio
from conftest import mlp_net, run_doppio, write_hdf5_data

DEPLOY = '''
name: "deploy"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 2 dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 1 }
                              bias_filler { type: "gaussian" std: 1 } } }
layer { name: "relu" type: "ReLU" bottom: "ip" top: "relu" }
layer { name: "prob" type: "Softmax" bottom: "relu" top: "prob" }
layer { name: "only_train" type: "Power" bottom: "prob" top: "train_out"
        include { phase: TRAIN } }
layer { name: "staged" type: "Power" bottom: "prob" top: "staged_out"
        include { stage: "extra" } }
layer { name: "leveled" type: "Power" bottom: "prob" top: "level_out"
        include { min_level: 2 } }
'''


@pytest.fixture
def deploy(folder):
    path = os.path.join(folder, 'deploy.prototxt')
    with open(path, 'w') as f:
        f.write(DEPLOY)
    return path


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_caffe_is_doppio():
    from caffe.proto import caffe_pb2
    from doppio.proto import doppio_pb2
    assert caffe.Net is doppio.Net and caffe.io is doppio.io
    assert caffe_pb2 is doppio_pb2
    from caffe import draw as caffe_draw
    from doppio import draw
    assert caffe_draw is draw
    assert 'InnerProduct' in caffe.layer_type_list()
    assert 'Python' in caffe.layer_type_list()
    assert re.match(r'\d+\.\d+\.\d+$', caffe.__version__)


def test_phase_level_and_stages_choose_the_layers(deploy):
    names = lambda net: list(net._layer_names)  # noqa: E731
    assert names(caffe.Net(deploy, caffe.TEST)) == ['data', 'ip', 'relu', 'prob']
    assert 'only_train' in names(caffe.Net(deploy, caffe.TRAIN))
    assert 'staged' in names(caffe.Net(deploy, caffe.TEST, stages=['extra']))
    assert 'leveled' in names(caffe.Net(deploy, caffe.TEST, level=2))
    assert caffe.Net(deploy, phase=caffe.TRAIN).phase == caffe.TRAIN


def test_structure_as_pycaffe_lists_it(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    assert list(net.blobs) == ['data', 'ip', 'relu', 'prob']
    assert list(net.params) == ['ip']
    assert [b.shape for b in net.params['ip']] == [(3, 4), (3,)]
    assert list(net.layer_dict) == ['data', 'ip', 'relu', 'prob']
    assert [layer.type for layer in net.layers] == ['Input', 'InnerProduct', 'ReLU',
                                                    'Softmax']
    assert net.inputs == ['data'] and net.outputs == ['prob']
    assert net.top_names['ip'] == ['ip'] and net.bottom_names['relu'] == ['ip']
    assert net.bottom_names['data'] == []
    assert list(net.blob_loss_weights.values()) == [0, 0, 0, 0]
    blob = net.blobs['data']
    assert (blob.num, blob.channels, blob.height, blob.width, blob.count) == (2, 4, 1, 1, 8)


def test_forward_equals_numpy_and_returns_views(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    x = np.random.RandomState(1).randn(2, 4).astype(np.float32)
    out = net.forward(data=x)
    w, b = net.params['ip'][0].data, net.params['ip'][1].data
    expected = softmax(np.maximum(x @ w.T + b, 0))
    np.testing.assert_allclose(out['prob'], expected, rtol=1e-5, atol=1e-6)
    # The result aliases the blob: no copy.
    out['prob'][0, 0] = 42
    assert net.blobs['prob'].data[0, 0] == 42
    # start/end and extra blobs.
    part = net.forward(end='ip', blobs=['data'])
    assert set(part) == {'ip', 'data'}
    np.testing.assert_allclose(part['ip'], x @ w.T + b, rtol=1e-5, atol=1e-6)
    net.blobs['relu'].data[...] = 0
    tail = net.forward(start='prob')
    np.testing.assert_allclose(tail['prob'], np.full((2, 3), 1 / 3), rtol=1e-6)


def test_views_write_through_and_keep_the_blob_alive(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    weights = net.params['ip'][0].data
    weights[...] = 0  # net surgery through the view
    net.params['ip'][1].data[...] = [1, 2, 3]
    out = net.forward(data=np.ones((2, 4), np.float32))
    np.testing.assert_allclose(out['prob'][0], softmax(np.array([[1., 2, 3]]))[0], rtol=1e-6)
    view = net.blobs['prob'].data
    del net, out
    gc.collect()
    assert view.shape == (2, 3) and view.base is not None
    np.testing.assert_allclose(view.sum(axis=1), [1, 1], rtol=1e-6)


def test_backward_gives_the_input_gradient(deploy, folder):
    text = DEPLOY.replace('name: "deploy"', 'name: "deploy" force_backward: true')
    path = os.path.join(folder, 'fb.prototxt')
    with open(path, 'w') as f:
        f.write(text)
    net = caffe.Net(path, caffe.TEST)
    x = np.random.RandomState(2).randn(2, 4).astype(np.float32)
    net.forward(data=x)
    top = np.random.RandomState(3).randn(2, 3).astype(np.float32)
    grads = net.backward(prob=top, diffs=['ip'])
    w, b = net.params['ip'][0].data, net.params['ip'][1].data
    pre = x @ w.T + b
    p = softmax(np.maximum(pre, 0))
    d_relu = p * (top - (top * p).sum(axis=1, keepdims=True))
    d_ip = d_relu * (pre > 0)
    np.testing.assert_allclose(grads['ip'], d_ip, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads['data'], d_ip @ w, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(net.params['ip'][0].diff, d_ip.T @ x, rtol=1e-4, atol=1e-6)
    net.clear_param_diffs()
    assert not net.params['ip'][0].diff.any()


def test_forward_all_batches_any_number_of_items(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    x = np.random.RandomState(4).randn(5, 4).astype(np.float32)
    out = net.forward_all(data=x)
    w, b = net.params['ip'][0].data, net.params['ip'][1].data
    np.testing.assert_allclose(out['prob'], softmax(np.maximum(x @ w.T + b, 0)),
                               rtol=1e-5, atol=1e-6)
    assert out['prob'].shape == (5, 3)
    fwd, bwd = net.forward_backward_all(data=x, prob=np.ones((5, 3), np.float32))
    assert fwd['prob'].shape == (5, 3) and bwd['data'].shape == (5, 4)


def test_reshape_follows_the_input(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    net.blobs['data'].reshape(7, 4)
    net.reshape()
    assert net.blobs['prob'].shape == (7, 3)
    assert net.forward(data=np.zeros((7, 4), np.float32))['prob'].shape == (7, 3)


def test_weights_round_trip_protobuf_and_hdf5(deploy, folder):
    net = caffe.Net(deploy, caffe.TEST)
    saved = net.params['ip'][0].data.copy()
    model = os.path.join(folder, 'w.caffemodel')
    h5 = os.path.join(folder, 'w.caffemodel.h5')
    net.save(model)
    net.save_hdf5(h5)
    caffe.set_random_seed(99)
    other = caffe.Net(deploy, caffe.TEST)
    assert not np.array_equal(other.params['ip'][0].data, saved)
    other.copy_from(model)
    np.testing.assert_array_equal(other.params['ip'][0].data, saved)
    third = caffe.Net(deploy, model, caffe.TEST)  # pycaffe's old signature
    np.testing.assert_array_equal(third.params['ip'][0].data, saved)
    fourth = caffe.Net(deploy, caffe.TEST, weights=h5)
    np.testing.assert_array_equal(fourth.params['ip'][0].data, saved)
    other.params['ip'][0].data[...] = 0
    other.load_hdf5(h5)
    np.testing.assert_array_equal(other.params['ip'][0].data, saved)
    with pytest.raises(ValueError, match=r'\.h5'):
        net.save_hdf5(os.path.join(folder, 'w.bin'))


def test_share_with_shares_the_memory(deploy):
    a = caffe.Net(deploy, caffe.TEST)
    b = caffe.Net(deploy, caffe.TEST)
    b.share_with(a)
    a.params['ip'][0].data[...] = 7
    assert (b.params['ip'][0].data == 7).all()


def test_callbacks_run_around_each_layer(deploy):
    net = caffe.Net(deploy, caffe.TEST)
    seen = []
    net.before_forward(lambda i: seen.append(('bf', i)))
    net.after_forward(lambda i: seen.append(('af', i)))
    net.before_backward(lambda i: seen.append(('bb', i)))
    net.after_backward(lambda i: seen.append(('ab', i)))
    net.forward()
    assert seen == [(k, i) for i in range(4) for k in ('bf', 'af')]
    del seen[:]
    net.backward()
    assert seen == [(k, i) for i in reversed(range(4)) for k in ('bb', 'ab')]


def test_set_input_arrays_feeds_memory_data(folder):
    path = os.path.join(folder, 'mem.prototxt')
    with open(path, 'w') as f:
        f.write('''layer { name: "m" type: "MemoryData" top: "data" top: "label"
                 memory_data_param { batch_size: 2 channels: 1 height: 1 width: 3 } }''')
    net = caffe.Net(path, caffe.TEST)
    data = np.arange(12, dtype=np.float32).reshape(4, 1, 1, 3)
    labels = np.array([5, 6, 7, 8], np.float32)
    net.set_input_arrays(data, labels)
    del data  # the net keeps it
    gc.collect()
    first = net.forward()
    np.testing.assert_array_equal(first['label'], [5, 6])
    second = net.forward()
    np.testing.assert_array_equal(second['data'].ravel(), np.arange(6, 12))
    with pytest.raises(ValueError, match='float32'):
        net.set_input_arrays(np.zeros((2, 1, 1, 3)), labels[:2])
    with pytest.raises(ValueError, match=r'\(N, 1, 1, 3\)'):
        net.set_input_arrays(np.zeros((2, 1, 1, 4), np.float32), labels[:2])
    with pytest.raises(doppio.Error, match='multiple of the batch size'):
        net.set_input_arrays(np.zeros((3, 1, 1, 3), np.float32), labels[:3])


def test_bad_input_is_a_clear_python_error(deploy, folder):
    net = caffe.Net(deploy, caffe.TEST)
    with pytest.raises(ValueError, match=r"blob 'data' has shape \(2, 4\).*\(3, 4\)"):
        net.forward(data=np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match='float32'):
        net.blobs['data'].data = np.array([['a'] * 4] * 2)
    with pytest.raises(ValueError, match='inputs'):
        net.forward(nonsense=np.zeros((2, 4), np.float32))
    with pytest.raises(KeyError, match='nolayer'):
        net.forward(end='nolayer')
    missing = os.path.join(folder, 'missing.prototxt')
    with pytest.raises(IOError, match='missing.prototxt') as error:
        caffe.Net(missing, caffe.TEST)
    assert error.value.filename == missing
    with pytest.raises(FileNotFoundError, match='nothere.caffemodel'):
        caffe.Net(deploy, caffe.TEST, weights=os.path.join(folder, 'nothere.caffemodel'))
    with pytest.raises(ValueError, match='phase'):
        caffe.Net(deploy, 7)
    bad = os.path.join(folder, 'bad.prototxt')
    with open(bad, 'w') as f:
        f.write('layer { name: "x" type: "NoSuchType" top: "x" }')
    with pytest.raises(doppio.Error, match="unknown type 'NoSuchType'"):
        caffe.Net(bad, caffe.TEST)
    # The net is still usable after those errors.
    x = np.ones((2, 4), np.float32)
    assert net.forward(data=x)['prob'].shape == (2, 3)


def test_forward_equals_doppio_test(folder):
    source = write_hdf5_data(folder, items=8)
    model = os.path.join(folder, 'mlp.prototxt')
    with open(model, 'w') as f:
        f.write(mlp_net(source, batch=4))
    caffe.set_random_seed(11)
    net = caffe.Net(model, caffe.TEST)
    weights = os.path.join(folder, 'mlp.caffemodel')
    net.save(weights)
    scored = caffe.Net(model, caffe.TEST, weights=weights)
    # forward returns views: copy each batch's values before the next.
    outputs = [{k: v.copy() for k, v in scored.forward().items()} for _ in range(2)]
    result = run_doppio('test', '--model=' + model, '--weights=' + weights,
                        '--iterations=2')
    assert result.returncode == 0, result.stderr
    for batch, out in enumerate(outputs):
        for name in ('loss', 'accuracy'):
            line = re.search(r'Batch %d, %s = ([-\d.e+]+)' % (batch, name), result.stderr)
            assert line, result.stderr
            assert float(line.group(1)) == pytest.approx(float(out[name]), rel=1e-5)
