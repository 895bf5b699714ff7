#include "sources/mad/routes.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <set>

namespace fabric::mad {
namespace {

// ibtracert's MAXHOPS: a longer walk is a forwarding loop.
constexpr std::size_t kMaxHops = 63;
// The FailedReads key of a switch's SwitchInfo (blocks are 0..767).
constexpr std::uint32_t kInfoKey = 0xffffffffu;

const char* TypeName(int type) {
  static const char* const kNames[] = {"???", "ca", "switch", "router",
                                       "iwarp rnic"};
  return type >= 0 && type <= 4 ? kNames[type] : "???";
}

std::string Printf(const char* format, auto... args) {
  char text[512];
  std::snprintf(text, sizeof(text), format, args...);
  return text;
}

// FNV-1a, fed field by field.
struct Fingerprint {
  std::uint64_t h = 14695981039346656037ull;
  void Add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
};

}  // namespace

std::uint64_t TopologyGeneration(const Topology& topology) {
  Fingerprint f;
  // by_guid, not nodes: discovery's node order follows answer order.
  for (const auto& [guid, index] : topology.by_guid) {
    if (index >= topology.nodes.size()) continue;
    const FabricNode& n = topology.nodes[index];
    f.Add(n.guid);
    f.Add(n.port_guid);
    f.Add(static_cast<std::uint64_t>(n.type));
    f.Add(n.lid);
    for (const auto& [num, p] : n.ports) {
      f.Add(static_cast<std::uint64_t>(num));
      f.Add(static_cast<std::uint64_t>(p.state));
      f.Add(p.lid);
      f.Add(static_cast<std::uint64_t>(p.lmc));
      f.Add(p.remote_guid);
      f.Add(static_cast<std::uint64_t>(p.remote_port));
    }
  }
  return f.h;
}

std::uint64_t StampedGeneration(const Topology& topology) {
  return topology.generation ? topology.generation
                             : TopologyGeneration(topology);
}

struct RouteTracer::Walk {
  std::uint16_t dst = 0;
  std::size_t node = 0;
  int port = 0;
  bool done = false;
  TraceResult result;
};

RouteTracer::RouteTracer(MadTransport& transport, MadOptions options,
                         LftAccess access)
    : transport_(transport), options_(options), access_(access) {}

void RouteTracer::SetTopology(const Topology* topology) {
  topology_ = topology;
  lids_.clear();
  const std::uint64_t generation = topology ? TopologyGeneration(*topology) : 0;
  if (generation != generation_) tables_.clear();
  generation_ = generation;
  if (!topology) return;
  auto add = [&](std::uint16_t lid, int lmc, std::size_t node, int port) {
    if (lid == 0) return;
    const int count = 1 << std::clamp(lmc, 0, 7);
    for (int i = 0; i < count && lid + i < 0xc000; ++i) {
      lids_.emplace(static_cast<std::uint16_t>(lid + i),
                    std::make_pair(node, port));
    }
  };
  for (std::size_t i = 0; i < topology->nodes.size(); ++i) {
    const FabricNode& n = topology->nodes[i];
    if (n.type == 2) {
      auto p0 = n.ports.find(0);
      add(n.lid, p0 == n.ports.end() ? 0 : p0->second.lmc, i, 0);
    } else {
      for (const auto& [num, p] : n.ports) add(p.lid, p.lmc, i, num);
    }
  }
}

void RouteTracer::Invalidate() { tables_.clear(); }

std::size_t RouteTracer::cached_blocks() const {
  std::size_t n = 0;
  for (const auto& [guid, t] : tables_) n += t.blocks.size();
  return n;
}

bool RouteTracer::FindLid(std::uint16_t lid, std::size_t* node,
                          int* port) const {
  auto it = lids_.find(lid);
  if (it == lids_.end()) return false;
  *node = it->second.first;
  *port = it->second.second;
  return true;
}

RouteHop RouteTracer::HopAt(std::size_t index, int port, int out_port) const {
  const FabricNode& n = topology_->nodes[index];
  RouteHop hop;
  hop.node_guid = n.guid;
  hop.port_guid = n.port_guid;
  hop.type = n.type;
  hop.description = n.description;
  hop.port = port;
  hop.out_port = out_port;
  // A switch answers at port 0's LID whichever port a packet came in by.
  auto p = n.ports.find(n.type == 2 ? 0 : port);
  if (p != n.ports.end()) {
    hop.lid = p->second.lid;
    hop.lmc = p->second.lmc;
  }
  if (n.type == 2 && hop.lid == 0) hop.lid = n.lid;
  return hop;
}

RouteTracer::Need RouteTracer::Advance(Walk& walk, std::uint64_t* switch_guid,
                                       std::uint32_t* block) {
  auto fail = [&](std::string error) {
    walk.result.error = std::move(error);
    walk.done = true;
    return Need::kNothing;
  };
  while (!walk.done) {
    const FabricNode& n = topology_->nodes[walk.node];
    std::size_t dst_node = 0;
    int dst_port = 0;
    if (FindLid(walk.dst, &dst_node, &dst_port) && dst_node == walk.node &&
        (n.type == 2 || dst_port == walk.port)) {
      walk.done = true;
      return Need::kNothing;
    }
    if (walk.result.route.hops.size() > kMaxHops) {
      return fail(Printf("no route found after %zu hops", kMaxHops));
    }
    int out = 0;
    if (n.type != 2) {
      // A CA or router forwards nothing: only the source leaves by its port.
      if (walk.result.route.hops.size() != 1) {
        return fail(Printf(
            "can't continue: reached CA or router port 0x%016llx, lid %u "
            "\"%s\"",
            static_cast<unsigned long long>(n.port_guid),
            static_cast<unsigned>(walk.result.route.hops.back().lid),
            n.description.c_str()));
      }
      out = walk.port;
    } else {
      const std::uint32_t want = walk.dst / kLftBlockLids;
      auto t = tables_.find(n.guid);
      if (t == tables_.end() || !t->second.has_info ||
          !t->second.blocks.count(want)) {
        *switch_guid = n.guid;
        *block = want;
        return Need::kTables;
      }
      const SwitchInfo& si = t->second.info;
      // ibtracert's test: an entry beyond both the table's size and the
      // part the SM filled in is not read.
      if (walk.dst >= si.linear_fdb_cap && walk.dst > si.linear_fdb_top) {
        return fail(Printf(
            "LID %u beyond the forwarding table of \"%s\" (cap %u, top %u)",
            static_cast<unsigned>(walk.dst), n.description.c_str(),
            si.linear_fdb_cap, si.linear_fdb_top));
      }
      out = t->second.blocks.at(want).ports[walk.dst % kLftBlockLids];
      if (out == 0 || out > n.num_ports) {
        return fail(Printf(
            "Bad forwarding table entry found at: node \"%s\" lid entry %u "
            "is %d (top %u)",
            n.description.c_str(), static_cast<unsigned>(walk.dst), out,
            si.linear_fdb_top));
      }
    }
    auto p = n.ports.find(out);
    if (p == n.ports.end() || p->second.remote_guid == 0) {
      return fail(Printf("no link found on node \"%s\" port %d",
                         n.description.c_str(), out));
    }
    if (p->second.state != 0 && p->second.state != 4) {
      return fail(
          Printf("Bad out port state found: node \"%s\" outport %d "
                 "state %d",
                 n.description.c_str(), out, p->second.state));
    }
    auto next = topology_->by_guid.find(p->second.remote_guid);
    if (next == topology_->by_guid.end() ||
        next->second >= topology_->nodes.size()) {
      return fail(
          Printf("node \"%s\" port %d leads to unknown node 0x%016llx",
                 n.description.c_str(), out,
                 static_cast<unsigned long long>(p->second.remote_guid)));
    }
    walk.node = next->second;
    walk.port = p->second.remote_port;
    walk.result.route.hops.push_back(HopAt(walk.node, walk.port, out));
  }
  return Need::kNothing;
}

void RouteTracer::Fetch(
    const std::map<std::uint64_t, std::vector<std::uint32_t>>& want,
    FailedReads* failed) {
  struct Asked {
    std::uint64_t guid;
    std::uint32_t block;  // kInfoKey: SwitchInfo
  };
  std::vector<Asked> asked;
  std::deque<MadRequest> pending;
  auto ask = [&](const FabricNode& n, std::uint32_t key) {
    const std::uint16_t attr =
        key == kInfoKey ? kAttrSwitchInfo : kAttrLinearForwardingTable;
    const std::uint32_t mod = key == kInfoKey ? 0 : key;
    MadRequest r;
    if (access_ == LftAccess::kLidRouted) {
      r.dlid = n.lid;
      r.mad = SmpGet(attr, mod);
    } else {
      r.mad = DrSmpGet(attr, mod, n.path);
    }
    r.cookie = asked.size();
    asked.push_back({n.guid, key});
    pending.push_back(r);
    ++(key == kInfoKey ? stats_.switch_info_reads : stats_.lft_block_reads);
  };
  for (const auto& [guid, blocks] : want) {
    const FabricNode* n = topology_->Find(guid);
    if (!n) continue;
    auto t = tables_.find(guid);
    if (t == tables_.end() || !t->second.has_info) ask(*n, kInfoKey);
    for (std::uint32_t b : blocks) {
      if (t == tables_.end() || !t->second.blocks.count(b)) ask(*n, b);
    }
  }
  const MadStats s = transport_.Run(
      pending, options_, [&](const MadRequest& q, const MadResult& r) {
        const Asked& a = asked[q.cookie];
        std::string error;
        if (!r.ok()) {
          error = r.error().message();
        } else if (a.block == kInfoKey) {
          if (auto si = DecodeSwitchInfo(*r, &error)) {
            tables_[a.guid].info = *si;
            tables_[a.guid].has_info = true;
          }
        } else if (auto b = DecodeLftBlock(*r, &error)) {
          if (b->block != a.block) {
            error =
                Printf("LFT answer for block %u, asked %u", b->block, a.block);
          } else {
            tables_[a.guid].blocks[a.block] = *b;
          }
        }
        if (!error.empty()) {
          ++stats_.failed_reads;
          (*failed)[{a.guid, a.block}] =
              std::string(a.block == kInfoKey ? "SwitchInfo" : "LFT block") +
              ": " + error;
        }
      });
  stats_.mads.ok += s.ok;
  stats_.mads.timeouts += s.timeouts;
  stats_.mads.errors += s.errors;
  stats_.mads.retries += s.retries;
}

std::vector<std::uint16_t> RouteTracer::LidsOutOf(std::uint64_t switch_guid,
                                                  int port,
                                                  std::string* error) {
  const FabricNode* n = topology_ ? topology_->Find(switch_guid) : nullptr;
  if (!n || n->type != 2) {
    *error = Printf("no switch with GUID 0x%016llx in the fabric",
                    static_cast<unsigned long long>(switch_guid));
    return {};
  }
  if (port < 1 || port > n->num_ports) {
    *error = Printf("\"%s\" has ports 1..%d, not %d", n->description.c_str(),
                    n->num_ports, port);
    return {};
  }
  auto failure = [&](const FailedReads& failed) {
    *error = "cannot read the forwarding table of \"" + n->description +
             "\": " + failed.begin()->second;
    return std::vector<std::uint16_t>{};
  };
  FailedReads failed;
  if (!tables_[switch_guid].has_info) Fetch({{switch_guid, {}}}, &failed);
  if (!failed.empty()) return failure(failed);
  const SwitchInfo& si = tables_[switch_guid].info;
  // The entries ibroute prints: unicast LIDs up to LinearFDBTop.
  const std::uint32_t last = std::min<std::uint32_t>(si.linear_fdb_top, 0xbfff);
  std::vector<std::uint32_t> blocks;
  for (std::uint32_t b = 0; b <= last / kLftBlockLids; ++b) blocks.push_back(b);
  Fetch({{switch_guid, blocks}}, &failed);
  if (!failed.empty()) return failure(failed);
  std::vector<std::uint16_t> out;
  const SwitchTables& t = tables_[switch_guid];
  for (std::uint32_t lid = 1; lid <= last; ++lid) {
    if (t.blocks.at(lid / kLftBlockLids).ports[lid % kLftBlockLids] == port) {
      out.push_back(static_cast<std::uint16_t>(lid));
    }
  }
  return out;
}

std::map<std::uint64_t, std::vector<std::uint8_t>> RouteTracer::Tables(
    const std::vector<std::uint64_t>& switch_guids,
    std::map<std::uint64_t, std::string>* errors) {
  std::map<std::uint64_t, std::vector<std::uint8_t>> out;
  std::map<std::uint64_t, std::vector<std::uint32_t>> want;
  for (std::uint64_t g : switch_guids) {
    const FabricNode* n = topology_ ? topology_->Find(g) : nullptr;
    if (!n || n->type != 2) {
      (*errors)[g] = "not a switch of the fabric";
      continue;
    }
    if (!tables_[g].has_info) want[g];
  }
  FailedReads failed;
  if (!want.empty()) Fetch(want, &failed);
  want.clear();
  for (std::uint64_t g : switch_guids) {
    if (errors->count(g)) continue;
    if (!tables_[g].has_info) {
      auto f = failed.lower_bound({g, 0});
      (*errors)[g] = f != failed.end() && f->first.first == g ? f->second
                                                              : "no SwitchInfo";
      continue;
    }
    const std::uint32_t last =
        std::min<std::uint32_t>(tables_[g].info.linear_fdb_top, 0xbfff);
    for (std::uint32_t b = 0; b <= last / kLftBlockLids; ++b) {
      if (!tables_[g].blocks.count(b)) want[g].push_back(b);
    }
  }
  failed.clear();
  if (!want.empty()) Fetch(want, &failed);
  for (std::uint64_t g : switch_guids) {
    if (errors->count(g)) continue;
    const SwitchTables& t = tables_[g];
    const std::uint32_t last =
        std::min<std::uint32_t>(t.info.linear_fdb_top, 0xbfff);
    std::vector<std::uint8_t> table(last + 1, kLftNoRoute);
    bool complete = true;
    for (std::uint32_t b = 0; b <= last / kLftBlockLids && complete; ++b) {
      auto it = t.blocks.find(b);
      if (it == t.blocks.end()) {
        complete = false;
        break;
      }
      for (int i = 0; i < kLftBlockLids; ++i) {
        const std::uint32_t lid = b * kLftBlockLids + i;
        if (lid <= last) table[lid] = it->second.ports[i];
      }
    }
    if (!complete) {
      auto f = failed.lower_bound({g, 0});
      (*errors)[g] = f != failed.end() && f->first.first == g
                         ? f->second
                         : "a forwarding table block is missing";
      continue;
    }
    out[g] = std::move(table);
  }
  return out;
}

TraceResult RouteTracer::Trace(std::uint16_t src_lid, std::uint16_t dst_lid) {
  return TraceAll({{src_lid, dst_lid}}).front();
}

std::vector<TraceResult> RouteTracer::TraceAll(
    const std::vector<RoutePair>& pairs) {
  std::vector<Walk> walks(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    Walk& w = walks[i];
    w.dst = pairs[i].dst_lid;
    std::size_t node = 0, dst_node = 0;
    int port = 0, dst_port = 0;
    if (!topology_) {
      w.result.error = "no topology";
    } else if (!FindLid(pairs[i].src_lid, &node, &port)) {
      w.result.error = Printf("source LID %u not found in the fabric",
                              static_cast<unsigned>(pairs[i].src_lid));
    } else if (!FindLid(pairs[i].dst_lid, &dst_node, &dst_port)) {
      w.result.error = Printf("destination LID %u not found in the fabric",
                              static_cast<unsigned>(pairs[i].dst_lid));
    } else {
      w.node = node;
      w.port = port;
      w.result.route.hops.push_back(HopAt(node, port, 0));
      continue;
    }
    w.done = true;
  }
  // Failed reads of this call only: the next call asks again.
  FailedReads failed;
  auto failed_reason = [&](std::uint64_t guid,
                           std::uint32_t block) -> const std::string* {
    for (std::uint32_t key : {kInfoKey, block}) {
      auto it = failed.find({guid, key});
      if (it != failed.end()) return &it->second;
    }
    return nullptr;
  };
  for (;;) {
    std::map<std::uint64_t, std::vector<std::uint32_t>> want;
    for (Walk& w : walks) {
      std::uint64_t guid = 0;
      std::uint32_t block = 0;
      if (w.done || Advance(w, &guid, &block) != Need::kTables) continue;
      if (const std::string* reason = failed_reason(guid, block)) {
        const FabricNode* n = topology_->Find(guid);
        w.result.error = "cannot read the forwarding table of \"" +
                         (n ? n->description : std::string()) +
                         "\": " + *reason;
        w.done = true;
        continue;
      }
      auto& blocks = want[guid];
      if (std::find(blocks.begin(), blocks.end(), block) == blocks.end()) {
        blocks.push_back(block);
      }
    }
    if (want.empty()) break;
    Fetch(want, &failed);
  }
  std::vector<TraceResult> out;
  out.reserve(walks.size());
  for (Walk& w : walks) out.push_back(std::move(w.result));
  return out;
}

std::string FormatIbtracert(const Route& route) {
  if (route.hops.empty()) return "";
  auto lids = [](const RouteHop& h) {
    return Printf("lid %u-%u", static_cast<unsigned>(h.lid),
                  static_cast<unsigned>(h.lid + (1u << h.lmc) - 1));
  };
  auto end = [&](const char* prompt, const RouteHop& h) {
    return Printf(
        "%s %s {0x%016llx} portnum %d %s \"%s\"\n", prompt, TypeName(h.type),
        static_cast<unsigned long long>(h.node_guid), h.type == 2 ? 0 : h.port,
        lids(h).c_str(), h.description.c_str());
  };
  std::string out = end("From", route.hops.front());
  for (std::size_t i = 1; i < route.hops.size(); ++i) {
    const RouteHop& h = route.hops[i];
    out +=
        Printf("[%d] -> %s port {0x%016llx}[%d] %s \"%s\"\n", h.out_port,
               TypeName(h.type), static_cast<unsigned long long>(h.port_guid),
               h.port, lids(h).c_str(), h.description.c_str());
  }
  return out + end("To", route.hops.back());
}

}  // namespace fabric::mad
