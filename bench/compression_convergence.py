#!/usr/bin/env python3
"""Accuracy at equal iterations for each --grad_compression: LeNet on MNIST (the quick start's
net, solver and data: examples/mnist/lenet_quick_*, data/mnist) and on Fashion-MNIST
(examples/fashion_mnist/lenet_*, data/fashion_mnist), on 2 and 4 MPI ranks of this machine,
for none, fp16, bf16, powersgd:2 and topk:0.01.

Every run keeps the example's global batch (MNIST 128, Fashion-MNIST 64: batch_size is per
rank, so 4 ranks take half of what 2 take), its learning-rate schedule stretched over
--iterations (the quick start's poly schedule falls to 0 at max_iter), random_seed 1, and
tests every --test_interval on the whole test set. The table gives the final test accuracy and
its difference from the uncompressed run of the same data set and rank count; the issue's bar
is 0.5 points. One PNG per data set (tools/plot_training_log: loss and accuracy against
iterations and seconds, one curve per run) goes to --figures.

    bench/compression_convergence.py --build build-cpu [--iterations 1000] [--ranks 2,4]
        [--datasets mnist,fashion_mnist] [--methods none,fp16,bf16,powersgd:2,topk:0.01]
        [--fashion_mnist DIR] [--logs DIR] [--figures bench/figures] [--table-only]
"""

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATASETS = {
    "mnist": dict(net="examples/mnist/lenet_quick_train_val.prototxt",
                  solver="examples/mnist/lenet_quick_solver.prototxt",
                  lmdb=("mnist_train_lmdb", "mnist_test_lmdb"), batch=128),
    "fashion_mnist": dict(net="examples/fashion_mnist/lenet_train_val.prototxt",
                          solver="examples/fashion_mnist/lenet_solver.prototxt",
                          lmdb=("fashion_mnist_train_lmdb", "fashion_mnist_test_lmdb"),
                          batch=64),
}
ACCURACY = re.compile(r"Test net output #\d+: accuracy = ([0-9.]+)")


def log(message):
    print(f"[compression_convergence {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def set_field(text, field, value):
    """Replaces `field: ...` (one line) in a prototxt, or appends it."""
    pattern = re.compile(rf"(?m)^{field}:.*$")
    if pattern.search(text):
        return pattern.sub(f"{field}: {value}", text)
    return text + f"\n{field}: {value}\n"


def write_files(work, dataset, data_dir, ranks, iterations, test_interval):
    spec = DATASETS[dataset]
    with open(os.path.join(ROOT, spec["net"])) as f:
        net = f.read()
    train_lmdb, test_lmdb = (os.path.join(data_dir, name) for name in spec["lmdb"])
    net = re.sub(r'source: "[^"]*_train_lmdb"', f'source: "{train_lmdb}"', net)
    net = re.sub(r'source: "[^"]*_test_lmdb"', f'source: "{test_lmdb}"', net)
    per_rank = spec["batch"] // ranks
    # The TRAIN Data layer's batch (the first batch_size), per rank.
    net = re.sub(r"batch_size: \d+", f"batch_size: {per_rank}", net, count=1)
    net_file = os.path.join(work, f"{dataset}_np{ranks}_net.prototxt")
    with open(net_file, "w") as f:
        f.write(net)
    with open(os.path.join(ROOT, spec["solver"])) as f:
        solver = f.read()
    for field, value in (("net", f'"{net_file}"'), ("max_iter", iterations),
                         ("test_interval", test_interval), ("display", test_interval),
                         ("snapshot", 0),
                         ("snapshot_prefix", f'"{os.path.join(work, dataset)}"'),
                         ("random_seed", 1), ("test_initialization", "false"),
                         ("snapshot_after_train", "false")):
        solver = set_field(solver, field, value)
    solver_file = os.path.join(work, f"{dataset}_np{ranks}_solver.prototxt")
    with open(solver_file, "w") as f:
        f.write(solver)
    return solver_file


def log_path(args, dataset, ranks, method):
    return os.path.join(args.logs, f"{dataset}_np{ranks}_{method.replace(':', '')}.log")


def final_accuracy(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        found = ACCURACY.findall(f.read())
    return float(found[-1]) if found else None


def run(args, dataset, ranks, method):
    data_dir = args.fashion_mnist if dataset == "fashion_mnist" else args.mnist
    solver = write_files(args.logs, dataset, data_dir, ranks, args.iterations,
                         args.test_interval)
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
               os.path.join(args.build, "tools", "doppio"), "train", f"--solver={solver}",
               f"--grad_compression={method}", *args.train_flags.split()]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", GLOG_logtostderr="1",
               GLOG_minloglevel="0")
    path = log_path(args, dataset, ranks, method)
    start = time.monotonic()
    with open(path, "w") as out:
        result = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                timeout=args.timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}); see {path}")
    log(f"{dataset} np={ranks} {method:11}: accuracy {final_accuracy(path)} "
        f"({time.monotonic() - start:.0f} s)")


def table(args):
    lines = [f"{args.iterations} iterations, test every {args.test_interval}.", "",
             "| data set | ranks | --grad_compression | final test accuracy | vs none (points) |",
             "|---|---:|---|---:|---:|"]
    for dataset in args.datasets:
        for ranks in args.ranks:
            base = final_accuracy(log_path(args, dataset, ranks, "none"))
            for method in args.methods:
                acc = final_accuracy(log_path(args, dataset, ranks, method))
                if acc is None:
                    lines.append(f"| {dataset} | {ranks} | {method} | - | - |")
                    continue
                diff = f"{100 * (acc - base):+.2f}" if base is not None else "-"
                lines.append(f"| {dataset} | {ranks} | {method} | {100 * acc:.2f}% | {diff} |")
    return "\n".join(lines)


def plot(args):
    os.makedirs(args.figures, exist_ok=True)
    for dataset in args.datasets:
        logs, labels = [], []
        for ranks in args.ranks:
            for method in args.methods:
                path = log_path(args, dataset, ranks, method)
                if final_accuracy(path) is not None:
                    logs.append(path)
                    labels.append(f"np{ranks} {method}")
        if logs:
            out = os.path.join(args.figures, f"compression_convergence_{dataset}.png")
            subprocess.run([os.path.join(ROOT, "tools", "plot_training_log"), *logs, "-o", out,
                            "--labels", ",".join(labels)], check=True)
            log(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--datasets", default="mnist,fashion_mnist")
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--methods", default="none,fp16,bf16,powersgd:2,topk:0.01")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--test_interval", type=int, default=250)
    parser.add_argument("--mnist", default=os.path.join(ROOT, "data", "mnist"))
    parser.add_argument("--fashion_mnist", default=os.path.join(ROOT, "data", "fashion_mnist"))
    parser.add_argument("--logs", default="/tmp/compression_convergence")
    parser.add_argument("--figures", default=os.path.join(ROOT, "bench", "figures"))
    parser.add_argument("--train_flags", default="",
                        help="more flags for every doppio train (--compression_start_iter=100)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--table-only", action="store_true",
                        help="table and plots of the logs in --logs, nothing run")
    args = parser.parse_args()
    args.datasets = args.datasets.split(",")
    args.ranks = [int(r) for r in args.ranks.split(",")]
    args.methods = args.methods.split(",")
    for dataset in args.datasets:
        if dataset not in DATASETS:
            sys.exit(f"compression_convergence: unknown data set {dataset} "
                     f"({', '.join(DATASETS)})")
    os.makedirs(args.logs, exist_ok=True)
    if not args.table_only:
        log(f"load: {os.getloadavg()[0]:.1f}")
        for dataset in args.datasets:
            for ranks in args.ranks:
                for method in args.methods:
                    run(args, dataset, ranks, method)
        log(f"load: {os.getloadavg()[0]:.1f}")
    print(table(args))
    plot(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
