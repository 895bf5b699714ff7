#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time is printed, so a CI log shows where the time went.
scripts/setup.sh
echo "test.sh: setup done at ${SECONDS} s"
scripts/build.sh
echo "test.sh: build done at ${SECONDS} s"
# Clang's thread-safety analysis over the tree (scripts/thread_safety.sh,
# about 4 minutes of both cores) runs beside ctest at nice 19: it takes the CPU the
# waiting tests leave idle and holds none of ctest's slots (run first, it
# added 4 minutes of wall; as a ctest test, its slot for 8 minutes cost the
# others about as much: docs/measurements.md, "Build time and a fresh clone").
tsa_log="$(mktemp)"
trap 'rm -f "$tsa_log"' EXIT
nice -n 19 scripts/thread_safety.sh >"$tsa_log" 2>&1 &
tsa_pid=$!
status=0
cd "${BUILD_DIR:-build}"
# Two ctest slots per core: a test takes both of a core's (PROCESSORS 2)
# unless cmake/test_schedule.cmake measured it waiting most of its wall
# (Prometheus intervals, alert `for:`s), so two waiting tests share a core
# instead of holding both cores while the CPU idles (docs/measurements.md,
# "Test wall time").
ctest --output-on-failure -j "$((2 * $(nproc)))" --timeout 900 || status=$?
echo "test.sh: ctest done at ${SECONDS} s"
tsa=0
wait "$tsa_pid" || tsa=$?
if [ "$tsa" -ne 0 ] && [ "$tsa" -ne 77 ]; then  # 77: no clang++, not CI
  cat "$tsa_log"
  status=1
fi
tail -n 1 "$tsa_log"
exit "$status"
