"""A script that trains with caffe.get_solver under `mpirun -np 2` learns what the same
script learns alone with the same global batch, and its Python data layer reads its shard."""
import os
import shutil
import subprocess
import sys

import numpy as np

from conftest import PYTHON_TREE, write_solver

HERE = os.path.dirname(os.path.abspath(__file__))
NET = '''
layer { name: "data" type: "Python" top: "data" top: "label"
        python_param { module: "shard_data_layer" layer: "ShardData" param_str: "%d" } }
layer { name: "ip1" type: "InnerProduct" bottom: "data" top: "ip1"
        inner_product_param { num_output: 8 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
'''


def train(folder, ranks, batch):
    solver = write_solver(folder, NET % batch, name='np%d.prototxt' % ranks, max_iter=10,
                          snapshot_after_train='false')
    output = os.path.join(folder, 'np%d.npz' % ranks)
    command = [sys.executable, os.path.join(HERE, 'distributed_train.py'), solver, output]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYTHON_TREE, HERE]),
               OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1',
               OMPI_MCA_rmaps_base_oversubscribe='1')
    if ranks > 1:
        mpirun = shutil.which('mpirun')
        assert mpirun, 'Open MPI (mpirun) is needed: apt-get install openmpi-bin'
        command = [mpirun, '--oversubscribe', '-np', str(ranks)] + command
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return [dict(np.load(output.replace('.npz', '.rank%d.npz' % r))) for r in range(ranks)]


def test_two_ranks_learn_what_one_process_learns(folder):
    alone, = train(folder, 1, batch=8)
    rank0, rank1 = train(folder, 2, batch=4)
    np.testing.assert_array_equal(alone['shard'], [0, 1, 0, 1])
    np.testing.assert_array_equal(rank0['shard'], [0, 2, 0, 2])
    np.testing.assert_array_equal(rank1['shard'], [1, 2, 1, 2])
    # Each rank read its half of every global batch.
    np.testing.assert_array_equal(alone['first_records'] % 64, np.arange(10) * 8 % 64)
    np.testing.assert_array_equal(rank0['first_records'], alone['first_records'])
    np.testing.assert_array_equal(rank1['first_records'], alone['first_records'] + 4)
    weights = [k for k in alone if k not in ('shard', 'first_records')]
    assert len(weights) == 4
    for key in weights:
        # The ranks agree exactly; one process differs only by the order of the sums.
        np.testing.assert_array_equal(rank0[key], rank1[key])
        np.testing.assert_allclose(rank0[key], alone[key], rtol=1e-5, atol=1e-6)
