"""caffe.draw is doppio.draw."""
import sys

from doppio import draw

sys.modules[__name__] = draw
