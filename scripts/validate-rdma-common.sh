# shellcheck shell=bash
# Sourced by validate-rdma-probes.sh and validate-rdma-bench.sh: finds or
# makes two RDMA endpoints on this host and cleans them up on exit.
#
# Two modes:
#   hardware  RDMA_A_IP and RDMA_B_IP name two local addresses on RDMA
#             netdevs (two HCA ports cabled to each other or to a switch,
#             IPoIB or RoCE). Both sides run in this network namespace.
#   soft-RoCE (default) two network namespaces joined by a veth pair, an
#             rdma_rxe link on each end (`rdma link add ... type rxe`).
#             Needs root, NETLINK_RDMA and the rdma_rxe module.
# Exit codes of the callers: 0 pass, 1 a check failed, 2 no RDMA device can
# be had here (with the reason).
set -euo pipefail

RDMA_NS_A=fmrdma-a
RDMA_NS_B=fmrdma-b
RDMA_WORK=$(mktemp -d /tmp/fabricmon-rdma.XXXXXX)
RDMA_PIDS=()
RDMA_MODE=""
RDMA_CREATED_NS=0
RDMA_KEEP=0

rdma_log() { echo "$(basename "$0"): $*" >&2; }
rdma_fail() {
  rdma_log "FAIL: $*"
  RDMA_KEEP=1  # leave logs and metrics for a look
  exit 1
}
rdma_unavailable() {
  rdma_log "NO RDMA DEVICE: $*"
  rdma_log "nothing was validated; run this on a host with an RDMA device or soft-RoCE (see docs/rdma.md)"
  exit 2
}

rdma_cleanup() {
  local pid
  for pid in "${RDMA_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${RDMA_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [ "$RDMA_CREATED_NS" = 1 ]; then
    ip netns exec "$RDMA_NS_A" rdma link delete fmrxe-a 2>/dev/null || true
    ip netns exec "$RDMA_NS_B" rdma link delete fmrxe-b 2>/dev/null || true
    ip netns delete "$RDMA_NS_A" 2>/dev/null || true
    ip netns delete "$RDMA_NS_B" 2>/dev/null || true
  fi
  if [ "$RDMA_KEEP" = 1 ]; then
    rdma_log "kept $RDMA_WORK"
  else
    rm -rf "$RDMA_WORK"
  fi
}
trap rdma_cleanup EXIT

# Runs "$@" on side a / b (inside its namespace in soft-RoCE mode).
rdma_on_a() {
  if [ "$RDMA_MODE" = soft-roce ]; then ip netns exec "$RDMA_NS_A" "$@"; else "$@"; fi
}
rdma_on_b() {
  if [ "$RDMA_MODE" = soft-roce ]; then ip netns exec "$RDMA_NS_B" "$@"; else "$@"; fi
}

# Sets RDMA_MODE, RDMA_A_IP, RDMA_B_IP; exits 2 when no RDMA can be had.
rdma_setup() {
  if [ -n "${RDMA_A_IP:-}" ] && [ -n "${RDMA_B_IP:-}" ]; then
    RDMA_MODE=hardware
    ls /sys/class/infiniband/* >/dev/null 2>&1 \
      || rdma_unavailable "RDMA_A_IP/RDMA_B_IP set but /sys/class/infiniband is empty"
    rdma_log "hardware mode: $RDMA_A_IP <-> $RDMA_B_IP ($(ls /sys/class/infiniband | tr '\n' ' '))"
    return
  fi
  RDMA_MODE=soft-roce
  [ "$(id -u)" = 0 ] || rdma_unavailable "soft-RoCE needs root (netns, rdma link add)"
  command -v rdma >/dev/null || rdma_unavailable "the iproute2 'rdma' tool is missing"
  command -v ip >/dev/null || rdma_unavailable "the iproute2 'ip' tool is missing"
  local out
  if ! out=$(rdma link show 2>&1); then
    rdma_unavailable "the kernel has no RDMA netlink ('rdma link show': $out)"
  fi
  if command -v modprobe >/dev/null; then
    modprobe rdma_rxe 2>/dev/null || true
  fi
  # Each rxe device belongs to its namespace (else both namespaces see both
  # devices). Refused while other RDMA devices exist: then shared it stays.
  rdma system set netns exclusive 2>/dev/null || true
  RDMA_CREATED_NS=1
  ip netns add "$RDMA_NS_A"
  ip netns add "$RDMA_NS_B"
  ip link add fmveth-a netns "$RDMA_NS_A" type veth peer name fmveth-b netns "$RDMA_NS_B"
  RDMA_A_IP=10.231.0.1
  RDMA_B_IP=10.231.0.2
  ip -n "$RDMA_NS_A" addr add "$RDMA_A_IP/24" dev fmveth-a
  ip -n "$RDMA_NS_B" addr add "$RDMA_B_IP/24" dev fmveth-b
  ip -n "$RDMA_NS_A" link set lo up
  ip -n "$RDMA_NS_B" link set lo up
  ip -n "$RDMA_NS_A" link set fmveth-a up
  ip -n "$RDMA_NS_B" link set fmveth-b up
  if ! out=$(ip netns exec "$RDMA_NS_A" rdma link add fmrxe-a type rxe netdev fmveth-a 2>&1) ||
     ! out=$(ip netns exec "$RDMA_NS_B" rdma link add fmrxe-b type rxe netdev fmveth-b 2>&1); then
    rdma_unavailable "cannot create a soft-RoCE link (rdma_rxe missing?): $out"
  fi
  rdma_log "soft-RoCE mode: $RDMA_NS_A/fmrxe-a $RDMA_A_IP <-> $RDMA_NS_B/fmrxe-b $RDMA_B_IP"
}

# A fresh shared key (owner-only), as the daemons and fabricmon-bench need.
rdma_keyfile() {
  local key="$RDMA_WORK/key"
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$key")
  echo "$key"
}

# Path of a built binary (BUILD_DIR, default build/), or fail.
rdma_binary() {
  local bin="${BUILD_DIR:-$(dirname "$0")/../build}/$1"
  [ -x "$bin" ] || rdma_fail "$bin not built (cmake --build build --target $1)"
  readlink -f "$bin"
}
