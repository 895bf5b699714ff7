#!/usr/bin/env python3
"""What a poll interval buys at scrape time: freshness and link flaps seen.

Usage: bench/poll_freshness.py [--binary B] [--scale K] [--flaps N]
                               [--scrape S] [--random-phase] [INTERVAL ...]
  defaults: build/fabricmon, K 0.1, N 60, S 15, intervals 1 5 10 15 (s)

One daemon per ib_port interval runs side by side on one copy of the
recorded H100 tree (every other collector off), while this script plays
the hardware on the copy's first port:
  - counters/port_rcv_packets holds the wall clock in ms (rewritten every
    5 ms), so the value a scrape returns says when it was read;
  - N link flaps: `state` goes to "1: DOWN" for 2 s, then back to
    "4: ACTIVE", and counters/link_downed counts up by one.
and scrapes every daemon every S seconds, as Prometheus does: a fixed
period from a random start, so the phase between scrapes and polls stays
put (an interval that divides S shows every scrape the same age) or cycles
(one that does not, e.g. 10 s polls under 15 s scrapes, alternates ages and
so the increase between scrapes). With --random-phase each scrape falls at
a random point of its S window instead: the ages seen across many targets,
each with its own phase. Per interval it prints
  - the age of the data at scrape: scrape time minus read time (mean,
    95th percentile, max);
  - the error of a rate over one scrape interval: |increase between two
    scrapes / scrape gap - 1| (mean; what irate() and the shortest rate()
    windows show);
  - the share of the 2 s flaps that a scrape saw as state != ACTIVE, and
    the share the link_downed counter showed (any increase between scrapes).
Time runs K times as fast as in the field (K 0.1: 1.5 s scrapes, 0.1 s
polls for a 1 s interval), so a run takes minutes; every figure is printed
in field seconds. Daemons are killed on exit, whatever happens.
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAP = 2.0  # field seconds a flap lasts


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write(path, text):
    # In place: the daemon keeps the file open and preads it.
    with open(path, "r+") as f:
        f.seek(0)
        f.write(text)
        f.truncate()


def now_ms():
    return int(time.time() * 1000)


def scrape(port, device, port_num):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=5) as r:
        text = r.read().decode()
    sel = r'\{device="%s",port="%s"\}' % (device, port_num)
    def value(name, extra=sel):
        m = re.search(r"^%s%s (\S+)$" % (name, extra), text, re.M)
        return float(m.group(1)) if m else None
    return (value("fabric_port_receive_packets_total"),
            value("fabric_port_state"),
            value("fabric_port_errors_total",
                  r'\{device="%s",error="link_downed",port="%s"\}'
                  % (device, port_num)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=os.path.join(ROOT, "build/fabricmon"))
    p.add_argument("--scale", type=float, default=0.1)
    p.add_argument("--flaps", type=int, default=60)
    p.add_argument("--scrape", type=float, default=15)
    p.add_argument("--random-phase", action="store_true")
    p.add_argument("intervals", nargs="*", type=float,
                   default=[1, 5, 10, 15])
    a = p.parse_args()
    k = a.scale
    tmp = tempfile.mkdtemp(prefix="poll_freshness.")
    procs = []
    stop = threading.Event()
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("timed out"))
    budget = a.flaps * (a.scrape + max(a.intervals) + FLAP + 2 * a.scrape) * k
    signal.alarm(int(budget) + 120)
    try:
        tree = os.path.join(tmp, "tree")
        shutil.copytree(os.path.join(ROOT, "tests/fixtures/real/sysfs-gpud-h100"),
                        tree, symlinks=True)
        ib = os.path.join(tree, "class/infiniband")
        device = sorted(os.listdir(ib))[0]
        pdir = os.path.realpath(os.path.join(ib, device, "ports/1"))
        rcv = os.path.join(pdir, "counters/port_rcv_packets")
        state = os.path.join(pdir, "state")
        downed = os.path.join(pdir, "counters/link_downed")
        write(state, "4: ACTIVE\n")
        write(downed, "0\n")
        t0 = now_ms()
        write(rcv, "%d\n" % (now_ms() - t0))

        def clock():
            while not stop.wait(0.005):
                write(rcv, "%d\n" % (now_ms() - t0))
        threading.Thread(target=clock, daemon=True).start()

        daemons = []
        for interval in a.intervals:
            config = os.path.join(tmp, "p%g.yaml" % interval)
            with open(config, "w") as f:
                f.write("collectors:\n  ib_port:\n    interval: %dms\n"
                        % round(interval * k * 1000))
                for off in ("hw_counters", "congestion", "roce",
                            "nic_identity", "transceiver", "sm"):
                    f.write("  %s:\n    enabled: false\n" % off)
            port = free_port()
            procs.append(subprocess.Popen(
                [a.binary, "--config", config, "--sysfs.root", tree,
                 "--web.listen-address", "127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            daemons.append(port)
        for port, proc in zip(daemons, procs):
            deadline = time.monotonic() + 30
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit("a fabricmon did not come up")
                try:
                    if scrape(port, device, "1")[0] is not None:
                        break
                except OSError:
                    pass
                time.sleep(0.1)

        # One flap per cycle; the scrapes run on their own schedule.
        samples = {port: [] for port in daemons}  # (t_ms, rcv, state, downed)
        flaps = []

        def scraper():
            nxt = time.monotonic() + random.uniform(0, a.scrape * k)
            while not stop.is_set():
                jitter = random.uniform(0, a.scrape * k) if a.random_phase else 0
                time.sleep(max(0, nxt + jitter - time.monotonic()))
                for port in daemons:
                    t = now_ms() - t0
                    try:
                        samples[port].append((t, *scrape(port, device, "1")))
                    except OSError:
                        pass
                nxt += a.scrape * k
        threading.Thread(target=scraper, daemon=True).start()
        count = 0
        for _ in range(a.flaps):
            time.sleep(random.uniform(a.scrape, 2 * a.scrape) * k)
            start = now_ms() - t0
            write(state, "1: DOWN\n")
            count += 1
            write(downed, "%d\n" % count)
            time.sleep(FLAP * k)
            write(state, "4: ACTIVE\n")
            flaps.append((start, now_ms() - t0))
            # Long enough for the slowest poll and a scrape to show it.
            time.sleep((max(a.intervals) + a.scrape) * k)
        stop.set()
        time.sleep(a.scrape * k)

        print("field time: %g s scrapes (%s), %g s flaps, %d flaps; run at "
              "x%g speed" % (a.scrape, "random phase" if a.random_phase
                             else "fixed period", FLAP, a.flaps, 1 / k))
        print("| ib_port interval | age at scrape: mean / p95 / max | "
              "rate error over one scrape gap (mean) | flaps seen in "
              "fabric_port_state | flaps seen in link_downed |")
        print("|---:|---|---:|---:|---:|")
        for interval, port in zip(a.intervals, daemons):
            s = [x for x in samples[port] if x[1] is not None]
            ages = sorted((t - v) / k / 1000 for t, v, _, _ in s)
            errs = []
            for (t1, v1, _, _), (t2, v2, _, _) in zip(s, s[1:]):
                if t2 > t1:
                    errs.append(abs((v2 - v1) / (t2 - t1) - 1))
            seen_state = seen_counter = 0
            for i, (start, end) in enumerate(flaps):
                limit = flaps[i + 1][0] if i + 1 < len(flaps) else 1 << 62
                window = [x for x in s if start <= x[0] < limit]
                seen_state += any(x[2] is not None and x[2] != 4 for x in window)
                before = [x[3] for x in s if x[0] < start and x[3] is not None]
                after = [x[3] for x in window if x[3] is not None]
                seen_counter += bool(before and after and
                                     max(after) > before[-1])
            print("| %g s | %.2f / %.2f / %.2f s | %.1f%% | %d/%d | %d/%d |"
                  % (interval, statistics.mean(ages),
                     ages[int(0.95 * (len(ages) - 1))], ages[-1],
                     100 * statistics.mean(errs), seen_state, len(flaps),
                     seen_counter, len(flaps)))
    finally:
        stop.set()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
