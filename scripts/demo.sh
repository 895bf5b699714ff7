#!/usr/bin/env bash
# The fabricmon demo: a simulated cluster, a real Prometheus with the shipped
# rules, a real Alertmanager with the shipped inhibit rules, and the alerts
# printed as they fire.
#
#   scripts/demo.sh [--hosts N] [--scenario S | --timeline FILE]
#                   [--duration SECONDS] [--port-base P] [--prom-port P]
#                   [--am-port P] [--scrape-interval 2s] [--shipped-for]
#                   [--auto-ports] [--ports-file FILE] [--webhook URL]
#                   [--quiet] [--build DIR] [-- fabricmon-sim args]
#
# Starts one fabricmon-sim writing N live host trees (default 4) and playing
# scenarios/demo-tour.yaml (every fault in turn, then a slow receiver and an
# unbalanced uplink: congestion trees, one FabricCongestionRoot each, ~13
# min) unless --scenario or --timeline says otherwise; one fabricmon daemon
# per host on 127.0.0.1:<port-base + i> (default 10915+i) reading that host's tree, its
# ethtool and DCB dumps, asking the simulated fabric's SMs (and, on host0,
# sweeping its switches) through fabricmon-sim's MAD socket, probing the
# other hosts through fabricmon-sim's probe relay; the Debian Prometheus on
# 127.0.0.1:9090 (or the next free port) with dashboards/prometheus/*.yml;
# the Debian Alertmanager on 127.0.0.1:9093 (or the next free port) with
# dashboards/alertmanager/route.yml and inhibit_rules.yml (notifications to
# --webhook URL when given, else nowhere); and scripts/demo_alerts.py,
# which prints each alert as it fires or resolves, with its runbook. So that
# a fault lasting a minute alerts, the demo's copy of the rules has every
# `for:` shortened to 20s (5s where it is 1m: the causes that must fire
# before their symptoms) and the 5-minute groups run every 30s (say so with
# the banner; --shipped-for keeps the shipped durations). Runs until Ctrl-C
# (or --duration), then stops everything it started, by pid, and removes
# its temp dirs. Arguments after `--` go to fabricmon-sim (e.g. --load 0.5).
#
# Ports are checked free before they are used, and each process is watched
# until it listens: one that finds its port taken meanwhile (another program
# bound it in between) is started again on the next free port when the port
# was chosen here (Prometheus's and Alertmanager's by default; every port
# with --auto-ports, which also skips busy ports instead of failing);
# a port given explicitly fails clearly. --ports-file FILE receives the
# ports in use once everything listens (lines daemons=P0 P1 ..,
# prometheus=P, alertmanager=P): tests run with --auto-ports and read it.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
hosts=4
scenario=""
timeline=""
am_port=""
shipped_for=""
quiet=""
duration=""
port_base=10915
prom_port=""
auto_ports=""
ports_file=""
webhook=""
scrape_interval=2s
build="${BUILD_DIR:-$here/build}"
sim_args=()

usage() { sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) hosts="$2"; shift 2 ;;
    --scenario) scenario="$2"; shift 2 ;;
    --timeline) timeline="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --port-base) port_base="$2"; shift 2 ;;
    --prom-port) prom_port="$2"; shift 2 ;;
    --am-port) am_port="$2"; shift 2 ;;
    --shipped-for) shipped_for=1; shift ;;
    --auto-ports) auto_ports=1; shift ;;
    --webhook) webhook="$2"; shift 2 ;;
    --ports-file) ports_file="$2"; shift 2 ;;
    --quiet) quiet=1; shift ;;
    --scrape-interval) scrape_interval="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --) shift; sim_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$hosts" =~ ^[0-9]+$ && "$hosts" -ge 1 ]] || {
  echo "demo.sh: --hosts must be a positive number" >&2; exit 2; }
if [[ -z "$scenario" && -z "$timeline" ]]; then
  timeline="$here/scenarios/demo-tour.yaml"
fi

# Ports: is something listening on 127.0.0.1:$1?
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The ports this run has given out so far (" P1 P2 ").
given=" "
# The first port >= $1 that is free and not given out yet.
next_free() {
  local p="$1"
  while port_busy "$p" || [[ "$given" == *" $p "* ]]; do p=$((p + 1)); done
  echo "$p"
}
# Is process $2 the one listening on 127.0.0.1:$1? (Without ss: is it
# alive and is something listening there.)
listens() {
  if command -v ss >/dev/null; then
    ss -Hltnp "sport = :$1" 2>/dev/null | grep -q "pid=$2,"
  else
    kill -0 "$2" 2>/dev/null && port_busy "$1"
  fi
}

if [[ ! -x "$build/fabricmon" || ! -x "$build/fabricmon-sim" ]]; then
  echo "demo.sh: building fabricmon into $build ..." >&2
  BUILD_DIR="$build" "$here/scripts/build.sh"
fi
prometheus_bin="${PROMETHEUS:-/usr/bin/prometheus}"
alertmanager_bin="${ALERTMANAGER:-/usr/bin/prometheus-alertmanager}"
for bin in "$prometheus_bin" "$alertmanager_bin"; do
  if [[ ! -x "$bin" ]]; then
    echo "demo.sh: $bin not found (scripts/setup.sh installs it)" >&2
    exit 1
  fi
done

daemon_ports=()
for ((i = 0; i < hosts; i++)); do
  port=$((port_base + i))
  if [[ -n "$auto_ports" ]]; then
    port=$(next_free "$port_base")
  elif port_busy "$port"; then
    echo "demo.sh: port $port is in use; try --port-base" >&2
    exit 1
  fi
  daemon_ports+=("$port")
  given+="$port "
done
prom_given="$prom_port"
prom_auto="$auto_ports"
if [[ -z "$prom_port" ]]; then
  prom_auto=1
  prom_port=$(next_free 9090)
elif [[ -n "$auto_ports" ]]; then
  prom_port=$(next_free "$prom_port")
elif port_busy "$prom_port"; then
  echo "demo.sh: port $prom_port is in use" >&2
  exit 1
fi
given+="$prom_port "
am_auto="$auto_ports"
if [[ -z "$am_port" ]]; then
  am_auto=1
  # 9093, or next to an explicit --prom-port (tests pick free ports there).
  if [[ -n "$prom_given" ]]; then am_port=$((prom_port + 1)); else am_port=9093; fi
  am_port=$(next_free "$am_port")
elif [[ -n "$auto_ports" ]]; then
  am_port=$(next_free "$am_port")
elif port_busy "$am_port"; then
  echo "demo.sh: port $am_port is in use" >&2
  exit 1
fi
given+="$am_port "
# Probes: each daemon answers UDP probes on probe_base+i (UDP ports; a TCP
# listener on the same number does not matter) and probes the others
# through fabricmon-sim, which carries them as the simulated fabric would
# (the timeline's probe-loss drops some): its relay ports are in each
# host's probe-peers file.
probe_base=$((port_base + hosts))

work="$(mktemp -d "${TMPDIR:-/tmp}/fabricmon-demo.XXXXXX")"
# The live trees go to tmpfs when there is one: the simulator replaces
# hundreds of files per tick by rename, which a disk filesystem (ext4's
# replace-via-rename flush) makes ~100x slower, enough to lag real time.
shm="${SIM_TMPDIR:-/dev/shm}"
[[ -d "$shm" && -w "$shm" ]] || shm="$work"
sim="$(mktemp -d "$shm/fabricmon-demo-sim.XXXXXX")"
pids=()
cleanup() {
  trap - INT TERM EXIT
  # Stop exactly what we started, newest first, then wait for each.
  for ((k = ${#pids[@]} - 1; k >= 0; k--)); do
    kill -TERM "${pids[k]}" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$sim" "$work"
  echo "demo.sh: stopped" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_listening NAME PORT AUTO LOG COMMAND...: runs COMMAND (each @PORT@
# in its arguments replaced by the port) with its output to LOG and waits
# until it listens on 127.0.0.1:PORT. Between the check that a port is free
# and the bind, another program may take it (the parallel test suite does):
# the process then dies of "address already in use", and when AUTO is set
# it is started again on the next free port. Sets $port to the port it
# listens on and adds its pid to pids; exits on any other failure.
start_listening() {
  local name="$1" auto="$3" log="$4" tries=0 pid taken
  port="$2"
  shift 4
  while :; do
    "${@//@PORT@/$port}" >"$log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do
      if listens "$port" "$pid"; then
        pids+=("$pid")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      pids+=("$pid")  # cleanup stops it
      echo "demo.sh: $name did not listen on port $port within 60 s; its log:" >&2
      tail -n 5 "$log" >&2 || true
      exit 1
    fi
    wait "$pid" 2>/dev/null || true
    if [[ -n "$auto" ]] && ((++tries < 20)) &&
      grep -qi "address already in use" "$log"; then
      taken="$port"
      port=$(next_free $((port + 1)))
      given+="$port "
      echo "demo.sh: $name: port $taken was taken meanwhile; using $port" >&2
      continue
    fi
    echo "demo.sh: $name did not start on port $port; the last lines of its log:" >&2
    tail -n 5 "$log" >&2 || true
    exit 1
  done
}

# The daemons reach the simulated fabric's SMs and switches through the
# simulator's MAD socket: the model runs in fabricmon-sim, so the MADs go
# there (simulator/mad_socket.h), as they would go to the fabric.
sim_cmd=("$build/fabricmon-sim" --out "$sim" --hosts "$hosts"
  --mad-socket "$sim/mad.sock" --probe-relay "127.0.0.1:$probe_base")
if [[ -n "$timeline" ]]; then
  sim_cmd+=(--timeline "$timeline")
else
  sim_cmd+=(--scenario "$scenario")
fi
"${sim_cmd[@]}" "${sim_args[@]}" 2>"$work/sim.log" &
pids+=($!)
for _ in $(seq 100); do
  [[ -S "$sim/mad.sock" && -f "$sim/host$((hosts - 1))/probe-peers" ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  sleep 0.1
done

# The probe key every daemon shares (docs/probes.md), owner-only.
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$work/probe.key")
# The sm and fabric collectors exist only in builds with rdma-core.
printf 'collectors:\n  sm:\n    enabled: true\n' >"$work/mad-check.yaml"
mad_collectors=""
if "$build/fabricmon" --check-config --config "$work/mad-check.yaml" \
    >/dev/null 2>&1; then
  mad_collectors=1
fi
targets=""
for ((i = 0; i < hosts; i++)); do
  # The sm collector every 5 s with a 15 s stall_after (shipped: 60 s and
  # 60 s), so that the tour's one-minute sm-hung and sm-failover show;
  # host0 is the sweep node (fabric collector: switch ports, every SM),
  # every 10 s.
  mad_yaml=""
  if [[ -n "$mad_collectors" ]]; then
    mad_yaml="  sm:
    interval: 5s
    timeout: 4s
    stall_after: 15s
  fabric:
    enabled: $( ((i == 0)) && echo true || echo false)
    interval: 10s
    timeout: 8s"
  fi
  # PFC/ethtool statistics and the DCB configuration: the simulator's
  # `ethtool -S` and `dcb` dumps of the host. The Slurm jobs: the
  # simulated slurmd's cgroup tree is in the host's tree (fs/cgroup), its
  # tasks' /proc files in proc/ (every 5 s: the tour's jobs come and go).
  root="$(realpath "$sim")/host$i"
  # Counters every 1 s (shipped: 5 s): the tour's faults last a minute and
  # are scraped every few seconds.
  cat >"$work/fabricmon-$i.yaml" <<YAML
ethtool_dir: "$root/ethtool"
collectors:
  ib_port:
    interval: 1s
  hw_counters:
    interval: 1s
  roce:
    interval: 1s
    dcb_dir: "$root/dcb"
$mad_yaml
  jobs:
    interval: 5s
    proc_root: "$root/proc"
  probe:
    enabled: $( ((hosts > 1)) && echo true || echo false)
    listen_address: "127.0.0.1:$((probe_base + i))"
    key_file: "$work/probe.key"
    peers_file: "$root/probe-peers"
YAML
  start_listening "fabricmon host$i" "${daemon_ports[i]}" "$auto_ports" \
    "$work/fabricmon-$i.log" \
    "$build/fabricmon" --config "$work/fabricmon-$i.yaml" \
    --sysfs.root "$sim/host$i" --sim.mad-socket "$sim/mad.sock" \
    --web.listen-address "127.0.0.1:@PORT@" --log.level warn
  daemon_ports[i]=$port
  targets+="      - targets: ['127.0.0.1:$port']
        labels: {host: host$i}
"
done

# The shipped rules; unless --shipped-for, with `for:` shortened, the
# 5-minute groups every 30 s and the 1-minute ones at the evaluation
# interval, so a one-minute fault of the tour alerts. The causes that wait
# 1m (FabricCongestionRoot, FabricPortFlapping; and FabricCollectorStale)
# get 5s, every other `for:` 20s: a root fires before its victims'
# congestion alerts (2m, shortened to 20s) as with the shipped durations,
# although its sweep names it a sweep or two after they see the wait, so
# the victims stay inhibited (one page per fault, alerts_tour_test).
for f in recording_rules.yml alerting_rules.yml; do
  if [[ -n "$shipped_for" ]]; then
    cp "$here/dashboards/prometheus/$f" "$work/$f"
  else
    sed -E 's/^( +)for: 1m$/\1for: 5s/; t; s/^( +)for: [0-9]+[smh]$/\1for: 20s/; s/^( +)interval: 5m$/\1interval: 30s/; /^ +interval: 1m$/d' \
      "$here/dashboards/prometheus/$f" >"$work/$f"
  fi
done
# The shipped route (one notification group per cable or place, group_wait
# shortened with the `for:`s unless --shipped-for) and inhibit rules; with
# --webhook URL, notifications go there (tests count the groups).
{
  if [[ -n "$shipped_for" ]]; then
    cat "$here/dashboards/alertmanager/route.yml"
  else
    sed -E 's/^( +)group_wait: .*/\1group_wait: 5s/; s/^( +)group_interval: .*/\1group_interval: 30s/' \
      "$here/dashboards/alertmanager/route.yml"
  fi
  printf 'receivers:\n  - name: fabric\n'
  if [[ -n "$webhook" ]]; then
    printf '    webhook_configs:\n      - url: %s\n        send_resolved: false\n' "$webhook"
  fi
  cat "$here/dashboards/alertmanager/inhibit_rules.yml"
} >"$work/alertmanager.yml"
start_listening Alertmanager "$am_port" "$am_auto" "$work/alertmanager.log" \
  "$alertmanager_bin" --config.file="$work/alertmanager.yml" \
  --storage.path="$work/alertmanager-data" \
  --web.listen-address="127.0.0.1:@PORT@" --cluster.listen-address=
am_port=$port

cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: $scrape_interval
  evaluation_interval: $scrape_interval
rule_files:
  - recording_rules.yml
  - alerting_rules.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['127.0.0.1:$am_port']
scrape_configs:
  - job_name: fabricmon
    static_configs:
$targets
YAML
start_listening Prometheus "$prom_port" "$prom_auto" "$work/prometheus.log" \
  "$prometheus_bin" --config.file="$work/prometheus.yml" \
  --storage.tsdb.path="$work/prometheus-data" \
  --web.listen-address="127.0.0.1:@PORT@"
prom_port=$port

if [[ -n "$ports_file" ]]; then
  printf 'daemons=%s\nprometheus=%s\nalertmanager=%s\n' "${daemon_ports[*]}" \
    "$prom_port" "$am_port" >"$ports_file.tmp"
  mv "$ports_file.tmp" "$ports_file"
fi

echo "fabricmon demo: $hosts simulated host(s), scenario ${timeline:-$scenario}"
if ((daemon_ports[hosts - 1] - daemon_ports[0] == hosts - 1)); then
  echo "  daemons:    http://127.0.0.1:${daemon_ports[0]}/metrics .. :${daemon_ports[hosts - 1]}"
else
  echo "  daemons:    http://127.0.0.1:<port>/metrics, ports ${daemon_ports[*]}"
fi
echo "  sysfs:      $sim/host<i>"
echo "  logs:       $work"
echo "  Prometheus: http://127.0.0.1:$prom_port (rules: dashboards/prometheus/)"
echo "  Alertmanager: http://127.0.0.1:$am_port (inhibit rules: dashboards/alertmanager/)"
echo "  try:        rate(fabric_port_transmit_bytes_total[1m])"
if [[ -z "$shipped_for" ]]; then
  echo "  note:       alert 'for:' shortened to 20s (1m ones to 5s) for the demo (--shipped-for keeps them)"
fi
echo "Alerts are printed below as they fire, with the runbook to open. Ctrl-C stops everything."
if [[ -z "$quiet" ]]; then
  python3 "$here/scripts/demo_alerts.py" --root "$here" \
    --prometheus "http://127.0.0.1:$prom_port" \
    --alertmanager "http://127.0.0.1:$am_port" &
  pids+=($!)
fi

if [[ -n "$duration" ]]; then
  end=$((SECONDS + duration))
  while ((SECONDS < end)); do
    for pid in "${pids[@]}"; do
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "demo.sh: process $pid died; the last lines of its logs:" >&2
        tail -n 5 "$work"/*.log >&2 || true
        exit 1
      fi
    done
    sleep 1
  done
else
  # Returns when any child exits (or on Ctrl-C via the trap).
  wait -n "${pids[@]}" || true
  echo "demo.sh: a process exited; see $work/*.log" >&2
  exit 1
fi
