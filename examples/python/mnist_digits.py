"""MNIST digits as numpy arrays, for the examples in this folder.

read_lmdb() reads an LMDB of Datum records (data/mnist/get_mnist.sh builds them) with the
`lmdb` package (Debian's python3-lmdb) and caffe.io.datum_to_array; read_idx() reads the
original MNIST files that get_mnist.sh leaves beside the LMDBs, with numpy alone. Both
return (images, labels): uint8 arrays of shape (N, 1, 28, 28) and (N,).
"""
import os

import numpy as np

MNIST_DIR = 'data/mnist'


def read_idx(images_file, labels_file, limit=None):
    """Digits from MNIST's idx files (big-endian header, then one byte per pixel)."""
    with open(images_file, 'rb') as f:
        magic, count, rows, cols = np.frombuffer(f.read(16), dtype='>i4')
        if magic != 2051:
            raise ValueError('%s is not an MNIST images file' % images_file)
        count = count if limit is None else min(count, limit)
        images = np.frombuffer(f.read(count * rows * cols), dtype=np.uint8)
    with open(labels_file, 'rb') as f:
        magic, _ = np.frombuffer(f.read(8), dtype='>i4')
        if magic != 2049:
            raise ValueError('%s is not an MNIST labels file' % labels_file)
        labels = np.frombuffer(f.read(count), dtype=np.uint8)
    return images.reshape(count, 1, rows, cols), labels.astype(np.int64)


def read_lmdb(path, limit=None):
    """Digits from an LMDB of Datum records, in key order."""
    import lmdb  # python3-lmdb
    import caffe
    from caffe.proto import caffe_pb2

    images, labels = [], []
    with lmdb.open(path, readonly=True, lock=False) as env:
        with env.begin() as txn:
            for _, value in txn.cursor():
                datum = caffe_pb2.Datum.FromString(value)
                images.append(caffe.io.datum_to_array(datum))
                labels.append(datum.label)
                if limit is not None and len(images) == limit:
                    break
    return np.stack(images), np.array(labels, dtype=np.int64)


def test_digits(limit=None):
    """The test digits: from the LMDB when `lmdb` is importable, else from the idx files.

    Returns (images, labels, where they were read from)."""
    try:
        import lmdb  # noqa: F401
    except ImportError:
        images = os.path.join(MNIST_DIR, 't10k-images-idx3-ubyte')
        labels = os.path.join(MNIST_DIR, 't10k-labels-idx1-ubyte')
        return read_idx(images, labels, limit) + (images,)
    path = os.path.join(MNIST_DIR, 'mnist_test_lmdb')
    return read_lmdb(path, limit) + (path,)
