// The real MadTransport: libibumad on one local HCA port (umad_open_port,
// umad_register for the SMI LID-routed, SMI directed-route and PerfMgt
// classes, umad_send, umad_recv driven by poll()), and the local CA/port
// list from libibumad (umad_get_cas_names, umad_get_ca) rather than sysfs,
// so it works the same under ibsim's umad2sim (which does not intercept
// directory reads of /sys) and on real hosts.
//
// Thread-safety: LocalIbPorts() is safe anywhere; one Run() at a time per
// UmadTransport (see sources/mad/mad_transport.h); outside Run(), one
// thread may Post while another Polls (the MAD broker does: umad2sim's
// poll() cannot wait on a umad fd and a socket at once).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sources/mad/mad_transport.h"

namespace fabric::mad {

struct LocalPort {
  std::string ca;
  int port = 0;
  int node_type = 0;  // 1 CA, 2 switch
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint16_t lid = 0;
  std::uint16_t sm_lid = 0;
  int state = 0;           // 4 active
  int phys_state = 0;      // 5 LinkUp
  std::string link_layer;  // "InfiniBand" / "Ethernet"
  // umad2sim reports the IB link layer as "IB".
  bool usable() const {
    return state == 4 && (link_layer == "InfiniBand" || link_layer == "IB");
  }
};

// Every port of every local CA libibumad knows (empty when there is none;
// *error set only when libibumad itself fails).
std::vector<LocalPort> LocalIbPorts(std::string* error);

// The port to use: `ca`/`port` when given (port 0: the CA's first usable
// one), else the first usable IB port. nullopt-like: returns false.
bool PickLocalPort(const std::vector<LocalPort>& ports, const std::string& ca,
                   int port, LocalPort* picked);

class UmadTransport : public MadTransport {
 public:
  // Opens `ca` port `port` and registers the three classes; nullptr and
  // *error (naming the device and errno) when that fails, e.g. no
  // permission on /dev/infiniband/umad*.
  static std::unique_ptr<UmadTransport> Open(const std::string& ca, int port,
                                             std::string* error);
  ~UmadTransport() override;
  UmadTransport(const UmadTransport&) = delete;
  UmadTransport& operator=(const UmadTransport&) = delete;

  // Public: the MAD broker forwards single MADs on this wire.
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds timeout) override;
  void Poll(std::chrono::microseconds wait,
            std::vector<Answer>* answers) override;

 private:
  UmadTransport() = default;
  int fd_ = -1;
  int agent_smi_ = -1;
  int agent_dr_ = -1;
  int agent_perf_ = -1;
  // One umad + MAD each: Post and Poll may run on two threads at once.
  std::vector<std::uint8_t> send_buf_;
  std::vector<std::uint8_t> recv_buf_;
};

}  // namespace fabric::mad
