#include "tests/support/fake_mad_transport.h"

#include <infiniband/mad.h>

#include <algorithm>

namespace fabric::testing {

bool FakeMadTransport::Post(std::uint16_t dlid, const Mad& mad,
                            std::chrono::milliseconds) {
  if (mad[1] != kMadClassSmiDirected) {
    if (!fabric_) return true;  // sent; nobody answers
    if (auto r = fabric_(dlid, mad); r.ok()) answers_.push_back(*r);
    return true;
  }
  ++port_->portinfo_asks;
  if (!port_->answers) return true;
  Mad r = mad;
  std::uint8_t* b = r.data();
  mad_set_field(b, 0, IB_MAD_RESPONSE_F, 1);
  mad_set_field(b, 0, IB_DRSMP_DIRECTION_F, 1);  // returning
  std::uint8_t* d = b + IB_SMP_DATA_OFFS;
  std::fill(d, d + IB_SMP_DATA_SIZE, 0);
  mad_set_field(d, 0, IB_PORT_STATE_F, port_->state);
  mad_set_field(d, 0, IB_PORT_PHYS_STATE_F, port_->phys_state);
  mad_set_field(d, 0, IB_PORT_LID_F, port_->lid);
  mad_set_field(d, 0, IB_PORT_SMLID_F, port_->sm_lid);
  answers_.push_back(r);
  return true;
}

void FakeMadTransport::Poll(std::chrono::microseconds,
                            std::vector<Answer>* out) {
  for (const Mad& m : answers_) out->push_back(Answer::Of(m));
  answers_.clear();
}

mad::Topology LocalCaAndOneSwitch(std::uint16_t lid, int ports) {
  mad::Topology topology;
  mad::FabricNode local;
  local.guid = 1;
  local.type = 1;
  local.num_ports = 1;
  topology.nodes.push_back(local);
  mad::FabricNode sw;
  sw.guid = 0x20;
  sw.type = 2;
  sw.num_ports = ports;
  sw.lid = lid;
  sw.path = {0, 1};
  topology.nodes.push_back(sw);
  topology.by_guid = {{1, 0}, {0x20, 1}};
  return topology;
}

}  // namespace fabric::testing
