#!/usr/bin/python3
"""Large-batch training: plain SGD with the linear scaling rule and warm-up against LARC.

    /usr/bin/python3 bench/large_batch_lars.py                      # 10 epochs, batch 64/1024/4096
    /usr/bin/python3 bench/large_batch_lars.py --epochs=2 --larc_eta=0.01 --batches=64,4096

LeNet on Fashion-MNIST (examples/fashion_mnist) for the same number of epochs at every global
batch. Batch 64 is the reference: Caffe's LeNet schedule as written (momentum SGD 0.9,
base_lr 0.01, "inv" policy, weight decay 0.0005). A larger global batch B is 64 images per
forward pass accumulated over iter_size = B / 64 passes (the same arithmetic as B / 64 ranks
of 64), and is trained twice:
  sgd:  `doppio train --lr_scaling=linear --lr_warmup_iters=W`: base_lr x B / 64, warmed up
        from the reference rate over the first --warmup_epochs;
  larc: the same, with `larc: true larc_policy: "clip"` and --larc_eta in the solver
        (and larc_include_bias_bn with --larc_include_bias).
Every run is scored on the 10,000 test images six times at equal intervals (the number of
iterations is the multiple of six nearest the epochs), the last at the end of training.
--jobs runs that many trainings at once, each with --threads BLAS threads: on a small shared
machine one thread per run keeps OpenBLAS's threads from waiting on each other.

Prints the final test accuracy per batch and method and writes
bench/results/large_batch_lars.{md,json,png}. Needs the Fashion-MNIST LMDBs
(data/fashion_mnist/get_fashion_mnist.sh, run when they are missing), a built doppio and
Debian's python3-matplotlib. Minutes of CPU time: not for CI.
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_lenet  # noqa: E402  (the data set-up and log timestamps it shares)

ROOT = fashion_mnist_lenet.ROOT
RESULTS = fashion_mnist_lenet.RESULTS
TRAIN_IMAGES = 60000
PER_PASS = 64
POINTS = 6
# doppio's exit status when training diverges (NaN or infinity).
DIVERGED = 3


def schedule(batch, epochs):
    """Iterations between tests and in all: a multiple of POINTS nearest `epochs`, tested
    POINTS times at equal intervals, the last test at the end of training (Caffe tests at the
    end only when test_interval divides max_iter)."""
    interval = max(1, round(epochs * TRAIN_IMAGES / batch / POINTS))
    return interval, interval * POINTS


def write_solver(folder, name, batch, epochs, larc_eta, include_bias):
    interval, max_iter = schedule(batch, epochs)
    with open(os.path.join(ROOT, "examples/fashion_mnist/lenet_solver.prototxt")) as f:
        solver = f.read()
    replacements = {
        "net": '"%s"' % os.path.join(ROOT, "examples/fashion_mnist/lenet_train_val.prototxt"),
        "test_interval": str(interval),
        "max_iter": str(max_iter),
        "snapshot_prefix": '"%s"' % os.path.join(folder, name),
        "display": str(interval),
    }
    lines = fashion_mnist_lenet.set_solver_fields(solver, replacements)
    lines += [
        "iter_size: %d" % (batch // PER_PASS),
        "test_initialization: false",
        "random_seed: 1",
        "snapshot_after_train: false",
    ]
    if larc_eta:
        lines += ["larc: true", 'larc_policy: "clip"', "larc_eta: %g" % larc_eta]
        if include_bias:
            lines.append("larc_include_bias_bn: true")
    solver_file = os.path.join(folder, name + "_solver.prototxt")
    with open(solver_file, "w") as f:
        f.write("\n".join(lines) + "\n")
    return solver_file, interval, max_iter


def run(doppio, folder, batch, method, args):
    name = "b%d_%s" % (batch, method)
    solver, interval, max_iter = write_solver(
        folder, name, batch, args.epochs, args.larc_eta if method == "larc" else 0,
        args.larc_include_bias)
    command = [doppio, "train", "--solver=" + solver]
    if batch != PER_PASS:
        warmup = max(1, round(args.warmup_epochs * TRAIN_IMAGES / batch))
        command += ["--lr_scaling=linear", "--lr_warmup_iters=%d" % warmup]
    env = dict(os.environ, GLOG_logtostderr="1")
    env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(args.threads)
    log_file = os.path.join(folder, name + ".log")
    print("bench: " + " ".join(command), flush=True)
    with open(log_file, "w") as log:
        status = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    with open(log_file) as f:
        lines = f.read().splitlines()
    if status.returncode not in (0, DIVERGED):
        sys.stderr.write("\n".join(lines[-20:]) + "\n")
        raise RuntimeError("%s failed (exit %d), log %s" % (name, status.returncode, log_file))
    curve = []
    testing = None
    start = end = None
    for line in lines:
        stamp = fashion_mnist_lenet.log_time(line)
        if start is None and re.search(r"\] Solving ", line):
            start = stamp
        if stamp is not None:
            end = stamp
        match = re.search(r"Iteration (\d+), Testing net \(#0\)", line)
        if match:
            testing = int(match.group(1))
        match = re.search(r"Test net output #\d+: accuracy = ([\d.eE+-]+)", line)
        if match and testing is not None:
            curve.append((testing * batch / TRAIN_IMAGES, float(match.group(1))))
    diverged = status.returncode == DIVERGED
    final = curve[-1][1] if curve and not diverged and curve[-1][0] >= max_iter * batch / TRAIN_IMAGES else None
    print("bench: %s: final accuracy %s%s" % (
        name, "%.4f" % final if final is not None else "-", " (diverged)" if diverged else ""), flush=True)
    return {"batch": batch, "method": method, "log": log_file, "curve": curve, "final": final,
            "diverged": diverged, "epochs": max_iter * batch / TRAIN_IMAGES,
            "seconds": (end - start) if start is not None and end is not None else None,
            "load_average": os.getloadavg()}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for result in results:
        if not result["curve"]:
            continue
        epochs, accuracy = zip(*result["curve"])
        style = "-" if result["method"] != "larc" else "--"
        axes.plot(epochs, [100 * a for a in accuracy], style, marker="o", markersize=3,
                  label="batch %d, %s" % (result["batch"], result["method"]))
    axes.set_xlabel("epoch")
    axes.set_ylabel("test accuracy (%)")
    axes.set_title("LeNet on Fashion-MNIST: SGD + linear scaling + warm-up vs LARC")
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=float, default=10)
    parser.add_argument("--batches", default="64,1024,4096", help="global batches; the first is the reference")
    parser.add_argument("--larc_eta", type=float, default=0.01)
    parser.add_argument("--larc_include_bias", action="store_true",
                        help="LARC also sets the biases' rates (larc_include_bias_bn)")
    parser.add_argument("--warmup_epochs", type=float, default=1)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads of each run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once")
    parser.add_argument("--doppio", default=os.path.join(ROOT, "build/tools/doppio"))
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if any(b % PER_PASS for b in batches):
        parser.error("every batch must be a multiple of %d" % PER_PASS)
    fashion_mnist_lenet.ensure_data()
    folder = os.path.join(RESULTS, "large_batch_lars")
    os.makedirs(folder, exist_ok=True)

    runs = [(batch, method) for batch in batches
            for method in (["sgd"] if batch == batches[0] else ["sgd", "larc"])]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda r: run(args.doppio, folder, r[0], r[1], args), runs))

    def cell(result):
        if result is None:
            return "-"
        if result["diverged"]:
            return "diverged"
        return "%.2f%%" % (100 * result["final"]) if result["final"] is not None else "-"

    def find(batch, method):
        return next((r for r in results if r["batch"] == batch and r["method"] == method), None)

    table = ["| global batch | iter_size | epochs | SGD + linear scaling + warm-up | LARC (clip, eta %g%s) |"
             % (args.larc_eta, ", biases included" if args.larc_include_bias else ""),
             "|---|---|---|---|---|"]
    for batch in batches:
        sgd, larc = find(batch, "sgd"), find(batch, "larc")
        label = "%d (reference, plain SGD)" % batch if batch == batches[0] else str(batch)
        table.append("| %s | %d | %.2f | %s | %s |" % (
            label, batch // PER_PASS, sgd["epochs"], cell(sgd), cell(larc)))
    notes = []
    reference = find(batches[0], "sgd")
    for batch in batches[1:]:
        sgd, larc = find(batch, "sgd"), find(batch, "larc")
        if reference["final"] is None or larc["final"] is None:
            continue
        gap = 100 * (larc["final"] - reference["final"])
        beats = sgd["final"] is None or larc["final"] > sgd["final"]
        notes.append("batch %d: LARC %+.2f points against the reference (%s 1.5), %s plain SGD" % (
            batch, gap, "within" if gap >= -1.5 else "NOT within", "better than" if beats else "NOT better than"))
    notes.append("warm-up %g epoch(s); %d run(s) at once, %d thread(s) each, on %d cores; load "
                 "average (1 / 5 / 15 min) after each run: %s" % (
                     args.warmup_epochs, args.jobs, args.threads, os.cpu_count() or 1,
                     "; ".join("b%d %s %.1f/%.1f/%.1f" % ((r["batch"], r["method"]) + tuple(r["load_average"]))
                               for r in results)))
    text = "\n".join(table + [""] + notes) + "\n"
    print("\n" + text)
    with open(os.path.join(RESULTS, "large_batch_lars.md"), "w") as f:
        f.write(text)
    with open(os.path.join(RESULTS, "large_batch_lars.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)
    plot(results, os.path.join(RESULTS, "large_batch_lars.png"))
    print("bench: curves in " + os.path.join(RESULTS, "large_batch_lars.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
