#!/usr/bin/env bash
# A cluster of N "hosts" on one machine, for trying and testing multi-node runs: every host is
# a Linux network namespace (its own interfaces, addresses, routes and TCP stack; its own
# hostname when a command runs through this script), joined to a switch by a veth pair. The
# switch is a bridge in a namespace of its own, so nothing is added to the machine's own
# network namespace and no route leads out of the cluster.
#
#   scripts/cluster.sh up N [--rate RATE] [--slurm]
#                                           make (or reshape) the cluster; RATE per link, e.g.
#                                           1gbit, 10gbit, 100mbit, or unlimited (the default);
#                                           --slurm: and a Slurm over the hosts (docs/slurm.md)
#   scripts/cluster.sh slurm CMD...         a Slurm command (sbatch, srun, squeue, scontrol, ...)
#                                           inside host 0
#   scripts/cluster.sh install-slurm        install Debian's Slurm and munge where missing
#   scripts/cluster.sh run [MPIRUN ARGS] CMD...   mpirun inside host 0 over the N hosts
#   scripts/cluster.sh exec H CMD...        run a command inside host H
#   scripts/cluster.sh link H down|up       pull or plug host H's cable (the switch port)
#   scripts/cluster.sh pids                 processes still running inside the cluster
#   scripts/cluster.sh status               hosts, addresses, links and rates
#   scripts/cluster.sh down                 kill what still runs inside, remove everything
#
# Environment: DOPPIO_CLUSTER names the cluster (default "doppio"; namespaces <name>-h0 ...
# <name>-h<N-1> and <name>-sw), so that several clusters can exist at once.
# DOPPIO_CLUSTER_SUBNET is the first three octets of the private /24 used inside it (default
# 10.213.7): host i is <subnet>.(i+1). Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
set -euo pipefail
shopt -s nullglob

NAME=${DOPPIO_CLUSTER:-doppio}
SUBNET=${DOPPIO_CLUSTER_SUBNET:-10.213.7}
CIDR="$SUBNET.0/24"
SWITCH="$NAME-sw"
STATE="${TMPDIR:-/tmp}/doppio-cluster-$NAME"
MAX_HOSTS=64

die() {
  echo "cluster: $*" >&2
  exit 1
}
say() { echo "cluster: $*" >&2; }

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
  exit "${1:-0}"
}

[[ "$NAME" =~ ^[a-z][a-z0-9]{0,9}$ ]] ||
  die "DOPPIO_CLUSTER='$NAME': use 1 to 10 lower-case letters and digits, starting with a letter"
[[ "$SUBNET" =~ ^10\.[0-9]{1,3}\.[0-9]{1,3}$ || "$SUBNET" =~ ^192\.168\.[0-9]{1,3}$ ]] ||
  die "DOPPIO_CLUSTER_SUBNET='$SUBNET': give the first three octets of a private /24, e.g. 10.213.7"

# shellcheck source=scripts/cluster_slurm.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster_slurm.sh"

host_ns() { echo "$NAME-h$1"; }
host_ip() { echo "$SUBNET.$(($1 + 1))"; }
in_ns() {
  local ns=$1
  shift
  ip netns exec "$ns" "$@"
}
ns_exists() { [[ -e "/run/netns/$1" ]]; }
# Namespaces of this cluster, hosts in order, then the switch.
cluster_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(h[0-9]+|sw)$" | sort -V || true
}
num_hosts() {
  local n=0
  while ns_exists "$(host_ns "$n")"; do n=$((n + 1)); done
  echo "$n"
}

check_privileges() {
  [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN)"
  command -v ip >/dev/null || die "needs iproute2's ip"
}

# RATE (1gbit, 10gbit, 250mbit, 1000000kbit, unlimited) -> bits per second, 0 for unlimited.
rate_bits() {
  local rate=${1,,}
  case "$rate" in
    "" | unlimited | none | 0) echo 0 ;;
    *[0-9]gbit) echo $((${rate%gbit} * 1000000000)) ;;
    *[0-9]mbit) echo $((${rate%mbit} * 1000000)) ;;
    *[0-9]kbit) echo $((${rate%kbit} * 1000)) ;;
    *[0-9]bit) echo $((${rate%bit})) ;;
    *) die "--rate '$1': give a whole number with gbit, mbit or kbit (e.g. 1gbit), or unlimited" ;;
  esac
}

# Rate limit (tbf) on both ends of host i's link: the host's egress, and the switch port's
# egress (the traffic to the host). The bucket holds 4 ms of traffic and at least 256 KiB, so
# that the 64 KiB segments of veth's segmentation offload pass whole.
shape_link() {
  local i=$1 bits=$2 ns
  ns=$(host_ns "$i")
  if [[ "$bits" -eq 0 ]]; then
    ip -n "$ns" link set eth0 txqueuelen 1000
    tc -n "$ns" qdisc del dev eth0 root 2>/dev/null || true
    tc -n "$SWITCH" qdisc del dev "h$i" root 2>/dev/null || true
    return
  fi
  local burst=$((bits / 8 / 250))
  ((burst < 262144)) && burst=262144
  tc -n "$ns" qdisc replace dev eth0 root tbf rate "${bits}bit" burst "$burst" latency 100ms
  tc -n "$SWITCH" qdisc replace dev "h$i" root tbf rate "${bits}bit" burst "$burst" latency 100ms
}

make_switch() {
  if ! ns_exists "$SWITCH"; then
    ip netns add "$SWITCH"
  fi
  ip -n "$SWITCH" link set lo up
  if ! ip -n "$SWITCH" link show br0 >/dev/null 2>&1; then
    ip -n "$SWITCH" link add br0 type bridge stp_state 0 forward_delay 0
  fi
  in_ns "$SWITCH" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 >/dev/null 2>&1 || true
  ip -n "$SWITCH" link set br0 up
}

make_host() {
  local i=$1 ns ip
  ns=$(host_ns "$i")
  ip=$(host_ip "$i")
  ns_exists "$ns" || ip netns add "$ns"
  ip -n "$ns" link set lo up
  # IPv6 stays off: the cluster speaks IPv4 on its /24 only.
  in_ns "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 >/dev/null 2>&1 || true
  in_ns "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1 || true
  if ! ip -n "$ns" link show eth0 >/dev/null 2>&1; then
    ip -n "$SWITCH" link del "h$i" 2>/dev/null || true
    # Both ends are made inside the cluster: the switch port h<i> and the host's eth0.
    ip -n "$SWITCH" link add "h$i" type veth peer name eth0 netns "$ns"
  fi
  ip -n "$SWITCH" link set "h$i" master br0
  ip -n "$SWITCH" link set "h$i" up
  if ! ip -n "$ns" -4 addr show dev eth0 | grep -q "inet $ip/24"; then
    ip -n "$ns" addr flush dev eth0
    ip -n "$ns" addr add "$ip/24" dev eth0
  fi
  ip -n "$ns" link set eth0 up
}

remove_host() {
  local i=$1 ns
  ns=$(host_ns "$i")
  kill_inside "$ns"
  ip -n "$SWITCH" link del "h$i" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
}

# SIGKILLs the processes still running inside a namespace of this cluster (by pid).
kill_inside() {
  local ns=$1 pids
  ns_exists "$ns" || return 0
  pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
  [[ -z "${pids// /}" ]] && return 0
  say "killing processes left in $ns: $pids"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  for _ in $(seq 50); do
    [[ -z "$(ip netns pids "$ns" 2>/dev/null)" ]] && return 0
    sleep 0.1
  done
  say "processes still in $ns after SIGKILL: $(ip netns pids "$ns" | tr '\n' ' ')"
}

# Files run uses: the hostfile (one line per host, one slot each) and Open MPI's rsh agent.
write_state() {
  local n=$1 rate=$2
  mkdir -p "$STATE"
  : >"$STATE/hostfile.tmp"
  for ((i = 0; i < n; i++)); do echo "$(host_ip "$i") slots=1" >>"$STATE/hostfile.tmp"; done
  mv "$STATE/hostfile.tmp" "$STATE/hostfile"
  echo "$rate" >"$STATE/rate"
  # Open MPI starts its daemon on a remote host as `AGENT [options] HOST COMMAND...`, COMMAND
  # being one shell command line split into words (as for ssh). The agent runs that line in
  # the host's namespace, under the host's own hostname (a UTS namespace).
  local cases=""
  for ((i = 0; i < n; i++)); do
    cases+="    $(host_ip "$i") | $(host_ns "$i")) ns=$(host_ns "$i") ;;"$'\n'
  done
  cat >"$STATE/agent.tmp" <<EOF
#!/bin/sh
# Open MPI rsh agent of the cluster "$NAME" (written by scripts/cluster.sh; do not edit).
while [ \$# -gt 0 ]; do
  case "\$1" in
    -*) shift ;;
    *) break ;;
  esac
done
[ \$# -ge 2 ] || { echo "cluster agent: usage: agent HOST COMMAND..." >&2; exit 2; }
host=\$1
shift
case "\$host" in
$cases    *) echo "cluster agent: \$host is not a host of the cluster $NAME" >&2; exit 255 ;;
esac
[ -n "\${DOPPIO_CLUSTER_AGENT_LOG:-}" ] && echo "\$host: \$*" >>"\$DOPPIO_CLUSTER_AGENT_LOG"
exec ip netns exec "\$ns" unshare --uts sh -c 'hostname "\$0" && exec sh -c "\$1"' "\$ns" "\$*"
EOF
  chmod 755 "$STATE/agent.tmp"
  mv "$STATE/agent.tmp" "$STATE/agent"
}

# Whether host 0 reaches ADDRESS: a TCP connection to a closed port is refused at once by a
# host that is there (no ping needed), and times out when the packets go nowhere.
reachable() {
  local out
  out=$(in_ns "$(host_ns 0)" timeout 1 bash -c "exec 3<>/dev/tcp/$1/9" 2>&1) && return 0
  [[ "$out" == *"refused"* ]]
}

cmd_up() {
  local n="" rate="unlimited" slurm=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --slurm) slurm=1; shift ;;
      --rate) rate=${2:?--rate needs a value}; shift 2 ;;
      --rate=*) rate=${1#--rate=}; shift ;;
      -h | --help) usage ;;
      *) [[ -z "$n" ]] || die "up: unexpected argument '$1'"; n=$1; shift ;;
    esac
  done
  [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 && "$n" -le $MAX_HOSTS ]] ||
    die "up: give the number of hosts, 1 to $MAX_HOSTS (scripts/cluster.sh up N [--rate 1gbit])"
  local bits
  bits=$(rate_bits "$rate")
  check_privileges
  # A failure half-way leaves nothing behind.
  trap 'say "up failed; removing the cluster"; cmd_down >/dev/null 2>&1 || true' EXIT
  make_switch
  local old
  old=$(num_hosts)
  for ((i = n; i < old; i++)); do remove_host "$i"; done
  for ((i = 0; i < n; i++)); do
    make_host "$i"
    shape_link "$i" "$bits"
  done
  write_state "$n" "$rate"
  # Every host reaches every other before anyone uses the cluster.
  for ((i = 1; i < n; i++)); do
    local ok=0
    for _ in $(seq 20); do
      if reachable "$(host_ip "$i")"; then
        ok=1
        break
      fi
      sleep 0.1
    done
    [[ $ok -eq 1 ]] || die "up: host 0 cannot reach host $i ($(host_ip "$i"))"
  done
  if [[ $slurm -eq 1 ]]; then
    slurm_up "$n"
  else
    slurm_down_daemons
    rm -rf "$SLURM_DIR"
  fi
  trap - EXIT
  say "$n host(s) up on $CIDR ($(host_ip 0) .. $(host_ip $((n - 1)))), links: $rate"
}

cmd_down() {
  check_privileges
  local namespaces
  namespaces=$(cluster_namespaces)
  slurm_down_daemons
  for ns in $namespaces; do kill_inside "$ns"; done
  for ns in $namespaces; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$STATE"
  if [[ -n "$namespaces" ]]; then
    say "removed $(echo "$namespaces" | wc -w) namespace(s): $(echo "$namespaces" | paste -sd' ')"
  fi
  local left
  left=$(cluster_namespaces)
  [[ -z "$left" ]] || die "down: namespaces still present: $left"
}

require_up() {
  local n
  n=$(num_hosts)
  [[ "$n" -ge 1 && -x "$STATE/agent" ]] ||
    die "the cluster '$NAME' is not up (scripts/cluster.sh up N)"
  echo "$n"
}

# mpirun inside host 0 with the cluster's hostfile and agent; TCP on the cluster's /24 only.
cmd_run() {
  check_privileges
  local n
  n=$(require_up)
  local mpirun
  mpirun=$(command -v mpirun) || die "run: mpirun not found (apt-get install openmpi-bin)"
  # shellcheck disable=SC2054  # tcp,self is one argument
  local args=(
    --allow-run-as-root --oversubscribe
    --hostfile "$STATE/hostfile"
    --mca plm_rsh_agent "$STATE/agent"
    --mca plm_rsh_no_tree_spawn 1
    --mca btl tcp,self
    --mca btl_tcp_if_include "$CIDR"
    --mca oob_tcp_if_include "$CIDR"
    # Open MPI notices a daemon it cannot reach only through TCP keepalive on its control
    # connections (defaults: silent for 300 s, then 9 probes 20 s apart). With probes after
    # 1 s of silence, a host whose link goes down is declared lost within about 4 s and the
    # job ends; otherwise mpirun would wait for that host for minutes.
    --mca oob_tcp_keepalive_time 1
    --mca oob_tcp_keepalive_intvl 1
    --mca oob_tcp_keepalive_probes 3
  )
  # -np defaults to one rank per host.
  local has_np=0 has_bind=0
  for a in "$@"; do
    case "$a" in -np | -n | --np | -c | --n | -npernode | --npernode | --map-by | -N) has_np=1 ;; esac
    case "$a" in --bind-to | -bind-to) has_bind=1 ;; esac
  done
  [[ $has_np -eq 1 ]] || args+=(-np "$n")
  # Every host's daemon sees the whole machine as its node and would bind its first rank to
  # core 0, so all the hosts' ranks would share one core. The hosts share the machine's
  # cores: no binding, unless asked for.
  [[ $has_bind -eq 1 ]] || args+=(--bind-to none)
  # shellcheck disable=SC2016  # expanded by the inner shell
  exec ip netns exec "$(host_ns 0)" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
    "$(host_ns 0)" "$mpirun" "${args[@]}" "$@"
}

cmd_exec() {
  check_privileges
  local n h=${1:?exec: give a host number}
  shift
  n=$(require_up)
  [[ "$h" =~ ^[0-9]+$ && "$h" -lt "$n" ]] || die "exec: no host $h (the cluster has $n)"
  [[ $# -gt 0 ]] || die "exec: give a command"
  # shellcheck disable=SC2016  # expanded by the inner shell
  exec ip netns exec "$(host_ns "$h")" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
    "$(host_ns "$h")" "$@"
}

cmd_slurm() {
  check_privileges
  require_up >/dev/null
  slurm_ready || die "slurm: the cluster '$NAME' has no Slurm (scripts/cluster.sh up N --slurm)"
  [[ $# -gt 0 ]] || die "slurm: give a command (sbatch, srun, squeue, scontrol, ...)"
  slurm_client "$(host_ns 0)" "$@"
}

cmd_link() {
  check_privileges
  local n h=${1:?link: give a host number} state=${2:?link: give down or up}
  n=$(require_up)
  [[ "$h" =~ ^[0-9]+$ && "$h" -lt "$n" ]] || die "link: no host $h (the cluster has $n)"
  [[ "$state" == down || "$state" == up ]] || die "link: give down or up, not '$state'"
  ip -n "$SWITCH" link set "h$h" "$state"
  say "host $h ($(host_ip "$h")): link $state"
}

cmd_pids() {
  check_privileges
  local found=1
  for ns in $(cluster_namespaces); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      found=0
      echo "$ns $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-150)"
    done
  done
  # Exit status 0 when processes run inside the cluster, 1 when none does (like pgrep).
  return $found
}

cmd_status() {
  check_privileges
  local n
  n=$(num_hosts)
  if [[ "$n" -eq 0 ]]; then
    echo "cluster '$NAME': down"
    return 0
  fi
  echo "cluster '$NAME': $n host(s), subnet $CIDR, links $(cat "$STATE/rate" 2>/dev/null || echo '?')"
  for ((i = 0; i < n; i++)); do
    local ns
    ns=$(host_ns "$i")
    echo "  host $i: namespace $ns, $(ip -n "$ns" -4 -o addr show dev eth0 | awk '{print $4}')," \
      "link $(ip -n "$SWITCH" -o link show "h$i" | grep -q 'state UP' && echo up || echo down)"
  done
}

main() {
  local cmd=${1:-}
  [[ $# -gt 0 ]] && shift
  case "$cmd" in
    up) cmd_up "$@" ;;
    down) cmd_down "$@" ;;
    run) cmd_run "$@" ;;
    exec) cmd_exec "$@" ;;
    link) cmd_link "$@" ;;
    slurm) cmd_slurm "$@" ;;
    install-slurm) check_privileges && slurm_install ;;
    pids) cmd_pids "$@" ;;
    status) cmd_status "$@" ;;
    -h | --help | help) usage ;;
    "") usage 1 ;;
    *) die "unknown command '$cmd' (up, down, run, exec, link, slurm, install-slurm, pids, status)" ;;
  esac
}

main "$@"
