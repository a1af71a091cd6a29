#!/usr/bin/env python3
"""Multi-host tests of `doppio train` on a cluster of network namespaces.

Each case makes its own cluster with scripts/cluster.sh (hosts are network namespaces joined
by a bridge; Open MPI runs over TCP between them), builds its own inputs (a generated
MNIST-sized LMDB, LeNet prototxts written here), and removes the cluster again, also when it
fails. Cases:

  script               cluster.sh itself: every rank of `run -np 4` on its own host (hostname,
                       network namespace, address), up is idempotent and reshapes, links
                       are shaped and go down, down leaves nothing
  equivalence_2hosts   LeNet on 2 hosts, one rank each, for every --sync mode, ends with the
                       weights of one process with the same global batch
  equivalence_4hosts   the same on 4 hosts, over links shaped to 1 Gbit/s
  link_failure         host 1's link goes down mid-run: the job ends non-zero within
                       --comm_timeout plus a few seconds, naming the host or rank lost, and
                       nothing is left running in any namespace
  host_failure         the rank on host 1 is SIGKILLed mid-run, then (second job) every
                       process of host 1: the same expectations
  resume_other_hosts   a snapshot taken on 2 hosts resumes on 4 hosts, and in one process,
                       ending with the weights of one process that did the same

Exit codes: 0 passed, 1 failed, 77 skipped (the machine cannot make namespaces: not root, no
CAP_NET_ADMIN, no iproute2 or Open MPI); the reason is printed.

    tests/cluster/cluster_test.py CASE --source SRC --build BUILD [--deadline SECONDS] [--keep]
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
# One-rank reference and cluster runs use the same global batch.
GLOBAL_BATCH = 32
TEST_BATCH = 50


class Failure(Exception):
    pass


class DeadlineReached(Exception):
    pass


def log(message):
    print(f"[cluster_test {time.strftime('%H:%M:%S')}] {message}", flush=True)


def check(condition, message):
    if not condition:
        raise Failure(message)


def skip_reason():
    """Why this machine cannot run the cluster tests, or None when it can."""
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("unshare", "util-linux"),
                          ("mpirun", "openmpi-bin")):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install {package})"
    probe = f"dpcprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return ("`ip netns add` fails here (" + made.stderr.strip() +
                "): the machine does not allow network namespaces")
    try:
        inside = subprocess.run(["ip", "netns", "exec", probe, "unshare", "--uts", "true"],
                                capture_output=True, text=True)
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if inside.returncode != 0:
        return ("commands cannot run inside a network namespace here (`ip netns exec` with "
                "`unshare --uts`: " + inside.stderr.strip() + ")")
    return None


class Cluster:
    """scripts/cluster.sh for one named cluster."""

    def __init__(self, source, name):
        self.script = os.path.join(source, "scripts", "cluster.sh")
        self.env = dict(os.environ, DOPPIO_CLUSTER=name)
        self.name = name

    def _call(self, *args, check_rc=True):
        result = subprocess.run([self.script, *args], env=self.env, capture_output=True,
                                text=True)
        if check_rc and result.returncode != 0:
            raise Failure(f"cluster.sh {' '.join(args)} failed ({result.returncode}): "
                          f"{result.stdout}{result.stderr}")
        return result

    def up(self, hosts, rate="unlimited"):
        result = self._call("up", str(hosts), "--rate", rate)
        log(result.stderr.strip())

    def down(self):
        result = self._call("down", check_rc=False)
        if result.stderr.strip():
            log(result.stderr.strip())
        return result.returncode == 0

    def link(self, host, state):
        log(self._call("link", str(host), state).stderr.strip())

    def pids(self):
        """[(namespace, pid, command line)] of the processes running inside the cluster."""
        result = self._call("pids", check_rc=False)
        found = []
        for line in result.stdout.splitlines():
            parts = line.split(" ", 2)
            if len(parts) >= 2:
                found.append((parts[0], int(parts[1]), parts[2] if len(parts) > 2 else ""))
        return found

    def namespaces(self):
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return [l.split()[0] for l in out.splitlines()
                if re.match(rf"^{self.name}-(h\d+|sw)\b", l)]

    def run(self, args, env):
        """Starts `cluster.sh run ARGS`: mpirun inside host 0."""
        return Job([self.script, "run", *args], dict(env, DOPPIO_CLUSTER=self.name))


class Job:
    """A command whose output (stdout and stderr together) is collected line by line."""

    # Every job started, so that a case that gives up kills what still runs.
    started_jobs = []

    def __init__(self, argv, env):
        Job.started_jobs.append(self)
        self.argv = argv
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     start_new_session=True)
        self.lines = []
        self.times = []
        self.iteration = -1
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            match = re.search(r"\] Iteration (\d+),", line)
            with self.changed:
                self.lines.append(line)
                self.times.append(time.monotonic())
                if match:
                    self.iteration = max(self.iteration, int(match.group(1)))
                self.changed.notify_all()
        with self.changed:
            self.changed.notify_all()

    def output(self):
        with self.changed:
            return "".join(self.lines)

    def lines_since(self, moment):
        with self.changed:
            return [l for l, t in zip(self.lines, self.times) if t >= moment]

    def wait_iteration(self, iteration, timeout):
        """Waits until rank 0 has logged `iteration`; False if the job ended or time ran out."""
        end = time.monotonic() + timeout
        with self.changed:
            while self.iteration < iteration:
                if self.proc.poll() is not None or time.monotonic() > end:
                    return False
                self.changed.wait(0.05)
        return True

    def wait(self, timeout):
        """Exit status, or None if the job is still running after `timeout` seconds."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self.reader.join(5)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.reader.join(5)

    def tail(self, lines=40):
        return "".join(self.output().splitlines(keepends=True)[-lines:])


class Case:
    def __init__(self, args):
        self.source = os.path.abspath(args.source)
        self.build = os.path.abspath(args.build)
        self.doppio = os.path.join(self.build, "tools", "doppio")
        self.helper = os.path.join(self.build, "tests", "cluster", "doppio_cluster_helper")
        self.keep = args.keep
        root = os.path.join(self.build, "tests", "cluster")
        os.makedirs(root, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix=f"{args.case}.", dir=root)
        # One BLAS thread per rank (the hosts share the machine's cores), logs on stderr
        # only (no glog files in /tmp).
        self.env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                        GLOG_logtostderr="1")
        self.clusters = []
        for path in (self.doppio, self.helper):
            check(os.access(path, os.X_OK), f"{path} not built")

    def cluster(self, name):
        cluster = Cluster(self.source, name)
        cluster.down()  # what a killed earlier run may have left
        self.clusters.append(cluster)
        return cluster

    def cleanup(self):
        ok = True
        for job in Job.started_jobs:
            job.kill()
        for cluster in self.clusters:
            ok = cluster.down() and ok
            left = cluster.namespaces()
            if left:
                log(f"namespaces left after down: {left}")
                ok = False
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            log(f"kept {self.work}")
        return ok

    # Inputs -------------------------------------------------------------------------------

    def make_data(self, train=2048, test=400):
        data = os.path.join(self.work, "data")
        made = subprocess.run([self.helper, "make-data", data, str(train), str(test)],
                              capture_output=True, text=True)
        check(made.returncode == 0, f"make-data failed: {made.stdout}{made.stderr}")
        return data

    def write_net(self, data, batch):
        """LeNet (models/lenet/train_val.prototxt) on the generated data, `batch` per rank."""
        with open(os.path.join(self.source, "models", "lenet", "train_val.prototxt")) as f:
            text = f.read()
        text = text.replace('"data/mnist/mnist_train_lmdb"', f'"{data}/train_lmdb"')
        text = text.replace('"data/mnist/mnist_test_lmdb"', f'"{data}/test_lmdb"')
        text, train_count = re.subn(r"batch_size: 64\b", f"batch_size: {batch}", text)
        text, test_count = re.subn(r"batch_size: 100\b", f"batch_size: {TEST_BATCH}", text)
        check(train_count == 1 and test_count == 1,
              "models/lenet/train_val.prototxt changed: no train batch_size 64 / test 100")
        path = os.path.join(self.work, f"lenet_b{batch}.prototxt")
        with open(path, "w") as f:
            f.write(text)
        return path

    def write_solver(self, tag, net, max_iter, snapshot_prefix, extra=""):
        path = os.path.join(self.work, f"solver_{tag}.prototxt")
        with open(path, "w") as f:
            f.write(f"""net: "{net}"
test_iter: 4
test_interval: 1000000
test_initialization: false
base_lr: 0.01
momentum: 0.9
weight_decay: 0.0005
lr_policy: "inv"
gamma: 0.0001
power: 0.75
display: 1
max_iter: {max_iter}
snapshot_prefix: "{snapshot_prefix}"
solver_mode: CPU
random_seed: 1701
{extra}""")
        return path

    # Runs ---------------------------------------------------------------------------------

    def train_single(self, solver, flags=(), timeout=60):
        """`doppio train` as one process, outside the cluster: the reference."""
        job = Job([self.doppio, "train", f"--solver={solver}", *flags], self.env)
        rc = job.wait(timeout)
        if rc is None:
            job.kill()
        check(rc == 0, f"one-process training failed ({rc}):\n{job.tail()}")
        return job.output()

    def train_cluster(self, cluster, solver, flags=(), timeout=90, mpirun_args=()):
        job = cluster.run([*mpirun_args, self.doppio, "train", f"--solver={solver}", *flags],
                          self.env)
        rc = job.wait(timeout)
        if rc is None:
            job.kill()
        check(rc == 0, f"training on cluster {cluster.name} failed ({rc}) after "
                       f"{time.monotonic() - job.started:.1f} s:\n{job.tail()}")
        return job.output()

    def compare(self, actual, expected, what):
        result = subprocess.run([self.helper, "compare", actual, expected], capture_output=True,
                                text=True)
        summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
        check(result.returncode == 0,
              f"{what}: the weights differ from the one-process run:\n{result.stdout}"
              f"{result.stderr}")
        log(f"{what}: same weights as one process ({summary.replace('compare: ', '')})")

    def expect_nothing_left(self, cluster, grace=5.0):
        """No process runs inside the cluster `grace` seconds after the job ended."""
        end = time.monotonic() + grace
        while True:
            left = cluster.pids()
            if not left or time.monotonic() > end:
                break
            time.sleep(0.1)
        check(not left, "processes left running inside the cluster after the job ended:\n" +
              "\n".join(f"  {ns} pid {pid}: {cmd}" for ns, pid, cmd in left))
        log("no process left in any namespace of the cluster")


# Cases ------------------------------------------------------------------------------------

ITERATIONS = 12


def reference_run(case, data, tag, max_iter=ITERATIONS):
    """One process, batch GLOBAL_BATCH: the weights every cluster run must end with."""
    out = os.path.join(case.work, f"single_{tag}")
    solver = case.write_solver(f"single_{tag}", case.write_net(data, GLOBAL_BATCH), max_iter, out)
    case.train_single(solver)
    path = f"{out}_iter_{max_iter}.caffemodel"
    check(os.path.exists(path), f"the one-process run wrote no {path}")
    return path


def check_timeline(path, hosts):
    """The --timeline file is a Chrome trace with every host's rank and its communication."""
    check(os.path.exists(path), f"--timeline wrote no {path}")
    with open(path) as f:
        try:
            trace = json.load(f)
        except ValueError as error:
            raise Failure(f"{path} is not JSON: {error}")
    spans = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    ranks = {e.get("pid") for e in spans}
    check(ranks == set(range(hosts)), f"{path}: spans of ranks {sorted(ranks)}, not 0..{hosts - 1}")
    for rank in range(hosts):
        check(any(e["pid"] == rank and e.get("cat") == "communication" for e in spans),
              f"{path}: rank {rank} has no communication span")
    log(f"timeline {os.path.basename(path)}: {len(spans)} spans from {hosts} ranks")


def equivalence(case, hosts, rate, runs):
    data = case.make_data()
    reference = reference_run(case, data, "ref")
    cluster = case.cluster(f"dteq{hosts}")
    cluster.up(hosts, rate)
    net = case.write_net(data, GLOBAL_BATCH // hosts)
    for number, (tag, flags) in enumerate(runs):
        out = os.path.join(case.work, f"hosts{hosts}_{tag}")
        solver = case.write_solver(f"{hosts}_{tag}", net, ITERATIONS, out)
        timeline = os.path.join(case.work, f"hosts{hosts}_{tag}.json")
        # The first run also writes a timeline (it must not change the weights).
        extra = [f"--timeline={timeline}"] if number == 0 else []
        start = time.monotonic()
        output = case.train_cluster(cluster, solver, ["--comm_timeout=60", *flags, *extra])
        if extra:
            check_timeline(timeline, hosts)
        log(f"{hosts} hosts {' '.join(flags) or '(defaults)'}: {ITERATIONS} iterations in "
            f"{time.monotonic() - start:.1f} s")
        # Every rank on its own node (its own network stack), the global batch as the reference.
        check(re.search(rf"\b{hosts} ranks, 1 on this node", output),
              f"the log does not say '{hosts} ranks, 1 on this node':\n{output[-3000:]}")
        check(re.search(rf"global batch {GLOBAL_BATCH}\b", output),
              f"the log does not state the global batch {GLOBAL_BATCH}")
        case.compare(f"{out}_iter_{ITERATIONS}.caffemodel", reference,
                     f"{hosts} hosts, {' '.join(flags) or 'defaults'}")


def case_equivalence_2hosts(case):
    equivalence(case, 2, "unlimited", [
        ("overlap", ["--sync=overlap"]),
        ("reduce_bcast", ["--sync=reduce_bcast"]),
        ("blocking", ["--sync=blocking"]),
    ])


def case_equivalence_4hosts(case):
    equivalence(case, 4, "1gbit", [
        ("overlap_small_buckets", ["--sync=overlap", "--bucket_mb=0.1"]),
        ("reduce_bcast", ["--sync=reduce_bcast"]),
    ])


COMM_TIMEOUT = 5
# The job must end within --comm_timeout plus this much.
SLACK = 10
FAIL_AT = 15


def failure_job(case, cluster, hosts, data):
    net = case.write_net(data, 16)
    out = os.path.join(case.work, "long")
    solver = case.write_solver("long", net, 100000, out)
    job = cluster.run([case.doppio, "train", f"--solver={solver}",
                       f"--comm_timeout={COMM_TIMEOUT}"], case.env)
    if not job.wait_iteration(FAIL_AT, 60):
        job.kill()
        raise Failure(f"the job did not reach iteration {FAIL_AT}:\n{job.tail()}")
    return job


def expect_job_ends(case, cluster, job, failed_at, names):
    """The job ends non-zero within COMM_TIMEOUT + SLACK s, naming one of `names`."""
    rc = job.wait(COMM_TIMEOUT + SLACK + 20)
    took = time.monotonic() - failed_at
    if rc is None:
        job.kill()
        raise Failure(f"the job still runs {took:.1f} s after the failure:\n{job.tail()}")
    output = job.output()
    log(f"the job ended with exit code {rc} {took:.1f} s after the failure")
    check(rc != 0, f"the job ended with exit code 0 after a failure:\n{job.tail()}")
    check(took <= COMM_TIMEOUT + SLACK,
          f"the job took {took:.1f} s to end, more than --comm_timeout={COMM_TIMEOUT} + {SLACK} s")
    # What was said after the failure, leaving out rank 0's per-iteration statistics.
    said = [l.rstrip() for l in job.lines_since(failed_at) if "] Iteration " not in l]
    naming = [l for l in said if any(re.search(n, l) for n in names)]
    check(naming, f"no message names the lost host or rank ({' or '.join(names)}):\n" +
          "\n".join(said[-60:]))
    for line in naming[:4]:
        log(f"  says: {line.strip()[:300]}")
    case.expect_nothing_left(cluster)


def lost_names(cluster, host):
    return [rf"\brank {host}\b", rf"\b10\.213\.7\.{host + 1}\b", rf"\b{cluster.name}-h{host}\b"]


def case_link_failure(case):
    data = case.make_data()
    cluster = case.cluster("dtlink")
    cluster.up(3)
    job = failure_job(case, cluster, 3, data)
    log(f"rank 0 at iteration {job.iteration}: pulling host 1's link")
    failed_at = time.monotonic()
    cluster.link(1, "down")
    expect_job_ends(case, cluster, job, failed_at, lost_names(cluster, 1))


def doppio_pid(cluster, host):
    for ns, pid, cmd in cluster.pids():
        if ns == f"{cluster.name}-h{host}" and " train " in f" {cmd} " and "doppio" in cmd:
            return pid
    return None


def case_host_failure(case):
    data = case.make_data()
    cluster = case.cluster("dthost")
    cluster.up(3)
    # 1. The rank on host 1 dies (SIGKILL).
    job = failure_job(case, cluster, 3, data)
    pid = doppio_pid(cluster, 1)
    check(pid is not None, f"no doppio process found on host 1: {cluster.pids()}")
    log(f"rank 0 at iteration {job.iteration}: SIGKILL to the rank on host 1 (pid {pid})")
    failed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    expect_job_ends(case, cluster, job, failed_at, lost_names(cluster, 1))
    # 2. The whole host dies: its Open MPI daemon and its rank, at once.
    job = failure_job(case, cluster, 3, data)
    victims = [pid for ns, pid, _ in cluster.pids() if ns == f"{cluster.name}-h1"]
    check(victims, "no process found on host 1")
    log(f"rank 0 at iteration {job.iteration}: SIGKILL to every process of host 1 {victims}")
    failed_at = time.monotonic()
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    expect_job_ends(case, cluster, job, failed_at, lost_names(cluster, 1))


def case_resume_other_hosts(case):
    data = case.make_data()
    half = ITERATIONS // 2
    # Reference: one process trains `half` iterations, snapshots, resumes to ITERATIONS.
    single = os.path.join(case.work, "single")
    net_single = case.write_net(data, GLOBAL_BATCH)
    case.train_single(case.write_solver("single_a", net_single, half, single))
    case.train_single(case.write_solver("single_b", net_single, ITERATIONS, single),
                      [f"--snapshot={single}_iter_{half}.solverstate"])
    cluster = case.cluster("dtresume")
    cluster.up(4)
    # 2 ranks (on hosts 0 and 1) for the first half.
    two = os.path.join(case.work, "two")
    case.train_cluster(cluster, case.write_solver("two", case.write_net(data, GLOBAL_BATCH // 2),
                                                  half, two), mpirun_args=["-np", "2"])
    case.compare(f"{two}_iter_{half}.caffemodel", f"{single}_iter_{half}.caffemodel",
                 f"2 hosts, iteration {half} (snapshot)")
    check(os.path.exists(f"{two}_iter_{half}.solverstate"), "2 hosts wrote no .solverstate")
    # Resumed on 4 hosts with the same global batch.
    four = os.path.join(case.work, "four")
    output = case.train_cluster(
        cluster,
        case.write_solver("four", case.write_net(data, GLOBAL_BATCH // 4), ITERATIONS, four),
        [f"--snapshot={two}_iter_{half}.solverstate"])
    check(re.search(r"\b4 ranks, 1 on this node", output), "the resumed job is not on 4 hosts")
    case.compare(f"{four}_iter_{ITERATIONS}.caffemodel", f"{single}_iter_{ITERATIONS}.caffemodel",
                 f"snapshot of 2 hosts resumed on 4 hosts, iteration {ITERATIONS}")
    # And by one process without MPI.
    one = os.path.join(case.work, "one")
    case.train_single(case.write_solver("one", net_single, ITERATIONS, one),
                      [f"--snapshot={two}_iter_{half}.solverstate"])
    case.compare(f"{one}_iter_{ITERATIONS}.caffemodel", f"{single}_iter_{ITERATIONS}.caffemodel",
                 f"snapshot of 2 hosts resumed by one process, iteration {ITERATIONS}")


def case_script(case):
    """scripts/cluster.sh itself: hosts, addresses, reshaping, links, run and down."""
    cluster = case.cluster("dtscript")
    cluster.up(4)
    cluster.up(4)  # idempotent
    check(len(cluster.namespaces()) == 5, f"4 hosts and a switch expected: {cluster.namespaces()}")
    probe = ('echo "rank=$OMPI_COMM_WORLD_RANK host=$(hostname) '
             'net=$(readlink /proc/self/ns/net) $(ip -o -4 addr show dev eth0) '
             'cpus=$(sed -n "s/^Cpus_allowed_list:\\s*//p" /proc/self/status)"')
    job = cluster.run(["-np", "4", "sh", "-c", probe], case.env)
    rc = job.wait(60)
    check(rc == 0, f"cluster.sh run -np 4 failed ({rc}):\n{job.tail()}")
    lines = [l for l in job.output().splitlines() if l.startswith("rank=")]
    check(len(lines) == 4, f"4 ranks expected:\n{job.output()}")
    by_rank = {}
    for line in lines:
        rank = int(re.search(r"rank=(\d+)", line).group(1))
        by_rank[rank] = (re.search(r"host=(\S+)", line).group(1),
                         re.search(r"net=(\S+)", line).group(1),
                         re.search(r"inet (\S+)", line).group(1))
        log(f"  rank {rank}: hostname {by_rank[rank][0]}, {by_rank[rank][1]}, "
            f"eth0 {by_rank[rank][2]}")
    for rank in range(4):
        check(by_rank[rank] == (f"dtscript-h{rank}", by_rank[rank][1], f"10.213.7.{rank + 1}/24"),
              f"rank {rank} is not alone on host {rank}: {by_rank[rank]}")
    check(len({v[1] for v in by_rank.values()}) == 4, "the ranks share a network namespace")
    # The hosts share the machine's cores: no host's daemon may bind its rank to "its" core 0
    # (every host's would be the same core). Open MPI binds to a core with 2 ranks or fewer.
    own = re.search(r"Cpus_allowed_list:\s*(\S+)", open("/proc/self/status").read()).group(1)
    pair = cluster.run(["-np", "2", "sh", "-c", probe], case.env)
    rc = pair.wait(60)
    check(rc == 0, f"cluster.sh run -np 2 failed ({rc}):\n{pair.tail()}")
    cpus = [re.search(r"cpus=(\S*)", line).group(1)
            for line in lines + pair.output().splitlines() if line.startswith("rank=")]
    check(len(cpus) == 6 and all(c == own for c in cpus),
          f"ranks bound to cores {cpus}, the machine has {own}")
    check(by_rank[0][1] != os.readlink("/proc/self/ns/net"),
          "rank 0 runs in the machine's own network namespace")
    # Nothing of the cluster in the machine's own namespace.
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    check("dtscript" not in links and not re.search(r"\bh\d+@", links),
          "cluster interfaces in the root namespace")
    # Shaped links, reshaping to fewer hosts, a link down and up.
    cluster.up(2, "100mbit")
    check(len(cluster.namespaces()) == 3, f"2 hosts and a switch expected: {cluster.namespaces()}")
    qdisc = subprocess.run(["tc", "-n", "dtscript-h1", "qdisc", "show", "dev", "eth0"],
                           capture_output=True, text=True).stdout
    check("tbf" in qdisc and "100Mbit" in qdisc, f"no 100 Mbit/s tbf on host 1: {qdisc}")
    cluster.link(1, "down")
    reach = subprocess.run(["ip", "netns", "exec", "dtscript-h0", "timeout", "2", "bash", "-c",
                            "exec 3<>/dev/tcp/10.213.7.2/9"], capture_output=True, text=True)
    check("refused" not in reach.stderr, "host 1 answers with its link down")
    cluster.link(1, "up")
    check(cluster.down(), "cluster.sh down failed")
    check(not cluster.namespaces(), f"namespaces left: {cluster.namespaces()}")
    state = os.path.join(os.environ.get("TMPDIR", "/tmp"), "doppio-cluster-dtscript")
    check(not os.path.exists(state), f"{state} left behind")


CASES = {
    "script": case_script,
    "equivalence_2hosts": case_equivalence_2hosts,
    "equivalence_4hosts": case_equivalence_4hosts,
    "link_failure": case_link_failure,
    "host_failure": case_host_failure,
    "resume_other_hosts": case_resume_other_hosts,
}


def parse_arguments(cases, doc):
    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=sorted(cases))
    parser.add_argument("--source", required=True, help="the source tree")
    parser.add_argument("--build", required=True, help="the build tree (tools/doppio)")
    parser.add_argument("--deadline", type=float, default=0,
                        help="ctest's TIMEOUT: the case gives up (and cleans up) before it")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    return parser.parse_args()


def run_case(args, cases, case_class=None, why_skip=skip_reason):
    """Runs one case within its deadline, removes its clusters; the exit status."""
    reason = why_skip()
    if reason is not None:
        print(f"cluster test {args.case} skipped: {reason}", flush=True)
        return SKIP

    def on_deadline(signum, frame):
        raise DeadlineReached(
            f"gave up after {args.deadline - 8:.0f} s (ctest's TIMEOUT is {args.deadline:.0f} s)")

    def on_term(signum, frame):
        raise DeadlineReached(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    if args.deadline > 10:
        signal.signal(signal.SIGALRM, on_deadline)
        signal.alarm(int(args.deadline - 8))

    case = (case_class or Case)(args)
    start = time.monotonic()
    status = 0
    try:
        cases[args.case](case)
    except (Failure, DeadlineReached, subprocess.CalledProcessError) as error:
        print(f"FAILED: {args.case}: {error}", flush=True)
        status = 1
    finally:
        signal.alarm(0)
        if not case.cleanup():
            print(f"FAILED: {args.case}: the cluster was not removed completely", flush=True)
            status = 1
    log(f"{args.case}: {'passed' if status == 0 else 'FAILED'} in "
        f"{time.monotonic() - start:.1f} s")
    return status


def main():
    return run_case(parse_arguments(CASES, __doc__), CASES)


if __name__ == "__main__":
    sys.exit(main())
