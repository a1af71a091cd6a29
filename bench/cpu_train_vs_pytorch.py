#!/usr/bin/python3
"""The training a user runs on the CPU: `doppio train` against a PyTorch training loop.

Both sides train the same net on the same records: Doppio through `doppio train` (its Data
layer reading an LMDB, the SGD update, the display lines), PyTorch through a loop over a
DataLoader reading the same LMDB (Datum records decoded in the Dataset, the same scaling),
the twin of the prototxt from cpu_forward_backward.py, and SGD with momentum. The rate is
iterations/s after a warm-up (Doppio: between its display lines' timestamps).

Each framework runs at its defaults and at the best of a few configurations:
  Doppio    defaults; --threads=1; OMP_WAIT_POLICY=ACTIVE (OpenMP's spinning wait);
  PyTorch   defaults (torch's threads = the cores, num_workers=0); 1 thread; a data worker.
and, with --ranks2, two ranks of one core each: `mpirun -np 2 doppio train` (defaults and
ACTIVE) against PyTorch DDP over gloo (one thread per process), each rank half the batch;
and, with --loaded, the defaults again while another process keeps one core busy; and, with
--bf16, `doppio train --precision=bf16` (mixed precision, docs/precision.md), which is not one
of the fp32 configurations the targets compare.
Configurations take turns for --rounds rounds; each keeps its best.

Nets: lenet reads the MNIST training LMDB (data/mnist/get_mnist.sh makes it); cifar10_quick
reads an LMDB of random CIFAR-10 records made here with convert_cifar_data (its transform is
a scale, as LeNet's: the mean file is left out on both sides); alexnet, googlenet and
resnet50 read an LMDB of random Datum records made here at the crop's size (227 or 224), so
that both sides feed the net the same pixels with the same scale and no crop or mirror.

    /usr/bin/python3 bench/cpu_train_vs_pytorch.py
    /usr/bin/python3 bench/cpu_train_vs_pytorch.py --nets=lenet --iterations=300 --ranks2 --loaded
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# iterations/warmup: the default run for the net (the ImageNet nets take 0.5-3 s a step on
# two cores, so fewer, and their records are made at the crop's size: see make_image_lmdb).
NETS = {
    'lenet': dict(batch=64, shape=(1, 28, 28), classes=10, lr=0.01, iterations=200, warmup=20),
    'cifar10_quick': dict(batch=100, shape=(3, 32, 32), classes=10, lr=0.001, iterations=200,
                          warmup=20),
    'alexnet': dict(batch=16, shape=(3, 227, 227), classes=1000, lr=0.01, iterations=14,
                    warmup=4),
    'googlenet': dict(batch=8, shape=(3, 224, 224), classes=1000, lr=0.01, iterations=12,
                      warmup=4),
    'resnet50': dict(batch=8, shape=(3, 224, 224), classes=1000, lr=0.01, iterations=8,
                     warmup=2),
}
LINE = re.compile(r'^I(\d{4}) (\d\d:\d\d:\d\d\.\d+) .*Iteration (\d+), loss = ')


def doppio_pb2(build):
    """The schema's module alone: importing the doppio package would set up its threads and
    OpenMP's wait policy in the PyTorch process too."""
    import importlib.util
    path = os.path.join(build, 'python', 'doppio', 'proto', 'doppio_pb2.py')
    spec = importlib.util.spec_from_file_location('doppio_pb2', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_cifar_lmdb(build, folder, items):
    """A CIFAR-10 binary batch of random records, converted to an LMDB."""
    import numpy as np
    raw = os.path.join(folder, 'cifar_raw')
    os.makedirs(raw, exist_ok=True)
    rng = np.random.RandomState(0)
    records = np.concatenate([rng.randint(0, 10, (items, 1)),
                              rng.randint(0, 256, (items, 3072))], axis=1).astype(np.uint8)
    for name in ['data_batch_%d.bin' % i for i in range(1, 6)] + ['test_batch.bin']:
        records.tofile(os.path.join(raw, name))
    subprocess.run([os.path.join(build, 'tools', 'convert_cifar_data'), raw, folder],
                   check=True, capture_output=True)
    return os.path.join(folder, 'cifar10_train_lmdb')


def make_image_lmdb(pb2, folder, shape, classes, items):
    """Random uint8 Datum records of `shape` (C, H, W) with random labels."""
    import lmdb
    import numpy as np
    path = os.path.join(folder, 'images_%dx%d_lmdb' % shape[1:])
    rng = np.random.RandomState(0)
    with lmdb.open(path, map_size=1 << 32) as env:
        with env.begin(write=True) as txn:
            for i in range(items):
                datum = pb2.Datum(channels=shape[0], height=shape[1], width=shape[2],
                                  label=int(rng.randint(classes)),
                                  data=rng.randint(0, 256, shape, dtype=np.uint8).tobytes())
                txn.put(b'%08d' % i, datum.SerializeToString())
    return path


def write_solver(pb2, net, source, batch, iterations, display, folder):
    """models/<net>/train_val.prototxt reading `source`, TRAIN only, and its solver."""
    from google.protobuf import text_format
    param = pb2.NetParameter()
    with open(os.path.join(ROOT, 'models', net, 'train_val.prototxt')) as f:
        text_format.Merge(f.read(), param)
    kept = []
    for layer in param.layer:
        if any(rule.phase == pb2.TEST for rule in layer.include):
            continue
        if layer.type == 'Data':
            layer.data_param.source = source
            layer.data_param.batch_size = batch
            layer.transform_param.ClearField('mean_file')
            layer.transform_param.ClearField('crop_size')
            layer.transform_param.ClearField('mirror')
            layer.transform_param.scale = 0.00390625
        if layer.type == 'Accuracy':
            continue
        kept.append(layer)
    del param.layer[:]
    param.layer.extend(kept)
    net_file = os.path.join(folder, '%s_b%d.prototxt' % (net, batch))
    with open(net_file, 'w') as f:
        f.write(text_format.MessageToString(param))
    solver = os.path.join(folder, '%s_b%d_solver.prototxt' % (net, batch))
    with open(solver, 'w') as f:
        f.write('net: "%s"\nbase_lr: %g\nmomentum: 0.9\nweight_decay: 0.0005\n'
                'lr_policy: "fixed"\nmax_iter: %d\ndisplay: %d\nsnapshot_after_train: false\n'
                'random_seed: 1\n' % (net_file, NETS[net]['lr'], iterations, display))
    return solver


def doppio_rate(build, solver, env_extra, flags, ranks, warmup):
    """Iterations/s of `doppio train` between the display line at `warmup` and the last."""
    env = dict(os.environ, **env_extra)
    env.update(OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    command = [os.path.join(build, 'tools', 'doppio'), 'train', '--solver=' + solver] + flags
    if ranks > 1:
        command = ['mpirun', '--oversubscribe', '--bind-to', 'none', '-np', str(ranks)] + command
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise RuntimeError('doppio train failed:\n' + result.stderr[-3000:])
    stamps = {}
    for line in result.stderr.splitlines():
        m = LINE.match(line)
        if m:
            stamps[int(m.group(3))] = datetime.strptime(m.group(2), '%H:%M:%S.%f')
    last = max(stamps)
    return (last - warmup) / (stamps[last] - stamps[warmup]).total_seconds()


class LmdbRecords:
    """The LMDB's Datum records as (image scaled as the Data layer does, label) pairs."""

    def __init__(self, path, pb2):
        self.path, self.pb2, self.env = path, pb2, None
        import lmdb
        with lmdb.open(path, readonly=True, lock=False) as env:
            with env.begin() as txn:
                self.keys = [k for k, _ in txn.cursor()]

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, index):
        import lmdb
        import numpy as np
        import torch
        if self.env is None:  # one environment per DataLoader worker
            self.env = lmdb.open(self.path, readonly=True, lock=False)
        with self.env.begin() as txn:
            datum = self.pb2.Datum.FromString(txn.get(self.keys[index]))
        image = np.frombuffer(datum.data, np.uint8).reshape(
            datum.channels, datum.height, datum.width).astype(np.float32) * 0.00390625
        return torch.from_numpy(image), datum.label


def train_loop(model, loader, optimizer, iterations, warmup):
    """Iterations/s of SGD steps over the loader (cycled), after `warmup` of them."""
    import torch
    loss_fn = torch.nn.CrossEntropyLoss()
    done, start = 0, None
    while done < iterations:
        for images, labels in loader:
            if done == warmup:
                start = time.perf_counter()
            optimizer.zero_grad()
            loss = sum(w * loss_fn(out, labels) for out, w in model(images))
            loss.backward()
            optimizer.step()
            done += 1
            if done == iterations:
                break
    return (iterations - warmup) / (time.perf_counter() - start)


def torch_rate(net, source, pb2, batch, iterations, warmup, threads, workers):
    """Iterations/s of a PyTorch training loop (one process)."""
    import torch
    from cpu_forward_backward import build_torch_nets
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build_torch_nets()[net]()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=NETS[net]['lr'], momentum=0.9,
                                weight_decay=0.0005)
    loader = torch.utils.data.DataLoader(LmdbRecords(source, pb2), batch_size=batch,
                                         shuffle=False, num_workers=workers, drop_last=True)
    return train_loop(model, loader, optimizer, iterations, warmup)


def torch_ddp_worker(rank, net, source, build, batch, iterations, warmup, port, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT=str(port))
    dist.init_process_group('gloo', rank=rank, world_size=2)
    from cpu_forward_backward import build_torch_nets
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(build_torch_nets()[net]())
    optimizer = torch.optim.SGD(model.parameters(), lr=NETS[net]['lr'], momentum=0.9)
    records = LmdbRecords(source, doppio_pb2(build))
    sampler = torch.utils.data.distributed.DistributedSampler(records, shuffle=False)
    loader = torch.utils.data.DataLoader(records, batch_size=batch, sampler=sampler,
                                         drop_last=True)
    rate = train_loop(model, loader, optimizer, iterations, warmup)
    if rank == 0:
        queue.put(rate)
    dist.destroy_process_group()


def torch_ddp_rate(net, source, build, batch, iterations, warmup):
    import torch.multiprocessing as mp
    context = mp.get_context('spawn')
    queue = context.SimpleQueue()
    port = 29500 + os.getpid() % 1000
    mp.start_processes(torch_ddp_worker, args=(net, source, build, batch, iterations, warmup,
                                               port, queue), nprocs=2, start_method='spawn')
    return queue.get()


def best_of(rounds, runs):
    """runs: {name: callable}; each runs once per round, in turn; returns {name: best}."""
    best = {name: 0.0 for name in runs}
    for round_index in range(rounds):
        names = list(runs)
        names = names[round_index % len(names):] + names[:round_index % len(names)]
        for name in names:
            best[name] = max(best[name], runs[name]())
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--nets', default='lenet,cifar10_quick')
    ap.add_argument('--iterations', type=int, help="default: the net's (NETS)")
    ap.add_argument('--warmup', type=int, help="default: the net's (NETS)")
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--mnist', default=os.path.join(ROOT, 'data', 'mnist', 'mnist_train_lmdb'))
    ap.add_argument('--ranks2', action='store_true', help='also two ranks of one core each')
    ap.add_argument('--loaded', action='store_true',
                    help='also the defaults with one core kept busy by another process')
    ap.add_argument('--bf16', action='store_true',
                    help='also doppio train --precision=bf16 (needs AVX512-BF16)')
    args = ap.parse_args()
    pb2 = doppio_pb2(args.build)
    import torch
    cores = len(os.sched_getaffinity(0))
    print('doppio train vs a PyTorch %s loop, %d cores, best of %d rounds'
          % (torch.__version__, cores, args.rounds))
    with tempfile.TemporaryDirectory() as folder:
        for net in args.nets.split(','):
            batch = NETS[net]['batch']
            iterations = args.iterations or NETS[net]['iterations']
            warmup = args.warmup or NETS[net]['warmup']
            if net == 'lenet':
                source = os.path.abspath(args.mnist)
                if not os.path.isdir(source):
                    sys.exit('no MNIST LMDB at %s: run data/mnist/get_mnist.sh' % source)
            elif net == 'cifar10_quick':
                source = make_cifar_lmdb(args.build, folder, 20 * batch)
            else:
                source = make_image_lmdb(pb2, folder, NETS[net]['shape'], NETS[net]['classes'],
                                         4 * batch)
            display = warmup
            solver = write_solver(pb2, net, source, batch, iterations, display, folder)

            def doppio(env=None, flags=(), ranks=1, solver=solver):
                return lambda: doppio_rate(args.build, solver, env or {}, list(flags), ranks,
                                           display)

            def pytorch(threads=0, workers=0):
                return lambda: torch_rate(net, source, pb2, batch, iterations, warmup, threads,
                                          workers)
            runs = {'doppio default': doppio(),
                    'doppio --threads=1': doppio(flags=['--threads=1']),
                    'doppio ACTIVE': doppio(env={'OMP_WAIT_POLICY': 'ACTIVE'}),
                    'pytorch default': pytorch(),
                    'pytorch 1 thread': pytorch(threads=1),
                    'pytorch 1 data worker': pytorch(threads=max(1, cores - 1), workers=1)}
            if args.bf16:
                runs['doppio bf16'] = doppio(flags=['--precision=bf16'])
            if args.ranks2:
                half = write_solver(pb2, net, source, batch // 2, iterations, display, folder)
                runs['doppio 2x1 default'] = doppio(ranks=2, solver=half)
                runs['doppio 2x1 ACTIVE'] = doppio(env={'OMP_WAIT_POLICY': 'ACTIVE'},
                                                   ranks=2, solver=half)
                runs['pytorch 2x1 DDP'] = lambda: torch_ddp_rate(
                    net, source, args.build, batch // 2, iterations, warmup)
            best = best_of(args.rounds, runs)
            if args.loaded:
                busy = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
                try:
                    # --threads=1 as well: what a load-dependent thread count could reach.
                    loaded = best_of(args.rounds, {
                        'doppio default, 1 core busy': runs['doppio default'],
                        'doppio --threads=1, 1 core busy': runs['doppio --threads=1'],
                        'pytorch default, 1 core busy': runs['pytorch default']})
                finally:
                    busy.kill()
                best.update(loaded)
            print('\n%s, batch %d (global), %d iterations (rate after %d), load %.1f at the end'
                  % (net, batch, iterations, warmup, os.getloadavg()[0]))
            print('%-32s %10s' % ('configuration', 'iter/s'))
            for name, rate in best.items():
                print('%-32s %10.1f' % (name, rate))
            doppio_best = max(v for k, v in best.items() if k.startswith('doppio')
                              and '2x1' not in k and 'busy' not in k and 'bf16' not in k)
            torch_best = max(v for k, v in best.items() if k.startswith('pytorch')
                             and '2x1' not in k and 'busy' not in k)
            print('doppio default / doppio best: %.2f (target >= 0.95)'
                  % (best['doppio default'] / doppio_best))
            print('doppio default step time / pytorch best step time: %.2f (target <= 0.8)'
                  % (torch_best / best['doppio default']))
            if args.bf16:
                print('doppio bf16 / doppio default: %.2f' % (best['doppio bf16']
                                                             / best['doppio default']))
            if args.ranks2:
                print('2x1: doppio default / doppio best: %.2f; doppio default step / pytorch '
                      'DDP step: %.2f' % (best['doppio 2x1 default'] / max(
                          best['doppio 2x1 default'], best['doppio 2x1 ACTIVE']),
                          best['pytorch 2x1 DDP'] / best['doppio 2x1 default']))
            if args.loaded:
                print('one core busy: doppio keeps %.0f%% of its default rate (%.0f%% with '
                      '--threads=1), pytorch %.0f%%'
                      % (100 * best['doppio default, 1 core busy'] / best['doppio default'],
                         100 * best['doppio --threads=1, 1 core busy'] / best['doppio default'],
                         100 * best['pytorch default, 1 core busy'] / best['pytorch default']))


if __name__ == '__main__':
    main()
