"""Write LeNet with NetSpec, train it by stepping the solver from Python, test it.

Caffe's 01-learning-lenet notebook as a script: caffe.NetSpec with layers (L) and params
(P) writes the train and test nets, a SolverParameter written from Python points at them,
caffe.SGDSolver builds the solver, and the loop steps it (solver.step), reads the loss
from solver.net.blobs and scores solver.test_nets[0] batch by batch.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/learn_lenet_netspec.py \\
        --iters 500 --out examples/python/lenet_netspec

The weights end in <out>/lenet_iter_<iters>.caffemodel, with models/lenet/deploy.prototxt's
layer names (classify_lenet.py and net_surgery.py read them).
"""
import argparse
import os

import numpy as np

import caffe
from caffe import layers as L, params as P
from caffe.proto import caffe_pb2


def lenet(lmdb, batch_size):
    """LeNet over an LMDB of digits: Caffe's models/lenet with the notebook's fillers."""
    n = caffe.NetSpec()
    n.data, n.label = L.Data(batch_size=batch_size, backend=P.Data.LMDB, source=lmdb,
                             transform_param=dict(scale=1. / 256), ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20,
                            weight_filler=dict(type='xavier'))
    n.pool1 = L.Pooling(n.conv1, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.conv2 = L.Convolution(n.pool1, kernel_size=5, num_output=50,
                            weight_filler=dict(type='xavier'))
    n.pool2 = L.Pooling(n.conv2, kernel_size=2, stride=2, pool=P.Pooling.MAX)
    n.ip1 = L.InnerProduct(n.pool2, num_output=500, weight_filler=dict(type='xavier'))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, num_output=10, weight_filler=dict(type='xavier'))
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    proto = n.to_proto()
    proto.name = 'LeNet'
    return proto


def write_solver(out, iters):
    """A solver prototxt for the two nets, Caffe's lenet_solver settings."""
    s = caffe_pb2.SolverParameter()
    s.train_net = os.path.join(out, 'lenet_train.prototxt')
    s.test_net.append(os.path.join(out, 'lenet_test.prototxt'))
    s.test_iter.append(20)
    s.test_interval = iters + 1  # the tests run from Python, below
    s.test_initialization = False
    s.base_lr = 0.01
    s.momentum = 0.9
    s.weight_decay = 0.0005
    s.lr_policy = 'inv'
    s.gamma = 0.0001
    s.power = 0.75
    s.display = 0
    s.max_iter = iters
    s.snapshot_prefix = os.path.join(out, 'lenet')
    path = os.path.join(out, 'lenet_solver.prototxt')
    with open(path, 'w') as f:
        f.write(str(s))
    return path


def test_accuracy(net, batches):
    """The fraction of digits the net gets right over `batches` batches of its data layer."""
    correct = total = 0
    for _ in range(batches):
        net.forward()
        predicted = net.blobs['ip2'].data.argmax(axis=1)
        correct += int((predicted == net.blobs['label'].data).sum())
        total += len(predicted)
    return correct / total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--iters', type=int, default=500)
    parser.add_argument('--display', type=int, default=50, help='print the loss every N')
    parser.add_argument('--test-interval', type=int, default=250)
    parser.add_argument('--out', default='examples/python/lenet_netspec')
    parser.add_argument('--train-lmdb', default='data/mnist/mnist_train_lmdb')
    parser.add_argument('--test-lmdb', default='data/mnist/mnist_test_lmdb')
    args = parser.parse_args()

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, 'lenet_train.prototxt'), 'w') as f:
        f.write(str(lenet(args.train_lmdb, 64)))
    with open(os.path.join(args.out, 'lenet_test.prototxt'), 'w') as f:
        f.write(str(lenet(args.test_lmdb, 100)))
    solver_file = write_solver(args.out, args.iters)

    caffe.set_mode_cpu()
    solver = caffe.SGDSolver(solver_file)
    for name, blob in solver.net.blobs.items():
        print('%-6s %s' % (name, blob.data.shape))

    test_net = solver.test_nets[0]
    solver.share_weights(test_net)  # the test net scores the training net's weights
    losses = np.zeros(args.iters)
    while solver.iter < args.iters:
        solver.step(1)
        losses[solver.iter - 1] = solver.net.blobs['loss'].data
        if solver.iter % args.display == 0:
            print('iteration %4d, loss %.4f' % (solver.iter, losses[solver.iter - 1]))
        if solver.iter % args.test_interval == 0 or solver.iter == args.iters:
            print('iteration %4d, test accuracy %.2f%%'
                  % (solver.iter, 100 * test_accuracy(test_net, 20)))
    solver.snapshot()
    print('weights: %s_iter_%d.caffemodel' % (solver.param.snapshot_prefix, solver.iter))


if __name__ == '__main__':
    main()
