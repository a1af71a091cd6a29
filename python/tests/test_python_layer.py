"""Layers written in Python (type: "Python"): in a Net, with a gradient check, trained by a
solver, in `doppio train`, and their errors."""
import os
import textwrap

import numpy as np
import pytest

import caffe
import doppio
from conftest import run_doppio, write_solver

LAYERS = '''
import numpy as np
import caffe


class ScaledSquare(caffe.Layer):
    """top = w * bottom**2 with one learnable scalar w (param_str: its first value)."""

    def setup(self, bottom, top):
        self.seen = (self.param_str, self.param_str_, self.phase)
        self.blobs.add_blob(1)
        self.blobs[0].data[...] = float(self.param_str)
        self.fail = False

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        if self.fail:
            raise RuntimeError('asked to fail')
        top[0].data[...] = self.blobs[0].data[0] * bottom[0].data ** 2

    def backward(self, top, propagate_down, bottom):
        x = bottom[0].data
        self.blobs[0].diff[...] += (top[0].diff * x ** 2).sum()
        if propagate_down[0]:
            bottom[0].diff[...] = top[0].diff * 2 * self.blobs[0].data[0] * x


class Data(caffe.Layer):
    """Batches of 4 vectors and a target, the same on every call order."""

    def setup(self, bottom, top):
        self.rng = np.random.RandomState(int(self.param_str))

    def reshape(self, bottom, top):
        top[0].reshape(4, 3)
        top[1].reshape(4, 3)

    def forward(self, bottom, top):
        x = self.rng.randn(4, 3).astype(np.float32)
        top[0].data[...] = x
        top[1].data[...] = 0.5 * x ** 2

    def backward(self, top, propagate_down, bottom):
        pass


class WithInit(ScaledSquare):
    """pycaffe's form: __init__ takes the LayerParameter and passes it on."""

    def __init__(self, p_object, *args, **kwargs):
        super().__init__(p_object)
        self.init_name = p_object.name
        self.init_param_str = p_object.python_param.param_str


class Broken(caffe.Layer):
    def setup(self, bottom, top):
        raise ValueError('bad param_str ' + repr(self.param_str))
'''

NET = '''
force_backward: true
layer { name: "data" type: "Input" top: "x" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "sq" type: "Python" bottom: "x" top: "y"
        python_param { module: "%(module)s" layer: "ScaledSquare" param_str: "1.5" } }
'''

TRAIN_NET = '''
layer { name: "data" type: "Python" top: "x" top: "target"
        python_param { module: "%(module)s" layer: "Data" param_str: "4" } }
layer { name: "sq" type: "Python" bottom: "x" top: "y"
        python_param { module: "%(module)s" layer: "ScaledSquare" param_str: "2" } }
layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "loss" }
'''


@pytest.fixture
def layers(folder, monkeypatch, request):
    """A module of Python layers on sys.path (a name of its own per test)."""
    module = 'layers_' + request.node.name.replace('[', '_').replace(']', '')
    with open(os.path.join(folder, module + '.py'), 'w') as f:
        f.write(LAYERS)
    monkeypatch.syspath_prepend(folder)
    return module


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, 'w') as f:
        f.write(textwrap.dedent(text))
    return path


def test_the_layer_gets_param_str_phase_and_runs(folder, layers):
    net = caffe.Net(write(folder, 'n.prototxt', NET % {'module': layers}), caffe.TEST)
    layer = net.layers[1]
    assert isinstance(layer, caffe.Layer) and layer.type == 'Python'
    assert layer.seen == ('1.5', '1.5', caffe.TEST)
    assert (layer.shard_rank, layer.shard_size) == (0, 1)
    assert list(net.params) == ['sq'] and net.params['sq'][0].data[0] == 1.5
    x = np.array([[1, -2, 3], [0.5, 0, -1]], np.float32)
    np.testing.assert_allclose(net.forward(x=x)['y'], 1.5 * x ** 2)


def test_init_gets_the_layer_parameter(folder, layers):
    text = (NET % {'module': layers}).replace('"ScaledSquare"', '"WithInit"')
    layer = caffe.Net(write(folder, 'n.prototxt', text), caffe.TEST).layers[1]
    assert (layer.init_name, layer.init_param_str) == ('sq', '1.5')
    assert layer.layer_param.python_param.layer == 'WithInit'


def test_gradients_match_finite_differences(folder, layers):
    net = caffe.Net(write(folder, 'n.prototxt', NET % {'module': layers}), caffe.TRAIN)
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3).astype(np.float32)
    weight = rng.randn(2, 3).astype(np.float32)

    def objective(x_value, w_value):
        net.params['sq'][0].data[...] = w_value
        return float((net.forward(x=x_value)['y'] * weight).sum())

    objective(x, 1.5)
    net.clear_param_diffs()
    net.blobs['y'].diff[...] = weight
    grads = net.backward()
    analytic_x = grads['x'].copy()
    analytic_w = net.params['sq'][0].diff[0]
    step = 1e-2
    numeric_x = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        numeric_x[index] = (objective(up, 1.5) - objective(down, 1.5)) / (2 * step)
    numeric_w = (objective(x, 1.5 + step) - objective(x, 1.5 - step)) / (2 * step)
    np.testing.assert_allclose(analytic_x, numeric_x, rtol=1e-2, atol=1e-3)
    assert analytic_w == pytest.approx(numeric_w, rel=1e-2)


def test_a_solver_trains_the_python_parameter(folder, layers):
    path = write_solver(folder, TRAIN_NET % {'module': layers}, base_lr=0.05,
                        momentum=0, weight_decay=0, max_iter=200, display=0,
                        snapshot_after_train='false')
    solver = caffe.SGDSolver(path)
    solver.step(200)
    # The target is 0.5 x^2: the scale goes from 2 to 0.5.
    assert solver.net.params['sq'][0].data[0] == pytest.approx(0.5, abs=0.02)


def test_a_python_exception_is_an_error_naming_the_layer(folder, layers):
    net = caffe.Net(write(folder, 'n.prototxt', NET % {'module': layers}), caffe.TEST)
    net.layers[1].fail = True
    with pytest.raises(doppio.Error) as error:
        net.forward(x=np.ones((2, 3), np.float32))
    message = str(error.value)
    assert "layer 'sq' (Python)" in message and 'forward' in message
    assert 'Traceback' in message and 'asked to fail' in message
    net.layers[1].fail = False
    np.testing.assert_allclose(net.forward(x=np.ones((2, 3), np.float32))['y'], 1.5)


@pytest.mark.parametrize('module, cls, expected', [
    ('no_such_module_anywhere', 'ScaledSquare',
     "cannot import Python module 'no_such_module_anywhere'"),
    (None, 'NoSuchClass', "has no class 'NoSuchClass'"),
    (None, 'Broken', "bad param_str '1.5'"),
])
def test_layer_set_up_errors(folder, layers, module, cls, expected):
    text = (NET % {'module': module or layers}).replace('ScaledSquare', cls)
    with pytest.raises(doppio.Error, match="layer 'sq' \\(Python\\)") as error:
        caffe.Net(write(folder, 'n.prototxt', text), caffe.TEST)
    assert expected in str(error.value)


def test_doppio_train_runs_python_layers(folder, layers):
    path = write_solver(folder, TRAIN_NET % {'module': layers}, base_lr=0.05,
                        momentum=0, weight_decay=0, max_iter=20, display=10,
                        snapshot_after_train='false')
    env = {'PYTHONPATH': folder}
    result = run_doppio('train', '--solver=' + path, cwd=folder, env=env)
    assert result.returncode == 0, result.stderr
    assert 'Iteration 20, loss' in result.stderr
    broken = write_solver(folder, TRAIN_NET.replace('"ScaledSquare"', '"Broken"')
                          % {'module': layers}, name='broken.prototxt')
    result = run_doppio('train', '--solver=' + broken, cwd=folder, env=env)
    assert result.returncode == 1
    assert "layer 'sq' (Python)" in result.stderr and 'Traceback' in result.stderr
    assert 'ValueError: bad param_str' in result.stderr
