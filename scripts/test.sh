#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# Clang's thread-safety analysis over the tree (about 4 minutes on 2 cores);
# fails on an access the GUARDED_BY/REQUIRES annotations do not allow.
scripts/thread_safety.sh
cd "${BUILD_DIR:-build}"
# Two ctest slots per core: a test takes both of a core's (PROCESSORS 2)
# unless cmake/test_schedule.cmake measured it waiting most of its wall
# (Prometheus intervals, alert `for:`s), so two waiting tests share a core
# instead of holding both cores while the CPU idles (docs/measurements.md,
# "Test wall time").
ctest --output-on-failure -j "$((2 * $(nproc)))" --timeout 900
