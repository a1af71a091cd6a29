#!/usr/bin/env python3
"""`doppio train` under a real Slurm, over the namespace cluster (scripts/cluster.sh up --slurm).

Every job is examples/slurm/train.sbatch as a user submits it: `doppio train --resume=auto`
launched by srun --mpi=pmix (or mpirun) on one rank per host, requeued after a signal or a lost
node. Cases:

  script        the Slurm itself: every host a node under its own name, srun and
                srun --mpi=pmix place one task per host, down stops every daemon and
                removes every file
  train         LeNet on 2 nodes to max_iter, launched by srun and by mpirun: the job
                completes and ends with the weights of one process with the same global batch
  requeue       a job requeued by `scontrol requeue` mid-run, and one signalled as at its time
                limit (--signal=B:TERM), come back, resume from their snapshot and end with
                an uninterrupted job's weights, bit for bit
  node_failure  a node's link goes down mid-job: the job ends within --comm_timeout and a few
                seconds, is requeued, and resumes on the 2 nodes left, with 2 ranks instead
                of 3

Slurm makes a requeued job eligible only 120 s later (its EligibleTime); the cases release
it at once with `scontrol update StartTime=now`, which changes nothing else.

Exit codes: 0 passed, 1 failed, 77 skipped (no namespaces here, or Slurm is not installed:
scripts/cluster.sh install-slurm).

    tests/cluster/slurm_test.py CASE --source SRC --build BUILD [--deadline SECONDS] [--keep]
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_test as ct  # noqa: E402  (the namespace cluster's harness)
from cluster_test import Failure, check, log  # noqa: E402

# The solver's snapshot interval and the iteration the interruptions wait for.
SNAPSHOT = 100
MAX_ITER = 600
INTERRUPT_AT = 200
SUBNET = "10.213.7"


def slurm_skip_reason():
    reason = ct.skip_reason()
    if reason is not None:
        return reason
    for tool in ("slurmctld", "slurmd", "munged", "sbatch"):
        if shutil.which(tool) is None:
            return (f"{tool} not found: Slurm is not installed "
                    "(scripts/cluster.sh install-slurm installs Debian's slurmctld, slurmd, "
                    "slurm-client and munge)")
    return None


class SlurmCluster(ct.Cluster):
    def up(self, hosts, rate="unlimited"):
        result = self._call("up", str(hosts), "--slurm")
        log(result.stderr.strip())

    def slurm(self, *args, check_rc=True):
        result = self._call("slurm", *args, check_rc=check_rc)
        return result.stdout

    def job(self, job_id):
        """`scontrol show job` as a dict (JobState, Restarts, NodeList, ...)."""
        text = self.slurm("scontrol", "show", "job", "-o", str(job_id), check_rc=False)
        return dict(re.findall(r"(\w+)=(\S*)", text))

    def daemons(self):
        """The Slurm and munge daemons of this cluster still running (by their command line)."""
        state = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"doppio-cluster-{self.name}")
        out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
        return [l.strip() for l in out.splitlines()
                if re.search(r"\b(slurmctld|slurmd|munged)\b", l) and state in l]


class SlurmCase(ct.Case):
    def __init__(self, args):
        super().__init__(args)
        self.sbatch = os.path.join(self.source, "examples", "slurm", "train.sbatch")
        cidr = f"{SUBNET}.0/24"
        # What the job's tasks inherit (sbatch passes the environment on): Open MPI on the
        # cluster's network only, a lost host noticed within seconds (docs/multi_node.md).
        self.env.update(
            DOPPIO=self.doppio, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
            OMPI_MCA_btl="tcp,self", OMPI_MCA_btl_tcp_if_include=cidr,
            OMPI_MCA_oob_tcp_if_include=cidr, OMPI_MCA_oob_tcp_keepalive_time="1",
            OMPI_MCA_oob_tcp_keepalive_intvl="1", OMPI_MCA_oob_tcp_keepalive_probes="3")

    def cluster(self, name):
        cluster = SlurmCluster(self.source, name)
        cluster.env.update(self.env)
        cluster.down()
        self.clusters.append(cluster)
        return cluster

    def solver(self, tag, data, batch, max_iter=MAX_ITER, extra=""):
        return self.write_solver(tag, self.write_net(data, batch), max_iter,
                                 os.path.join(self.work, tag),
                                 f"snapshot: {SNAPSHOT}\n{extra}")

    def submit(self, cluster, solver, sbatch_args=(), flags=(), launcher="srun"):
        """Submits train.sbatch; returns (job id, its output file)."""
        output = os.path.join(self.work, "job-%j.log")
        env_args = ["env", f"LAUNCHER={launcher}"]
        out = cluster.slurm(*env_args, "sbatch", "--parsable", f"--output={output}",
                            f"--chdir={self.work}", *sbatch_args, self.sbatch,
                            f"--solver={solver}", "--comm_timeout=30", *flags)
        job_id = out.strip().split(";")[0]
        check(job_id.isdigit(), f"sbatch printed no job id: {out}")
        log(f"submitted job {job_id} ({launcher}, {' '.join(sbatch_args) or 'defaults'})")
        return job_id, output.replace("%j", job_id)

    def wait_for(self, path, pattern, timeout, job=None, cluster=None):
        """Waits until the job's output has a line matching `pattern`; returns the match."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    match = re.search(pattern, f.read())
                if match:
                    return match
            time.sleep(0.1)
        state = cluster.job(job) if cluster else {}
        raise Failure(f"no '{pattern}' in {path} after {timeout} s (job state "
                      f"{state.get('JobState')}):\n{read_tail(path)}")

    def wait_done(self, cluster, job_id, timeout, release=True, lost_hosts=()):
        """Waits for the job to end; releases it when it waits out Slurm's requeue delay."""
        end = time.monotonic() + timeout
        released = set()
        while time.monotonic() < end:
            job = cluster.job(job_id)
            state = job.get("JobState")
            if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"):
                return job
            # Released early, the new run must not meet the last run's steps still ending (its
            # step 0 would be the same step as theirs): Slurm's delay is there for that.
            if (release and state == "PENDING" and job.get("Reason") == "BeginTime" and
                    job.get("Restarts") not in released and
                    not steps_running(job_id, lost_hosts)):
                released.add(job.get("Restarts"))
                cluster.slurm("scontrol", "update", f"JobId={job_id}", "StartTime=now")
                log(f"job {job_id} requeued (restart {job.get('Restarts')}): released now "
                    "instead of after Slurm's 120 s")
            time.sleep(0.2)
        raise Failure(f"job {job_id} still {cluster.job(job_id).get('JobState')} after "
                      f"{timeout} s")


def steps_running(job_id, lost_hosts=()):
    """Whether a slurmstepd of the job is still running (a step being torn down), on a host
    not in `lost_hosts` (the namespaces of hosts cut off, whose steps stay until `down`)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if not args.startswith(f"slurmstepd: [{job_id}."):
            continue
        host = subprocess.run(["ip", "netns", "identify", pid], capture_output=True,
                              text=True).stdout.strip()
        if host not in lost_hosts:
            return True
    return False


def read_tail(path, lines=60):
    if not os.path.exists(path):
        return f"({path} does not exist)"
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def expect_completed(job, job_id, output):
    check(job.get("JobState") == "COMPLETED" and job.get("ExitCode") == "0:0",
          f"job {job_id} ended {job.get('JobState')} with {job.get('ExitCode')}:\n"
          f"{read_tail(output)}")


def compare_exactly(case, actual, expected, what):
    result = subprocess.run([case.helper, "compare", actual, expected, "0", "0"],
                            capture_output=True, text=True)
    check(result.returncode == 0, f"{what}: not the same bits as the uninterrupted job:\n"
                                  f"{result.stdout}{result.stderr}")
    log(f"{what}: bit for bit the uninterrupted job's weights")


# Cases ------------------------------------------------------------------------------------

def case_script(case):
    cluster = case.cluster("dsscript")
    cluster.up(2)
    nodes = cluster.slurm("sinfo", "-h", "-N", "-o", "%N %T").split("\n")
    check(sorted(l for l in nodes if l) == ["dsscript-h0 idle", "dsscript-h1 idle"],
          f"sinfo: {nodes}")
    for launcher in (["srun"], ["srun", "--mpi=pmix"]):
        out = cluster.slurm(*launcher, "-N2", "sh", "-c",
                            'echo "$SLURM_PROCID $(hostname) $(ip -o -4 addr show dev eth0)"')
        tasks = sorted(l.split()[:2] for l in out.splitlines() if l.strip())
        check(tasks == [["0", "dsscript-h0"], ["1", "dsscript-h1"]],
              f"{' '.join(launcher)} -N2: one task per host expected:\n{out}")
        log(f"{' '.join(launcher)} -N2: task 0 on dsscript-h0, task 1 on dsscript-h1")
    # Reshaped: a third node joins.
    cluster.up(3)
    nodes = cluster.slurm("sinfo", "-h", "-N", "-t", "idle", "-o", "%N").split()
    check(len(nodes) == 3, f"3 idle nodes expected after up 3 --slurm: {nodes}")
    check(cluster.daemons(), "no Slurm daemon found by its command line")
    check(cluster.down(), "cluster.sh down failed")
    left = cluster.daemons()
    check(not left, "Slurm daemons left after down:\n" + "\n".join(left))
    state = os.path.join(os.environ.get("TMPDIR", "/tmp"), "doppio-cluster-dsscript")
    check(not os.path.exists(state), f"{state} left behind")
    log("down: no daemon, no file left")


def case_train(case):
    data = case.make_data()
    reference = ct.reference_run(case, data, "ref")
    cluster = case.cluster("dstrain")
    cluster.up(2)
    for launcher in ("srun", "mpirun"):
        solver = case.solver(launcher, data, ct.GLOBAL_BATCH // 2, max_iter=ct.ITERATIONS)
        job_id, output = case.submit(cluster, solver, launcher=launcher)
        job = case.wait_done(cluster, job_id, 90, release=False)
        expect_completed(job, job_id, output)
        text = read(output)
        check(re.search(rf"Slurm job {job_id} 'doppio-train' \(first run\), 2 nodes: "
                        r"dstrain-h\[0-1\]", text), f"the log does not name the job:\n{text}")
        check("2 ranks, 1 on this node" in text, f"not one rank per node:\n{text[-3000:]}")
        check("train.sbatch: training finished" in text, "the script did not see the end")
        case.compare(os.path.join(case.work, f"{launcher}_iter_{ct.ITERATIONS}.caffemodel"),
                     reference, f"2 nodes under Slurm, launched by {launcher}")


def case_requeue(case):
    data = case.make_data()
    cluster = case.cluster("dsrequeue")
    cluster.up(2)
    batch = ct.GLOBAL_BATCH // 2
    straight = case.solver("straight", data, batch)
    job_id, output = case.submit(cluster, straight)
    expect_completed(case.wait_done(cluster, job_id, 120, release=False), job_id, output)
    reference = os.path.join(case.work, f"straight_iter_{MAX_ITER}.caffemodel")

    # 1. `scontrol requeue`: Slurm signals every process of the job, then requeues it.
    solver = case.solver("requeued", data, batch)
    job_id, output = case.submit(cluster, solver)
    case.wait_for(output, rf"\] Iteration {INTERRUPT_AT},", 90, job_id, cluster)
    cluster.slurm("scontrol", "requeue", job_id)
    log(f"job {job_id}: scontrol requeue after iteration {INTERRUPT_AT}")
    job = case.wait_done(cluster, job_id, 150)
    expect_completed(job, job_id, output)
    text = read(output)
    check(job.get("Restarts") == "1", f"job {job_id} restarted {job.get('Restarts')} times")
    resumed = re.search(r"Resuming from (\S+_iter_(\d+)\.solverstate)", text)
    check(resumed and int(resumed.group(2)) >= INTERRUPT_AT,
          f"the requeued job did not resume from a snapshot past {INTERRUPT_AT}:\n{text[-4000:]}")
    check(re.search(rf"Slurm job {job_id} 'doppio-train' \(restart 1\)", text),
          "the second run's log does not give its restart count")
    log(f"job {job_id}: requeued, resumed from iteration {resumed.group(2)}")
    compare_exactly(case, os.path.join(case.work, f"requeued_iter_{MAX_ITER}.caffemodel"),
                    reference, "requeued by scontrol")

    # 2. The time-limit signal: --signal=B:TERM@S signals the batch script alone, which is
    #    what scancel --batch --signal=TERM does, now instead of near the limit.
    solver = case.solver("signalled", data, batch)
    job_id, output = case.submit(cluster, solver)
    case.wait_for(output, rf"\] Iteration {INTERRUPT_AT},", 90, job_id, cluster)
    cluster.slurm("scancel", "--batch", "--signal=TERM", job_id)
    log(f"job {job_id}: SIGTERM to the batch script after iteration {INTERRUPT_AT}")
    case.wait_for(output, r"train.sbatch: exit code 5: requeueing", 60, job_id, cluster)
    first_run = read(output).split("exit code 5: requeueing")[0]
    snapshots = re.findall(r"Snapshotting solver state to .*? file (\S+_iter_(\d+)\.solverstate)",
                           first_run)
    check(snapshots and "Optimization stopped early." in first_run,
          f"no snapshot after the signal:\n{first_run[-4000:]}")
    stop = snapshots[-1]
    job = case.wait_done(cluster, job_id, 150)
    expect_completed(job, job_id, output)
    text = read(output)
    check(f"Resuming from {stop[0]}" in text,
          f"the requeued job did not resume from the snapshot written at the signal "
          f"({stop[0]}):\n{text[-4000:]}")
    log(f"job {job_id}: stopped with a snapshot at iteration {stop[1]}, exit 5, "
        "requeued itself, resumed there")
    compare_exactly(case, os.path.join(case.work, f"signalled_iter_{MAX_ITER}.caffemodel"),
                    reference, "signalled as at the time limit")
    check("Requeue loop" not in text, "a requeue loop reported where there was none")


COMM_TIMEOUT = 5
SLACK = 10


def case_node_failure(case):
    data = case.make_data()
    cluster = case.cluster("dsnode")
    cluster.up(3)
    solver = case.solver("lost", data, 16, max_iter=2000)
    job_id, output = case.submit(cluster, solver, sbatch_args=["--nodes=2-3"],
                                 flags=[f"--comm_timeout={COMM_TIMEOUT}"])
    case.wait_for(output, rf"\] Iteration {INTERRUPT_AT},", 90, job_id, cluster)
    check("3 ranks, 1 on this node" in read(output), "the job did not start on 3 nodes")
    failed_at = time.monotonic()
    cluster.link(2, "down")
    # The ranks' watchdog gives up after --comm_timeout and as long again asking the others,
    # and aborts; Slurm then ends the job, which the script requeues (exit 4), or Slurm itself
    # requeues for the node's failure, whichever comes first.
    limit = 2 * COMM_TIMEOUT + SLACK
    while cluster.job(job_id).get("JobState") == "RUNNING":
        check(time.monotonic() - failed_at < limit + 30,
              f"job {job_id} still runs {limit + 30} s after the link went down:\n"
              f"{read_tail(output)}")
        time.sleep(0.2)
    took = time.monotonic() - failed_at
    log(f"job {job_id}: ended {took:.1f} s after host 2's link went down "
        f"({cluster.job(job_id).get('JobState')})")
    check(took <= limit, f"the job took {took:.1f} s to end, more than 2 x --comm_timeout="
                         f"{COMM_TIMEOUT} + {SLACK} s")
    check(re.search(r"rank 2 did not answer", read(output)),
          f"no message names the lost rank 2:\n{read_tail(output)}")
    # Slurm sees the node DOWN once its slurmd has not answered for SlurmdTimeout (10 s);
    # only then may the requeued job start, on the two nodes left.
    end = time.monotonic() + 60
    while "down" not in cluster.slurm("sinfo", "-h", "-n", "dsnode-h2", "-o", "%T"):
        check(time.monotonic() < end, "Slurm did not mark dsnode-h2 down within 60 s")
        time.sleep(0.5)
    log("Slurm marked dsnode-h2 down")
    job = case.wait_done(cluster, job_id, 180, lost_hosts=["dsnode-h2"])
    expect_completed(job, job_id, output)
    text = read(output)
    second = text[text.find("(restart 1)"):]
    check(re.search(r"\(restart 1\) on 2 node\(s\) dsnode-h\[0-1\]", text),
          f"the requeued job is not on the 2 nodes left:\n{text[-4000:]}")
    resumed = re.search(r"Resuming from \S+_iter_(\d+)\.solverstate", second)
    check(resumed and "2 ranks, 1 on this node" in second,
          f"the requeued job did not resume on 2 ranks:\n{second[-4000:]}")
    log(f"job {job_id}: resumed from iteration {resumed.group(1)} on 2 ranks, reached max_iter")
    check(os.path.exists(os.path.join(case.work, "lost_iter_2000.caffemodel")),
          "no final snapshot")
    cluster.link(2, "up")


CASES = {
    "script": case_script,
    "train": case_train,
    "requeue": case_requeue,
    "node_failure": case_node_failure,
}


def main():
    args = ct.parse_arguments(CASES, __doc__)
    return ct.run_case(args, CASES, SlurmCase, slurm_skip_reason)


if __name__ == "__main__":
    sys.exit(main())
