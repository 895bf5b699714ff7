#!/usr/bin/env bash
# Soak: the daemon under --simulate with a recurring fault timeline
# (bench/soak-timeline.yaml: link flaps, a device that vanishes and returns,
# SM failover and hang, PFC storms, saturation, congestion), every collector
# at a short interval, probing itself over UDP 10 times a second, scraped 20
# times a second and reloaded (SIGHUP, the ib_port interval toggled so that
# collector is rebuilt) every 30 s, for MINUTES. Reports RSS, open
# descriptors and CPU after warm-up (10 % of the run, at least 60 s) with
# their growth per hour (least squares), scrape errors and the daemon's error
# log lines. Exits non-zero on a scrape error, an error logged, a probe that
# never answered, or a dead daemon.
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
probe_port=$(bench_free_port)
# The probe key (64 hex digits, 0600: docs/probes.md).
key="$BENCH_TMP/probe.key"
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$key")
# Two configs that differ in the ib_port interval: each SIGHUP swaps them.
soak_config() {
  cat <<YAML
listen_address: "127.0.0.1:$port"
log_level: info
collectors:
  ib_port: {interval: $1}
  hw_counters: {interval: 100ms}
  congestion: {interval: 100ms}
  roce: {interval: 200ms}
  nic_identity: {interval: 1s}
  sm: {interval: 1s, stall_after: 5s}
  probe:
    enabled: true
    transport: udp
    interval: 100ms
    listen_address: "127.0.0.1:$probe_port"
    peers: ["127.0.0.1:$probe_port"]
    key_file: "$key"
YAML
}
soak_config 100ms >"$BENCH_TMP/soak.yaml"
soak_config 200ms >"$BENCH_TMP/soak-b.yaml"

bench_spawn "$out/daemon.log" "$BENCH_FABRICMON" --config "$BENCH_TMP/soak.yaml" \
  --simulate=bench/soak-timeline.yaml
pid=$BENCH_SPAWNED
bench_wait_http "$port" /metrics "$pid" || {
  cat "$out/daemon.log" >&2
  bench_die "daemon did not serve /metrics"
}
echo "soak: $minutes min, daemon pid $pid on 127.0.0.1:$port, warm-up ${warmup}s"
# Swap the configs in the background; soak_scrape.py sends the SIGHUPs.
(
  while sleep 15; do
    # The daemon reads soak.yaml: replace it by rename, never half-written.
    cp "$BENCH_TMP/soak-b.yaml" "$BENCH_TMP/next.yaml"
    cp "$BENCH_TMP/soak.yaml" "$BENCH_TMP/soak-b.yaml"
    mv "$BENCH_TMP/next.yaml" "$BENCH_TMP/soak.yaml"
    sleep 15
  done
) &
swapper=$!
python3 bench/soak_scrape.py "$port" "$pid" "$seconds" "$warmup" "$out" 30
rc=$?
kill "$swapper" 2>/dev/null
answered=$(curl -s "http://127.0.0.1:$port/metrics" |
  awk '/^fabric_probe_answered_total /{print $2}')
echo "probes answered: ${answered:-none}; reloads done: $(grep -c 'reload done' "$out/daemon.log")"
[[ -n "$answered" && "$answered" != 0 ]] || rc=1
kill -0 "$pid" 2>/dev/null || { echo "daemon is gone"; rc=1; }
errors=$(grep -c -E '^[0-9T:.-]+ (error|critical) ' "$out/daemon.log")
echo "daemon log: $(wc -l <"$out/daemon.log") lines, $errors at error level"
grep -E '^[0-9T:.-]+ (error|critical) ' "$out/daemon.log" | head -5
((errors == 0)) || rc=1
exit "$rc"
