#!/usr/bin/env python3
"""Expected wall time of the whole ctest run, from an event model of
ctest's scheduler (issue 44 item 1, docs/measurements.md "Test wall time").

  scripts/ctest_schedule_model.py BUILD_DIR [--jobs N] [--before]
      [--fresh] [--wall NAME=SECONDS ...]

Durations: BUILD_DIR/Testing/Temporary/CTestCostData.txt (each test's
average wall at the -j it last ran with) and --wall overrides. Tests and
their declaration order: BUILD_DIR's CTestTestfile.cmake files and the
discovered gtest lists. Schedule: cmake/test_schedule.cmake (slots, COST);
every other test 2 slots; --before: the old one (1 slot each, every
ProbeNetnsTest and SystemdNspawnTest alone, no COST). --fresh: no cost data
(a fresh clone): COST alone orders the tests, the rest keep declaration
order.

The model: tests sorted by cost, descending (stable); whenever slots free
up, each waiting test in that order starts if its slots fit (RUN_SERIAL:
all of them, and only when nothing else runs). Overlap is taken as free:
a test's wall is the same beside others, which holds as long as the slots
keep CPU demand within the cores (what the schedule is for); the real
overlapped runs are in docs/measurements.md.
"""
import argparse
import heapq
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def tests_in_order(build):
    names = []

    def from_file(path):
        text = open(path).read()
        names.extend(re.findall(r"^add_test\(\[=\[(.*?)\]=\]", text, re.M))

    def walk(d):
        tf = os.path.join(d, "CTestTestfile.cmake")
        if not os.path.exists(tf):
            return
        text = open(tf).read()
        for m in re.finditer(r'^include\("(.*)\[1\]_include.cmake"\)', text,
                             re.M):
            tests = m.group(1) + "[1]_tests.cmake"
            if os.path.exists(tests):
                from_file(tests)
        names.extend(re.findall(r"^add_test\(\[=\[(.*?)\]=\]", text, re.M))
        for sub in re.findall(r'^subdirs\("(.*)"\)', text, re.M):
            walk(os.path.join(d, sub))

    walk(build)
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--before", action="store_true")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--wall", action="append", default=[])
    a = ap.parse_args()
    jobs = a.jobs or (2 if a.before else 4)
    cost = {}
    with open(os.path.join(a.build, "Testing/Temporary/CTestCostData.txt")) as f:
        for line in f:
            if line.startswith("---"):
                break
            name, _, avg = line.rsplit(None, 2)
            cost[name] = float(avg)
    for w in a.wall:
        name, sec = w.rsplit("=", 1)
        cost[name] = float(sec)
    sched = {}
    if not a.before:
        text = open(os.path.join(HERE, "..", "cmake",
                                 "test_schedule.cmake")).read()
        body = re.search(r"set\(fabric_test_schedule\n(.*?)\n\)", text, re.S)
        for line in body.group(1).splitlines():
            row = line.split("#", 1)[0].split()
            if row:
                sched[row[0]] = (int(row[1]), float(row[2]))
        sched["thread_safety_annotations"] = (4, 13.0)  # tests/CMakeLists.txt
    serial = re.compile(r"^(ProbeNetnsTest\.|SystemdNspawnTest\.)" if a.before
                        else r"^ProbeNetnsTest\.MedianRtt")
    names = tests_in_order(a.build)

    def key(n):
        if n in sched:
            return -sched[n][1]
        return 0.0 if a.fresh else -cost.get(n, 0.0)

    def slots(n):
        if serial.match(n):
            return jobs
        return min(jobs, 1 if a.before else sched.get(n, (2, 0))[0])

    pending = sorted(names, key=key)
    t, free, running, alone = 0.0, jobs, [], False
    while pending or running:
        if not alone:
            for n in list(pending):
                if serial.match(n) and running:
                    continue
                if slots(n) <= free:
                    pending.remove(n)
                    free -= slots(n)
                    heapq.heappush(running, (t + cost.get(n, 0.0), slots(n), n))
                    if serial.match(n):
                        alone = True
                        break
                if free == 0:
                    break
        t, s, n = heapq.heappop(running)
        free += s
        if serial.match(n):
            alone = False
    print(f"{len(names)} tests, {'before' if a.before else 'after'}, -j{jobs}, "
          f"{'fresh clone' if a.fresh else 'with cost data'}: {t:.0f} s")


if __name__ == "__main__":
    main()
