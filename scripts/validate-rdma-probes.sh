#!/usr/bin/env bash
# Validates the RDMA (verbs UD) probe path where it can run: two fabricmon
# daemons probing each other over RDMA, on soft-RoCE in a namespace pair
# (default) or on two real HCA ports (RDMA_A_IP/RDMA_B_IP, see
# validate-rdma-common.sh). Checks that probes were sent over
# transport="rdma", that loss is under 1 %, and that the median RTT is sane
# (under 5 ms on soft-RoCE, under 100 us with hardware timestamps).
#
# Usage: sudo scripts/validate-rdma-probes.sh   [DURATION=20 BUILD_DIR=build]
# Exit: 0 pass, 1 a check failed, 2 no RDMA device can be had here.
set -euo pipefail
# shellcheck source=scripts/validate-rdma-common.sh
source "$(dirname "$0")/validate-rdma-common.sh"

DURATION=${DURATION:-20}
command -v curl >/dev/null || rdma_fail "curl is missing"

rdma_setup
FABRICMON=$(rdma_binary fabricmon)
KEY=$(rdma_keyfile)

write_config() {  # self_ip peer_ip file
  cat >"$3" <<EOF
collectors:
  probe:
    enabled: true
    transport: rdma
    listen_address: "$1:10916"
    interval: 10ms
    probe_timeout: 1s
    key_file: $KEY
    peers: ["$2:10916"]
EOF
}
write_config "$RDMA_A_IP" "$RDMA_B_IP" "$RDMA_WORK/a.yaml"
write_config "$RDMA_B_IP" "$RDMA_A_IP" "$RDMA_WORK/b.yaml"
"$FABRICMON" --check-config --config "$RDMA_WORK/a.yaml" \
  || rdma_fail "fabricmon refuses the probe configuration (is the probe collector built in?)"

rdma_on_a "$FABRICMON" --config "$RDMA_WORK/a.yaml" \
  --web.listen-address "$RDMA_A_IP:19115" >"$RDMA_WORK/a.log" 2>&1 &
RDMA_PIDS+=($!)
rdma_on_b "$FABRICMON" --config "$RDMA_WORK/b.yaml" \
  --web.listen-address "$RDMA_B_IP:19115" >"$RDMA_WORK/b.log" 2>&1 &
RDMA_PIDS+=($!)
rdma_log "probing for ${DURATION}s ..."
sleep "$DURATION"

status=0
check_side() {  # name exec-fn ip
  local name=$1 on=$2 ip=$3 metrics
  if ! metrics=$($on curl -fsS "http://$ip:19115/metrics"); then
    rdma_log "$name: no /metrics; daemon log:"
    tail -20 "$RDMA_WORK/$name.log" >&2
    status=1
    return
  fi
  echo "$metrics" >"$RDMA_WORK/$name.prom"
  # Sums over every series of the peer with transport="rdma"; the median
  # comes from the RTT histogram's cumulative buckets.
  if ! echo "$metrics" | awk -v side="$name" '
    function labelval(line, key,   m) {
      if (match(line, key "=\"[^\"]*\"")) {
        m = substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 3)
        return m
      }
      return ""
    }
    /^fabric_probe_sent_total\{/ && /transport="rdma"/ { sent += $NF }
    /^fabric_probe_lost_total\{/ && /transport="rdma"/ { lost += $NF }
    /^fabric_probe_port_rtt_seconds_bucket\{/ && /transport="rdma"/ {
      le = labelval($0, "le"); cum[le] += $NF; les[le] = 1
    }
    /^fabric_probe_port_rtt_seconds_count\{/ && /transport="rdma"/ { count += $NF }
    /transport="rdma"/ && /clock="/ { clock = labelval($0, "clock") }
    END {
      if (sent < 100) { printf "%s: only %d RDMA probes sent\n", side, sent; exit 1 }
      if (count == 0) { printf "%s: no RDMA RTT observed\n", side; exit 1 }
      median = -1
      n = 0
      for (le in les) if (le != "+Inf") keys[++n] = le + 0
      # insertion sort of the bucket bounds
      for (i = 2; i <= n; i++) { v = keys[i]; j = i - 1
        while (j > 0 && keys[j] > v) { keys[j + 1] = keys[j]; j-- } keys[j + 1] = v }
      for (i = 1; i <= n; i++) {
        for (le in les) if (le + 0 == keys[i] && cum[le] >= count / 2) { median = keys[i]; break }
        if (median >= 0) break
      }
      loss = lost / sent
      printf "%s: sent %d lost %d (%.2f%%), median RTT <= %.1f us, clock %s\n",
             side, sent, lost, 100 * loss, median * 1e6, (clock == "" ? "?" : clock)
      limit = (clock == "hardware") ? 100e-6 : 5e-3
      if (loss > 0.01) { print side ": loss over 1%"; exit 1 }
      if (median < 0 || median > limit) { printf "%s: median RTT over %g s\n", side, limit; exit 1 }
    }' >&2; then
    status=1
  fi
}
check_side a rdma_on_a "$RDMA_A_IP"
check_side b rdma_on_b "$RDMA_B_IP"
if [ "$status" != 0 ]; then
  rdma_fail "see above; metrics and logs were in $RDMA_WORK"
fi
rdma_log "PASS ($RDMA_MODE)"
