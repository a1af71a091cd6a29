"""Doppio from Python: pycaffe's API (docs/python.md).

`import doppio` or, for code written for Caffe, `import caffe` (the same objects).
"""
from ._doppio import (TEST, TRAIN, Blob, Error, __version__, init_log,
                      layer_type_list, log, mpi_rank, mpi_size, set_device,
                      set_mode_cpu, set_mode_gpu, set_random_seed)
from .pycaffe import (NCCL, AdaDeltaSolver, AdaGradSolver, AdamSolver, Net,
                      NesterovSolver, RMSPropSolver, SGDSolver, Solver, Timer,
                      get_solver, set_multiprocess, set_solver_count,
                      set_solver_rank, solver_count, solver_rank)
from .python_layer import Layer
from . import io
from .classifier import Classifier
from .detector import Detector
from .net_spec import NetSpec, layers, params, to_proto
