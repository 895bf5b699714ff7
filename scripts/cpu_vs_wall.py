#!/usr/bin/env python3
"""CPU (user + sys, every descendant) against wall time of one command.

  scripts/cpu_vs_wall.py CMD [ARG...]
prints "wall_s user_s sys_s ratio leaked" on stderr's last line and exits
with CMD's status.

Used to tell wait-bound tests from CPU-bound ones (issue 44 item 1,
docs/measurements.md). /usr/bin/time only counts the children its command
reaps; a daemon a test starts and does not wait for, or one that forks
away, would be missed. Here the script is a child subreaper
(PR_SET_CHILD_SUBREAPER): orphans are re-parented to it and it reaps them
after CMD ends, so RUSAGE_CHILDREN holds the CPU of the whole tree.
Descendants still alive 10 s after CMD ended are counted as "leaked" and
left running (their CPU is then missing from the figure).
"""
import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("prctl(PR_SET_CHILD_SUBREAPER) failed", file=sys.stderr)
        return 2
    start = time.monotonic()
    rc = subprocess.call(sys.argv[1:])
    wall = time.monotonic() - start
    # Reap re-parented orphans (they may still be exiting).
    deadline = time.monotonic() + 10
    leaked = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            if time.monotonic() > deadline:
                leaked = len([d for d in os.listdir("/proc") if d.isdigit()
                              and _ppid(int(d)) == os.getpid()])
                break
            time.sleep(0.1)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru.ru_utime + ru.ru_stime
    print(f"{wall:.1f} {ru.ru_utime:.1f} {ru.ru_stime:.1f} "
          f"{cpu / wall if wall else 0:.2f} {leaked}", file=sys.stderr)
    return rc


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


if __name__ == "__main__":
    sys.exit(main())
