"""caffe.coord_map is doppio.coord_map."""
import sys

from doppio import coord_map

sys.modules[__name__] = coord_map
