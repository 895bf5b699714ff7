#!/usr/bin/env python3
"""Series a fabricmon daemon exports, per collector, under one or more configs.

Usage: bench/series_count.py [--binary B] [--tree DIR | --simulate] [CONFIG ...]
  defaults: build/fabricmon, tests/fixtures/real/sysfs-gpud-h100, and the
  configs /dev/null (the built-in defaults) and packaging/fleet.yaml.

For each config a daemon runs on the tree (--sysfs.root, a free loopback
port; --simulate: the built-in simulator's host, a RoCE/IB mix with ethtool
and DCB dumps, instead) and is scraped once every collector has published (its
fabric_collector_success series are all there) and the congestion
collector's peaks are out (they need two samples). Every family is
attributed to the collector whose section of docs/metrics.md lists it; the
daemon's own families (sections daemon, http, descriptors) are "daemon".
Prints one row per collector: series under each config. The daemon is
killed on exit, whatever happens.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN = {"daemon", "http", "descriptors", "mad broker"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sections():
    """family name -> docs/metrics.md section (collector) it is listed in."""
    out = {}
    section = ""
    with open(os.path.join(ROOT, "docs/metrics.md")) as f:
        for line in f:
            if line.startswith("## "):
                section = line[3:].strip()
            m = re.match(r"\| `(fabric_[a-zA-Z0-9_:]*)", line)
            if m:
                out.setdefault(m.group(1), "daemon" if section in OWN
                               else section)
    return out


def family(series, known):
    name = series.split("{", 1)[0].split(" ", 1)[0]
    if name in known:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[:-len(suffix)] in known:
            return name[:-len(suffix)]
    return name


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=5) as r:
        return r.read().decode()


def count(binary, source, config, known):
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--config", config] + source +
        ["--web.listen-address", "127.0.0.1:%d" % port],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                sys.exit("fabricmon exited with %s under %s" %
                         (proc.returncode, config))
            try:
                text = scrape(port)
            except OSError:
                time.sleep(0.1)
                continue
            ran = re.findall(r'^fabric_collector_success\{collector="([^"]*)"',
                             text, re.M)
            peaks = ("congestion" not in ran or
                     "fabric_port_transmit_wait_peak_ratio" in text)
            # Two more seconds so that every 1 s collector has published.
            if ran and peaks:
                time.sleep(2)
                text = scrape(port)
                break
            time.sleep(0.2)
        per = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            c = known.get(family(line, known), "undocumented")
            per[c] = per.get(c, 0) + 1
        return per
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", default=os.path.join(ROOT, "build/fabricmon"))
    p.add_argument("--tree", default=os.path.join(
        ROOT, "tests/fixtures/real/sysfs-gpud-h100"))
    p.add_argument("--simulate", action="store_true")
    p.add_argument("configs", nargs="*", default=[
        "/dev/null", os.path.join(ROOT, "packaging/fleet.yaml")])
    args = p.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("timed out"))
    signal.alarm(60 * len(args.configs))
    known = sections()
    source = ["--simulate"] if args.simulate else ["--sysfs.root", args.tree]
    counts = [count(args.binary, source, c, known) for c in args.configs]
    names = sorted({c for per in counts for c in per},
                   key=lambda c: (c == "daemon", c))
    labels = [os.path.relpath(c, ROOT) if c.startswith(ROOT) else c
              for c in args.configs]
    print("tree: %s" % ("--simulate" if args.simulate
                        else os.path.relpath(args.tree, ROOT)))
    print("| collector | " + " | ".join("`%s`" % l for l in labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for name in names:
        print("| %s | %s |" % (name, " | ".join(
            str(per.get(name, 0)) for per in counts)))
    print("| **total** | %s |" % " | ".join(
        "**%d**" % sum(per.values()) for per in counts))


if __name__ == "__main__":
    main()
