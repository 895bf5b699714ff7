#!/usr/bin/env bash
# Proves the thread-safety pass can fail: compiles snippets.cc with clang's
# -Wthread-safety -Werror, once as correct code (must compile) and once per
# mistake (must be rejected with the expected diagnostic), and every variant
# with g++ (the macros must be no-ops there). A broken
# core/thread_annotations.h (macros that expand to nothing under clang, an
# unannotated MutexLock) fails here. Run by scripts/thread_safety.sh and as
# the ctest thread_safety_annotations. Exit 77 (skipped) without clang++,
# outside CI.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
CLANGXX="${CLANGXX:-clang++}"
GXX="${GXX:-g++}"
if ! command -v "$CLANGXX" >/dev/null; then
  echo "thread_safety check: $CLANGXX missing (scripts/setup.sh)" >&2
  [ "${CI:-}" = true ] && exit 1  # CI must not skip for a missing tool
  exit 77
fi
flags=(-std=c++20 -fsyntax-only -I"$root")
tsa=(-Wthread-safety -Werror=thread-safety)
fail=0

if ! out=$("$CLANGXX" "${flags[@]}" "${tsa[@]}" "$here/snippets.cc" 2>&1); then
  echo "FAIL: correct snippets rejected by clang:"; echo "$out"; fail=1
fi

expect=(
  [1]="reading variable 'n_' requires holding mutex 'mu_'"
  [2]="calling function 'AddLocked' requires holding mutex 'mu_'"
  [3]="writing variable 'n_' requires holding mutex 'mu_'"
  [4]="reading variable 'n_' requires holding mutex 'mu_'"
  [5]="mutex 'mu_' is still held at the end of function"
)
for n in "${!expect[@]}"; do
  if out=$("$CLANGXX" "${flags[@]}" "${tsa[@]}" -DCASE="$n" \
           "$here/snippets.cc" 2>&1); then
    echo "FAIL: case $n (${expect[$n]}) compiled without an error"; fail=1
  elif ! grep -qF -- "${expect[$n]}" <<<"$out"; then
    echo "FAIL: case $n rejected, but not with \"${expect[$n]}\":"
    echo "$out"; fail=1
  fi
done

if command -v "$GXX" >/dev/null; then
  for n in "" "${!expect[@]}"; do
    if ! out=$("$GXX" "${flags[@]}" -Wall -Wextra -Werror \
               ${n:+-DCASE=$n} "$here/snippets.cc" 2>&1); then
      echo "FAIL: g++ rejects ${n:+case $n of }snippets.cc:"; echo "$out"
      fail=1
    fi
  done
fi

if [ "$fail" = 0 ]; then
  echo "thread_safety check: clang rejects all ${#expect[@]} mistakes;" \
       "correct code passes"
fi
exit "$fail"
