"""Caffe's schema module: Doppio's, which keeps Caffe's message and field names."""
import sys

from doppio.proto import doppio_pb2

sys.modules[__name__] = doppio_pb2
