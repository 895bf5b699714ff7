# Shared by the bench/*.sh scripts (source it; it defines functions and
# defaults, runs nothing): where the tree and the binaries are, free
# loopback ports, what /proc says about a process's CPU and wake-ups, and
# cleanup of the processes a script started.
#
#   source "$(dirname "$0")/lib.sh"; bench_cd_root
#
# Defaults (overridable from the environment):
#   BENCH_FABRICMON   build/fabricmon
#   BENCH_TREE        tests/fixtures/real/sysfs-gpud-h100 (the recorded H100
#                     node, 9 devices, that tests/golden/sysfs-gpud-h100.prom
#                     is rendered from)
#   NODE_EXPORTER     /usr/bin/prometheus-node-exporter (Debian 12's 1.5.0)

BENCH_FABRICMON="${BENCH_FABRICMON:-build/fabricmon}"
BENCH_TREE="${BENCH_TREE:-tests/fixtures/real/sysfs-gpud-h100}"
NODE_EXPORTER="${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}"

# Repo root, so that the relative defaults above resolve.
bench_cd_root() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
}

bench_die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

bench_require_exec() {
  [[ -x "$1" ]] || bench_die "$1 not found or not executable${2:+ ($2)}"
}

# A loopback port that was free a moment ago (the kernel picks it: port 0).
bench_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# GET http://127.0.0.1:PORT/PATH into FILE (default /dev/null); fails unless
# the answer is 200. Bounded: 10 s.
bench_get() {
  local code
  code=$(curl -s --max-time 10 -o "${3:-/dev/null}" -w '%{http_code}' \
    "http://127.0.0.1:$1$2") || return 1
  [[ "$code" == 200 ]]
}

# Waits (at most 10 s) until PORT answers PATH with 200 while PID lives.
bench_wait_http() {
  local port=$1 path=$2 pid=$3 i
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    bench_get "$port" "$path" && return 0
    sleep 0.05
  done
  return 1
}

# utime + stime of the whole process (every thread, live or exited), in
# clock ticks (getconf CLK_TCK per second), from /proc/PID/stat. Fields
# counted after the ")" that closes the command name, which may hold spaces.
bench_stat_ticks() {
  local line rest
  read -r line <"/proc/$1/stat" || return 1
  rest=${line##*) }
  read -r -a f <<<"$rest"
  echo $((f[11] + f[12]))  # fields 14 and 15 of proc(5)
}

# Nanoseconds on CPU summed over the process's live threads, from
# /proc/PID/task/*/schedstat: what the 10 ms ticks above cannot resolve.
bench_sched_ns() {
  local total=0 t ns rest
  for t in /proc/"$1"/task/*/schedstat; do
    read -r ns rest <"$t" 2>/dev/null || continue  # thread gone
    total=$((total + ns))
  done
  echo "$total"
}

# Voluntary context switches (the thread went to sleep: each one is a
# wake-up later) summed over /proc/PID/task/*/status.
bench_wakeups() {
  local total=0 t key value
  for t in /proc/"$1"/task/*/status; do
    while read -r key value; do
      if [[ "$key" == voluntary_ctxt_switches: ]]; then
        total=$((total + value))
        break
      fi
    done <"$t" 2>/dev/null
  done
  echo "$total"
}

# Processes started with bench_spawn are killed (TERM, then KILL after 2 s)
# by bench_cleanup; BENCH_TMP is removed. Scripts call bench_setup_cleanup
# once, which installs the trap and bounds the whole script to LIMIT seconds.
BENCH_PIDS=()
BENCH_TMP=""

bench_cleanup() {
  local pid i
  for pid in "${BENCH_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for ((i = 0; i < 20; i++)); do
    local alive=0
    for pid in "${BENCH_PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null && alive=1
    done
    ((alive)) || break
    sleep 0.1
  done
  for pid in "${BENCH_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  wait 2>/dev/null
  [[ -n "$BENCH_TMP" && -d "$BENCH_TMP" ]] && rm -rf "$BENCH_TMP"
  return 0
}

bench_setup_cleanup() {
  local limit=$1
  BENCH_TMP=$(mktemp -d)
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
  # Watchdog: a hung child or scrape cannot keep the script alive. It waits
  # with the read builtin on a FIFO nobody writes (no `sleep` child left
  # behind when the watchdog itself is killed).
  mkfifo "$BENCH_TMP/watchdog"
  (
    exec 3<>"$BENCH_TMP/watchdog"
    read -r -t "$limit" -u 3
    echo "$(basename "$0"): over ${limit}s, giving up" >&2
    kill -TERM $$
  ) &
  BENCH_PIDS+=($!)
}

# bench_spawn LOG PROGRAM [ARGS...]: starts PROGRAM in the background with
# stdout+stderr to LOG; its pid is in BENCH_SPAWNED.
bench_spawn() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  BENCH_SPAWNED=$!
  BENCH_PIDS+=("$BENCH_SPAWNED")
}
