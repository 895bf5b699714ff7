#include "sources/mad/umad_transport.h"

#include <endian.h>
#include <infiniband/umad.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

namespace fabric::mad {
namespace {

constexpr std::uint32_t kQp1Qkey = 0x80010000;

std::uint32_t LowTid(const std::uint8_t* mad) {
  std::uint32_t tid = 0;
  for (int i = 12; i < 16; ++i) tid = (tid << 8) | mad[i];
  return tid;
}

}  // namespace

std::vector<LocalPort> LocalIbPorts(std::string* error) {
  std::vector<LocalPort> out;
  if (umad_init() < 0) {
    *error = "umad_init failed";
    return out;
  }
  char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  const int n = umad_get_cas_names(names, UMAD_MAX_DEVICES);
  if (n < 0) {
    *error = "umad_get_cas_names failed";
    return out;
  }
  for (int i = 0; i < n; ++i) {
    umad_ca_t ca{};
    if (umad_get_ca(names[i], &ca) < 0) continue;
    for (int p = 0; p < UMAD_CA_MAX_PORTS; ++p) {
      const umad_port_t* port = ca.ports[p];
      if (!port) continue;
      LocalPort lp;
      lp.ca = ca.ca_name;
      lp.port = port->portnum;
      lp.node_type = static_cast<int>(ca.node_type);
      lp.node_guid = be64toh(ca.node_guid);
      lp.port_guid = be64toh(port->port_guid);
      lp.lid = static_cast<std::uint16_t>(port->base_lid);
      lp.sm_lid = static_cast<std::uint16_t>(port->sm_lid);
      lp.state = static_cast<int>(port->state);
      lp.phys_state = static_cast<int>(port->phys_state);
      lp.link_layer = port->link_layer;
      // Older kernels leave link_layer empty for IB.
      if (lp.link_layer.empty()) lp.link_layer = "InfiniBand";
      out.push_back(lp);
    }
    umad_release_ca(&ca);
  }
  return out;
}

bool PickLocalPort(const std::vector<LocalPort>& ports, const std::string& ca,
                   int port, LocalPort* picked) {
  for (const LocalPort& p : ports) {
    if (!ca.empty() && p.ca != ca) continue;
    if (port != 0 && p.port != port) continue;
    if (port == 0 && !p.usable()) continue;
    *picked = p;
    return true;
  }
  return false;
}

std::unique_ptr<UmadTransport> UmadTransport::Open(const std::string& ca,
                                                   int port,
                                                   std::string* error) {
  std::unique_ptr<UmadTransport> t(new UmadTransport());
  umad_init();
  t->fd_ = umad_open_port(ca.empty() ? nullptr : ca.c_str(), port);
  if (t->fd_ < 0) {
    *error = "umad_open_port(" + ca + ", " + std::to_string(port) +
             ") failed: " + std::strerror(-t->fd_) +
             " (permission on /dev/infiniband/umad*?)";
    return nullptr;
  }
  t->agent_smi_ = umad_register(t->fd_, kMadClassSmiLid, 1, 0, nullptr);
  t->agent_dr_ = umad_register(t->fd_, kMadClassSmiDirected, 1, 0, nullptr);
  t->agent_perf_ = umad_register(t->fd_, kMadClassPerf, 1, 0, nullptr);
  if (t->agent_smi_ < 0 || t->agent_dr_ < 0 || t->agent_perf_ < 0) {
    *error = "umad_register failed on " + ca + " port " + std::to_string(port);
    return nullptr;
  }
  t->send_buf_.assign(umad_size() + kMadSize, 0);
  t->recv_buf_.assign(umad_size() + kMadSize, 0);
  return t;
}

UmadTransport::~UmadTransport() {
  if (fd_ < 0) return;
  for (int agent : {agent_smi_, agent_dr_, agent_perf_}) {
    if (agent >= 0) umad_unregister(fd_, agent);
  }
  umad_close_port(fd_);
}

bool UmadTransport::Post(std::uint16_t dlid, const Mad& mad,
                         std::chrono::milliseconds timeout) {
  std::fill(send_buf_.begin(), send_buf_.end(), 0);
  int agent = agent_perf_;
  if (mad[1] == kMadClassPerf) {
    umad_set_addr(send_buf_.data(), dlid, 1, 0, kQp1Qkey);
  } else {
    agent = mad[1] == kMadClassSmiDirected ? agent_dr_ : agent_smi_;
    umad_set_addr(send_buf_.data(), dlid, 0, 0, 0);
  }
  std::memcpy(umad_get_mad(send_buf_.data()), mad.data(), kMadSize);
  // The kernel times the try out too (reported back as ETIMEDOUT); retries
  // are the engine's, each with a new transaction id.
  return umad_send(fd_, agent, send_buf_.data(), kMadSize,
                   static_cast<int>(timeout.count()), 0) == 0;
}

void UmadTransport::Poll(std::chrono::microseconds wait,
                         std::vector<Answer>* answers) {
  pollfd p{umad_get_fd(fd_), POLLIN, 0};
  const int ms = static_cast<int>((wait.count() + 999) / 1000);
  if (::poll(&p, 1, ms) <= 0) return;
  while (true) {
    int len = static_cast<int>(kMadSize);
    if (umad_recv(fd_, recv_buf_.data(), &len, 0) < 0) break;
    const auto* mad =
        static_cast<const std::uint8_t*>(umad_get_mad(recv_buf_.data()));
    Answer a;
    a.tid = LowTid(mad);
    a.timed_out = umad_status(recv_buf_.data()) == ETIMEDOUT;
    if (!a.timed_out && len < static_cast<int>(kMadSize)) continue;
    std::memcpy(a.mad.data(), mad, kMadSize);
    answers->push_back(a);
  }
}

}  // namespace fabric::mad
