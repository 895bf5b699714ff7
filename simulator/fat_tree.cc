#include "simulator/fat_tree.h"

#include <iba/ib_types.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

namespace fabric::sim {

void FatTree::MakeNodes(
    const std::vector<std::pair<std::string, int>>& switches) {
  switches_ = static_cast<int>(switches.size());
  nodes_.resize(hosts_ + switches_);
  auto make = [&](int n, bool sw, std::string name, int ports) {
    Node& node = nodes_[n];
    node.is_switch = sw;
    node.name = std::move(name);
    node.lid = static_cast<std::uint16_t>(n + 1);
    node.guid = (sw ? 0x0002c90300b00000ULL : 0x0002c90300a00000ULL) + n;
    node.ports.assign(ports + 1, {-1, 0});
  };
  for (int h = 0; h < hosts_; ++h)
    make(h, false, "host" + std::to_string(h), 1);
  for (int s = 0; s < switches_; ++s) {
    make(hosts_ + s, true, switches[s].first, switches[s].second);
  }
}

void FatTree::Finish() {
  lid_node_.assign(nodes_.size() + 1, -1);
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    lid_node_[nodes_[n].lid] = static_cast<int>(n);
  }
  Route();
}

FatTree::FatTree(int k, int hosts_per_leaf, int parallel) {
  const int half = k / 2;
  const int leaves = k * half, aggs = k * half, cores = half * half;
  parallel = std::max(1, parallel);
  hosts_ = leaves * hosts_per_leaf;
  // Switch order: leaves, aggs (pod by pod), cores.
  std::vector<std::pair<std::string, int>> switches;
  for (const char* kind : {"leaf", "agg"}) {
    for (int pod = 0; pod < k; ++pod) {
      for (int i = 0; i < half; ++i) {
        switches.emplace_back(
            kind + std::to_string(pod) + "-" + std::to_string(i),
            kind[0] == 'l' ? hosts_per_leaf + half * parallel
                           : half * parallel + half);
      }
    }
  }
  for (int c = 0; c < cores; ++c) {
    switches.emplace_back("core" + std::to_string(c), k);
  }
  MakeNodes(switches);
  const int leaf0 = hosts_, agg0 = hosts_ + leaves, core0 = agg0 + aggs;
  for (int h = 0; h < hosts_; ++h) {
    Connect(h, 1, leaf0 + h / hosts_per_leaf, h % hosts_per_leaf + 1);
  }
  for (int pod = 0; pod < k; ++pod) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < half; ++j) {
        for (int c = 0; c < parallel; ++c) {
          Connect(leaf0 + pod * half + i, hosts_per_leaf + 1 + j * parallel + c,
                  agg0 + pod * half + j, i * parallel + c + 1);
        }
        Connect(agg0 + pod * half + i, half * parallel + 1 + j,
                core0 + i * half + j, pod + 1);
      }
    }
  }
  Finish();
}

FatTree FatTree::Random(int switches, int ports, int hosts,
                        std::uint32_t seed) {
  FatTree t;
  t.hosts_ = hosts;
  std::vector<std::pair<std::string, int>> names;
  for (int s = 0; s < switches; ++s) {
    names.emplace_back("sw" + std::to_string(s), ports);
  }
  t.MakeNodes(names);
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  auto free_port = [&](int node) {
    const auto& p = t.nodes_[node].ports;
    for (std::size_t i = 1; i < p.size(); ++i) {
      if (p[i].first < 0) return static_cast<int>(i);
    }
    return 0;
  };
  auto linked = [&](int a, int b) {
    for (const auto& [peer, port] : t.nodes_[a].ports) {
      if (peer == b) return true;
    }
    return false;
  };
  auto link = [&](int a, int b) {
    const int pa = free_port(a), pb = free_port(b);
    if (a == b || pa == 0 || pb == 0 || linked(a, b)) return false;
    t.Connect(a, pa, b, pb);
    return true;
  };
  // Connected first (each switch to an earlier one with a free port), then
  // as many extra links again, then the hosts.
  for (int s = 1; s < switches; ++s) {
    for (int tries = 0; tries < 100 && !link(hosts + s, hosts + pick(s));) {
      ++tries;
    }
  }
  for (int i = 0; i < switches; ++i) {
    link(hosts + pick(switches), hosts + pick(switches));
  }
  for (int h = 0; h < hosts; ++h) {
    for (int tries = 0; tries < 100; ++tries) {
      const int s = hosts + pick(switches);
      if (const int p = free_port(s)) {
        t.Connect(h, 1, s, p);
        break;
      }
    }
  }
  t.Finish();
  return t;
}

void FatTree::Connect(int a, int pa, int b, int pb) {
  nodes_[a].ports[pa] = {b, pb};
  nodes_[b].ports[pb] = {a, pa};
}

int FatTree::NodeOfName(const std::string& name) const {
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].name == name) return static_cast<int>(n);
  }
  return -1;
}

void FatTree::Cut(int node, int port) {
  const auto [b, pb] = nodes_[node].ports[port];
  if (b < 0) return;
  nodes_[node].ports[port] = {-1, 0};
  nodes_[b].ports[pb] = {-1, 0};
  Route();
}

std::vector<std::pair<int, int>> FatTree::Walk(int from,
                                               std::uint16_t lid) const {
  std::vector<std::pair<int, int>> hops;
  int at = from;
  while (nodes_[at].lid != lid) {
    const int out = nodes_[at].is_switch ? routing_->OutPort(at - hosts_, lid)
                                         : (hops.empty() ? 1 : 255);
    if (out == 0 || out >= static_cast<int>(nodes_[at].ports.size()) ||
        nodes_[at].ports[out].first < 0 || hops.size() > 64) {
      return {};
    }
    hops.emplace_back(at, out);
    at = nodes_[at].ports[out].first;
  }
  return hops;
}

void FatTree::Route() {
  // Switch indices in the routing graph: node - hosts_.
  std::vector<std::vector<int>> peers(switches_);
  std::map<std::uint16_t, std::pair<int, int>> owners;
  for (int s = 0; s < switches_; ++s) {
    const Node& n = nodes_[hosts_ + s];
    owners[n.lid] = {s, 0};
    peers[s].assign(n.ports.size(), -1);
    for (std::size_t p = 1; p < n.ports.size(); ++p) {
      const int peer = n.ports[p].first;
      if (peer >= hosts_) {
        peers[s][p] = peer - hosts_;
      } else if (peer >= 0) {
        owners[nodes_[peer].lid] = {s, static_cast<int>(p)};
      }
    }
  }
  routing_ =
      std::make_unique<MinHopRouting>(std::move(peers), std::move(owners));
}

MadResult FatTree::Answer(std::uint16_t dlid, const Mad& request,
                          std::uint32_t* node_out) const {
  const auto* hdr = reinterpret_cast<const ib_mad_t*>(request.data());
  const bool dr = hdr->mgmt_class == IB_MCLASS_SUBN_DIR;
  if (hdr->base_ver != 1 || (!dr && hdr->mgmt_class != IB_MCLASS_SUBN_LID)) {
    return std::errc::invalid_argument;
  }
  int at = 0, in_port = 1;  // host 0's port 1: where MADs leave
  if (dr) {
    const auto* smp = reinterpret_cast<const ib_smp_t*>(request.data());
    if (smp->hop_count >= IB_SUBNET_PATH_HOPS_MAX) {
      return std::errc::invalid_argument;
    }
    for (int hop = 1; hop <= smp->hop_count; ++hop) {
      const int out = smp->initial_path[hop];
      const auto& ports = nodes_[at].ports;
      if (out < 1 || out >= static_cast<int>(ports.size()) ||
          ports[out].first < 0) {
        return std::errc::timed_out;  // dropped: no link there
      }
      std::tie(at, in_port) = ports[out];
    }
  } else {
    if (dlid == 0 || dlid >= lid_node_.size() || lid_node_[dlid] < 0) {
      return std::errc::host_unreachable;
    }
    at = lid_node_[dlid];
    in_port = 0;
  }
  if (silent_.count(at) && (hdr->attr_id == IB_MAD_ATTR_SWITCH_INFO ||
                            hdr->attr_id == IB_MAD_ATTR_LIN_FWD_TBL)) {
    return std::errc::timed_out;
  }
  *node_out = static_cast<std::uint32_t>(at);
  const Node& n = nodes_[at];
  Mad response = request;
  auto* r = reinterpret_cast<ib_smp_t*>(response.data());
  r->method = IB_MAD_METHOD_GET_RESP;
  const ib_net16_t d_bit = dr ? CL_HTON16(0x8000) : 0;
  r->status = d_bit;
  std::memset(r->data, 0, sizeof(r->data));
  if (hdr->method != IB_MAD_METHOD_GET) {  // never a Set
    r->status = static_cast<ib_net16_t>(d_bit | IB_MAD_STATUS_UNSUP_METHOD);
    return response;
  }
  const std::uint32_t mod = cl_ntoh32(hdr->attr_mod);
  const int num_ports = static_cast<int>(n.ports.size()) - 1;
  if (hdr->attr_id == IB_MAD_ATTR_NODE_INFO) {
    ib_node_info_t ni{};
    ni.base_version = 1;
    ni.class_version = 1;
    ni.node_type = n.is_switch ? IB_NODE_TYPE_SWITCH : IB_NODE_TYPE_CA;
    ni.num_ports = static_cast<std::uint8_t>(num_ports);
    ni.sys_guid = ni.node_guid = ni.port_guid = cl_hton64(n.guid);
    ni.partition_cap = cl_hton16(128);
    ni.device_id = cl_hton16(n.is_switch ? 0xd2f2 : 0x1021);
    ni.port_num_vendor_id = cl_hton32(
        (static_cast<std::uint32_t>(n.is_switch ? in_port : 1) << 24) |
        0x02c9u);
    std::memcpy(r->data, &ni, sizeof(ni));
  } else if (hdr->attr_id == IB_MAD_ATTR_NODE_DESC) {
    std::memcpy(r->data, n.name.data(),
                std::min(n.name.size(), sizeof(ib_node_desc_t)));
  } else if (hdr->attr_id == IB_MAD_ATTR_PORT_INFO) {
    const int p = n.is_switch ? static_cast<int>(mod & 0xff) : 1;
    if (p > num_ports) {
      r->status = static_cast<ib_net16_t>(d_bit | IB_MAD_STATUS_INVALID_FIELD);
      return response;
    }
    const bool up = p == 0 || n.ports[p].first >= 0;
    ib_port_info_t pi{};
    pi.base_lid = cl_hton16(n.is_switch && p != 0 ? 0 : n.lid);
    pi.local_port_num = static_cast<std::uint8_t>(p);
    pi.link_width_enabled = pi.link_width_supported = 3;
    pi.link_width_active = 2;  // 4x
    pi.state_info1 = static_cast<std::uint8_t>(
        (7u << 4) | (up ? IB_LINK_ACTIVE : IB_LINK_DOWN));
    pi.state_info2 = static_cast<std::uint8_t>(((up ? 5u : 2u) << 4) | 2u);
    pi.link_speed = static_cast<std::uint8_t>((4u << 4) | 7u);
    pi.mtu_cap = IB_MTU_LEN_4096;
    std::memcpy(r->data, &pi, sizeof(pi));
  } else if (n.is_switch && hdr->attr_id == IB_MAD_ATTR_SWITCH_INFO) {
    FillSwitchInfo(*routing_, r->data);
  } else if (n.is_switch && hdr->attr_id == IB_MAD_ATTR_LIN_FWD_TBL) {
    FillLftBlock(*routing_, at - hosts_, mod, r->data);
  } else {
    r->status =
        static_cast<ib_net16_t>(d_bit | IB_MAD_STATUS_UNSUP_METHOD_ATTR);
  }
  return response;
}

std::unique_ptr<MadTransport> MakeFatTreeMadTransport(
    std::shared_ptr<const FatTree> tree, SimMadOptions options) {
  return MakeAnsweringMadTransport(
      [tree](std::uint16_t dlid, const Mad& mad, std::uint32_t* node) {
        return tree->Answer(dlid, mad, node);
      },
      options);
}

}  // namespace fabric::sim
