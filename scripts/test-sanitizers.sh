#!/usr/bin/env bash
# scripts/test-sanitizers.sh [asan|tsan|all] [CTEST_ARGS...]
#
# The test suite once more on sanitizer builds:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (./build-asan,
#         override with BUILD_DIR or ASAN_BUILD_DIR); leaks are errors.
#   tsan  ThreadSanitizer (./build-tsan, override with TSAN_BUILD_DIR): the
#         poller threads, snapshot swaps, reload, the MAD engine, the OpenSM
#         socket and the exporter's scrape threads.
#   all   both (the default).
# CTEST_ARGS go to ctest, e.g. `scripts/test-sanitizers.sh tsan -L unit` or
# `-R 'daemon_|poller'`; BUILD_TARGETS="a_test b_test" builds only those
# (default: everything). Not part of CI's run (each build roughly quadruples
# it on 2 cores); run it after touching memory handling or threads. Any
# sanitizer report fails: ASan and TSan abort the process that hit it, and
# UBSan is made to do the same. SKIP_SETUP=1 skips scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
case "$mode" in
  asan | tsan | all) shift || true ;;
  -*) mode=all ;;
  *) echo "usage: $0 [asan|tsan|all] [CTEST_ARGS...]" >&2; exit 2 ;;
esac
[[ "${SKIP_SETUP:-}" == 1 ]] || scripts/setup.sh

# build_and_test DIR FLAGS ENV_ASSIGNMENTS... -- CTEST_ARGS...
build_and_test() {
  local dir=$1 flags=$2
  shift 2
  local env=()
  while (($#)) && [[ "$1" != -- ]]; do env+=("$1"); shift; done
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags -O1" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" \
    -DFABRICMON_BUILD_BENCH=OFF >/dev/null
  # `|| return`: errexit does not apply inside a function called with ||,
  # and a failed build must not pass as the few tests that did build.
  if [[ -n "${BUILD_TARGETS:-}" ]]; then
    # shellcheck disable=SC2086  # a list of target names
    cmake --build "$dir" -j "$(nproc)" --target $BUILD_TARGETS || return 1
  else
    cmake --build "$dir" -j "$(nproc)" || return 1
  fi
  (cd "$dir" && env "${env[@]}" ctest --output-on-failure -j "$(nproc)" \
    --timeout 900 "$@")
}

status=0
if [[ "$mode" == asan || "$mode" == all ]]; then
  build_and_test "${ASAN_BUILD_DIR:-${BUILD_DIR:-build-asan}}" \
    "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 -- "$@" || status=1
fi
if [[ "$mode" == tsan || "$mode" == all ]]; then
  # halt_on_error: a race fails the test that ran into it, not just a log.
  build_and_test "${TSAN_BUILD_DIR:-build-tsan}" \
    "-fsanitize=thread -fno-omit-frame-pointer" \
    "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1" -- "$@" || status=1
fi
exit "$status"
