#!/usr/bin/env python3
"""What the gnmi collector costs at scale (issue 45 item 5).

Usage: bench/gnmi_scale.py [--binary B] [--switches N] [--ports P]
                           [--window S] [--warmup S] [--interval D]
  defaults: build/fabricmon, 64 switches, 64 ports, 60 s window, 20 s warm-up

One daemon subscribes (collectors.gnmi, sample_interval 1s, publishing at the
default interval 5s, --interval to change) to N
switches served by tests/gnmi/server.js --synthetic P (Node.js @grpc/grpc-js,
one process, N listening ports on 127.0.0.1: N separate TCP connections).
Every second each stream gets P ports x 28 leaves (10 interface counters,
oper-status, port-speed, 2 queues x 5, priority 3 x 4 PFC, 2 LLDP), counters
growing every round. A second daemon, gnmi off, on the same empty tree, is
the baseline. After the warm-up, a window of S seconds: CPU seconds of each
daemon (utime+stime, /proc/PID/stat, every thread) and of the target; both
daemons scraped every 15 s as Prometheus does (the exposition is part of the
cost); at the end VmRSS and VmHWM, the series exported, and the
notifications received per second (fabric_gnmi_updates_total), which must be
N x the notifications the target sends per round (4P) for the daemon to be
keeping up. Prints one line per figure and the extrapolation to 2,000
switches (linear in switches x ports; said so).
"""
import argparse, os, re, shutil, socket, subprocess, sys, tempfile, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=30) as r:
        return r.read().decode()


def total(text, family):
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
               if l.startswith(family + "{"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/fabricmon"))
    ap.add_argument("--switches", type=int, default=64)
    ap.add_argument("--ports", type=int, default=64)
    ap.add_argument("--window", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=20)
    # How often the daemon publishes what the streams brought (the
    # collector's `interval`, default 5s); the switches sample every 1 s.
    ap.add_argument("--interval", default="5s")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="gnmi-scale-")
    procs = []
    try:
        node_dir = os.path.join(os.path.dirname(a.binary), "gnmi-node")
        subprocess.run([os.path.join(ROOT, "tests/gnmi/install.sh"), node_dir],
                       check=True)
        env = dict(os.environ, NODE_PATH=os.path.join(node_dir, "node_modules"))
        log = open(os.path.join(work, "target.log"), "w+")
        target = subprocess.Popen(
            ["node", os.path.join(ROOT, "tests/gnmi/server.js"), "--proto",
             os.path.join(ROOT, "proto/gnmi"), "--ports", str(a.switches),
             "--synthetic", str(a.ports)],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
            env=env)
        procs.append(target)
        ports = None
        for _ in range(300):
            log.seek(0)
            m = re.search(r"listening ([\d ]+)\n", log.read())
            if m:
                ports = m.group(1).split()
                break
            time.sleep(0.1)
        if not ports:
            sys.exit("target did not start")
        os.mkdir(os.path.join(work, "sys"))
        daemons = {}
        for name, on in (("gnmi", True), ("baseline", False)):
            cfg = os.path.join(work, name + ".yaml")
            with open(cfg, "w") as f:
                f.write("collectors:\n  gnmi:\n")
                f.write(f"    enabled: {'true' if on else 'false'}\n")
                f.write(f"    interval: {a.interval}\n    sample_interval: 1s\n")
                f.write("    insecure: true\n    switches:\n")
                for i, p in enumerate(ports):
                    f.write(f"      - {{name: sw{i}, address: 127.0.0.1:{p}}}\n")
            port = free_port()
            p = subprocess.Popen(
                [a.binary, "--config", cfg, "--sysfs.root",
                 os.path.join(work, "sys"), "--web.listen-address",
                 f"127.0.0.1:{port}", "--log.level", "warn"],
                stdout=open(os.path.join(work, name + ".log"), "w"),
                stderr=subprocess.STDOUT)
            procs.append(p)
            daemons[name] = (p, port)
        time.sleep(a.warmup)
        gp, gport = daemons["gnmi"]
        start_text = scrape(gport)
        start = {n: cpu_seconds(p.pid) for n, (p, _) in daemons.items()}
        start_target = cpu_seconds(target.pid)
        t0 = time.monotonic()
        next_scrape = t0 + 7.5
        while time.monotonic() - t0 < a.window:
            if time.monotonic() >= next_scrape:
                for _, (p, port) in daemons.items():
                    scrape(port)
                next_scrape += 15
            time.sleep(0.2)
        elapsed = time.monotonic() - t0
        cpu = {n: (cpu_seconds(p.pid) - start[n]) / elapsed
               for n, (p, _) in daemons.items()}
        target_cpu = (cpu_seconds(target.pid) - start_target) / elapsed
        end_text = scrape(gport)
        rss, hwm = status(gp.pid, "VmRSS"), status(gp.pid, "VmHWM")
        base_rss = status(daemons["baseline"][0].pid, "VmRSS")
        updates = (total(end_text, "fabric_gnmi_updates_total") -
                   total(start_text, "fabric_gnmi_updates_total")) / elapsed
        up = total(end_text, "fabric_gnmi_switch_up")
        series = sum(1 for l in end_text.splitlines()
                     if l.startswith("fabric_switch_port_"))
        t = time.monotonic()
        body = scrape(gport)
        scrape_s = time.monotonic() - t
        leaves = a.switches * a.ports * 28
        expected = a.switches * a.ports * 5
        extra = cpu["gnmi"] - cpu["baseline"]
        print(f"switches {a.switches} x ports {a.ports}, sample 1 s, "
              f"publish every {a.interval}, window {elapsed:.0f} s")
        print(f"switches up: {up:.0f}/{a.switches}")
        print(f"notifications/s received: {updates:.0f} "
              f"(target sends {expected}/s; leaves/s {leaves})")
        print(f"switch port series: {series}")
        print(f"daemon CPU: {cpu['gnmi'] * 100:.1f}% of a core "
              f"(baseline {cpu['baseline'] * 100:.1f}%, gnmi "
              f"{extra * 100:.1f}%)")
        print(f"target (node) CPU: {target_cpu * 100:.1f}% of a core")
        print(f"daemon RSS: {rss / 2**20:.0f} MiB (peak {hwm / 2**20:.0f} MiB; "
              f"baseline {base_rss / 2**20:.0f} MiB)")
        print(f"one scrape: {scrape_s:.2f} s, {len(body) / 2**20:.1f} MiB")
        k = 2000 / a.switches
        print(f"extrapolated, linear in switches x ports (not measured): "
              f"2,000 switches x {a.ports} ports = {extra * k:.1f} cores, "
              f"{(rss - base_rss) * k / 2**30:.1f} GiB beyond the baseline, "
              f"{series * k / 1e6:.1f} M series")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
