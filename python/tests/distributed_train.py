"""A data-parallel training script, run by test_distributed.py under mpirun and alone.

usage: distributed_train.py SOLVER OUTPUT.npz -- trains SOLVER for its max_iter with
caffe.get_solver and solver.step, and writes this rank's learned weights and what its
Python data layer saw into OUTPUT.npz, with the rank in the name (OUTPUT.rank<R>.npz).
"""
import sys

import numpy as np

import caffe


def main(solver_file, output):
    solver = caffe.get_solver(solver_file)
    solver.step(solver.param.max_iter)
    data_layer = solver.net.layers[0]
    arrays = {'%s_%d' % (name, i): blob.data
              for name, blobs in solver.net.params.items()
              for i, blob in enumerate(blobs)}
    arrays['shard'] = np.array([data_layer.shard_rank, data_layer.shard_size,
                                caffe.mpi_rank(), caffe.mpi_size()])
    arrays['first_records'] = np.array(data_layer.first_records)
    np.savez(output.replace('.npz', '.rank%d.npz' % caffe.mpi_rank()), **arrays)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
