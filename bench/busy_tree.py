#!/usr/bin/env python3
"""A copy of a recorded sysfs tree whose congestion counters keep moving.

Usage: bench/busy_tree.py DIR [SECONDS] [TREE]
  defaults: 120 s, tests/fixtures/real/sysfs-gpud-h100

bench/quiet_daemon.sh runs on a recorded tree, where no counter moves: an
idle node. This copies TREE to DIR/tree and, for SECONDS, rewrites every
port's counters/port_xmit_data, port_rcv_data and port_xmit_wait every
50 ms (in place: the daemon keeps the files open and preads them) as a port
at 60 % of its line rate, waiting 2 % of the time: a node running a job.
Run quiet_daemon.sh on DIR/tree beside it:

  python3 bench/busy_tree.py /tmp/busy 120 &
  sleep 2; bench/quiet_daemon.sh build/fabricmon 20 /tmp/busy/tree

The writer's own CPU is its process's, not fabricmon's. It stops after
SECONDS whatever happens.
"""
import glob
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = 0.05
TICK = 256e-9


def write(path, value):
    with open(path, "r+") as f:
        f.seek(0)
        f.write("%d\n" % value)
        f.truncate()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 120
    src = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
        ROOT, "tests/fixtures/real/sysfs-gpud-h100")
    tree = os.path.join(out, "tree")
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(src, tree, symlinks=True)
    ports = []
    for port in glob.glob(os.path.join(tree, "class/infiniband/*/ports/*")):
        port = os.path.realpath(port)
        c = os.path.join(port, "counters")
        files = [os.path.join(c, f) for f in
                 ("port_xmit_data", "port_rcv_data", "port_xmit_wait")]
        if all(os.path.exists(f) for f in files):
            ports.append([files, [int(open(f).read()) for f in files]])
    words = 0.6 * 400e9 / 8 / 4 * STEP  # 60 % of 400 Gb/s, 4-byte words
    ticks = 0.02 * STEP / TICK
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for files, values in ports:
            values[0] += int(words)
            values[1] += int(words)
            values[2] = min(values[2] + int(ticks), 0xFFFFFFFE)
            for f, v in zip(files, values):
                write(f, v)
        time.sleep(STEP)


if __name__ == "__main__":
    main()
