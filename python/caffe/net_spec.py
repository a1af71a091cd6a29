"""caffe.net_spec is doppio.net_spec."""
import sys

from doppio import net_spec

sys.modules[__name__] = net_spec
