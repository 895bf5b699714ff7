#!/usr/bin/env python3
"""Checks that ctest applies cmake/test_schedule.cmake (issue 44 item 1).

  check.py SCHEDULE_FILE BUILD_DIR [--all-built]

Reads the tests ctest would run (`ctest --show-only=json-v1`) and fails
when a scheduled test has not the PROCESSORS and COST of its row, when a
discovered gtest case outside the schedule does not take 2 slots, or (with
--all-built, a build with every optional test) when a row names a test that
no longer exists: ctest ignores properties set on an unknown name, so a
renamed test would silently lose its slot and its place at the front.
(A partial build, with <exe>_NOT_BUILT entries, cannot tell.)
"""
import json
import re
import subprocess
import sys


def rows(path):
    text = open(path).read()
    body = re.search(r"set\(fabric_test_schedule\n(.*?)\n\)", text, re.S)
    if not body:
        sys.exit(f"{path}: no set(fabric_test_schedule ...) block")
    out = {}
    for line in body.group(1).splitlines():
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) != 3:
            sys.exit(f"{path}: row is not `test slots cost`: {line}")
        name, slots, cost = line
        if name in out:
            sys.exit(f"{path}: {name} twice")
        out[name] = (int(slots), float(cost))
    return out


def main():
    schedule_file, build = sys.argv[1], sys.argv[2]
    all_built = "--all-built" in sys.argv[3:]
    schedule = rows(schedule_file)
    shown = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                           check=True, capture_output=True, text=True).stdout
    props, gtest = {}, set()
    for t in json.loads(shown)["tests"]:
        props[t["name"]] = {p["name"]: p["value"]
                            for p in t.get("properties", [])}
        if any(a.startswith("--gtest_filter=") for a in t.get("command", [])):
            gtest.add(t["name"])
    # An unbuilt test executable shows as <exe>_NOT_BUILT: its cases are
    # unknown, so only a complete build can tell a renamed test.
    partial = [n for n in props if n.endswith("_NOT_BUILT")]
    if partial:
        print(f"{len(partial)} test executables not built: names not checked")
        all_built = False
    errors = []
    for name, (slots, cost) in schedule.items():
        if name not in props:
            if all_built:
                errors.append(f"{name}: scheduled but not a test (renamed?)")
            continue
        p = props[name]
        if p.get("PROCESSORS", 1) != slots:
            errors.append(f"{name}: PROCESSORS {p.get('PROCESSORS', 1)}, "
                          f"scheduled {slots}")
        if abs(float(p.get("COST", -1)) - cost) > 1e-6:
            errors.append(f"{name}: COST {p.get('COST')}, scheduled {cost}")
    gtests = 0
    for name, p in props.items():
        # Discovered gtest cases run with --gtest_filter; the default slots
        # hold for every one outside the schedule.
        if name in schedule or name not in gtest:
            continue
        gtests += 1
        if p.get("PROCESSORS") != 2:
            errors.append(f"{name}: PROCESSORS {p.get('PROCESSORS', 1)}, "
                          "not the default 2")
    if gtests == 0:
        errors.append("no discovered gtest case outside the schedule")
    for e in errors[:50]:
        print(e)
    print(f"{len(schedule)} scheduled, {gtests} other gtest cases, "
          f"{len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
