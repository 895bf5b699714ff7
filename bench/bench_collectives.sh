#!/usr/bin/env bash
# fabricmon-bench against theory (issue 16's checks): --local N agents in
# network namespaces whose veth links tbf shapes to RATE, TCP transport.
#   1. ring all-reduce busbw at large sizes vs the link rate (theory: a ring
#      keeps every link busy, busbw -> link rate; target within 10%), the
#      median of ITER iterations per size;
#   2. the alpha-beta model T(S) = steps*alpha + bytes_per_rank(S)/B for ring
#      all-reduce (2(n-1) steps, 2(n-1)/n*S bytes) and all-to-all (1 step,
#      (n-1)/n*S bytes), alpha and B fitted by least squares over the small
#      sizes, printed side by side with the link's payload rate.
# Needs root and iproute2 (namespaces); prints a table, exits 0.
#
#   bench/bench_collectives.sh                  # CASES="4:1gbit 8:1gbit"
#   CASES="4:250mbit" bench/bench_collectives.sh
source "$(dirname "$0")/lib.sh"
bench_cd_root
BENCH="${BENCH_FABRICMON_BENCH:-build/fabricmon-bench}"
bench_require_exec "$BENCH" "cmake --build build --target fabricmon-bench"
[[ $(id -u) -eq 0 ]] || bench_die "needs root (network namespaces)"
CASES="${CASES:-4:1gbit 8:1gbit}"
LARGE="${LARGE:-16M,64M}"
SMALL="${SMALL:-1K:256K:x4}"
ITER="${ITER:-10}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $CASES; do
  n=${c%%:*} rate=${c#*:}
  "$BENCH" run --pattern allreduce-ring --local "$n" --local-rate "$rate" \
    --sizes "$LARGE" --iterations "$ITER" --warmup 1 --out "$out/ar-large-$c.json" \
    >/dev/null 2>"$out/err" || bench_die "run failed: $(cat "$out/err")"
  for p in allreduce-ring alltoall; do
    "$BENCH" run --pattern "$p" --local "$n" --local-rate "$rate" \
      --sizes "$SMALL" --iterations "$ITER" --warmup 1 \
      --out "$out/$p-small-$c.json" >/dev/null 2>"$out/err" ||
      bench_die "run failed: $(cat "$out/err")"
  done
done
python3 - "$out" $CASES <<'PY'
import json, sys, re
out, cases = sys.argv[1], sys.argv[2:]
for case in cases:
    n, rate = int(case.split(":")[0]), case.split(":")[1]
    m = re.fullmatch(r'(\d+(?:\.\d+)?)(k|m|g)?bit', rate)
    link = float(m.group(1)) * {None: 1, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m.group(2)] / 8
    # tbf counts whole frames: 9000-byte MTU, 66 bytes of Ethernet/IP/TCP
    # headers (with timestamps) per 8948 bytes of payload.
    payload = link * 8948 / 9014
    print(f"n={n} at {rate}: link {link/1e6:.1f} MB/s, TCP payload ceiling {payload/1e6:.1f} MB/s")
    r = json.load(open(f"{out}/ar-large-{case}.json"))
    for row in r["results"]:
        b = row["busbw_bytes_per_second"]
        # What each of the 2(n-1) steps took beyond moving its bytes at the
        # payload rate: the ring's lock-step boundary (the last bytes of a
        # step arrive, the rank wakes, the next step's first bytes go out).
        wire = 2*(n-1)/n*row["size_bytes"]/payload
        gap = (row["time_seconds"] - wire) / (2*(n-1))
        print(f"n={n} allreduce-ring {row['size_bytes']>>20} MiB: busbw "
              f"{b/1e6:.1f} MB/s = {100*b/link:.1f}% of link rate "
              f"({'within' if b >= 0.9*link else 'NOT within'} 10%), "
              f"{gap*1e3:.1f} ms per step beyond the wire time")
    for p, steps, share in (("allreduce-ring", 2*(n-1), 2*(n-1)/n),
                            ("alltoall", 1, (n-1)/n)):
        rows = json.load(open(f"{out}/{p}-small-{case}.json"))["results"]
        # Least squares of T = steps*alpha + share*S/B over the sizes (one
        # noisy size does not set alpha alone).
        xs = [(steps, share*r["size_bytes"]) for r in rows]
        ts = [r["time_seconds"] for r in rows]
        a11 = sum(x[0]*x[0] for x in xs); a12 = sum(x[0]*x[1] for x in xs)
        a22 = sum(x[1]*x[1] for x in xs)
        b1 = sum(x[0]*t for x, t in zip(xs, ts)); b2 = sum(x[1]*t for x, t in zip(xs, ts))
        det = a11*a22 - a12*a12
        alpha = (b1*a22 - b2*a12) / det
        inv_b = (a11*b2 - a12*b1) / det
        fit_b = 1/inv_b if inv_b > 0 else float("inf")
        print(f"n={n} {p}: fitted alpha = {alpha*1e6:.0f} us per step "
              f"({steps} steps), fitted B = {fit_b/1e6:.1f} MB/s "
              f"(link payload {payload/1e6:.1f} MB/s)")
        for (st, bytes_), t, row in zip(xs, ts, rows):
            model = st*alpha + bytes_*inv_b
            print(f"   {row['size_bytes']:>8} B  measured {t*1e6:9.0f} us"
                  f"  model {model*1e6:9.0f} us  ratio {t/model:.2f}")
PY
