#!/usr/bin/env bash
# Soak: the daemon under --simulate with a recurring fault timeline
# (bench/soak-timeline.yaml: link flaps, a device that vanishes and returns,
# SM failover and hang, PFC storms, saturation, congestion), every collector
# at a short interval, scraped 20 times a second for MINUTES. Reports RSS and
# open descriptors after warm-up (10 % of the run, at least 60 s) with their
# growth per hour (least squares), scrape errors and the daemon's error log
# lines. Exits non-zero on a scrape error, an error logged, or a dead daemon.
#
#   bench/soak.sh MINUTES            (e.g. 30; build/fabricmon must exist)
#   BENCH_FABRICMON=other/fabricmon bench/soak.sh 5
#
# Figures go to stdout and, with the samples (samples.csv) and the daemon's
# log, to $SOAK_OUT (default: a temp dir that is removed; set it to keep).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
bench_cd_root

minutes=${1:?usage: bench/soak.sh MINUTES}
[[ "$minutes" =~ ^[0-9]+$ ]] && ((minutes > 0)) || bench_die "MINUTES: a positive integer"
bench_require_exec "$BENCH_FABRICMON" "build it: scripts/build.sh"
seconds=$((minutes * 60))
warmup=$((seconds / 10 > 60 ? seconds / 10 : 60))
((warmup < seconds)) || warmup=$((seconds / 2))
bench_setup_cleanup $((seconds + 120))

out=${SOAK_OUT:-$BENCH_TMP}
mkdir -p "$out"
port=$(bench_free_port)
cat >"$BENCH_TMP/soak.yaml" <<YAML
listen_address: "127.0.0.1:$port"
log_level: info
collectors:
  ib_port: {interval: 100ms}
  hw_counters: {interval: 100ms}
  congestion: {interval: 100ms}
  roce: {interval: 200ms}
  nic_identity: {interval: 1s}
  sm: {interval: 1s, stall_after: 5s}
YAML

bench_spawn "$out/daemon.log" "$BENCH_FABRICMON" --config "$BENCH_TMP/soak.yaml" \
  --simulate=bench/soak-timeline.yaml
pid=$BENCH_SPAWNED
bench_wait_http "$port" /metrics "$pid" || {
  cat "$out/daemon.log" >&2
  bench_die "daemon did not serve /metrics"
}
echo "soak: $minutes min, daemon pid $pid on 127.0.0.1:$port, warm-up ${warmup}s"
python3 bench/soak_scrape.py "$port" "$pid" "$seconds" "$warmup" "$out"
rc=$?
kill -0 "$pid" 2>/dev/null || { echo "daemon is gone"; rc=1; }
errors=$(grep -c -E '^[0-9T:.-]+ (error|critical) ' "$out/daemon.log")
echo "daemon log: $(wc -l <"$out/daemon.log") lines, $errors at error level"
grep -E '^[0-9T:.-]+ (error|critical) ' "$out/daemon.log" | head -5
((errors == 0)) || rc=1
exit "$rc"
