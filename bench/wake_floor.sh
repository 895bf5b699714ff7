#!/usr/bin/env bash
# Which way of sleeping costs a 1 ms prober least on this machine: the three
# modes of bench/wake_floor.c side by side for SECONDS (default 20), each
# one's CPU per wake-up (schedstat). Usage: bench/wake_floor.sh [SECONDS]
#   epoll  a periodic timerfd through epoll, armed once
#   asio   epoll, the timerfd re-armed twice per wake-up (Boost.Asio's
#          reactor with a steady_timer set again in its handler: the
#          engine's tick today)
#   sleep  clock_nanosleep(TIMER_ABSTIME), no descriptor (a thread of its own)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_cd_root
SECONDS_WINDOW="${1:-20}"
[[ "$SECONDS_WINDOW" =~ ^[0-9]+$ && "$SECONDS_WINDOW" -ge 1 ]] ||
  bench_die "SECONDS must be a positive integer"
bench_setup_cleanup $((SECONDS_WINDOW + 30))
cc -O2 -o "$BENCH_TMP/wake_floor" bench/wake_floor.c || bench_die "cannot build bench/wake_floor.c"
modes=(epoll asio sleep)
declare -A pid ns0 ns1
for m in "${modes[@]}"; do
  bench_spawn "$BENCH_TMP/$m.log" "$BENCH_TMP/wake_floor" $((SECONDS_WINDOW + 3)) "$m"
  pid[$m]=$BENCH_SPAWNED
done
sleep 1
t0=${EPOCHREALTIME/./}
for m in "${modes[@]}"; do ns0[$m]=$(bench_sched_ns "${pid[$m]}"); done
sleep "$SECONDS_WINDOW"
for m in "${modes[@]}"; do ns1[$m]=$(bench_sched_ns "${pid[$m]}"); done
t1=${EPOCHREALTIME/./}
echo "load average (1 min): $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores"
for m in "${modes[@]}"; do
  python3 -c 'import sys; ns, us, m = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
print("%-5s %.3f%% of one core, %.1f us per wake-up (1,000 a second)" % (m, 100 * ns / 1e3 / us, ns / 1e3 / (us / 1e3)))' \
    "$((ns1[$m] - ns0[$m]))" "$((t1 - t0))" "$m"
done
