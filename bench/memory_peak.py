#!/usr/bin/python3
"""Peak resident memory of one training iteration on the CPU: Doppio against PyTorch.

Each measurement runs in a process of its own and reports that process's high-water
mark (ru_maxrss, read with wait4): `doppio time` on models/<net>/train_val.prototxt
(its Data layers become constant inputs of the same shape) for two iterations, and a
PyTorch process running two forward+backward iterations of the Caffe-layer-for-layer
twin of that net from bench/cpu_forward_backward.py (torchvision's alexnet and
googlenet differ from Caffe's: no LRN, other widths, no auxiliary heads, so the twins
are used instead). Both use one thread. Doppio's own report line gives what the net
needs (parameters and activations, data + diff, and the shared workspace), so the
table shows Doppio's overhead beside the peak.

    /usr/bin/python3 bench/memory_peak.py
    /usr/bin/python3 bench/memory_peak.py --nets=alexnet --batches=8 --doppio=build-cpu/tools/doppio

See bench/README.md.
"""

import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import cpu_forward_backward as twins  # noqa: E402

REPORT_RE = re.compile(
    r"^Peak host memory: ([0-9.]+) MiB; the net needs ([0-9.]+) MiB \(parameters ([0-9.]+) MiB, "
    r"activations ([0-9.]+) MiB, workspace ([0-9.]+) MiB\)", re.M)

# BVLC Caffe, `caffe time`, one thread, ru_maxrss: batch 8 from issue 23 (its "MB" read as
# ru_maxrss / 1024), batch 32 from issue 40.
CAFFE_MB = {("alexnet", 8): 638, ("alexnet", 32): 938, ("googlenet", 8): 798,
            ("googlenet", 32): 2605}


def run_measured(command):
    """Runs `command` and returns (peak resident MiB, stdout, exit status)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.dup2(write_end, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        out = pipe.read()
    _, status, usage = os.wait4(pid, 0)
    # Linux reports ru_maxrss in kilobytes of 1024.
    return usage.ru_maxrss / 1024, out, os.waitstatus_to_exitcode(status)


def torch_child(net, batch):
    """In the child: two forward+backward iterations of the PyTorch twin."""
    import torch
    torch.set_num_threads(1)
    bench = twins.TorchBench()
    bench.time(net, batch, threads=1, iterations=1, warmup=1, repeats=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--doppio", default=os.path.join(ROOT, "build", "tools", "doppio"))
    parser.add_argument("--nets", default="alexnet,googlenet,resnet50")
    parser.add_argument("--batches", default="8,32")
    parser.add_argument("--skip-pytorch", action="store_true")
    parser.add_argument("--torch-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torch_child:
        torch_child(args.torch_child[0], int(args.torch_child[1]))
        return 0

    header = "%-10s %5s %10s %10s %8s %8s %8s %9s %9s %10s" % (
        "net", "batch", "Doppio", "needs", "params", "activ.", "worksp.", "overhead",
        "Caffe", "PyTorch")
    print("Peak resident memory and what the net needs, in MiB (2^20 bytes)")
    print(header)
    for net in args.nets.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            model = os.path.join(ROOT, "models", net, "train_val.prototxt")
            peak, out, code = run_measured(
                [args.doppio, "time", "--model=" + model, "--batch=%d" % batch,
                 "--iterations=2", "--threads=1"])
            report = REPORT_RE.search(out)
            if code != 0 or report is None:
                print("%-10s %5d doppio failed (exit %d)" % (net, batch, code))
                continue
            needs, params, activations, workspace = (float(report.group(i)) for i in (2, 3, 4, 5))
            torch_peak = float("nan")
            if not args.skip_pytorch:
                torch_peak, _, code = run_measured(
                    [sys.executable, os.path.abspath(__file__), "--torch-child", net, str(batch)])
                if code != 0:
                    torch_peak = float("nan")
            caffe = CAFFE_MB.get((net, batch))
            print("%-10s %5d %10.0f %10.0f %8.0f %8.0f %8.0f %9.0f %9s %10.0f" % (
                net, batch, peak, needs, params, activations, workspace, peak - needs,
                "%d" % caffe if caffe else "-", torch_peak), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
