#!/usr/bin/env python3
"""A simulated fleet into the VictoriaMetrics deployment, measured.

Serves a fleet of synthetic fabricmon /metrics endpoints from this one
process (niced): GPUS/8 GPU nodes of 8 InfiniBand rails + 1 RoCE port with
the families the shipped rules and dashboards read (the fleet profile; the
series of bench/rules_scale.py's generator), about SWITCH_PORTS switch ports
split over SHARDS sweep nodes, and PEERS probe peers per rail at the lean
default (per pair: sent, lost, RTT sum and count, network-RTT sum and count,
the window's max RTT and the pair's port info = 8 series; one full RTT
histogram per local rail). Counters advance at their generator's rate with
+-10 % noise per scrape, peaks and ratios move +-5 %: values compress as
live data does, not as constants.

Then runs deploy/victoriametrics/ on loopback, flags from its units: two
vmagents in cluster mode (file_sd of every endpoint, every SCRAPE) ->
victoria-metrics -> vmalert with the shipped rules at their own intervals
(EVAL for the others) -> Alertmanager, all niced, for MINUTES, and reports
as Markdown (--out):
  - series, samples/s ingested (vm_rows_inserted_total), CPU s per 1 M
    samples of victoria-metrics and of the vmagents;
  - bytes per sample on disk (vm_data_size_bytes / vm_rows) at the end, and
    after a forced merge (/internal/force_merge: what the background merges
    reach over the following hours);
  - resident memory of each process at the end;
  - each rule group's evaluation time under vmalert
    (vmalert_iteration_duration_seconds: mean of all, and the median).

Usage: bench/vm_sizing.py [--gpus 10000] [--switch-ports 50000] [--shards 8]
         [--peers 3] [--scrape 30] [--eval 30] [--minutes 20]
         [--workdir DIR] [--keep] [--out FILE.md]
Every process listens on 127.0.0.1 and is stopped by its pid.
"""
import argparse
import http.server
import json
import os
import random
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rules_scale  # noqa: E402  (the generator of the fleet's series)

ROOT = rules_scale.ROOT
DEPLOY = os.path.join(ROOT, "deploy", "victoriametrics")
PROBE_HIST = re.compile(r"^fabric_probe_(network_)?rtt_seconds_(bucket|sum|count)\{")
NOISY = re.compile(r"peak|ratio|celsius|temperature|watts|_max_seconds")


def parse_fleet(path, step, peers_per_host):
    """The generator's first two samples of every series, per instance.

    Returns {instance: [[prefix, value, per_second, noisy], ...]}; `up` is
    left out (vmagent writes it), job and instance are left to vmagent.
    Probe histograms are made lean: per pair only _sum and _count, and one
    histogram (the first peer's buckets, without `peer`) per local rail."""
    fleet = {}
    first = {}
    done = set()  # series whose first two samples were read
    label_re = re.compile(r'job="fabricmon",instance="([^"]+)",?')
    with open(path) as f:
        for line in f:
            if line.startswith("#") or line.startswith("up{"):
                continue
            head, value, _ = line.rsplit(" ", 2)
            m = label_re.search(head)
            if not m:
                continue
            inst = m.group(1)
            series = head[:m.start()] + head[m.end():]
            series = series.replace("{}", "")
            key = (inst, series)
            if key in done:
                continue
            if key not in first:
                first[key] = float(value)
                continue
            v0 = first.pop(key)
            done.add(key)
            fleet.setdefault(inst, []).append(
                [series, v0, (float(value) - v0) / step, None])
    lean = {}
    for inst, rows in fleet.items():
        out, pair_hist, pairs = [], {}, []
        for row in rows:
            series = row[0]
            if PROBE_HIST.match(series):
                peer = re.search(r'peer="([^"]+)"', series).group(1)
                if series.split("{")[0].endswith("_bucket"):
                    pair_hist.setdefault(peer, []).append(row)
                    continue
            if series.startswith("fabric_probe_sent_total{"):
                pairs.append(series)
            out.append(row)
        # One full histogram per local rail: the first pair's buckets.
        if pair_hist:
            buckets = [b for b in next(iter(pair_hist.values()))
                       if b[0].startswith("fabric_probe_rtt_seconds_bucket")]
            for rail in rules_scale.IB_DEVICES:
                for b in buckets:
                    s = re.sub(r'peer="[^"]+",transport="udp"',
                               'device="%s",port="1",transport="udp"' % rail,
                               b[0])
                    out.append([s, b[1], b[2], None])
        # The window's max RTT and the pair's port info.
        for s in pairs:
            labels = s[s.index("{"):]
            out.append(["fabric_probe_rtt_max_seconds" + labels, 3e-5, 0.0,
                        None])
            out.append(["fabric_probe_pair_info" + labels[:-1] +
                        ',device="mlx5_0",port="1",remote_device="mlx5_0",'
                        'remote_port="1"}', 1.0, 0.0, None])
        for row in out:
            row[3] = bool(NOISY.search(row[0].split("{")[0]))
        lean[inst] = out
    return lean


class Fleet:
    """Per-target state: each scrape advances that target's counters."""

    def __init__(self, fleet):
        self.names = sorted(fleet)
        self.rows = [fleet[n] for n in self.names]
        self.last = [time.time()] * len(self.names)
        self.locks = [threading.Lock() for _ in self.names]
        self.rng = random.Random(1)

    def render(self, i):
        with self.locks[i]:
            now = time.time()
            dt = now - self.last[i]
            self.last[i] = now
            rnd = self.rng.random
            parts = []
            for row in self.rows[i]:
                if row[2]:
                    row[1] += row[2] * dt * (0.9 + 0.2 * rnd())
                    parts.append("%s %d\n" % (row[0], row[1]))
                elif row[3]:
                    parts.append("%s %.6g\n" % (row[0],
                                               row[1] * (0.95 + 0.1 * rnd())))
                else:
                    parts.append("%s %.17g\n" % (row[0], row[1]))
            return "".join(parts).encode()


def serve(fleet):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # vmagent keeps its connections

        def do_GET(self):
            m = re.match(r"^/t/(\d+)/metrics", self.path)
            if not m or int(m.group(1)) >= len(fleet.names):
                self.send_error(404)
                return
            body = fleet.render(int(m.group(1)))
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass  # a scrape that timed out: counted by vmagent

        def log_message(self, *args):
            pass

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        request_queue_size = 2048  # every target may connect at once

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def unit_command(unit, subst):
    """A shipped unit's ExecStart as argv, ${VAR}s, %i and paths replaced."""
    text = open(os.path.join(DEPLOY, unit)).read().replace("\\\n", " ")
    command = re.search(r"ExecStart=([^\n]*)", text).group(1)
    for k, v in subst.items():
        command = command.replace(k, v)
    assert "${" not in command, command
    return command.split()


def metrics(port):
    """name{labels} -> value of a process' /metrics."""
    out = {}
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                  timeout=30).read().decode()
    for line in body.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def total(m, name, match=""):
    return sum(v for k, v in m.items()
               if (k == name or k.startswith(name + "{")) and match in k)


def wait_http(port, path, limit=60):
    end = time.time() + limit
    while time.time() < end:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                   timeout=5)
            return True
        except Exception:
            time.sleep(0.5)
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=10000)
    ap.add_argument("--switch-ports", type=int, default=50000)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--peers", type=int, default=3, help="probe peers per rail")
    ap.add_argument("--scrape", type=int, default=30)
    ap.add_argument("--eval", type=int, default=30)
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    os.nice(10)  # everything started from here inherits it
    work = args.workdir or tempfile.mkdtemp(prefix="vm_sizing_")
    os.makedirs(work, exist_ok=True)
    procs = []

    def start(name, argv):
        log = open(os.path.join(work, name + ".log"), "w")
        procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))
        return procs[-1]

    def free():
        return rules_scale.free_port()

    try:
        hosts = args.gpus // 8
        rules_scale.SWEEPERS = args.shards
        t0 = time.time()
        om = os.path.join(work, "fleet.om")
        step = 30
        rules_scale.generate(om, hosts * 9, [1000 * step * i for i in range(4)],
                             step, args.switch_ports, args.peers * 8)
        fleet = Fleet(parse_fleet(om, step, args.peers * 8))
        os.remove(om)
        series = sum(fleet.render(i).count(b"\n")
                     for i in range(len(fleet.names)))
        print("fleet: %d targets, %d series (%.0f s to build)"
              % (len(fleet.names), series, time.time() - t0), flush=True)
        gen_port = serve(fleet)
        targets = [{"targets": ["127.0.0.1:%d" % gen_port],
                    "labels": {"instance": n, "__metrics_path__":
                               "/t/%d/metrics" % i}}
                   for i, n in enumerate(fleet.names)]
        os.makedirs(os.path.join(work, "targets"))
        json.dump(targets, open(os.path.join(work, "targets", "fleet.json"), "w"))
        scrape = open(os.path.join(DEPLOY, "scrape.yml")).read()
        scrape = scrape.replace("/etc/fabricmon/targets/",
                                os.path.join(work, "targets") + "/")
        scrape = re.sub(r"scrape_interval: \w+",
                        "scrape_interval: %ds" % args.scrape, scrape)
        # The whole fleet's switch ports come from SHARDS targets: give
        # each scrape as long as it needs, as for the sweep nodes.
        scrape = re.sub(r"scrape_timeout: \w+",
                        "scrape_timeout: %ds" % args.scrape, scrape)
        open(os.path.join(work, "scrape.yml"), "w").write(scrape)

        vm_port, am_port, alert_port = free(), free(), free()
        start("victoria-metrics", ["/usr/bin/victoria-metrics",
              "-storageDataPath=" + os.path.join(work, "vm-data"),
              "-httpListenAddr=127.0.0.1:%d" % vm_port,
              "-search.maxUniqueTimeseries=5000000"])
        open(os.path.join(work, "am.yml"), "w").write(
            "route:\n  receiver: default\nreceivers:\n  - name: default\n")
        start("alertmanager", ["/usr/bin/prometheus-alertmanager",
              "--config.file=" + os.path.join(work, "am.yml"),
              "--storage.path=" + os.path.join(work, "am-data"),
              "--web.listen-address=127.0.0.1:%d" % am_port,
              "--cluster.listen-address="])
        assert wait_http(vm_port, "/health"), "victoria-metrics did not start"
        agent_ports = []
        for i in range(2):
            agent_ports.append(free())
            start("vmagent%d" % i, unit_command("vmagent-fabricmon@.service", {
                "${VMAGENT_MEMBERS}": "2", "%i": str(i),
                "${VM_URL}": "http://127.0.0.1:%d" % vm_port,
                "${STATE_DIRECTORY}": os.path.join(work, "vmagent%d" % i),
                "/etc/fabricmon/vmagent-scrape.yml":
                    os.path.join(work, "scrape.yml")}) +
                ["-httpListenAddr=127.0.0.1:%d" % agent_ports[-1],
                 "-promscrape.maxScrapeSize=256MB"])
        start("vmalert", unit_command("vmalert-fabricmon.service", {
            "${VM_URL}": "http://127.0.0.1:%d" % vm_port,
            "${ALERTMANAGER_URL}": "http://127.0.0.1:%d" % am_port,
            "${EVALUATION_INTERVAL}": "%ds" % args.eval,
            "/usr/share/fabricmon/rules/":
                os.path.join(ROOT, "dashboards", "prometheus") + "/"}) +
            ["-httpListenAddr=127.0.0.1:%d" % alert_port])

        # Warm-up: every target scraped once, then measure.
        end = time.time() + 600
        while time.time() < end:
            try:
                r = json.load(urllib.request.urlopen(
                    "http://127.0.0.1:%d/api/v1/query?query=%s" % (
                        vm_port, urllib.parse.quote('count(up{job="fabricmon"})')),
                    timeout=30))
                got = r["data"]["result"]
                if got and int(float(got[0]["value"][1])) == len(fleet.names):
                    break
            except OSError:
                pass
            time.sleep(5)
        print("warm at %s" % time.strftime("%H:%M:%S"), flush=True)
        start_t = time.time()
        vm0, agents0 = metrics(vm_port), [metrics(p) for p in agent_ports]
        time.sleep(args.minutes * 60)
        elapsed = time.time() - start_t
        vm1, agents1 = metrics(vm_port), [metrics(p) for p in agent_ports]
        alert = metrics(alert_port)
        scrapes = sum(total(a1, "vm_promscrape_scrapes_total") -
                      total(a0, "vm_promscrape_scrapes_total")
                      for a0, a1 in zip(agents0, agents1))
        failed = sum(total(a1, "vm_promscrape_scrapes_failed_total") -
                     total(a0, "vm_promscrape_scrapes_failed_total")
                     for a0, a1 in zip(agents0, agents1))
        rows = total(vm1, "vm_rows_inserted_total") - total(vm0, "vm_rows_inserted_total")
        active = total(vm1, "vm_cache_entries", 'type="storage/hour_metric_ids"')
        vm_cpu = total(vm1, "process_cpu_seconds_total") - total(vm0, "process_cpu_seconds_total")
        agent_cpu = sum(total(a1, "process_cpu_seconds_total") -
                        total(a0, "process_cpu_seconds_total")
                        for a0, a1 in zip(agents0, agents1))

        def bytes_per_sample(m):
            size = total(m, "vm_data_size_bytes", 'type="storage/')
            n = total(m, "vm_rows", 'type="storage/')
            return size / n if n else float("nan"), size, n

        bps, size, stored = bytes_per_sample(vm1)
        try:  # a busy server may refuse it (503): then the run's figure only
            urllib.request.urlopen(
                "http://127.0.0.1:%d/internal/force_merge" % vm_port, timeout=60)
            time.sleep(60)
            bps_merged, size_merged, stored_merged = bytes_per_sample(
                metrics(vm_port))
        except OSError:
            bps_merged, size_merged, stored_merged = float("nan"), 0, 0
        rss = {"victoria-metrics": total(vm1, "process_resident_memory_bytes"),
               "vmalert": total(alert, "process_resident_memory_bytes")}
        for i, a in enumerate(agents1):
            rss["vmagent %d" % i] = total(a, "process_resident_memory_bytes")
        groups = {}
        for k, v in alert.items():
            m = re.match(r'vmalert_iteration_duration_seconds(_sum|_count|)\{'
                         r'.*group="([^"]+)".*?(quantile="([^"]+)")?', k)
            if not m:
                continue
            g = groups.setdefault(m.group(2), {})
            q = re.search(r'quantile="([^"]+)"', k)
            g[m.group(1) or ("q" + q.group(1) if q else "")] = v
        # Rules in error, per group: vmalert 1.79 has no per-group error
        # counter, only a gauge per rule (vmalert_alerting_rules_error,
        # vmalert_recording_rules_error: 1 while its last evaluation failed)
        # and the all-groups vmalert_execution_errors_total; later releases
        # name a counter per rule vmalert_*_rules_errors_total. Both count.
        for k, v in alert.items():
            m = re.match(r'vmalert_(alerting|recording)_rules_errors?'
                         r'(_total)?\{.*group="([^"]+)"', k)
            if m:
                g = groups.setdefault(m.group(3), {})
                g["errors"] = g.get("errors", 0) + v
        lines = [
            "Fleet: %d GPUs (%d nodes), %d switch ports in %d sweep shards, "
            "%d probe peers per rail; scrape %d s, rules every %d s; "
            "%.1f min measured from %s UTC; load average %s."
            % (args.gpus, hosts, args.switch_ports, args.shards, args.peers,
               args.scrape, args.eval, elapsed / 60,
               time.strftime("%Y-%m-%d %H:%M", time.gmtime(start_t)),
               " ".join("%.2f" % x for x in os.getloadavg())),
            "",
            "| quantity | measured |", "|---|---|",
            "| targets | %d |" % len(fleet.names),
            "| series served | %d |" % series,
            "| active series in VictoriaMetrics (with recorded) | %d |" % active,
            "| samples/s ingested (served: series / scrape interval) | %.0f (%.0f) |"
            % (rows / elapsed, series / args.scrape),
            "| scrapes failed (generator starved, timed out) | %d of %d |" % (failed, scrapes),
            "| victoria-metrics CPU per 1 M samples | %.2f s |" % (vm_cpu / rows * 1e6),
            "| vmagents' CPU per 1 M samples | %.2f s |" % (agent_cpu / rows * 1e6),
            "| bytes per sample on disk (end of run) | %.2f (%d B / %d) |" % (bps, size, stored),
            "| bytes per sample after force_merge | %.2f (%d B / %d) |" % (bps_merged, size_merged, stored_merged),
            "| failed rule evaluations (vmalert_execution_errors_total) | %d of %d |"
            % (total(alert, "vmalert_execution_errors_total"),
               total(alert, "vmalert_execution_total")),
        ]
        for name, v in sorted(rss.items()):
            lines.append("| RSS %s | %.0f MiB |" % (name, v / 2**20))
        lines += ["", "| rule group | evaluations | rule errors | mean (s) | median (s) | p99 (s) |",
                  "|---|---|---|---|---|---|"]
        for g, v in sorted(groups.items()):
            n = v.get("_count", 0)
            lines.append("| %s | %d | %d | %.3f | %.3f | %.3f |" % (
                g, n, v.get("errors", 0),
                v.get("_sum", 0) / n if n else float("nan"),
                v.get("q0.5", float("nan")), v.get("q0.99", float("nan"))))
        text = "\n".join(lines) + "\n"
        print(text)
        if args.out:
            open(args.out, "w").write(text)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
