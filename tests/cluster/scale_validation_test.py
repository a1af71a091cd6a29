#!/usr/bin/env python3
"""bench/scale_validation.py without a cluster: the best-of-N rows, the noise of the order
check, and --table-only on a hand-made --results file (the prediction takes the fastest
ceiling, never the run; nothing is left in TMPDIR).

    tests/cluster/scale_validation_test.py --source SRC --build BUILD
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def run(ms, comm, exposed, load):
    return dict(ms=ms, comm=comm, exposed=exposed, load=load)


def test_summary(sv):
    pairs = [(dict(ms=20.0, lockstep_ms=21.0), run(30.0, 9.0, 3.0, 1.0)),
             (dict(ms=22.0, lockstep_ms=26.0), run(25.0, 8.0, 2.0, 2.0)),
             (dict(ms=18.0, lockstep_ms=23.0), run(40.0, 20.0, 10.0, 3.0))]
    row = sv.summary(pairs)
    # The fastest run with its own timeline figures; the fastest ceiling, wherever it was.
    check((row["ms"], row["comm"], row["exposed"], row["load"]) == (25.0, 8.0, 2.0, 2.0),
          f"fastest run: {row}")
    check(row["median"] == 30.0 and row["ceiling"] == 18.0 and row["ceiling_median"] == 20.0,
          f"medians and fastest ceiling: {row}")
    check(row["runs"] == 3 and row["loads"] == [1.0, 2.0, 3.0], f"runs and loads: {row}")
    check(row["lockstep"] == 21.0, f"fastest lockstep ceiling: {row}")
    # A ceiling measured before the lockstep figure: no lockstep for the row.
    del pairs[0][0]["lockstep_ms"]
    check(sv.summary(pairs)["lockstep"] is None, "lockstep from some ceilings only")


def test_distinct(sv):
    slow = dict(ms=30.0, median=33.0)
    # The spreads overlap (30 below the other's median 31): noise, whatever the bests.
    check(not sv.distinct(slow, dict(ms=25.0, median=31.0), 0.0), "overlapping spreads")
    check(sv.distinct(slow, dict(ms=25.0, median=28.0), 0.0), "separate spreads")
    # --noise adds a floor: 30 is not 25% above 25.
    check(not sv.distinct(slow, dict(ms=25.0, median=28.0), 0.25), "--noise floor")


def test_verdict(sv):
    def row(sync, ms, median, comm, predicted):
        # Two runs: the best, and one e^0.01 times slower (its median is theirs: unused here).
        return dict(model="lenet", hosts=2, rate="1gbit", sync=sync, ms=ms, median=median,
                    comm=comm, calibrated_ms=predicted, runs_ms=[ms, ms * math.exp(0.01)])
    rows = [row("overlap", 20.0, 21.0, 8.0, 23.0),        # comm 40%, +15%: within
            row("reduce_bcast", 40.0, 50.0, 20.0, 30.0),  # comm 50%, -25%: a miss
            row("blocking", 22.0, 30.0, 5.0, 40.0)]       # comm 23%: not counted
    lines = sv.verdict(rows, "calibrated_ms", "t", 0.0)
    check("communication >= 30% of the iteration: 2; predicted within 20%: 1" in lines[1],
          lines[1])
    # +15% and -25%.
    check(lines[2].endswith("mean -5.0%, mean size 20.0%, largest 25.0%"), lines[2])
    # The noise: each pair of runs is 0.01 apart in log, 0.005 from their mean; s = sqrt(3 x 2
    # x 0.005^2 / 3) = 0.00707, the floor 2 sqrt(2) s = 0.02.
    check(abs(sv.group_noise(rows) - 0.005 * math.sqrt(2)) < 1e-12, "pooled noise")
    # Against the spreads alone every pair is apart (the slower's best above the other's
    # median): reduce_bcast over overlap (40 > 21) predicted in order (30 > 23); blocking over
    # overlap (22 > 21) in order (40 > 23); reduce_bcast over blocking (40 > 30) out of order
    # (30 < 40).
    check(lines[4].endswith(": 3; predicted in the same order: 2"), lines[4])
    # Against the noise too: all three are more than 2% apart (log 22/20 = 0.095).
    check(lines[3].endswith(": 3; predicted in the same order: 2"), lines[3])
    # Noisier runs (e^0.1 apart: floor 0.2): blocking over overlap (0.095) is jitter now;
    # reduce_bcast over overlap (0.69) and over blocking (0.60) still count.
    for r in rows:
        r["runs_ms"] = [r["ms"], r["ms"] * math.exp(0.1)]
    lines = sv.verdict(rows, "calibrated_ms", "t", 0.0)
    check(lines[3].endswith(": 2; predicted in the same order: 1"), lines[3])
    check(lines[4].endswith(": 3; predicted in the same order: 2"), lines[4])


def test_calibration_choice(sv):
    # The sweep's sizes from 1 KB by 4: the first that holds the gradient, at least the floor.
    check(sv.calibration_max_mb(16, 1.7) == 16, "LeNet: the floor")
    check(sv.calibration_max_mb(16, 243.9) == 256, "AlexNet: 256 MB")
    check(sv.calibration_max_mb(16, 16.5) == 64, "just over 16 MB: 64")
    check(sv.calibration_max_mb(20, 1.0) == 20, "a floor off the sweep's sizes")
    # A model's own calibration first, else the one of its hosts and link (older results).
    done = {"calibration 2 1gbit": "shared", "calibration alexnet 2 1gbit": "own"}
    check(sv.stored_calibration(done, "alexnet", 2, "1gbit") == "own", "own calibration")
    check(sv.stored_calibration(done, "lenet", 2, "1gbit") == "shared", "shared calibration")
    check(sv.stored_calibration(done, "lenet", 4, "1gbit") is None, "none")


def test_calibrated_flags(sv):
    calibration = dict(latency_us=30.0, bandwidth_gbps=5.0, reduce_gbs=0, comm_cpu_gbs=1.5,
                       shared_cores=2)
    wire = ["--latency_us=30.0", "--bandwidth_gbps=5.0", "--reduce_gbs=0"]
    check(sv.calibrated_flags(calibration, cpu=False) == wire, "wire only")
    # A calibration without the curve: the largest allreduce's rate at every size.
    check(sv.calibrated_flags(calibration) == wire + ["--comm_cpu_gbs=1.5", "--shared_cores=2"],
          "single rate")
    # With it, the curve instead, sizes as whole bytes.
    calibration["comm_cpu_curve"] = [[65536, 0.1], [16777216.0, 1.5]]
    check(sv.calibrated_flags(calibration) ==
          wire + ["--comm_cpu_curve=65536:0.1,16777216:1.5", "--shared_cores=2"],
          f"curve: {sv.calibrated_flags(calibration)}")
    # A calibration that kept only its ping-pong points: the rate by size from 64 KB up, each
    # message's time beyond alpha (30 us) per byte: 65536 bytes in 30 + 524.288 us is
    # 1 Gbit/s; 1 MB in 30 + 4194.304 us 2 Gbit/s; one no slower than alpha the largest rate.
    calibration["ping_pong"] = [[8, 30e-6], [65536, 554.288e-6], [1048576, 4224.304e-6],
                                [4194304, 20e-6]]
    curve = sv.bandwidth_curve(calibration)
    check([size for size, _ in curve] == [65536, 1048576, 4194304], f"curve sizes: {curve}")
    check(abs(curve[0][1] - 1) < 1e-9 and abs(curve[1][1] - 2) < 1e-9 and curve[2][1] == 1e6,
          f"curve rates: {curve}")
    check("--bandwidth_curve=65536:1,1048576:2,4194304:1e+06" in
          sv.calibrated_flags(calibration, cpu=False),
          f"curve flag: {sv.calibrated_flags(calibration, cpu=False)}")
    # One that wrote its curve and broadcast factor (since 2026-11-26 23:00) is taken as it is.
    calibration.update(bandwidth_curve=[[65536, 3.0]], broadcast_factor=0.7)
    check(sv.calibrated_flags(calibration, cpu=False) ==
          wire + ["--bandwidth_curve=65536:3", "--broadcast_factor=0.7"],
          f"written curve: {sv.calibrated_flags(calibration, cpu=False)}")


def test_lockstep(source):
    """cluster_scaling's iteration lengths, the lockstep ceiling's input, from a timeline."""
    import cluster_scaling
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "timeline.json")
        updates = [dict(ph="X", pid=0, cat="update", ts=ts, dur=1000)
                   for ts in (0, 10000, 30000, 40000)]
        with open(path, "w") as f:
            json.dump(dict(traceEvents=updates), f)
        # One warm-up iteration; three measured, ending at 11, 31 and 41 ms.
        lengths = cluster_scaling.iteration_ms(path, 1, 3)
        check(lengths == [10.0, 20.0, 10.0], f"iteration lengths {lengths}")
        check(abs(cluster_scaling.analyse(path, 1, 3)["ms"] - 40.0 / 3) < 1e-9, "mean")


def test_table_only(sv_path, source, build):
    doppio = os.path.join(build, "tools", "doppio")
    with tempfile.TemporaryDirectory() as scratch:
        times = os.path.join(scratch, "lenet_time.json")
        subprocess.run([doppio, "time", f"--model={source}/models/lenet/train_val.prototxt",
                        "--batch=64", "--input_shape=1,28,28", "--iterations=2",
                        f"--json={times}"], check=True, capture_output=True,
                       env=dict(os.environ, GLOG_minloglevel="2"))
        with open(times) as f:
            time_json = f.read()
        calibration = dict(latency_us=50.0, bandwidth_gbps=1.0, reduce_gbs=1.0,
                           comm_cpu_gbs=0.5, shared_cores=2)
        config = "lenet 2 1gbit overlap 25.0"
        entries = [("time lenet", time_json), ("calibration 2 1gbit", calibration),
                   (f"ceiling {config} #0", dict(ms=30.0, lockstep_ms=31.0, load=1.0)),
                   (f"train {config} #0", run(35.0, 12.0, 4.0, 1.0)),
                   (f"ceiling {config} #1", dict(ms=21.0, lockstep_ms=24.0, load=1.5)),
                   (f"train {config} #1", run(50.0, 20.0, 9.0, 1.5))]
        results = os.path.join(scratch, "runs.jsonl")
        with open(results, "w") as f:
            for key, value in entries:
                f.write(json.dumps(dict(key=key, value=value)) + "\n")
        tmp = os.path.join(scratch, "tmp")
        os.mkdir(tmp)
        table = subprocess.run(
            [sys.executable, sv_path, "--build", build, "--models", "lenet", "--hosts", "2",
             "--rates", "1gbit", "--syncs", "overlap", "--buckets", "25", "--repeats", "2",
             "--results", results, "--table-only"],
            env=dict(os.environ, TMPDIR=tmp), capture_output=True, text=True)
        check(table.returncode == 0, f"--table-only failed:\n{table.stderr}")
        check(os.listdir(tmp) == [], f"--table-only left {os.listdir(tmp)} in TMPDIR")
        rows = [line for line in table.stdout.splitlines() if line.startswith("| lenet")]
        check(len(rows) == 1, f"one row expected:\n{table.stdout}")
        cells = [c.strip() for c in rows[0].strip("|").split("|")]
        # best, median (of 35 and 50), comm % of the best, its compute, ceiling best, median,
        # lockstep ceiling best.
        check(cells[5:12] == ["35.0", "42.5", "34", "31.0", "21.0", "25.5", "24.0"],
              f"cells {cells}")
        # The calibrated predictions are doppio scale's with the fastest ceiling, and the
        # fastest lockstep ceiling, as compute: never the run's figures.
        for compute, column in (("21.0", 12), ("24.0", 18)):
            plan = os.path.join(scratch, "plan.json")
            subprocess.run([doppio, "scale", f"--model={source}/models/lenet/train_val.prototxt",
                            "--batch=64", "--input_shape=1,28,28", "--ranks=2",
                            f"--time_json={times}", f"--compute_ms={compute}", f"--json={plan}",
                            "--latency_us=50.0", "--bandwidth_gbps=1.0", "--reduce_gbs=1.0",
                            "--comm_cpu_gbs=0.5", "--shared_cores=2"], check=True,
                           capture_output=True, env=dict(os.environ, GLOG_minloglevel="2"))
            with open(plan) as f:
                expected = next(p["ms_per_iter"] for p in json.load(f)["plans"]
                                if p["sync"] == "overlap" and p["bucket_mb"] == 25.0)
            check(cells[column] == f"{expected:.1f}",
                  f"column {column}: {cells[column]}, expected {expected:.1f}")
            check(cells[column + 1] == f"{100 * (expected / 35.0 - 1):+.0f}%",
                  f"error {cells[column + 1]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.source, "bench"))
    import scale_validation as sv
    test_summary(sv)
    test_distinct(sv)
    test_verdict(sv)
    test_calibrated_flags(sv)
    test_calibration_choice(sv)
    test_lockstep(args.source)
    test_table_only(os.path.join(args.source, "bench", "scale_validation.py"), args.source,
                    args.build)
    print("scale_validation_test: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
