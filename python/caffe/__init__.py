"""Caffe's Python package, for code written for pycaffe: every name is Doppio's."""
from doppio import *  # noqa: F401,F403
from doppio import (TEST, TRAIN, AdaDeltaSolver, AdaGradSolver, AdamSolver, Blob,
                    Classifier, Detector, Error, Layer, NCCL, Net, NesterovSolver,
                    NetSpec, RMSPropSolver, SGDSolver, Solver, Timer, __version__,
                    get_solver, init_log, layer_type_list, layers, log, mpi_rank,
                    mpi_size, params, set_device, set_mode_cpu, set_mode_gpu,
                    set_multiprocess, set_random_seed, set_solver_count,
                    set_solver_rank, solver_count, solver_rank, to_proto)
from . import io  # noqa: F401
