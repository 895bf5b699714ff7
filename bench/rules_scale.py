#!/usr/bin/env python3
"""Rules and dashboards against a real Prometheus holding a large fabric.

Generates synthetic fabricmon data for PORTS ports (hosts of 8 InfiniBand
ports + 1 RoCE port, every family the shipped rules and dashboards read),
about SWITCH_PORTS switch ports (a leaf/spine tree swept by two nodes), the
subnet-manager series of every host and the OpenSM node, and the probe
histograms of PROBE_PEERS UDP peers per host, at STEP resolution over HOURS,
as OpenMetrics text; backfills it with
`promtool tsdb create-blocks-from openmetrics`; starts a real Prometheus
(Debian package) on that storage with the shipped recording and alerting
rules, evaluated every STEP; then reports
  - the sample and series count, and how long generation and backfill took;
  - each rule group's evaluation time (prometheus_rule_group_last_duration_
    seconds; each group at its production interval, the 5 m groups every
    minute so that the groups reading their series are timed with them;
    --every-step: every group every STEP), against a quarter of its
    production interval, and the CPU Prometheus used meanwhile;
  - each rule's work (samples touched, from Prometheus' query statistics)
    and time run alone, after the window: a cost the machine's load does not
    move, and each group's time without the others beside it;
  - each dashboard query's time over its dashboard's default time range
    (range queries at Grafana's step for that range, at least STEP; instant
    queries for tables), with the variables at their defaults (All, or the
    first value of the variable's query where it has no All),
    $__rate_interval as Grafana computes it with STEP as scrape interval;
against the budgets (rule group < 1 s, panel query < 2 s), as Markdown.

The data ends BUFFER in the future, so "now" (when the rules run) is inside
it. Mostly healthy, with the faults the rules look for on a few ports: hot
ports, a down port, a degraded link, link errors, one PFC storm.

Usage: bench/rules_scale.py [--ports 10000] [--hours 6] [--step 30]
                            [--switch-ports N] [--probe-peers 1]
                            [--compare TREE] [--vm] [--skip-dashboards]
                            [--every-step]
                            [--workdir DIR] [--keep] [--out FILE.md]
--vm also imports the blocks into VictoriaMetrics and times every group
under vmalert before the data's end (bench/rules_scale_vm.py, which also
runs alone on a --keep WORKDIR afterwards); the last table sets each
group's evaluations on both against a quarter of its production interval.
--compare TREE runs another source tree's rules and dashboards (an older
commit checked out with `git worktree add`) on a second Prometheus over a
copy of the same blocks, at the same time, and adds side-by-side tables
(each group's fastest evaluation, and each rule's of the groups over 0.5 s,
with the ratio): old and new rules on one dataset at one load. (Blocks cannot be reused by a
later run: rules run on the wall clock, and the data is visible to them only
for the 5 minutes after its end.)
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
IB_DEVICES = ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7",
              "mlx5_8", "mlx5_9"]
ROCE = ("mlx5_bond_0", "bond0")
# Errors the rules and dashboards read by name; the daemon exports 13 kinds,
# the others only feed the dashboards' sums (left out to keep the data small).
ERRORS = ["symbol_error", "port_rcv_errors", "local_link_integrity_errors",
          "link_error_recovery", "link_downed", "port_xmit_discards"]
COLLECTORS = ["ib_port", "hw_counters", "congestion", "roce", "nic_identity"]
NDR = 50e9  # 400 Gb/s in bytes/s
# The probe collector's RTT histogram buckets (probe/histogram.h).
RTT_BUCKETS = [1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6, 8e-6, 10e-6, 12e-6, 15e-6,
               20e-6, 25e-6, 30e-6, 40e-6, 50e-6, 60e-6, 80e-6, 100e-6, 125e-6,
               150e-6, 200e-6, 250e-6, 300e-6, 350e-6, 400e-6, 450e-6, 500e-6,
               600e-6, 700e-6, 800e-6, 900e-6, 1e-3, 1.1e-3, 1.25e-3, 1.5e-3,
               2e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3,
               1.0]
SWEEPERS = 2  # nodes running the `fabric` collector, switches sharded between them


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


def generate(path, ports, timestamps, step, switch_ports, probe_peers):
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

    def node_guid(h, d):
        # One HCA = one node GUID, as on a real host (the switch-port
        # speed rule matches switch cables to host ports by it).
        return h * 16 + 1 + (IB_DEVICES + [ROCE[0]]).index(d)

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
                    % (ll, node_guid(h, d), node_guid(h, d) * 256 + 1,
                       "MT4129" if ll == "InfiniBand" else "MT41692",
                       ROCE[1] if ll == "Ethernet" else ""), 1)

    @family
    def device_info():
        for h, d, ll in each_port():
            w.gauge("fabric_device_info", base(h) +
                    ',device="%s",hca_type="MT4129",fw_ver="28.41.1000",'
                    'board_id="MT_0000000838",node_guid="0x%016x",'
                    'sys_image_guid="0x%016x",node_desc="h%05d %s"'
                    % (d, node_guid(h, d), h * 16, h, d), 1)

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

    # Switch ports, swept by the `fabric` collector on SWEEPERS nodes
    # (switches sharded between them): a two-level fat tree of 64-port
    # switches, leaves with 32 host-facing ports and 32 uplinks, half as
    # many spines, sized so the switch-port count is about SWITCH_PORTS
    # (default: the host-port count; a full non-blocking tree for all host
    # ports would have ~2.7 x as many, see docs/alerting-scale.md). The first
    # leaves' host-facing ports are cabled to the first host IB ports
    # (fabric_switch_port_link_info remote_guid = the host's node_guid),
    # the rest of the hosts hang off switches that are not in the data.
    leaves = max(2, round(switch_ports / 96))
    spines = (leaves + 1) // 2
    sweepers = min(SWEEPERS, hosts)
    ib_ports = [(h, d) for h in range(hosts) for d in IB_DEVICES]
    switches = []  # (guid, name, instance)
    for i in range(leaves + spines):
        leaf = i < leaves
        switches.append((0xe41d2d0300000000 + i,
                         "leaf%03d" % i if leaf else "spine%03d" % (i - leaves),
                         hostnames[i % sweepers]))
    cable = {}  # (switch index, port) -> (remote guid, remote name, remote port)
    for l in range(leaves):
        for k in range(32):
            idx = l * 32 + k
            if idx < len(ib_ports):
                h, d = ib_ports[idx]
                cable[(l, k + 1)] = (node_guid(h, d), "h%05d %s" % (h, d), 1)
            u = l * 32 + k
            s_idx, s_port = leaves + u // 64, u % 64 + 1
            if s_idx < len(switches):
                cable[(l, 33 + k)] = (switches[s_idx][0], switches[s_idx][1], s_port)
                cable[(s_idx, s_port)] = (switches[l][0], switches[l][1], 33 + k)
    sw_ports = [(i, p) for i in range(len(switches)) for p in range(1, 65)]
    sw_hot = (leaves, 1)            # a congested spine port
    sw_erroring = (0, 2)            # a leaf port with symbol errors
    sw_flapping = (0, 3)            # a leaf port whose link went down once
    sw_discarding = (leaves, 2)     # a spine port dropping packets
    sw_down = (0, 4)                # a cabled leaf port going down

    def sl(i, p):
        g, name, inst = switches[i]
        return ('job="fabricmon",instance="%s",switch_guid="0x%016x",'
                'switch="%s",port="%d"' % (inst, g, name, p))

    @family
    def switch_info():
        for i, (g, name, inst) in enumerate(switches):
            w.gauge("fabric_switch_info", 'job="fabricmon",instance="%s",'
                    'switch_guid="0x%016x",switch="%s",lid="%d"'
                    % (inst, g, name, 50000 + i), 1)

    @family
    def switch_state():
        for i, p in sw_ports:
            if (i, p) == sw_down:
                v = lambda t: 4 if t < half else 1
            else:
                v = 4 if (i, p) in cable else 1
            w.gauge("fabric_switch_port_state", sl(i, p), v)
        for i, p in sw_ports:
            w.gauge("fabric_switch_port_physical_state", sl(i, p),
                    5 if (i, p) in cable else 2)

    @family
    def switch_links():
        for i, p in sw_ports:
            if (i, p) in cable:
                g, name, rp = cable[(i, p)]
                w.gauge("fabric_switch_port_link_info", sl(i, p) +
                        ',remote_guid="0x%016x",remote_name="%s",remote_port="%d"'
                        % (g, name, rp), 1)

    for name, per_s in (("fabric_switch_port_transmit_bytes_total", 0.3 * NDR),
                        ("fabric_switch_port_receive_bytes_total", 0.3 * NDR),
                        ("fabric_switch_port_transmit_packets_total", 0.3 * NDR / 4096),
                        ("fabric_switch_port_receive_packets_total", 0.3 * NDR / 4096)):
        def sw_traffic(name=name, per_s=per_s):
            for i, p in sw_ports:
                r = per_s * (1 + (i % 7) / 10) if (i, p) in cable else 0
                w.counter(name, sl(i, p), r, step)
        families.append(sw_traffic)

    @family
    def switch_wait():
        for i, p in sw_ports:
            ratio = 0.4 if (i, p) == sw_hot else 0.002 if (i, p) in cable else 0
            w.counter("fabric_switch_port_transmit_wait_total", sl(i, p),
                      ratio / 256e-9, step)

    @family
    def switch_errors():
        for i, p in sw_ports:
            for e in ERRORS:
                l = sl(i, p) + ',error="%s"' % e
                if (i, p) == sw_flapping and e in ("link_downed", "link_error_recovery"):
                    w.gauge("fabric_switch_port_errors_total", l,
                            lambda t: 0 if t < n - 10 else 1)
                    continue
                r = 5.0 if ((i, p) == sw_erroring and e == "symbol_error") or \
                    ((i, p) == sw_discarding and e == "port_xmit_discards") else 0
                w.counter("fabric_switch_port_errors_total", l, r, step)

    @family
    def switch_saturated():
        # Present only while stuck: one port.
        w.gauge("fabric_switch_port_counters_saturated",
                sl(leaves, 3) + ',counter="port_xmit_wait"', 1)

    @family
    def sweep():
        for h in range(sweepers):
            for result, r in (("ok", 2000), ("timeout", 0), ("error", 0)):
                w.counter("fabric_sweep_mads_total",
                          base(h) + ',result="%s"' % result, r, step)
        for h in range(sweepers):
            w.gauge("fabric_sweep_unreachable_nodes", base(h), 0)
        for h in range(sweepers):
            w.gauge("fabric_sm_masters", base(h), 1)

    # Subnet manager, as the `sm` collector on every host reports it: the
    # master SM (and, on the sweeping nodes, the standby too).
    sms = [(0xe41d2d0300ff0001, 1, "h00000 opensm", 3, 15),
           (0xe41d2d0300ff0002, 2, "h00001 opensm", 2, 14)]

    def host_sms(h):
        return sms if h < sweepers else sms[:1]

    @family
    def sm():
        for h in range(hosts):
            g, lid, node, _, _ = sms[0]
            w.gauge("fabric_sm_info", base(h) +
                    ',sm_guid="0x%016x",sm_lid="%d",node="%s"' % (g, lid, node), 1)
        for name in ("fabric_sm_state", "fabric_sm_priority",
                     "fabric_sm_activity_total", "fabric_sm_activity_stalled"):
            for h in range(hosts):
                for g, lid, node, st, prio in host_sms(h):
                    l = base(h) + ',sm_guid="0x%016x"' % g
                    if name == "fabric_sm_state":
                        w.gauge(name, l, st)
                    elif name == "fabric_sm_priority":
                        w.gauge(name, l, prio)
                    elif name == "fabric_sm_activity_total":
                        w.counter(name, l, 1 if st == 3 else 0, step)
                    else:
                        w.gauge(name, l, 0)
        for h in range(hosts):
            w.gauge("fabric_sm_master_changes_total", base(h), 0)

    @family
    def opensm():
        sm_host = base(0)
        for e in ("port_errors", "port_data_counters", "port_select", "trap",
                  "subnet_up", "heavy_sweep_start", "heavy_sweep_done",
                  "ucast_routing_done", "state_change", "sa_db_dumped",
                  "lft_change"):
            w.counter("fabric_opensm_events_total", sm_host + ',event="%s"' % e,
                      len(sw_ports) / 10 if e.startswith("port_") else 0.01, step)
        w.gauge("fabric_opensm_events_dropped_total", sm_host, 0)
        w.gauge("fabric_opensm_heavy_sweep_duration_seconds", sm_host, 3.0)
        for trap in ("128", "144", "vendor"):
            w.counter("fabric_opensm_traps_total", sm_host + ',trap="%s"' % trap,
                      0.01, step)

    # Probes: every host probes PROBE_PEERS peers over UDP at 1 probe/s
    # (a ring: host h probes h+1..h+PROBE_PEERS), each pair with its
    # default series (below), sent and lost. One pair loses 5 %, one runs
    # 5 x slower for the second half.
    pairs = [(h, (h + k) % hosts) for h in range(hosts)
             for k in range(1, probe_peers + 1) if hosts > 1]
    lossy = (5 % hosts, (6 % hosts)) if hosts > 1 else None
    slow = (6 % hosts, (7 % hosts)) if hosts > 1 else None

    def prl(h, peer):
        return base(h) + ',peer="h%05d:10916",transport="udp"' % peer

    def sent(t):
        return step * t

    def answered(pair, t):
        return sent(t) * (0.95 if pair == lossy else 1.0)

    def rtt_scale(pair, t, network):
        s = 15e-6 if network else 25e-6
        return s * 5 if pair == slow and t >= half else s

    def cdf(le, scale):
        return 1.0 / (1.0 + (scale / le) ** 6)

    # Per pair the RTT and network-RTT sum and count (a pair's default
    # series, issue 30); per prober one RTT histogram over its peers
    # (fabric_probe_port_rtt_seconds: the daemon's 45 buckets + Inf).
    for network in (False, True):
        summary = "fabric_probe_%srtt_seconds" % ("network_" if network else "")

        def sums(summary=summary, network=network):
            for pair in pairs:
                w.gauge(summary + "_sum", prl(*pair),
                        lambda t, pair=pair: answered(pair, t) * 1.1 * rtt_scale(pair, t, network))
            for pair in pairs:
                w.gauge(summary + "_count", prl(*pair),
                        lambda t, pair=pair: int(answered(pair, t)))
        families.append(sums)

    @family
    def rtt_max():
        for pair in pairs:
            w.gauge("fabric_probe_rtt_max_seconds", prl(*pair),
                    lambda t, pair=pair: 4 * rtt_scale(pair, t, False))

    @family
    def port_histograms():
        own = {h: [p for p in pairs if p[0] == h] for h in range(hosts)}
        port = lambda h: base(h) + ',transport="udp"'
        for h in range(hosts):
            for le in RTT_BUCKETS:
                w.gauge("fabric_probe_port_rtt_seconds_bucket", port(h) + ',le="%s"' % repr(le),
                        lambda t, h=h, le=le: sum(int(answered(p, t) * cdf(le, rtt_scale(p, t, False)))
                                                  for p in own[h]))
            w.gauge("fabric_probe_port_rtt_seconds_bucket", port(h) + ',le="+Inf"',
                    lambda t, h=h: sum(int(answered(p, t)) for p in own[h]))
        for h in range(hosts):
            w.gauge("fabric_probe_port_rtt_seconds_sum", port(h),
                    lambda t, h=h: sum(answered(p, t) * 1.1 * rtt_scale(p, t, False) for p in own[h]))
        for h in range(hosts):
            w.gauge("fabric_probe_port_rtt_seconds_count", port(h),
                    lambda t, h=h: sum(int(answered(p, t)) for p in own[h]))

    @family
    def probe_counters():
        for pair in pairs:
            w.gauge("fabric_probe_sent_total", prl(*pair), lambda t: int(sent(t)))
        for pair in pairs:
            w.gauge("fabric_probe_lost_total", prl(*pair),
                    lambda t, pair=pair: int(sent(t) - answered(pair, t)))
        for h in range(hosts):
            for reason in ("bad_mac", "malformed", "rate_limited", "replay"):
                w.gauge("fabric_probe_rejected_total",
                        base(h) + ',reason="%s"' % reason, 0)

    for fn in families:
        fn()
    w.close()
    sizes = {"switches": len(switches), "switch ports": len(sw_ports),
             "cabled switch ports": len(cable), "probe pairs": len(pairs)}
    return hosts, w.series, w.samples, sizes


def cpu_seconds(pid):
    """User + system CPU seconds of process PID so far (/proc/PID/stat)."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def dashboard_queries(tree):
    """(dashboard, panel title, expr, instant, range seconds, variables) of
    the dashboards of source tree TREE."""
    out = []
    folder = os.path.join(tree, "dashboards", "grafana")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        d = json.load(open(os.path.join(folder, name)))
        frm = d.get("time", {}).get("from", "now-1h")
        m = re.match(r"now-(\d+)([mhd])$", frm)
        seconds = int(m.group(1)) * {"m": 60, "h": 3600, "d": 86400}[m.group(2)]
        variables = [v for v in d["templating"]["list"] if v["type"] == "query"]
        for p in d["panels"]:
            for t in p.get("targets", []):
                out.append((name, p["title"], t["expr"], t.get("instant", False),
                            seconds, variables))
    return out


# Grafana's interval rounding (rangeutil.roundInterval), in seconds: an
# interval below the first column becomes the second.
ROUND_INTERVAL = [(0.015, 0.01), (0.035, 0.02), (0.075, 0.05), (0.15, 0.1),
                  (0.35, 0.2), (0.75, 0.5), (1.5, 1), (3.5, 2), (7.5, 5),
                  (12.5, 10), (17.5, 15), (25, 20), (45, 30), (90, 60),
                  (210, 120), (450, 300), (750, 600), (1200, 900),
                  (2700, 1800), (5400, 3600), (9000, 7200), (16200, 10800),
                  (32400, 21600), (86400, 43200)]


def grafana_interval(seconds, scrape):
    """Grafana's $__interval for a panel over SECONDS: the range over the
    panel's data points (its width in pixels; 1000 assumed), rounded, at
    least the scrape interval (the data source's min interval). Grafana
    queries at this step: a 7-day panel at a 30 s step would ask for
    20 160 points, more than Prometheus' 11 000 per series."""
    raw = seconds / 1000
    for below, value in ROUND_INTERVAL:
        if raw < below:
            return max(scrape, value)
    return max(scrape, 86400)


def resolve_variables(port, variables, start, end):
    """Values as Grafana would pick them by default: ".*" for a variable
    with All, else the first value its label_values() query returns (with
    the variables before it already substituted)."""
    values = {}
    for v in variables:
        if v.get("includeAll", False):
            values[v["name"]] = ".*"
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        m = re.match(r"label_values\((.*),\s*([a-zA-Z_]+)\)$", q.strip())
        first = ""
        if m:
            r = get(port, "/api/v1/label/%s/values" % m.group(2), {
                "match[]": fill(m.group(1), values), "start": start, "end": end})
            first = (sorted(r["data"]) or [""])[0]
        values[v["name"]] = re.escape(first)
    return values


def fill(expr, values):
    for name, value in values.items():
        expr = re.sub(r"\$\{?%s\}?(?![a-z_])" % name,
                      lambda _m, value=value: value, expr)
    return expr


def substitute(expr, values, interval, scrape, seconds):
    rate = max(interval + scrape, 4 * scrape)
    expr = expr.replace("$__rate_interval", "%ds" % rate)
    expr = expr.replace("$__interval", "%ds" % interval)
    expr = expr.replace("$__range", "%ds" % seconds)
    return re.sub(r"\$\{?[a-z_]+\}?", ".*", fill(expr, values))


def write_rules(rules_dir, tree, every_step=False):
    """TREE's rule files into RULES_DIR, each group at its production interval
    but at most every minute (EVERY_STEP: every group at the global interval,
    the old measure)."""
    os.makedirs(rules_dir, exist_ok=True)
    for f in ("recording_rules.yml", "alerting_rules.yml"):
        # A 5 m group runs at a phase Prometheus derives from a hash of its
        # name and file, so within the 5 minutes the data is visible it
        # might run only at their end, and the groups reading its series
        # (the switch-port speed, the cabling) would be timed without them:
        # here it runs every minute. Its cost per evaluation is the same;
        # the extra evaluations only add load to the other groups' figures
        # (pessimistic). With EVERY_STEP every group runs every STEP, as the
        # measurements before 2026-12-06 did: the 1 m and 5 m groups then
        # load the 2 cores 2-10 times as often as in production.
        text = open(os.path.join(tree, "dashboards", "prometheus", f)).read()
        if every_step:
            text = re.sub(r"(?m)^    interval: \S+\n", "", text)
        else:
            text = re.sub(r"(?m)^    interval: \d+m\n", "    interval: 1m\n", text)
        open(os.path.join(rules_dir, f), "w").write(text)


def start_prometheus(home, tree, blocks, step, every_step=False):
    """Prometheus on BLOCKS with TREE's rule files (write_rules), the global
    evaluation interval STEP, logging to HOME/prom.log; returns (Popen, port)."""
    write_rules(os.path.join(home, "rules"), tree, every_step)
    config = os.path.join(home, "prometheus.yml")
    with open(config, "w") as c:
        c.write("global:\n  evaluation_interval: %ds\n" % step)
        c.write("rule_files:\n  - rules/recording_rules.yml\n"
                "  - rules/alerting_rules.yml\n")
    port = free_port()
    prom = subprocess.Popen(
        ["prometheus", "--config.file=" + config,
         "--storage.tsdb.path=" + blocks,
         "--storage.tsdb.retention.time=30d",
         # error, not warn: until the data's end every rule result is
         # "out of bounds" (before the backfilled blocks' end), and
         # Prometheus warns once per sample (~100 MB/min at 10 000 ports).
         "--web.listen-address=127.0.0.1:%d" % port, "--log.level=error"],
        cwd=home, stdout=open(os.path.join(home, "prom.log"), "w"),
        stderr=subprocess.STDOUT)
    return prom, port


def wait_ready(prom, port, work):
    t0 = time.monotonic()
    while True:
        try:
            urllib.request.urlopen(
                "http://127.0.0.1:%d/-/ready" % port, timeout=5).read()
            return
        except Exception:
            if prom.poll() is not None or time.monotonic() - t0 > 600:
                raise SystemExit("prometheus did not start: see the prom.log files in "
                                 + work)
            time.sleep(1)


def poll_rules(port, groups, measured, first, last):
    """Records each group's evaluations that began in [FIRST, LAST)."""
    for g in get(port, "/api/v1/rules")["data"]["groups"]:
        # Both rule files have groups named fabric_switch_ports and
        # fabric_probes: a group is its file and its name.
        key = "%s (%s)" % (g["name"], os.path.basename(g["file"]).split("_")[0])
        groups[key] = g
        stamp = g.get("lastEvaluation", "")
        m = re.match(r"(\d+-\d+-\d+T\d+:\d+:\d+(\.\d+)?)", stamp)
        if not m:
            continue
        t = calendar.timegm(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S")) + \
            float(m.group(2) or 0)
        if first <= t < last - 1:
            # Each distinct evaluation once; the first one after start-up
            # reads cold blocks, later ones are warm.
            measured.setdefault(key, {})[t] = g["evaluationTime"]
            for i, r in enumerate(g["rules"]):
                # Per rule too (its own evaluationTime in the same
                # evaluation), to see what a slow group spends its time on.
                rule = (key, i, r.get("name", ""))
                measured.setdefault(rule, {})[t] = r.get("evaluationTime", 0)


def group_table(groups, measured):
    """(group, rules, warm = fastest evaluation, evaluations) per group."""
    out = []
    for name in sorted(groups):
        if not isinstance(name, str):
            continue
        seen = measured.get(name)
        if not seen:
            out.append((name, len(groups[name]["rules"]), None, ""))
            continue
        out.append((name, len(groups[name]["rules"]), min(seen.values()),
                    " ".join("%.3f" % seen[t] for t in sorted(seen))))
    return out


def intervals(tree):
    """{group (file): production interval in seconds} of TREE's rules."""
    out = {}
    for f in ("recording_rules.yml", "alerting_rules.yml"):
        group = None
        for line in open(os.path.join(tree, "dashboards", "prometheus", f)):
            m = re.match(r"  - name: (\S+)", line)
            if m:
                group = "%s (%s)" % (m.group(1), f.split("_")[0])
                out[group] = 30  # deploy.md's evaluation_interval
            m = re.match(r"    interval: (\d+)([sm])", line)
            if m and group:
                out[group] = int(m.group(1)) * (60 if m.group(2) == "m" else 1)
    return out


def interval_table(table, measured, vm_groups, vm_info, production, step, work):
    """Markdown: each group's evaluations on Prometheus and under vmalert
    against a quarter of its production interval (issue 39's goal), and the
    group's rules run alone one after another (WORK, rule_work)."""
    alone = {}
    for key, _, _, secs in work:
        alone[key] = alone.get(key, 0.0) + secs
    def cell(seen):
        if not seen:
            return "not evaluated"
        v = sorted(seen.values())
        return "%.3f / %.3f / %.3f" % (v[0], v[len(v) // 2], v[-1])
    out = ["Against a quarter of each group's production interval (min / median / max"
           " of the evaluations, seconds; alone: its rules as queries one after"
           " another, nothing else evaluating):", "",
           "| group | interval | quarter | Prometheus | alone | vmalert | max under the quarter |",
           "|---|---|---|---|---|---|---|"]
    for name, _, _, _ in table:
        iv = production.get(name, 30)
        worst = max(list(measured.get(name, {}).values()) +
                    list(vm_groups.get(name, {}).values()) or [float("nan")])
        out.append("| %s | %d s | %.1f s | %s | %.3f | %s | %s |" % (
            name, iv, iv / 4, cell(measured.get(name)), alone.get(name, 0.0),
            cell(vm_groups.get(name)) if vm_groups else "not run",
            "yes" if worst < iv / 4 else "**no**"))
    if vm_info:
        out += ["", "vmalert: import of the blocks with vmctl %.0f s; measured %s-%s UTC;"
                " %d of %d rule executions failed (vmalert_execution_errors_total);"
                " RSS victoria-metrics %.0f MiB, vmalert %.0f MiB." % (
                    vm_info["import_s"],
                    time.strftime("%H:%M:%S", time.gmtime(vm_info["start"])),
                    time.strftime("%H:%M:%S", time.gmtime(vm_info["end"])),
                    vm_info["errors"], vm_info["executions"],
                    vm_info["rss_vm"] / 2**20, vm_info["rss_vmalert"] / 2**20)]
    return out + [""]


def rule_table(table, measured, slow=0.5):
    """Each rule of the groups slower than SLOW (warm), fastest evaluation
    of each rule, as Markdown lines."""
    out = []
    for name, _, warm, _ in table:
        if warm is None or warm < slow:
            continue
        for key in sorted(k for k in measured if not isinstance(k, str) and k[0] == name):
            if not out:
                out += ["Rules of the groups over %.1f s (each rule's fastest evaluation):" % slow,
                        "", "| group | rule | warm |", "|---|---|---|"]
            out.append("| %s | %s | %.3f s |" % (name, key[2], min(measured[key].values())))
    return out + [""] if out else out


def rule_comparison(table, measured, other_table, other_measured, slow=0.5):
    """Markdown: each rule of the groups over SLOW (warm) in either tree,
    fastest evaluation in this tree and in the compared one (a rule is its
    group and name; a name repeated in a group keeps its order)."""
    slow_groups = {n for n, _, w, _ in table + other_table
                   if w is not None and w >= slow}

    def by_rule(m):
        out, count = {}, {}
        for key in sorted(k for k in m if not isinstance(k, str)):
            group, _, name = key
            count[(group, name)] = count.get((group, name), 0) + 1
            if group in slow_groups:
                out[(group, name, count[(group, name)])] = min(m[key].values())
        return out
    a, b = by_rule(measured), by_rule(other_measured)
    if not a and not b:
        return []
    out = ["Rules of the groups over %.1f s in either tree (fastest evaluation;"
           " ratio = this tree / compared):" % slow, "",
           "| group | rule | this tree | compared | ratio |", "|---|---|---|---|---|"]
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        out.append("| %s | %s%s | %s | %s | %s |" % (
            k[0], k[1], " (%d)" % k[2] if k[2] > 1 else "",
            "—" if x is None else "%.3f s" % x, "—" if y is None else "%.3f s" % y,
            "%.2f" % (x / y) if x is not None and y else "—"))
    return out + [""]


def time_dashboards(port, tree, now, resolve_end, step):
    """Times every panel query of TREE's dashboards (cold, then warm) as
    of NOW; returns (rows, refused)."""
    rows = []
    failed = []
    resolved = {}
    for dash, title, expr, instant, seconds, variables in dashboard_queries(tree):
        if dash not in resolved:
            resolved[dash] = resolve_variables(port, variables, now - seconds,
                                               resolve_end)
        interval = grafana_interval(seconds, step)
        q = substitute(expr, resolved[dash], interval, step, seconds)
        walls = []
        try:
            for _ in range(2):  # cold, then warm
                t0 = time.monotonic()
                if instant:
                    r = get(port, "/api/v1/query", {"query": q, "time": now})
                else:
                    r = get(port, "/api/v1/query_range", {
                        "query": q, "start": now - seconds, "end": now,
                        "step": interval})
                walls.append(time.monotonic() - t0)
        except urllib.error.HTTPError as e:
            # A query Prometheus refuses is a finding, not the end of the
            # run: reported with Prometheus' reason.
            failed.append((dash, title, q, e.read().decode(errors="replace")))
            continue
        res = r["data"]["result"]
        rows.append((walls[1], dash, title, instant, len(res), seconds,
                     walls[0], interval))
    return rows, failed


def rule_work(port, tree, at):
    """Samples each rule of TREE touches in one evaluation as of AT, from
    Prometheus' own query statistics (`stats=all`, totalQueryableSamples):
    a measure of a rule's cost that the machine's load does not move, unlike
    its evaluation time. Each expression runs once, alone, after the
    measurement window (the data stays queryable at a past time). Returns
    [(group (file), rule, samples, seconds)]."""
    import yaml
    out = []
    for f in ("recording_rules.yml", "alerting_rules.yml"):
        doc = yaml.safe_load(open(os.path.join(tree, "dashboards", "prometheus", f)))
        for g in doc["groups"]:
            key = "%s (%s)" % (g["name"], f.split("_")[0])
            for r in g["rules"]:
                name = r.get("record") or r.get("alert")
                try:
                    res = get(port, "/api/v1/query",
                              {"query": r["expr"], "time": at, "stats": "all"})
                except urllib.error.HTTPError as e:
                    out.append((key, name, -1, 0.0))
                    continue
                st = res["data"].get("stats", {})
                out.append((key, name,
                            st.get("samples", {}).get("totalQueryableSamples", -1),
                            st.get("timings", {}).get("evalTotalTime", 0.0)))
    return out


def work_table(work):
    """Markdown: samples per evaluation, per group and the 25 costliest rules."""
    groups = {}
    for key, _, samples, secs in work:
        s, t = groups.get(key, (0, 0.0))
        groups[key] = (s + max(samples, 0), t + secs)
    total = sum(s for s, _ in groups.values())
    out = ["Work per evaluation (samples each rule touches, Prometheus' query statistics,"
           " each expression alone after the window; load-independent). All groups:"
           " %.2f M samples per round, %.1f s alone." % (
               total / 1e6, sum(t for _, t in groups.values())), "",
           "| group | samples | seconds alone |", "|---|---|---|"]
    for key, (s, t) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        out.append("| %s | %d | %.3f |" % (key, s, t))
    out += ["", "The 25 costliest rules:", "", "| group | rule | samples | seconds alone |",
            "|---|---|---|---|"]
    for key, name, s, t in sorted(work, key=lambda w: -w[2])[:25]:
        out.append("| %s | %s | %d | %.3f |" % (key, name, s, t))
    return out + [""]


def comparison(other, table, other_table, rows, other_rows):
    """Markdown: warm group times and the slowest panels of both trees."""
    out = ["Side by side with `%s` (same blocks, run at the same time):" % other, "",
           "| group | this tree: rules, warm | compared: rules, warm |", "|---|---|---|"]
    a = {n: (r, w) for n, r, w, _ in table}
    b = {n: (r, w) for n, r, w, _ in other_table}
    for name in sorted(set(a) | set(b)):
        cell = lambda x: "—" if x is None else (
            "%d, not evaluated" % x[0] if x[1] is None else "%d, %.3f s" % x)
        out.append("| %s | %s | %s |" % (name, cell(a.get(name)), cell(b.get(name))))
    out += ["", "The 20 slowest panel queries of either tree (warm / cold):", "",
            "| dashboard | panel (query #) | this tree | compared |", "|---|---|---|---|"]

    def keyed(rs):
        # A panel may have several queries: key them by their order.
        count, out_k = {}, {}
        for wall, dash, title, _, _, _, cold, _ in rs:
            k = (dash, title)
            count[k] = count.get(k, 0) + 1
            out_k[(dash, title, count[k])] = (wall, cold)
        return out_k
    ka, kb = keyed(rows), keyed(other_rows)
    slowest = sorted(set(ka) | set(kb), reverse=True, key=lambda k: max(
        x[0] for x in (ka.get(k), kb.get(k)) if x))[:20]
    for k in slowest:
        wa, wb = ka.get(k), kb.get(k)
        cell = lambda x: "—" if x is None else "%.3f / %.3f s" % x
        out.append("| %s | %s (%d) | %s | %s |" % (k[0], k[1].replace("|", "/"), k[2],
                                                   cell(wa), cell(wb)))
    out.append("")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ports", type=int, default=10000)
    ap.add_argument("--hours", type=float, default=6)
    ap.add_argument("--step", type=int, default=30)
    ap.add_argument("--switch-ports", type=int,
                    help="switch ports to generate (default: --ports)")
    ap.add_argument("--probe-peers", type=int, default=1,
                    help="peers each host probes (default 1)")
    ap.add_argument("--buffer", type=int,
                    help="seconds of data after the start, to cover generation"
                         " and backfill (default: estimated from the size)")
    ap.add_argument("--compare", metavar="TREE",
                    help="also run the rules and dashboards of another source"
                         " tree (e.g. `git worktree add /tmp/old <commit>`) on"
                         " a copy of the same blocks, at the same time, and"
                         " report both side by side")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", help="also write the Markdown report here")
    ap.add_argument("--vm", action="store_true",
                    help="also import the blocks into VictoriaMetrics (vmctl) and"
                         " time every group under vmalert, before the data's end"
                         " (bench/rules_scale_vm.py); then Prometheus as usual")
    ap.add_argument("--every-step", action="store_true",
                    help="evaluate every group every STEP, the 1 m and 5 m groups"
                         " too (the measure before 2026-12-06); default: each"
                         " group at its production interval, 5 m groups every minute")
    ap.add_argument("--skip-dashboards", action="store_true",
                    help="time the rule groups only")
    args = ap.parse_args()

    work = args.workdir or tempfile.mkdtemp(prefix="fabricmon_rules_scale_")
    os.makedirs(work, exist_ok=True)
    proms = []  # (Popen, port)
    report = []
    try:
        n = int(args.hours * 3600 // args.step)
        # ~45 series per host port, ~15 per switch port, ~8 per probe
        # pair (1 per host at the default) and ~48 per prober; generation + backfill ran at
        # 0.05-0.12 M samples/s together here (2 shared cores,
        # docs/alerting-scale.md); err on the late side: an early end loses
        # the measurement, a late one only waits.
        sw = args.ports if args.switch_ports is None else args.switch_ports
        per_step = args.ports * 45 + sw * 15 + args.ports / 9 * (args.probe_peers * 8 + 48)
        estimate = per_step * n / 0.05e6 + 180
        end = int(time.time()) + (args.buffer or int(estimate))
        end -= end % args.step
        n = int(args.hours * 3600 // args.step)
        timestamps = [end - (n - 1 - i) * args.step for i in range(n)]
        om = os.path.join(work, "data.om")
        t0 = time.monotonic()
        hosts, series, samples, sizes = generate(
            om, args.ports, timestamps, args.step,
            args.ports if args.switch_ports is None else args.switch_ports,
            args.probe_peers)
        t_gen = time.monotonic() - t0
        size = os.path.getsize(om)
        blocks = os.path.join(work, "tsdb")
        t0 = time.monotonic()
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics",
                        om, blocks], check=True, stdout=subprocess.DEVNULL)
        t_fill = time.monotonic() - t0
        os.remove(om)

        # This tree's rules and dashboards, and with --compare another
        # tree's, each on its own Prometheus over its own copy of the same
        # blocks, both running at once: one dataset, one load.
        trees = [("this tree", ROOT)]
        if args.compare:
            trees.append(("compared", os.path.abspath(args.compare)))
        for k in range(1, len(trees)):
            shutil.copytree(blocks, blocks + "-%d" % k)
        vm_groups, vm_info = {}, {}
        if args.vm:
            # vmalert's results go to VictoriaMetrics, which stores them at
            # any time: measured while "now" is inside the data, before
            # Prometheus starts (Prometheus' window is after the data's end),
            # so that the two do not share the cores.
            import rules_scale_vm
            vm_rules = os.path.join(work, "vm-rules")
            write_rules(vm_rules, ROOT, args.every_step)
            vm_groups, vm_info = rules_scale_vm.run(
                work, blocks, vm_rules, args.step, end - 60, free_port)
        t0 = time.monotonic()
        for k, (label, tree) in enumerate(trees):
            proms.append(start_prometheus(
                os.path.join(work, "prom-%d" % k), tree,
                blocks if k == 0 else blocks + "-%d" % k, args.step,
                args.every_step))
        for prom_k, port in proms:
            wait_ready(prom_k, port, work)
        t_ready = time.monotonic() - t0

        # Rule results can be stored only after the backfilled blocks end
        # (the head starts there); instant selectors see the data for 5 m
        # after its end. So: wait for the end, then take each group's
        # evaluations that began at least STEP after the end (the
        # threshold series exist by then) and within the 5 m the data is
        # visible; a 5 m group has exactly one evaluation in that window.
        margin = end - time.time()
        if margin < 0:
            print("warning: the data ended %.0f s before Prometheus was ready;"
                  " raise --buffer" % -margin, file=sys.stderr)
        time.sleep(max(0, end - time.time()))
        window_end = end + 300
        cpu0 = [cpu_seconds(p.pid) for p, _ in proms]
        measured = [{} for _ in proms]
        groups = [{} for _ in proms]
        while time.time() < window_end:
            for k, (_, port) in enumerate(proms):
                poll_rules(port, groups[k], measured[k], end + args.step, window_end)
            time.sleep(2)
        cpu_share = (cpu_seconds(proms[0][0].pid) - cpu0[0]) / (time.time() - end)

        # Dashboards are timed as of 4 minutes after the data's end: the
        # raw series are still visible to instant selectors (5 m lookback)
        # and the recorded series the panels read have the ~8 evaluations
        # made since (at `end` itself they would have none). Variables are
        # resolved over the range up to the window's end, so that a
        # variable on a series recorded every 5 m finds it.
        now = end + 240
        timed = [([], []) if args.skip_dashboards else
                 time_dashboards(port, tree, now, window_end, args.step)
                 for (_, tree), (_, port) in zip(trees, proms)]
        rows, failed = timed[0]
        work_rows = rule_work(proms[0][1], ROOT, end + 150)

        report.append("Command: `bench/rules_scale.py %s` (%s UTC)"
                      % (" ".join(sys.argv[1:]),
                         time.strftime("%Y-%m-%d %H:%M", time.gmtime(end))))
        # The raw evaluations, should the report below fail.
        with open(os.path.join(work, "evaluations.json"), "w") as raw:
            json.dump({"prometheus": {str(k): v for k, v in measured[0].items()},
                       "compared": {str(k): v for k, v in measured[-1].items()}
                       if args.compare else {},
                       "vmalert": vm_groups, "vm": vm_info}, raw)
        report.append("")
        report.append("| quantity | value |")
        report.append("|---|---|")
        report.append("| hosts / host ports | %d / %d |" % (hosts, hosts * 9))
        report.append("| switches / switch ports (cabled) | %d / %d (%d) |" % (
            sizes["switches"], sizes["switch ports"], sizes["cabled switch ports"]))
        report.append("| probe pairs (UDP) | %d |" % sizes["probe pairs"])
        report.append("| series / samples | %d / %d (%.1f M) |"
                      % (series, samples, samples / 1e6))
        report.append("| OpenMetrics text | %.2f GB, generated in %.0f s |"
                      % (size / 1e9, t_gen))
        report.append("| `promtool tsdb create-blocks-from openmetrics` | %.0f s (%.2f M samples/s) |"
                      % (t_fill, samples / t_fill / 1e6))
        report.append("| Prometheus ready on the blocks | %.0f s |" % t_ready)
        report.append("")
        report.append("Rule groups (evaluation time, `prometheus_rule_group_last_duration_seconds`"
                      " as `/api/v1/rules` reports it; budget < 1 s; %s):"
                      % ("every group evaluated every %d s, the 5 m groups too" % args.step
                         if args.every_step else "each group at its production interval,"
                         " the 5 m groups every minute"))
        report.append("")
        report.append("| group | rules | warm (fastest) | every evaluation in the window, s | within budget |")
        report.append("|---|---|---|---|---|")
        worst_group = 0
        table = group_table(groups[0], measured[0])
        for name, nrules, warm, shown in table:
            if warm is None:
                report.append("| %s | %d | not evaluated while the data was visible | — | — |"
                              % (name, nrules))
                continue
            worst_group = max(worst_group, warm)
            report.append("| %s | %d | %.3f s | %s | %s |" % (
                name, nrules, warm, shown, "yes" if warm < 1 else "**no**"))
        report.append("")
        report.extend(rule_table(table, measured[0]))
        report.extend(work_table(work_rows))
        report.extend(interval_table(table, measured[0], vm_groups, vm_info,
                                     intervals(ROOT), args.step, work_rows))
        report.append("Prometheus used %.2f cores on average while the rules ran on the data"
                      " (its CPU time over the 5-minute window / the window); %s."
                      % (cpu_share, "every group every %d s" % args.step if args.every_step
                         else "each group at its production interval, the 5 m groups every minute"))
        report.append("")
        if args.compare:
            other_table = group_table(groups[1], measured[1])
            report.extend(comparison(args.compare, table, other_table,
                                     timed[0][0], timed[1][0]))
            report.extend(rule_comparison(table, measured[0], other_table,
                                          measured[1]))
        report.append("Dashboard queries over each dashboard's default range (budget < 2 s), slowest first:")
        report.append("")
        report.append("| warm | cold | dashboard | panel | kind | series | within budget |")
        report.append("|---|---|---|---|---|---|---|")
        for wall, dash, title, instant, nres, seconds, cold, interval in sorted(rows, reverse=True):
            report.append("| %.3f s | %.3f s | %s | %s | %s | %d | %s |" % (
                wall, cold, dash, title.replace("|", "/"),
                "instant" if instant else "range %dh @%ds" % (seconds // 3600, interval),
                nres, "yes" if wall < 2 else "**no**"))
        report.append("")
        for dash, title, q, why in failed:
            report.append("**Refused by Prometheus**: %s / %s: `%s`: %s"
                          % (dash, title, q, why.strip()))
        if failed:
            report.append("")
        report.append("Worst rule group %.3f s; worst panel query %.3f s (%d queries)."
                      " Load average during the run: %s."
                      % (worst_group, max([r[0] for r in rows] or [0]), len(rows),
                         open("/proc/loadavg").read().split()[:3]))
        text = "\n".join(report) + "\n"
        print(text)
        if args.out:
            with open(args.out, "w") as o:
                o.write(text)
    finally:
        for prom, _ in proms:
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
