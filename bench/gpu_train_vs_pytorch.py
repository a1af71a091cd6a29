#!/usr/bin/env python3
"""GPU training throughput: Doppio against PyTorch + torchvision on the same GPU.

For AlexNet (batch 256), GoogLeNet (batch 128) and ResNet-50 (batch 64), with synthetic
data in float32, the script measures one training iteration -- the forward pass including
the softmax losses, then the backward pass -- in both frameworks on the same GPU, in the
same run, and prints images per second. Doppio runs
`doppio time --gpu=ID` on models/<net>/train_val.prototxt (its Data layers become inputs of
the same shape) and its per-layer table is printed too. PyTorch runs torchvision's models
(or, with --pytorch-models=prototxt, the layer-by-layer copies of the prototxts defined in
bench/cpu_forward_backward.py), with CUDA-event timing after warm-up iterations.

TF32 is set the same way in both and stated in the output:
  --tf32-conv (default on, as PyTorch's torch.backends.cudnn.allow_tf32)
      -> doppio --tf32_conv, torch.backends.cudnn.allow_tf32
  --tf32-gemm (default off, as PyTorch's torch.backends.cuda.matmul.allow_tf32)
      -> doppio --tf32_gemm, torch.backends.cuda.matmul.allow_tf32
  --cudnn-benchmark (default off): doppio --cudnn_algo=measure, torch.backends.cudnn.benchmark

Mixed precision (docs/precision.md): --precision=bf16 or fp16 runs doppio --precision=...
against PyTorch AMP: autocast with that dtype around the forward pass and the losses, a
GradScaler for fp16, and the model and input in channels_last, as NVIDIA's recipes run it.

For the nets with batch normalization a second table sets Doppio's BatchNorm + Scale + ReLU
layers (forward and backward, from its per-layer table) beside PyTorch's batch-norm and ReLU
kernels (the profiler's device time).

Doppio's `time` does not run the solver's update; the PyTorch column "+SGD" adds
optimizer.step() (SGD with momentum) for reference, the main columns compare forward +
backward with forward + backward.

It needs a GPU, PyTorch with CUDA and torchvision, and a CUDA build of Doppio:

    cmake -S . -B build -G Ninja -DDOPPIO_CUDA=ON && ninja -C build doppio_cli
    python3 bench/gpu_train_vs_pytorch.py
    python3 bench/gpu_train_vs_pytorch.py --nets=resnet50 --iterations=50 --json=out.json
    python3 bench/gpu_train_vs_pytorch.py --pytorch-only

See bench/README.md.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DOPPIO = os.path.join(ROOT, "build", "tools", "doppio")

# net -> batch, input shape (C, H, W) and timed iterations per measurement.
NETS = {
    "alexnet":   dict(batch=256, shape=(3, 227, 227), iterations=20, classes=1000),
    "googlenet": dict(batch=128, shape=(3, 224, 224), iterations=20, classes=1000),
    "resnet50":  dict(batch=64,  shape=(3, 224, 224), iterations=20, classes=1000),
}
DEFAULT_NETS = "alexnet,googlenet,resnet50"

FB_RE = re.compile(r"Average Forward-Backward:\s*([0-9.eE+-]+)\s*ms")
F_RE = re.compile(r"Average Forward pass:\s*([0-9.eE+-]+)\s*ms")
B_RE = re.compile(r"Average Backward pass:\s*([0-9.eE+-]+)\s*ms")
# The per-layer table `doppio time` prints on stdout: name, type, engine, precision, forward
# ms, backward ms, share.
LAYER_RE = re.compile(
    r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)%$")
# The layers one cuDNN batch normalization call computes in PyTorch's nets (with the ReLU after
# it), for the normalization row: Doppio's are the prototxt's separate layers.
NORMALIZATION_TYPES = ("BatchNorm", "Scale", "ReLU")


def on_off(flag):
    return "on" if flag else "off"


class PeakDeviceMemory:
    """The most device memory one process held while the `with` block ran, in MiB, as the
    driver reports it (nvidia-smi --query-compute-apps: the CUDA context, the framework's
    allocations and its libraries' workspaces). None where the driver lists no processes
    (some containers)."""

    def __init__(self, pid):
        self.pid = pid
        self.peak = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _sample(self):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-compute-apps=pid,used_memory",
                 "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return
        for line in out.stdout.splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) == 2 and fields[0] == str(self.pid) and fields[1].isdigit():
                self.peak = max(self.peak or 0, int(fields[1]))

    def _poll(self):
        while not self._stop.wait(0.05):
            self._sample()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._sample()
        self._stop.set()
        self._thread.join()


# --------------------------------------------------------------------------- PyTorch

class TorchGpuBench:
    def __init__(self, device, models, tf32_conv, tf32_gemm, cudnn_benchmark):
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")
        self.torch = torch
        self.device = torch.device("cuda:%d" % device)
        torch.cuda.set_device(self.device)
        torch.backends.cudnn.allow_tf32 = tf32_conv
        torch.backends.cuda.matmul.allow_tf32 = tf32_gemm
        torch.backends.cudnn.benchmark = cudnn_benchmark
        self.models = models
        if models == "prototxt":
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            from cpu_forward_backward import build_torch_nets
            self.factories = build_torch_nets()

    def describe(self):
        t = self.torch
        import torchvision
        return "PyTorch %s (CUDA %s, cuDNN %s), torchvision %s, %s" % (
            t.__version__, t.version.cuda, t.backends.cudnn.version(), torchvision.__version__,
            t.cuda.get_device_name(self.device))

    def model(self, net):
        """A module whose forward returns [(logits, loss_weight), ...]."""
        torch = self.torch
        if self.models == "prototxt":
            return self.factories[net]()
        import torchvision.models as tvm

        class Heads(torch.nn.Module):
            def __init__(self, inner, weights):
                super().__init__()
                self.inner = inner
                self.weights = weights

            def forward(self, x):
                out = self.inner(x)
                if isinstance(out, tuple):  # GoogLeNet in training: logits, aux2, aux1
                    return list(zip(out, self.weights))
                return [(out, 1.0)]

        if net == "alexnet":
            return Heads(tvm.alexnet(weights=None), [1.0])
        if net == "googlenet":
            # The auxiliary heads weigh 0.3 each in the TRAIN loss, as in the prototxt.
            return Heads(tvm.googlenet(weights=None, aux_logits=True, init_weights=True),
                         [1.0, 0.3, 0.3])
        if net == "resnet50":
            return Heads(tvm.resnet50(weights=None), [1.0])
        raise ValueError(net)

    def time(self, net, batch, iterations, warmup, with_update, precision="fp32"):
        """Mean milliseconds per iteration over `iterations`, after `warmup` untimed ones;
        under bf16 or fp16, PyTorch AMP (autocast, GradScaler for fp16, channels_last)."""
        torch = self.torch
        F = torch.nn.functional
        torch.manual_seed(0)
        model = self.model(net).to(self.device)
        model.train()
        x = torch.randn(batch, *NETS[net]["shape"], device=self.device)
        y = torch.randint(0, NETS[net]["classes"], (batch,), device=self.device)
        amp = precision in ("bf16", "fp16")
        if amp:
            model = model.to(memory_format=torch.channels_last)
            x = x.to(memory_format=torch.channels_last)
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dtype, enabled=amp):
                loss = sum(w * F.cross_entropy(logits, y) for logits, w in model(x))
            scaler.scale(loss).backward()
            if with_update:
                scaler.step(optimizer)
                scaler.update()

        with PeakDeviceMemory(os.getpid()) as memory:
            for _ in range(warmup):
                step()
            torch.cuda.synchronize(self.device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iterations):
                step()
            end.record()
            torch.cuda.synchronize(self.device)
        ms = start.elapsed_time(end) / iterations
        params = sum(p.numel() for p in model.parameters())
        normalization = self.normalization_ms(step) if not with_update else None
        del model, optimizer, x, y
        torch.cuda.empty_cache()
        return ms, params, memory.peak, normalization

    def normalization_ms(self, step, iterations=3):
        """Device ms per iteration in batch normalization (forward and backward) and in ReLU,
        from the profiler's kernels' self time; None where the net has no batch norm."""
        profiler = self.torch.profiler
        with profiler.profile(activities=[profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(iterations):
                step()
            self.torch.cuda.synchronize(self.device)

        def device_us(event):
            # self_cuda_time_total before PyTorch 2.4, self_device_time_total after.
            return getattr(event, "self_device_time_total",
                           getattr(event, "self_cuda_time_total", 0))
        events = prof.key_averages()
        bn = sum(device_us(e) for e in events if "batch_norm" in e.key)
        relu = sum(device_us(e) for e in events
                   if any(k in e.key for k in ("relu", "clamp_min", "threshold_backward")))
        if bn == 0:
            return None
        return dict(batch_norm_ms=bn / 1000.0 / iterations, relu_ms=relu / 1000.0 / iterations)


# --------------------------------------------------------------------------- Doppio

def time_doppio(args, net, batch, iterations):
    """Runs `doppio time` once; returns (forward, backward, forward-backward ms, layer rows,
    peak device memory MiB)."""
    model = os.path.join("models", net, "train_val.prototxt")
    c, h, w = NETS[net]["shape"]
    cmd = [os.path.abspath(args.doppio), "time", "--model=" + model,
           "--iterations=%d" % iterations, "--phase=TRAIN", "--batch=%d" % batch,
           "--input_shape=%d,%d,%d" % (c, h, w), "--gpu=%d" % args.gpu,
           "--tf32_conv=%s" % str(args.tf32_conv).lower(),
           "--tf32_gemm=%s" % str(args.tf32_gemm).lower(),
           "--cudnn_algo=%s" % ("measure" if args.cudnn_benchmark else "heuristic")]
    if args.precision != "fp32":
        # --precision names the storage; the TF32 flags stay for the layers left in fp32.
        cmd.append("--precision=" + args.precision)
    env = dict(os.environ, GLOG_logtostderr="1")
    t0 = time.time()
    child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    with PeakDeviceMemory(child.pid) as memory:
        try:
            stdout, stderr = child.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
    run = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    output = run.stdout + run.stderr
    if run.returncode != 0:
        raise RuntimeError("doppio time failed for %s (exit %d, %.0f s):\n%s"
                           % (net, run.returncode, time.time() - t0, output[-4000:]))
    fb = FB_RE.search(run.stdout)
    f = F_RE.search(output)
    b = B_RE.search(output)
    if not fb:
        raise RuntimeError("no 'Average Forward-Backward' line in doppio's output:\n%s"
                           % output[-4000:])
    layers = []
    for line in run.stdout.splitlines():
        m = LAYER_RE.match(line.strip())
        if m and m.group(1) not in ("layer", "total"):
            layers.append(dict(name=m.group(1), type=m.group(2), engine=m.group(3),
                               precision=m.group(4), forward_ms=float(m.group(5)),
                               backward_ms=float(m.group(6)), share=float(m.group(7))))
    return (float(f.group(1)) if f else None, float(b.group(1)) if b else None,
            float(fb.group(1)), layers, memory.peak)


# --------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nets", default=DEFAULT_NETS,
                   help="comma-separated, from: %s" % ",".join(NETS))
    p.add_argument("--batch", type=int, default=0, help="override every net's batch")
    p.add_argument("--iterations", type=int, default=0, help="timed iterations (default per net)")
    p.add_argument("--warmup", type=int, default=5, help="PyTorch: untimed iterations first")
    p.add_argument("--gpu", type=int, default=0, help="device id for both frameworks")
    p.add_argument("--tf32-conv", dest="tf32_conv", action="store_true", default=True)
    p.add_argument("--no-tf32-conv", dest="tf32_conv", action="store_false")
    p.add_argument("--tf32-gemm", dest="tf32_gemm", action="store_true", default=False)
    p.add_argument("--no-tf32-gemm", dest="tf32_gemm", action="store_false")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="measured algorithm search in both (doppio --cudnn_algo=measure)")
    p.add_argument("--pytorch-models", choices=["torchvision", "prototxt"], default="torchvision",
                   help="torchvision's models, or copies of the prototxts "
                        "(bench/cpu_forward_backward.py)")
    p.add_argument("--doppio", default=DEFAULT_DOPPIO, help="path of the doppio binary")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per doppio run")
    p.add_argument("--pytorch-only", action="store_true")
    p.add_argument("--doppio-only", action="store_true")
    p.add_argument("--no-layers", action="store_true", help="skip Doppio's per-layer tables")
    p.add_argument("--json", default="", help="also write the results as JSON")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                   help="bf16/fp16: doppio --precision against PyTorch AMP")
    args = p.parse_args(argv)
    args.net_list = [n for n in args.nets.split(",") if n]
    for n in args.net_list:
        if n not in NETS:
            p.error("unknown net '%s'; known: %s" % (n, ", ".join(NETS)))
    return args


def fmt(v, spec="%.1f"):
    return "-" if v is None else spec % v


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not args.pytorch_only:
        doppio = os.path.abspath(args.doppio)
        if not (os.path.isfile(doppio) and os.access(doppio, os.X_OK)):
            print("error: no doppio binary at %s; build it with CUDA "
                  "(cmake -S . -B build -G Ninja -DDOPPIO_CUDA=ON && ninja -C build doppio_cli) "
                  "or pass --doppio=PATH" % doppio, file=sys.stderr)
            return 1
    torch_bench = None
    if not args.doppio_only:
        try:
            torch_bench = TorchGpuBench(args.gpu, args.pytorch_models, args.tf32_conv,
                                        args.tf32_gemm, args.cudnn_benchmark)
        except (ImportError, RuntimeError) as e:
            print("error: PyTorch with CUDA and torchvision are needed (%s); "
                  "or run with --doppio-only" % e, file=sys.stderr)
            return 1

    print("# GPU training throughput, %s, synthetic data, forward + backward per iteration"
          % ("float32" if args.precision == "fp32" else
             args.precision + " (Doppio --precision, PyTorch AMP)"))
    print("# TF32: convolutions %s, GEMMs %s; cuDNN algorithm choice: %s"
          % (on_off(args.tf32_conv), on_off(args.tf32_gemm),
             "measured" if args.cudnn_benchmark else "heuristic"))
    if torch_bench:
        print("# %s; models: %s" % (torch_bench.describe(), args.pytorch_models))
    if not args.pytorch_only:
        print("# doppio: %s --gpu=%d" % (os.path.abspath(args.doppio), args.gpu))
    print()

    results = []
    for net in args.net_list:
        batch = args.batch or NETS[net]["batch"]
        iterations = args.iterations or NETS[net]["iterations"]
        row = dict(net=net, batch=batch, iterations=iterations)
        if not args.pytorch_only:
            try:
                f, b, fb, layers, peak = time_doppio(args, net, batch, iterations)
                row.update(doppio_forward_ms=f, doppio_backward_ms=b, doppio_ms=fb,
                           doppio_images_per_s=batch * 1000.0 / fb, doppio_layers=layers,
                           doppio_peak_mib=peak)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print("doppio, %s: %s" % (net, e), file=sys.stderr)
        if torch_bench:
            ms, params, peak, normalization = torch_bench.time(net, batch, iterations,
                                                                args.warmup, False, args.precision)
            ms_update, _, _, _ = torch_bench.time(net, batch, iterations, args.warmup, True,
                                                  args.precision)
            row.update(pytorch_ms=ms, pytorch_images_per_s=batch * 1000.0 / ms,
                       pytorch_peak_mib=peak, pytorch_normalization=normalization,
                       pytorch_update_ms=ms_update,
                       pytorch_update_images_per_s=batch * 1000.0 / ms_update,
                       pytorch_parameters=params)
        if "doppio_ms" in row and "pytorch_ms" in row:
            row["speedup"] = row["pytorch_ms"] / row["doppio_ms"]
        results.append(row)

    print("| net | batch | Doppio ms | Doppio img/s | PyTorch ms | PyTorch img/s | "
          "Doppio / PyTorch speed | PyTorch +SGD img/s | Doppio peak MiB | PyTorch peak MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["net"], r["batch"], fmt(r.get("doppio_ms"), "%.2f"),
            fmt(r.get("doppio_images_per_s")), fmt(r.get("pytorch_ms"), "%.2f"),
            fmt(r.get("pytorch_images_per_s")), fmt(r.get("speedup"), "%.2fx"),
            fmt(r.get("pytorch_update_images_per_s")), fmt(r.get("doppio_peak_mib"), "%d"),
            fmt(r.get("pytorch_peak_mib"), "%d")))
    print("\nPeak MiB: the most device memory the process held during the run, as nvidia-smi "
          "reports it (CUDA context included; '-' where the driver lists no processes).")

    rows = [r for r in results if r.get("pytorch_normalization") and r.get("doppio_layers")]
    if rows:
        print("\n| net | Doppio BatchNorm + Scale + ReLU ms | PyTorch batch norm ms | "
              "PyTorch batch norm + ReLU ms |")
        print("|---|---:|---:|---:|")
        for r in rows:
            doppio_ms = sum(layer["forward_ms"] + layer["backward_ms"]
                            for layer in r["doppio_layers"]
                            if layer["type"] in NORMALIZATION_TYPES)
            torch_ms = r["pytorch_normalization"]
            print("| %s | %.2f | %.2f | %.2f |" % (
                r["net"], doppio_ms, torch_ms["batch_norm_ms"],
                torch_ms["batch_norm_ms"] + torch_ms["relu_ms"]))
        print("\nDoppio: its per-layer table (forward + backward, host-timed per layer); PyTorch: "
              "the profiler's kernel time of batch_norm and relu, forward and backward.")

    if not args.no_layers:
        for r in results:
            if not r.get("doppio_layers"):
                continue
            print("\n## Doppio per layer: %s, batch %d (forward, backward ms; share of the "
                  "iteration)" % (r["net"], r["batch"]))
            print("| layer | type | engine | forward ms | backward ms | share |")
            print("|---|---|---|---:|---:|---:|")
            for layer in r["doppio_layers"]:
                print("| %s | %s | %s | %.3f | %.3f | %.1f%% |" % (
                    layer["name"], layer["type"], layer["engine"], layer["forward_ms"],
                    layer["backward_ms"], layer["share"]))

    if args.json:
        with open(args.json, "w") as out:
            json.dump(dict(precision=args.precision, tf32_conv=args.tf32_conv,
                           tf32_gemm=args.tf32_gemm,
                           cudnn_benchmark=args.cudnn_benchmark,
                           pytorch_models=args.pytorch_models, results=results), out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
