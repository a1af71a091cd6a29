#!/usr/bin/python3
"""What pycaffe's API costs on top of the C++ forward: net.forward() on LeNet at batch 1.

Timings in one process, taking turns for several rounds, each keeping its best (timings
on a shared machine vary by +-20%):
  forward        net.forward() on LeNet: the Python method (the output dict of views)
                 plus the native call;
  native         net._forward(0, last) on LeNet: Net::ForwardFromTo behind one pybind11
                 call that releases the GIL;
  tiny forward   net.forward() on a net of one Input layer (one output, as LeNet's);
  tiny native    net._forward(0, 0) on it: the pybind11 call with next to no forward.
The Python method's cost does not depend on the layers' work, so it is measured where
there is none: the overhead above the C++ forward is (tiny forward - tiny native) +
tiny native. On LeNet, forward - native is the same cost read against a forward of
~1 ms, where the noise of the two timings is larger than it. Run with the build's package
on the path:

    PYTHONPATH=build/python /usr/bin/python3 bench/python_forward_overhead.py
    PYTHONPATH=build/python /usr/bin/python3 bench/python_forward_overhead.py --calls 20000
"""
import argparse
import os
import tempfile
import time

import numpy as np

import caffe

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_ONLY = ('layer { name: "data" type: "Input" top: "data" '
              'input_param { shape { dim: 1 dim: 1 dim: 28 dim: 28 } } }')


def best_microseconds(function, calls, rounds_best):
    start = time.perf_counter()
    for _ in range(calls):
        function()
    elapsed = (time.perf_counter() - start) / calls * 1e6
    return min(rounds_best, elapsed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--model', default=os.path.join(HERE, '..', 'models', 'lenet',
                                                        'deploy.prototxt'))
    parser.add_argument('--calls', type=int, default=5000, help='calls per timing')
    parser.add_argument('--rounds', type=int, default=7)
    args = parser.parse_args()

    caffe.init_log(2)
    net = caffe.Net(args.model, caffe.TEST)
    shape = net.blobs[net.inputs[0]].shape
    net.blobs[net.inputs[0]].reshape(1, *shape[1:])
    net.reshape()
    net.blobs[net.inputs[0]].data[...] = np.random.RandomState(0).rand(1, *shape[1:])
    last = len(net.layers) - 1
    with tempfile.NamedTemporaryFile('w', suffix='.prototxt', delete=False) as f:
        f.write(INPUT_ONLY)
    tiny = caffe.Net(f.name, caffe.TEST)
    os.unlink(f.name)

    timings = {'forward': lambda: net.forward(),
               'native': lambda: net._forward(0, last),
               'tiny forward': lambda: tiny.forward(),
               'tiny native': lambda: tiny._forward(0, 0)}
    best = {name: float('inf') for name in timings}
    for function in timings.values():  # warm-up
        best_microseconds(function, args.calls // 10 + 1, float('inf'))
    for round_index in range(args.rounds):
        names = list(timings)
        names = names[round_index % 4:] + names[:round_index % 4]
        for name in names:
            best[name] = best_microseconds(timings[name], args.calls, best[name])
    overhead = best['tiny forward']
    print('net: %s, batch 1, %d calls x %d rounds, best of each' % (
        os.path.relpath(args.model), args.calls, args.rounds))
    print('%-14s %9s' % ('timing', 'us/call'))
    for name in timings:
        print('%-14s %9.2f' % (name, best[name]))
    print('overhead above the C++ forward: %.2f us (target <= 20), %.1f%% of LeNet\'s '
          'forward(); on LeNet forward - native reads %.2f us' % (
              overhead, 100 * overhead / best['forward'], best['forward'] - best['native']))


if __name__ == '__main__':
    main()
