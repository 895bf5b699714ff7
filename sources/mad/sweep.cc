#include "sources/mad/sweep.h"

#include <algorithm>
#include <deque>
#include <set>

#include "sources/mad/pesc.h"

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

enum class Ask : std::uint8_t {
  kPortInfo,
  kCounters,
  kExtended,
  kClassPortInfo,
  kPortInfoExtended,
  kPesc,
  kPescProbe,
};

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

void ChooseXmitWait(SwitchPortSample& p, bool wide) {
  p.xmit_wait.reset();
  if (!wide) {
    if (p.extended) p.extended->xmit_wait.reset();
    if (p.counters) {
      const auto& sat = p.counters->saturated;
      p.xmit_wait =
          PortXmitWait{.ticks = p.counters->xmit_wait,
                       .saturated = std::find(sat.begin(), sat.end(),
                                              "port_xmit_wait") != sat.end()};
    }
    return;
  }
  if (p.counters) std::erase(p.counters->saturated, "port_xmit_wait");
  if (p.extended && p.extended->xmit_wait) {
    p.xmit_wait = PortXmitWait{.ticks = *p.extended->xmit_wait, .wide = true};
  }
}

namespace {

using Support = PescSwitchState::Support;

// A port worth reading PESC of: its link is up as discovery saw it (a port
// without a cable has no PHY counters worth a MAD each sweep).
bool Linked(const FabricPort& p) { return p.phys_state == 5 || p.state >= 2; }

// IBA defines a switch's CapabilityMask on port 0 only (external ports may
// leave it 0), so a switch port's own mask is ORed with port 0's.
std::uint32_t CapabilityOf(const FabricNode& n, int port) {
  std::uint32_t cap = 0;
  for (int p : {0, port}) {
    auto it = n.ports.find(p);
    if (it != n.ports.end()) cap |= it->second.capability_mask;
  }
  return cap;
}

using PortMemory = PortInfoMemory::Port;

// LinkDownedCounter + LinkErrorRecoveryCounter, or nullopt when either sits
// saturated (it no longer counts: the counters cannot tell).
std::optional<std::uint64_t> LinkEvents(const PortCounters& c) {
  std::uint64_t sum = 0;
  for (const char* name : {"link_downed", "link_error_recovery"}) {
    if (std::find(c.saturated.begin(), c.saturated.end(), name) !=
        c.saturated.end()) {
      return std::nullopt;
    }
    auto it = c.errors.find(name);
    if (it != c.errors.end()) sum += it->second;
  }
  return sum;
}

// Whether the sweep asks this port's PortInfo up front (sweep.h).
bool DueForPortInfo(const PortInfoMemory& memory, const PortMemory& m,
                    std::uint64_t guid, int port) {
  if (memory.every <= 1 || !m.info) return true;
  if (m.info->state != 4 && (m.info->phys_state == 5 || m.was_active)) {
    return true;
  }
  if (m.seeded) return false;  // read by the discovery just before
  const auto every = static_cast<std::uint64_t>(memory.every);
  return (memory.sweeps + Mix(guid) + static_cast<std::uint64_t>(port)) %
             every ==
         0;
}

}  // namespace

std::vector<PortMemory>& PortInfoMemory::Of(std::uint64_t guid, int num_ports) {
  std::vector<PortMemory>& v = ports[guid];
  if (v.size() < static_cast<std::size_t>(num_ports) + 1) {
    v.resize(static_cast<std::size_t>(num_ports) + 1);
  }
  return v;
}

void PortInfoMemory::Seed(const Topology& topology) {
  std::map<std::uint64_t, std::vector<Port>> kept;
  for (const FabricNode& n : topology.nodes) {
    if (n.type != 2) continue;
    std::vector<Port>& v = kept[n.guid];
    auto old = ports.find(n.guid);
    if (old != ports.end()) v = std::move(old->second);
    if (v.size() < static_cast<std::size_t>(n.num_ports) + 1) {
      v.resize(static_cast<std::size_t>(n.num_ports) + 1);
    }
    for (const auto& [num, port] : n.ports) {
      if (num < 0 || num > n.num_ports || !port.info) continue;
      Port& m = v[static_cast<std::size_t>(num)];
      m.info = port.info;
      m.was_active = port.info->state == 4;
      m.seeded = true;
    }
  }
  ports = std::move(kept);
}

SweepResult Sweep(MadTransport& transport, const Topology& topology,
                  const Shard& shard, const MadOptions& options,
                  PescCache* pesc, const std::vector<std::uint16_t>& sm_lids,
                  bool pesc_mads, PortInfoMemory* port_info) {
  SweepResult out;
  // By switch index: its ports' memory (null without one), and which
  // ports' PortInfo this sweep asked.
  std::vector<std::vector<PortMemory>*> memories;
  std::vector<std::vector<char>> info_asked;
  std::set<std::uint16_t> sms(sm_lids.begin(), sm_lids.end());
  for (std::uint16_t lid : topology.SmLids()) sms.insert(lid);
  std::deque<MadRequest> pending;
  std::vector<const FabricNode*> nodes;  // by switch index
  auto cookie = [](std::uint64_t index, int port, Ask ask) {
    return index << 16 | static_cast<std::uint64_t>(port) << 3 |
           static_cast<std::uint64_t>(ask);
  };
  auto pesc_get = [&](std::uint64_t index, int port, Ask ask) {
    pending.push_back({.dlid = nodes[index]->lid,
                       .mad = PescGet(static_cast<std::uint8_t>(port)),
                       .cookie = cookie(index, port, ask)});
  };
  auto pie_get = [&](std::uint64_t index, int port) {
    pending.push_back(
        {.dlid = 0,
         .mad = DrSmpGet(kAttrPortInfoExtended,
                         static_cast<std::uint32_t>(port), nodes[index]->path),
         .cookie = cookie(index, port, Ask::kPortInfoExtended)});
  };
  auto port_info_get = [&](std::uint64_t index, int port) {
    info_asked[index][static_cast<std::size_t>(port)] = 1;
    ++out.port_info_asked;
    pending.push_back(
        {.dlid = 0,
         .mad = DrSmpGet(kAttrPortInfo, static_cast<std::uint32_t>(port),
                         nodes[index]->path),
         .cookie = cookie(index, port, Ask::kPortInfo)});
  };
  for (const FabricNode& n : topology.nodes) {
    if (n.type != 2 || !shard.Contains(n.guid)) continue;
    const std::uint64_t index = out.switches.size();
    nodes.push_back(&n);
    memories.push_back(port_info ? &port_info->Of(n.guid, n.num_ports)
                                 : nullptr);
    info_asked.emplace_back(static_cast<std::size_t>(n.num_ports) + 1, 0);
    SwitchSample s;
    s.guid = n.guid;
    s.lid = n.lid;
    s.description = n.description;
    s.hosts_sm = n.lid != 0 && sms.count(n.lid) > 0;
    PescSwitchState* st = pesc && pesc_mads && n.lid != 0 && !s.hosts_sm
                              ? &(*pesc)[n.guid]
                              : nullptr;
    for (int p = 1; p <= n.num_ports; ++p) {
      SwitchPortSample sample;
      sample.num = p;
      s.ports.push_back(sample);
      const std::vector<PortMemory>* mem = memories.back();
      if (!mem || n.lid == 0 ||
          DueForPortInfo(*port_info, (*mem)[static_cast<std::size_t>(p)],
                         n.guid, p)) {
        port_info_get(index, p);
      }
      if (n.lid == 0) continue;  // no LID yet: PerfMgt cannot reach it
      const auto port = static_cast<std::uint8_t>(p);
      pending.push_back({.dlid = n.lid,
                         .mad = PerfGet(kAttrPortCounters, port),
                         .cookie = cookie(index, p, Ask::kCounters)});
      pending.push_back({.dlid = n.lid,
                         .mad = PerfGet(kAttrPortCountersExtended, port),
                         .cookie = cookie(index, p, Ask::kExtended)});
      if (st && st->support == Support::kSupported) {
        auto it = st->layouts.find(p);
        if (it != st->layouts.end() && it->second != PescLayout::kNone) {
          pesc_get(index, p, Ask::kPesc);
        }
      }
    }
    // An SM's switch (or any, without `pesc_mads`) gets the ClassPortInfo
    // alone, for the PortXmitWait choice (see sweep.h), until it answers:
    // never a PESC path.
    const bool ask_cpi =
        st ? st->support == Support::kUnknown
           : pesc && n.lid != 0 && !(*pesc)[n.guid].class_port_info;
    if (ask_cpi) {
      pending.push_back({.dlid = n.lid,
                         .mad = PmaClassPortInfoGet(),
                         .cookie = cookie(index, 0, Ask::kClassPortInfo)});
    }
    out.switches.push_back(std::move(s));
  }
  auto note = [&](const std::string& e) {
    if (out.errors.size() < 8) out.errors.push_back(e);
  };
  // Starts PESC for `port` of a switch whose ClassPortInfo is known: through
  // PortInfoExtended when the layout depends on the FEC mode, else directly.
  // False when the port has no PESC.
  auto start_port = [&](std::uint64_t index, int port, Ask ask) {
    PescSwitchState& st = (*pesc)[nodes[index]->guid];
    // The decision of sources/mad/pesc.h; a switch port's CapabilityMask2
    // is not known here.
    const PescStart start = StartPesc(CapabilityOf(*nodes[index], port),
                                      std::nullopt, *st.class_port_info);
    switch (start.next) {
      case PescStart::Next::kNone:
        st.layouts[port] = PescLayout::kNone;
        return false;
      case PescStart::Next::kPortInfoExtended:
        pie_get(index, port);  // its answer sends the PESC
        return true;
      case PescStart::Next::kPesc:
        break;
    }
    st.layouts[port] = start.layout;
    pesc_get(index, port, ask);
    return true;
  };
  // The probe answered: every other linked port's PESC.
  auto start_rest = [&](std::uint64_t index, int probe) {
    const FabricNode& n = *nodes[index];
    for (int p = 1; p <= n.num_ports; ++p) {
      auto it = n.ports.find(p);
      if (p == probe || it == n.ports.end() || !Linked(it->second)) continue;
      start_port(index, p, Ask::kPesc);
    }
  };
  auto unsupported = [&](std::uint64_t index) {
    (*pesc)[nodes[index]->guid].support = Support::kUnsupported;
  };
  // Port -> probe of a switch in flight: whether the PortInfoExtended that
  // is answering belongs to the probe.
  std::map<std::uint64_t, int> probe_port;
  std::uint64_t probe_timeouts = 0;
  out.stats = transport.Run(
      pending, options, [&](const MadRequest& q, const MadResult& r) {
        const std::uint64_t index = q.cookie >> 16;
        SwitchSample& s = out.switches[index];
        const int port = static_cast<int>((q.cookie >> 3) & 0x1fff);
        const auto ask = static_cast<Ask>(q.cookie & 7);
        if (ask == Ask::kClassPortInfo) {
          std::string error;
          std::optional<PmaClassPortInfo> cpi;
          if (r.ok()) {
            s.reachable = true;
            cpi = DecodePmaClassPortInfo(*r, &error);
          } else {
            ++s.failed_mads;
          }
          if (s.hosts_sm || !pesc_mads) {  // the PortXmitWait choice only
            if (cpi) (*pesc)[s.guid].class_port_info = cpi;
            return;
          }
          if (!cpi) return unsupported(index);
          (*pesc)[s.guid].class_port_info = cpi;
          // The probe: the first port with a link.
          const FabricNode& n = *nodes[index];
          for (int p = 1; p <= n.num_ports; ++p) {
            auto it = n.ports.find(p);
            if (it == n.ports.end() || !Linked(it->second)) continue;
            probe_port[index] = p;
            if (!start_port(index, p, Ask::kPescProbe)) unsupported(index);
            return;
          }
          return;  // no linked port: ClassPortInfo again next sweep
        }
        if (port < 1 || port > static_cast<int>(s.ports.size())) return;
        SwitchPortSample& sp = s.ports[port - 1];
        const bool probe = ask == Ask::kPescProbe ||
                           (ask == Ask::kPortInfoExtended &&
                            (*pesc)[s.guid].support == Support::kUnknown &&
                            probe_port[index] == port);
        if (!r.ok()) {
          if (ask == Ask::kPescProbe) {
            // The PMA's way of saying "no 0x1F": not lost MADs.
            if (r.error() == std::errc::timed_out) ++probe_timeouts;
            return unsupported(index);
          }
          ++s.failed_mads;
          // No counters to tell whether the link changed: ask PortInfo.
          if (ask == Ask::kCounters && !info_asked[index][port]) {
            port_info_get(index, port);
          }
          if (ask == Ask::kPortInfoExtended) {
            // No FEC mode to go by: the original layout, as perfquery.
            PescSwitchState& st = (*pesc)[s.guid];
            st.layouts[port] =
                LayoutAfterPortInfoExtended(CapabilityOf(*nodes[index], port),
                                            *st.class_port_info, std::nullopt);
            pesc_get(index, port, probe ? Ask::kPescProbe : Ask::kPesc);
          }
          return;
        }
        s.reachable = true;
        std::string error;
        switch (ask) {
          case Ask::kPortInfo:
            sp.info = DecodePortInfo(*r, &error);
            break;
          case Ask::kCounters: {
            sp.counters = DecodePortCounters(*r, &error);
            if (!memories[index] || info_asked[index][port]) break;
            // A link event since the last sweep (or counters that can no
            // longer tell): the PortInfo now, in this sweep.
            const PortMemory& m =
                (*memories[index])[static_cast<std::size_t>(port)];
            const auto events =
                sp.counters ? LinkEvents(*sp.counters) : std::nullopt;
            // (No earlier count, e.g. the sweep after a discovery: nothing
            // to compare, the PortInfo is fresh.)
            if (!events || (m.link_events && *events != *m.link_events)) {
              port_info_get(index, port);
            }
            break;
          }
          case Ask::kExtended:
            // PortXmitWait read as if advertised: this switch's first
            // ClassPortInfo may answer after it; ChooseXmitWait drops it
            // after the sweep unless the PMA does advertise it.
            sp.extended =
                DecodePortCountersExtended(*r, &error, /*additional=*/true);
            break;
          case Ask::kPortInfoExtended: {
            PescSwitchState& st = (*pesc)[s.guid];
            st.layouts[port] =
                LayoutAfterPortInfoExtended(CapabilityOf(*nodes[index], port),
                                            *st.class_port_info, Bytes(*r));
            pesc_get(index, port, probe ? Ask::kPescProbe : Ask::kPesc);
            break;
          }
          case Ask::kPesc:
          case Ask::kPescProbe: {
            PescSwitchState& st = (*pesc)[s.guid];
            auto it = st.layouts.find(port);
            const PescLayout layout =
                it == st.layouts.end() ? PescLayout::kNone : it->second;
            std::string why;
            sp.pesc = DecodePortExtendedSpeedsCounters(*r, layout, &why);
            if (ask == Ask::kPescProbe) {
              // A status (unsupported attribute) or garbage: no PESC here,
              // said once by the self-metric rather than per port.
              if (!sp.pesc) return unsupported(index);
              st.support = Support::kSupported;
              start_rest(index, port);
            }
            break;
          }
          case Ask::kClassPortInfo:
            break;
        }
        if (!error.empty()) {
          note(GuidString(s.guid) + " port " + std::to_string(port) + ": " +
               error);
        }
      });
  // An unanswered probe counted one timeout and `retries` retries.
  const auto retries = static_cast<std::uint64_t>(std::max(options.retries, 0));
  out.pesc_unanswered = probe_timeouts * (retries + 1);
  out.stats.timeouts -= std::min(out.stats.timeouts, probe_timeouts);
  out.stats.retries -= std::min(out.stats.retries, probe_timeouts * retries);
  for (std::size_t i = 0; i < out.switches.size() && port_info; ++i) {
    std::vector<PortMemory>& mem = *memories[i];
    for (SwitchPortSample& p : out.switches[i].ports) {
      PortMemory& m = mem[static_cast<std::size_t>(p.num)];
      if (info_asked[i][static_cast<std::size_t>(p.num)]) {
        // Unanswered: not exported this round, as without a memory.
        if (p.info) {
          m.info = p.info;
          m.was_active = m.was_active || p.info->state == 4;
        }
      } else if (m.info) {
        p.info = m.info;
        ++out.port_info_remembered;
      }
      if (p.counters) m.link_events = LinkEvents(*p.counters);
      m.seeded = false;
    }
  }
  if (port_info) ++port_info->sweeps;
  for (SwitchSample& s : out.switches) {
    bool wide = false;
    if (pesc) {
      auto it = pesc->find(s.guid);
      wide = it != pesc->end() && it->second.class_port_info &&
             it->second.class_port_info->AddlPortCountersExtendedSupported();
    }
    for (SwitchPortSample& p : s.ports) ChooseXmitWait(p, wide);
    if (!s.reachable) ++out.unreachable;
    if (s.hosts_sm) {
      ++out.hosts_sm;
    } else if (pesc && pesc_mads) {
      auto it = pesc->find(s.guid);
      s.pesc_unsupported =
          it == pesc->end() || it->second.support != Support::kSupported;
      if (s.pesc_unsupported) ++out.pesc_unsupported;
    }
  }
  return out;
}

}  // namespace fabric::mad
