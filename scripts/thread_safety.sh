#!/usr/bin/env bash
# Clang's thread-safety analysis over the tree (core/thread_annotations.h):
# a syntax-only pass with -Wthread-safety -Werror over every compiled source
# except the test bodies, using the build's compile_commands.json. Run by
# scripts/test.sh after the build; fails on an access the annotations do not
# allow (an unguarded read of a GUARDED_BY member, a missing REQUIRES).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
python3 - "$BUILD_DIR/compile_commands.json" <<'PY' |
import json, shlex, sys
for entry in json.load(open(sys.argv[1])):
    src = entry["file"]
    if "/tests/unit/" in src or "/tests/integration/" in src or "/build" in src:
        continue
    args = shlex.split(entry["command"])
    # Drop the launcher (ccache) and the compiler; keep defines/includes.
    while args and not args[0].startswith("-"):
        args.pop(0)
    keep = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-c"):
            skip = a == "-o"
            continue
        if a.startswith("-I") or a.startswith("-D") or a.startswith("-std=") \
                or a == "-isystem" or keep and keep[-1] == "-isystem":
            keep.append(a)
    print(entry["directory"] + "\t" + src + "\t" + shlex.join(keep))
PY
  sort -u -t$'\t' -k2,2 |
  while IFS=$'\t' read -r dir src flags; do
    printf '%s\0' "cd '$dir' && clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety -Wno-unknown-warning-option $flags '$src'"
  done |
  xargs -0 -P "$(nproc)" -n 1 bash -c 'eval "$0"' 
echo "thread-safety: clean"
