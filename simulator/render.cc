#include "simulator/render.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <system_error>

#include "simulator/dcb.h"
#include "simulator/ethtool.h"
#include "simulator/slurm.h"
#include "simulator/transceiver.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;

std::string GuidString(std::uint64_t guid) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x",
                static_cast<unsigned>((guid >> 48) & 0xffff),
                static_cast<unsigned>((guid >> 32) & 0xffff),
                static_cast<unsigned>((guid >> 16) & 0xffff),
                static_cast<unsigned>(guid & 0xffff));
  return buf;
}

std::string Hex(unsigned value, int width = 0) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%0*x", width, value);
  return buf;
}

std::string Line(const std::string& s) { return s + "\n"; }
std::string Line(std::uint64_t v) { return std::to_string(v) + "\n"; }

std::string Mac(std::uint64_t guid) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x",
                static_cast<unsigned>((guid >> 56) & 0xff),
                static_cast<unsigned>((guid >> 48) & 0xff),
                static_cast<unsigned>((guid >> 40) & 0xff),
                static_cast<unsigned>((guid >> 16) & 0xff),
                static_cast<unsigned>((guid >> 8) & 0xff),
                static_cast<unsigned>(guid & 0xff));
  return buf;
}

}  // namespace

SysfsRenderer::SysfsRenderer(fs::path root, int host)
    : root_(std::move(root)), staging_(root_ / ".sim-staging"), host_(host) {}

void SysfsRenderer::DeviceFiles(const Cluster& cluster, const Device& device,
                                Files* out) const {
  Files& f = *out;
  f["board_id"] = Line(device.board_id);
  f["fw_ver"] = Line(device.fw_ver);
  f["hca_type"] = Line(device.hca_type);
  f["node_guid"] = Line(GuidString(device.node_guid));
  f["sys_image_guid"] = Line(GuidString(device.node_guid));
  f["node_desc"] = Line(device.node_desc);
  for (int pi : device.ports) {
    const Port& p = cluster.ports()[pi];
    const std::string dir = "ports/" + std::to_string(p.port_num) + "/";
    const bool ib = p.link_layer == LinkLayer::kInfiniBand;
    f[dir + "link_layer"] = Line(ib ? "InfiniBand" : "Ethernet");
    f[dir + "state"] = Line(p.up ? "4: ACTIVE" : "1: DOWN");
    f[dir + "phys_state"] = Line(p.up ? "5: LinkUp" : "2: Polling");
    f[dir + "rate"] = Line(p.RateString());
    f[dir + "lid"] = Line(Hex(p.lid));
    f[dir + "sm_lid"] = Line(Hex(ib ? cluster.master_sm().lid : 0));
    f[dir + "sm_sl"] = Line(std::uint64_t{0});
    f[dir + "lid_mask_count"] = Line(std::uint64_t{0});
    // Typical mlx5 CapabilityMask: IB port vs RoCE port (IsCM etc.).
    f[dir + "cap_mask"] = Line(Hex(ib ? 0xa751e848u : 0x04010000u, 8));
    for (const auto& spec : kCounterSpecs) {
      f[dir + "counters/" + std::string(spec.file)] =
          Line(p.counters.Get(static_cast<Ctr>(&spec - kCounterSpecs.data())));
    }
    for (const auto& [name, value] : p.hw_counters) {
      f[dir + "hw_counters/" + name] = Line(value);
    }
    f[dir + "hw_counters/lifespan"] = Line(std::uint64_t{12});
    // GID 0: the link-local prefix + the port GUID.
    f[dir + "gids/0"] = Line("fe80:0000:0000:0000:" + GuidString(p.guid));
    if (!device.netdev.empty()) {
      f[dir + "gid_attrs/ndevs/0"] = Line(device.netdev);
      f[dir + "gid_attrs/types/0"] = Line("RoCE v2");
    }
  }
}

void SysfsRenderer::NetFiles(const Cluster& cluster, const Device& device,
                             Files* out) const {
  Files& f = *out;
  const Port& p = cluster.ports()[device.ports.at(0)];
  f["address"] = Line(Mac(device.node_guid));
  f["carrier"] = Line(std::uint64_t{p.up ? 1u : 0u});
  f["operstate"] = Line(p.up ? "up" : "down");
  f["speed"] = Line(
      static_cast<std::uint64_t>(p.RateBytesPerSecond() * 8 / 1e6));  // Mb/s
  f["duplex"] = Line("full");
  f["mtu"] = Line(std::uint64_t{9000});
  f["type"] = Line(std::uint64_t{1});
  f["ifindex"] = Line(std::uint64_t{10});
  f["addr_len"] = Line(std::uint64_t{6});
  // ECN on the RoCE priority only, as a RoCE-tuned host is configured
  // (nowhere in roce-cc-off).
  for (int prio = 0; prio < 8; ++prio) {
    const std::string on = prio == kRocePriority && device.roce_cc ? "1" : "0";
    f["ecn/roce_np/enable/" + std::to_string(prio)] = Line(on);
    f["ecn/roce_rp/enable/" + std::to_string(prio)] = Line(on);
  }
  f["ecn/roce_np/cnp_802p_prio"] = Line(std::uint64_t{6});
  f["ecn/roce_np/cnp_dscp"] = Line(std::uint64_t{48});
  f["ecn/roce_np/min_time_between_cnps"] = Line(std::uint64_t{4});
  const std::pair<const char*, int> rp[] = {
      {"clamp_tgt_rate", 0},
      {"clamp_tgt_rate_after_time_inc", 1},
      {"dce_tcp_g", 1019},
      {"dce_tcp_rtt", 1},
      {"initial_alpha_value", 1023},
      {"rate_reduce_monitor_period", 4},
      {"rate_to_set_on_first_cnp", 0},
      {"rpg_ai_rate", 5},
      {"rpg_byte_reset", 32767},
      {"rpg_gd", 11},
      {"rpg_hai_rate", 50},
      {"rpg_max_rate", 0},
      {"rpg_min_dec_fac", 50},
      {"rpg_min_rate", 1},
      {"rpg_threshold", 1},
      {"rpg_time_reset", 300}};
  for (const auto& [name, value] : rp) {
    f[std::string("ecn/roce_rp/") + name] =
        Line(static_cast<std::uint64_t>(value));
  }
}

bool SysfsRenderer::WriteAtomic(const std::string& relative,
                                const std::string& data, std::string* error) {
  const fs::path tmp = staging_ / ("f" + std::to_string(serial_++));
  const int fd =
      ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = "open " + tmp.string() + ": " + std::strerror(errno);
    return false;
  }
  const ssize_t n = ::write(fd, data.data(), data.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    *error = "write " + tmp.string() + " failed";
    ::unlink(tmp.c_str());
    return false;
  }
  const fs::path target = root_ / relative;
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    *error = "rename to " + target.string() + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool SysfsRenderer::InstallDir(const std::string& relative, const Files& files,
                               std::string* error) {
  std::error_code ec;
  const fs::path build = staging_ / ("d" + std::to_string(serial_++));
  for (const auto& [path, data] : files) {
    const fs::path file = build / path;
    fs::create_directories(file.parent_path(), ec);
    if (ec) {
      *error = "mkdir " + file.parent_path().string() + ": " + ec.message();
      return false;
    }
    FILE* out = std::fopen(file.c_str(), "w");
    if (!out || std::fwrite(data.data(), 1, data.size(), out) != data.size()) {
      if (out) std::fclose(out);
      *error = "write " + file.string() + " failed";
      return false;
    }
    std::fclose(out);
  }
  const fs::path target = root_ / relative;
  fs::create_directories(target.parent_path(), ec);
  fs::rename(build, target, ec);
  if (ec) {
    *error = "rename to " + target.string() + ": " + ec.message();
    fs::remove_all(build, ec);
    return false;
  }
  return true;
}

bool SysfsRenderer::RemoveDir(const std::string& relative, std::string* error) {
  std::error_code ec;
  const fs::path gone = staging_ / ("r" + std::to_string(serial_++));
  fs::rename(root_ / relative, gone, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    *error = "rename " + (root_ / relative).string() + ": " + ec.message();
    return false;
  }
  fs::remove_all(gone, ec);
  return true;
}

bool SysfsRenderer::Render(const Cluster& cluster, std::string* error) {
  std::error_code ec;
  fs::create_directories(staging_, ec);
  if (ec) {
    *error = "mkdir " + staging_.string() + ": " + ec.message();
    return false;
  }
  if (host_ < 0 || host_ >= static_cast<int>(cluster.hosts().size())) {
    *error = "no host " + std::to_string(host_);
    return false;
  }
  for (int d : cluster.hosts()[host_].devices) {
    const Device& device = cluster.devices()[d];
    std::vector<std::pair<std::string, Files>> dirs;
    Files dev_files;
    DeviceFiles(cluster, device, &dev_files);
    dirs.emplace_back("class/infiniband/" + device.name, std::move(dev_files));
    if (!device.netdev.empty()) {
      Files net_files;
      NetFiles(cluster, device, &net_files);
      dirs.emplace_back("class/net/" + device.netdev, std::move(net_files));
    }
    if (!device.netdev.empty() && !RenderDumps(cluster, device, error)) {
      return false;
    }
    for (auto& [dir, files] : dirs) {
      auto it = written_.find(dir);
      if (!device.present) {
        // The netdev of a removed HCA goes with it.
        if (it != written_.end()) {
          if (!RemoveDir(dir, error)) return false;
          written_.erase(it);
        }
        continue;
      }
      if (it == written_.end()) {
        if (!RemoveDir(dir, error) || !InstallDir(dir, files, error)) {
          return false;
        }
        written_[dir] = std::move(files);
        continue;
      }
      Files& old = it->second;
      for (const auto& [path, data] : files) {
        auto o = old.find(path);
        if (o != old.end() && o->second == data) continue;
        if (!WriteAtomic(dir + "/" + path, data, error)) return false;
        old[path] = data;
      }
    }
  }
  return RenderJobs(cluster, error);
}

bool SysfsRenderer::RenderJobs(const Cluster& cluster, std::string* error) {
  const auto dirs =
      JobDirs(cluster.config().timeline,
              static_cast<int>(cluster.hosts().size()), host_, cluster.now());
  // Ended: cgroups first ("fs/" sorts before "proc/").
  for (auto it = jobs_written_.begin(); it != jobs_written_.end();) {
    if (dirs.count(*it)) {
      ++it;
      continue;
    }
    if (!RemoveDir(*it, error)) return false;
    it = jobs_written_.erase(it);
  }
  // Started: tasks first.
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    if (jobs_written_.count(it->first)) continue;
    if (!RemoveDir(it->first, error) ||
        !InstallDir(it->first, it->second, error)) {
      return false;
    }
    jobs_written_.insert(it->first);
  }
  return true;
}

bool SysfsRenderer::RenderDumps(const Cluster& cluster, const Device& device,
                                std::string* error) {
  // A removed HCA's netdev is gone: no dumps, so readers see ENODEV (ethtool)
  // or "no DCB" (the device is gone from class/ anyway).
  std::optional<std::string> ethtool, link, dcb, eeprom;
  if (device.present) {
    const EthtoolResult stats = SimEthtoolStats(cluster, host_, device.netdev);
    if (!stats.ok()) return true;  // not this host's netdev
    ethtool = EthtoolText(*stats);
    link = SimEthtoolLinkText(cluster, host_, device.netdev);
    dcb = SimDcbText(cluster, host_, device.netdev);
    eeprom = SimModuleEepromText(cluster, host_, device.netdev);
  }
  return RenderDump(kEthtoolDir, device.netdev, ethtool ? &*ethtool : nullptr,
                    &ethtool_written_, error) &&
         RenderDump(kEthtoolDir, device.netdev + ".link",
                    link ? &*link : nullptr, &link_written_, error) &&
         RenderDump(kDcbDir, device.netdev, dcb ? &*dcb : nullptr,
                    &dcb_written_, error) &&
         RenderDump(kEepromDir, device.netdev, eeprom ? &*eeprom : nullptr,
                    &eeprom_written_, error);
}

bool SysfsRenderer::RenderDump(const char* dir, const std::string& netdev,
                               const std::string* text,
                               std::map<std::string, std::string>* written,
                               std::string* error) {
  const std::string relative = std::string(dir) + "/" + netdev;
  auto it = written->find(netdev);
  if (text == nullptr) {
    if (it != written->end()) {
      if (::unlink((root_ / relative).c_str()) != 0 && errno != ENOENT) {
        *error = "unlink " + (root_ / relative).string() + ": " +
                 std::strerror(errno);
        return false;
      }
      written->erase(it);
    }
    return true;
  }
  if (it != written->end() && it->second == *text) return true;
  std::error_code ec;
  fs::create_directories(root_ / dir, ec);
  if (ec) {
    *error = "mkdir " + (root_ / dir).string() + ": " + ec.message();
    return false;
  }
  if (!WriteAtomic(relative, *text, error)) return false;
  (*written)[netdev] = *text;
  return true;
}

void SysfsRenderer::Remove() {
  std::error_code ec;
  fs::remove_all(root_, ec);
  written_.clear();
  ethtool_written_.clear();
  link_written_.clear();
  dcb_written_.clear();
  eeprom_written_.clear();
  jobs_written_.clear();
}

}  // namespace fabric::sim
