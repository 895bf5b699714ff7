#!/usr/bin/env bash
# Validates fabricmon-bench's RDMA RC transport where it can run: two
# `fabricmon-bench agent`s on soft-RoCE in a namespace pair (default) or on
# two real HCA ports (RDMA_A_IP/RDMA_B_IP, see validate-rdma-common.sh), a
# sendrecv-pairs and an allreduce-ring run with --transport rdma, then the
# same with --transport tcp on the same link for comparison. Checks that
# every size completed, that algbw = size / time and busbw follow the
# nccl-tests definitions, and that the largest size's bandwidth is sane
# (over 10 MB/s on soft-RoCE, over 1 GB/s on hardware).
#
# Usage: sudo scripts/validate-rdma-bench.sh   [SIZES=8:64M:x8 BUILD_DIR=build]
# Exit: 0 pass, 1 a check failed, 2 no RDMA device can be had here.
set -euo pipefail
# shellcheck source=scripts/validate-rdma-common.sh
source "$(dirname "$0")/validate-rdma-common.sh"

SIZES=${SIZES:-8:64M:x8}
command -v python3 >/dev/null || rdma_fail "python3 is missing"

rdma_setup
BENCH=$(rdma_binary fabricmon-bench)
KEY=$(rdma_keyfile)

rdma_on_a "$BENCH" agent --listen "$RDMA_A_IP:10917" --key "$KEY" \
  >"$RDMA_WORK/agent-a.log" 2>&1 &
RDMA_PIDS+=($!)
rdma_on_b "$BENCH" agent --listen "$RDMA_B_IP:10917" --key "$KEY" \
  >"$RDMA_WORK/agent-b.log" 2>&1 &
RDMA_PIDS+=($!)
printf '%s:10917\n%s:10917\n' "$RDMA_A_IP" "$RDMA_B_IP" >"$RDMA_WORK/hosts"
sleep 1

run() {  # pattern transport
  local out="$RDMA_WORK/$1-$2.json"
  if ! rdma_on_a "$BENCH" run --pattern "$1" --hosts "$RDMA_WORK/hosts" \
      --key "$KEY" --transport "$2" --sizes "$SIZES" --iterations 10 \
      --warmup 2 --out "$out" >"$RDMA_WORK/$1-$2.log" 2>&1; then
    tail -20 "$RDMA_WORK/$1-$2.log" >&2
    rdma_fail "fabricmon-bench run --pattern $1 --transport $2 failed"
  fi
  echo "$out"
}

for pattern in sendrecv-pairs allreduce-ring; do
  rdma_json=$(run "$pattern" rdma)
  tcp_json=$(run "$pattern" tcp)
  python3 - "$rdma_json" "$tcp_json" "$RDMA_MODE" <<'PY' || rdma_fail "$pattern: results not sane"
import json, sys
rdma, tcp, mode = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
factor = {"allreduce-ring": 2 * (2 - 1) / 2}.get(rdma["pattern"], 1.0)
ok = True
for row in rdma["results"]:
    size, t = row["size_bytes"], row["time_seconds"]
    if t <= 0:
        print(f"size {size}: time {t}"); ok = False; continue
    if abs(row["algbw_bytes_per_second"] - size / t) > 0.01 * size / t:
        print(f"size {size}: algbw is not size/time"); ok = False
    if rdma["pattern"] == "allreduce-ring" and \
            abs(row["busbw_bytes_per_second"] - factor * size / t) > 0.01 * size / t:
        print(f"size {size}: busbw is not algbw x 2(n-1)/n"); ok = False
big_r = max(rdma["results"], key=lambda r: r["size_bytes"])
big_t = max(tcp["results"], key=lambda r: r["size_bytes"])
floor = 1e9 if mode == "hardware" else 1e7
print(f'{rdma["pattern"]}: largest size {big_r["size_bytes"]} B: rdma busbw '
      f'{big_r["busbw_bytes_per_second"] / 1e6:.1f} MB/s, tcp '
      f'{big_t["busbw_bytes_per_second"] / 1e6:.1f} MB/s; smallest size time '
      f'rdma {min(rdma["results"], key=lambda r: r["size_bytes"])["time_seconds"] * 1e6:.1f} us')
if big_r["busbw_bytes_per_second"] < floor:
    print(f"rdma busbw under {floor / 1e6:.0f} MB/s"); ok = False
sys.exit(0 if ok else 1)
PY
done
rdma_log "PASS ($RDMA_MODE)"
