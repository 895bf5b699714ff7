#!/usr/bin/env bash
# The whole test suite once more on an AddressSanitizer + UndefinedBehavior-
# Sanitizer build (./build-asan, override with BUILD_DIR). Not part of CI's
# run (it roughly quadruples it on 2 cores); run it after touching memory
# handling. Any sanitizer report fails: ASan aborts the process that hit it,
# and UBSan is made to do the same.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_DIR="${BUILD_DIR:-build-asan}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags -O1" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
cd "$BUILD_DIR"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$(nproc)" --timeout 900
