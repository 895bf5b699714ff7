#include "congestion/scenario.h"

#include <infiniband/iba/ib_types.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fabric::congestion {
namespace {

constexpr double kRate = 50e9;            // 4x NDR, bytes/s
constexpr std::uint16_t kDevice = 54002;  // Quantum-2: 8 bytes per tick
constexpr double kTickBytes = 8;
// Parallel links whose mean load is below this could carry their traffic
// spread evenly (Thresholds::oversubscribed_utilization's 0.8).
constexpr double kGroupRoom = 0.8;

struct Flow {
  int src = 0, dst = 0;
  double demand = 0;
  std::vector<PortRef> path;  // switch egress ports, in order
};

}  // namespace

Lfts LftsOf(const sim::FatTree& tree) {
  Lfts lfts;
  const auto& nodes = tree.nodes();
  std::uint16_t top = 0;
  for (const auto& n : nodes) top = std::max(top, n.lid);
  for (std::size_t s = 0; s < nodes.size(); ++s) {
    if (!nodes[s].is_switch) continue;
    std::vector<std::uint8_t>& t = lfts[nodes[s].guid];
    t.assign(top + 1, 0xff);
    for (const auto& d : nodes) {
      if (d.lid == nodes[s].lid) {
        t[d.lid] = 0;
        continue;
      }
      auto hops = tree.Walk(static_cast<int>(s), d.lid);
      if (!hops.empty()) t[d.lid] = static_cast<std::uint8_t>(hops[0].second);
    }
  }
  return lfts;
}

Scenario MakeScenario(const sim::FatTree& tree, const ScenarioSpec& spec,
                      std::mt19937& rng, const std::set<PortRef>& avoid) {
  const auto& nodes = tree.nodes();
  const int hosts = tree.hosts();
  auto u = [&](double a, double b) {
    return std::uniform_real_distribution<double>(a, b)(rng);
  };
  auto pick = [&](int n) {
    return std::uniform_int_distribution<int>(0, n - 1)(rng);
  };
  auto path_of = [&](int src, int dst) {
    std::vector<PortRef> path;
    for (auto [node, port] : tree.Walk(src, nodes[dst].lid)) {
      if (nodes[node].is_switch) path.push_back({nodes[node].guid, port});
    }
    return path;
  };
  std::map<PortRef, double> load, wait;
  std::vector<Flow> flows;
  auto add_flow = [&](int src, int dst, double demand) {
    if (src == dst) return;
    Flow f{src, dst, demand, path_of(src, dst)};
    for (const PortRef& p : f.path) load[p] += demand;
    flows.push_back(std::move(f));
  };
  for (int i = 0; i < hosts / 2; ++i) {
    add_flow(pick(hosts), pick(hosts), u(0.05, 0.3));
  }
  Scenario sc;
  // Roots.
  for (int r = 0; r < spec.roots; ++r) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      int kind = pick(3);  // 0 slow receiver, 1 incast, 2 uplink
      PortRef root;
      Cause cause;
      double root_wait = u(0.2, 0.9);
      std::vector<std::size_t> through;
      if (kind < 2) {
        int dst = pick(hosts);
        int senders = kind == 0 ? 2 + pick(4) : 6 + pick(8);
        for (int i = 0; i < senders; ++i) {
          add_flow(pick(hosts), dst, kind == 0 ? u(0.1, 0.3) : u(0.2, 0.5));
        }
        auto p = path_of((dst + 1) % hosts, dst);
        if (p.empty()) continue;
        root = p.back();
        cause = kind == 0 ? Cause::kSlowReceiver : Cause::kOversubscribed;
        load[root] = kind == 0 ? u(0.1, 0.5) : u(0.9, 1.0);
      } else {
        // A switch-to-switch egress some flows cross: flood it.
        std::vector<PortRef> links;
        for (const Flow& f : flows) {
          for (std::size_t i = 0; i + 1 < f.path.size(); ++i) {
            links.push_back(f.path[i]);
          }
        }
        if (links.empty()) continue;
        root = links[pick(static_cast<int>(links.size()))];
        cause = Cause::kOversubscribed;
        load[root] = u(0.92, 1.0);
      }
      if (avoid.count(root) || sc.truth.roots.count(root) ||
          sc.truth.victims.count(root)) {
        continue;
      }
      // First-order victims: every egress before the root on a flow that
      // crosses it.
      std::set<PortRef> victims;
      for (const Flow& f : flows) {
        auto at = std::find(f.path.begin(), f.path.end(), root);
        if (at == f.path.end()) continue;
        for (auto v = f.path.begin(); v != at; ++v) victims.insert(*v);
      }
      // Two trees, one inside the other, have no single truth: pick again.
      bool nested = false;
      for (const auto& [other, c] : sc.truth.roots) {
        nested |= victims.count(other) > 0;
      }
      if (nested) continue;
      sc.truth.roots[root] = cause;
      wait[root] = std::max(wait[root], root_wait);
      for (const PortRef& v : victims) {
        wait[v] = std::max(wait[v], root_wait * u(0.4, 1.0));
      }
      // Second order: flows through a victim block the ports before it.
      std::set<PortRef> second;
      for (const Flow& f : flows) {
        for (std::size_t i = 1; i < f.path.size(); ++i) {
          if (victims.count(f.path[i]) && !victims.count(f.path[i - 1]) &&
              f.path[i - 1] != root && u(0, 1) < 0.5) {
            second.insert(f.path[i - 1]);
          }
        }
      }
      for (const PortRef& v : second) {
        wait[v] = std::max(wait[v], std::max(0.06, root_wait * u(0.1, 0.3)));
      }
      for (const PortRef& v : victims) sc.truth.victims[v].insert(root);
      for (const PortRef& v : second) sc.truth.victims[v].insert(root);
      break;
    }
  }
  // Every switch port's counters.
  sc.input.interval_seconds = spec.interval_seconds;
  for (const auto& n : nodes) {
    if (!n.is_switch) continue;
    for (std::size_t p = 1; p < n.ports.size(); ++p) {
      auto [peer, peer_port] = n.ports[p];
      if (peer < 0) continue;
      PortRef ref{n.guid, static_cast<int>(p)};
      if (sc.truth.roots.count(ref)) {
        // A root is never also a victim in the truth.
        sc.truth.victims.erase(ref);
      }
      double w = wait.count(ref) ? wait[ref] : 0;
      if (!w && u(0, 1) < spec.noise_ports) w = u(0, 0.045);
      double l = std::min(1.0, load.count(ref) ? load[ref] : u(0, 0.1));
      if (w > 0 && !sc.truth.roots.count(ref)) l *= (1 - w);
      PortSample s;
      s.ref = ref;
      s.device_id = kDevice;
      s.lanes = 4;
      s.rate_bytes_per_second = kRate;
      s.xmit_bytes = l * kRate * spec.interval_seconds;
      s.rcv_bytes = u(0, 0.5) * kRate * spec.interval_seconds;
      s.xmit_wait_ticks =
          std::floor(w * spec.interval_seconds * kRate / kTickBytes);
      s.remote = {nodes[peer].guid, peer_port};
      s.remote_is_hca = !nodes[peer].is_switch;
      sc.input.ports.push_back(s);
    }
  }
  // A flooded switch link with parallel links to the same neighbour:
  // `unbalanced` when the group could carry what it carries spread evenly
  // (its mean load below the oversubscribed threshold: adaptive routing
  // would have had room), else the group as a whole is `oversubscribed`.
  for (auto& [root, cause] : sc.truth.roots) {
    if (cause != Cause::kOversubscribed) continue;
    const PortSample* r = nullptr;
    for (const PortSample& s : sc.input.ports) {
      if (s.ref == root) r = &s;
    }
    if (!r || r->remote_is_hca) continue;
    double sum = 0;
    int links = 0;
    for (const PortSample& s : sc.input.ports) {
      if (s.ref.guid != root.guid || s.remote.guid != r->remote.guid) continue;
      sum += *s.xmit_bytes / (kRate * spec.interval_seconds);
      ++links;
    }
    if (links >= 2 && sum / links < kGroupRoom) cause = Cause::kUnbalanced;
  }
  return sc;
}

namespace {
constexpr double kFabricRate = 5e9;  // FatTree's links: 4x QDR
}  // namespace

CountingFabric::CountingFabric(std::shared_ptr<const sim::FatTree> tree)
    : tree_(std::move(tree)) {
  for (std::size_t i = 0; i < tree_->nodes().size(); ++i) {
    by_lid_[tree_->nodes()[i].lid] = static_cast<int>(i);
  }
  transport_ = sim::MakeAnsweringMadTransport(
      [this](std::uint16_t dlid, const Mad& m, std::uint32_t* node) {
        return Answer(dlid, m, node);
      },
      {});
}

MadResult CountingFabric::Answer(std::uint16_t dlid, const Mad& request,
                                 std::uint32_t* node) {
  const auto* hdr = reinterpret_cast<const ib_mad_t*>(request.data());
  if (hdr->mgmt_class != IB_MCLASS_PERF) {
    return tree_->Answer(dlid, request, node);
  }
  auto at = by_lid_.find(dlid);
  if (at == by_lid_.end()) return std::errc::host_unreachable;
  const auto& n = tree_->nodes()[at->second];
  if (silent_.count(n.guid)) return std::errc::timed_out;
  *node = static_cast<std::uint32_t>(at->second);
  Mad response = request;
  auto* pm = reinterpret_cast<ib_perfmgt_mad_t*>(response.data());
  pm->header.method = IB_MAD_METHOD_GET_RESP;
  pm->header.status = 0;
  const std::uint8_t port = pm->data[1];
  std::memset(pm->data, 0, sizeof(pm->data));
  auto it = counters_.find({n.guid, port});
  const Counters c = it == counters_.end() ? Counters{} : it->second;
  if (hdr->attr_id == IB_MAD_ATTR_PORT_CNTRS_EXT) {
    ib_port_counters_ext_t e{};
    e.port_select = port;
    e.xmit_data = cl_hton64(c.xmit / 4);
    e.rcv_data = cl_hton64(c.rcv / 4);
    std::memcpy(pm->data, &e, sizeof(e));
  } else if (hdr->attr_id == IB_MAD_ATTR_PORT_CNTRS) {
    ib_port_counters_t pc{};
    pc.port_select = port;
    pc.xmit_wait = cl_hton32(c.wait);
    std::memcpy(pm->data, &pc, sizeof(pc));
  } else {
    pm->header.status = IB_MAD_STATUS_UNSUP_METHOD_ATTR;
  }
  return response;
}

void CountingFabric::Advance(const Scenario& scenario) {
  for (const PortSample& s : scenario.input.ports) {
    if (s.rate_bytes_per_second <= 0) continue;
    const double scale = kFabricRate / s.rate_bytes_per_second;
    Counters& c = counters_[s.ref];
    c.wait += static_cast<std::uint32_t>(s.xmit_wait_ticks.value_or(0) * scale);
    c.xmit += static_cast<std::uint64_t>(s.xmit_bytes.value_or(0) * scale);
    c.rcv += static_cast<std::uint64_t>(s.rcv_bytes.value_or(0) * scale);
  }
}

}  // namespace fabric::congestion
