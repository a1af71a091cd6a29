"""caffe.pycaffe is doppio.pycaffe."""
import sys

from doppio import pycaffe

sys.modules[__name__] = pycaffe
