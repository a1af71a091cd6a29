"""What the tests share: the build's tools and small nets written into a test's folder.

ctest runs the suite with PYTHONPATH=build/python and DOPPIO_BUILD_DIR set
(python/CMakeLists.txt).
"""
import os
import subprocess

import h5py
import numpy as np
import pytest

BUILD_DIR = os.path.abspath(os.environ.get('DOPPIO_BUILD_DIR', os.path.join(
    os.path.dirname(__file__), '..', '..', 'build')))
DOPPIO = os.path.join(BUILD_DIR, 'tools', 'doppio')
PYTHON_TREE = os.path.join(BUILD_DIR, 'python')


def run_doppio(*args, cwd=None, env=None):
    """Runs the doppio tool; returns the finished process (output captured)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([DOPPIO] + list(args), cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=300)


def write_hdf5_data(folder, name='data.h5', items=64, features=6, seed=3):
    """An HDF5Data source of `items` float vectors with labels 0..2; returns the list."""
    rng = np.random.RandomState(seed)
    data = rng.randn(items, features).astype(np.float32)
    labels = (np.abs(data[:, 0] * 2).astype(int) % 3).astype(np.float32)
    path = os.path.join(folder, name)
    with h5py.File(path, 'w') as f:
        f['data'] = data
        f['label'] = labels
    listing = os.path.join(folder, name + '.txt')
    with open(listing, 'w') as f:
        f.write(path + '\n')
    return listing


def mlp_net(source, batch, extra=''):
    """HDF5Data -> InnerProduct -> ReLU -> InnerProduct -> SoftmaxWithLoss (+ Accuracy)."""
    return '''
name: "mlp"
layer {{ name: "data" type: "HDF5Data" top: "data" top: "label"
        hdf5_data_param {{ source: "{source}" batch_size: {batch} }} }}
layer {{ name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
        inner_product_param {{ num_output: 8 weight_filler {{ type: "xavier" }}
                               bias_filler {{ type: "constant" value: 0.1 }} }} }}
layer {{ name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }}
layer {{ name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param {{ num_output: 3 weight_filler {{ type: "xavier" }} }} }}
layer {{ name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }}
layer {{ name: "accuracy" type: "Accuracy" bottom: "ip2" bottom: "label" top: "accuracy"
        include {{ phase: TEST }} }}
{extra}
'''.format(source=source, batch=batch, extra=extra)


def write_solver(folder, net_text, name='solver.prototxt', **fields):
    """A solver file over a net file written beside it; fields override the defaults."""
    net_path = os.path.join(folder, name + '.net.prototxt')
    with open(net_path, 'w') as f:
        f.write(net_text)
    settings = dict(base_lr=0.05, momentum=0.9, weight_decay=0.0005,
                    lr_policy='"fixed"', max_iter=12, display=4, random_seed=5,
                    snapshot_prefix='"%s"' % os.path.join(folder, 'snap'),
                    snapshot_after_train='true')
    settings.update(fields)
    lines = ['net: "%s"' % net_path] + ['%s: %s' % kv for kv in settings.items()]
    path = os.path.join(folder, name)
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


@pytest.fixture
def folder(tmp_path):
    return str(tmp_path)
