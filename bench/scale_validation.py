#!/usr/bin/env python3
"""`doppio scale` against the namespace cluster: measured and predicted time per iteration
side by side, with the error per row.

For every model, host count, link rate, --sync mode and bucket size it
  1. measures the compute the ranks would have with no communication at all, right before
     the run (same load): N independent `doppio train` processes at once (the slowest one's
     ms/iter); on 2 shared cores that ceiling, not the one-process time, is what N ranks
     can compute;
  2. measures `doppio train` on the cluster as bench/cluster_scaling.py does (its Runner:
     ms/iter, comm ms and exposed ms from the timeline);
     steps 1 and 2 are repeated --repeats times, in passes: every pass measures each
     configuration of the model and host count once (ceiling, then run), so a burst of other
     work on the shared cores slows one run of several configurations rather than every run
     of one; the row compares the prediction with the fastest run (the one least disturbed),
     predicted from the fastest ceiling (the same footing), and shows the median of each
     beside it as the noise;
  3. calibrates the link once per model, host count and rate, right after that group's first
     run: `scripts/cluster.sh run -np N doppio scale --calibrate` on the same cluster (alpha,
     beta, gamma, beta by message size: --bandwidth_curve, the broadcast's share of beta:
     --broadcast_factor, and what the communication costs the shared cores by the
     collective's size: --comm_cpu_curve, --shared_cores), its sweep up to the model's whole
     gradient (256 MB for AlexNet's 244; at least --calibrate_max_mb);
  4. predicts each run: `doppio scale` with the model's per-layer times from `doppio time
     --json`, scaled to the ceiling of step 1 (--compute_ms), and
       - the calibrated link with its CPU cost on the shared cores ("calibrated"),
       - the same link without it (--shared_cores=0: "wire only", the model before the CPU
         term),
       - the nominal rate (--link=1gbit / 10gbit, default alpha, free reduction and copying:
         what a user types without measuring; none for unlimited links),
       - the calibrated link with its CPU term and the lockstep ceiling as compute
         ("calibrated, lockstep"): the ceiling processes' iterations paired by number, the
         slowest of each pair averaged. Ranks that synchronise every iteration wait for the
         slowest one every iteration; the ceiling (the slowest process's mean) leaves that
         out, and with jitter it costs more the more ranks there are.
     Nothing of the measured run goes into its prediction.

Columns: measured ms/iter (the fastest run, and the median of the runs), comm %
(communication in flight as a share of the fastest run's iteration), the ranks' own compute
in that run (ms/iter less the compute thread's waits, for reference: not used), the ceiling
(the fastest, and the median), the predictions and their errors against the fastest run
(predicted / measured - 1).
The verdict lines check the issue's targets: within 20% where communication is at least 30%
of the iteration (of the fastest run); the same order of the sync modes and bucket sizes of
one (model, hosts, link) wherever the measured times differ by more than the noise: the
slower configuration's fastest run is slower than the faster one's median (their spreads
from best to median do not overlap), by more than --noise (default 0), and by more than the
table's noise: s, the standard deviation of one run's log(ms/iter) about its configuration's
mean, pooled over the (model, hosts, link)'s configurations; two runs differ by sqrt(2) s
from jitter alone, and the pair counts beyond 2 sqrt(2) s (about 95% of jitter stays under
it). The same check against the spreads alone is printed beside it.

Needs root (network namespaces) and a build with tools/doppio and
tests/cluster/doppio_cluster_helper. Measure under the benchmark lock, a few groups at a
time, then print (the predictions run then, outside the lock):

    sudo flock /work/bench.lock bench/scale_validation.py --build build --models lenet \
        --hosts 2 --repeats 3 --results runs.jsonl --measure-only
    bench/scale_validation.py --build build --results runs.jsonl --table-only

--results FILE keeps every measurement as a JSON line (resumable, as cluster_scaling.py).
"""

import argparse
import concurrent.futures
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_scaling  # noqa: E402  (the cluster measurements: one way to run them)

ROOT = cluster_scaling.ROOT


def log(message):
    print(f"[scale_validation {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def shape_flag(model):
    return ",".join(map(str, cluster_scaling.MODELS[model]["shape"]))


class Validation:
    def __init__(self, args):
        self.args = args
        self.runner = cluster_scaling.Runner(args)
        self.doppio = self.runner.doppio
        self.work = self.runner.work
        self.done = {}
        self.predictions = {}
        if args.results and os.path.exists(args.results):
            with open(args.results) as f:
                for line in f:
                    if line.strip():
                        entry = json.loads(line)
                        self.done[entry["key"]] = entry["value"]

    def remember(self, key, compute):
        """The value of `key` from --results, else compute() stored there."""
        if key in self.done:
            return self.done[key]
        value = compute()
        self.done[key] = value
        if self.args.results:
            with open(self.args.results, "a") as f:
                f.write(json.dumps(dict(key=key, value=value)) + "\n")
        return value

    def time_json(self, model):
        """Per-layer times of one process (`doppio time --json`): the shape of the compute."""
        def measure():
            spec = cluster_scaling.MODELS[model]
            path = os.path.join(self.work, f"{model}_time.json")
            subprocess.run([self.doppio, "time",
                            f"--model={ROOT}/models/{model}/train_val.prototxt",
                            f"--batch={spec['batch']}", f"--input_shape={shape_flag(model)}",
                            f"--iterations={spec['measure']}", f"--json={path}"],
                           env=self.runner.env, check=True, capture_output=True)
            with open(path) as f:
                return f.read()
        return self.remember(f"time {model}", measure)

    def ceiling(self, config, solver, repeat):
        """ms/iter of `hosts` independent training processes at once (the slowest), measured
        right before run `repeat` of that configuration."""
        model, hosts = config[0], config[1]
        return self.remember(f"ceiling {config_name(config)} #{repeat}",
                             lambda: self.runner.ceiling(model, solver, hosts))

    def calibrate(self, hosts, rate, path, max_mb):
        """`doppio scale --calibrate` on the cluster's `hosts` hosts."""
        self.runner.cluster(hosts, rate)
        command = [os.path.join(ROOT, "scripts", "cluster.sh"), "run", "-np", str(hosts),
                   self.doppio, "scale", "--calibrate", f"--json={path}",
                   f"--calibrate_max_mb={max_mb}"]
        result = subprocess.run(command, env=self.runner.env, capture_output=True, text=True,
                                timeout=self.args.timeout)
        if result.returncode != 0:
            raise RuntimeError(f"calibration failed:\n{result.stderr[-2000:]}")
        with open(path) as f:
            return json.load(f)

    def calibration(self, model, hosts, rate, gradient_mb):
        """The link as the cluster's ranks see it with nothing else to do, measured between
        the model's runs on it (the shared cores' speed drifts with the machine's load) and
        up to the model's whole gradient (the largest collective it runs; the rate of a
        16 MB message is not that of 244)."""
        path = os.path.join(self.work, "calibration.json")
        max_mb = calibration_max_mb(self.args.calibrate_max_mb, gradient_mb)
        return self.remember(f"calibration {model} {hosts} {rate}",
                             lambda: self.calibrate(hosts, rate, path, max_mb))

    def measured(self, config, solver, repeat):
        return self.remember(f"train {config_name(config)} #{repeat}",
                             lambda: self.runner.run(config[0], solver, *config[1:]))

    def repeats(self, config):
        """(ceiling, run) of every repeat of `config` in --results with both."""
        name = config_name(config)
        pairs = []
        for repeat in range(self.args.repeats):
            ceiling = self.done.get(f"ceiling {name} #{repeat}")
            run = self.done.get(f"train {name} #{repeat}")
            if ceiling and run:
                pairs.append((ceiling, run))
        return pairs

    def predict(self, model, hosts, compute_ms, link_flags):
        """ms/iter `doppio scale` predicts for every sync mode and bucket size, by (sync,
        bucket_mb): one run, whose JSON lists every plan it tried. Cached in memory by its
        arguments."""
        cache_key = (model, hosts, compute_ms, tuple(link_flags))
        if cache_key not in self.predictions:
            self.predictions[cache_key] = self.run_scale(model, hosts, compute_ms, link_flags)
        return self.predictions[cache_key]

    def prefetch(self, requests):
        """predict() for every (model, hosts, compute_ms, link_flags) of `requests`, as many
        at once as this machine has cores (each builds the net: seconds for AlexNet)."""
        todo = sorted({(m, h, c, tuple(f)) for m, h, c, f in requests} - set(self.predictions))
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            results = pool.map(lambda r: self.run_scale(r[0], r[1], r[2], list(r[3])), todo)
            for request, result in zip(todo, results):
                self.predictions[request] = result

    def run_scale(self, model, hosts, compute_ms, link_flags):
        spec = cluster_scaling.MODELS[model]
        times = os.path.join(self.work, f"{model}_time{threading.get_ident()}.json")
        with open(times, "w") as f:
            f.write(self.time_json(model))
        rows = os.path.join(self.work, f"rows{threading.get_ident()}.json")
        command = [self.doppio, "scale", f"--model={ROOT}/models/{model}/train_val.prototxt",
                   f"--batch={spec['batch']}", f"--input_shape={shape_flag(model)}",
                   f"--ranks={hosts}", f"--time_json={times}", f"--compute_ms={compute_ms}",
                   f"--json={rows}", *link_flags]
        result = subprocess.run(command, env=self.runner.env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}:\n{result.stderr[-2000:]}")
        with open(rows) as f:
            plans = json.load(f)["plans"]
        return {(p["sync"], p["bucket_mb"]): p["ms_per_iter"] for p in plans}


def calibration_max_mb(floor_mb, gradient_mb):
    """The calibration's largest message: the sweep's sizes grow by 4 from 1 KB, so the first
    of them that holds the whole gradient, and at least `floor_mb`."""
    if gradient_mb <= floor_mb:
        return floor_mb
    size = 1.0 / 1024
    while size < gradient_mb:
        size *= 4
    return size


def stored_calibration(done, model, hosts, rate):
    """The calibration the rows of (model, hosts, rate) are predicted with: the model's own,
    else (results measured before calibrations were per model) the one of (hosts, rate)."""
    return done.get(f"calibration {model} {hosts} {rate}", done.get(f"calibration {hosts} {rate}"))


def config_name(config):
    """The --results key of (model, hosts, rate, sync, bucket)."""
    return " ".join(map(str, config))


def configs(args, model, hosts):
    """Every (model, hosts, rate, sync, bucket) of one model and host count, in measuring
    order."""
    for rate in args.rates:
        for sync in args.syncs:
            # blocking sends one allreduce after backward: buckets do not matter.
            for bucket in args.buckets[-1:] if sync == "blocking" else args.buckets:
                yield (model, hosts, rate, sync, bucket)


def summary(pairs):
    """One table row's measurements from the (ceiling, run) of its repeats: the fastest run
    (and its timeline figures), the fastest ceiling, and the medians."""
    best = min((run for _, run in pairs), key=lambda run: run["ms"])
    # Ceilings measured before the lockstep figure have none.
    lockstep = [ceiling.get("lockstep_ms") for ceiling, _ in pairs]
    return dict(lockstep=min(lockstep) if all(lockstep) else None,
                ms=best["ms"], comm=best["comm"], exposed=best["exposed"], load=best["load"],
                median=statistics.median(run["ms"] for _, run in pairs),
                runs_ms=[run["ms"] for _, run in pairs],
                ceiling=min(ceiling["ms"] for ceiling, _ in pairs),
                ceiling_median=statistics.median(ceiling["ms"] for ceiling, _ in pairs),
                runs=len(pairs), loads=[run["load"] for _, run in pairs])


def prediction_inputs(row, calibration):
    """(column, compute ms, doppio scale's link flags) of each prediction the row has: the
    fastest ceiling with the calibrated link (with and without its CPU term) and the nominal
    rate (not for unlimited links), and the calibrated link with the fastest lockstep ceiling
    (where the ceilings measured it)."""
    inputs = [("calibrated_ms", row["ceiling"], calibrated_flags(calibration)),
              ("wire_ms", row["ceiling"], calibrated_flags(calibration, cpu=False))]
    if row["rate"] != "unlimited":
        inputs.append(("nominal_ms", row["ceiling"], [f"--link={row['rate']}"]))
    if row["lockstep"]:
        inputs.append(("lockstep_ms", row["lockstep"], calibrated_flags(calibration)))
    return inputs


def prediction_requests(validation, args):
    """The predict() calls the table of --results needs."""
    requests = []
    for model in args.models:
        for hosts in args.hosts:
            for config in configs(args, model, hosts):
                rate = config[2]
                pairs = validation.repeats(config)
                calibration = stored_calibration(validation.done, model, hosts, rate)
                if not pairs or calibration is None or f"time {model}" not in validation.done:
                    continue
                row = dict(rate=rate, **summary(pairs))
                for _, compute, flags in prediction_inputs(row, calibration):
                    requests.append((model, hosts, compute, flags))
    return requests


def bandwidth_curve(calibration):
    """The link's rate by message size, (bytes, Gbit/s): as --calibrate wrote it, or (for
    calibrations from before 2026-11-26 23:00, which kept only the ping-pong points) from its
    ping-pong points by the same rule: from 64 KB up, each message's time beyond alpha per
    byte. Empty without ping-pong points."""
    if "bandwidth_curve" in calibration:
        return [tuple(point) for point in calibration["bandwidth_curve"]]
    alpha = calibration["latency_us"] * 1e-6
    curve = []
    for size, seconds in calibration.get("ping_pong", []):
        if size >= 65536:
            beta = max(0.0, seconds - alpha) / size
            curve.append((size, 8 / beta / 1e9 if beta > 0 else 1e6))
    return curve


def calibrated_flags(calibration, cpu=True):
    flags = [f"--latency_us={calibration['latency_us']}",
             f"--bandwidth_gbps={calibration['bandwidth_gbps']}",
             f"--reduce_gbs={calibration['reduce_gbs']}"]
    curve = bandwidth_curve(calibration)
    if curve:
        flags.append("--bandwidth_curve=" + ",".join(f"{int(size)}:{gbps:.6g}"
                                                     for size, gbps in curve))
    if "broadcast_factor" in calibration:
        flags.append(f"--broadcast_factor={calibration['broadcast_factor']}")
    if cpu:
        # The CPU cost by the collective's size where the calibration measured it (since
        # 2026-11-26 17:30), else the largest allreduce's for every size.
        curve = calibration.get("comm_cpu_curve")
        if curve:
            points = ",".join(f"{int(size)}:{gbs}" for size, gbs in curve)
            flags.append(f"--comm_cpu_curve={points}")
        else:
            flags.append(f"--comm_cpu_gbs={calibration['comm_cpu_gbs']}")
        flags.append(f"--shared_cores={calibration['shared_cores']}")
    return flags


# The predictions, by the link they use: (column, title).
PREDICTIONS = [("calibrated_ms", "calibrated link, with its CPU cost on the shared cores"),
               ("wire_ms", "calibrated link, wire only (no CPU term)"),
               ("nominal_ms", "nominal link rate"),
               ("lockstep_ms", "calibrated link with its CPU term, lockstep ceiling as compute")]


def error(predicted, measured):
    return f"{100 * (predicted / measured - 1):+.0f}%"


def group_noise(rows):
    """The run-to-run noise of one (model, hosts, link): the standard deviation of one run's
    log(ms/iter) about its configuration's mean, pooled over the group's configurations (every
    configuration was measured --repeats times in the same passes); 0 without repeats."""
    squares = dof = 0
    for r in rows:
        logs = [math.log(ms) for ms in r["runs_ms"]]
        mean = sum(logs) / len(logs)
        squares += sum((x - mean) ** 2 for x in logs)
        dof += len(logs) - 1
    return math.sqrt(squares / dof) if dof else 0.0


def distinct(slow, fast, noise, floor=0.0):
    """Whether `slow` is measured slower than `fast` by more than the noise: its fastest run
    above the other's median (the spreads from best to median do not overlap), above the
    other's fastest by more than the share `noise`, and log(slow / fast) above `floor`."""
    return (slow["ms"] > fast["median"] and slow["ms"] > fast["ms"] * (1 + noise)
            and math.log(slow["ms"] / fast["ms"]) > floor)


def verdict(rows, column, title, noise):
    """The issue's two targets for one prediction column."""
    rows = [r for r in rows if r.get(column)]
    lines = [f"{title}:"]
    # Within 20% where communication is at least 30% of the iteration.
    heavy = [r for r in rows if r["comm"] >= 0.3 * r["ms"]]
    within = [r for r in heavy if abs(r[column] / r["ms"] - 1) <= 0.2]
    lines.append(f"  rows with communication >= 30% of the iteration: {len(heavy)}; predicted "
                 f"within 20%: {len(within)}")
    if heavy:
        errors = [r[column] / r["ms"] - 1 for r in heavy]
        lines.append(f"  their errors: mean {100 * statistics.mean(errors):+.1f}%, mean size "
                     f"{100 * statistics.mean(map(abs, errors)):.1f}%, largest "
                     f"{100 * max(map(abs, errors)):.1f}%")
    # The same order wherever the measured times differ by more than the noise: counted
    # twice, against the table's noise (a difference of two runs has the standard deviation
    # sqrt(2) s; beyond two of those it is not the machine's jitter), and against the rows'
    # spreads alone.
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["hosts"], r["rate"]), []).append(r)
    for with_noise in (True, False):
        pairs = agree = 0
        for group in groups.values():
            floor = 2 * math.sqrt(2) * group_noise(group) if with_noise else 0.0
            for i, a in enumerate(group):
                for b in group[i + 1:]:
                    slow, fast = (a, b) if a["ms"] > b["ms"] else (b, a)
                    if not distinct(slow, fast, noise, floor):
                        continue
                    pairs += 1
                    agree += slow[column] > fast[column]
        share = f" and by more than {100 * noise:.0f}%" if noise else ""
        beyond = ("their spread (best to median) and the table's noise (2 sqrt(2) s)"
                  if with_noise else "their spread (best to median) alone")
        lines.append(f"  pairs of sync modes / bucket sizes of one model, host count and link "
                     f"whose measured times differ by more than {beyond}{share}: {pairs}; "
                     f"predicted in the same order: {agree}")
    return lines


def render(rows, args):
    lines = [
        "| model | hosts | link | --sync | --bucket_mb | measured ms/iter, best | median "
        "| comm % | compute in the run | ceiling ms, best | median | lockstep ceiling "
        "| predicted, calibrated | error | wire only | error | nominal rate | error "
        "| calibrated, lockstep | error |",
        "|---|---:|---|---|" + "---:|" * 15,
    ]
    for r in rows:
        cells = []
        for column, _ in PREDICTIONS:
            value = r.get(column)
            cells.append(f"{value:.1f} | {error(value, r['ms'])}" if value else "- | -")
        bucket = "(one)" if r["sync"] == "blocking" else f"{r['bucket']:g}"
        lockstep = f"{r['lockstep']:.1f}" if r["lockstep"] else "-"
        lines.append(
            f"| {r['model']} | {r['hosts']} | {r['rate']} | {r['sync']} | {bucket} "
            f"| {r['ms']:.1f} | {r['median']:.1f} | {100 * r['comm'] / r['ms']:.0f} "
            f"| {r['ms'] - r['exposed']:.1f} | {r['ceiling']:.1f} | {r['ceiling_median']:.1f} "
            f"| {lockstep} | {' | '.join(cells)} |")
    lines.append("")
    for column, title in PREDICTIONS:
        lines += verdict(rows, column, title, args.noise)
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["hosts"], r["rate"]), []).append(r)
    noises = [f"{m} {h} {rate} {100 * group_noise(g):.1f}%" for (m, h, rate), g in groups.items()]
    lines.append("the table's noise s, one run's standard deviation about its configuration's "
                 "mean (of log ms/iter), pooled by model, hosts and link: " + ", ".join(noises))
    runs = sorted({r["runs"] for r in rows})
    if runs:
        lines.append(f"runs a row: {', '.join(map(str, runs))} (each beside its own ceiling)")
    loads = sorted(load for r in rows for load in r["loads"])
    if loads:
        lines.append(f"1-minute load average at the end of the cluster runs: {loads[0]:.1f} "
                     f"to {loads[-1]:.1f}, median {statistics.median(loads):.1f}")
    return "\n".join(lines)


def measure(validation, args):
    """Every missing measurement of --models x --hosts into --results, pass by pass."""
    try:
        for model in args.models:
            solver = None
            for hosts in args.hosts:
                for repeat in range(args.repeats):
                    for config in configs(args, model, hosts):
                        name = config_name(config)
                        keys = [f"train {name} #{repeat}", f"ceiling {name} #{repeat}",
                                f"time {model}", f"calibration {model} {hosts} {config[2]}"]
                        if all(k in validation.done for k in keys):
                            continue
                        if solver is None:
                            solver = validation.runner.prepare(model)
                        try:
                            ceiling = validation.ceiling(config, solver, repeat)["ms"]
                            row = validation.measured(config, solver, repeat)
                            # reduce_bcast sends the gradient, then the weights.
                            gradient_mb = row["sent_mb"] / (2 if config[3] == "reduce_bcast" else 1)
                            validation.calibration(model, hosts, config[2], gradient_mb)
                            validation.time_json(model)
                        except (RuntimeError, subprocess.SubprocessError) as error:
                            log(f"{name} #{repeat}: FAILED: {error}")
                            continue
                        log(f"{name} #{repeat}: measured {row['ms']:8.1f} ms/iter, ceiling "
                            f"{ceiling:8.1f}, load {row['load']:.1f}")
    finally:
        cluster_scaling.cluster_sh("down")


def table_rows(validation, args):
    """The rows of every configuration with at least one repeat in --results, predicted."""
    validation.prefetch(prediction_requests(validation, args))
    rows = []
    for model in args.models:
        for hosts in args.hosts:
            for config in configs(args, model, hosts):
                _, _, rate, sync, bucket = config
                pairs = validation.repeats(config)
                calibration = stored_calibration(validation.done, model, hosts, rate)
                if not pairs or calibration is None or f"time {model}" not in validation.done:
                    continue
                row = dict(model=model, hosts=hosts, rate=rate, sync=sync, bucket=bucket,
                           **summary(pairs))
                # blocking sends one allreduce whatever the bucket size.
                plan = (sync, 25.0 if sync == "blocking" else bucket)
                try:
                    for column, compute, flags in prediction_inputs(row, calibration):
                        row[column] = validation.predict(model, hosts, compute, flags).get(plan)
                except RuntimeError as error:
                    log(f"{config_name(config)}: prediction FAILED: {error}")
                    continue
                rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", default="lenet,cifar10_quick,alexnet")
    parser.add_argument("--hosts", default="2,4")
    parser.add_argument("--rates", default="unlimited,10gbit,1gbit")
    parser.add_argument("--syncs", default="overlap,reduce_bcast,blocking")
    parser.add_argument("--buckets", default="0.25,25")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of every configuration, each beside its own ceiling")
    parser.add_argument("--noise", type=float, default=0.0,
                        help="for the order check, measured differences must also exceed this "
                        "share (beyond the spread of the repeats)")
    parser.add_argument("--calibrate_max_mb", type=float, default=16,
                        help="the calibration's largest message at least (it grows to the "
                        "model's gradient)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--results", help="JSON lines of the measurements (resume)")
    parser.add_argument("--measure-only", action="store_true",
                        help="measure into --results, predict and print nothing")
    parser.add_argument("--table-only", action="store_true",
                        help="only the rows already in --results, nothing measured")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    args.models = args.models.split(",")
    args.hosts = [int(h) for h in args.hosts.split(",")]
    args.rates = args.rates.split(",")
    args.syncs = args.syncs.split(",")
    args.buckets = [float(b) for b in args.buckets.split(",")]
    if args.repeats < 1:
        sys.exit(f"scale_validation: --repeats={args.repeats}: give 1 or more")
    for model in args.models:
        if model not in cluster_scaling.MODELS:
            sys.exit(f"scale_validation: --models: unknown model {model} "
                     f"({', '.join(cluster_scaling.MODELS)})")
    if not args.table_only and os.geteuid() != 0:
        sys.exit("scale_validation: needs root (network namespaces)")
    validation = Validation(args)
    try:
        if not args.table_only:
            measure(validation, args)
        if args.measure_only:
            return 0
        rows = table_rows(validation, args)
    finally:
        # The generated data, timelines and the predictions' scratch files.
        shutil.rmtree(validation.work, ignore_errors=True)
    table = render(rows, args)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
