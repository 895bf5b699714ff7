// FakeMadTransport: the one fake MadTransport (sources/mad/mad_transport.h)
// of the unit tests. It plays the local port's SMA: a directed-route Get
// (the port's own PortInfo, zero hops, as sources/mad/live_ports.h asks)
// is answered from a FakePortState the test changes between calls; every
// LID-routed MAD goes to `fabric` (e.g. the simulator's sim::AnswerMad),
// and is left unanswered when there is none or it fails.
//
// Built only with rdma-core (it encodes with libibmad, as the codec does).
//
// Thread-safety: none; the caller's thread runs Post/Poll inside Run().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sources/mad/discovery.h"
#include "sources/mad/mad_transport.h"

namespace fabric::testing {

// What the local port says now.
struct FakePortState {
  int state = 2;       // INIT: link up, no SM yet
  int phys_state = 5;  // LinkUp
  std::uint16_t lid = 0;
  std::uint16_t sm_lid = 0;
  bool answers = true;    // false: the SMA stays silent
  int portinfo_asks = 0;  // directed-route Gets seen
};

class FakeMadTransport final : public MadTransport {
 public:
  using Fabric = std::function<MadResult(std::uint16_t dlid, const Mad& mad)>;

  explicit FakeMadTransport(std::shared_ptr<FakePortState> port,
                            Fabric fabric = nullptr)
      : port_(std::move(port)), fabric_(std::move(fabric)) {}

 protected:
  bool Post(std::uint16_t dlid, const Mad& mad,
            std::chrono::milliseconds timeout) override;
  void Poll(std::chrono::microseconds wait, std::vector<Answer>* out) override;

 private:
  std::shared_ptr<FakePortState> port_;
  Fabric fabric_;
  std::vector<Mad> answers_;
};

// The sweep tests' fabric: the local CA (nodes[0], GUID 1) and one switch
// (nodes[1], GUID 0x20, LID `lid`, `ports` ports, directed route {0, 1})
// with no port entries yet: the test fills nodes[1].ports.
mad::Topology LocalCaAndOneSwitch(std::uint16_t lid, int ports);

}  // namespace fabric::testing
