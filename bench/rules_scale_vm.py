"""The VictoriaMetrics half of bench/rules_scale.py (--vm).

Imports the backfilled Prometheus blocks into a victoria-metrics started
with the shipped flags (deploy/victoriametrics/victoria-metrics.default)
with `vmctl prometheus`, runs vmalert with the shipped rule files as the
unit `deploy/victoriametrics/vmalert-fabricmon.service` does (every group
at the one evaluation interval, as the Prometheus half does), and records
every evaluation of every group from vmalert's own
vmalert_iteration_duration_seconds (each new evaluation's time is the
_sum delta over the _count delta between two reads of /metrics).
All processes listen on 127.0.0.1 and are stopped by their Popen.
"""
import os
import re
import shlex
import signal
import subprocess
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy", "victoriametrics")


def shipped_vm_args(data):
    """The ARGS of the shipped /etc/default file, storage moved to DATA."""
    text = open(os.path.join(DEPLOY, "victoria-metrics.default")).read()
    m = re.search(r'(?m)^ARGS="([^"]*)"', text)
    args = shlex.split(m.group(1)) if m else []
    return [a for a in args if not a.startswith("-storageDataPath=")] + [
        "-storageDataPath=" + data]


def read_metrics(port):
    out = {}
    text = urllib.request.urlopen(
        "http://127.0.0.1:%d/metrics" % port, timeout=30).read().decode()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def iterations(metrics):
    """{(group, file): (sum, count)} of vmalert_iteration_duration_seconds."""
    out = {}
    for k, v in metrics.items():
        m = re.match(r"vmalert_iteration_duration_seconds_(sum|count)\{(.*)\}$", k)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        key = "%s (%s)" % (labels.get("group", "?"),
                           os.path.basename(labels.get("file", "?")).split("_")[0])
        s, c = out.get(key, (0.0, 0.0))
        out[key] = (v, c) if m.group(1) == "sum" else (s, v)
    return out


def wait_http(port, path, proc, seconds=300):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        if proc.poll() is not None:
            return False
        try:
            urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5)
            return True
        except OSError:
            time.sleep(1)
    return False


def run(work, blocks, rules_dir, step, until, free_port, data_end=None):
    """Returns ({group: {eval_end_time: seconds}}, info) measured until
    UNTIL (wall clock), or raises on a start failure. Without DATA_END "now"
    must be inside the data until UNTIL, and ({}, {}) comes back at once when
    fewer than 10 minutes are left for the import and the measurement (the
    caller's Prometheus must not lose its window). With DATA_END (blocks of
    an earlier run) vmalert evaluates as of a time inside the data
    (-datasource.lookback), ending 60 s before DATA_END at UNTIL."""
    if data_end is None and until - time.time() < 600:
        print("vmalert: too little time before the data's end; not run "
              "(rerun on the kept blocks: bench/rules_scale_vm.py)", flush=True)
        return {}, {}
    home = os.path.join(work, "vm")
    os.makedirs(home, exist_ok=True)
    procs = []
    info = {}

    def start(name, argv):
        procs.append(subprocess.Popen(
            argv, stdout=open(os.path.join(home, name + ".log"), "w"),
            stderr=subprocess.STDOUT))
        return procs[-1]

    try:
        vm_port, alert_port, nowhere = free_port(), free_port(), free_port()
        vm = start("victoria-metrics", ["victoria-metrics"] + shipped_vm_args(
            os.path.join(home, "data")) + ["-httpListenAddr=127.0.0.1:%d" % vm_port])
        if not wait_http(vm_port, "/health", vm):
            raise SystemExit("victoria-metrics did not start: " + home)
        t0 = time.monotonic()
        imported = os.path.join(home, "imported")
        # vmctl 1.79 fails without a terminal ("inappropriate ioctl for
        # device") even with its progress bar off: give it one with script(1).
        if not os.path.exists(imported):  # a rerun keeps VM's data
            subprocess.run(
                ["script", "-qec", " ".join([
                    "vmctl", "prometheus", "-s", "--prom-snapshot=" + blocks,
                    "--prom-concurrency=2", "--vm-disable-progress-bar",
                    "--vm-addr=http://127.0.0.1:%d" % vm_port]), "/dev/null"],
                check=True, stdin=subprocess.DEVNULL,
                stdout=open(os.path.join(home, "vmctl.log"), "w"),
                stderr=subprocess.STDOUT)
        open(imported, "w").close()
        info["import_s"] = time.monotonic() - t0
        # Make the imported rows searchable before the first evaluation.
        urllib.request.urlopen("http://127.0.0.1:%d/internal/resetRollupResultCache"
                               % vm_port, timeout=30)
        time.sleep(5)
        url = "http://127.0.0.1:%d" % vm_port
        lookback = 0
        if data_end is not None:
            # Evaluate as of (now - lookback): at UNTIL that is DATA_END - 60.
            until = time.time() + until
            lookback = max(0, int(until - (data_end - 60)))
        info["lookback_s"] = lookback
        # The unit's flags; the notifier is a closed loopback port (alerts
        # are not delivered: the cost measured is the evaluation).
        # The MetricsQL flavour, as the unit's ExecStartPre writes it.
        vm_rules = os.path.join(home, "rules")
        subprocess.run(["sh", os.path.join(DEPLOY, "metricsql-rules.sh"),
                        rules_dir, vm_rules], check=True)
        alert = start("vmalert", [
            "vmalert",
            "-rule=" + os.path.join(vm_rules, "recording_rules.yml"),
            "-rule=" + os.path.join(vm_rules, "alerting_rules.yml"),
            "-datasource.url=" + url, "-remoteWrite.url=" + url,
            "-remoteRead.url=" + url,
            "-notifier.url=http://127.0.0.1:%d" % nowhere,
            "-evaluationInterval=%ds" % step,
            "-datasource.lookback=%ds" % lookback,
            "-httpListenAddr=127.0.0.1:%d" % alert_port])
        if not wait_http(alert_port, "/metrics", alert):
            raise SystemExit("vmalert did not start: " + home)
        info["start"] = time.time()
        measured, last = {}, {}
        while time.time() < until:
            now = time.time()
            try:
                seen = iterations(read_metrics(alert_port))
            except OSError:  # an overloaded vmalert answers late: next read
                seen = {}
            for key, (s, c) in seen.items():
                ps, pc = last.get(key, (0.0, 0.0))
                if c > pc:
                    measured.setdefault(key, {})[now] = (s - ps) / (c - pc)
                last[key] = (s, c)
            time.sleep(1)
        for _ in range(10):  # an overloaded vmalert answers late
            try:
                m = read_metrics(alert_port)
                break
            except OSError:
                m = {}
        info["errors"] = sum(v for k, v in m.items()
                             if k.startswith("vmalert_execution_errors_total"))
        info["executions"] = sum(v for k, v in m.items()
                                 if k.startswith("vmalert_execution_total"))
        info["alerts_firing"] = sum(v for k, v in m.items()
                                    if k.startswith("vmalert_alerts_firing"))
        vm_metrics = read_metrics(vm_port)
        # Rule queries and the annotation templates' queries together.
        info["queries"] = vm_metrics.get(
            'vm_http_requests_total{path="/api/v1/query"}', 0)
        info["vm_cpu_s"] = vm_metrics.get("process_cpu_seconds_total", 0)
        info["vmalert_cpu_s"] = m.get("process_cpu_seconds_total", 0)
        info["rss_vm"] = vm_metrics.get("process_resident_memory_bytes", 0)
        info["rss_vmalert"] = m.get("process_resident_memory_bytes", 0)
        info["end"] = time.time()
        return measured, info
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main():
    """VM-only rerun on the blocks a `rules_scale.py --keep` run left."""
    import argparse
    import json
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import rules_scale
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--workdir", required=True, help="the kept WORKDIR")
    ap.add_argument("--step", type=int, default=30)
    ap.add_argument("--seconds", type=int, default=300)
    args = ap.parse_args()
    blocks = os.path.join(args.workdir, "tsdb")
    end = max(json.load(open(os.path.join(blocks, b, "meta.json")))["maxTime"]
              for b in os.listdir(blocks)
              if os.path.exists(os.path.join(blocks, b, "meta.json"))) / 1000
    rules = os.path.join(args.workdir, "vm-rules")
    rules_scale.write_rules(rules, ROOT)
    groups, info = run(args.workdir, blocks, rules, args.step, args.seconds,
                       rules_scale.free_port, data_end=end)
    table = [(g, 0, 0, "") for g in sorted(groups)]
    print("Command: `bench/rules_scale_vm.py %s` (%s UTC, load average %s)" % (
        " ".join(sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M"),
        " ".join("%.2f" % x for x in os.getloadavg())))
    print("\n".join(rules_scale.interval_table(
        table, {}, groups, info, rules_scale.intervals(ROOT), args.step, [])))
    print("\nvmalert: %d rule executions (%d failed), %d alerts firing at the end; "
          "victoria-metrics answered %d queries; CPU since start: victoria-metrics "
          "%.0f s (import included), vmalert %.0f s, over %.0f s of evaluation" % (
              info["executions"], info["errors"], info["alerts_firing"],
              info["queries"], info["vm_cpu_s"], info["vmalert_cpu_s"],
              info["end"] - info["start"]))
    json.dump(groups, open(os.path.join(args.workdir, "vm-evaluations.json"), "w"))


if __name__ == "__main__":
    main()
