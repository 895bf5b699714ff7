#include "sources/mad/discovery.h"

#include <deque>

#include "sources/mad/routes.h"

namespace fabric::mad {
namespace {

DrPath Extend(const DrPath& path, int port) {
  DrPath out = path;
  out.push_back(static_cast<std::uint8_t>(port));
  return out;
}

enum class Ask : std::uint8_t { kNodeInfo, kNodeDescription, kPortInfo };

// What a request was for: the node it went to (or, for a NodeInfo through
// a port, the node and port it left by).
struct Context {
  Ask ask;
  std::size_t node;  // index into Topology::nodes (the sender for a probe)
  int port;          // PortInfo: port; NodeInfo probe: exit port; -1 root
};

class Walk {
 public:
  Walk(Topology& topo, std::deque<MadRequest>& pending)
      : topo_(topo), pending_(pending) {}

  void Start() { Queue({Ask::kNodeInfo, 0, -1}, DrPath{}, kAttrNodeInfo, 0); }

  void Done(const MadRequest& request, const MadResult& result) {
    const Context ctx = contexts_[request.cookie];
    if (!result.ok()) {
      if (ctx.ask == Ask::kNodeInfo) ++topo_.unreachable;
      return;
    }
    std::string error;
    switch (ctx.ask) {
      case Ask::kNodeInfo: {
        auto ni = DecodeNodeInfo(*result, &error);
        if (!ni) return Error(error);
        OnNodeInfo(ctx, *ni);
        break;
      }
      case Ask::kNodeDescription: {
        auto d = DecodeNodeDescription(*result, &error);
        if (!d) return Error(error);
        topo_.nodes[ctx.node].description = *d;
        break;
      }
      case Ask::kPortInfo: {
        auto pi = DecodePortInfo(*result, &error);
        if (!pi) return Error(error);
        OnPortInfo(ctx, *pi);
        break;
      }
    }
  }

 private:
  void Queue(Context ctx, const DrPath& path, std::uint16_t attr,
             std::uint32_t mod) {
    contexts_.push_back(ctx);
    pending_.push_back({.dlid = 0,
                        .mad = DrSmpGet(attr, mod, path),
                        .cookie = contexts_.size() - 1});
  }

  void Error(const std::string& e) {
    if (topo_.errors.size() < 8) topo_.errors.push_back(e);
  }

  void OnNodeInfo(const Context& ctx, const NodeInfo& ni) {
    DrPath path;
    if (ctx.port >= 0) {
      path = topo_.nodes[ctx.node].path;
      path.push_back(static_cast<std::uint8_t>(ctx.port));
    }
    auto known = topo_.by_guid.find(ni.node_guid);
    if (ctx.port >= 0) {
      FabricPort& here = topo_.nodes[ctx.node].ports[ctx.port];
      here.remote_guid = ni.node_guid;
      here.remote_port = ni.local_port;
    }
    if (known != topo_.by_guid.end()) {
      // Already walked: record the link from its side too.
      FabricNode& n = topo_.nodes[known->second];
      if (ctx.port >= 0) {
        FabricPort& there = n.ports[ni.local_port];
        there.num = ni.local_port;
        there.remote_guid = topo_.nodes[ctx.node].guid;
        there.remote_port = ctx.port;
      }
      return;
    }
    const std::size_t index = topo_.nodes.size();
    FabricNode node;
    node.guid = ni.node_guid;
    node.port_guid = ni.port_guid;
    node.type = ni.node_type;
    node.num_ports = ni.num_ports;
    node.device_id = ni.device_id;
    node.path = path;
    node.reached_port = ni.local_port;
    if (ctx.port >= 0) {
      FabricPort& back = node.ports[ni.local_port];
      back.num = ni.local_port;
      back.remote_guid = topo_.nodes[ctx.node].guid;
      back.remote_port = ctx.port;
    }
    topo_.nodes.push_back(node);
    topo_.by_guid[ni.node_guid] = index;
    Queue({Ask::kNodeDescription, index, 0}, path, kAttrNodeDescription, 0);
    if (ni.node_type == 2) {
      for (int p = 0; p <= ni.num_ports; ++p) {
        Queue({Ask::kPortInfo, index, p}, path, kAttrPortInfo,
              static_cast<std::uint32_t>(p));
      }
    } else {
      Queue({Ask::kPortInfo, index, ni.local_port}, path, kAttrPortInfo,
            static_cast<std::uint32_t>(ni.local_port));
    }
  }

  void OnPortInfo(const Context& ctx, const PortInfo& pi) {
    FabricNode& node = topo_.nodes[ctx.node];
    FabricPort& port = node.ports[ctx.port];
    port.num = ctx.port;
    port.state = pi.state;
    port.phys_state = pi.phys_state;
    port.lid = pi.lid;
    port.lmc = pi.lmc;
    port.capability_mask = pi.capability_mask;
    port.info = pi;
    if (node.type == 2 ? ctx.port == 0 : ctx.port == node.reached_port) {
      node.lid = pi.lid;
    }
    // The local CA: the walk leaves by the port it is on. A switch: every
    // linked port except the one the walk came in by (already known).
    const bool linked = pi.state >= 2;  // Init, Armed or Active
    const bool local_ca = ctx.node == 0 && node.type != 2;
    const bool switch_port = node.type == 2 && ctx.port != 0 &&
                             !(ctx.node != 0 && ctx.port == node.reached_port);
    if (linked && (local_ca || switch_port) && node.path.size() + 1 < 64) {
      Queue({Ask::kNodeInfo, ctx.node, ctx.port}, Extend(node.path, ctx.port),
            kAttrNodeInfo, 0);
    }
  }

  Topology& topo_;
  std::deque<MadRequest>& pending_;
  std::vector<Context> contexts_;
};

}  // namespace

std::vector<std::uint16_t> Topology::SmLids() const {
  std::vector<std::uint16_t> lids;
  for (const FabricNode& n : nodes) {
    for (const auto& [num, p] : n.ports) {
      if ((p.capability_mask & kCapabilityIsSm) && p.lid != 0) {
        lids.push_back(p.lid);
      }
    }
  }
  return lids;
}

Topology Discover(MadTransport& transport, const MadOptions& options) {
  Topology topo;
  std::deque<MadRequest> pending;
  Walk walk(topo, pending);
  walk.Start();
  topo.stats = transport.Run(
      pending, options,
      [&](const MadRequest& q, const MadResult& r) { walk.Done(q, r); });
  topo.generation = TopologyGeneration(topo);
  return topo;
}

}  // namespace fabric::mad
