#include "daemon/fd_limit.h"

#include <dirent.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <limits>

namespace fabric {
namespace {

std::size_t Soft(const rlimit& limit) {
  return limit.rlim_cur == RLIM_INFINITY
             ? std::numeric_limits<std::size_t>::max()
             : static_cast<std::size_t>(limit.rlim_cur);
}

std::optional<std::size_t> CountProcSelfFd() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::size_t n = 0;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // the directory's own descriptor
}

prometheus::MetricFamily Gauge(const char* name, const char* help,
                               double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric metric;
  metric.gauge.value = value;
  family.metric.push_back(std::move(metric));
  return family;
}

}  // namespace

FdOs RealFdOs() {
  FdOs os;
  os.get_limit = [](rlimit* limit) {
    return ::getrlimit(RLIMIT_NOFILE, limit) == 0 ? 0 : errno;
  };
  os.set_limit = [](const rlimit& limit) {
    return ::setrlimit(RLIMIT_NOFILE, &limit) == 0 ? 0 : errno;
  };
  os.count_open = CountProcSelfFd;
  return os;
}

std::size_t RaiseFdLimit(const FdOs& os) {
  rlimit limit{};
  if (const int error = os.get_limit(&limit); error != 0) {
    spdlog::warn("cannot read the descriptor limit: {}; assuming 1024",
                 std::strerror(error));
    return 1024;
  }
  if (limit.rlim_cur == limit.rlim_max) {
    spdlog::info("descriptor limit {}", Soft(limit));
    return Soft(limit);
  }
  rlimit raised = limit;
  raised.rlim_cur = limit.rlim_max;
  if (const int error = os.set_limit(raised); error != 0) {
    spdlog::warn(
        "cannot raise the descriptor limit from {} to the hard limit {}: {}; "
        "keeping {}",
        Soft(limit), Soft(raised), std::strerror(error), Soft(limit));
    return Soft(limit);
  }
  spdlog::info("descriptor limit raised from {} to {}", Soft(limit),
               Soft(raised));
  return Soft(raised);
}

FdMetrics::FdMetrics(FdOs os, std::shared_ptr<const FdBudget> budget,
                     std::shared_ptr<prometheus::Collectable> also)
    : os_(std::move(os)), budget_(std::move(budget)), also_(std::move(also)) {}

std::vector<prometheus::MetricFamily> FdMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> out =
      also_ ? also_->Collect() : std::vector<prometheus::MetricFamily>();
  if (auto open = os_.count_open()) {
    out.push_back(Gauge("fabric_daemon_open_fds",
                        "Descriptors open in the fabricmon process.",
                        static_cast<double>(*open)));
  }
  rlimit limit{};
  if (os_.get_limit(&limit) == 0) {
    out.push_back(Gauge("fabric_daemon_max_fds",
                        "The process's descriptor limit (soft "
                        "RLIMIT_NOFILE).",
                        static_cast<double>(Soft(limit))));
  }
  out.push_back(Gauge("fabric_daemon_kept_fds",
                      "Descriptors the sysfs readers keep open between "
                      "collections.",
                      static_cast<double>(budget_->used())));
  out.push_back(Gauge("fabric_daemon_kept_fds_budget",
                      "The most descriptors the sysfs readers may keep open "
                      "(the limit less a reserve); beyond it they read with "
                      "open/read/close.",
                      static_cast<double>(budget_->size())));
  return out;
}

}  // namespace fabric
