#!/usr/bin/env bash
# Installs everything fabricmon needs to build, run and test on Debian 12.
# Idempotent; run as root (or with sudo available).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  build-essential cmake pkg-config git
  prometheus-cpp-dev libboost-dev libspdlog-dev libyaml-cpp-dev libcli11-dev
  libsystemd-dev libssl-dev
  # /metrics server: gzip, bcrypt (crypt_r) for basic auth.
  zlib1g-dev libcrypt-dev
  libibverbs-dev librdmacm-dev libibumad-dev libibmad-dev libibnetdisc-dev
  libopensm-dev
  # The gnmi collector (Ethernet switches over gNMI): gRPC C++ and protobuf,
  # protoc and grpc_cpp_plugin generate proto/gnmi/ and proto/podresources/
  # (proto/CMakeLists.txt).
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  prometheus prometheus-node-exporter iproute2 ethtool procps curl
  python3 hyperfine time valgrind
  # amtool checks dashboards/alertmanager/ (rules_promtool_test).
  prometheus-alertmanager
  # victoria-metrics, vmagent, vmalert: the deploy/victoriametrics stack
  # (vm_deploy_test, bench/vm_sizing.py).
  victoria-metrics
  ibsim-utils opensm infiniband-diags
  # nft: probe_ecmp_netns_test's lossy router link (no tc actions, no netem).
  nftables
  # The openssl CLI makes the tests' certificates (MakeTestCa); fabricmon-
  # locate verifies https against ca-certificates' bundle by default.
  openssl ca-certificates
  # fabricmon-bench: results.json (nlohmann), its report checked in headless
  # Chromium, its push checked against a real Pushgateway.
  nlohmann-json3-dev chromium prometheus-pushgateway
  # The .deb (cpack, dpkg-shlibdeps, deb-systemd-helper, systemd-sysusers,
  # unshare for deb_package_test) and libFuzzer (scripts/fuzz.sh); systemd
  # also has the kubelet relay's systemd-socket-proxyd and the
  # systemd-socket-activate kubelet_pods_test runs it under.
  dpkg-dev init-system-helpers systemd util-linux clang libclang-rt-14-dev
  # systemd_nspawn_test boots a debootstrapped Debian under systemd-nspawn.
  debootstrap systemd-container
  # slurm_real_test: a real Slurm (munged, slurmctld, slurmd, sbatch) whose
  # jobs the jobs collector exports.
  slurmctld slurmd slurm-client munge
  # Rebuilds (and CI's second build directory) reuse compiled objects;
  # mold links the test binaries (CMakeLists.txt).
  ccache mold
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# dashboards_schema_test checks the Grafana dashboards with @grafana/schema
# (and gnmi_switch_test runs a gNMI target on @grpc/grpc-js, tests/gnmi/)
# from npm (tests/grafana-schema/check.sh installs the pinned packages into
# the build directory): node and npm from Debian, unless a node is already
# there (NodeSource's nodejs bundles npm and conflicts with Debian's npm).
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs npm" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
# The Debian prometheus/node_exporter packages start system services; tests
# start their own instances on loopback, so the packaged ones are not needed.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now prometheus prometheus-node-exporter \
    prometheus-alertmanager prometheus-pushgateway victoria-metrics \
    >/dev/null 2>&1 || true
fi
