#!/usr/bin/python3
"""Time to accuracy: LeNet on Fashion-MNIST in Doppio (1 and 2 MPI ranks) and in PyTorch.

    /usr/bin/python3 bench/fashion_mnist_lenet.py                 # 2,000 and 10,000 iterations
    /usr/bin/python3 bench/fashion_mnist_lenet.py --checkpoints=200,1000 --runs=doppio1,pytorch

Every run trains Caffe's LeNet (models/lenet) with the same schedule: batch 64, momentum
SGD 0.9, weight decay 0.0005, lr = 0.01 (1 + 0.0001 iter)^-0.75, biases at twice the rate,
Xavier weights, the 60,000 training images in file order, scaled by 1/256. At each
checkpoint the net is scored on all 10,000 test images. The Doppio runs use
examples/fashion_mnist/lenet_solver.prototxt; with 2 ranks each takes 32 images, so the
global batch stays 64 and the arithmetic is the one-process run's. PyTorch runs the same
net with Caffe's update rule written out (lr inside the momentum, as Caffe does).

Wall time counts training and the tests at the checkpoints, from the first iteration. The
results go to bench/results/fashion_mnist_lenet.{md,json}. Needs the Fashion-MNIST LMDBs and
idx files (data/fashion_mnist/get_fashion_mnist.sh, run when they are missing), the built
doppio, mpirun for 2 ranks, and Debian's python3-torch.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "fashion_mnist")
RESULTS = os.path.join(ROOT, "bench", "results")
BATCH = 64
# glog's prefix: Caffe's MMDD (Doppio's default), or YYYYMMDD (--log_year_in_prefix).
STAMP = re.compile(r"^[IWEF](\d{8}|\d{4}) (\d\d):(\d\d):(\d\d\.\d+)")


def log_time(line):
    match = STAMP.match(line)
    if not match:
        return None
    date, hour, minute, second = match.groups()
    # Without a year only differences within one run matter: any leap year will do.
    day = datetime.datetime.strptime(date if len(date) == 8 else "2000" + date, "%Y%m%d")
    return day.timestamp() + int(hour) * 3600 + int(minute) * 60 + float(second)


def ensure_data():
    needed = [
        "fashion_mnist_train_lmdb",
        "fashion_mnist_test_lmdb",
        "train-images-idx3-ubyte",
        "t10k-images-idx3-ubyte",
    ]
    if not all(os.path.exists(os.path.join(DATA, name)) for name in needed):
        subprocess.run([os.path.join(DATA, "get_fashion_mnist.sh")], check=True)


def write_doppio_files(folder, ranks, checkpoints):
    """A net with batch 64 / ranks per rank and a solver testing at the checkpoints."""
    with open(os.path.join(ROOT, "examples/fashion_mnist/lenet_train_val.prototxt")) as f:
        net = f.read()
    assert net.count("batch_size: 64") == 1
    net = net.replace("batch_size: 64", "batch_size: %d" % (BATCH // ranks))
    net_file = os.path.join(folder, "lenet_train_val_np%d.prototxt" % ranks)
    with open(net_file, "w") as f:
        f.write(net)
    interval = checkpoints[0]
    assert all(c % interval == 0 for c in checkpoints), "checkpoints must be multiples of the first"
    with open(os.path.join(ROOT, "examples/fashion_mnist/lenet_solver.prototxt")) as f:
        solver = f.read()
    replacements = {
        "net": '"%s"' % net_file,
        "test_interval": str(interval),
        "max_iter": str(checkpoints[-1]),
        "snapshot_prefix": '"%s"' % os.path.join(folder, "lenet_np%d" % ranks),
        "display": "500",
    }
    lines = set_solver_fields(solver, replacements)
    lines += ["test_initialization: false", "random_seed: 1", "snapshot_after_train: false"]
    solver_file = os.path.join(folder, "lenet_solver_np%d.prototxt" % ranks)
    with open(solver_file, "w") as f:
        f.write("\n".join(lines) + "\n")
    return solver_file


def set_solver_fields(solver, replacements):
    """The solver text's lines with the fields named in `replacements` set to its values."""
    lines = []
    for line in solver.splitlines():
        key = line.split(":")[0].strip()
        if key in replacements:
            line = "%s: %s" % (key, replacements[key])
        lines.append(line)
    return lines


def run_doppio(ranks, checkpoints, threads, doppio):
    folder = os.path.join(RESULTS, "fashion_mnist")
    os.makedirs(folder, exist_ok=True)
    solver = write_doppio_files(folder, ranks, checkpoints)
    command = [doppio, "train", "--solver=" + solver]
    env = dict(os.environ, GLOG_logtostderr="1")
    if ranks > 1:
        launcher = ["mpirun", "-np", str(ranks)]
        if os.geteuid() == 0:
            launcher.append("--allow-run-as-root")
        if (os.cpu_count() or 1) < ranks:
            launcher.append("--oversubscribe")
        command = launcher + command
        # doppio gives each rank its share of the cores.
        env.pop("OPENBLAS_NUM_THREADS", None)
        env.pop("OMP_NUM_THREADS", None)
    else:
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = str(threads)
    log_file = os.path.join(folder, "doppio_np%d.log" % ranks)
    print("bench: " + " ".join(command), flush=True)
    with open(log_file, "w") as log:
        status = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    with open(log_file) as f:
        lines = f.read().splitlines()
    if status.returncode != 0:
        sys.stderr.write("\n".join(lines[-20:]) + "\n")
        raise RuntimeError("doppio np=%d failed (exit %d), log %s" % (ranks, status.returncode, log_file))
    start = None
    testing = None
    results = {}
    for line in lines:
        stamp = log_time(line)
        if start is None and re.search(r"\] Solving ", line):
            start = stamp  # the solver is set up; iteration 0 begins
        match = re.search(r"Iteration (\d+), Testing net \(#0\)", line)
        if match:
            testing = int(match.group(1))
        match = re.search(r"Test net output #\d+: accuracy = ([\d.eE+-]+)", line)
        if match and testing is not None:
            results[testing] = {"accuracy": float(match.group(1)), "seconds": stamp - start}
    return {"log": log_file, "checkpoints": results}


def read_idx(name):
    import numpy

    with open(os.path.join(DATA, name), "rb") as f:
        data = f.read()
    if name.endswith("idx3-ubyte"):
        count, rows, cols = (int.from_bytes(data[i : i + 4], "big") for i in (4, 8, 12))
        return numpy.frombuffer(data, numpy.uint8, offset=16).reshape(count, 1, rows, cols)
    return numpy.frombuffer(data, numpy.uint8, offset=8).astype(numpy.int64)


def run_pytorch(checkpoints, threads, seed):
    # libgomp's threads spin while they wait by default; on a machine with more runnable
    # threads than cores a spinning thread holds the core its partner needs, and LeNet ran six
    # times slower (600 instead of 95 ms an iteration at load average 12 on 2 cores).
    # Set before torch loads libgomp.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import numpy
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    scale = 0.00390625
    train_x = torch.from_numpy(read_idx("train-images-idx3-ubyte").astype(numpy.float32) * scale)
    train_y = torch.from_numpy(read_idx("train-labels-idx1-ubyte"))
    test_x = torch.from_numpy(read_idx("t10k-images-idx3-ubyte").astype(numpy.float32) * scale)
    test_y = torch.from_numpy(read_idx("t10k-labels-idx1-ubyte"))

    def xavier(*shape):
        fan_in = 1
        for d in shape[1:]:
            fan_in *= d
        bound = (3.0 / fan_in) ** 0.5
        return (torch.rand(*shape) * 2 - 1) * bound

    # (weight, bias) per layer, in Caffe's shapes.
    params = {
        "conv1": [xavier(20, 1, 5, 5), torch.zeros(20)],
        "conv2": [xavier(50, 20, 5, 5), torch.zeros(50)],
        "ip1": [xavier(500, 800), torch.zeros(500)],
        "ip2": [xavier(10, 500), torch.zeros(10)],
    }
    tensors = [t.requires_grad_() for pair in params.values() for t in pair]
    lr_mults = [1.0, 2.0] * 4
    history = [torch.zeros_like(t) for t in tensors]

    def forward(x):
        x = F.max_pool2d(F.conv2d(x, params["conv1"][0], params["conv1"][1]), 2, 2, ceil_mode=True)
        x = F.max_pool2d(F.conv2d(x, params["conv2"][0], params["conv2"][1]), 2, 2, ceil_mode=True)
        x = F.relu(F.linear(x.flatten(1), params["ip1"][0], params["ip1"][1]))
        return F.linear(x, params["ip2"][0], params["ip2"][1])

    def test():
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_x), 100):
                correct += (forward(test_x[i : i + 100]).argmax(1) == test_y[i : i + 100]).sum().item()
        return correct / len(test_x)

    results = {}
    count = len(train_x)
    start = time.time()
    for it in range(checkpoints[-1]):
        lr = 0.01 * (1 + 0.0001 * it) ** -0.75
        index = torch.arange(it * BATCH, (it + 1) * BATCH) % count
        loss = F.cross_entropy(forward(train_x[index]), train_y[index])
        for t in tensors:
            t.grad = None
        loss.backward()
        with torch.no_grad():
            for t, v, mult in zip(tensors, history, lr_mults):
                g = t.grad + 0.0005 * t
                v.mul_(0.9).add_(g, alpha=lr * mult)
                t.sub_(v)
        # Tested where Doppio's solver tests (every first checkpoint), so both pay the same.
        if (it + 1) % checkpoints[0] == 0:
            results[it + 1] = {"accuracy": test(), "seconds": time.time() - start}
            print(
                "bench: pytorch iteration %d: accuracy %.4f, %.1f s"
                % (it + 1, results[it + 1]["accuracy"], results[it + 1]["seconds"]),
                flush=True,
            )
    return {"checkpoints": results, "torch": torch.__version__}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", default="2000,10000", help="iterations to score at")
    parser.add_argument(
        "--runs", default="doppio1,doppio2,pytorch", help="which of doppio1, doppio2, pytorch"
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads of the one-process runs (default: the cores)")
    parser.add_argument("--doppio", default=os.path.join(ROOT, "build/tools/doppio"))
    parser.add_argument("--seed", type=int, default=1, help="PyTorch's initialisation seed")
    args = parser.parse_args()
    checkpoints = sorted(int(c) for c in args.checkpoints.split(","))
    runs = args.runs.split(",")
    ensure_data()
    os.makedirs(RESULTS, exist_ok=True)

    results = {}
    for run in runs:
        if run.startswith("doppio"):
            ranks = int(run[len("doppio"):])
            results[run] = run_doppio(ranks, checkpoints, args.threads, args.doppio)
        elif run == "pytorch":
            results[run] = run_pytorch(checkpoints, args.threads, args.seed)
        else:
            parser.error("unknown run '%s'" % run)
        # The machine may be shared: the load while each run ran goes beside its times.
        results[run]["load_average"] = os.getloadavg()
        for c, point in sorted(results[run]["checkpoints"].items()):
            print("bench: %s iteration %d: accuracy %.4f after %.1f s" % (run, c, point["accuracy"], point["seconds"]), flush=True)

    names = {"doppio1": "Doppio, 1 process (%d threads)" % args.threads,
             "doppio2": "Doppio, mpirun -np 2 (32 per rank)",
             "pytorch": "PyTorch %s (%d threads)" % (results.get("pytorch", {}).get("torch", ""), args.threads)}
    header = "| run | " + " | ".join(
        "accuracy @ %s | seconds @ %s" % (format(c, ","), format(c, ",")) for c in checkpoints) + " |"
    table = [header, "|---" * (1 + 2 * len(checkpoints)) + "|"]
    for run in runs:
        cells = []
        for c in checkpoints:
            point = results[run]["checkpoints"].get(c)
            cells += ["%.2f%%" % (100 * point["accuracy"]), "%.0f" % point["seconds"]] if point else ["-", "-"]
        table.append("| %s | %s |" % (names.get(run, run), " | ".join(cells)))
    verdicts = []
    if "pytorch" in results:
        for run in runs:
            if not run.startswith("doppio"):
                continue
            for c in checkpoints:
                mine = results[run]["checkpoints"].get(c)
                theirs = results["pytorch"]["checkpoints"].get(c)
                if mine and theirs:
                    gap = 100 * (mine["accuracy"] - theirs["accuracy"])
                    verdicts.append("%s at %s iterations: %+.2f points against PyTorch (%s)" % (
                        run, format(c, ","), gap, "within 0.5" if abs(gap) <= 0.5 else "NOT within 0.5"))
    loads = [
        "%s: %.1f / %.1f / %.1f" % ((run,) + tuple(results[run]["load_average"])) for run in runs
    ]
    verdicts.append("load average (1 / 5 / 15 min) at the end of each run on %d cores: %s"
                    % (os.cpu_count() or 1, "; ".join(loads)))
    text = "\n".join(table + [""] + verdicts) + "\n"
    print("\n" + text)
    with open(os.path.join(RESULTS, "fashion_mnist_lenet.md"), "w") as f:
        f.write(text)
    with open(os.path.join(RESULTS, "fashion_mnist_lenet.json"), "w") as f:
        json.dump({"checkpoints": checkpoints, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
