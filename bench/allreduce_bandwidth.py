#!/usr/bin/env python3
"""The gradient allreduce alone against the link rate: bench_allreduce_bandwidth (in-place float
sums from 1 MB to 256 MB, as GradientSync issues them) on 2 and 4 hosts of the namespace cluster
(scripts/cluster.sh) with tbf-shaped links, for two algorithms in the same run, alternated
round by round:

  binomial   what Open MPI 4.1's libnbc picks by itself for an in-place MPI_Iallreduce
             (`--mca coll_libnbc_iallreduce_algorithm 0`: a binomial reduce to rank 0, then a
             binomial broadcast, the whole buffer at every step)
  doppio     what doppio runs (MpiEngine sets the ring unless the user set the parameter)

Bus bandwidth = bytes x 2(N-1)/N / time (the slowest rank's), the best of every timed
allreduce of all rounds; `% link` is that over the tbf rate.

Needs root (network namespaces) and build/bench/bench_allreduce_bandwidth.

    bench/allreduce_bandwidth.py --build build-cpu [--hosts 2,4] [--rates 1gbit,10gbit]
        [--sizes_mb 1,4,16,64,256] [--rounds 2] [--repeats 3] [--results runs.jsonl]
        [--table-only] [--markdown FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import cluster_scaling

ROOT = cluster_scaling.ROOT
VARIANTS = {
    "binomial": ["--mca", "coll_libnbc_iallreduce_algorithm", "0"],
    "doppio": [],
}


def link_gbps(rate):
    rate = rate.lower()
    if rate.endswith("gbit"):
        return float(rate[:-4])
    if rate.endswith("mbit"):
        return float(rate[:-4]) / 1e3
    return None


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run_once(args, hosts, rate, variant):
    bench = os.path.join(args.build, "bench", "bench_allreduce_bandwidth")
    command = [os.path.join(ROOT, "scripts", "cluster.sh"), "run", "-np", str(hosts),
               *VARIANTS[variant], bench, f"--sizes_mb={args.sizes_mb}",
               f"--repeats={args.repeats}"]
    env = dict(os.environ, DOPPIO_CLUSTER=cluster_scaling.CLUSTER)
    result = subprocess.run(command, env=env, capture_output=True, text=True,
                            timeout=args.timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n"
                           f"{(result.stdout + result.stderr)[-3000:]}")
    rows = []
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            row.update(hosts=hosts, rate=rate, variant=variant, load=os.getloadavg()[0])
            rows.append(row)
    return rows


def render(rows):
    best = {}
    for r in rows:
        k = (r["hosts"], r["rate"], r["mb"], r["variant"])
        if k not in best or r["bus_gbps"] > best[k]["bus_gbps"]:
            best[k] = r
    loads = [r["load"] for r in rows]
    lines = []
    if loads:
        lines.append(f"1-minute load average at the end of the runs: {min(loads):.1f} to "
                     f"{max(loads):.1f}.")
        lines.append("")
    lines += ["| hosts | link | MB | binomial ms | binomial Gbit/s | % link | doppio ms "
              "| doppio Gbit/s | % link | speed-up |",
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for hosts, rate, mb in sorted({k[:3] for k in best}, key=lambda k: (link_gbps(k[1]) or 1e9,
                                                                         k[0], k[2])):
        before = best.get((hosts, rate, mb, "binomial"))
        after = best.get((hosts, rate, mb, "doppio"))
        gbps = link_gbps(rate)
        cells = []
        for r in (before, after):
            if r is None:
                cells += ["-", "-", "-"]
                continue
            percent = f"{100 * r['bus_gbps'] / gbps:.0f}" if gbps else "-"
            cells += [f"{1e3 * r['best_s']:.1f}", f"{r['bus_gbps']:.2f}", percent]
        speedup = (f"{before['best_s'] / after['best_s']:.2f}x" if before and after else "-")
        lines.append(f"| {hosts} | {rate} | {mb:g} | " + " | ".join(cells) + f" | {speedup} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--hosts", default="2,4")
    parser.add_argument("--rates", default="1gbit,10gbit")
    parser.add_argument("--sizes_mb", default="1,4,16,64,256")
    parser.add_argument("--variants", default="binomial,doppio")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the variants")
    parser.add_argument("--repeats", type=int, default=3, help="timed allreduces per size and run")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--results", help="JSON lines, one per size and run, appended")
    parser.add_argument("--table-only", action="store_true",
                        help="print the table of --results without running anything")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    rows = []
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    if args.table_only:
        print(render(rows))
        return 0
    if os.geteuid() != 0:
        sys.exit("allreduce_bandwidth: needs root (network namespaces)")
    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"allreduce_bandwidth: unknown variant {v} ({', '.join(VARIANTS)})")
    print(f"start: {uptime()}", file=sys.stderr, flush=True)
    try:
        for rate in args.rates.split(","):
            for hosts in (int(h) for h in args.hosts.split(",")):
                cluster_scaling.cluster_sh("up", str(hosts), "--rate", rate)
                for round_ in range(args.rounds):
                    # Alternate the order too, so neither variant always runs first.
                    for variant in (variants if round_ % 2 == 0 else variants[::-1]):
                        new = run_once(args, hosts, rate, variant)
                        for r in new:
                            print(f"[{time.strftime('%H:%M:%S')}] {hosts} hosts {rate:7} "
                                  f"{variant:8} {r['mb']:5g} MB: {r['bus_gbps']:6.2f} Gbit/s "
                                  f"(load {r['load']:.1f})", file=sys.stderr, flush=True)
                        rows += new
                        if args.results:
                            with open(args.results, "a") as f:
                                for r in new:
                                    f.write(json.dumps(r) + "\n")
    finally:
        cluster_scaling.cluster_sh("down")
        print(f"end: {uptime()}", file=sys.stderr, flush=True)
    table = render(rows)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
