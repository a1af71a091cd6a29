#!/usr/bin/env python3
"""Data-parallel scaling of Doppio: np=1 against np=2 ranks, every --sync mode, one table.

For each net it runs build/bench/bench_parallel_scaling once without MPI (one process) and
once under `mpiexec -np 2` (which times overlap, reduce_bcast and blocking in turn), one BLAS
thread per rank, the same batch per rank, and prints per model and mode:

  np=1 ms      time per iteration of one process
  np=2 ms      time per iteration of two ranks (each with the same per-rank batch)
  compute ms   of which forward and backward (mean of the ranks; np=1 is all compute)
  efficiency   weak-scaling efficiency, np=1 ms / np=2 ms (1.0: perfect)
  comm ms      time per iteration during which a collective was in progress (mean of ranks)
  hidden       the part of it that overlapped backward
  wait ms      exposed wait per iteration: the main thread blocked on communication

Rounds alternate np=1 and np=2 and each configuration keeps its fastest round, because
the machine's other load shifts timings by tens of percent.

    /usr/bin/python3 bench/parallel_scaling.py                 # lenet, cifar10_quick, alexnet
    /usr/bin/python3 bench/parallel_scaling.py --nets=lenet --rounds=3 --json=out.json
"""
import argparse
import json
import os
import subprocess
import sys

DEFAULTS = {
    # net: (batch per rank, C,H,W of the synthetic images or "" for crop_size, iterations)
    "lenet": (64, "1,28,28", 20),
    "cifar10_quick": (100, "3,32,32", 6),
    "alexnet": (8, "", 2),
}


def run(command, env, timeout):
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.stderr.write("FAILED: %s\n%s\n" % (" ".join(command), result.stderr[-3000:]))
        return []
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default="lenet,cifar10_quick,alexnet")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="timed windows per run")
    parser.add_argument("--bench", default="build/bench/bench_parallel_scaling")
    parser.add_argument("--mpiexec", default="mpiexec")
    parser.add_argument("--bucket_mb", type=float, default=25)
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bench = os.path.join(root, args.bench) if not os.path.isabs(args.bench) else args.bench
    if not os.path.exists(bench):
        sys.stderr.write("%s is missing: cmake --build build --target bench_parallel_scaling\n"
                         % bench)
        return 1
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print("cores: %d, load average: %s" % (os.cpu_count(), " ".join(
        "%.2f" % x for x in os.getloadavg())))
    best = {}
    for net in args.nets.split(","):
        batch, image, iterations = DEFAULTS[net]
        common = [bench, "--model=" + net, "--root=" + root, "--batch=%d" % batch,
                  "--image=" + image, "--iterations=%d" % iterations,
                  "--repeats=%d" % args.repeats, "--warmup=1", "--threads=1",
                  "--bucket_mb=%g" % args.bucket_mb]
        for round_index in range(args.rounds):
            order = [1, 2] if round_index % 2 == 0 else [2, 1]
            for ranks in order:
                if ranks == 1:
                    command = common
                else:
                    command = [args.mpiexec, "--oversubscribe", "-np", "2", "-x",
                               "OPENBLAS_NUM_THREADS=1", "--bind-to", "none"] + common
                for row in run(command, env, args.timeout):
                    key = (net, row["np"], row["sync"] if row["np"] > 1 else "-")
                    if key not in best or row["iter_ms"] < best[key]["iter_ms"]:
                        best[key] = row
                    print("  %-14s np=%d %-12s %9.1f ms/iter" % (
                        net, row["np"], key[2], row["iter_ms"]), flush=True)
    print()
    header = ("%-14s %6s %9s  %-12s %9s %10s %10s %9s %7s %9s" %
              ("net", "batch", "np=1 ms", "sync", "np=2 ms", "compute ms", "efficiency",
               "comm ms", "hidden", "wait ms"))
    print(header)
    print("-" * len(header))
    rows = []
    for net in args.nets.split(","):
        one = best.get((net, 1, "-"))
        for sync in ["overlap", "reduce_bcast", "blocking"]:
            two = best.get((net, 2, sync))
            if one is None or two is None:
                print("%-14s %6s %9s  %-12s %s" % (net, "", "", sync, "FAILED"))
                continue
            efficiency = one["iter_ms"] / two["iter_ms"]
            hidden = two["hidden_ms"] / two["comm_ms"] if two["comm_ms"] > 0 else 0.0
            print("%-14s %6d %9.1f  %-12s %9.1f %10.1f %10.2f %9.1f %6.0f%% %9.2f" % (
                net, two["batch"], one["iter_ms"], sync, two["iter_ms"], two["compute_ms"],
                efficiency, two["comm_ms"], 100 * hidden, two["wait_ms"]))
            rows.append(dict(net=net, batch=two["batch"], np1_ms=one["iter_ms"], sync=sync,
                             np2_ms=two["iter_ms"], efficiency=efficiency,
                             comm_ms=two["comm_ms"], hidden_fraction=hidden,
                             wait_ms=two["wait_ms"], compute_ms_np1=one["compute_ms"],
                             compute_ms_np2=two["compute_ms"],
                             gradient_mb=two["gradient_mb"], buckets=two["buckets"]))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
