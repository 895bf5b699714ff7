#!/usr/bin/env python3
"""Rules and dashboards against a real Prometheus holding a large fabric.

Generates synthetic fabricmon data for PORTS ports (hosts of 8 InfiniBand
ports + 1 RoCE port, every family the shipped rules and dashboards read) at
STEP resolution over HOURS, as OpenMetrics text; backfills it with
`promtool tsdb create-blocks-from openmetrics`; starts a real Prometheus
(Debian package) on that storage with the shipped recording and alerting
rules, evaluated every STEP; then reports
  - the sample and series count, and how long generation and backfill took;
  - each rule group's evaluation time (prometheus_rule_group_last_duration_
    seconds, after every group, the 5 m memory group included, has run);
  - each dashboard query's time over its dashboard's default time range
    (range queries at STEP, instant queries for tables), with the variables
    at their defaults (All, or the first instance where the dashboard has
    no All), $__rate_interval = 4 x STEP;
against the budgets (rule group < 1 s, panel query < 2 s), as Markdown.

The data ends BUFFER in the future, so "now" (when the rules run) is inside
it. Mostly healthy, with the faults the rules look for on a few ports: hot
ports, a down port, a degraded link, link errors, one PFC storm.

Usage: bench/rules_scale.py [--ports 10000] [--hours 6] [--step 30]
                            [--workdir DIR] [--keep] [--out FILE.md]
Everything (data, blocks, Prometheus) lives in WORKDIR (default a new temp
directory, removed at the end unless --keep); Prometheus listens on a free
127.0.0.1 port and is stopped by pid.
"""
import argparse
import calendar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = os.path.join(ROOT, "dashboards", "prometheus")
DASHBOARDS = os.path.join(ROOT, "dashboards", "grafana")
IB_DEVICES = ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7",
              "mlx5_8", "mlx5_9"]
ROCE = ("mlx5_bond_0", "bond0")
# Errors the rules and dashboards read by name; the daemon exports 13 kinds,
# the others only feed the dashboards' sums (left out to keep the data small).
ERRORS = ["symbol_error", "port_rcv_errors", "local_link_integrity_errors",
          "link_error_recovery", "link_downed", "port_xmit_discards"]
COLLECTORS = ["ib_port", "hw_counters", "congestion", "roce", "nic_identity"]
NDR = 50e9  # 400 Gb/s in bytes/s


def fmt(v):
    return repr(float(v)) if isinstance(v, float) else str(v)


class Writer:
    """Writes one family at a time, each series' samples in time order."""

    def __init__(self, path, timestamps):
        self.f = open(path, "w", buffering=1 << 22)
        self.ts = [str(t) for t in timestamps]
        self.n = len(timestamps)
        self.samples = 0
        self.series = 0
        self.family = None

    def gauge(self, name, labels, value):
        """value: a number, or f(i) -> number for sample i."""
        self.series += 1
        self.samples += self.n
        head = name + "{" + labels + "} "
        if callable(value):
            self.f.write("".join(head + fmt(value(i)) + " " + t + "\n"
                                 for i, t in enumerate(self.ts)))
        else:
            v = fmt(value)
            self.f.write("".join(head + v + " " + t + "\n" for t in self.ts))

    def counter(self, name, labels, per_second, step, start=0.0):
        self.gauge(name, labels,
                   lambda i: int(start + per_second * step * i))

    def close(self):
        self.f.write("# EOF\n")
        self.f.close()


def generate(path, ports, timestamps, step):
    hosts = (ports + 8) // 9
    w = Writer(path, timestamps)
    n = len(timestamps)
    hostnames = ["h%05d:10915" % h for h in range(hosts)]

    def base(h):
        return 'job="fabricmon",instance="%s"' % hostnames[h]

    def each_port():
        for h in range(hosts):
            for d in IB_DEVICES:
                yield h, d, "InfiniBand"
            yield h, ROCE[0], "Ethernet"

    def pl(h, d):
        return base(h) + ',device="%s",port="1"' % d

    # Faults, on fixed ports so each run is the same.
    hot = {(h, "mlx5_0") for h in range(0, hosts, max(1, hosts // 20))}
    down = (1 % hosts, "mlx5_4")
    degraded = (2 % hosts, "mlx5_5")
    erroring = (3 % hosts, "mlx5_6")
    storm = 4 % hosts
    half = n // 2

    families = []

    def family(fn):
        families.append(fn)
        return fn

    @family
    def up():
        for h in range(hosts):
            w.gauge("up", base(h), 1)

    @family
    def info():
        for h, d, ll in each_port():
            w.gauge("fabric_port_info", pl(h, d) +
                    ',link_layer="%s",node_guid="0x%016x",port_guid="0x%016x",'
                    'hca_type="%s",fw_ver="28.41.1000",netdev="%s"'
                    % (ll, h * 16 + 1, h * 16 + 2,
                       "MT4129" if ll == "InfiniBand" else "MT41692",
                       ROCE[1] if ll == "Ethernet" else ""), 1)

    @family
    def device_info():
        for h, d, ll in each_port():
            w.gauge("fabric_device_info", base(h) +
                    ',device="%s",hca_type="MT4129",fw_ver="28.41.1000",'
                    'board_id="MT_0000000838",node_guid="0x%016x",'
                    'sys_image_guid="0x%016x",node_desc="h%05d %s"'
                    % (d, h * 16 + 1, h * 16 + 1, h, d), 1)

    @family
    def state():
        for h, d, ll in each_port():
            v = (lambda i: 4 if i < half else 1) if (h, d) == down else 4
            w.gauge("fabric_port_state", pl(h, d), v)

    @family
    def phys():
        for h, d, ll in each_port():
            v = (lambda i: 5 if i < half else 2) if (h, d) == down else 5
            w.gauge("fabric_port_physical_state", pl(h, d), v)

    @family
    def rate():
        for h, d, ll in each_port():
            v = (lambda i: NDR if i < half else NDR / 2) \
                if (h, d) == degraded else NDR
            w.gauge("fabric_port_rate_bytes_per_second", pl(h, d), v)

    @family
    def width():
        for h, d, ll in each_port():
            w.gauge("fabric_port_link_width_lanes", pl(h, d), 4)

    @family
    def lid():
        for h, d, ll in each_port():
            w.gauge("fabric_port_lid", pl(h, d), (h * 9) % 49151 + 1)

    for name, per_s in (("fabric_port_transmit_bytes_total", 0.3 * NDR),
                        ("fabric_port_receive_bytes_total", 0.3 * NDR),
                        ("fabric_port_transmit_packets_total", 0.3 * NDR / 4096),
                        ("fabric_port_receive_packets_total", 0.3 * NDR / 4096)):
        def traffic(name=name, per_s=per_s):
            for h, d, ll in each_port():
                w.counter(name, pl(h, d), per_s * (1 + (h % 7) / 10), step)
        families.append(traffic)

    @family
    def xmit_wait():
        for h, d, ll in each_port():
            ratio = 0.4 if (h, d) in hot else 0.002
            w.counter("fabric_port_transmit_wait_total", pl(h, d),
                      ratio / 256e-9, step)

    @family
    def errors():
        for h, d, ll in each_port():
            for e in ERRORS:
                r = 5.0 if (h, d) == erroring and e == "symbol_error" else 0
                w.counter("fabric_port_errors_total",
                          pl(h, d) + ',error="%s"' % e, r, step, start=3)

    @family
    def saturated():
        for h, d, ll in each_port():
            for c in ("symbol_error", "port_xmit_discards"):
                w.gauge("fabric_port_counters_saturated",
                        pl(h, d) + ',counter="%s"' % c, 0)

    for name in ("fabric_port_transmit_wait_peak_ratio",
                 "fabric_port_transmit_utilization_peak_ratio",
                 "fabric_port_receive_utilization_peak_ratio"):
        def peak(name=name):
            for h, d, ll in each_port():
                hot_port = (h, d) in hot and "wait" in name
                w.gauge(name, pl(h, d),
                        (lambda i, h=h: 0.6 + 0.3 * ((i + h) % 3) / 2)
                        if hot_port else
                        (lambda i, h=h: ((i * 7 + h) % 50) / 200))
        families.append(peak)

    for name, per_s in (("fabric_roce_cnp_handled_total", 20),
                        ("fabric_roce_cnp_sent_total", 20),
                        ("fabric_roce_ecn_marked_packets_total", 40),
                        ("fabric_roce_cnp_ignored_total", 0),
                        ("fabric_roce_out_of_sequence_total", 0),
                        ("fabric_roce_packet_sequence_errors_total", 0),
                        ("fabric_roce_local_ack_timeout_errors_total", 0)):
        def hwc(name=name, per_s=per_s):
            for h, d, ll in each_port():
                w.counter(name, pl(h, d), per_s, step)
        families.append(hwc)

    for name in ("fabric_roce_cnp_handled_peak_per_second",
                 "fabric_roce_cnp_sent_peak_per_second"):
        def cnp_peak(name=name):
            for h, d, ll in each_port():
                w.gauge(name, pl(h, d), lambda i, h=h: (i * 13 + h) % 400)
        families.append(cnp_peak)

    def netdev(h):
        return pl(h, ROCE[0]) + ',netdev="%s"' % ROCE[1]

    @family
    def pfc():
        for h in range(hosts):
            for p in range(8):
                for direction in ("rx", "tx"):
                    storming = h == storm and p == 3 and direction == "tx"
                    l = netdev(h) + ',priority="%d",direction="%s"' % (p, direction)
                    w.counter("fabric_pfc_pause_frames_total", l,
                              20000 if storming else (50 if p == 3 else 0), step)
        for h in range(hosts):
            for p in range(8):
                for direction in ("rx", "tx"):
                    storming = h == storm and p == 3 and direction == "tx"
                    l = netdev(h) + ',priority="%d",direction="%s"' % (p, direction)
                    w.gauge("fabric_pfc_pause_duration_seconds_total", l,
                            (lambda i: 0.6 * step * i) if storming else
                            (lambda i: 0.001 * step * i))
        for h in range(hosts):
            for p in range(8):
                for direction in ("rx", "tx"):
                    storming = h == storm and p == 3 and direction == "tx"
                    l = netdev(h) + ',priority="%d",direction="%s"' % (p, direction)
                    w.gauge("fabric_pfc_pause_peak_ratio", l,
                            0.8 if storming else 0.01)

    @family
    def storm_events():
        for h in range(hosts):
            for level in ("warning", "error"):
                w.gauge("fabric_pfc_pause_storm_events_total",
                        netdev(h) + ',level="%s"' % level,
                        (lambda i: 0 if i < half else 1) if h == storm else 0)

    @family
    def nic_counters():
        for h in range(hosts):
            for direction in ("rx", "tx"):
                w.gauge("fabric_roce_global_pause_frames_total",
                        netdev(h) + ',direction="%s"' % direction, 0)
        for h in range(hosts):
            for direction in ("rx", "tx"):
                w.gauge("fabric_roce_phy_discarded_packets_total",
                        netdev(h) + ',direction="%s"' % direction, 0)
        for h in range(hosts):
            w.gauge("fabric_roce_rx_out_of_buffer_total", netdev(h), 0)
        for h in range(hosts):
            for p in range(8):
                w.gauge("fabric_roce_priority_discarded_packets_total",
                        netdev(h) + ',priority="%d",reason="discards"' % p, 0)

    @family
    def roce_config():
        for h in range(hosts):
            for point in ("np", "rp"):
                for p in range(8):
                    w.gauge("fabric_roce_ecn_enabled", netdev(h) +
                            ',point="%s",priority="%d"' % (point, p),
                            1 if p == 3 else 0)
        for h in range(hosts):
            for p in range(8):
                w.gauge("fabric_roce_pfc_enabled",
                        netdev(h) + ',priority="%d"' % p, 1 if p == 3 else 0)
        for h in range(hosts):
            w.gauge("fabric_roce_trust_info", netdev(h) + ',trust="dscp"', 1)

    @family
    def daemon():
        for h in range(hosts):
            w.gauge("fabric_build_info",
                    base(h) + ',version="0.1.0",revision="bench"', 1)
        for h in range(hosts):
            w.gauge("fabric_congestion_xmit_wait_tick_seconds", base(h), 256e-9)
        for h in range(hosts):
            w.gauge("fabric_congestion_window_seconds", base(h), 60)
        for metric in ("fabric_collector_success",
                       "fabric_collector_duration_seconds",
                       "fabric_collector_last_success_timestamp_seconds",
                       "fabric_collector_skipped_inputs"):
            for h in range(hosts):
                for c in COLLECTORS:
                    l = base(h) + ',collector="%s"' % c
                    if metric == "fabric_collector_success":
                        w.gauge(metric, l, 1)
                    elif metric == "fabric_collector_duration_seconds":
                        w.gauge(metric, l, 0.002)
                    elif metric == "fabric_collector_skipped_inputs":
                        w.gauge(metric, l, 0)
                    else:
                        w.gauge(metric, l,
                                lambda i: timestamps[i] - 1)

    for fn in families:
        fn()
    w.close()
    return hosts, w.series, w.samples


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port, path, params=None):
    url = "http://127.0.0.1:%d%s" % (port, path)
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def dashboard_queries(step):
    """(dashboard, panel title, expr, instant, range seconds)."""
    out = []
    for name in sorted(os.listdir(DASHBOARDS)):
        if not name.endswith(".json"):
            continue
        d = json.load(open(os.path.join(DASHBOARDS, name)))
        frm = d.get("time", {}).get("from", "now-1h")
        m = re.match(r"now-(\d+)([mhd])$", frm)
        seconds = int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400}[m.group(2)]
        bounded = {v["name"]: not v.get("includeAll", False)
                   for v in d["templating"]["list"] if v["type"] == "query"}
        for p in d["panels"]:
            for t in p.get("targets", []):
                out.append((name, p["title"], t["expr"], t.get("instant", False),
                            seconds, bounded))
    return out


def substitute(expr, first_instance, bounded, step):
    expr = expr.replace("$__rate_interval", "%ds" % (4 * step))
    if bounded.get("instance"):
        expr = expr.replace('instance=~"$instance"',
                            'instance=~"%s"' % re.escape(first_instance))
    return re.sub(r"\$\{?[a-z_]+\}?", ".*", expr)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ports", type=int, default=10000)
    ap.add_argument("--hours", type=float, default=6)
    ap.add_argument("--step", type=int, default=30)
    ap.add_argument("--buffer", type=int,
                    help="seconds of data after the start, to cover generation"
                         " and backfill (default: estimated from the size)")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", help="also write the Markdown report here")
    args = ap.parse_args()

    work = args.workdir or tempfile.mkdtemp(prefix="fabricmon_rules_scale_")
    os.makedirs(work, exist_ok=True)
    prom = None
    report = []
    try:
        n = int(args.hours * 3600 // args.step)
        # ~45 series per port; generation + backfill ran at 0.05-0.12 M
        # samples/s together here (2 shared cores, docs/alerting-scale.md);
        # err on the late side: an early end loses the measurement, a late
        # one only waits.
        estimate = (args.ports * 45 * n) / 0.05e6 + 180
        end = int(time.time()) + (args.buffer or int(estimate))
        end -= end % args.step
        n = int(args.hours * 3600 // args.step)
        timestamps = [end - (n - 1 - i) * args.step for i in range(n)]
        om = os.path.join(work, "data.om")
        t0 = time.monotonic()
        hosts, series, samples = generate(om, args.ports, timestamps, args.step)
        t_gen = time.monotonic() - t0
        size = os.path.getsize(om)
        blocks = os.path.join(work, "tsdb")
        t0 = time.monotonic()
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics",
                        om, blocks], check=True, stdout=subprocess.DEVNULL)
        t_fill = time.monotonic() - t0
        os.remove(om)

        rules_dir = os.path.join(work, "rules")
        os.makedirs(rules_dir, exist_ok=True)
        for f in ("recording_rules.yml", "alerting_rules.yml"):
            shutil.copy(os.path.join(RULES, f), rules_dir)
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as c:
            c.write("global:\n  evaluation_interval: %ds\n" % args.step)
            c.write("rule_files:\n  - rules/recording_rules.yml\n"
                    "  - rules/alerting_rules.yml\n")
        port = free_port()
        prom = subprocess.Popen(
            ["prometheus", "--config.file=" + config,
             "--storage.tsdb.path=" + blocks,
             "--storage.tsdb.retention.time=30d",
             "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"],
            cwd=work, stdout=open(os.path.join(work, "prom.log"), "w"),
            stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        while True:
            try:
                urllib.request.urlopen(
                    "http://127.0.0.1:%d/-/ready" % port, timeout=5).read()
                break
            except Exception:
                if prom.poll() is not None or time.monotonic() - t0 > 600:
                    raise SystemExit("prometheus did not start: " +
                                     open(os.path.join(work, "prom.log")).read())
                time.sleep(1)
        t_ready = time.monotonic() - t0

        # Rule results can be stored only after the backfilled blocks end
        # (the head starts there); instant selectors see the data for 5 m
        # after its end. So: wait for the end, then take each group's
        # evaluation time from its first evaluation that began at least
        # STEP after the end (the threshold series exist by then) and
        # within the 5 m the data is visible; the 5 m memory group has
        # exactly one evaluation in that window.
        margin = end - time.time()
        if margin < 0:
            print("warning: the data ended %.0f s before Prometheus was ready;"
                  " raise --buffer" % -margin, file=sys.stderr)
        time.sleep(max(0, end - time.time()))
        measured = {}
        groups = {}
        window_end = end + 300
        while time.time() < window_end:
            for g in get(port, "/api/v1/rules")["data"]["groups"]:
                groups[g["name"]] = g
                last = g.get("lastEvaluation", "")
                m = re.match(r"(\d+-\d+-\d+T\d+:\d+:\d+)", last)
                if not m:
                    continue
                t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
                if end + args.step <= t < window_end - 1:
                    # Each distinct evaluation once; the first one after
                    # start-up reads cold blocks, later ones are warm.
                    seen = measured.setdefault(g["name"], {})
                    seen[last] = g["evaluationTime"]
            time.sleep(2)

        first_instance = "h00000:10915"
        now = end
        rows = []
        failed = []
        for dash, title, expr, instant, seconds, bounded in dashboard_queries(args.step):
            q = substitute(expr, first_instance, bounded, args.step)
            walls = []
            try:
                for _ in range(2):  # cold, then warm
                    t0 = time.monotonic()
                    if instant:
                        r = get(port, "/api/v1/query", {"query": q, "time": now})
                    else:
                        r = get(port, "/api/v1/query_range", {
                            "query": q, "start": now - seconds, "end": now,
                            "step": args.step})
                    walls.append(time.monotonic() - t0)
            except urllib.error.HTTPError as e:
                # A query Prometheus refuses is a finding, not the end of the
                # run: reported with Prometheus' reason.
                failed.append((dash, title, q, e.read().decode(errors="replace")))
                continue
            res = r["data"]["result"]
            rows.append((walls[1], dash, title, instant, len(res), seconds,
                         walls[0]))

        report.append("Command: `bench/rules_scale.py --ports %d --hours %g --step %d`"
                      % (args.ports, args.hours, args.step))
        report.append("")
        report.append("| quantity | value |")
        report.append("|---|---|")
        report.append("| hosts / ports | %d / %d |" % (hosts, hosts * 9))
        report.append("| series / samples | %d / %d (%.1f M) |"
                      % (series, samples, samples / 1e6))
        report.append("| OpenMetrics text | %.2f GB, generated in %.0f s |"
                      % (size / 1e9, t_gen))
        report.append("| `promtool tsdb create-blocks-from openmetrics` | %.0f s (%.2f M samples/s) |"
                      % (t_fill, samples / t_fill / 1e6))
        report.append("| Prometheus ready on the blocks | %.0f s |" % t_ready)
        report.append("")
        report.append("Rule groups (evaluation time, `prometheus_rule_group_last_duration_seconds`"
                      " as `/api/v1/rules` reports it; budget < 1 s):")
        report.append("")
        report.append("| group | rules | warm (fastest) | every evaluation in the window, s | within budget |")
        report.append("|---|---|---|---|---|")
        worst_group = 0
        for name in sorted(groups):
            seen = measured.get(name)
            if not seen:
                report.append("| %s | %d | not evaluated while the data was visible | — | — |"
                              % (name, len(groups[name]["rules"])))
                continue
            times = [seen[k] for k in sorted(seen)]
            v = min(times)
            worst_group = max(worst_group, v)
            report.append("| %s | %d | %.3f s | %s | %s |" % (
                name, len(groups[name]["rules"]), v,
                " ".join("%.3f" % x for x in times),
                "yes" if v < 1 else "**no**"))
        report.append("")
        report.append("Dashboard queries over each dashboard's default range (budget < 2 s), slowest first:")
        report.append("")
        report.append("| warm | cold | dashboard | panel | kind | series | within budget |")
        report.append("|---|---|---|---|---|---|---|")
        for wall, dash, title, instant, nres, seconds, cold in sorted(rows, reverse=True):
            report.append("| %.3f s | %.3f s | %s | %s | %s | %d | %s |" % (
                wall, cold, dash, title.replace("|", "/"),
                "instant" if instant else "range %dh @%ds" % (seconds // 3600, args.step),
                nres, "yes" if wall < 2 else "**no**"))
        report.append("")
        for dash, title, q, why in failed:
            report.append("**Refused by Prometheus**: %s / %s: `%s`: %s"
                          % (dash, title, q, why.strip()))
        if failed:
            report.append("")
        report.append("Worst rule group %.3f s; worst panel query %.3f s (%d queries)."
                      " Load average during the run: %s."
                      % (worst_group, max(r[0] for r in rows), len(rows),
                         open("/proc/loadavg").read().split()[:3]))
        text = "\n".join(report) + "\n"
        print(text)
        if args.out:
            with open(args.out, "w") as o:
                o.write(text)
    finally:
        if prom is not None:
            prom.send_signal(signal.SIGTERM)
            try:
                prom.wait(timeout=60)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
