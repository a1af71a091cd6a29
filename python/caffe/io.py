"""caffe.io is doppio.io."""
import sys

from doppio import io

sys.modules[__name__] = io
