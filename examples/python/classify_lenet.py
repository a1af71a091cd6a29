"""Classify MNIST test digits with a trained LeNet and print the accuracy.

Shows: caffe.Net(prototxt, caffe.TEST, weights=...), reshaping the input blob to a batch,
net.forward(data=...) and reading the output blob, as pycaffe's classification examples do.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/classify_lenet.py \\
        models/lenet/lenet_iter_10000.caffemodel

The digits come from data/mnist/mnist_test_lmdb when python3-lmdb is installed, else from
the MNIST files beside it (mnist_digits.py).
"""
import argparse

import numpy as np

import caffe
from mnist_digits import test_digits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('weights', help='a trained LeNet (.caffemodel)')
    parser.add_argument('--model', default='models/lenet/deploy.prototxt',
                        help='the deploy net (default: %(default)s)')
    parser.add_argument('--batch', type=int, default=100)
    parser.add_argument('--limit', type=int, help='classify only the first N digits')
    args = parser.parse_args()

    caffe.set_mode_cpu()
    net = caffe.Net(args.model, caffe.TEST, weights=args.weights)
    images, labels, source = test_digits(args.limit)
    print('%d digits from %s' % (len(images), source))

    # The deploy net takes one fixed batch; make it ours, then let the layers follow.
    net.blobs['data'].reshape(args.batch, *images.shape[1:])
    net.reshape()
    output = net.outputs[0]
    correct = 0
    for begin in range(0, len(images), args.batch):
        batch = images[begin:begin + args.batch]
        real = len(batch)
        data = np.zeros(net.blobs['data'].data.shape, dtype=np.float32)
        data[:real] = batch * 0.00390625  # the training nets' transform_param.scale
        prob = net.forward(data=data)[output]
        predicted = prob[:real].argmax(axis=1)
        correct += int((predicted == labels[begin:begin + real]).sum())
        if begin == 0:
            print('first digits: labels %s, predicted %s, p = %s' % (
                labels[:8].tolist(), predicted[:8].tolist(),
                ' '.join('%.3f' % p for p in prob[np.arange(8), predicted[:8]])))
    print('accuracy %.2f%% (%d of %d)' % (100.0 * correct / len(images), correct,
                                          len(images)))


if __name__ == '__main__':
    main()
