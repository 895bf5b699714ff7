#include "probe/rdma_ports.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

namespace fabric::rdma {
namespace {
constexpr int kPortActive = 4;  // IBV_PORT_ACTIVE
}  // namespace

bool IsZeroGid(const Gid& gid) {
  return std::all_of(gid.begin(), gid.end(), [](auto b) { return b == 0; });
}

bool IsIpv4MappedGid(const Gid& gid) {
  for (int i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}

std::optional<GidEntry> PickGid(std::span<const GidEntry> table,
                                LinkLayer link_layer) {
  const GidEntry* best = nullptr;
  int best_rank = 0;
  for (const GidEntry& e : table) {
    if (IsZeroGid(e.gid)) continue;
    int rank = 0;
    if (link_layer == LinkLayer::kEthernet) {
      if (e.type == GidType::kRoceV2) rank = IsIpv4MappedGid(e.gid) ? 3 : 2;
      if (e.type == GidType::kRoceV1) rank = 1;
    } else if (e.type == GidType::kIb) {
      rank = 1;
    }
    // Ties keep the lowest index: the table is scanned in order.
    if (rank > best_rank) {
      best = &e;
      best_rank = rank;
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::vector<RdmaPort> ListRdmaPorts(VerbsOps& ops, std::string* error) {
  std::vector<RdmaPort> ports;
  std::error_code ec;
  const std::vector<std::string> names = ops.DeviceNames(&ec);
  auto note = [&](const std::string& what) {
    if (!error->empty()) *error += "; ";
    *error += what;
  };
  if (ec) note("listing RDMA devices: " + ec.message());
  for (const std::string& name : names) {
    std::error_code open_ec;
    Handle ctx = ops.Open(name, &open_ec);
    if (ctx == 0) {
      note(name + ": open: " + open_ec.message());
      continue;
    }
    DeviceAttr dev;
    if (auto e = ops.QueryDevice(ctx, &dev)) {
      note(name + ": query device: " + e.message());
      ops.Close(ctx);
      continue;
    }
    for (int p = 1; p <= dev.phys_port_cnt; ++p) {
      PortAttr pa;
      if (auto e = ops.QueryPort(ctx, p, &pa)) {
        note(name + " port " + std::to_string(p) + ": " + e.message());
        continue;
      }
      if (pa.state != kPortActive || pa.link_layer == LinkLayer::kUnknown) {
        continue;
      }
      std::vector<GidEntry> table;
      for (int i = 0; i < pa.gid_table_len; ++i) {
        GidEntry ge;
        // Empty slots answer with an error; they are simply not candidates.
        if (!ops.QueryGid(ctx, p, i, &ge)) table.push_back(ge);
      }
      std::optional<GidEntry> gid = PickGid(table, pa.link_layer);
      if (!gid) {
        note(name + " port " + std::to_string(p) + ": no usable GID");
        continue;
      }
      RdmaPort rp;
      rp.device = name;
      rp.port = p;
      rp.link_layer = pa.link_layer;
      rp.lid = pa.lid;
      rp.gid = *gid;
      rp.mtu_bytes = pa.active_mtu_bytes;
      rp.clock = ChooseClock(dev);
      ports.push_back(std::move(rp));
    }
    ops.Close(ctx);
  }
  return ports;
}

std::optional<RdmaPort> FindPort(std::span<const RdmaPort> ports,
                                 std::string_view device, int port) {
  for (const RdmaPort& p : ports) {
    if (p.device == device && p.port == port) return p;
  }
  return std::nullopt;
}

std::optional<RdmaPort> PickPortForAddress(std::span<const RdmaPort> ports,
                                           std::string_view bind_address) {
  if (ports.empty()) return std::nullopt;
  std::string host(bind_address);
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.find(']') - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    host = host.substr(0, host.find(':'));
  }
  Gid gid{};
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    gid[10] = 0xff;
    gid[11] = 0xff;
    std::memcpy(gid.data() + 12, &v4, 4);
  } else if (inet_pton(AF_INET6, host.c_str(), gid.data()) != 1) {
    return ports.front();
  }
  for (const RdmaPort& p : ports) {
    if (p.gid.gid == gid) return p;
  }
  return ports.front();
}

}  // namespace fabric::rdma
