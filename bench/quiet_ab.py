#!/usr/bin/env python3
"""Two fabricmon builds side by side: CPU and wake-ups per thread.

Usage: bench/quiet_ab.py BINARY_A BINARY_B [SECONDS] [TREE]
  defaults: 30 s, tests/fixtures/real/sysfs-gpud-h100

bench/quiet_daemon.sh measures one build against node_exporter; on a
shared machine its figure moves by more than a change is worth from one run
to the next. This runs two builds at the same time, each with the built-in
defaults (--config /dev/null) on the same tree and a loopback port of its
own, so both see the same noise, and prints for each thread (named
fm:<collector>, see daemon/poller.cc) its CPU per second of running
(/proc/PID/task/*/schedstat) and its wake-ups per second (voluntary context
switches), then B's total over A's. The window starts 3 s after both serve.
Nothing scrapes them. Both are killed on exit, whatever happens.
"""
import glob
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_serving(port, proc, deadline):
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                   timeout=2).read()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def threads(pid):
    """{tid: (name, cpu_ns, voluntary_switches)} of a live process."""
    out = {}
    for task in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(task + "/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(task + "/status") as f:
                vol = next(int(l.split()[1]) for l in f
                           if l.startswith("voluntary_ctxt_switches"))
            with open(task + "/comm") as f:
                name = f.read().strip()
        except (OSError, StopIteration, ValueError):
            continue  # the thread ended meanwhile
        out[task.rsplit("/", 1)[1]] = (name, ns, vol)
    return out


def report(label, before, after, seconds):
    rows = {}
    for tid, (name, ns, vol) in after.items():
        _, ns0, vol0 = before.get(tid, (name, 0, 0))
        cpu, wake = rows.get(name, (0.0, 0.0))
        rows[name] = (cpu + (ns - ns0) / 1e6 / seconds,
                      wake + (vol - vol0) / seconds)
    total = [sum(r[0] for r in rows.values()), sum(r[1] for r in rows.values())]
    print("%s:" % label)
    for name in sorted(rows):
        print("  %-16s %7.3f ms/s %6.1f wake-ups/s" % (name, *rows[name]))
    print("  %-16s %7.3f ms/s %6.1f wake-ups/s" % ("total", *total))
    return total


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binaries = sys.argv[1:3]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    tree = sys.argv[4] if len(sys.argv) > 4 else os.path.join(
        ROOT, "tests/fixtures/real/sysfs-gpud-h100")
    for b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit("%s: not executable" % b)
    procs = []
    # Bounded whatever happens: the children die with us.
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("timed out"))
    signal.alarm(int(seconds) + 60)
    try:
        ports = []
        for b in binaries:
            port = free_port()
            ports.append(port)
            procs.append(subprocess.Popen(
                [b, "--config", "/dev/null", "--sysfs.root", tree,
                 "--web.listen-address", "127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        for port, proc in zip(ports, procs):
            if not wait_serving(port, proc, deadline):
                sys.exit("a fabricmon did not come up")
        time.sleep(3)
        before = [threads(p.pid) for p in procs]
        t0 = time.monotonic()
        time.sleep(seconds)
        after = [threads(p.pid) for p in procs]
        window = time.monotonic() - t0
        if any(p.poll() is not None for p in procs):
            sys.exit("a fabricmon exited during the window")
        a = report("A " + binaries[0], before[0], after[0], window)
        b = report("B " + binaries[1], before[1], after[1], window)
        print("window %.1f s; B/A CPU %.3f, wake-ups %.3f"
              % (window, b[0] / a[0] if a[0] else float("nan"),
                 b[1] / a[1] if a[1] else float("nan")))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()


if __name__ == "__main__":
    main()
