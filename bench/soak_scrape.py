#!/usr/bin/env python3
"""Scraper and sampler of bench/soak.sh (run through it, not alone).

soak_scrape.py PORT PID SECONDS WARMUP_SECONDS OUT_DIR [RELOAD_SECONDS]

Scrapes http://127.0.0.1:PORT/metrics 20 times a second (one new connection
per scrape, as after a Prometheus restart; each scrape must be a 200 whose
body holds fabric_build_info), every 10 s samples the daemon's RSS, open
descriptors and CPU time from /proc/PID, and every RELOAD_SECONDS (0 = never)
sends it SIGHUP. Writes OUT_DIR/samples.csv and prints the summary; exits 1
on any scrape error or if the daemon died.
"""
import http.client
import os
import signal
import sys
import time

SCRAPE_PERIOD = 0.05  # 20 per second
SAMPLE_PERIOD = 10.0


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid):
    """utime + stime of /proc/PID/stat, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def scrape(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            return f"HTTP {resp.status}"
        if b"fabric_build_info" not in body:
            return "body without fabric_build_info"
        return None
    except (OSError, http.client.HTTPException) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def slope_per_hour(points):
    """Least-squares slope of (seconds, value) points, per hour."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    if den == 0:
        return 0.0
    return sum((t - mt) * (v - mv) for t, v in points) / den * 3600.0


def main():
    port, pid = int(sys.argv[1]), int(sys.argv[2])
    seconds, warmup = float(sys.argv[3]), float(sys.argv[4])
    out = sys.argv[5]
    reload_every = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    reloads = 0
    start = time.monotonic()
    next_scrape = start
    next_sample = start
    next_reload = start + reload_every if reload_every > 0 else float("inf")
    scrapes = 0
    errors = []
    samples = []  # (t, rss_kib, fds, cpu_seconds)
    died = False
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            break
        if now >= next_sample:
            try:
                samples.append((now - start, rss_kib(pid), fd_count(pid),
                                cpu_seconds(pid)))
            except (OSError, RuntimeError):
                died = True
                break
            next_sample += SAMPLE_PERIOD
        if now >= next_reload:
            try:
                os.kill(pid, signal.SIGHUP)
                reloads += 1
            except OSError:
                died = True
                break
            next_reload += reload_every
        if now >= next_scrape:
            err = scrape(port)
            scrapes += 1
            if err:
                errors.append(f"{now - start:.1f}s {err}")
            # Fixed schedule; a slow scrape does not cause a burst after it.
            next_scrape = max(next_scrape + SCRAPE_PERIOD, time.monotonic())
        time.sleep(max(0.0, min(next_scrape, next_sample, next_reload) -
                       time.monotonic()))

    with open(os.path.join(out, "samples.csv"), "w") as f:
        f.write("seconds,rss_kib,fds,cpu_seconds\n")
        for t, r, d, c in samples:
            f.write(f"{t:.1f},{r},{d},{c:.2f}\n")
    after = [s for s in samples if s[0] >= warmup]
    print(f"scrapes: {scrapes} in {seconds:.0f} s "
          f"({scrapes / seconds:.1f}/s), errors: {len(errors)}, "
          f"reloads: {reloads}")
    for e in errors[:10]:
        print(f"  scrape error at {e}")
    if after:
        rss = [r for _, r, _, _ in after]
        fds = [d for _, _, d, _ in after]
        # CPU share of one core per sample period, after warm-up.
        cpu = [(b[3] - a[3]) / (b[0] - a[0]) * 100
               for a, b in zip(after, after[1:])]
        print(f"after {warmup:.0f} s warm-up ({len(after)} samples): "
              f"RSS {min(rss)}..{max(rss)} KiB (first {rss[0]}, last {rss[-1]}), "
              f"growth {slope_per_hour([(t, r) for t, r, _, _ in after]):.0f} KiB/h; "
              f"fds {min(fds)}..{max(fds)} (first {fds[0]}, last {fds[-1]}), "
              f"growth {slope_per_hour([(t, d) for t, _, d, _ in after]):.1f}/h")
        if cpu:
            half = len(cpu) // 2 or 1
            print(f"CPU (% of one core per {SAMPLE_PERIOD:.0f} s): "
                  f"{min(cpu):.1f}..{max(cpu):.1f}, first half mean "
                  f"{sum(cpu[:half]) / half:.1f}, second half mean "
                  f"{sum(cpu[half:]) / max(1, len(cpu) - half):.1f}")
    if died:
        print("daemon died during the soak")
    return 1 if errors or died else 0


if __name__ == "__main__":
    sys.exit(main())
