#!/usr/bin/env bash
# Set up, build and run fabricmon on this machine (Debian 12, as root).
# Runs the daemon on the host's RDMA devices if /sys/class/infiniband has
# any. Without devices and without arguments it runs scripts/demo.sh (a
# simulated 4-host cluster playing every fault in turn, a daemon per host, a
# real Prometheus with the shipped rules and Alertmanager with the shipped
# inhibit rules; each alert is printed as it fires, with its runbook); with
# arguments it runs one daemon with --simulate and passes them to fabricmon,
# e.g. scripts/run.sh --web.listen-address 127.0.0.1:10915.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
bin="${BUILD_DIR:-build}/fabricmon"
if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
  echo "run: RDMA devices found; serving http://localhost:10915/metrics" >&2
  exec "$bin" "$@"
fi
if [ $# -eq 0 ]; then
  # No hardware, no arguments: the simulated cluster demo (4 hosts, one
  # daemon each on 127.0.0.1:10915+i, a real Prometheus; Ctrl-C stops all).
  echo "run: no RDMA devices; starting the simulated cluster demo" >&2
  exec scripts/demo.sh --build "${BUILD_DIR:-build}"
fi
echo "run: no RDMA devices; using the simulator (--simulate)," \
     "serving http://localhost:10915/metrics" >&2
exec "$bin" --simulate "$@"
