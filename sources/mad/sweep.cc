#include "sources/mad/sweep.h"

#include <deque>

namespace fabric::mad {
namespace {

// splitmix64's finaliser: GUIDs of one vendor share most bits, so a plain
// modulo would put whole runs of switches in one shard.
std::uint64_t Mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum class Ask : std::uint8_t { kPortInfo, kCounters, kExtended };

}  // namespace

bool Shard::Contains(std::uint64_t switch_guid) const {
  if (count <= 1) return true;
  return static_cast<int>(Mix(switch_guid) %
                          static_cast<std::uint64_t>(count)) == index - 1;
}

std::optional<Shard> ParseShard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  try {
    std::size_t used = 0;
    const int i = std::stoi(text.substr(0, slash), &used);
    if (used != slash) return std::nullopt;
    const std::string rest = text.substr(slash + 1);
    const int n = std::stoi(rest, &used);
    if (used != rest.size() || n < 1 || i < 1 || i > n) return std::nullopt;
    return Shard{i, n};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

SweepResult Sweep(MadTransport& transport, const Topology& topology,
                  const Shard& shard, const MadOptions& options) {
  SweepResult out;
  std::deque<MadRequest> pending;
  // cookie = switch index << 16 | port << 2 | ask
  for (const FabricNode& n : topology.nodes) {
    if (n.type != 2 || !shard.Contains(n.guid)) continue;
    const std::uint64_t index = out.switches.size();
    SwitchSample s;
    s.guid = n.guid;
    s.lid = n.lid;
    s.description = n.description;
    for (int p = 1; p <= n.num_ports; ++p) {
      SwitchPortSample sample;
      sample.num = p;
      s.ports.push_back(sample);
      const std::uint64_t base = index << 16 | static_cast<std::uint64_t>(p)
                                                   << 2;
      pending.push_back({.dlid = 0,
                         .mad = DrSmpGet(kAttrPortInfo,
                                         static_cast<std::uint32_t>(p), n.path),
                         .cookie = base | static_cast<int>(Ask::kPortInfo)});
      if (n.lid == 0) continue;  // no LID yet: PerfMgt cannot reach it
      const auto port = static_cast<std::uint8_t>(p);
      pending.push_back({.dlid = n.lid,
                         .mad = PerfGet(kAttrPortCounters, port),
                         .cookie = base | static_cast<int>(Ask::kCounters)});
      pending.push_back({.dlid = n.lid,
                         .mad = PerfGet(kAttrPortCountersExtended, port),
                         .cookie = base | static_cast<int>(Ask::kExtended)});
    }
    out.switches.push_back(std::move(s));
  }
  auto note = [&](const std::string& e) {
    if (out.errors.size() < 8) out.errors.push_back(e);
  };
  out.stats = transport.Run(
      pending, options, [&](const MadRequest& q, const MadResult& r) {
        SwitchSample& s = out.switches[q.cookie >> 16];
        const int port = static_cast<int>((q.cookie >> 2) & 0x3fff);
        if (port < 1 || port > static_cast<int>(s.ports.size())) return;
        SwitchPortSample& sp = s.ports[port - 1];
        if (!r.ok()) return;
        s.reachable = true;
        std::string error;
        switch (static_cast<Ask>(q.cookie & 3)) {
          case Ask::kPortInfo:
            sp.info = DecodePortInfo(*r, &error);
            break;
          case Ask::kCounters:
            sp.counters = DecodePortCounters(*r, &error);
            break;
          case Ask::kExtended:
            sp.extended = DecodePortCountersExtended(*r, &error);
            break;
        }
        if (!error.empty()) {
          note(GuidString(s.guid) + " port " + std::to_string(port) + ": " +
               error);
        }
      });
  for (const SwitchSample& s : out.switches) {
    if (!s.reachable) ++out.unreachable;
  }
  return out;
}

}  // namespace fabric::mad
