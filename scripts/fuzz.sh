#!/usr/bin/env bash
# scripts/fuzz.sh SECONDS [NAME...]
#
# Builds every libFuzzer target (fuzz/<name>_fuzz.cc; clang with
# -fsanitize=fuzzer,address,undefined, every library instrumented) in
# ./build-fuzz (override with BUILD_DIR) and runs each for SECONDS, or only
# the NAMEs given (e.g. `scripts/fuzz.sh 60 mad_codec config`). Each run
# starts from fuzz/corpus/<name>/ plus, for the text parsers, the recorded
# fixtures; what it discovers goes to a scratch corpus, never into the tree.
# Prints the executions each target reached. Exits non-zero if any target
# found a crash, sanitizer report, leak, timeout or out-of-memory: the
# reproducer is kept in $FUZZ_OUT (default BUILD_DIR/findings); replay it with
# `BUILD_DIR/fuzz/<name>_fuzz FILE`, fix, and add it to fuzz/corpus/<name>/
# so fuzz_replay_test keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:?usage: scripts/fuzz.sh SECONDS [NAME...]}
shift
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "SECONDS: a whole number" >&2; exit 2; }
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_OUT=${FUZZ_OUT:-$BUILD_DIR/findings}

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ missing (scripts/setup.sh)" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFABRICMON_FUZZ=ON -DFABRICMON_BUILD_TESTS=OFF -DFABRICMON_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target fuzz_all

# Recorded inputs of the same kind as a target's, besides its corpus.
fixture_seeds() {
  case "$1" in
    sysfs_parse) echo tests/fixtures/real/sysfs tests/fixtures/real/sysfs-gpud-h100 \
      tests/fixtures/real/sysfs-node_exporter tests/fixtures/synthetic ;;
    ethtool_parse) echo tests/fixtures/ethtool tests/fixtures/real/ethtool ;;
  esac
}

if (($# == 0)); then
  set -- $(for f in fuzz/*_fuzz.cc; do n=${f##*/}; echo "${n%_fuzz.cc}"; done)
fi
mkdir -p "$FUZZ_OUT"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for name in "$@"; do
  bin="$BUILD_DIR/fuzz/${name}_fuzz"
  [[ -x "$bin" ]] || { echo "fuzz.sh: no target $bin" >&2; status=1; continue; }
  [[ -d "fuzz/corpus/$name" ]] || { echo "fuzz.sh: fuzz/corpus/$name missing" >&2; status=1; continue; }
  mkdir -p "$scratch/$name"
  log="$FUZZ_OUT/$name.log"
  rc=0
  # shellcheck disable=SC2046  # the fixture dirs are plain words
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$FUZZ_OUT/$name-" \
    "$scratch/$name" "fuzz/corpus/$name" $(fixture_seeds "$name") >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 || true)
  if ((rc == 0)); then
    echo "$name: ${execs:-?} executions in ${seconds} s, ${cov:-cov: ?}, no finding"
  else
    status=1
    echo "$name: FINDING (exit $rc) after ${execs:-?} executions; log $log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5 || true
    ls "$FUZZ_OUT/$name-"* 2>/dev/null | head -n 3 || true
  fi
done
exit "$status"
