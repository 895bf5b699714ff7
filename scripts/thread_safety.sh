#!/usr/bin/env bash
# Clang's thread-safety analysis over the tree (core/thread_annotations.h):
# a syntax-only pass with -Wthread-safety -Werror over every compiled source
# except the tests, using the build's compile_commands.json. Run by
# scripts/test.sh after the build; fails on an access the annotations do not
# allow (an unguarded read of a GUARDED_BY member, a missing REQUIRES).
#
# It first proves it can fail (tests/thread_safety/check.sh: clang must
# reject code that breaks the annotations), so a broken macro header cannot
# make the pass vacuously clean. Takes about 4 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "thread_safety.sh: no $BUILD_DIR/compile_commands.json (configure:" \
       "cmake -S . -B $BUILD_DIR)" >&2
  exit 1
fi
command -v clang++ >/dev/null || {
  echo "thread_safety.sh: clang++ missing (scripts/setup.sh)" >&2; exit 1; }
tests/thread_safety/check.sh
list="$(mktemp)"
trap 'rm -f "$list"' EXIT
# One shell command per source, NUL-terminated: the build's defines, include
# paths and standard, no warning flags but the analysis.
python3 - "$BUILD_DIR/compile_commands.json" "$PWD" >"$list" <<'PY'
import json, os, shlex, sys
db, root = sys.argv[1], os.path.realpath(sys.argv[2])
build = os.path.realpath(os.path.dirname(db))
seen = set()
for entry in json.load(open(db)):
    src = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(src, root)
    # This tree's sources only: not the tests, nothing generated in the
    # build directory, each file once (some are in several targets).
    if (rel.startswith(".." + os.sep) or rel.split(os.sep)[0] == "tests"
            or os.path.commonpath([src, build]) == build or src in seen):
        continue
    seen.add(src)
    args = entry.get("arguments") or shlex.split(entry["command"])
    # Drop the launcher (ccache) and the compiler.
    while args and not args[0].startswith("-"):
        args.pop(0)
    keep = []
    take_next = False
    for a in args:
        if take_next:
            keep.append(a)
            take_next = False
        elif a in ("-isystem", "-include", "-iquote"):
            keep.append(a)
            take_next = True
        elif a.startswith(("-I", "-D", "-U", "-std=", "-isystem", "-iquote")):
            keep.append(a)
    sys.stdout.write(
        "cd %s && clang++ -fsyntax-only -Wthread-safety "
        "-Werror=thread-safety -Wno-unknown-warning-option %s %s\0"
        % (shlex.quote(entry["directory"]), shlex.join(keep), shlex.quote(src)))
PY
n="$(tr -cd '\0' <"$list" | wc -c)"
if [ "$n" -eq 0 ]; then
  echo "thread_safety.sh: no sources in $BUILD_DIR/compile_commands.json" >&2
  exit 1
fi
if ! xargs -0 -P "$(nproc)" -n 1 bash -c 'eval "$0"' <"$list"; then
  echo "thread-safety: FAILED (clang's diagnostics above)" >&2
  exit 1
fi
echo "thread-safety: clean ($n sources)"
