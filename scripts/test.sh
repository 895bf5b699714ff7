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
ctest --output-on-failure -j "$(nproc)" --timeout 900
