#!/usr/bin/python3
"""CPU forward+backward time per iteration: Doppio's two CPU engines against PyTorch.

For each net the same architecture runs in both frameworks: Doppio reads
models/<net>/train_val.prototxt through `doppio time` (its Data layers become
inputs of the same shape); PyTorch runs a copy of that net written out layer by
layer below (same convolutions, groups, LRN, Caffe's ceil-mode pooling, dropout,
and in GoogLeNet the two auxiliary loss heads of the TRAIN phase). One iteration is
the forward pass of the TRAIN net including its softmax losses, then the backward
pass down to the first convolution (the data needs no gradient).

Doppio runs once per engine setting (`--engines`): CAFFE (`doppio time --engine=CAFFE`,
its own im2col + OpenBLAS kernels), ONEDNN (`--engine=ONEDNN`: every layer oneDNN can
run on oneDNN, the rest on CAFFE) and DEFAULT (no `--engine`: what a net without
`engine` fields runs, i.e. what users get; it differs from ONEDNN where the engine's
default rule keeps a layer on CAFFE, e.g. LRN); BF16 is DEFAULT with `--precision=bf16`
(mixed precision: bf16 activations between the oneDNN layers, docs/precision.md; it needs
a CPU with AVX512-BF16, and is not in the default --engines). The frameworks take turns, in a rotating order, for several rounds,
because timings on a shared machine vary by +-20%; each keeps its best. The peak
resident memory of each Doppio run is reported too, and the fraction of the cores'
peak FLOP/s each run reaches: the FLOPs of one iteration are counted from the net
(its convolutions and inner products, the twin's nn.Conv2d and nn.Linear: forward,
backward data except below the first convolution, backward weights; 2 FLOPs per
multiply-add), and the peak is the best rate of a 1024^3 float GEMM (a 1x1
convolution through PyTorch's oneDNN) on T threads, measured before, during (once per
job and round) and after the rounds: a lower bound of the core's peak, as good as the
quietest moment the run had. Run with
/usr/bin/python3, which has PyTorch:

    /usr/bin/python3 bench/cpu_forward_backward.py
    /usr/bin/python3 bench/cpu_forward_backward.py --nets=lenet,alexnet --threads=1,2 --rounds=5
    /usr/bin/python3 bench/cpu_forward_backward.py --pytorch-only --iterations=2 --rounds=1

See bench/README.md.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOPPIO = os.path.join(ROOT, "build", "tools", "doppio")

# net -> batch, input shape (C, H, W; after the TRAIN crop) and the default number of
# timed iterations per measurement (chosen so that one measurement takes about a
# second or two on one core).
NETS = {
    "lenet":         dict(batch=64,  shape=(1, 28, 28),   iterations=20),
    "cifar10_quick": dict(batch=100, shape=(3, 32, 32),   iterations=10),
    "cifar10_full":  dict(batch=100, shape=(3, 32, 32),   iterations=10),
    "alexnet":       dict(batch=8,   shape=(3, 227, 227), iterations=4),
    "googlenet":     dict(batch=8,   shape=(3, 224, 224), iterations=3),
    "resnet50":      dict(batch=8,   shape=(3, 224, 224), iterations=2),
}
DEFAULT_NETS = "lenet,cifar10_quick,alexnet,googlenet"

FB_RE = re.compile(r"Average Forward-Backward:\s*([0-9.eE+-]+)\s*ms")
F_RE = re.compile(r"Average Forward pass:\s*([0-9.eE+-]+)\s*ms")
B_RE = re.compile(r"Average Backward pass:\s*([0-9.eE+-]+)\s*ms")
PEAK_RE = re.compile(r"Peak host memory:\s*([0-9.]+)\s*MiB")
ENGINES = ("CAFFE", "ONEDNN", "DEFAULT", "BF16")


# --------------------------------------------------------------------------- PyTorch nets

def build_torch_nets():
    """Defines the PyTorch twins of models/<net>/train_val.prototxt (TRAIN phase).
    Each module's forward returns [(logits, loss_weight), ...], one per
    SoftmaxWithLoss layer of the prototxt."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def max_pool(k, s, p=0):
        # Caffe rounds pooled sizes up (ceil) and keeps the last window starting
        # inside the image, which is what ceil_mode=True does.
        return nn.MaxPool2d(k, s, p, ceil_mode=True)

    def ave_pool(k, s, p=0):
        # Caffe divides by the window clipped to the padded image; so does PyTorch
        # with count_include_pad=True.
        return nn.AvgPool2d(k, s, p, ceil_mode=True, count_include_pad=True)

    def lrn_across(local_size=5, alpha=1e-4, beta=0.75):
        # Caffe ACROSS_CHANNELS: x / (1 + alpha/n * sum_{n channels} x^2)^beta;
        # PyTorch's LocalResponseNorm is the same formula.
        return nn.LocalResponseNorm(local_size, alpha=alpha, beta=beta, k=1.0)

    class LRNWithinChannel(nn.Module):
        """Caffe WITHIN_CHANNEL: x / (1 + alpha/n^2 * sum_{n x n window} x^2)^beta,
        the window zero-padded (Caffe builds it from an AVE pooling with pad)."""

        def __init__(self, local_size, alpha, beta):
            super().__init__()
            self.n, self.alpha, self.beta = local_size, alpha, beta

        def forward(self, x):
            pooled = F.avg_pool2d(x * x, self.n, 1, (self.n - 1) // 2,
                                  count_include_pad=True)
            return x * torch.pow(1 + self.alpha * pooled, -self.beta)

    class Single(nn.Module):
        def __init__(self, *layers):
            super().__init__()
            self.body = nn.Sequential(*layers)

        def forward(self, x):
            return [(self.body(x), 1.0)]

    def relu():
        return nn.ReLU(inplace=True)

    def lenet():
        return Single(
            nn.Conv2d(1, 20, 5), max_pool(2, 2),
            nn.Conv2d(20, 50, 5), max_pool(2, 2),
            nn.Flatten(),
            nn.Linear(50 * 4 * 4, 500), relu(),
            nn.Linear(500, 10))

    def cifar10_quick():
        return Single(
            nn.Conv2d(3, 32, 5, padding=2), max_pool(3, 2), relu(),
            nn.Conv2d(32, 32, 5, padding=2), relu(), ave_pool(3, 2),
            nn.Conv2d(32, 64, 5, padding=2), relu(), ave_pool(3, 2),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 64),
            nn.Linear(64, 10))

    def cifar10_full():
        return Single(
            nn.Conv2d(3, 32, 5, padding=2), max_pool(3, 2), relu(),
            LRNWithinChannel(3, 5e-05, 0.75),
            nn.Conv2d(32, 32, 5, padding=2), relu(), ave_pool(3, 2),
            LRNWithinChannel(3, 5e-05, 0.75),
            nn.Conv2d(32, 64, 5, padding=2), relu(), ave_pool(3, 2),
            nn.Flatten(),
            nn.Linear(64 * 4 * 4, 10))

    def alexnet():
        return Single(
            nn.Conv2d(3, 96, 11, stride=4), relu(), lrn_across(), max_pool(3, 2),
            nn.Conv2d(96, 256, 5, padding=2, groups=2), relu(), lrn_across(),
            max_pool(3, 2),
            nn.Conv2d(256, 384, 3, padding=1), relu(),
            nn.Conv2d(384, 384, 3, padding=1, groups=2), relu(),
            nn.Conv2d(384, 256, 3, padding=1, groups=2), relu(), max_pool(3, 2),
            nn.Flatten(),
            nn.Linear(256 * 6 * 6, 4096), relu(), nn.Dropout(0.5),
            nn.Linear(4096, 4096), relu(), nn.Dropout(0.5),
            nn.Linear(4096, 1000))

    class Inception(nn.Module):
        def __init__(self, cin, n1, n3r, n3, n5r, n5, npp):
            super().__init__()
            self.b1 = nn.Sequential(nn.Conv2d(cin, n1, 1), relu())
            self.b3 = nn.Sequential(nn.Conv2d(cin, n3r, 1), relu(),
                                    nn.Conv2d(n3r, n3, 3, padding=1), relu())
            self.b5 = nn.Sequential(nn.Conv2d(cin, n5r, 1), relu(),
                                    nn.Conv2d(n5r, n5, 5, padding=2), relu())
            self.bp = nn.Sequential(max_pool(3, 1, 1), nn.Conv2d(cin, npp, 1), relu())
            self.cout = n1 + n3 + n5 + npp

        def forward(self, x):
            return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], 1)

    def aux_head(cin):
        # loss1 / loss2: 14x14 -> AVE 5/3 -> 4x4, conv 1x1 128, fc 1024, fc 1000
        return nn.Sequential(
            ave_pool(5, 3), nn.Conv2d(cin, 128, 1), relu(),
            nn.Flatten(), nn.Linear(128 * 4 * 4, 1024), relu(), nn.Dropout(0.7),
            nn.Linear(1024, 1000))

    class GoogLeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 64, 7, stride=2, padding=3), relu(), max_pool(3, 2),
                lrn_across(),
                nn.Conv2d(64, 64, 1), relu(),
                nn.Conv2d(64, 192, 3, padding=1), relu(), lrn_across(),
                max_pool(3, 2))
            i3a = Inception(192, 64, 96, 128, 16, 32, 32)
            i3b = Inception(i3a.cout, 128, 128, 192, 32, 96, 64)
            i4a = Inception(i3b.cout, 192, 96, 208, 16, 48, 64)
            self.to4a = nn.Sequential(i3a, i3b, max_pool(3, 2), i4a)
            i4b = Inception(i4a.cout, 160, 112, 224, 24, 64, 64)
            i4c = Inception(i4b.cout, 128, 128, 256, 24, 64, 64)
            i4d = Inception(i4c.cout, 112, 144, 288, 32, 64, 64)
            self.to4d = nn.Sequential(i4b, i4c, i4d)
            i4e = Inception(i4d.cout, 256, 160, 320, 32, 128, 128)
            i5a = Inception(i4e.cout, 256, 160, 320, 32, 128, 128)
            i5b = Inception(i5a.cout, 384, 192, 384, 48, 128, 128)
            self.top = nn.Sequential(
                i4e, max_pool(3, 2), i5a, i5b, ave_pool(7, 1), nn.Dropout(0.4),
                nn.Flatten(), nn.Linear(i5b.cout, 1000))
            self.loss1 = aux_head(i4a.cout)
            self.loss2 = aux_head(i4d.cout)

        def forward(self, x):
            a = self.to4a(self.stem(x))
            d = self.to4d(a)
            return [(self.loss1(a), 0.3), (self.loss2(d), 0.3), (self.top(d), 1.0)]

    class Bottleneck(nn.Module):
        # Convolution (no bias) + BatchNorm + Scale = Conv2d + BatchNorm2d(affine);
        # the stride sits on the first 1x1 as in He's Caffe models.
        def __init__(self, cin, width, cout, stride):
            super().__init__()

            def cbn(i, o, k, s=1, p=0):
                return [nn.Conv2d(i, o, k, stride=s, padding=p, bias=False),
                        nn.BatchNorm2d(o)]
            self.branch2 = nn.Sequential(
                *cbn(cin, width, 1, stride), relu(),
                *cbn(width, width, 3, 1, 1), relu(),
                *cbn(width, cout, 1))
            self.branch1 = (nn.Sequential(*cbn(cin, cout, 1, stride))
                            if cin != cout or stride != 1 else None)

        def forward(self, x):
            s = self.branch1(x) if self.branch1 is not None else x
            return F.relu(s + self.branch2(x))

    def resnet50():
        layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.BatchNorm2d(64), relu(),
                  max_pool(3, 2)]
        cin = 64
        for blocks, width, cout, stride in ((3, 64, 256, 1), (4, 128, 512, 2),
                                            (6, 256, 1024, 2), (3, 512, 2048, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, cout, stride if i == 0 else 1))
                cin = cout
        layers += [ave_pool(7, 1), nn.Flatten(), nn.Linear(2048, 1000)]
        return Single(*layers)

    return {"lenet": lenet, "cifar10_quick": cifar10_quick,
            "cifar10_full": cifar10_full, "alexnet": alexnet,
            "googlenet": GoogLeNet, "resnet50": resnet50}


class TorchBench:
    def __init__(self, no_mkldnn=False):
        import torch
        self.torch = torch
        if no_mkldnn:
            torch.backends.mkldnn.enabled = False
        self.factories = build_torch_nets()
        self.cache = {}

    def describe(self):
        t = self.torch
        return "PyTorch %s, mkldnn %s, %d CPUs" % (
            t.__version__,
            "on" if t.backends.mkldnn.is_available() and t.backends.mkldnn.enabled
            else "off", os.cpu_count() or 0)

    def setup(self, net, batch):
        key = (net, batch)
        if key not in self.cache:
            torch = self.torch
            torch.manual_seed(0)
            model = self.factories[net]()
            model.train()  # TRAIN phase: dropout on, batch statistics in BatchNorm
            x = torch.randn(batch, *NETS[net]["shape"])
            y = torch.randint(0, 1000 if net in ("alexnet", "googlenet", "resnet50")
                              else 10, (batch,))
            self.cache[key] = (model, x, y)
        return self.cache[key]

    def flops(self, net, batch):
        """FLOPs of one training iteration, counted from the net's convolutions and
        inner products: the forward pass, the weight gradients (as many again) and the
        data gradients (as many again, except the first convolution's: the data takes
        none). Pooling, LRN, BatchNorm, ReLU and the losses are left out (a few percent,
        and memory-bound)."""
        torch = self.torch
        model, x, _ = self.setup(net, batch)
        counts = []

        def hook(module, inputs, output):
            if isinstance(module, torch.nn.Conv2d):
                per_output = module.in_channels // module.groups * \
                    module.kernel_size[0] * module.kernel_size[1]
            else:
                per_output = module.in_features
            counts.append(2 * output.numel() * per_output)

        handles = [m.register_forward_hook(hook) for m in model.modules()
                   if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
        with torch.no_grad():
            model(x)
        for h in handles:
            h.remove()
        return 3 * sum(counts) - counts[0]

    def peak_gflops(self, threads, repeats=5):
        """Best GFLOP/s of a 1x1 convolution of 1024 to 1024 channels over 32x32 (a
        1024^3 float GEMM) on `threads` threads, through PyTorch's oneDNN: its AVX-512
        kernels (Debian's torch.mm is OpenBLAS's, which does not use them here)."""
        torch = self.torch
        F = torch.nn.functional
        torch.set_num_threads(threads)
        n = 1024
        x, w = torch.randn(1, n, 32, 32), torch.randn(n, n, 1, 1)
        with torch.no_grad():
            F.conv2d(x, w)
            best = 0.0
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(4):
                    F.conv2d(x, w)
                best = max(best, 4 * 2.0 * n ** 3 / (time.perf_counter() - t0) / 1e9)
        return best

    def parameters(self, net, batch):
        model, _, _ = self.setup(net, batch)
        return sum(p.numel() for p in model.parameters())

    def time(self, net, batch, threads, iterations, warmup, repeats, bf16=False):
        """Best over `repeats` of the mean forward+backward time (ms) of
        `iterations` iterations, after `warmup` untimed ones; `bf16`: the forward under
        CPU autocast to bfloat16 (PyTorch's mixed precision on the CPU)."""
        torch = self.torch
        F = torch.nn.functional
        torch.set_num_threads(threads)
        model, x, y = self.setup(net, batch)

        def step():
            model.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                outputs = model(x)
            loss = sum(w * F.cross_entropy(logits.float(), y) for logits, w in outputs)
            loss.backward()

        for _ in range(warmup):
            step()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(iterations):
                step()
            best = min(best, (time.perf_counter() - t0) * 1000.0 / iterations)
        return best


# --------------------------------------------------------------------------- Doppio

def time_doppio(doppio, engine, net, batch, threads, iterations, timeout):
    """Runs `doppio time --engine=ENGINE` once (no --engine for DEFAULT); returns (forward, backward,
    forward-backward) in ms and the peak resident memory in MiB, or raises
    RuntimeError with the tail of its output."""
    model = os.path.join("models", net, "train_val.prototxt")
    cmd = [doppio, "time", "--model=" + model, "--iterations=%d" % iterations,
           "--phase=TRAIN", "--threads=%d" % threads, "--batch=%d" % batch,
           "--input_shape=%s" % ",".join(str(d) for d in NETS[net]["shape"])]
    if engine == "BF16":
        cmd.append("--precision=bf16")
    elif engine != "DEFAULT":
        cmd.append("--engine=" + engine)
    env = dict(os.environ)
    # in case the BLAS or OpenMP runtime sizes its pool before --threads is applied
    env.setdefault("OMP_NUM_THREADS", str(threads))
    env.setdefault("OPENBLAS_NUM_THREADS", str(threads))
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError("%s: timed out after %d s" % (" ".join(cmd), timeout))
    out = p.stdout
    fb = FB_RE.findall(out)
    if p.returncode != 0 or not fb:
        tail = "\n    ".join(out.strip().splitlines()[-15:])
        why = ("exit status %d" % p.returncode if p.returncode != 0
               else "no 'Average Forward-Backward' line")
        raise RuntimeError("%s: %s\n    %s" % (" ".join(cmd), why, tail))
    # DEFAULT must reach oneDNN too: a build without it would time CAFFE twice.
    expected = "ONEDNN" if engine in ("DEFAULT", "BF16") else engine
    if ("Engine %s runs" % expected) not in out:
        raise RuntimeError("%s: no layer ran on engine %s (a build without it?)"
                           % (" ".join(cmd), expected))
    f, b, peak = F_RE.findall(out), B_RE.findall(out), PEAK_RE.findall(out)
    return (float(f[-1]) if f else None, float(b[-1]) if b else None, float(fb[-1]),
            float(peak[-1]) if peak else None)


# --------------------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="CPU forward+backward time per iteration, Doppio vs PyTorch.")
    ap.add_argument("--nets", default=DEFAULT_NETS,
                    help="comma-separated, from: %s (default: %%(default)s)"
                    % ",".join(NETS))
    ap.add_argument("--threads", default="1,2",
                    help="comma-separated thread counts (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="times each framework is measured, alternating; the best "
                    "counts (default: %(default)s)")
    ap.add_argument("--iterations", type=int, default=None,
                    help="timed iterations per measurement (default: per net, %s)"
                    % ", ".join("%s %d" % (n, c["iterations"]) for n, c in NETS.items()))
    ap.add_argument("--batch", type=int, default=None,
                    help="override every net's batch size (default: %s)"
                    % ", ".join("%s %d" % (n, c["batch"]) for n, c in NETS.items()))
    ap.add_argument("--warmup", type=int, default=2,
                    help="untimed PyTorch iterations before each measurement")
    ap.add_argument("--repeats", type=int, default=3,
                    help="PyTorch repeats per measurement, best kept")
    ap.add_argument("--doppio", default=DEFAULT_DOPPIO,
                    help="path of the doppio binary (default: build/tools/doppio)")
    ap.add_argument("--timeout", type=int, default=1800,
                    help="seconds one `doppio time` run may take")
    ap.add_argument("--pytorch-only", action="store_true",
                    help="time PyTorch alone (no doppio binary needed)")
    ap.add_argument("--no-mkldnn", action="store_true",
                    help="disable PyTorch's oneDNN kernels (plain ATen convolutions)")
    ap.add_argument("--passive-omp", action="store_true",
                    help="OMP_WAIT_POLICY=PASSIVE for both frameworks: idle OpenMP threads "
                    "sleep instead of spinning (on a loaded machine, spinning threads of "
                    "oneDNN and PyTorch take the cores their partners need)")
    ap.add_argument("--engines", default=",".join(ENGINES[:3]),
                    help="comma-separated Doppio engine settings to time, from %s "
                    "(default: %%(default)s)" % ",".join(ENGINES))
    ap.add_argument("--pytorch-bf16", action="store_true",
                    help="also time PyTorch under CPU autocast to bfloat16 (column "
                    "pytorch-bf16), the counterpart of --engines=...,BF16")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the results as JSON to FILE")
    args = ap.parse_args(argv)
    args.net_list = [n for n in args.nets.split(",") if n]
    bad = [n for n in args.net_list if n not in NETS]
    if bad or not args.net_list:
        ap.error("unknown net(s) %s; choose from %s" % (",".join(bad), ",".join(NETS)))
    args.engine_list = [e for e in args.engines.split(",") if e]
    bad = [e for e in args.engine_list if e not in ENGINES]
    if bad or not args.engine_list:
        ap.error("unknown engine(s) %s; choose from %s" % (",".join(bad), ",".join(ENGINES)))
    try:
        args.thread_list = [int(t) for t in args.threads.split(",") if t]
    except ValueError:
        ap.error("--threads takes comma-separated integers, got %r" % args.threads)
    if not args.thread_list or min(args.thread_list) < 1:
        ap.error("--threads needs at least one count >= 1")
    for name in ("rounds", "iterations", "batch", "repeats"):
        v = getattr(args, name)
        if v is not None and v < 1:
            ap.error("--%s must be >= 1" % name)
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    return args


def fmt(v, spec="%.2f"):
    return "-" if v is None else spec % v


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.passive_omp:
        # Read once, when the OpenMP runtime starts: before torch is imported, and by
        # every doppio process from its environment.
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

    if not args.pytorch_only:
        doppio = os.path.abspath(args.doppio)
        if not (os.path.isfile(doppio) and os.access(doppio, os.X_OK)):
            print("error: the doppio binary was not found at %s\n"
                  "  build it first (cmake -S . -B build && cmake --build build -j), "
                  "pass --doppio=PATH,\n  or run with --pytorch-only to time PyTorch "
                  "alone." % doppio, file=sys.stderr)
            return 1
    try:
        torch_bench = TorchBench(no_mkldnn=args.no_mkldnn)
    except ImportError as e:
        print("error: cannot import torch (%s); run this script with /usr/bin/python3, "
              "which has python3-torch." % e, file=sys.stderr)
        return 1

    jobs = []  # (net, batch, threads, iterations)
    for net in args.net_list:
        batch = args.batch or NETS[net]["batch"]
        iters = args.iterations or NETS[net]["iterations"]
        for t in args.thread_list:
            jobs.append((net, batch, t, iters))

    print("# %s%s" % (torch_bench.describe(),
                      ", OMP_WAIT_POLICY=PASSIVE" if args.passive_omp else ""))
    print("# doppio: %s" % ("(not run: --pytorch-only)" if args.pytorch_only
                            else os.path.abspath(args.doppio)))
    print("# %d round(s); PyTorch: %d warm-up + best of %d x N iterations; "
          "doppio (each engine): best of one `doppio time` run of N iterations per round"
          % (args.rounds, args.warmup, args.repeats))
    flops = {}
    for net in args.net_list:
        batch = args.batch or NETS[net]["batch"]
        flops[net] = torch_bench.flops(net, batch)
        print("# %-13s batch %3d, input %s, N=%d, %s parameters, %.2f GFLOP per iteration"
              % (net, batch, "x".join(map(str, NETS[net]["shape"])),
                 args.iterations or NETS[net]["iterations"],
                 format(torch_bench.parameters(net, batch), ","), flops[net] / 1e9))
    gemm_peak = {t: torch_bench.peak_gflops(t) for t in args.thread_list}
    print("# GEMM peak before the rounds: %s" % ", ".join(
        "T=%d %.1f GFLOP/s" % (t, gemm_peak[t]) for t in args.thread_list))
    sys.stdout.flush()

    engines = [] if args.pytorch_only else args.engine_list
    torches = ["pytorch"] + (["pytorch-bf16"] if args.pytorch_bf16 else [])
    frameworks = engines + torches
    best = {job: {fw: None for fw in frameworks} for job in jobs}
    detail = {job: {} for job in jobs}  # engine -> (forward, backward, peak MiB) of its best
    errors = {job: {} for job in jobs}
    for r in range(args.rounds):
        for i, job in enumerate(jobs):
            net, batch, threads, iters = job
            rec = best[job]
            # The peak takes its turn too, so that it gets as many chances at a quiet moment
            # as the nets do.
            gemm_peak[threads] = max(gemm_peak[threads], torch_bench.peak_gflops(threads, 2))
            shift = (r + i) % len(frameworks)
            for fw in frameworks[shift:] + frameworks[:shift]:
                if fw in torches:
                    ms = torch_bench.time(net, batch, threads, iters, args.warmup,
                                          args.repeats, bf16=fw == "pytorch-bf16")
                    note = ""
                else:
                    try:
                        fwd, bwd, ms, peak = time_doppio(os.path.abspath(args.doppio), fw,
                                                         net, batch, threads, iters,
                                                         args.timeout)
                    except RuntimeError as e:
                        errors[job][fw] = str(e)
                        print("round %d: %-13s T=%d %-7s FAILED: %s"
                              % (r + 1, net, threads, fw, e), file=sys.stderr)
                        continue
                    note = "  (forward %s, backward %s, peak %s MiB)" % (
                        fmt(fwd), fmt(bwd), fmt(peak, "%.0f"))
                    if rec[fw] is None or ms < rec[fw]:
                        detail[job][fw] = (fwd, bwd, peak)
                if rec[fw] is None or ms < rec[fw]:
                    rec[fw] = ms
                print("round %d: %-13s batch %3d T=%d %-7s %9.2f ms%s"
                      % (r + 1, net, batch, threads, fw, ms, note))
                sys.stdout.flush()

    for t in args.thread_list:
        gemm_peak[t] = max(gemm_peak[t], torch_bench.peak_gflops(t))
    print("# GEMM peak, best of before, during and after the rounds: %s" % ", ".join(
        "T=%d %.1f GFLOP/s" % (t, gemm_peak[t]) for t in args.thread_list))

    def ratio(a, b):
        return a / b if a is not None and b else None

    def of_peak(ms, net, threads):
        """The percentage of the GEMM peak at `threads` an iteration of `ms` reaches."""
        if ms is None:
            return None
        return 100.0 * flops[net] / (ms / 1000.0) / 1e9 / gemm_peak[threads]

    print()
    cols = engines + torches
    header = "%-14s %5s %7s " % ("net", "batch", "threads") + " ".join(
        "%11s" % (c.lower() + " ms") for c in cols) + "".join(
        " %16s" % (e.lower() + "/pytorch") for e in engines) + " %14s %18s" % (
        "peak MiB " + "/".join(e[0].lower() for e in engines),
        "% GEMM peak " + "/".join(c[0].lower() for c in cols))
    print(header)
    print("-" * len(header))
    failed = False
    for job in jobs:
        net, batch, threads, _ = job
        rec = best[job]
        p = rec["pytorch"]
        if any(rec.get(e) is None for e in engines):
            failed = True
        peaks = [detail[job].get(e, (None, None, None))[2] for e in engines]
        print("%-14s %5d %7d " % (net, batch, threads) + " ".join(
            "%11s" % fmt(rec.get(c)) for c in cols) + "".join(
            " %16s" % fmt(ratio(rec.get(e), p)) for e in engines) + " %14s %18s" % (
            "/".join(fmt(v, "%.0f") for v in peaks),
            "/".join(fmt(of_peak(rec.get(c), net, threads), "%.0f") for c in cols)))
        if "BF16" in engines and args.pytorch_bf16:
            print("%-14s %5d %7d   bf16 / pytorch-bf16: %s" % (
                net, batch, threads, fmt(ratio(rec.get("BF16"), rec.get("pytorch-bf16")))))
    print("(milliseconds per forward+backward iteration, best over %d round(s); "
          "ratio < 1 means Doppio is faster)" % args.rounds)
    counts = sorted(set(j[2] for j in jobs))
    if len(counts) > 1 and not args.pytorch_only:
        lo, hi = counts[0], counts[-1]
        print("\nspeed-up from %d to %d threads (time at T=%d / time at T=%d):" % (lo, hi, lo, hi))
        for net in args.net_list:
            row = {j[2]: best[j] for j in jobs if j[0] == net}
            print("  %-14s " % net + "  ".join(
                "%s %s" % (c.lower(), fmt(ratio(row[lo][c], row[hi][c]))) for c in cols))

    if args.json:
        rows = []
        for j in jobs:
            row = dict(net=j[0], batch=j[1], threads=j[2], iterations=j[3],
                       pytorch_ms=best[j]["pytorch"],
                       pytorch_bf16_ms=best[j].get("pytorch-bf16"),
                       gflop_per_iteration=flops[j[0]] / 1e9,
                       gemm_peak_gflops=gemm_peak[j[2]])
            for engine in engines:
                fwd, bwd, peak = detail[j].get(engine, (None, None, None))
                key = engine.lower()
                row.update({key + "_ms": best[j][engine], key + "_forward_ms": fwd,
                            key + "_backward_ms": bwd, key + "_peak_mib": peak,
                            key + "_error": errors[j].get(engine)})
            rows.append(row)
        with open(args.json, "w") as f:
            json.dump(dict(pytorch=torch_bench.describe(), rounds=args.rounds,
                           results=rows), f, indent=2)
            f.write("\n")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
