"""The solvers from Python: the six classes and get_solver, stepping that equals
`doppio train` bit for bit, snapshots and resuming, a hand-computed update, callbacks."""
import gc
import os

import numpy as np
import pytest

import caffe
import doppio
from conftest import mlp_net, run_doppio, write_hdf5_data, write_solver


def solver_file(folder, name='solver.prototxt', batch=8, **fields):
    source = write_hdf5_data(folder)
    fields.setdefault('snapshot_prefix', '"%s"' % os.path.join(folder, name + '_snap'))
    return write_solver(folder, mlp_net(source, batch), name=name, test_iter=2,
                        test_interval=6, **fields)


def weights_of(net):
    return {name: [blob.data.copy() for blob in blobs] for name, blobs in net.params.items()}


def load_weights(model_file, weights_file):
    net = caffe.Net(model_file, caffe.TEST, weights=weights_file)
    return weights_of(net)


def assert_same_bits(a, b):
    assert a.keys() == b.keys()
    for name in a:
        for x, y in zip(a[name], b[name]):
            np.testing.assert_array_equal(x, y, err_msg=name)


def test_solver_classes_and_get_solver(folder):
    path = solver_file(folder, type='"Nesterov"')
    assert isinstance(caffe.get_solver(path), caffe.NesterovSolver)
    # The class, not the file's type, decides (the file says Nesterov).
    for cls, kind, momentum in [
            (caffe.SGDSolver, 'SGD', 0.9), (caffe.NesterovSolver, 'Nesterov', 0.9),
            (caffe.AdaGradSolver, 'AdaGrad', 0), (caffe.RMSPropSolver, 'RMSProp', 0),
            (caffe.AdaDeltaSolver, 'AdaDelta', 0.9), (caffe.AdamSolver, 'Adam', 0.9)]:
        solver = cls(solver_file(folder, name=kind + '.prototxt', type='"Nesterov"',
                                 momentum=momentum))
        assert solver.type == kind and isinstance(solver, caffe.Solver)
    solver = caffe.SGDSolver(path)
    assert solver.iter == 0
    assert solver.param.base_lr == pytest.approx(0.05)
    assert len(solver.test_nets) == 1 and solver.test_nets[0].phase == caffe.TEST


def test_stepping_from_python_equals_doppio_train(folder):
    path = solver_file(folder)
    result = run_doppio('train', '--solver=' + path, cwd=folder)
    assert result.returncode == 0, result.stderr
    trained = load_weights(path + '.net.prototxt', path + '_snap_iter_12.caffemodel')

    solver = caffe.get_solver(solver_file(folder, name='py.prototxt'))
    solver.step(5)
    assert solver.iter == 5
    solver.step(7)
    assert_same_bits(weights_of(solver.net), trained)
    # solve() is the same run again, with the final snapshot.
    again = caffe.get_solver(solver_file(folder, name='again.prototxt'))
    again.solve()
    assert again.iter == 12
    assert_same_bits(load_weights(path + '.net.prototxt',
                                  os.path.join(folder, 'again.prototxt_snap_iter_12.caffemodel')),
                     trained)


def test_snapshot_restore_and_resume_continue_exactly(folder):
    whole = caffe.get_solver(solver_file(folder, name='whole.prototxt'))
    whole.step(12)
    first = caffe.get_solver(solver_file(folder, name='part.prototxt'))
    first.step(4)
    first.snapshot()
    state = os.path.join(folder, 'part.prototxt_snap_iter_4.solverstate')
    assert os.path.exists(state)
    restored = caffe.get_solver(solver_file(folder, name='part.prototxt'))
    restored.restore(state)
    assert restored.iter == 4
    assert_same_bits(weights_of(restored.net), weights_of(first.net))
    restored.step(8)
    assert_same_bits(weights_of(restored.net), weights_of(whole.net))
    resumed = caffe.get_solver(solver_file(folder, name='part.prototxt'))
    resumed.solve(resume=state)
    assert_same_bits(weights_of(resumed.net), weights_of(whole.net))
    with pytest.raises(FileNotFoundError, match='nosuch.solverstate'):
        resumed.restore(os.path.join(folder, 'nosuch.solverstate'))


def test_apply_update_is_sgd_by_hand(folder):
    solver = caffe.SGDSolver(solver_file(folder, momentum=0, weight_decay=0, base_lr=0.1))
    net = solver.net
    net.clear_param_diffs()
    net.forward()
    net.backward()
    before = weights_of(net)
    diffs = {name: [b.diff.copy() for b in blobs] for name, blobs in net.params.items()}
    assert solver.apply_update() is True
    for name, blobs in net.params.items():
        for blob, w, g in zip(blobs, before[name], diffs[name]):
            np.testing.assert_allclose(blob.data, w - 0.1 * g, rtol=1e-6, atol=1e-7)


def test_the_net_outlives_its_solver_and_shares_weights(folder):
    solver = caffe.SGDSolver(solver_file(folder))
    net = solver.net
    other = caffe.Net(solver_file(folder, name='o.prototxt') + '.net.prototxt', caffe.TEST)
    solver.share_weights(other)
    solver.step(2)
    assert_same_bits(weights_of(other), weights_of(net))
    del solver
    gc.collect()
    assert np.isfinite(net.forward()['loss'])


def test_callbacks_run_every_iteration(folder):
    solver = caffe.SGDSolver(solver_file(folder))
    calls = []
    solver.add_callback(lambda: calls.append('start'), lambda: calls.append('gradients'))
    solver.step(3)
    assert calls == ['start', 'gradients'] * 3


def test_caffe_multi_gpu_calls_accepted_only_where_they_mean_the_same(folder):
    assert caffe.solver_count() == 1 and caffe.solver_rank() == 0
    caffe.set_solver_count(1)
    caffe.set_solver_rank(0)
    caffe.set_multiprocess(True)
    solver = caffe.SGDSolver(solver_file(folder))
    nccl = caffe.NCCL(solver, caffe.NCCL.new_uid())
    nccl.bcast()
    solver.add_callback(nccl)
    solver.step(1)
    with pytest.raises(doppio.Error, match='mpirun -np 2'):
        caffe.set_solver_count(2)
    with pytest.raises(doppio.Error, match='rank 0'):
        caffe.set_solver_rank(1)


def test_bad_solver_files(folder):
    with pytest.raises(FileNotFoundError, match='none.prototxt'):
        caffe.SGDSolver(os.path.join(folder, 'none.prototxt'))
    path = os.path.join(folder, 'broken.prototxt')
    with open(path, 'w') as f:
        f.write('base_lr: "fast"\n')
    with pytest.raises(doppio.Error, match='broken.prototxt'):
        caffe.get_solver(path)
