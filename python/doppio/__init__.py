"""Doppio from Python: pycaffe's API (docs/python.md).

`import doppio` or, for code written for Caffe, `import caffe` (the same objects).
"""
import os

# OpenMP's threads sleep when they wait, as in the doppio commands (docs/cpu.md): libgomp
# reads this once, when the extension loads it (unless another module loaded it first).
os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')

from ._doppio import (  # noqa: E402
                      TEST, TRAIN, Blob, Error, __version__, init_log,
                      layer_type_list, log, mpi_rank, mpi_size, set_device,
                      set_mode_cpu, set_mode_gpu, set_random_seed)
from .pycaffe import (  # noqa: E402
                      NCCL, AdaDeltaSolver, AdaGradSolver, AdamSolver, Net,
                      NesterovSolver, RMSPropSolver, SGDSolver, Solver, Timer,
                      get_solver, set_multiprocess, set_solver_count,
                      set_solver_rank, solver_count, solver_rank)
from .python_layer import Layer  # noqa: E402
from . import io  # noqa: E402
from .classifier import Classifier  # noqa: E402
from .detector import Detector  # noqa: E402
from .net_spec import NetSpec, layers, params, to_proto  # noqa: E402
