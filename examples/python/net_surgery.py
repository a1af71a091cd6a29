"""Net surgery on LeNet: edit weights in place, then make the net fully convolutional.

Caffe's net_surgery example for LeNet. net.params[name][i].data is a numpy view of the
blob, so writing into it changes the net: first conv1's filter 0 becomes an edge detector
(checked against numpy), then ip1 and ip2's weights are transplanted into the
convolutions of examples/python/lenet_full_conv.prototxt, which classifies every 28 x 28
window of a 56 x 56 image at once, and that net is saved with net.save.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/net_surgery.py \\
        models/lenet/lenet_iter_10000.caffemodel lenet_full_conv.caffemodel
"""
import argparse

import numpy as np

import caffe
from mnist_digits import test_digits


def correlate(image, kernel):
    """What a convolution layer computes for one filter (no padding, stride 1)."""
    k = kernel.shape[0]
    rows, cols = image.shape[0] - k + 1, image.shape[1] - k + 1
    out = np.zeros((rows, cols), dtype=np.float32)
    for i in range(k):
        for j in range(k):
            out += kernel[i, j] * image[i:i + rows, j:j + cols]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('weights', help='a trained LeNet (.caffemodel)')
    parser.add_argument('output', help='where to write the fully convolutional weights')
    parser.add_argument('--model', default='models/lenet/deploy.prototxt')
    parser.add_argument('--full-conv', default='examples/python/lenet_full_conv.prototxt')
    args = parser.parse_args()

    caffe.set_mode_cpu()
    net = caffe.Net(args.model, caffe.TEST, weights=args.weights)
    for name, blobs in net.params.items():
        print('%-6s weights %-16s biases %s' % (name, blobs[0].data.shape, blobs[1].data.shape))

    images, labels, _ = test_digits(200)
    first = [np.flatnonzero(labels == digit)[0] for digit in (1, 2, 3, 4)]
    digits, labels = images[first].astype(np.float32) * 0.00390625, labels[first]

    # 1. Designer filters: conv1's filter 0 becomes a horizontal edge detector.
    edge = np.zeros((5, 5), dtype=np.float32)
    edge[1], edge[3] = -1, 1
    net.params['conv1'][0].data[0, 0] = edge
    net.params['conv1'][1].data[0] = 0
    net.blobs['data'].reshape(1, 1, 28, 28)
    net.reshape()
    net.forward(data=digits[:1], end='conv1')
    response = net.blobs['conv1'].data[0, 0]
    print('conv1 filter 0 edited: response %s, largest difference from numpy %.2g'
          % (response.shape, np.abs(response - correlate(digits[0, 0], edge)).max()))

    # 2. Casting the classifier into convolutions. The full-conv net takes conv1 and conv2
    # from the weights file by name; ip1-conv and ip2-conv are new, filled from ip1 and ip2.
    net = caffe.Net(args.model, caffe.TEST, weights=args.weights)  # the unedited weights
    net_full_conv = caffe.Net(args.full_conv, caffe.TEST, weights=args.weights)
    for fc, conv in (('ip1', 'ip1-conv'), ('ip2', 'ip2-conv')):
        fc_weights, fc_biases = (b.data for b in net.params[fc])
        conv_weights, conv_biases = (b.data for b in net_full_conv.params[conv])
        print('%s weights %s -> %s %s' % (fc, fc_weights.shape, conv, conv_weights.shape))
        conv_weights.flat = fc_weights.flat  # flat unrolls both into the same order
        conv_biases[...] = fc_biases
    net_full_conv.save(args.output)
    print('saved %s' % args.output)

    # Four digits in a 2 x 2 square: the full-conv net classifies each 28 x 28 window.
    square = np.block([[digits[0, 0], digits[1, 0]], [digits[2, 0], digits[3, 0]]])
    prob = net_full_conv.forward(data=square[np.newaxis, np.newaxis])['prob'][0]
    print('digits %s in a square; classes of its 8 x 8 windows (stride 4):'
          % labels.tolist())
    print(prob.argmax(axis=0))
    net.blobs['data'].reshape(1, 1, 28, 28)
    net.reshape()
    corner = net.forward(data=digits[3:4])['prob'][0]
    print('bottom-right window against the original net on its digit: largest difference %.2g'
          % np.abs(prob[:, 7, 7] - corner).max())


if __name__ == '__main__':
    main()
