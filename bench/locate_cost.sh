#!/usr/bin/env bash
# The locator's whole run at scale (issue 29: "1,000 bad pairs on a
# 2,000-switch simulated fabric in under 10 s"): the real fabricmon-locate
# binary against the simulator's k-ary fat tree served on a MAD socket
# (bench/fat_tree_socket.cc, k = 40: 2,000 switches, 1,600 hosts) and a
# stand-in Prometheus (bench/locate_fake_prometheus.py) answering its queries
# with BAD lossy and GOOD clean random host pairs. Prints the wall and CPU
# time of the locator and the MADs it sent (its `stats locate` line); the
# in-process half alone is build/bench/locate_cost.
#
# Usage: bench/locate_cost.sh [BUILD_DIR=build] [BAD=1000] [GOOD=2000] [K=40]
source "$(dirname "$0")/lib.sh"
bench_cd_root
build=${1:-build}
bad=${2:-1000}
good=${3:-2000}
k=${4:-40}
bench_require_exec "$build/fabricmon-locate" "build the fabricmon-locate target"
bench_require_exec "$build/bench/fat_tree_socket" "build the fat_tree_socket target"
bench_setup_cleanup 300
hosts=$((k * k / 2 * 2))

"$build/bench/fat_tree_socket" "$BENCH_TMP/mad.sock" "$k" 2 >"$BENCH_TMP/tree.log" 2>&1 &
BENCH_PIDS+=($!)
port=$(bench_free_port)
python3 bench/locate_fake_prometheus.py "$port" "$hosts" "$bad" "$good" &
BENCH_PIDS+=($!)
for _ in $(seq 100); do
  [[ -S "$BENCH_TMP/mad.sock" ]] && bench_get "$port" "/api/v1/query?query=up" && break
  sleep 0.1
done
[[ -S "$BENCH_TMP/mad.sock" ]] || bench_die "fat_tree_socket did not start: $(cat "$BENCH_TMP/tree.log")"

/usr/bin/time -f "%e %U %S" -o "$BENCH_TMP/time" \
  "$build/fabricmon-locate" --prometheus "http://127.0.0.1:$port" \
  --sim-mad-socket "$BENCH_TMP/mad.sock" --sim-port-guid 0x0002c90300a00000 \
  --max-good-pairs "$good" --mad-timeout-ms 2000 ${LOCATE_ARGS:-} --json \
  >"$BENCH_TMP/out.json" 2>"$BENCH_TMP/err"
rc=$?
read -r wall user sys <"$BENCH_TMP/time"
echo "fat tree k=$k ($((5 * k * k / 4)) switches, $hosts hosts), $bad bad + $good good pairs"
echo "fabricmon-locate exit $rc (0: every bad pair placed), wall ${wall} s, CPU user ${user} s sys ${sys} s"
grep '^stats locate' "$BENCH_TMP/err"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("pairs", j["pairs"]); print("top link", j["links"][0]["a"]["name"], "<->", j["links"][0]["b"]["name"], "votes", j["links"][0]["votes"])' "$BENCH_TMP/out.json" || cat "$BENCH_TMP/err"
