"""A data layer written in Python (layers/lenet_data_layer.py) feeding LeNet.

Shows a net with a layer of type "Python": from Python, net.layers[i] is the layer's own
object (its param_str, phase, shard_rank and shard_size as Doppio set them), and a solver
trains over it; the same prototxt also trains with the doppio tool:

    PYTHONPATH=build/python /usr/bin/python3 examples/python/python_data_layer.py
    PYTHONPATH=examples/python/layers build/tools/doppio train \\
        --solver=examples/python/lenet_python_data_solver.prototxt
"""
import argparse
import os
import sys

import caffe

# Where python_param's module is imported from: PYTHONPATH, or sys.path in a script.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'layers'))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--net', default='examples/python/lenet_python_data.prototxt')
    parser.add_argument('--solver',
                        default='examples/python/lenet_python_data_solver.prototxt')
    parser.add_argument('--iters', type=int, default=200)
    args = parser.parse_args()

    caffe.set_mode_cpu()
    net = caffe.Net(args.net, caffe.TRAIN)
    layer = net.layer_dict['mnist']
    print('layer mnist: %s, phase %s, shard %d of %d, param_str %s'
          % (type(layer).__name__, 'TRAIN' if layer.phase == caffe.TRAIN else 'TEST',
             layer.shard_rank, layer.shard_size, layer.param_str))
    net.forward()
    print('one batch: data %s, labels %s, loss %.4f (untrained)'
          % (net.blobs['data'].data.shape, net.blobs['label'].data[:10].astype(int).tolist(),
             net.blobs['loss'].data))

    # The solver's nets are the data-parallel trainer's: under mpirun each rank's Python
    # layer gets its own shard, as Data layers do.
    solver = caffe.get_solver(args.solver)
    layer = solver.net.layer_dict['mnist']
    print('rank %d: the solver\'s layer reads shard %d of %d'
          % (caffe.mpi_rank(), layer.shard_rank, layer.shard_size), flush=True)
    solver.step(args.iters)
    test_net = solver.test_nets[0]
    solver.share_weights(test_net)
    accuracy = sum(float(test_net.forward()['accuracy']) for _ in range(20)) / 20
    print('rank %d after %d iterations: loss %.4f, test accuracy %.2f%% (this rank\'s shard)'
          % (caffe.mpi_rank(), solver.iter, solver.net.blobs['loss'].data, 100 * accuracy))


if __name__ == '__main__':
    main()
