#!/usr/bin/env python3
"""Generate the network definitions under models/ in Caffe's text format.

    python3 scripts/gen_models.py            # (re)write every models/<net>/*.prototxt
    python3 scripts/gen_models.py --check    # exit 1 if a file on disk differs

The nets follow the architectures as published for Caffe (LeNet, CIFAR-10 quick and
full, BVLC AlexNet, BVLC GoogLeNet, Kaiming He's ResNet-50, VGG-16). Solvers are
short and kept by hand in models/<net>/solver.prototxt; this script writes only
train_val.prototxt and deploy.prototxt.

Every layer is a list of (field, value) pairs in the order they are printed; a value
that is itself a list of pairs prints as a nested message. Strings are quoted,
Enum values are printed bare.
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Enum(str):
    """A protobuf enum value: printed without quotes."""


TRAIN, TEST = Enum("TRAIN"), Enum("TEST")
MAX, AVE = Enum("MAX"), Enum("AVE")
LMDB = Enum("LMDB")


# --------------------------------------------------------------------------- printing

def _scalar(v):
    if isinstance(v, Enum):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % v
    if isinstance(v, float):
        r = repr(v)
        return r[:-2] if r.endswith(".0") else r
    return str(v)


def _emit(fields, indent, out):
    pad = "  " * indent
    for key, val in fields:
        if isinstance(val, list):
            out.append("%s%s {" % (pad, key))
            _emit(val, indent + 1, out)
            out.append("%s}" % pad)
        else:
            out.append("%s%s: %s" % (pad, key, _scalar(val)))


def net_text(name, layers):
    out = ['name: "%s"' % name]
    for layer in layers:
        out.append("layer {")
        _emit(layer, 1, out)
        out.append("}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- builders

class Builder:
    """Collects layers. With deploy=True fillers, learning-rate specs and the
    train-only layers are left out, as in Caffe's published deploy files."""

    def __init__(self, deploy):
        self.deploy = deploy
        self.layers = []
        # LeNet and the CIFAR-10 nets write "stride: 1" out; the others leave it
        self.explicit_stride = False

    def add(self, fields):
        self.layers.append(fields)

    # -- helpers for common pieces
    def _params(self, params):
        if self.deploy or params is None:
            return []
        return [("param", p) for p in params]

    def _filler(self, key, filler):
        if self.deploy or filler is None:
            return []
        return [(key, filler)]

    # -- layers
    def input(self, top, shape):
        self.add([("name", top), ("type", "Input"), ("top", top),
                  ("input_param", [("shape", [("dim", d) for d in shape])])])

    def data(self, name, phase, transform, source, batch):
        self.add([("name", name), ("type", "Data"), ("top", "data"), ("top", "label"),
                  ("include", [("phase", phase)]),
                  ("transform_param", transform),
                  ("data_param", [("source", source), ("batch_size", batch),
                                  ("backend", LMDB)])])

    def conv(self, name, bottom, top, num_output, kernel, stride=1, pad=0, group=1,
             bias_term=True, params=None, weight_filler=None, bias_filler=None):
        cp = [("num_output", num_output)]
        if not bias_term:
            cp.append(("bias_term", False))
        if pad:
            cp.append(("pad", pad))
        cp.append(("kernel_size", kernel))
        if stride != 1 or self.explicit_stride:
            cp.append(("stride", stride))
        if group != 1:
            cp.append(("group", group))
        cp += self._filler("weight_filler", weight_filler)
        if bias_term:
            cp += self._filler("bias_filler", bias_filler)
        self.add([("name", name), ("type", "Convolution"), ("bottom", bottom),
                  ("top", top)] + self._params(params) + [("convolution_param", cp)])

    def ip(self, name, bottom, top, num_output, params=None, weight_filler=None,
           bias_filler=None):
        p = [("num_output", num_output)]
        p += self._filler("weight_filler", weight_filler)
        p += self._filler("bias_filler", bias_filler)
        self.add([("name", name), ("type", "InnerProduct"), ("bottom", bottom),
                  ("top", top)] + self._params(params) + [("inner_product_param", p)])

    def relu(self, name, blob):
        self.add([("name", name), ("type", "ReLU"), ("bottom", blob), ("top", blob)])

    def pool(self, name, bottom, top, method, kernel, stride, pad=0):
        p = [("pool", method), ("kernel_size", kernel), ("stride", stride)]
        if pad:
            p.append(("pad", pad))
        self.add([("name", name), ("type", "Pooling"), ("bottom", bottom), ("top", top),
                  ("pooling_param", p)])

    def lrn(self, name, bottom, top, local_size, alpha, beta, region=None):
        p = [("local_size", local_size), ("alpha", alpha), ("beta", beta)]
        if region is not None:
            p.append(("norm_region", Enum(region)))
        self.add([("name", name), ("type", "LRN"), ("bottom", bottom), ("top", top),
                  ("lrn_param", p)])

    def dropout(self, name, blob, ratio):
        self.add([("name", name), ("type", "Dropout"), ("bottom", blob), ("top", blob),
                  ("dropout_param", [("dropout_ratio", ratio)])])

    def concat(self, name, bottoms, top):
        self.add([("name", name), ("type", "Concat")] +
                 [("bottom", b) for b in bottoms] + [("top", top)])

    def batchnorm_scale(self, bn_name, scale_name, blob):
        bn = [("name", bn_name), ("type", "BatchNorm"), ("bottom", blob), ("top", blob)]
        if self.deploy:
            bn.append(("batch_norm_param", [("use_global_stats", True)]))
        else:
            # mean, variance and moving-average factor are statistics, not learned
            bn += [("param", [("lr_mult", 0), ("decay_mult", 0)])] * 3
        self.add(bn)
        sc = [("name", scale_name), ("type", "Scale"), ("bottom", blob), ("top", blob)]
        sc.append(("scale_param", [("bias_term", True)]))
        self.add(sc)

    def eltwise_sum(self, name, bottoms, top):
        self.add([("name", name), ("type", "Eltwise")] +
                 [("bottom", b) for b in bottoms] + [("top", top)] +
                 [("eltwise_param", [("operation", Enum("SUM"))])])

    def accuracy(self, name, bottom, top, top_k=None):
        if self.deploy:
            return
        layer = [("name", name), ("type", "Accuracy"), ("bottom", bottom),
                 ("bottom", "label"), ("top", top)]
        if top_k is not None:
            layer.append(("accuracy_param", [("top_k", top_k)]))
        layer.append(("include", [("phase", TEST)]))
        self.add(layer)

    def loss(self, name, bottom, top, loss_weight=None):
        if self.deploy:
            return
        layer = [("name", name), ("type", "SoftmaxWithLoss"), ("bottom", bottom),
                 ("bottom", "label"), ("top", top)]
        if loss_weight is not None:
            layer.append(("loss_weight", loss_weight))
        self.add(layer)

    def softmax(self, bottom):
        if self.deploy:
            self.add([("name", "prob"), ("type", "Softmax"), ("bottom", bottom),
                      ("top", "prob")])


def const(value=None):
    return [("type", "constant")] + ([("value", value)] if value is not None else [])


def gauss(std):
    return [("type", "gaussian"), ("std", std)]


def xavier(std=None):
    return [("type", "xavier")] + ([("std", std)] if std is not None else [])


MSRA = [("type", "msra")]
# lr_mult 1 for weights, 2 for biases
LR12 = [[("lr_mult", 1)], [("lr_mult", 2)]]
# the same with weight decay on the weights only
LR12_DECAY = [[("lr_mult", 1), ("decay_mult", 1)], [("lr_mult", 2), ("decay_mult", 0)]]

IMAGENET_MEAN = "data/ilsvrc12/imagenet_mean.binaryproto"
CIFAR_MEAN = "data/cifar10/mean.binaryproto"


# --------------------------------------------------------------------------- LeNet

def lenet(deploy):
    b = Builder(deploy)
    b.explicit_stride = True
    if deploy:
        b.input("data", [64, 1, 28, 28])
    else:
        for phase, src, batch in ((TRAIN, "data/mnist/mnist_train_lmdb", 64),
                                  (TEST, "data/mnist/mnist_test_lmdb", 100)):
            b.data("mnist", phase, [("scale", 0.00390625)], src, batch)
    b.conv("conv1", "data", "conv1", 20, 5, params=LR12,
           weight_filler=xavier(), bias_filler=const())
    b.pool("pool1", "conv1", "pool1", MAX, 2, 2)
    b.conv("conv2", "pool1", "conv2", 50, 5, params=LR12,
           weight_filler=xavier(), bias_filler=const())
    b.pool("pool2", "conv2", "pool2", MAX, 2, 2)
    b.ip("ip1", "pool2", "ip1", 500, params=LR12, weight_filler=xavier(),
         bias_filler=const())
    b.relu("relu1", "ip1")
    b.ip("ip2", "ip1", "ip2", 10, params=LR12, weight_filler=xavier(),
         bias_filler=const())
    b.accuracy("accuracy", "ip2", "accuracy")
    b.loss("loss", "ip2", "loss")
    b.softmax("ip2")
    return "LeNet", b.layers


# --------------------------------------------------------------------------- CIFAR-10

def _cifar_data(b, batch):
    for phase, src in ((TRAIN, "data/cifar10/cifar10_train_lmdb"),
                       (TEST, "data/cifar10/cifar10_test_lmdb")):
        b.data("cifar", phase, [("mean_file", CIFAR_MEAN)], src, batch)


def cifar10_quick(deploy):
    b = Builder(deploy)
    b.explicit_stride = True
    if deploy:
        b.input("data", [1, 3, 32, 32])
    else:
        _cifar_data(b, 100)
    b.conv("conv1", "data", "conv1", 32, 5, pad=2, params=LR12,
           weight_filler=gauss(0.0001), bias_filler=const())
    b.pool("pool1", "conv1", "pool1", MAX, 3, 2)
    b.relu("relu1", "pool1")
    b.conv("conv2", "pool1", "conv2", 32, 5, pad=2, params=LR12,
           weight_filler=gauss(0.01), bias_filler=const())
    b.relu("relu2", "conv2")
    b.pool("pool2", "conv2", "pool2", AVE, 3, 2)
    b.conv("conv3", "pool2", "conv3", 64, 5, pad=2, params=LR12,
           weight_filler=gauss(0.01), bias_filler=const())
    b.relu("relu3", "conv3")
    b.pool("pool3", "conv3", "pool3", AVE, 3, 2)
    b.ip("ip1", "pool3", "ip1", 64, params=LR12, weight_filler=gauss(0.1),
         bias_filler=const())
    b.ip("ip2", "ip1", "ip2", 10, params=LR12, weight_filler=gauss(0.1),
         bias_filler=const())
    b.accuracy("accuracy", "ip2", "accuracy")
    b.loss("loss", "ip2", "loss")
    b.softmax("ip2")
    return "CIFAR10_quick", b.layers


def cifar10_full(deploy):
    b = Builder(deploy)
    b.explicit_stride = True
    if deploy:
        b.input("data", [1, 3, 32, 32])
    else:
        _cifar_data(b, 100)
    b.conv("conv1", "data", "conv1", 32, 5, pad=2, params=LR12,
           weight_filler=gauss(0.0001), bias_filler=const())
    b.pool("pool1", "conv1", "pool1", MAX, 3, 2)
    b.relu("relu1", "pool1")
    b.lrn("norm1", "pool1", "norm1", 3, 5e-05, 0.75, "WITHIN_CHANNEL")
    b.conv("conv2", "norm1", "conv2", 32, 5, pad=2, params=LR12,
           weight_filler=gauss(0.01), bias_filler=const())
    b.relu("relu2", "conv2")
    b.pool("pool2", "conv2", "pool2", AVE, 3, 2)
    b.lrn("norm2", "pool2", "norm2", 3, 5e-05, 0.75, "WITHIN_CHANNEL")
    # conv3 carries no param specs in the published file (lr_mult 1 for both blobs)
    b.conv("conv3", "norm2", "conv3", 64, 5, pad=2,
           weight_filler=gauss(0.01), bias_filler=const())
    b.relu("relu3", "conv3")
    b.pool("pool3", "conv3", "pool3", AVE, 3, 2)
    b.ip("ip1", "pool3", "ip1", 10,
         params=[[("lr_mult", 1), ("decay_mult", 250)], [("lr_mult", 2), ("decay_mult", 0)]],
         weight_filler=gauss(0.01), bias_filler=const())
    b.accuracy("accuracy", "ip1", "accuracy")
    b.loss("loss", "ip1", "loss")
    b.softmax("ip1")
    return "CIFAR10_full", b.layers


# --------------------------------------------------------------------------- AlexNet

def _imagenet_data(b, train_batch, test_batch, crop, mean_file=None, mean_values=None):
    for phase, src, batch, mirror in (
            (TRAIN, "data/ilsvrc12/ilsvrc12_train_lmdb", train_batch, True),
            (TEST, "data/ilsvrc12/ilsvrc12_val_lmdb", test_batch, False)):
        t = [("mirror", mirror), ("crop_size", crop)]
        if mean_file:
            t.append(("mean_file", mean_file))
        for v in mean_values or ():
            t.append(("mean_value", v))
        b.data("data", phase, t, src, batch)


def alexnet(deploy):
    b = Builder(deploy)
    if deploy:
        b.input("data", [10, 3, 227, 227])
    else:
        _imagenet_data(b, 256, 50, 227, mean_file=IMAGENET_MEAN)
    P = LR12_DECAY
    b.conv("conv1", "data", "conv1", 96, 11, stride=4, params=P,
           weight_filler=gauss(0.01), bias_filler=const(0))
    b.relu("relu1", "conv1")
    b.lrn("norm1", "conv1", "norm1", 5, 0.0001, 0.75)
    b.pool("pool1", "norm1", "pool1", MAX, 3, 2)
    b.conv("conv2", "pool1", "conv2", 256, 5, pad=2, group=2, params=P,
           weight_filler=gauss(0.01), bias_filler=const(0.1))
    b.relu("relu2", "conv2")
    b.lrn("norm2", "conv2", "norm2", 5, 0.0001, 0.75)
    b.pool("pool2", "norm2", "pool2", MAX, 3, 2)
    b.conv("conv3", "pool2", "conv3", 384, 3, pad=1, params=P,
           weight_filler=gauss(0.01), bias_filler=const(0))
    b.relu("relu3", "conv3")
    b.conv("conv4", "conv3", "conv4", 384, 3, pad=1, group=2, params=P,
           weight_filler=gauss(0.01), bias_filler=const(0.1))
    b.relu("relu4", "conv4")
    b.conv("conv5", "conv4", "conv5", 256, 3, pad=1, group=2, params=P,
           weight_filler=gauss(0.01), bias_filler=const(0.1))
    b.relu("relu5", "conv5")
    b.pool("pool5", "conv5", "pool5", MAX, 3, 2)
    b.ip("fc6", "pool5", "fc6", 4096, params=P, weight_filler=gauss(0.005),
         bias_filler=const(0.1))
    b.relu("relu6", "fc6")
    b.dropout("drop6", "fc6", 0.5)
    b.ip("fc7", "fc6", "fc7", 4096, params=P, weight_filler=gauss(0.005),
         bias_filler=const(0.1))
    b.relu("relu7", "fc7")
    b.dropout("drop7", "fc7", 0.5)
    b.ip("fc8", "fc7", "fc8", 1000, params=P, weight_filler=gauss(0.01),
         bias_filler=const(0))
    b.accuracy("accuracy", "fc8", "accuracy")
    b.loss("loss", "fc8", "loss")
    b.softmax("fc8")
    return "AlexNet", b.layers


# --------------------------------------------------------------------------- GoogLeNet

# name: (#1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool proj)
INCEPTION = {
    "3a": (64, 96, 128, 16, 32, 32),
    "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64),
    "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64),
    "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}


def _inception(b, tag, bottom):
    n1, n3r, n3, n5r, n5, npp = INCEPTION[tag]
    p = "inception_%s/" % tag
    P = LR12_DECAY
    b.conv(p + "1x1", bottom, p + "1x1", n1, 1, params=P,
           weight_filler=xavier(0.03), bias_filler=const(0.2))
    b.relu(p + "relu_1x1", p + "1x1")
    b.conv(p + "3x3_reduce", bottom, p + "3x3_reduce", n3r, 1, params=P,
           weight_filler=xavier(0.09), bias_filler=const(0.2))
    b.relu(p + "relu_3x3_reduce", p + "3x3_reduce")
    b.conv(p + "3x3", p + "3x3_reduce", p + "3x3", n3, 3, pad=1, params=P,
           weight_filler=xavier(0.03), bias_filler=const(0.2))
    b.relu(p + "relu_3x3", p + "3x3")
    b.conv(p + "5x5_reduce", bottom, p + "5x5_reduce", n5r, 1, params=P,
           weight_filler=xavier(0.2), bias_filler=const(0.2))
    b.relu(p + "relu_5x5_reduce", p + "5x5_reduce")
    b.conv(p + "5x5", p + "5x5_reduce", p + "5x5", n5, 5, pad=2, params=P,
           weight_filler=xavier(0.03), bias_filler=const(0.2))
    b.relu(p + "relu_5x5", p + "5x5")
    b.pool(p + "pool", bottom, p + "pool", MAX, 3, 1, pad=1)
    b.conv(p + "pool_proj", p + "pool", p + "pool_proj", npp, 1, params=P,
           weight_filler=xavier(0.1), bias_filler=const(0.2))
    b.relu(p + "relu_pool_proj", p + "pool_proj")
    b.concat(p + "output", [p + "1x1", p + "3x3", p + "5x5", p + "pool_proj"],
             p + "output")
    return p + "output"


def _aux_head(b, n, bottom):
    """Auxiliary classifier loss<n> (train_val only)."""
    p = "loss%d/" % n
    P = LR12_DECAY
    b.pool(p + "ave_pool", bottom, p + "ave_pool", AVE, 5, 3)
    b.conv(p + "conv", p + "ave_pool", p + "conv", 128, 1, params=P,
           weight_filler=xavier(0.08), bias_filler=const(0.2))
    b.relu(p + "relu_conv", p + "conv")
    b.ip(p + "fc", p + "conv", p + "fc", 1024, params=P,
         weight_filler=xavier(0.02), bias_filler=const(0.2))
    b.relu(p + "relu_fc", p + "fc")
    b.dropout(p + "drop_fc", p + "fc", 0.7)
    b.ip(p + "classifier", p + "fc", p + "classifier", 1000, params=P,
         weight_filler=xavier(0.0009765625), bias_filler=const(0))
    b.loss(p + "loss", p + "classifier", p + "loss1", loss_weight=0.3)
    b.accuracy(p + "top-1", p + "classifier", p + "top-1")
    b.accuracy(p + "top-5", p + "classifier", p + "top-5", top_k=5)


def googlenet(deploy):
    b = Builder(deploy)
    if deploy:
        b.input("data", [10, 3, 224, 224])
    else:
        _imagenet_data(b, 32, 50, 224, mean_values=(104, 117, 123))
    P = LR12_DECAY
    b.conv("conv1/7x7_s2", "data", "conv1/7x7_s2", 64, 7, stride=2, pad=3, params=P,
           weight_filler=xavier(0.1), bias_filler=const(0.2))
    b.relu("conv1/relu_7x7", "conv1/7x7_s2")
    b.pool("pool1/3x3_s2", "conv1/7x7_s2", "pool1/3x3_s2", MAX, 3, 2)
    b.lrn("pool1/norm1", "pool1/3x3_s2", "pool1/norm1", 5, 0.0001, 0.75)
    b.conv("conv2/3x3_reduce", "pool1/norm1", "conv2/3x3_reduce", 64, 1, params=P,
           weight_filler=xavier(0.1), bias_filler=const(0.2))
    b.relu("conv2/relu_3x3_reduce", "conv2/3x3_reduce")
    b.conv("conv2/3x3", "conv2/3x3_reduce", "conv2/3x3", 192, 3, pad=1, params=P,
           weight_filler=xavier(0.03), bias_filler=const(0.2))
    b.relu("conv2/relu_3x3", "conv2/3x3")
    b.lrn("conv2/norm2", "conv2/3x3", "conv2/norm2", 5, 0.0001, 0.75)
    b.pool("pool2/3x3_s2", "conv2/norm2", "pool2/3x3_s2", MAX, 3, 2)
    x = _inception(b, "3a", "pool2/3x3_s2")
    x = _inception(b, "3b", x)
    b.pool("pool3/3x3_s2", x, "pool3/3x3_s2", MAX, 3, 2)
    x = _inception(b, "4a", "pool3/3x3_s2")
    if not deploy:
        _aux_head(b, 1, x)
    x = _inception(b, "4b", x)
    x = _inception(b, "4c", x)
    x = _inception(b, "4d", x)
    if not deploy:
        _aux_head(b, 2, x)
    x = _inception(b, "4e", x)
    b.pool("pool4/3x3_s2", x, "pool4/3x3_s2", MAX, 3, 2)
    x = _inception(b, "5a", "pool4/3x3_s2")
    x = _inception(b, "5b", x)
    b.pool("pool5/7x7_s1", x, "pool5/7x7_s1", AVE, 7, 1)
    b.dropout("pool5/drop_7x7_s1", "pool5/7x7_s1", 0.4)
    b.ip("loss3/classifier", "pool5/7x7_s1", "loss3/classifier", 1000, params=P,
         weight_filler=xavier(), bias_filler=const(0))
    b.loss("loss3/loss3", "loss3/classifier", "loss3/loss3", loss_weight=1)
    b.accuracy("loss3/top-1", "loss3/classifier", "loss3/top-1")
    b.accuracy("loss3/top-5", "loss3/classifier", "loss3/top-5", top_k=5)
    b.softmax("loss3/classifier")
    return "GoogleNet", b.layers


# --------------------------------------------------------------------------- ResNet-50

# stage: (block letters, bottleneck width, output width, stride of the first block)
RESNET50 = [
    (2, "abc", 64, 256, 1),
    (3, "abcd", 128, 512, 2),
    (4, "abcdef", 256, 1024, 2),
    (5, "abc", 512, 2048, 2),
]


def _conv_bn(b, name, bottom, num_output, kernel, stride=1, pad=0, relu=True):
    """Convolution (no bias) + BatchNorm + Scale (+ ReLU), named as in He's files:
    res2a_branch2a -> bn2a_branch2a, scale2a_branch2a, res2a_branch2a_relu."""
    b.conv(name, bottom, name, num_output, kernel, stride=stride, pad=pad,
           bias_term=False, params=[[("lr_mult", 1), ("decay_mult", 1)]],
           weight_filler=MSRA)
    suffix = name[len("res"):]
    b.batchnorm_scale("bn" + suffix, "scale" + suffix, name)
    if relu:
        b.relu(name + "_relu", name)
    return name


def resnet50(deploy):
    b = Builder(deploy)
    if deploy:
        b.input("data", [1, 3, 224, 224])
    else:
        _imagenet_data(b, 32, 50, 224, mean_file=IMAGENET_MEAN)
    b.conv("conv1", "data", "conv1", 64, 7, stride=2, pad=3, params=LR12_DECAY,
           weight_filler=MSRA, bias_filler=const(0))
    b.batchnorm_scale("bn_conv1", "scale_conv1", "conv1")
    b.relu("conv1_relu", "conv1")
    b.pool("pool1", "conv1", "pool1", MAX, 3, 2)
    x = "pool1"
    for stage, letters, width, out, first_stride in RESNET50:
        for i, letter in enumerate(letters):
            blk = "res%d%s" % (stage, letter)
            stride = first_stride if i == 0 else 1
            if i == 0:
                shortcut = _conv_bn(b, blk + "_branch1", x, out, 1, stride=stride,
                                    relu=False)
            else:
                shortcut = x
            y = _conv_bn(b, blk + "_branch2a", x, width, 1, stride=stride)
            y = _conv_bn(b, blk + "_branch2b", y, width, 3, pad=1)
            y = _conv_bn(b, blk + "_branch2c", y, out, 1, relu=False)
            b.eltwise_sum(blk, [shortcut, y], blk)
            b.relu(blk + "_relu", blk)
            x = blk
    b.pool("pool5", x, "pool5", AVE, 7, 1)
    b.ip("fc1000", "pool5", "fc1000", 1000, params=LR12_DECAY,
         weight_filler=gauss(0.01), bias_filler=const(0))
    b.loss("loss", "fc1000", "loss")
    b.accuracy("accuracy", "fc1000", "accuracy")
    b.accuracy("accuracy_top5", "fc1000", "accuracy_top5", top_k=5)
    b.softmax("fc1000")
    return "ResNet-50", b.layers


# --------------------------------------------------------------------------- VGG-16

def vgg16(deploy):
    b = Builder(deploy)
    assert deploy
    b.input("data", [10, 3, 224, 224])
    x = "data"
    for block, (n, width) in enumerate([(2, 64), (2, 128), (3, 256), (3, 512), (3, 512)], 1):
        for i in range(1, n + 1):
            name = "conv%d_%d" % (block, i)
            b.conv(name, x, name, width, 3, pad=1)
            b.relu("relu%d_%d" % (block, i), name)
            x = name
        b.pool("pool%d" % block, x, "pool%d" % block, MAX, 2, 2)
        x = "pool%d" % block
    b.ip("fc6", x, "fc6", 4096)
    b.relu("relu6", "fc6")
    b.dropout("drop6", "fc6", 0.5)
    b.ip("fc7", "fc6", "fc7", 4096)
    b.relu("relu7", "fc7")
    b.dropout("drop7", "fc7", 0.5)
    b.ip("fc8", "fc7", "fc8", 1000)
    b.softmax("fc8")
    return "VGG_ILSVRC_16_layers", b.layers


# --------------------------------------------------------------------------- main

NETS = {
    "lenet": (lenet, ("train_val", "deploy")),
    "cifar10_quick": (cifar10_quick, ("train_val", "deploy")),
    "cifar10_full": (cifar10_full, ("train_val", "deploy")),
    "alexnet": (alexnet, ("train_val", "deploy")),
    "googlenet": (googlenet, ("train_val", "deploy")),
    "resnet50": (resnet50, ("train_val", "deploy")),
    "vgg16": (vgg16, ("deploy",)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the files on disk instead of writing them")
    ap.add_argument("--out", default=os.path.join(ROOT, "models"))
    args = ap.parse_args()
    stale = []
    for net, (fn, kinds) in NETS.items():
        for kind in kinds:
            name, layers = fn(kind == "deploy")
            text = net_text(name, layers)
            path = os.path.join(args.out, net, kind + ".prototxt")
            if args.check:
                try:
                    with open(path) as f:
                        same = f.read() == text
                except OSError:
                    same = False
                if not same:
                    stale.append(path)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
                print("wrote %s (%d layers)" % (os.path.relpath(path, ROOT), len(layers)))
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
