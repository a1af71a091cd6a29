"""pycaffe's Net and Solver API over Doppio's native classes.

The native Net keeps the graph and runs it; what pycaffe does in Python (forward with keyword
inputs, the ordered dictionaries of blobs and params, batching in forward_all) is added to it
here, so that every Net has it: one made in Python and one a Solver hands out alike.
"""
import collections
import time

import numpy as np

from . import _doppio
from ._doppio import Net, mpi_rank, mpi_size

__all__ = ['Net', 'Solver', 'SGDSolver', 'NesterovSolver', 'AdaGradSolver',
           'RMSPropSolver', 'AdaDeltaSolver', 'AdamSolver', 'get_solver', 'Timer',
           'NCCL', 'set_solver_count', 'set_solver_rank', 'set_multiprocess',
           'solver_count', 'solver_rank']


def _cached(self, key, make):
    """A per-net value computed once: a net's structure is fixed when it is built."""
    value = self.__dict__.get(key)
    if value is None:
        value = make()
        self.__dict__[key] = value
    return value


def _names(self):
    return _cached(self, '_names_cache', lambda: (list(self._layer_names),
                                                  list(self._blob_names)))


def _layer_index(self, name):
    """The first layer of that name (pycaffe's rule for start= and end=)."""
    def make():
        index = {}
        for i, layer_name in enumerate(_names(self)[0]):
            index.setdefault(layer_name, i)
        return index
    index = _cached(self, '_layer_index_cache', make)
    if name not in index:
        raise KeyError('net %r has no layer %r' % (self.name, name))
    return index[name]


def _blobs(self):
    """The net's blobs by name, in net order (an OrderedDict of Blob)."""
    def make():
        blobs = collections.OrderedDict()
        for name, blob in zip(_names(self)[1], self._blobs):
            blob._name = name
            blobs[name] = blob
        return blobs
    return _cached(self, '_blobs_cache', make)


def _params(self):
    """The parameter blobs of each layer that has some, by layer name."""
    return _cached(self, '_params_cache', lambda: collections.OrderedDict(
        (name, layer.blobs) for name, layer in zip(_names(self)[0], self.layers)
        if len(layer.blobs) > 0))


def _layer_dict(self):
    return _cached(self, '_layer_dict_cache', lambda: collections.OrderedDict(
        zip(_names(self)[0], self.layers)))


def _blob_lists(self, ids):
    names = _names(self)
    return collections.OrderedDict(
        (layer, [names[1][i] for i in ids(index)])
        for index, layer in enumerate(names[0]))


def _top_names(self):
    return _cached(self, '_top_names_cache', lambda: _blob_lists(self, self._top_ids))


def _bottom_names(self):
    return _cached(self, '_bottom_names_cache',
                   lambda: _blob_lists(self, self._bottom_ids))


def _inputs(self):
    return _cached(self, '_inputs_cache',
                   lambda: [_names(self)[1][i] for i in self._inputs])


def _outputs(self):
    return _cached(self, '_outputs_cache',
                   lambda: [_names(self)[1][i] for i in self._outputs])


def _blob_loss_weights(self):
    return collections.OrderedDict(zip(_names(self)[1], self._blob_loss_weights))


def _set_blobs(self, arrays, expected, field, what):
    if set(arrays) != set(expected):
        raise ValueError('%s: the keyword arguments %s must be exactly the net\'s %s %s'
                         % (what, sorted(arrays), field, sorted(expected)))
    blobs = _blobs(self)
    for name, array in arrays.items():
        setattr(blobs[name], 'data' if field == 'inputs' else 'diff', array)


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Runs forward from layer `start` to layer `end` (names; all layers by default).

    Keyword arguments set the net's input blobs first (each an array of the blob's shape).
    Returns {name: data} for the net's outputs (the tops of `end` when it is given) and
    the blobs named in `blobs`: views of the blobs, not copies.
    """
    count = len(_names(self)[0])
    start_index = 0 if start is None else _layer_index(self, start)
    if end is None:
        end_index = count - 1
        names = _outputs(self)
    else:
        end_index = _layer_index(self, end)
        names = _top_names(self)[end]
    if blobs:
        names = list(collections.OrderedDict.fromkeys(list(names) + list(blobs)))
    if kwargs:
        _set_blobs(self, kwargs, _inputs(self), 'inputs', 'forward')
    if count:
        self._check_range(start_index, end_index, 'forward')
        self._forward(start_index, end_index)
    all_blobs = _blobs(self)
    return {name: all_blobs[name].data for name in names}


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Runs backward from layer `start` down to layer `end` (all layers by default).

    Keyword arguments set the diffs of the net's outputs first. Returns {name: diff} for
    the net's inputs (the bottoms of `end` when it is given) and the blobs in `diffs`.
    """
    count = len(_names(self)[0])
    start_index = count - 1 if start is None else _layer_index(self, start)
    if end is None:
        end_index = 0
        names = _inputs(self)
    else:
        end_index = _layer_index(self, end)
        names = _bottom_names(self)[end]
    if diffs:
        names = list(collections.OrderedDict.fromkeys(list(names) + list(diffs)))
    if kwargs:
        _set_blobs(self, kwargs, _outputs(self), 'outputs', 'backward')
    if count:
        self._check_range(start_index, end_index, 'backward')
        self._backward(start_index, end_index)
    all_blobs = _blobs(self)
    return {name: all_blobs[name].diff for name in names}


def _batches(self, arrays):
    """Splits {input name: array of N items} into batches of the net's batch size, the last
    one padded with zeros; yields (the batch's dict, the number of real items in it)."""
    blobs = _blobs(self)
    total = len(next(iter(arrays.values())))
    for name, array in arrays.items():
        if len(array) != total:
            raise ValueError('forward_all: input %r has %d items, another %d'
                             % (name, len(array), total))
    batch = blobs[next(iter(arrays))].shape[0]
    for begin in range(0, total, batch):
        real = min(batch, total - begin)
        chunk = {}
        for name, array in arrays.items():
            part = np.asarray(array[begin:begin + real], dtype=np.float32)
            if real < batch:
                padding = np.zeros((batch - real,) + part.shape[1:], dtype=np.float32)
                part = np.concatenate([part, padding])
            chunk[name] = part
        yield chunk, real


def _forward_all(self, blobs=None, **kwargs):
    """forward over any number of items given as keyword inputs, one batch at a time.

    Returns {name: array of all N items} for the outputs and `blobs`, copied out of the
    net batch by batch.
    """
    results = collections.defaultdict(list)
    for chunk, real in _batches(self, kwargs):
        outputs = _forward(self, blobs=blobs, **chunk)
        for name, values in outputs.items():
            results[name].append(values[:real].copy())
    return {name: np.concatenate(parts) for name, parts in results.items()}


def _forward_backward_all(self, blobs=None, diffs=None, **kwargs):
    """forward_all and backward_all together: keyword arguments name inputs and output
    diffs. Returns ({name: data}, {name: diff}) over all items."""
    inputs = {k: v for k, v in kwargs.items() if k in _inputs(self)}
    output_diffs = {k: v for k, v in kwargs.items() if k in _outputs(self)}
    forward_results = collections.defaultdict(list)
    backward_results = collections.defaultdict(list)
    diff_batches = (_batches(self, output_diffs) if output_diffs
                    else iter(lambda: ({}, None), None))
    for (chunk, real), (diff_chunk, _) in zip(_batches(self, inputs), diff_batches):
        outputs = _forward(self, blobs=blobs, **chunk)
        gradients = _backward(self, diffs=diffs, **diff_chunk)
        for name, values in outputs.items():
            forward_results[name].append(values[:real].copy())
        for name, values in gradients.items():
            backward_results[name].append(values[:real].copy())
    return ({n: np.concatenate(p) for n, p in forward_results.items()},
            {n: np.concatenate(p) for n, p in backward_results.items()})


Net.blobs = property(_blobs)
Net.params = property(_params)
Net.layer_dict = property(_layer_dict)
Net.top_names = property(_top_names)
Net.bottom_names = property(_bottom_names)
Net.inputs = property(_inputs)
Net.outputs = property(_outputs)
Net.blob_loss_weights = property(_blob_loss_weights)
Net.forward = _forward
Net.backward = _backward
Net.forward_all = _forward_all
Net.forward_backward_all = _forward_backward_all


class Solver(_doppio.Solver):
    """A solver from a solver prototxt, of the type the file names (get_solver).

    Under `mpirun -np N python3 script.py` it trains data-parallel as `doppio train` does;
    without a launcher it trains alone, also as `doppio train` does.
    """

    @property
    def param(self):
        """The solver's parameters (a copy: a SolverParameter message)."""
        from .proto import doppio_pb2
        return doppio_pb2.SolverParameter.FromString(self._param_bytes)

    def add_callback(self, on_start, on_gradients_ready=None):
        """Calls on_start before each iteration and on_gradients_ready once its gradients
        are final. Caffe's add_callback(nccl) is accepted: the ranks already aggregate."""
        if isinstance(on_start, NCCL) and on_gradients_ready is None:
            return
        if on_gradients_ready is None:
            raise TypeError('add_callback(on_start, on_gradients_ready): two callables')
        _doppio.Solver.add_callback(self, on_start, on_gradients_ready)


def _solver_class(type_name):
    class TypedSolver(Solver):
        __doc__ = 'A %s solver from a solver prototxt (whatever type it names).' % type_name

        def __init__(self, filename):
            Solver.__init__(self, filename, type_name)
    TypedSolver.__name__ = TypedSolver.__qualname__ = type_name + 'Solver'
    return TypedSolver


SGDSolver = _solver_class('SGD')
NesterovSolver = _solver_class('Nesterov')
AdaGradSolver = _solver_class('AdaGrad')
RMSPropSolver = _solver_class('RMSProp')
AdaDeltaSolver = _solver_class('AdaDelta')
AdamSolver = _solver_class('Adam')
_SOLVER_CLASSES = {c.__name__[:-len('Solver')]: c for c in (
    SGDSolver, NesterovSolver, AdaGradSolver, RMSPropSolver, AdaDeltaSolver, AdamSolver)}


def get_solver(filename):
    """The solver the file describes, as an object of its class (SGDSolver, ...)."""
    solver = Solver(filename)
    solver.__class__ = _SOLVER_CLASSES.get(solver.type, Solver)
    return solver


class Timer:
    """pycaffe's Timer: start(), stop(), and the time between them in ms."""

    def __init__(self):
        self._started = None
        self._elapsed = 0.0

    def start(self):
        self._started = time.perf_counter()

    def stop(self):
        if self._started is not None:
            self._elapsed = time.perf_counter() - self._started
            self._started = None

    @property
    def ms(self):
        return self._elapsed * 1e3

    @property
    def seconds(self):
        return self._elapsed


# Caffe's multi-GPU calls. Caffe runs one process per GPU (Python's multiprocessing) and
# joins them with NCCL; Doppio's solvers are the ranks of an MPI job and aggregate by
# themselves. The calls are accepted where they describe this job, refused where not.

def solver_count():
    return mpi_size()


def solver_rank():
    return mpi_rank()


def set_solver_count(count):
    if count != mpi_size():
        raise _doppio.Error(
            'set_solver_count(%d): Doppio\'s solvers are the ranks of an MPI job, and this '
            'job has %d; start %d with `mpirun -np %d python3 script.py` (no '
            'multiprocessing: every rank runs the whole script)'
            % (count, mpi_size(), count, count))


def set_solver_rank(rank):
    if rank != mpi_rank():
        raise _doppio.Error(
            'set_solver_rank(%d): this process is rank %d of its MPI job; the rank is '
            'the launcher\'s (mpirun), not the script\'s' % (rank, mpi_rank()))


def set_multiprocess(multiprocess):
    """Accepted: every rank is its own process already."""


class NCCL:
    """Caffe's NCCL(solver, uid). The solver already aggregates gradients across the
    ranks (MPI, or NCCL between GPUs), and broadcast rank 0's weights when it was made,
    so bcast() and add_callback(nccl) have nothing left to do."""

    def __init__(self, solver, uid):
        self.solver = solver

    @staticmethod
    def new_uid():
        return b'doppio-mpi-job'

    def bcast(self):
        """The weights went from rank 0 to every rank when the solver was made."""
