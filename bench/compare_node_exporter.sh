#!/usr/bin/env bash
# Compares the cost of one full collection of a sysfs tree (default: the
# H100 tree, 9 devices) by `fabricmon --once` and by node_exporter's
# infiniband collector serving one scrape.
#
# Usage: bench/compare_node_exporter.sh [FABRICMON_BINARY] [RUNS] [TREE]
#   defaults: build/fabricmon, 20, tests/fixtures/real/sysfs-gpud-h100
#
# Method (all figures are per collection, averaged over RUNS):
#   fabricmon: each run is a fresh `fabricmon --once --config /dev/null
#     --sysfs.root TREE`; CPU = user+sys and peak RSS = ru_maxrss from
#     wait4() on the exited child (the same numbers /usr/bin/time -f "%U %S
#     %M" prints, but with microsecond rather than 10 ms resolution). This
#     includes process start-up, config, all enabled collectors and
#     serialisation. For reference the same is measured on an empty tree
#     (start-up + no devices) and subtracted in a second ratio, and with a
#     config that enables only ib_port + hw_counters (the part comparable to
#     node_exporter's infiniband collector).
#   node_exporter: each run starts `prometheus-node-exporter --path.sysfs
#     TREE --collector.disable-defaults --collector.infiniband` on a free
#     127.0.0.1 port, waits until GET / (the landing page, which does not
#     collect) answers, then either scrapes /metrics once ("scrape") or not
#     ("idle"), then SIGTERMs it and reads user+sys and ru_maxrss (= VmHWM)
#     from wait4(). /proc/<pid>/stat would give the same CPU in 10 ms ticks,
#     too coarse for a ~10 ms scrape. Scrape cost = median(scrape) -
#     median(idle), i.e. node_exporter's start-up/shutdown cost is removed.
#   fabricmon daemon (steady state, what a node actually runs): the daemon
#     with only ib_port + hw_counters polling every 100 ms, CPU summed over
#     its threads from /proc/<pid>/task/*/schedstat over 10 s after
#     start-up, minus the same daemon with every collector disabled, divided
#     by the number of polls (100); median of 3. Then the cost of one scrape
#     (exposition + HTTP) of what those polls collected: 50 back-to-back
#     GETs against a daemon whose polls are 600 s apart.
#   Medians, not means: the build machines are shared and a single run
#   that lost its CPU caches to a neighbour's compile skews a mean.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-build/fabricmon}"
RUNS="${2:-20}"
TREE="${3:-tests/fixtures/real/sysfs-gpud-h100}"
exec python3 - "$BIN" "$RUNS" "$TREE" <<'PY'
import http.client, os, signal, socket, statistics, subprocess, sys, tempfile, time

binary, runs, tree = sys.argv[1], int(sys.argv[2]), os.path.abspath(sys.argv[3])

def run_child(argv, stdout):
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_RDWR)
        os.dup2(stdout if stdout is not None else fd, 1)
        os.dup2(fd, 2)
        os.execv(argv[0], argv)
    return pid

def cpu_rss(rusage):
    return rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss  # s, KiB

# Only the collectors that cover what node_exporter's infiniband collector
# reads (the default config also runs congestion, roce and nic_identity).
ib_config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
ib_config.write("collectors:\n" + "".join(
    "  %s:\n    enabled: %s\n" % (c, "true" if c in ("ib_port", "hw_counters") else "false")
    for c in ("ib_port", "hw_counters", "congestion", "roce", "nic_identity")))
ib_config.close()

def fabricmon_once(root, config="/dev/null"):
    with tempfile.TemporaryFile() as out:
        pid = run_child([binary, "--once", "--config", config,
                         "--sysfs.root", root], out.fileno())
        _, status, ru = os.wait4(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "fabricmon failed"
        out.seek(0)
        text = out.read().decode()
    return cpu_rss(ru) + (text,)

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    return p

def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", path); r = c.getresponse(); body = r.read().decode(); c.close()
    return r.status, body

def node_exporter(scrape):
    port = free_port()
    pid = run_child(["/usr/bin/prometheus-node-exporter", "--path.sysfs=" + tree,
                     "--collector.disable-defaults", "--collector.infiniband",
                     "--web.listen-address=127.0.0.1:%d" % port], None)
    body = ""
    for _ in range(200):  # bounded wait, 10 s
        try:
            get(port, "/"); break
        except OSError:
            time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL); os.wait4(pid, 0)
        raise SystemExit("node_exporter did not come up")
    if scrape:
        status, body = get(port, "/metrics")
        assert status == 200
    os.kill(pid, signal.SIGTERM)
    _, _, ru = os.wait4(pid, 0)
    return cpu_rss(ru) + (body,)

def series(text, prefix):
    return sum(1 for l in text.splitlines() if l.startswith(prefix))

empty = tempfile.mkdtemp()
os.makedirs(os.path.join(empty, "class/infiniband"))

fm = [fabricmon_once(tree) for _ in range(runs)]
fm0 = [fabricmon_once(empty) for _ in range(runs)]
fmi = [fabricmon_once(tree, ib_config.name) for _ in range(runs)]
ne = [node_exporter(True) for _ in range(runs)]
ne0 = [node_exporter(False) for _ in range(runs)]

mean = lambda xs: statistics.median(xs)
fm_cpu = mean([x[0] for x in fm]); fm0_cpu = mean([x[0] for x in fm0])
fmi_cpu = mean([x[0] for x in fmi])
ne_cpu = mean([x[0] for x in ne]); ne0_cpu = mean([x[0] for x in ne0])
ne_scrape = ne_cpu - ne0_cpu
fm_rss = max(x[1] for x in fm); ne_rss = max(x[1] for x in ne); ne0_rss = max(x[1] for x in ne0)
fm_text, ne_text = fm[0][2], ne[0][2]

print("tree: %s, runs: %d" % (tree, runs))
print("fabricmon --once            CPU %.2f ms/collection (median; stdev %.2f), peak RSS %d KiB"
      % (fm_cpu * 1e3, statistics.stdev([x[0] for x in fm]) * 1e3, fm_rss))
print("fabricmon --once empty tree CPU %.2f ms (start-up), collection alone %.2f ms"
      % (fm0_cpu * 1e3, (fm_cpu - fm0_cpu) * 1e3))
print("fabricmon --once ib_port+hw_counters only CPU %.2f ms, minus start-up %.2f ms"
      % (fmi_cpu * 1e3, (fmi_cpu - fm0_cpu) * 1e3))
print("node_exporter scrape run    CPU %.2f ms, idle run %.2f ms -> %.2f ms/scrape; "
      "VmHWM %d KiB (idle %d KiB)" % (ne_cpu * 1e3, ne0_cpu * 1e3, ne_scrape * 1e3,
                                       ne_rss, ne0_rss))
print("series: fabricmon %d (fabric_port_*/hw/roce/device: %d), node_exporter node_infiniband_* %d"
      % (sum(1 for l in fm_text.splitlines() if l and not l.startswith("#")),
         sum(series(fm_text, p) for p in ("fabric_port_", "fabric_hw_counter",
              "fabric_device_info", "fabric_device_hw_counter", "fabric_roce_cnp",
              "fabric_roce_ecn", "fabric_roce_out", "fabric_roce_packet",
              "fabric_roce_local", "fabric_roce_adaptive", "fabric_roce_slow")),
         series(ne_text, "node_infiniband_")))
if ne_scrape > 0:
    print("CPU ratio fabricmon/node_exporter: %.3f (whole --once process), %.3f "
          "(collection alone, start-up removed on both sides)"
          % (fm_cpu / ne_scrape, (fm_cpu - fm0_cpu) / ne_scrape))
    print("CPU ratio ib_port+hw_counters only: %.3f (whole process), %.3f (start-up removed)"
          % (fmi_cpu / ne_scrape, (fmi_cpu - fm0_cpu) / ne_scrape))
print("peak RSS ratio fabricmon/node_exporter: %.3f" % (fm_rss / ne_rss))

def proc_cpu(pid):
    # Nanoseconds on CPU summed over the daemon's threads (schedstat), far
    # finer than /proc/<pid>/stat's 10 ms ticks.
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # thread gone
    return total / 1e9

def daemon_cpu(enabled, seconds=10.0, interval="100ms", scrapes=0):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    cfg.write("collectors:\n" + "".join(
        "  %s:\n    enabled: %s\n    interval: %s\n"
        % (c, "true" if c in enabled else "false", interval)
        for c in ("ib_port", "hw_counters", "congestion", "roce", "nic_identity")))
    cfg.close()
    port = free_port()
    pid = run_child([binary, "--config", cfg.name, "--sysfs.root", tree,
                     "--web.listen-address", "127.0.0.1:%d" % port], None)
    for _ in range(200):
        try:
            get(port, "/metrics"); break
        except OSError:
            time.sleep(0.05)
    time.sleep(1.0)
    c0 = proc_cpu(pid)
    if scrapes:
        for _ in range(scrapes):
            get(port, "/metrics")
    else:
        time.sleep(seconds)
    c1 = proc_cpu(pid)
    os.kill(pid, signal.SIGTERM); os.wait4(pid, 0)
    os.unlink(cfg.name)
    return c1 - c0

polls = []
for _ in range(3):
    polls.append((daemon_cpu(("ib_port", "hw_counters")) - daemon_cpu(())) / 100)
per_poll = statistics.median(polls)
print("fabricmon daemon ib_port+hw_counters every 100 ms: %.2f ms CPU per poll "
      "(median of 3 x 10 s, idle daemon subtracted)" % (per_poll * 1e3))
# One scrape of what the polls collected: exposition + HTTP (polls every
# 600 s, so none runs while 50 scrapes are served back to back).
scrape = statistics.median(
    [daemon_cpu(("ib_port", "hw_counters"), interval="600s", scrapes=50) / 50
     for _ in range(3)])
print("fabricmon daemon one scrape of ib_port+hw_counters: %.2f ms CPU" % (scrape * 1e3))
if ne_scrape > 0:
    print("CPU ratio daemon poll / node_exporter scrape: %.3f" % (per_poll / ne_scrape))
    print("CPU ratio daemon poll + scrape / node_exporter scrape: %.3f"
          % ((per_poll + scrape) / ne_scrape))
PY
