#!/usr/bin/env bash
# Layering check (issue 41): nothing below the collectors includes them.
# core/, sources/, config/, benchtool/ and simulator/ are what collectors are
# built from (and what fabricmon-bench and the simulator use without the
# daemon), so an include of collectors/ from there is an upward arrow.
# Prints each offending include and exits 1; exits 0 on a clean tree.
# Usage: scripts/check_layering.sh [source-root]   (default: this repo)
# Run by ctest (tests/CMakeLists.txt: layering_includes, and
# layering_includes_fails on tests/layering/bad, which must fail).
set -uo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 2
found=0
for dir in core sources config benchtool simulator; do
  [ -d "$dir" ] || continue
  if grep -rnE --include='*.h' --include='*.cc' --include='*.cpp' \
       '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]collectors/' "$dir"; then
    found=1
  fi
done
if [ "$found" -ne 0 ]; then
  echo "check_layering.sh: the includes above reach up into collectors/" >&2
  exit 1
fi
echo "check_layering.sh: no upward include of collectors/"
