#include "benchtool/run_info.h"

#include <cctype>
#include <cstdlib>
#include <ctime>

#include "sources/port_map.h"

namespace fabric::bench {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.pop_back();
  }
  std::size_t start = 0;
  while (start < s.size() &&
         std::isspace(static_cast<unsigned char>(s[start]))) {
    ++start;
  }
  return s.substr(start);
}

// A one-line attribute; "unknown" when missing, unreadable or empty.
std::string Attr(const Sysfs& sysfs, const std::string& path) {
  ReadResult r = sysfs.Read(path);
  if (!r.ok()) return "unknown";
  std::string v = Trimmed(r.value());
  // Some attributes end in a blank line ("InfiniBand\n\n"): first line only.
  v = v.substr(0, v.find('\n'));
  return v.empty() ? "unknown" : v;
}

// A leading decimal number and the rest of the text after it.
bool LeadingNumber(const std::string& text, double* v, std::string* rest) {
  const char* begin = text.c_str();
  char* end = nullptr;
  *v = std::strtod(begin, &end);
  if (end == begin || *v < 0) return false;
  *rest = Trimmed(end);
  return true;
}

}  // namespace

void ReadSlurmAllocation(const std::function<const char*(const char*)>& getenv,
                         RunInfo* info) {
  auto var = [&](const char* name) {
    const char* v = getenv(name);
    return std::string(v ? v : "");
  };
  info->slurm_job_id = var("SLURM_JOB_ID");
  info->slurm_job_name = var("SLURM_JOB_NAME");
  info->slurm_job_nodelist = var("SLURM_JOB_NODELIST");
}

std::vector<DeviceInfo> ReadDevices(const Sysfs& sysfs) {
  std::vector<DeviceInfo> out;
  auto devices = sysfs.List("class/infiniband");
  if (!devices) return out;
  const auto reader = sysfs.NewReader();
  reader->Begin();
  for (const auto& dev : *devices) {
    const std::string dir = "class/infiniband/" + dev;
    DeviceInfo d;
    d.name = dev;
    d.hca_model = Attr(sysfs, dir + "/hca_type");
    d.board_id = Attr(sysfs, dir + "/board_id");
    d.firmware = Attr(sysfs, dir + "/fw_ver");
    auto ports = sysfs.List(dir + "/ports");
    for (const auto& port : ports ? *ports : std::vector<std::string>{}) {
      const std::string pdir = dir + "/ports/" + port;
      PortInfo p;
      p.port = port;
      p.link_layer = Attr(sysfs, pdir + "/link_layer");
      p.rate = Attr(sysfs, pdir + "/rate");
      p.state = Attr(sysfs, pdir + "/state");
      // A RoCE port's MTU is its netdev's; an IB port's active MTU is only
      // in a PortInfo MAD or ibv_query_port, not in sysfs.
      p.mtu = "unknown";
      // The port's primary netdev (sources/port_map.h).
      const std::string ndev =
          ReadPortNetdevs(*reader, dev, port,
                          p.link_layer == "unknown" ? "" : p.link_layer)
              .Primary();
      if (!ndev.empty()) p.mtu = Attr(sysfs, "class/net/" + ndev + "/mtu");
      d.ports.push_back(std::move(p));
    }
    out.push_back(std::move(d));
  }
  return out;
}

double ParseTcRate(const std::string& text) {
  double v;
  std::string unit;
  if (!LeadingNumber(Trimmed(text), &v, &unit)) return 0;
  for (char& c : unit) c = static_cast<char>(std::tolower(c));
  struct U {
    const char* name;
    double bytes;
  };
  static const U kUnits[] = {
      {"", 1 / 8.0},
      {"bit", 1 / 8.0},
      {"kbit", 1e3 / 8},
      {"mbit", 1e6 / 8},
      {"gbit", 1e9 / 8},
      {"tbit", 1e12 / 8},
      {"bps", 1},
      {"kbps", 1e3},
      {"mbps", 1e6},
      {"gbps", 1e9},
      {"tbps", 1e12},
      {"kibit", 1024 / 8.0},
      {"mibit", 1048576 / 8.0},
      {"gibit", 1073741824 / 8.0},
  };
  for (const auto& u : kUnits) {
    if (unit == u.name) return v * u.bytes;
  }
  return 0;
}

double ParseSysfsRate(const std::string& text) {
  double v;
  std::string rest;
  if (!LeadingNumber(text, &v, &rest) || rest.rfind("Gb/sec", 0) != 0) {
    return 0;
  }
  return v * 1e9 / 8;
}

std::string IsoTime(std::chrono::system_clock::time_point t) {
  std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

}  // namespace fabric::bench
