"""pycaffe's module-level functions, Blob and Layer on their own, NetSpec nets that train, and
the GIL released while the library computes."""
import os
import threading

import numpy as np
import pytest

import caffe
import doppio
from caffe import layers as L
from caffe import params as P
from conftest import write_hdf5_data

NET = '''
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 3 dim: 5 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 1 } } }
'''


@pytest.fixture
def net_file(folder):
    path = os.path.join(folder, 'net.prototxt')
    with open(path, 'w') as f:
        f.write(NET)
    return path


def test_set_random_seed_repeats_the_fillers(net_file):
    caffe.set_random_seed(123)
    a = caffe.Net(net_file, caffe.TEST).params['ip'][0].data.copy()
    b = caffe.Net(net_file, caffe.TEST).params['ip'][0].data.copy()
    caffe.set_random_seed(124)
    c = caffe.Net(net_file, caffe.TEST).params['ip'][0].data.copy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_gpu_mode_without_a_usable_gpu_is_an_error_naming_it(net_file):
    if doppio._doppio.gpu_count() > 0:
        pytest.skip('this machine has a GPU: the GPU suites run on it')
    caffe.set_device(0)
    caffe.set_mode_gpu()
    try:
        with pytest.raises(doppio.Error, match='GPU'):
            caffe.Net(net_file, caffe.TEST)
    finally:
        caffe.set_mode_cpu()
    assert caffe.Net(net_file, caffe.TEST).forward()['ip'].shape == (3, 4)
    with pytest.raises(doppio.Error, match='>= 0'):
        caffe.set_device(-1)


def test_blob_on_its_own():
    blob = caffe.Blob(2, 3)
    assert blob.shape == (2, 3) and blob.count == 6
    blob.data = np.arange(6).reshape(2, 3)
    assert blob.data.dtype == np.float32 and blob.data[1, 2] == 5
    blob.diff[...] = 1
    blob.reshape(3, 2)
    assert blob.shape == (3, 2) and blob.data.ravel()[5] == 5
    assert caffe.Blob().shape == ()
    with pytest.raises(ValueError, match='dimension'):
        caffe.Blob(-1)


def test_a_layer_of_a_net_sets_up_and_reshapes_blobs(net_file):
    net = caffe.Net(net_file, caffe.TEST)
    layer = net.layer_dict['ip']
    assert layer.type == 'InnerProduct' and len(layer.blobs) == 2
    bottom, top = caffe.Blob(7, 5), caffe.Blob()
    layer.reshape([bottom], [top])
    assert top.shape == (7, 4)
    layer.blobs.add_blob(4)
    assert len(net.params['ip']) == 3 and net.params['ip'][2].shape == (4,)


def test_timer_and_log():
    timer = caffe.Timer()
    timer.start()
    sum(range(10000))
    timer.stop()
    assert timer.ms > 0 and timer.seconds == pytest.approx(timer.ms / 1e3)
    caffe.init_log(0)
    caffe.log('a line from Python')


def lenet_like(source, batch):
    n = caffe.NetSpec()
    n.data, n.label = L.HDF5Data(source=source, batch_size=batch, ntop=2)
    n.ip1 = L.InnerProduct(n.data, num_output=16, weight_filler=dict(type='xavier'))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=3, weight_filler=dict(type='xavier'))
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    return n.to_proto()


def netspec_solver(folder, settings):
    """A solver file over lenet_like's net, written with NetSpec, on 96 HDF5 records."""
    net_path = os.path.join(folder, 'spec.prototxt')
    with open(net_path, 'w') as f:
        f.write(str(lenet_like(write_hdf5_data(folder, items=96), 16)))
    solver_path = os.path.join(folder, 'solver.prototxt')
    with open(solver_path, 'w') as f:
        f.write('net: "%s"\nlr_policy: "fixed"\nmax_iter: 100000\ndisplay: 0\n'
                'snapshot_after_train: false\n%s' % (net_path, settings))
    return solver_path


def test_a_netspec_net_builds_and_trains(folder):
    solver = caffe.SGDSolver(netspec_solver(folder, 'base_lr: 0.1\nmomentum: 0.9\n'
                                            'random_seed: 1\n'))
    solver.step(1)
    first = float(solver.net.blobs['loss'].data)
    solver.step(299)
    losses = [float(solver.net.forward()['loss']) for _ in range(6)]
    assert np.mean(losses) < 0.5 * first
    assert P.Pooling.MAX == 0


def test_the_gil_is_released_while_the_library_computes(folder):
    solver = caffe.SGDSolver(netspec_solver(folder, 'base_lr: 0.01\n'))
    stepping = threading.Thread(target=solver.step, args=(3000,))
    turns = 0
    stepping.start()
    while stepping.is_alive():
        turns += 1
    stepping.join()
    # Had step held the GIL, this loop would have run only before and after it.
    assert solver.iter == 3000 and turns > 1000
