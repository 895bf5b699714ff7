#!/usr/bin/env bash
# Set up, build and run fabricmon on this machine (Debian 12, as root).
# Runs the daemon on the host's RDMA devices if /sys/class/infiniband has
# any, else against the built-in simulator (--simulate). Extra arguments go
# to fabricmon, e.g. scripts/run.sh --web.listen-address 127.0.0.1:10915.
# For the multi-host demo with Prometheus see scripts/demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
bin="${BUILD_DIR:-build}/fabricmon"
if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
  echo "run: RDMA devices found; serving http://localhost:10915/metrics" >&2
  exec "$bin" "$@"
fi
echo "run: no RDMA devices; using the simulator (--simulate)," \
     "serving http://localhost:10915/metrics" >&2
exec "$bin" --simulate "$@"
