#!/usr/bin/env bash
# fabricmon-locate's peak memory against a Prometheus answering with many
# probe pairs (issue 40 item 6: a 139 MB answer of 10^6 series took 5.16 GB):
# bench/locate_fake_prometheus.py serves PAIRS random pairs (BAD of them
# lossy) for every pair query, and the locator's maximum resident set size
# (/usr/bin/time %M) is printed with its exit status and last error line.
# No fabric is given: the run ends after the Prometheus step, which is
# where the memory goes (exit 6, "no usable IB port", when the answers were read;
# exit 3 with the bound's message when an answer was refused).
#
# Usage: bench/locate_memory.sh [LOCATE=build/fabricmon-locate] [PAIRS=1000000]
#                               [BAD=1000] [extra fabricmon-locate flags...]
source "$(dirname "$0")/lib.sh"
bench_cd_root
locate=${1:-build/fabricmon-locate}
pairs=${2:-1000000}
bad=${3:-1000}
shift 3 2>/dev/null || shift $#
bench_require_exec "$locate" "build the fabricmon-locate target"
bench_setup_cleanup 900

port=$(bench_free_port)
python3 bench/locate_fake_prometheus.py "$port" 2000 "$bad" $((pairs - bad)) &
BENCH_PIDS+=($!)
for _ in $(seq 100); do
  bench_get "$port" "/api/v1/query?query=up" && break
  sleep 0.1
done
# Build every answer once before timing (the fake keeps them).
for q in fabric_probe_sent_total fabric_probe_lost_total \
  fabric_probe_network_rtt_seconds fabric_probe_pair_info; do
  curl -s -o /dev/null --max-time 600 \
    "http://127.0.0.1:$port/api/v1/query?query=$q" || true
done
size=$(curl -s --max-time 600 "http://127.0.0.1:$port/api/v1/query?query=fabric_probe_pair_info" | wc -c)

/usr/bin/time -f "%M %e" -o "$BENCH_TMP/time" \
  "$locate" --prometheus "http://127.0.0.1:$port" --query-timeout-ms 600000 \
  "$@" >/dev/null 2>"$BENCH_TMP/err"
rc=$?
read -r rss_kb wall < <(tail -1 "$BENCH_TMP/time")
printf 'pairs %d (largest answer %.1f MB): peak RSS %.1f MB, %.1f s, exit %d: %s\n' \
  "$pairs" "$(echo "$size / 1000000" | bc -l)" "$(echo "$rss_kb / 1024" | bc -l)" \
  "$wall" "$rc" "$(grep -v '^stats' "$BENCH_TMP/err" | tail -1)"
