#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time is printed, so a CI log shows where the time went.
scripts/setup.sh
echo "test.sh: setup done at ${SECONDS} s"
scripts/build.sh
echo "test.sh: build done at ${SECONDS} s"
# Clang's thread-safety analysis over the tree (about 4 minutes on 2 cores);
# fails on an access the GUARDED_BY/REQUIRES annotations do not allow. It
# runs alone: beside ctest, even at nice 19, it starved the tests' daemons
# (each test's daemons run in their own session, so the kernel's autogroups
# share the CPU between sessions, not by nice): docs/measurements.md,
# "Build time and a fresh clone".
scripts/thread_safety.sh
echo "test.sh: thread-safety pass done at ${SECONDS} s"
cd "${BUILD_DIR:-build}"
# Two ctest slots per core: a test takes both of a core's (PROCESSORS 2)
# unless cmake/test_schedule.cmake measured it waiting most of its wall
# (Prometheus intervals, alert `for:`s), so two waiting tests share a core
# instead of holding both cores while the CPU idles (docs/measurements.md,
# "Test wall time").
ctest --output-on-failure -j "$((2 * $(nproc)))" --timeout 900
