#!/usr/bin/env bash
# The fabricmon demo: a simulated cluster scraped by a real Prometheus.
#
#   scripts/demo.sh [--hosts N] [--scenario S | --timeline FILE]
#                   [--duration SECONDS] [--port-base P] [--prom-port P]
#                   [--scrape-interval 2s] [--build DIR] [-- fabricmon-sim args]
#
# Starts one fabricmon-sim writing N live host trees (default 4), one
# fabricmon daemon per host on 127.0.0.1:<port-base + i> (default 10915+i)
# reading that host's tree, and the Debian Prometheus (/usr/bin/prometheus)
# with its own temp config and data dir on 127.0.0.1:9090 (or the next free
# port), scraping the daemons. Prints the Prometheus URL and runs until
# Ctrl-C (or --duration), then stops everything it started and removes its
# temp dir. Arguments after `--` go to fabricmon-sim (e.g. --load 0.5).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
hosts=4
scenario=steady
timeline=""
duration=""
port_base=10915
prom_port=""
scrape_interval=2s
build="${BUILD_DIR:-$here/build}"
sim_args=()

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) hosts="$2"; shift 2 ;;
    --scenario) scenario="$2"; shift 2 ;;
    --timeline) timeline="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --port-base) port_base="$2"; shift 2 ;;
    --prom-port) prom_port="$2"; shift 2 ;;
    --scrape-interval) scrape_interval="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --) shift; sim_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ "$hosts" =~ ^[0-9]+$ && "$hosts" -ge 1 ]] || {
  echo "demo.sh: --hosts must be a positive number" >&2; exit 2; }

# Ports: is something listening on 127.0.0.1:$1?
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [[ ! -x "$build/fabricmon" || ! -x "$build/fabricmon-sim" ]]; then
  echo "demo.sh: building fabricmon into $build ..." >&2
  BUILD_DIR="$build" "$here/scripts/build.sh"
fi
prometheus_bin="${PROMETHEUS:-/usr/bin/prometheus}"
if [[ ! -x "$prometheus_bin" ]]; then
  echo "demo.sh: $prometheus_bin not found (apt-get install prometheus)" >&2
  exit 1
fi

for ((i = 0; i < hosts; i++)); do
  if port_busy $((port_base + i)); then
    echo "demo.sh: port $((port_base + i)) is in use; try --port-base" >&2
    exit 1
  fi
done
if [[ -z "$prom_port" ]]; then
  prom_port=9090
  while port_busy "$prom_port"; do prom_port=$((prom_port + 1)); done
elif port_busy "$prom_port"; then
  echo "demo.sh: port $prom_port is in use" >&2
  exit 1
fi

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

sim_cmd=("$build/fabricmon-sim" --out "$sim" --hosts "$hosts")
if [[ -n "$timeline" ]]; then
  sim_cmd+=(--timeline "$timeline")
else
  sim_cmd+=(--scenario "$scenario")
fi
"${sim_cmd[@]}" "${sim_args[@]}" 2>"$work/sim.log" &
pids+=($!)
for _ in $(seq 100); do
  [[ -d "$sim/host$((hosts - 1))/class/infiniband" ]] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  sleep 0.1
done

targets=""
for ((i = 0; i < hosts; i++)); do
  port=$((port_base + i))
  # PFC/ethtool statistics: the simulator's `ethtool -S` dumps of the host.
  printf 'ethtool_dir: "%s"\n' "$(realpath "$sim")/host$i/ethtool" \
    >"$work/fabricmon-$i.yaml"
  "$build/fabricmon" --config "$work/fabricmon-$i.yaml" \
    --sysfs.root "$sim/host$i" \
    --web.listen-address "127.0.0.1:$port" --log.level warn \
    >"$work/fabricmon-$i.log" 2>&1 &
  pids+=($!)
  targets+="      - targets: ['127.0.0.1:$port']
        labels: {host: host$i}
"
done

cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: $scrape_interval
  evaluation_interval: $scrape_interval
scrape_configs:
  - job_name: fabricmon
    static_configs:
$targets
YAML
"$prometheus_bin" --config.file="$work/prometheus.yml" \
  --storage.tsdb.path="$work/prometheus-data" \
  --web.listen-address="127.0.0.1:$prom_port" \
  >"$work/prometheus.log" 2>&1 &
pids+=($!)

echo "fabricmon demo: $hosts simulated host(s), scenario ${timeline:-$scenario}"
echo "  daemons:    http://127.0.0.1:$port_base/metrics .. :$((port_base + hosts - 1))"
echo "  sysfs:      $sim/host<i>"
echo "  logs:       $work"
echo "  Prometheus: http://127.0.0.1:$prom_port"
echo "  try:        rate(fabric_port_transmit_bytes_total[1m])"
echo "Ctrl-C stops everything."

if [[ -n "$duration" ]]; then
  end=$((SECONDS + duration))
  while ((SECONDS < end)); do
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "demo.sh: process $pid died" >&2; exit 1; }
    done
    sleep 1
  done
else
  # Returns when any child exits (or on Ctrl-C via the trap).
  wait -n "${pids[@]}" || true
  echo "demo.sh: a process exited; see $work/*.log" >&2
  exit 1
fi
