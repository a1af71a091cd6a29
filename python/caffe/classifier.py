"""caffe.classifier is doppio.classifier."""
import sys

from doppio import classifier

sys.modules[__name__] = classifier
