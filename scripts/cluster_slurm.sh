# A real Slurm over the hosts of scripts/cluster.sh (`up N --slurm`): sourced by cluster.sh,
# whose NAME, SUBNET, STATE, SWITCH and helpers (host_ns, host_ip, say, die) it uses.
#
# One munged for the whole cluster (its socket is a file, which every namespace sees), one
# slurmctld in the switch's namespace at <subnet>.254, one slurmd per host under the host's
# own name. Everything (configuration, key, spools, state, logs, pid files) lives under
# $STATE/slurm, so `down` removes it all. What is configured, and why, is in docs/slurm.md.

SLURM_PACKAGES=(slurmctld slurmd slurm-client munge)
SLURM_DIR="$STATE/slurm"
SLURM_CONF_FILE="$SLURM_DIR/slurm.conf"
MUNGE_SOCKET="$SLURM_DIR/munge/munge.socket"
CONTROLLER_IP="$SUBNET.254"

slurm_install() {
  local missing=()
  for package in "${SLURM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$package")
  done
  ((${#missing[@]} == 0)) && return 0
  say "--slurm: Slurm is not installed (missing: ${missing[*]}); installing it"
  apt-get update -q >&2 || die "--slurm: apt-get update failed; install ${missing[*]} yourself"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
    die "--slurm: could not install ${missing[*]} (apt-get install ${missing[*]})"
}

# Processes of a Slurm daemon, found by its pid file.
pid_of() {
  local file=$1 pid
  [[ -f "$file" ]] || return 1
  pid=$(cat "$file" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

write_slurm_conf() {
  local n=$1 nodes="" i
  for ((i = 0; i < n; i++)); do
    nodes+="NodeName=$(host_ns "$i") NodeAddr=$(host_ip "$i") CPUs=1 State=UNKNOWN"$'\n'
  done
  cat >"$SLURM_CONF_FILE.tmp" <<EOF
# Slurm of the cluster "$NAME" (written by scripts/cluster.sh up --slurm; do not edit).
ClusterName=$NAME
SlurmctldHost=$SWITCH($CONTROLLER_IP)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
# A container has neither systemd nor a cgroup tree of its own: processes are tracked by
# their parents, and tasks are not confined.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
# Whole hosts: one task per host is one rank per host.
SelectType=select/linear
SchedulerType=sched/builtin
StateSaveLocation=$SLURM_DIR/ctld
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdSpoolDir=$SLURM_DIR/spool-%n
SlurmdPidFile=$SLURM_DIR/slurmd-%n.pid
SlurmdLogFile=$SLURM_DIR/slurmd-%n.log
# Per host: srun --mpi=pmix makes its client directories there, and two hosts making the
# same one in the machine's shared /tmp fail the launch ("Unspecified error").
TmpFS=$SLURM_DIR/tmp-%n
# A host whose link is down is DOWN after 10 s, and back when it answers again; a cancelled
# or requeued job's processes get 20 s between SIGTERM and SIGKILL to write their snapshot.
SlurmdTimeout=10
ReturnToService=2
KillWait=20
MessageTimeout=5
JobRequeue=1
MinJobAge=600
$nodes
PartitionName=hosts Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$SLURM_CONF_FILE.tmp" "$SLURM_CONF_FILE"
}

# A daemon inside namespace NS under hostname NS. nsenter, not `ip netns exec`: the latter
# mounts a fresh /sys without the cgroup tree, where Slurm 22.05's slurmd, which loads its
# cgroup plugin whatever slurm.conf says, will not start.
in_host() {
  local ns=$1
  shift
  # shellcheck disable=SC2016  # expanded by the inner shell
  nsenter --net="/run/netns/$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$ns" "$@"
}

slurm_up() {
  local n=$1 i
  slurm_install
  slurm_down_daemons
  mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/ctld"
  chmod 700 "$SLURM_DIR" "$SLURM_DIR/munge"
  [[ -f "$SLURM_DIR/munge/munge.key" ]] ||
    (umask 077 && head -c 1024 /dev/urandom >"$SLURM_DIR/munge/munge.key")
  # --force: munged refuses root and a socket under /tmp otherwise; both are this cluster's.
  munged --force --key-file="$SLURM_DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$SLURM_DIR/munge/munged.pid" --log-file="$SLURM_DIR/munge/munged.log" \
    --seed-file="$SLURM_DIR/munge/munged.seed" 2>"$SLURM_DIR/munge/start.err" ||
    die "--slurm: munged did not start: $(cat "$SLURM_DIR/munge/start.err" "$SLURM_DIR/munge/munged.log" 2>/dev/null | tail -5)"
  write_slurm_conf "$n"
  ip -n "$SWITCH" -4 addr show dev br0 | grep -q "inet $CONTROLLER_IP/24" ||
    ip -n "$SWITCH" addr add "$CONTROLLER_IP/24" dev br0
  in_host "$SWITCH" slurmctld -f "$SLURM_CONF_FILE" ||
    die "--slurm: slurmctld did not start: $(tail -5 "$SLURM_DIR/slurmctld.log" 2>/dev/null)"
  for ((i = 0; i < n; i++)); do
    mkdir -p "$SLURM_DIR/tmp-$(host_ns "$i")"
    in_host "$(host_ns "$i")" slurmd -f "$SLURM_CONF_FILE" -N "$(host_ns "$i")" ||
      die "--slurm: slurmd of host $i did not start: $(tail -5 "$SLURM_DIR/slurmd-$(host_ns "$i").log" 2>/dev/null)"
  done
  # Usable when every node is idle.
  local idle=0
  for _ in $(seq 150); do
    idle=$(slurm_client "$(host_ns 0)" sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
    [[ "$idle" -eq "$n" ]] && break
    sleep 0.2
  done
  [[ "$idle" -eq "$n" ]] ||
    die "--slurm: only $idle of $n nodes became idle: $(slurm_client "$(host_ns 0)" sinfo -N 2>&1 | tail -n +1)"
  say "Slurm up: slurmctld at $CONTROLLER_IP, $n node(s) $(host_ns 0) .. $(host_ns $((n - 1))), partition 'hosts'"
}

# A Slurm client (sbatch, srun, squeue, scontrol, ...) inside host NS.
slurm_client() {
  local ns=$1
  shift
  SLURM_CONF="$SLURM_CONF_FILE" in_host "$ns" "$@"
}

# Stops every daemon this cluster's Slurm started (by their pid files), gently and then not.
slurm_down_daemons() {
  [[ -d "$SLURM_DIR" ]] || return 0
  local pids=() pid file
  for file in "$SLURM_DIR"/slurmd-*.pid "$SLURM_DIR/slurmctld.pid" "$SLURM_DIR/munge/munged.pid"; do
    pid=$(pid_of "$file") && pids+=("$pid")
  done
  ((${#pids[@]} == 0)) && return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && return 0
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
}

slurm_ready() { [[ -f "$SLURM_CONF_FILE" ]] && pid_of "$SLURM_DIR/slurmctld.pid" >/dev/null; }
