#!/usr/bin/env python3
"""A stand-in Prometheus for bench/locate_cost.sh: answers fabricmon-locate's
instant queries (/api/v1/query) with BAD lossy and GOOD clean random probe
pairs between the hosts of the simulator's fat tree (host i has LID i + 1,
as simulator/fat_tree.h numbers them), so that the locator's whole run --
queries, discovery, traces, vote -- can be timed without a TSDB to fill.

  locate_fake_prometheus.py PORT HOSTS BAD GOOD [SEED]

Queries it does not recognise (the switch counters) get an empty vector.
Each answer is built once and kept (bench/locate_memory.sh asks for 10^6
pairs: building that JSON takes seconds).
"""
import http.server
import json
import random
import sys
import urllib.parse

port, hosts, bad, good = (int(a) for a in sys.argv[1:5])
rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 29)
pairs = []
for i in range(bad + good):
    a = rng.randrange(hosts)
    b = rng.randrange(hosts - 1)
    b += b >= a
    pairs.append((a, b, i < bad))


def labels(a, b):
    return {"instance": f"host{a}:9100", "job": "fabricmon", "peer": f"host{b}"}


def vector(value_of, extra=lambda a, b: {}):
    return [{"metric": {**labels(a, b), **extra(a, b)},
             "value": [0, value_of(a, b, lossy)]} for a, b, lossy in pairs]


def answer(query):
    if "offset" in query:  # the baseline: none, the window's median is used
        return []
    if "fabric_probe_sent_total" in query:
        return vector(lambda a, b, lossy: "600")
    if "fabric_probe_lost_total" in query:
        return vector(lambda a, b, lossy: "120" if lossy else "0")
    if "fabric_probe_network_rtt_seconds" in query:  # quantile or sum/count
        return vector(lambda a, b, lossy: "8e-06")
    if "fabric_probe_pair_info" in query:
        return vector(lambda a, b, lossy: "1",
                      lambda a, b: {"local_lid": str(a + 1),
                                    "remote_lid": str(b + 1)})
    return []


bodies = {}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query).get("query", [""])[0]
        kind = ("baseline" if "offset" in query else
                next((m for m in ("fabric_probe_sent_total",
                                  "fabric_probe_lost_total",
                                  "fabric_probe_network_rtt_seconds",
                                  "fabric_probe_pair_info") if m in query), ""))
        if kind not in bodies:
            bodies[kind] = json.dumps(
                {"status": "success",
                 "data": {"resultType": "vector",
                          "result": answer(query)}}).encode()
        body = bodies[kind]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
