#include "collectors/congestion.h"

#include <algorithm>
#include <exception>
#include <iterator>

#include "collectors/roce.h"
#include "config/duration.h"
#include "config/yaml_keys.h"
#include "sources/ethtool_file.h"
#include "sources/ethtool_ioctl.h"
#include "sources/ethtool_parse.h"
#include "sources/ib_walk.h"
#include "sources/sysfs_parse.h"

namespace fabric {

CongestionCollector::CongestionCollector(CollectorEnv env,
                                         CongestionOptions options,
                                         MonotonicClock clock,
                                         std::unique_ptr<EthtoolSource> ethtool)
    : env_(std::move(env)),
      options_(options),
      clock_(clock ? std::move(clock) : MonotonicClock(SteadySeconds)),
      ethtool_(std::move(ethtool)) {}

bool CongestionCollector::Collect(MetricSink& sink) {
  return CollectImpl(sink, /*emit=*/true);
}

void CongestionCollector::Sample() {
  // Skips of a sample are not reported: the next publish reads the same
  // files and counts its own.
  if (!walked_ || !reader_) {
    MetricSink scratch;
    CollectImpl(scratch, /*emit=*/false);
    return;
  }
  const double now = clock_();
  reader_->BeginSample();
  // A sample polls the ports the last publish's walk found: the walk
  // (listing class/infiniband and every device's ports/) is as much work as
  // the reads, and a port that comes or goes is seen within one publish
  // interval. A vanished port's reads fail quietly here (no interval, no
  // bogus value); the next walk forgets it.
  // Only the hot counters: a quiet one waits for the next publish
  // (congestion_window.h).
  for (Port* port : sample_ports_) {
    std::uint8_t hot = 0;
    for (int c = 0; c < kCongestionCounters; ++c) {
      const auto counter = static_cast<CongestionCounter>(c);
      if (port->window.Hot(counter, now)) hot |= CounterBit(counter);
    }
    if (hot) port->window.Add(Poll(*port, now, hot, nullptr));
  }
  if (ethtool_) {
    MetricSink scratch;
    PollPfc(scratch);
  }
  sampling_ = NeedsSamples(clock_());
}

bool CongestionCollector::NeedsSamples(double now) const {
  if (!netdevs_.empty()) return true;
  for (const Port* port : sample_ports_) {
    for (int c = 0; c < kCongestionCounters; ++c) {
      if (port->window.Hot(static_cast<CongestionCounter>(c), now)) {
        return true;
      }
    }
  }
  return false;
}

CongestionCollector::Port::Port(const std::string& device,
                                const std::string& ports_dir,
                                const std::string& port, PortWindow w)
    : dir(ports_dir + "/" + port),
      counters_dir(dir + "/counters"),
      hw_dir(dir + "/hw_counters"),
      labels{{"device", device}, {"port", port}},
      window(w) {}

void CongestionCollector::Probe(Port& p) {
  // Probe once which files exist, so each fast poll reads only those.
  auto has = [&](const std::string& dir, std::string_view name) {
    const auto* names = reader_->List(dir, /*stable=*/true, nullptr);
    // A linear search, once per port: test fakes do not all sort.
    return names != nullptr &&
           std::find(names->begin(), names->end(), name) != names->end();
  };
  p.has_xmit_data = has(p.counters_dir, "port_xmit_data");
  p.has_rcv_data = has(p.counters_dir, "port_rcv_data");
  p.has_xmit_wait = has(p.counters_dir, "port_xmit_wait");
  p.has_cnp_handled = has(p.hw_dir, "rp_cnp_handled");
  p.has_cnp_sent = has(p.hw_dir, "np_cnp_sent");
  p.xmit_data = reader_->Keep(p.counters_dir, "port_xmit_data");
  p.rcv_data = reader_->Keep(p.counters_dir, "port_rcv_data");
  p.xmit_wait = reader_->Keep(p.counters_dir, "port_xmit_wait");
  p.cnp_handled = reader_->Keep(p.hw_dir, "rp_cnp_handled");
  p.cnp_sent = reader_->Keep(p.hw_dir, "np_cnp_sent");
  p.rate_file = reader_->Keep(p.dir, "rate");
}

CongestionSample CongestionCollector::Poll(Port& port, double now,
                                           std::uint8_t polled,
                                           MetricSink* sink) {
  // Counters are short ("18446744073709551615\n" is 21 bytes); a longer
  // content fails the read (EOVERFLOW) and counts as unreadable.
  char buf[64];
  auto read_counter =
      [&](CongestionCounter c, bool present, SysfsReader::KeptFile file,
          const std::string& dir,
          std::string_view name) -> std::optional<std::uint64_t> {
    if (!present || !(polled & CounterBit(c))) return std::nullopt;
    const auto r = reader_->ReadKept(file, buf);
    const auto v = r.ok() ? ParseU64(*r) : Parsed<std::uint64_t>{};
    if (!v.ok()) {
      if (sink) sink->Skip(dir + "/" + std::string(name));
      return std::nullopt;
    }
    return v.value;
  };
  CongestionSample s;
  s.polled = polled;
  s.xmit_data_words =
      read_counter(kXmitData, port.has_xmit_data, port.xmit_data,
                   port.counters_dir, "port_xmit_data");
  s.rcv_data_words = read_counter(kRcvData, port.has_rcv_data, port.rcv_data,
                                  port.counters_dir, "port_rcv_data");
  s.xmit_wait_ticks =
      read_counter(kXmitWait, port.has_xmit_wait, port.xmit_wait,
                   port.counters_dir, "port_xmit_wait");
  s.cnp_handled = read_counter(kCnpHandled, port.has_cnp_handled,
                               port.cnp_handled, port.hw_dir, "rp_cnp_handled");
  s.cnp_sent = read_counter(kCnpSent, port.has_cnp_sent, port.cnp_sent,
                            port.hw_dir, "np_cnp_sent");
  // `rate` at publishes only (a sample reads the hot counters alone).
  if (sink && now - port.rate_read_at >= options_.rate_refresh_seconds) {
    const auto r = reader_->ReadKept(port.rate_file, buf);
    const auto rate = r.ok() ? ParseRate(*r) : Parsed<PortRate>{};
    port.rate =
        rate.ok() ? std::optional(rate.value.bytes_per_second) : std::nullopt;
    port.rate_read_at = now;
  }
  s.rate_bytes_per_second = port.rate;
  // Timestamp after the reads: with slow firmware the reads take a while,
  // and the end of the reads is closer to when the last value was latched.
  s.time_seconds = clock_();
  return s;
}

bool CongestionCollector::CollectImpl(MetricSink& sink, bool emit) {
  const double now = clock_();
  if (!reader_) reader_ = env_.sysfs->NewReader();
  reader_->Begin();
  walked_ = true;
  const std::uint64_t generation = ++generation_;
  // Quiet: a device that vanished between the two listings is left out.
  ListIbPorts(*reader_, options_.devices, /*skips=*/nullptr, walk_);
  for (const IbDevicePorts& walked : walk_.devices) {
    const std::string& name = walked.device;
    auto dev = devices_.find(name);
    if (dev == devices_.end()) {
      dev = devices_.emplace(name, Device{}).first;
      dev->second.ports_dir = walked.dir + "/ports";
    }
    Device& device = dev->second;
    for (const auto& port_name : walked.ports) {
      auto it = device.ports.find(port_name);
      if (it == device.ports.end()) {
        it = device.ports
                 .emplace(port_name,
                          Port(name, device.ports_dir, port_name,
                               PortWindow(options_.window_seconds,
                                          options_.xmit_wait_tick_seconds,
                                          {options_.sample_seconds,
                                           options_.quiet_ratio})))
                 .first;
        Probe(it->second);
        ports_changed_ = true;
      }
      Port& port = it->second;
      port.window.Add(Poll(port, now, kAllCongestionCounters, &sink));
      port.seen = generation;
    }
  }
  // Vanished devices/ports: forget them so a re-probed device starts a new
  // baseline instead of producing a bogus interval.
  for (auto dev = devices_.begin(); dev != devices_.end();) {
    if (std::erase_if(dev->second.ports, [&](const auto& kv) {
          return kv.second.seen != generation;
        })) {
      ports_changed_ = true;
    }
    dev = dev->second.ports.empty() ? devices_.erase(dev) : std::next(dev);
  }
  sample_ports_.clear();
  for (auto& [device_name, device] : devices_) {
    for (auto& [port_name, port] : device.ports) sample_ports_.push_back(&port);
  }
  if (ethtool_) PollPfc(sink);
  sampling_ = NeedsSamples(clock_());
  if (!emit) return true;

  const double end = clock_();
  sink.Gauge("fabric_congestion_window_seconds",
             "Length of the sliding window the congestion peak gauges cover.",
             {}, options_.window_seconds);
  sink.Gauge("fabric_congestion_xmit_wait_tick_seconds",
             "Duration of one port_xmit_wait tick assumed by "
             "fabric_port_transmit_wait_peak_ratio (config "
             "collectors.congestion.xmit_wait_tick_ns).",
             {}, options_.xmit_wait_tick_seconds);
  for (auto& [device_name, device] : devices_) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture
    // one in the lambda below.
    for (auto& entry : device.ports) {
      auto& port = entry.second;
      port.window.Expire(end);
      const CongestionPeaks p = port.window.Peaks(end);
      auto emit = [&](const char* name, const char* help,
                      const std::optional<double>& v) {
        if (v) sink.Gauge(name, help, port.labels, *v);
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
           "Peak over the window of the per-poll fraction of time the port "
           "had data to send but no credits (port_xmit_wait x tick / "
           "interval).",
           p.transmit_wait);
      emit("fabric_roce_cnp_handled_peak_per_second",
           "Peak over the window of per-poll CNPs handled per second "
           "(hw_counters/rp_cnp_handled).",
           p.cnp_handled_per_second);
      emit("fabric_roce_cnp_sent_peak_per_second",
           "Peak over the window of per-poll CNPs sent per second "
           "(hw_counters/np_cnp_sent).",
           p.cnp_sent_per_second);
      if (const auto waited = port.window.wait_seconds_total()) {
        sink.Counter("fabric_port_transmit_wait_seconds_total",
                     "Seconds the port had data to send but could not send "
                     "(port_xmit_wait x the assumed tick, "
                     "collectors.congestion.xmit_wait_tick_ns; summed over "
                     "the polls since the port appeared).",
                     port.labels, *waited);
      }
    }
  }
  EmitPfc(end, sink);
  // A missing subsystem is success with no samples; an unreadable one
  // (permission, I/O error) is a failure.
  if (walk_.error && walk_.error != std::errc::no_such_file_or_directory) {
    return false;
  }
  return true;
}

void CongestionCollector::PollPfc(MetricSink& sink) {
  if (ports_changed_) {
    // Rediscover only when ports came or went: discovery reads link_layer
    // and gid_attrs of every port, which is too much for every fast poll.
    std::map<std::string, Netdev> next;
    for (const RoceNetdev& t :
         DiscoverRoceNetdevs(*reader_, options_.devices)) {
      if (options_.ethtool_is_kernel &&
          !reader_->IsDirectory("class/net/" + t.netdev)) {
        continue;
      }
      auto old = netdevs_.find(t.netdev);
      next[t.netdev] = old != netdevs_.end() ? std::move(old->second)
                                             : Netdev{t.device, t.port, {}};
    }
    netdevs_ = std::move(next);
    ports_changed_ = false;
  }
  for (auto& [name, nd] : netdevs_) {
    const EthtoolResult r = ethtool_->Stats(name);
    const double t = clock_();
    if (!r.ok()) {
      sink.Skip("ethtool " + name + ": " + r.error().message());
      for (auto& [_, w] : nd.pause) w.Add(t, std::nullopt);
      continue;
    }
    if (r->skipped_lines > 0) {
      sink.Skip("ethtool " + name + ": " + std::to_string(r->skipped_lines) +
                " malformed line(s)");
    }
    const RoceEthtoolStats stats = ParseEthtoolStats(r->names, r->values);
    for (int p = 0; p < kPriorities; ++p) {
      for (int d : {kRx, kTx}) {
        const auto& v = stats.prio[p].pause_duration_us[d];
        auto it = nd.pause.find({p, d});
        if (!v && it == nd.pause.end()) continue;
        if (it == nd.pause.end()) {
          // microseconds paused per second of interval -> fraction of time
          it = nd.pause
                   .emplace(std::pair{p, d},
                            CounterPeakWindow(options_.window_seconds, 1e-6))
                   .first;
        }
        it->second.Add(t, v);
      }
    }
  }
}

void CongestionCollector::EmitPfc(double now, MetricSink& sink) {
  for (auto& [name, nd] : netdevs_) {
    for (auto& [key, window] : nd.pause) {
      window.Expire(now);
      const auto peak = window.Peak(now);
      if (!peak) continue;
      sink.Gauge("fabric_pfc_pause_peak_ratio",
                 "Peak over the window of the per-poll fraction of time the "
                 "priority was paused by PFC (ethtool "
                 "{rx,tx}_prio<p>_pause_duration, microseconds).",
                 {{"device", nd.device},
                  {"port", nd.port},
                  {"netdev", name},
                  {"priority", std::to_string(key.first)},
                  {"direction", DirectionName(key.second)}},
                 *peak);
    }
  }
}

std::unique_ptr<Collector> MakeCongestionCollector(
    const CollectorEnv& env, const CollectorConfig& config) {
  const auto& settings = SettingsAs<CongestionSettings>(config);
  CongestionOptions options;
  options.devices = config.devices;
  options.window_seconds = settings.window_seconds;
  options.xmit_wait_tick_seconds = settings.xmit_wait_tick_seconds;
  options.quiet_ratio = settings.quiet_ratio;
  options.ethtool_is_kernel = env.ethtool_is_kernel;
  options.sample_seconds =
      std::chrono::duration<double>(config.interval).count();
  return std::make_unique<CongestionCollector>(
      env, options, env.clock, env.ethtool ? env.ethtool() : nullptr);
}

CollectorSpec CongestionCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "congestion";
  spec.interval = kCongestionRecommendedInterval;
  spec.timeout = std::chrono::seconds(1);
  spec.keys = {"window", "xmit_wait_tick_ns", "fast_read_ratio"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig& generic) {
    CongestionSettings settings;
    // The window's line, or the interval's when the default window is the
    // one too short.
    YAML::Mark window_mark = KeyMark(node, "interval");
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark&) {
                 if (key == "window") {
                   settings.window_seconds =
                       std::chrono::duration<double>(Duration(value, key_path))
                           .count();
                   window_mark = value.Mark();
                 } else if (key == "xmit_wait_tick_ns") {
                   // The IB tick is a multiple of the 4 ns SDR symbol time;
                   // fractions are allowed, up to 1 ms.
                   settings.xmit_wait_tick_seconds =
                       Number(value, key_path, 0, 1e6,
                              "a tick length in ns (a number in (0, 1e6], "
                              "e.g. 256)") *
                       1e-9;
                 } else if (key == "fast_read_ratio") {
                   // Number() excludes its lower bound; 0 is allowed.
                   settings.quiet_ratio =
                       Number(value, key_path, -1, 1,
                              "a share of one poll interval in [0, 1] (0: read "
                              "every counter at every poll)");
                   if (settings.quiet_ratio < 0) {
                     Fail(key_path, value.Mark(),
                          "must be in [0, 1] (0: read every counter at every "
                          "poll)");
                   }
                 }
               });
    // A peak needs at least two polls inside the window (a disabled
    // collector's settings are not used).
    const double interval =
        std::chrono::duration<double>(generic.interval).count();
    if (generic.enabled && settings.window_seconds < 2 * interval) {
      Fail(Join(path, "window"), window_mark,
           "must be at least two poll intervals (" +
               FormatDuration(generic.interval) + " x 2)");
    }
    return std::make_shared<SettingsOf<CongestionSettings>>(settings);
  };
  spec.make = MakeCongestionCollector;
  return spec;
}

}  // namespace fabric
