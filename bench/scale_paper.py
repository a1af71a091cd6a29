#!/usr/bin/env python3
"""`doppio scale` against published scaling results, on paper.

Each row runs `doppio scale` with the published per-GPU throughput as the compute time of
one iteration (--compute_ms = per-GPU batch / images per second; the per-layer shape from
the net's FLOPs), the published interconnect as the link, and the collectives the system
used; then sets the predicted efficiency beside the published one. The assumptions, and
what is not known from the publication, are printed next to every row.

Multi-GPU nodes: the systems below reduce inside a node first (NCCL or CUDA-aware MPI over
PCIe or NVLink) and cross the network once per node, so a "rank" here is a node whose one
iteration is one GPU's (the GPUs of a node compute at the same time), and the intra-node
stage is left out. Horovod's flat NCCL ring crosses each node's NIC once per direction, so
its rows use every GPU as a rank with the NIC's full rate.

    bench/scale_paper.py --build build-cpu [--markdown FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import gen_models  # noqa: E402  (ResNet-101 is ResNet-50's builder with 23 blocks in stage 4)

# Each row: the net, the per-GPU batch and throughput, the link, how the system combines
# gradients, the rank counts compared and the published figure.
ROWS = [
    dict(
        system="S-Caffe (OSU-Caffe)",
        net="googlenet", batch=32, images_per_s=60.0,
        nodes=(2, 10), gpus_per_node=16,
        flags=["--bandwidth_gbps=56", "--latency_us=5", "--collectives=nccl",
               "--sync=reduce_bcast", "--bucket_mb=25"],
        published="2.5x from 32 to 160 K-80 GPUs (50% relative efficiency)",
        published_speedup=2.5,
        source="Awan et al., S-Caffe, PPoPP 2017 (abstract)",
        assumptions="K-80 (one GK210 die) at an assumed 60 img/s for GoogLeNet, batch 32 per "
                    "GPU (not stated in the abstract); 16 GPUs per node, FDR InfiniBand "
                    "56 Gbit/s per node (assumed); MVAPICH2-GDR's hierarchical reduce to the "
                    "root while backward runs, then the broadcast of the weights, as pipelined "
                    "chains (reduce_bcast, nccl costs); rank = node",
    ),
    dict(
        system="Caffe-MPI 2.0 (Inspur)",
        net="googlenet", batch=128, images_per_s=5886 / 14.2,
        nodes=(1, 4), gpus_per_node=4,
        flags=["--bandwidth_gbps=56", "--latency_us=5", "--collectives=nccl",
               "--sync=overlap", "--bucket_mb=25"],
        published="14.2x on 16 P40 over 1 P40 (89%): 5886 img/s at batch 128",
        published_speedup=14.2,
        source="AICC 2017 report by Chu Xiaowen, HKBU, as quoted in Inspur's press release "
               "(wordcai.com/a/qiye/51732.html); the Caffe-MPI README (4 nodes x 4 GPUs, "
               "NCCL inside a node, MPI over InfiniBand between nodes)",
        assumptions="one P40 at 5886 / 14.2 = 415 img/s (batch 128); 4 P40 per node, "
                    "InfiniBand at an assumed 56 Gbit/s (FDR; the type is not stated); NCCL "
                    "ring allreduce between the nodes, overlapped with backward, layers "
                    "merged into buckets (--bucket_mb 25); rank = node; the 1-GPU baseline "
                    "is one rank",
    ),
    dict(
        system="Horovod, Inception V3",
        net="resnet50", batch=64, images_per_s=140.0,
        nodes=(1, 512), gpus_per_node=1,
        flags=["--bandwidth_gbps=25", "--latency_us=10", "--collectives=nccl",
               "--sync=overlap", "--bucket_mb=64"],
        published="90% on 512 Pascal GPUs (128 servers x 4)",
        published_efficiency=0.90,
        source="Horovod README and docs/benchmarks (128 servers, 4 Pascal GPUs each, "
               "RoCE 25 Gbit/s)",
        assumptions="ResNet-50's net stands in for Inception V3 (no Inception V3 prototxt "
                    "here; 25.6 M against 23.8 M parameters, 102 against 95 MB of "
                    "gradients); one P100 at an assumed 140 img/s, batch 64; flat NCCL ring "
                    "over all 512 GPUs at the NIC's 25 Gbit/s; Tensor Fusion's 64 MB buffer "
                    "as the bucket",
    ),
    dict(
        system="Horovod, ResNet-101",
        net="resnet101", batch=64, images_per_s=1656.82 / 16,
        nodes=(1, 512), gpus_per_node=1,
        flags=["--bandwidth_gbps=25", "--latency_us=10", "--collectives=nccl",
               "--sync=overlap", "--bucket_mb=64"],
        published="90% on 512 Pascal GPUs (128 servers x 4)",
        published_efficiency=0.90,
        source="Horovod README and docs/benchmarks; 1656.82 img/s on 16 GPUs is the "
               "docs' example output for ResNet-101 at batch 64",
        assumptions="one P100 at 1656.82 / 16 = 104 img/s (the docs' 16-GPU example, taken "
                    "as per-GPU speed); flat NCCL ring over all 512 GPUs at 25 Gbit/s; "
                    "64 MB buckets (Tensor Fusion)",
    ),
]


def resnet101_prototxt(path):
    """ResNet-101: ResNet-50 with 23 bottleneck blocks in stage 4 (res4a, res4b1 .. res4b22,
    Caffe's names), written by scripts/gen_models.py's builder."""
    saved = gen_models.RESNET50
    gen_models.RESNET50 = [saved[0], saved[1],
                           (4, ["a"] + ["b%d" % i for i in range(1, 23)], 256, 1024, 2),
                           saved[3]]
    try:
        _, layers = gen_models.resnet50(False)
    finally:
        gen_models.RESNET50 = saved
    with open(path, "w") as f:
        f.write(gen_models.net_text("ResNet-101", layers))


def predict(doppio, row, work):
    model = os.path.join(ROOT, "models", row["net"], "train_val.prototxt")
    if row["net"] == "resnet101":
        model = os.path.join(work, "resnet101.prototxt")
        resnet101_prototxt(model)
    compute_ms = 1e3 * row["batch"] / row["images_per_s"]
    rows_json = os.path.join(work, "rows.json")
    ranks = sorted({1, *row["nodes"]})
    # The shape of the compute from FLOPs at a small batch (memory); its total is the
    # published per-GPU time of one iteration.
    command = [doppio, "scale", f"--model={model}", "--batch=2", "--tflops=10",
               f"--compute_ms={compute_ms}", f"--ranks={','.join(map(str, ranks))}",
               f"--json={rows_json}", *row["flags"]]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}:\n{result.stderr[-2000:]}")
    with open(rows_json) as f:
        rows = {r["ranks"]: r for r in json.load(f)["rows"]}
    low, high = row["nodes"]
    gpus_low, gpus_high = low * row["gpus_per_node"], high * row["gpus_per_node"]
    if "published_speedup" in row:
        # Speedup in throughput between the two GPU counts (weak scaling, batch per GPU).
        predicted = (gpus_high / rows[high]["ms_per_iter"]) / (gpus_low / rows[low]["ms_per_iter"])
        published = row["published_speedup"]
        if low == 1 and row["gpus_per_node"] > 1:
            # The baseline is one GPU; one node's GPUs are taken to scale perfectly.
            predicted = gpus_high * rows[1]["ms_per_iter"] / rows[high]["ms_per_iter"]
        ideal = gpus_high / (1 if low == 1 else gpus_low)
        return dict(predicted=f"{predicted:.1f}x ({100 * predicted / ideal:.0f}%)",
                    published=f"{published:.1f}x ({100 * published / ideal:.0f}%)",
                    compute_ms=compute_ms, exposed_ms=rows[high]["exposed_ms"])
    efficiency = rows[high]["efficiency"]
    return dict(predicted=f"{100 * efficiency:.0f}%",
                published=f"{100 * row['published_efficiency']:.0f}%",
                compute_ms=compute_ms, exposed_ms=rows[high]["exposed_ms"])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    doppio = os.path.join(args.build, "tools", "doppio")
    if not os.access(doppio, os.X_OK):
        sys.exit(f"scale_paper: {doppio} not built")
    lines = ["| system | model | GPUs | published | predicted | compute ms/iter | "
             "exposed ms (largest) | assumptions | source |",
             "|---|---|---|---|---|---:|---:|---|---|"]
    with tempfile.TemporaryDirectory(prefix="scale_paper.") as work:
        for row in ROWS:
            result = predict(doppio, row, work)
            gpus = "%d -> %d" % tuple(n * row["gpus_per_node"] for n in row["nodes"])
            if row["nodes"][0] == 1 and row["gpus_per_node"] > 1:
                gpus = "1 -> %d" % (row["nodes"][1] * row["gpus_per_node"])
            lines.append(f"| {row['system']} | {row['net']} | {gpus} | {result['published']} "
                         f"| {result['predicted']} | {result['compute_ms']:.0f} "
                         f"| {result['exposed_ms']:.1f} | {row['assumptions']}; flags "
                         f"`{' '.join(row['flags'])}` | {row['source']} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
