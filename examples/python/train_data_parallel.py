"""Train data-parallel from Python: the same script on every rank of an MPI job.

Shows caffe.get_solver under mpirun: each rank builds the solver, which broadcasts rank 0's
weights, gives each rank its shard of the data and aggregates the gradients in every step,
as `mpirun -np N doppio train` does. Without mpirun the script trains alone.

    mpirun -np 2 /usr/bin/python3 examples/python/train_data_parallel.py \\
        --solver examples/mnist/lenet_quick_solver.prototxt
(with PYTHONPATH=build/python exported, or mpirun's -x PYTHONPATH=build/python)
"""
import argparse
import os

import caffe


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--solver', default='examples/mnist/lenet_quick_solver.prototxt')
    parser.add_argument('--gpu', action='store_true',
                        help='one GPU per rank: the rank\'s place on its node')
    parser.add_argument('--iters', type=int,
                        help='step this many iterations and print the loss every 100 '
                             '(default: solver.solve(), the solver\'s max_iter with its '
                             'tests and snapshots)')
    args = parser.parse_args()

    rank, size = caffe.mpi_rank(), caffe.mpi_size()
    if args.gpu:
        local_rank = int(os.environ.get('OMPI_COMM_WORLD_LOCAL_RANK', '0'))
        caffe.set_device(local_rank)
        caffe.set_mode_gpu()
    caffe.set_solver_count(size)  # Caffe's call, accepted: it is this job's size
    solver = caffe.get_solver(args.solver)
    if rank == 0:
        print('rank %d of %d: %s, batch %d per rank'
              % (rank, size, type(solver).__name__, solver.net.blobs['data'].num), flush=True)
    if args.iters is None:
        solver.solve()
    else:
        for _ in range(0, args.iters, 100):
            solver.step(min(100, args.iters - solver.iter))
            if rank == 0:
                print('iteration %d, loss %.4f (rank 0\'s batch)'
                      % (solver.iter, solver.net.blobs['loss'].data), flush=True)
    if rank == 0:
        print('done: iteration %d' % solver.iter)


if __name__ == '__main__':
    main()
