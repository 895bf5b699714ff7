#!/usr/bin/env bash
# Compares the cost of one full collection of a sysfs tree (default: the
# H100 tree, 9 devices) by fabricmon and by node_exporter's infiniband
# collector.
#
# Usage: bench/compare_node_exporter.sh [FABRICMON_BINARY] [RUNS] [TREE] [BASELINE]
#   defaults: build/fabricmon, 20, tests/fixtures/real/sysfs-gpud-h100
#   BASELINE: another fabricmon binary (an older build) whose one-shot
#   figures (--version, the three --once runs) are taken in the same rounds,
#   alternating with FABRICMON_BINARY's, and printed beside them.
#   Needs <build>/bench/spawn_rusage next to the binary (built with it).
#
# Method (medians over RUNS, or over 3 daemons for the steady-state parts):
#   One-shot processes are started by bench/spawn_rusage, which reports the
#   CPU (user+sys) and peak RSS (ru_maxrss) of the process alone: forking
#   from Python would charge each child ~7 ms for the interpreter's page
#   tables and report the interpreter's RSS when it is the larger.
#   fabricmon --once: a whole process (start-up, config, every enabled
#     collector, serialisation, exit) on TREE, on an empty tree (= start-up)
#     and with only ib_port + hw_counters enabled (the part comparable to
#     node_exporter's infiniband collector).
#   fabricmon --version: the process floor (exec, dynamic loading, static
#     initialisers, exit).
#   node_exporter first scrape: `prometheus-node-exporter --path.sysfs TREE
#     --collector.disable-defaults --collector.infiniband` on a free loopback
#     port, GET /metrics once or not at all, SIGTERM; scrape cost =
#     median(scrape run) - median(idle run), which removes start-up.
#     Its whole process (start-up, one scrape, exit) is the other yardstick
#     of a one-shot `fabricmon --once` (issue 44: target <= 0.2).
#   Steady state (what a node runs all day), CPU summed over the process's
#     threads from /proc/<pid>/task/*/schedstat (ns; /proc/<pid>/stat's 10 ms
#     ticks are too coarse):
#     node_exporter: 20 scrapes 100 ms apart after a warm-up scrape.
#     fabricmon: the daemon polling ib_port + hw_counters every 100 ms for
#       10 s, minus the same daemon with every collector disabled, per poll;
#       plus one scrape of what the polls collected (30 GETs 100 ms apart
#       against a daemon whose polls are 600 s apart).
#     Spaced, not back to back, on both sides: a process that runs every
#     100 ms finds its caches cold (ib_port + hw_counters in process: 1.0 ms
#     CPU per collection in a tight loop, 1.8 ms with 100 ms pauses,
#     `<build>/bench/collect_profile 50 --pause 100`).
#   Medians, not means: the build machines are shared and a single run
#   that lost its CPU caches to a neighbour's compile skews a mean.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_cd_root
BIN="${1:-$BENCH_FABRICMON}"
RUNS="${2:-20}"
TREE="${3:-$BENCH_TREE}"
BASELINE="${4:-}"
export NODE_EXPORTER
exec python3 - "$BIN" "$RUNS" "$TREE" "$BASELINE" <<'PY'
import http.client, os, signal, socket, statistics, subprocess, sys, tempfile, time

binary, runs, tree = sys.argv[1], int(sys.argv[2]), os.path.abspath(sys.argv[3])
baseline = sys.argv[4] if len(sys.argv) > 4 else ""
helper = os.path.join(os.path.dirname(binary), "bench", "spawn_rusage")
if not os.access(helper, os.X_OK):
    raise SystemExit("%s not found: build the bench targets first" % helper)
NODE_EXPORTER = os.environ["NODE_EXPORTER"]  # bench/lib.sh
median = statistics.median

class Child:
    """A process run by spawn_rusage; finish() returns (cpu s, peak KiB)."""
    def __init__(self, argv, out=os.devnull):
        self.proc = subprocess.Popen([helper, out] + argv, stdout=subprocess.PIPE, text=True)
        self.pid = int(self.proc.stdout.readline().split()[1])
    def finish(self):
        line = self.proc.stdout.read().split()
        self.proc.wait()
        assert line and line[0] == "rusage", "spawn_rusage failed"
        utime, stime, rss, code = map(int, line[1:5])
        return (utime + stime) / 1e6, rss, code

# Only the collectors that cover what node_exporter's infiniband collector
# reads (the default config also runs congestion, roce and nic_identity).
def write_config(enabled, interval=None):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    cfg.write("collectors:\n" + "".join(
        "  %s:\n    enabled: %s\n%s" % (c, "true" if c in enabled else "false",
                                       "    interval: %s\n" % interval if interval else "")
        for c in ("ib_port", "hw_counters", "congestion", "roce", "nic_identity")))
    cfg.close()
    return cfg.name

IB = ("ib_port", "hw_counters")
ib_config = write_config(IB)

def fabricmon_once(root, config="/dev/null", binary=binary):
    with tempfile.NamedTemporaryFile() as out:
        cpu, rss, code = Child([binary, "--once", "--config", config,
                                "--sysfs.root", root], out.name).finish()
        assert code == 0, "fabricmon failed"
        return cpu, rss, open(out.name).read()

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    return p

def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", path); r = c.getresponse(); body = r.read().decode(); c.close()
    return r.status, body

def wait_up(child, port, path):
    for _ in range(200):  # bounded wait, 10 s
        try:
            return get(port, path)
        except OSError:
            time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL); child.finish()
    raise SystemExit("%s did not come up" % path)

def node_exporter_argv(port):
    return [NODE_EXPORTER, "--path.sysfs=" + tree, "--collector.disable-defaults",
            "--collector.infiniband", "--web.listen-address=127.0.0.1:%d" % port]

def node_exporter_first(scrape):
    port = free_port()
    child = Child(node_exporter_argv(port))
    wait_up(child, port, "/")  # the landing page does not collect
    body = ""
    if scrape:
        status, body = get(port, "/metrics")
        assert status == 200
    os.kill(child.pid, signal.SIGTERM)
    cpu, rss, _ = child.finish()
    return cpu, rss, body

def proc_cpu(pid):
    # Nanoseconds on CPU summed over the process's threads.
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # thread gone
    return total / 1e9

def steady(argv_for_port, scrapes=0, seconds=0.0, gap=0.1):
    """CPU of a serving process over `scrapes` GETs `gap` s apart, or over
    `seconds` without scrapes."""
    port = free_port()
    child = Child(argv_for_port(port))
    wait_up(child, port, "/metrics")
    time.sleep(1.0)
    c0 = proc_cpu(child.pid)
    for _ in range(scrapes):
        time.sleep(gap)
        get(port, "/metrics")
    time.sleep(seconds)
    c1 = proc_cpu(child.pid)
    os.kill(child.pid, signal.SIGTERM)
    child.finish()
    return c1 - c0

def daemon(enabled, interval):
    cfg = write_config(enabled, interval)
    return lambda port: [binary, "--config", cfg, "--sysfs.root", tree,
                         "--web.listen-address", "127.0.0.1:%d" % port]

empty = tempfile.mkdtemp()
os.makedirs(os.path.join(empty, "class/infiniband"))

# One-shot runs, this binary's and the baseline's alternating in each round.
shots = {b: ([], [], [], []) for b in (binary, baseline) if b}
for _ in range(runs):
    for b, (all_, empty_, ib_, version_) in shots.items():
        all_.append(fabricmon_once(tree, binary=b))
        empty_.append(fabricmon_once(empty, binary=b))
        ib_.append(fabricmon_once(tree, ib_config, binary=b))
        version_.append(Child([b, "--version"]).finish()[0])
fm, fm0, fmi, fmv = shots[binary]
ne = [node_exporter_first(True) for _ in range(runs)]
ne0 = [node_exporter_first(False) for _ in range(runs)]

fm_cpu = median([x[0] for x in fm]); fm0_cpu = median([x[0] for x in fm0])
fmi_cpu = median([x[0] for x in fmi])
fm_version = median(fmv)
ne_first = median([x[0] for x in ne]) - median([x[0] for x in ne0])
ne_whole = median([x[0] for x in ne])  # start-up + one scrape + exit
fm_rss = max(x[1] for x in fm); fmi_rss = max(x[1] for x in fmi)
ne_rss = max(x[1] for x in ne); ne0_rss = max(x[1] for x in ne0)
fm_text, ne_text = fm[0][2], ne[0][2]

def series(text, prefix):
    return sum(1 for l in text.splitlines() if l.startswith(prefix))

ms = lambda s: s * 1e3
print("tree: %s, runs: %d" % (tree, runs))
print("fabricmon --once, all default collectors: CPU %.2f ms (stdev %.2f), peak RSS %d KiB"
      % (ms(fm_cpu), ms(statistics.stdev([x[0] for x in fm])), fm_rss))
print("fabricmon --once, empty tree (start-up):  CPU %.2f ms" % ms(fm0_cpu))
print("fabricmon --once, ib_port+hw_counters:    CPU %.2f ms, %.2f ms without start-up; "
      "peak RSS %d KiB" % (ms(fmi_cpu), ms(fmi_cpu - fm0_cpu), fmi_rss))
print("node_exporter first scrape: %.2f ms CPU (scrape run - idle run); peak RSS %d KiB "
      "(idle %d KiB)" % (ms(ne_first), ne_rss, ne0_rss))
print("node_exporter whole process (start-up, one scrape, exit): %.2f ms CPU" % ms(ne_whole))
print("fabricmon --version (the process floor):  CPU %.2f ms" % ms(fm_version))
print("series: fabricmon %d (fabric_port_*/hw/roce/device: %d), node_exporter node_infiniband_* %d"
      % (sum(1 for l in fm_text.splitlines() if l and not l.startswith("#")),
         sum(series(fm_text, p) for p in ("fabric_port_", "fabric_hw_counter",
              "fabric_device_info", "fabric_device_hw_counter", "fabric_roce_cnp",
              "fabric_roce_ecn", "fabric_roce_out", "fabric_roce_packet",
              "fabric_roce_local", "fabric_roce_adaptive", "fabric_roce_slow")),
         series(ne_text, "node_infiniband_")))

if baseline:
    b_all, b_empty, b_ib, b_version = shots[baseline]
    print("baseline %s, same rounds: --version %.2f ms, --once empty tree %.2f ms, "
          "ib_port+hw_counters %.2f ms, all default collectors %.2f ms CPU"
          % (baseline, ms(median(b_version)), ms(median([x[0] for x in b_empty])),
             ms(median([x[0] for x in b_ib])), ms(median([x[0] for x in b_all]))))
    print("  baseline --once all collectors / node_exporter whole process: %.3f"
          % (median([x[0] for x in b_all]) / ne_whole))

ne_steady = median([steady(node_exporter_argv, scrapes=20) / 20 for _ in range(3)])
print("node_exporter steady scrape: %.2f ms CPU (median of 3 x 20 scrapes 100 ms apart)"
      % ms(ne_steady))
polls = [(steady(daemon(IB, "100ms"), seconds=10) - steady(daemon((), "100ms"), seconds=10)) / 100
         for _ in range(3)]
per_poll = median(polls)
print("fabricmon daemon ib_port+hw_counters every 100 ms: %.2f ms CPU per poll "
      "(median of 3 x 10 s, idle daemon subtracted)" % ms(per_poll))
scrape = median([steady(daemon(IB, "600s"), scrapes=30) / 30 for _ in range(3)])
print("fabricmon daemon one scrape of ib_port+hw_counters: %.2f ms CPU" % ms(scrape))

print("\nCPU ratios fabricmon / node_exporter (target <= 0.2):")
rows = [
    ("daemon poll + scrape / steady scrape", per_poll + scrape, ne_steady),
    ("daemon poll + scrape / first scrape", per_poll + scrape, ne_first),
    ("daemon poll / steady scrape", per_poll, ne_steady),
    ("--once ib_port+hw_counters without start-up / first scrape", fmi_cpu - fm0_cpu, ne_first),
    ("--once ib_port+hw_counters, whole process / first scrape", fmi_cpu, ne_first),
    ("--once all collectors, whole process / first scrape", fm_cpu, ne_first),
    ("--once all collectors / node_exporter whole process", fm_cpu, ne_whole),
    ("--once ib_port+hw_counters / node_exporter whole process", fmi_cpu, ne_whole),
]
for label, a, b in rows:
    print("  %-60s %.3f" % (label, a / b if b > 0 else float("nan")))
print("peak RSS ratio, --once ib_port+hw_counters / node_exporter: %.3f; all collectors: %.3f"
      % (fmi_rss / ne_rss, fm_rss / ne_rss))
PY
