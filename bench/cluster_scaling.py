#!/usr/bin/env python3
"""Data-parallel training across hosts: time per iteration, exposed communication and
scaling efficiency of `doppio train` on 1, 2 and 4 hosts of a namespace cluster
(scripts/cluster.sh), with unlimited, 10 Gbit/s and 1 Gbit/s links, for each --sync mode and
two bucket sizes, as one table.

Every run is `doppio train` with a --timeline; the numbers come from the timeline, over the
iterations after the warm-up:
  ms/iter      wall time per iteration on rank 0 (from one update's end to the next)
  comm ms      time per iteration during which some gradient communication was in flight
               (mean over ranks)
  exposed ms   time per iteration the compute thread sat waiting for communication (mean
               over ranks): the part of `comm ms` that backward did not hide
  hidden %     1 - exposed / comm (0 when the waits, which include a bucket's time in the
               queue, exceed comm)
  img/s        global images per second (ranks x per-rank batch / time per iteration)
  eff %        weak-scaling efficiency: ms/iter on 1 host / ms/iter on N hosts (per-rank
               batch fixed)
  eff/CPU %    the same against what N hosts could do on this machine's cores: on C cores,
               N > C hosts are N/C times slower before any communication; this column takes
               that out, leaving the cost of communication and synchronisation
  sent MB      (with --compressions) what rank 0 hands to the collectives per iteration: the
               gradient, or its compressed form (timeline bytes of its communication spans)
  eff/ceil %   (with --compressions) against the no-communication ceiling: N independent
               one-process trainings run at once on this machine (the slowest one's ms/iter),
               measured in the same run

Needs root (network namespaces), build/tools/doppio and build/tests/cluster/
doppio_cluster_helper (it makes the generated LMDBs). Every rank uses one BLAS thread.

    bench/cluster_scaling.py [--models lenet,cifar10_quick,alexnet] [--hosts 1,2,4]
        [--rates unlimited,10gbit,1gbit] [--syncs overlap,reduce_bcast,blocking]
        [--buckets 0.25,25] [--compressions none,fp16,bf16,topk:0.01,powersgd:4]
        [--markdown FILE]
"""

import argparse
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Per-rank batch (AlexNet: a small one), input shape, warm-up and measured iterations.
MODELS = {
    "lenet": dict(batch=64, shape=(1, 28, 28), warmup=4, measure=16),
    "cifar10_quick": dict(batch=100, shape=(3, 32, 32), warmup=2, measure=8),
    "alexnet": dict(batch=4, shape=(3, 227, 227), warmup=1, measure=4),
}
CLUSTER = "dpbench"


def log(message):
    print(f"[cluster_scaling {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def cluster_sh(*args):
    env = dict(os.environ, DOPPIO_CLUSTER=CLUSTER)
    result = subprocess.run([os.path.join(ROOT, "scripts", "cluster.sh"), *args], env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"cluster.sh {' '.join(args)}: {result.stderr.strip()}")
    return result


def write_net(model, data, batch, path):
    """models/<model>/train_val.prototxt reading the generated LMDBs, `batch` per rank."""
    with open(os.path.join(ROOT, "models", model, "train_val.prototxt")) as f:
        text = f.read()
    # Split at the top-level layers; rewrite the Data layers' source, mean and batch.
    parts = re.split(r"(?m)^(?=layer \{)", text)
    out = []
    for part in parts:
        if re.search(r'type: "Data"', part):
            train = "phase: TRAIN" in part
            part = re.sub(r'source: "[^"]*"',
                          f'source: "{data}/{"train" if train else "test"}_lmdb"', part)
            part = re.sub(r'mean_file: "[^"]*"', "mean_value: 128", part)
            part = re.sub(r"batch_size: \d+", f"batch_size: {batch if train else 2}", part)
        out.append(part)
    with open(path, "w") as f:
        f.write("".join(out))


def write_solver(net, max_iter, path):
    with open(path, "w") as f:
        f.write(f"""net: "{net}"
test_iter: 4
test_interval: 1000000
test_initialization: false
base_lr: 0.001
momentum: 0.9
weight_decay: 0.0005
lr_policy: "fixed"
display: 1000
max_iter: {max_iter}
snapshot_after_train: false
solver_mode: CPU
random_seed: 7
""")


def union_length(spans, lo, hi):
    """Length of the union of [start, end) spans clipped to [lo, hi)."""
    clipped = sorted((max(s, lo), min(e, hi)) for s, e in spans if e > lo and s < hi)
    total, current_start, current_end = 0.0, None, None
    for s, e in clipped:
        if current_end is None or s > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = s, e
        else:
            current_end = max(current_end, e)
    if current_end is not None:
        total += current_end - current_start
    return total


def update_ends(spans, timeline_path, warmup, measure):
    """When rank 0's updates end (iterations end there; reduce_bcast: rank 0 alone
    updates), from the warm-up's last on."""
    updates = sorted(e["ts"] + e["dur"] for e in spans if e["pid"] == 0 and e["cat"] == "update")
    if len(updates) < warmup + measure:
        raise RuntimeError(f"{timeline_path}: {len(updates)} updates, expected "
                           f"{warmup + measure}")
    return updates[warmup - 1:warmup + measure]


def read_spans(timeline_path):
    with open(timeline_path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def iteration_ms(timeline_path, warmup, measure):
    """Each measured iteration's length in ms."""
    ends = update_ends(read_spans(timeline_path), timeline_path, warmup, measure)
    return [(b - a) / 1e3 for a, b in zip(ends, ends[1:])]


def analyse(timeline_path, warmup, measure):
    spans = read_spans(timeline_path)
    ranks = sorted({e["pid"] for e in spans})
    ends = update_ends(spans, timeline_path, warmup, measure)
    lo, hi = ends[0], ends[-1]
    iteration = (hi - lo) / measure
    waits, comms, sent = [], [], []
    for rank in ranks:
        mine = [e for e in spans if e["pid"] == rank]
        waits.append(union_length([(e["ts"], e["ts"] + e["dur"]) for e in mine
                                   if e["cat"] == "wait"], lo, hi) / measure)
        comms.append(union_length([(e["ts"], e["ts"] + e["dur"]) for e in mine
                                   if e["cat"] == "communication"], lo, hi) / measure)
    exposed = sum(waits) / len(waits)
    comm = sum(comms) / len(comms)
    sent = sum(e.get("args", {}).get("bytes", 0) for e in spans
               if e["pid"] == 0 and e["cat"] == "communication" and lo <= e["ts"] < hi) / measure
    return dict(ms=iteration / 1e3, exposed=exposed / 1e3, comm=comm / 1e3, ranks=len(ranks),
                sent_mb=sent / 1e6)


class Runner:
    def __init__(self, args):
        self.args = args
        self.doppio = os.path.join(args.build, "tools", "doppio")
        self.helper = os.path.join(args.build, "tests", "cluster", "doppio_cluster_helper")
        for path in (self.doppio, self.helper):
            if not os.access(path, os.X_OK):
                sys.exit(f"cluster_scaling: {path} not built")
        self.work = tempfile.mkdtemp(prefix="cluster_scaling.")
        self.env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                        GLOG_logtostderr="1", GLOG_minloglevel="1", DOPPIO_CLUSTER=CLUSTER)
        self.hosts_up = None

    def prepare(self, model):
        spec = MODELS[model]
        data = os.path.join(self.work, model)
        max_hosts = max(self.args.hosts)
        records = spec["batch"] * max_hosts * 4
        subprocess.run([self.helper, "make-data", data, str(records), "16",
                        *map(str, spec["shape"])], check=True, capture_output=True)
        net = os.path.join(self.work, f"{model}.prototxt")
        write_net(model, data, spec["batch"], net)
        solver = os.path.join(self.work, f"{model}_solver.prototxt")
        write_solver(net, spec["warmup"] + spec["measure"], solver)
        return solver

    def cluster(self, hosts, rate):
        if self.hosts_up != (hosts, rate):
            cluster_sh("up", str(hosts), "--rate", rate)
            self.hosts_up = (hosts, rate)

    def run(self, model, solver, hosts, rate, sync, bucket, compression="none"):
        spec = MODELS[model]
        timeline = os.path.join(self.work, "timeline.json")
        if os.path.exists(timeline):
            os.remove(timeline)
        train = [self.doppio, "train", f"--solver={solver}", f"--timeline={timeline}",
                 "--allow_nonfinite", "--comm_timeout=300"]
        if hosts == 1:
            command = train
        else:
            self.cluster(hosts, rate)
            command = [os.path.join(ROOT, "scripts", "cluster.sh"), "run", "-np", str(hosts),
                       *train, f"--sync={sync}", f"--bucket_mb={bucket}",
                       f"--grad_compression={compression}"]
        start = time.monotonic()
        result = subprocess.run(command, env=self.env, capture_output=True, text=True,
                                timeout=self.args.timeout)
        wall = time.monotonic() - start
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({result.returncode}):\n"
                               f"{(result.stdout + result.stderr)[-3000:]}")
        stats = analyse(timeline, spec["warmup"], spec["measure"])
        stats["wall"] = wall
        # The machine's 1-minute load average as the run ends: other work on the shared cores.
        stats["load"] = os.getloadavg()[0]
        return stats

    def ceiling(self, model, solver, hosts):
        """ms/iter of `hosts` independent training processes at once (the slowest): what N
        ranks could compute on this machine without communicating. Each process runs in a
        session of its own, as the cluster's ranks do (each host's orted starts one): with
        the kernel's autogroup scheduling a session shares the cores with other sessions as
        one, so N processes in one session would get the CPU of one rank under load."""
        spec = MODELS[model]
        processes, timelines = [], []
        for i in range(hosts):
            timeline = os.path.join(self.work, f"ceiling{i}.json")
            if os.path.exists(timeline):
                os.remove(timeline)
            timelines.append(timeline)
            processes.append(subprocess.Popen(
                [self.doppio, "train", f"--solver={solver}", f"--timeline={timeline}",
                 "--allow_nonfinite"], env=self.env, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True, start_new_session=True))
        for process in processes:
            _, err = process.communicate(timeout=self.args.timeout)
            if process.returncode != 0:
                raise RuntimeError(f"ceiling run failed: {err[-2000:]}")
        times = [analyse(t, spec["warmup"], spec["measure"])["ms"] for t in timelines]
        # Ranks in lockstep wait for the slowest one every iteration, not on average: pair
        # the processes' iterations by number (they are independent, so any pairing is as
        # good) and average the slowest of each.
        durations = [iteration_ms(t, spec["warmup"], spec["measure"]) for t in timelines]
        lockstep = sum(map(max, zip(*durations))) / spec["measure"]
        return dict(ms=max(times), lockstep_ms=lockstep, load=os.getloadavg()[0])

    def cleanup(self):
        try:
            cluster_sh("down")
        finally:
            shutil.rmtree(self.work, ignore_errors=True)


def key(row):
    return (row["model"], row["hosts"], row["rate"], row["sync"], row["bucket"],
            row.get("compression", "none"))


def render(rows, cores, seconds):
    """The markdown table of the runs."""
    lines = [
        f"{cores} CPU cores shared by all hosts: with N hosts each rank has min(1, {cores}/N) "
        "cores, so eff % includes CPU sharing; eff/CPU % takes it out.",
    ]
    loads = [r["load"] for r in rows if "load" in r]
    if loads:
        lines.append(f"1-minute load average at the end of the runs: {min(loads):.1f} to "
                     f"{max(loads):.1f}, median {sorted(loads)[len(loads) // 2]:.1f} "
                     "(other work on the same cores included).")
    lines += [
        "",
        "| model | batch/rank | hosts | link | --sync | --bucket_mb | ms/iter | comm ms "
        "| exposed ms | hidden % | img/s | eff % | eff/CPU % |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = {r["model"]: r["ms"] for r in rows if r["hosts"] == 1 and not r["failed"]}
    for r in rows:
        if r["failed"]:
            lines.append(f"| {r['model']} | | {r['hosts']} | {r['rate']} | {r['sync']} | "
                         f"{r['bucket'] or '-'} | FAILED | | | | | | |")
            continue
        # The waits also cover a bucket's time in the queue, so they can exceed `comm`.
        hidden = (f"{100 * max(0.0, 1 - r['exposed'] / r['comm']):.0f}"
                  if r["comm"] > 0.05 else "-")
        bucket = "-" if r["bucket"] is None else f"{r['bucket']:g}"
        if r["sync"] == "blocking":
            bucket = "(one)"
        eff = eff_cpu = "-"
        if r["model"] in base:
            eff = f"{100 * base[r['model']] / r['ms']:.0f}"
            eff_cpu = f"{100 * base[r['model']] * max(1.0, r['hosts'] / cores) / r['ms']:.0f}"
        images = r["batch"] * r["hosts"] / (r["ms"] / 1e3)
        # AlexNet's small batch makes a few images per second: keep a decimal there.
        images = f"{images:.1f}" if images < 100 else f"{images:.0f}"
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['hosts']} | {r['rate']} | {r['sync']} | {bucket} "
            f"| {r['ms']:.1f} | {r['comm']:.1f} | {r['exposed']:.1f} | {hidden} | {images} "
            f"| {eff} | {eff_cpu} |")
    lines.append("")
    if seconds is not None:
        lines.append(f"({len(rows)} runs in {seconds:.0f} s)")
    return "\n".join(lines)


# Methods whose buckets travel by allgather: a timeline's allgather span carries the gathered
# total (every rank's contribution), N times what this rank sends.
ALLGATHER_METHODS = ("fp16", "bf16", "topk")


def sent_mb(row):
    method = row.get("compression", "none").split(":")[0]
    return row["sent_mb"] / (row["hosts"] if method in ALLGATHER_METHODS else 1)


def render_compression(rows, cores, seconds):
    """The table of the --grad_compression runs against the no-communication ceiling."""
    ok = [r for r in rows if not r["failed"]]
    ceiling = {(r["model"], r["hosts"]): r["ms"] for r in ok if r["sync"] == "ceiling"}
    loads = [r["load"] for r in rows if "load" in r]
    lines = []
    if loads:
        lines.append(f"1-minute load average at the end of the runs: {min(loads):.1f} to "
                     f"{max(loads):.1f}, median {sorted(loads)[len(loads) // 2]:.1f}.")
        lines.append("")
    lines += ["| model | hosts | link | --sync | --grad_compression | ms/iter | sent MB/iter "
              "| vs none | exposed ms | ceiling ms | eff/ceil % |",
              "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|"]
    none = {(r["model"], r["hosts"], r["rate"], r["sync"], r["bucket"]): r for r in ok
            if r.get("compression", "none") == "none"}
    for r in rows:
        if r["sync"] == "ceiling" or r["hosts"] == 1:
            continue
        compression = r.get("compression", "none")
        if r["failed"]:
            lines.append(f"| {r['model']} | {r['hosts']} | {r['rate']} | {r['sync']} | "
                         f"{compression} | FAILED | | | | | |")
            continue
        base = none.get((r["model"], r["hosts"], r["rate"], r["sync"], r["bucket"]))
        ratio = f"{sent_mb(r) / sent_mb(base):.3f}" if base and base["sent_mb"] else "-"
        ceil = ceiling.get((r["model"], r["hosts"]))
        eff = f"{100 * ceil / r['ms']:.0f}" if ceil else "-"
        lines.append(
            f"| {r['model']} | {r['hosts']} | {r['rate']} | {r['sync']} | {compression} "
            f"| {r['ms']:.1f} | {sent_mb(r):.2f} | {ratio} | {r['exposed']:.1f} "
            f"| {f'{ceil:.1f}' if ceil else '-'} | {eff} |")
    lines.append("")
    if seconds is not None:
        lines.append(f"({len(rows)} runs in {seconds:.0f} s)")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", default="lenet,cifar10_quick,alexnet")
    parser.add_argument("--hosts", default="1,2,4")
    parser.add_argument("--rates", default="unlimited,10gbit,1gbit")
    parser.add_argument("--syncs", default="overlap,reduce_bcast,blocking")
    parser.add_argument("--buckets", default="0.25,25", help="--bucket_mb values (MB)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--compressions", default="none",
                        help="--grad_compression values; more than none adds the ceiling runs "
                        "and prints the compression table")
    parser.add_argument("--results", help="JSON lines, one per run, appended as runs finish; "
                        "runs already in the file are not repeated (resume)")
    parser.add_argument("--table-only", action="store_true",
                        help="print the table of --results without running anything")
    args = parser.parse_args()
    args.models = args.models.split(",")
    args.hosts = [int(h) for h in args.hosts.split(",")]
    args.rates = args.rates.split(",")
    args.syncs = args.syncs.split(",")
    args.buckets = [float(b) for b in args.buckets.split(",")]
    args.compressions = args.compressions.split(",")
    compare = args.compressions != ["none"]
    table = render_compression if compare else render
    for model in args.models:
        if model not in MODELS:
            sys.exit(f"cluster_scaling: unknown model {model} ({', '.join(MODELS)})")
    cores = os.cpu_count() or 1
    done = {}
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    done[key(row)] = row
    if args.table_only:
        print(table([r for r in done.values() if r["model"] in args.models], cores, None))
        return 0
    if os.geteuid() != 0:
        sys.exit("cluster_scaling: needs root (network namespaces)")

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    runner = Runner(args)
    rows = []
    started = time.monotonic()
    try:
        for model in args.models:
            spec = MODELS[model]
            solver = None
            base = None
            configs = []
            for hosts in args.hosts:
                if hosts == 1:
                    configs.append((1, "-", "-", None, "none"))
                    continue
                if compare:
                    configs.append((hosts, "-", "ceiling", None, "none"))
                for rate in args.rates:
                    for sync in args.syncs:
                        # blocking sends one allreduce after backward: buckets do not matter.
                        buckets = args.buckets[-1:] if sync == "blocking" else args.buckets
                        for bucket in buckets:
                            for compression in args.compressions:
                                configs.append((hosts, rate, sync, bucket, compression))
            for hosts, rate, sync, bucket, compression in configs:
                wanted = dict(model=model, hosts=hosts, rate=rate, sync=sync, bucket=bucket,
                              compression=compression)
                if key(wanted) in done and not done[key(wanted)]["failed"]:
                    rows.append(done[key(wanted)])
                    continue
                if solver is None:
                    solver = runner.prepare(model)
                try:
                    if sync == "ceiling":
                        stats = runner.ceiling(model, solver, hosts)
                    else:
                        stats = runner.run(model, solver, hosts, rate, sync, bucket, compression)
                    row = dict(wanted, batch=spec["batch"], failed=False, **stats)
                    log(f"{model:14} {hosts} host(s) {rate:9} {sync:12} {bucket or '-':>5} MB "
                        f"{compression:12}: {stats['ms']:8.1f} ms/iter")
                except (RuntimeError, subprocess.TimeoutExpired) as error:
                    log(f"{model} {hosts} hosts {rate} {sync} {bucket}: FAILED: {error}")
                    row = dict(wanted, batch=spec["batch"], failed=True,
                               error=str(error)[-2000:])
                rows.append(row)
                if args.results:
                    with open(args.results, "a") as f:
                        f.write(json.dumps(row) + "\n")
    finally:
        runner.cleanup()

    text = table(rows, cores, time.monotonic() - started)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
