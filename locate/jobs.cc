#include "locate/jobs.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace fabric::locate {

namespace {

std::string Label(const PromSample& s, const std::string& name) {
  const auto it = s.labels.find(name);
  return it == s.labels.end() ? "" : it->second;
}

// A job ID as a number; nullopt when it is not one.
std::optional<unsigned long long> Numeric(const std::string& id) {
  unsigned long long v = 0;
  const auto r = std::from_chars(id.data(), id.data() + id.size(), v);
  if (r.ec != std::errc() || r.ptr != id.data() + id.size())
    return std::nullopt;
  return v;
}

// Slurm job IDs are numbers; "900" sorts before "4711".
bool JobBefore(const Job& a, const Job& b) {
  const auto x = Numeric(a.job_id), y = Numeric(b.job_id);
  if (x && y && *x != *y) return *x < *y;
  return a < b;
}

}  // namespace

std::string HostOf(const std::string& address) {
  if (address.starts_with("[")) {
    const auto close = address.find(']');
    return close == std::string::npos ? address : address.substr(1, close - 1);
  }
  // One colon: host:port. None, or several (a bare IPv6 address): as is.
  const auto colon = address.find(':');
  if (colon == std::string::npos ||
      address.find(':', colon + 1) != std::string::npos) {
    return address;
  }
  return address.substr(0, colon);
}

std::string ProberHost(const std::string& prober_labels) {
  // "k=v,k=v": label values never hold ',' in a prober key's instance
  // (host:port), so the first "instance=" field up to ',' is it.
  std::size_t at = 0;
  while (at < prober_labels.size()) {
    const auto end = prober_labels.find(',', at);
    const std::string field = prober_labels.substr(
        at, end == std::string::npos ? std::string::npos : end - at);
    if (field.starts_with("instance=")) return HostOf(field.substr(9));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

std::vector<Job> JobsOnHosts(const std::vector<PromSample>& samples,
                             const std::set<std::string>& hosts) {
  std::vector<Job> out;
  for (const PromSample& s : samples) {
    const std::string id = Label(s, "job_id");
    if (id.empty()) continue;
    if (!hosts.count(HostOf(Label(s, "instance"))) &&
        !hosts.count(Label(s, "host"))) {
      continue;
    }
    out.push_back({id, Label(s, "user"), Label(s, "job_name")});
  }
  std::sort(out.begin(), out.end(), JobBefore);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string JobsText(const std::vector<Job>& jobs) {
  std::string out;
  for (const Job& j : jobs) {
    if (!out.empty()) out += ", ";
    out += j.job_id + " (" + j.user;
    if (!j.job_name.empty()) out += ": " + j.job_name;
    out += ")";
  }
  return out;
}

}  // namespace fabric::locate
