"""caffe.detector is doppio.detector."""
import sys

from doppio import detector

sys.modules[__name__] = detector
