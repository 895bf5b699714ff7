#include "collectors/congestion.h"

#include <exception>
#include <set>

namespace fabric {
namespace {

constexpr char kRoot[] = "class/infiniband";

double SteadySeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CongestionCollector::CongestionCollector(CollectorEnv env,
                                         CongestionOptions options,
                                         MonotonicClock clock)
    : env_(std::move(env)),
      options_(options),
      clock_(clock ? std::move(clock) : MonotonicClock(SteadySeconds)) {}

bool CongestionCollector::Collect(MetricSink& sink) noexcept {
  try {
    return CollectImpl(sink);
  } catch (const std::exception& e) {
    sink.Skip(std::string("congestion: ") + e.what());
    return false;
  }
}

CongestionCollector::Port CongestionCollector::NewPort(const std::string& dir) {
  Port p{dir,
         PortWindow(options_.window_seconds, options_.xmit_wait_tick_seconds)};
  // Probe once which files exist, so each fast poll reads only those.
  auto present = [&](const std::string& sub) -> std::set<std::string> {
    auto names = env_.sysfs->List(dir + "/" + sub);
    if (!names) return {};
    return {names->begin(), names->end()};
  };
  const auto counters = present("counters");
  const auto hw = present("hw_counters");
  p.has_xmit_data = counters.count("port_xmit_data") > 0;
  p.has_rcv_data = counters.count("port_rcv_data") > 0;
  p.has_xmit_wait = counters.count("port_xmit_wait") > 0;
  p.has_cnp_handled = hw.count("rp_cnp_handled") > 0;
  p.has_cnp_sent = hw.count("np_cnp_sent") > 0;
  return p;
}

CongestionSample CongestionCollector::Poll(Port& port, double now,
                                           MetricSink& sink) {
  auto read_counter =
      [&](bool present,
          const std::string& file) -> std::optional<std::uint64_t> {
    if (!present) return std::nullopt;
    const auto r = env_.sysfs->Read(port.dir + "/" + file);
    auto v = r.ok() ? ParseCounter(r.data) : std::nullopt;
    if (!v) sink.Skip(port.dir + "/" + file);
    return v;
  };
  CongestionSample s;
  s.xmit_data_words =
      read_counter(port.has_xmit_data, "counters/port_xmit_data");
  s.rcv_data_words = read_counter(port.has_rcv_data, "counters/port_rcv_data");
  s.xmit_wait_ticks =
      read_counter(port.has_xmit_wait, "counters/port_xmit_wait");
  s.cnp_handled =
      read_counter(port.has_cnp_handled, "hw_counters/rp_cnp_handled");
  s.cnp_sent = read_counter(port.has_cnp_sent, "hw_counters/np_cnp_sent");
  if (now - port.rate_read_at >= options_.rate_refresh_seconds) {
    const auto r = env_.sysfs->Read(port.dir + "/rate");
    port.rate = r.ok() ? ParseRateBytesPerSecond(r.data) : std::nullopt;
    port.rate_read_at = now;
  }
  s.rate_bytes_per_second = port.rate;
  // Timestamp after the reads: with slow firmware the reads take a while,
  // and the end of the reads is closer to when the last value was latched.
  s.time_seconds = clock_();
  return s;
}

bool CongestionCollector::CollectImpl(MetricSink& sink) {
  const double now = clock_();
  std::error_code error;
  const auto devices = env_.sysfs->List(kRoot, &error);
  std::set<Key> seen;
  if (devices) {
    for (const auto& device : *devices) {
      if (!env_.devices.Allows(device)) continue;
      const std::string ports_dir =
          std::string(kRoot) + "/" + device + "/ports";
      const auto ports = env_.sysfs->List(ports_dir);
      if (!ports) continue;  // device vanished between the two lists
      for (const auto& port : *ports) {
        Key key{device, port};
        auto it = ports_.find(key);
        if (it == ports_.end()) {
          it = ports_.emplace(key, NewPort(ports_dir + "/" + port)).first;
        }
        it->second.window.Add(Poll(it->second, now, sink));
        seen.insert(key);
      }
    }
  }
  // Vanished devices/ports: forget them so a re-probed device starts a new
  // baseline instead of producing a bogus interval.
  std::erase_if(ports_, [&](const auto& kv) { return !seen.count(kv.first); });

  const double end = clock_();
  sink.Gauge("fabric_congestion_window_seconds",
             "Length of the sliding window the congestion peak gauges cover.",
             {}, options_.window_seconds);
  for (auto& [key, port] : ports_) {
    port.window.Expire(end);
    const CongestionPeaks p = port.window.Peaks(end);
    const Labels labels = {{"device", key.first}, {"port", key.second}};
    auto emit = [&](const char* name, const char* help,
                    const std::optional<double>& v) {
      if (v) sink.Gauge(name, help, labels, *v);
    };
    emit("fabric_port_transmit_utilization_peak_ratio",
         "Peak over the window of per-poll transmit utilisation "
         "(port_xmit_data x 4 / rate).",
         p.transmit_utilization);
    emit("fabric_port_receive_utilization_peak_ratio",
         "Peak over the window of per-poll receive utilisation "
         "(port_rcv_data x 4 / rate).",
         p.receive_utilization);
    emit("fabric_port_transmit_wait_peak_ratio",
         "Peak over the window of the per-poll fraction of time the port had "
         "data to send but no credits (port_xmit_wait x tick / interval).",
         p.transmit_wait);
    emit("fabric_roce_cnp_handled_peak_per_second",
         "Peak over the window of per-poll CNPs handled per second "
         "(hw_counters/rp_cnp_handled).",
         p.cnp_handled_per_second);
    emit("fabric_roce_cnp_sent_peak_per_second",
         "Peak over the window of per-poll CNPs sent per second "
         "(hw_counters/np_cnp_sent).",
         p.cnp_sent_per_second);
  }
  // A missing subsystem is success with no samples; an unreadable one
  // (permission, I/O error) is a failure.
  if (!devices && error != std::errc::no_such_file_or_directory) return false;
  return true;
}

std::unique_ptr<Collector> MakeCongestionCollector(const CollectorEnv& env) {
  return std::make_unique<CongestionCollector>(env, CongestionOptions{},
                                               MonotonicClock{});
}

}  // namespace fabric
