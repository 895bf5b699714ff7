#!/usr/bin/env python3
"""Prints fabricmon alerts as they fire and resolve, with the runbook to open.

    scripts/demo_alerts.py --prometheus http://127.0.0.1:9090
                           [--alertmanager http://127.0.0.1:9093]
                           [--interval 2] [--root DIR]

Polls Prometheus' /api/v1/alerts (what the rules say now) and, when given,
Alertmanager's /api/v2/alerts (which of them the shipped inhibit rules
suppress), and prints one line per change:

  12:03:41 FIRING   FabricPortCongestionHotspot  host=host0 mlx5_0/1
           Congestion hotspot on 127.0.0.1:10915 mlx5_0 port 1
           runbook: docs/runbooks/FabricPortCongestionHotspot.md
           jobs: 4711 (alice: llama-70b)
  12:04:12 FIRING   FabricPortLinkErrorRecovery  host=host0 mlx5_1/1  (inhibited)

Runs until SIGINT/SIGTERM (scripts/demo.sh stops it with the rest). Standard
library only; nothing is written anywhere but stdout.
"""
import argparse
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request

# Labels that name where an alert is, in the order they are printed.
# `cause` is a congestion root's (FabricCongestionRoot: slow_receiver,
# oversubscribed, unbalanced, pfc_origin).
WHERE = ("cluster", "host", "instance", "switch", "sm_guid", "peer", "netdev",
         "cause", "collector", "error")


def get_json(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def key(labels):
    return tuple(sorted(labels.items()))


def where(labels):
    parts = []
    for name in WHERE:
        if name in labels and not (name == "instance" and "host" in labels):
            parts.append(f"{name}={labels[name]}")
    if "device" in labels:
        parts.append(f"{labels['device']}/{labels.get('port', '')}")
    elif "port" in labels:
        parts.append(f"port {labels['port']}")
    return " ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prometheus", required=True)
    ap.add_argument("--alertmanager")
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--root", default=".",
                    help="repository root, to print runbook paths that exist")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    shown = {}  # alert key -> state printed ("firing")
    while True:
        data = get_json(args.prometheus + "/api/v1/alerts")
        alerts = {} if data is None else {
            key(a["labels"]): a for a in data["data"]["alerts"]
            if a["state"] == "firing"}
        suppressed = set()
        if args.alertmanager and alerts:
            am = get_json(args.alertmanager + "/api/v2/alerts") or []
            for a in am:
                if a.get("status", {}).get("state") == "suppressed":
                    labels = dict(a["labels"])
                    suppressed.add(key(labels))
        now = time.strftime("%H:%M:%S")
        for k, a in sorted(alerts.items()):
            if k in shown:
                continue
            labels = a["labels"]
            note = "  (inhibited: its cause is alerting)" if k in suppressed else ""
            print(f"{now} FIRING   {labels['alertname']:<34} {where(labels)}{note}")
            summary = a.get("annotations", {}).get("summary")
            if summary:
                print(f"         {summary}")
            runbook = a.get("annotations", {}).get("runbook_url", "")
            if runbook:
                exists = os.path.exists(os.path.join(args.root, runbook))
                print(f"         runbook: {runbook}{'' if exists else ' (not found)'}")
            # The Slurm jobs on the hosts the fault touches (docs/jobs.md).
            for note in ("jobs", "victim_jobs"):
                text = a.get("annotations", {}).get(note, "")
                if text:
                    print(f"         {note}: {text}")
            shown[k] = a
        for k in [k for k in shown if k not in alerts]:
            labels = dict(k)
            print(f"{now} resolved {labels['alertname']:<34} {where(labels)}")
            del shown[k]
        sys.stdout.flush()
        time.sleep(args.interval)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
