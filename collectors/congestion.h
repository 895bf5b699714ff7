// The `congestion` collector: polled fast (the daemon's
// `collectors.congestion.interval`, recommended 100 ms, at most 1 s) and
// exporting per-port *peaks* over a sliding window, so a 15-30 s scrape
// still sees a 300 ms all-reduce hotspot. See docs/congestion.md.
//
// Each poll reads only the few files it needs per port (each sysfs counter
// read is a PerfMgt MAD to the HCA firmware):
//   counters/port_xmit_data, counters/port_rcv_data, counters/port_xmit_wait,
//   hw_counters/rp_cnp_handled, hw_counters/np_cnp_sent (when present),
//   and `rate` (re-read every `rate_refresh_seconds`, at a publish).
// Which of those files exist is probed once per port, when the port first
// appears. A sample between two publishes reads only the counters that are
// hot (moved in the last window by at least `quiet_ratio` of a sample
// interval, collectors/congestion_window.h); the rest are read at the
// publishes (1 s), and while no counter is hot and no PFC netdev is watched,
// Samples() is false and the daemon wakes the collector only to publish.
// Devices and ports are listed at each publish (Collect); the samples in
// between poll the ports that listing found. Reads and listings go through the
// collector's SysfsReader, which keeps descriptors and listings between polls
// on real trees (sources/sysfs.h). A sample builds no strings and allocates
// nothing: it walks a flat array of the ports and reads each file through its
// SysfsReader::Keep() handle into a stack buffer (one pread on a kept
// descriptor); paths, labels and handles are made per port once. Devices and
// ports that vanish lose their history; those that (re)appear start a new
// baseline.
//
// Devices and ports come from the shared walk (sources/ib_walk.h).
//
// PFC: for each netdev behind an Ethernet (RoCE) port (found with the roce
// collector's DiscoverRoceNetdevs when the port set changes), one ethtool
// statistics read per poll through an EthtoolSource gives
// {rx,tx}_prio<p>_pause_duration (microseconds), whose per-interval share of
// time is the PFC pause peak. mlx5 has no PFC counters in sysfs. Only
// netdevs present in class/net/ of the tree are read, unless the source is
// file-backed (CongestionOptions.ethtool_is_kernel false, config
// `ethtool_dir`): its dumps belong to the tree, no host interface is read.
//
// Thread-safety: one Collect() at a time per instance (collector contract).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectors/collector.h"
#include "collectors/congestion_window.h"
#include "sources/ethtool_source.h"
#include "sources/ib_walk.h"

namespace fabric {

// The default share of a sample interval a counter must fill to be read
// at every sample (CongestionOptions::quiet_ratio): 5 % is the first bucket
// of the congestion dashboards' peak heatmaps (ceil(ratio x 20)), so a
// counter read slow lands in the bucket it would have read fast.
inline constexpr double kCongestionQuietRatio = 0.05;

// `collectors.congestion` keys of its own (see docs/congestion.md for what
// the tick is and why it is an assumption).
struct CongestionSettings {
  // `window`: the sliding window the exported peaks cover.
  double window_seconds = 60.0;
  // `xmit_wait_tick_ns`: the duration of one port_xmit_wait tick.
  double xmit_wait_tick_seconds = 256e-9;
  // `fast_read_ratio`: CongestionOptions::quiet_ratio.
  double quiet_ratio = kCongestionQuietRatio;
  bool operator==(const CongestionSettings&) const = default;
};

struct CongestionOptions {
  DeviceFilter devices;
  // Sliding window the peaks are taken over.
  double window_seconds = CongestionSettings{}.window_seconds;
  // Duration of one port_xmit_wait tick. The IB spec defines the tick as
  // (PortSamplesControl.Tick + 1) x symbol time (4 ns at SDR); it is not in
  // sysfs (read it with `perfquery -c <lid> <port>`) and NVIDIA notes the
  // increment behaviour varies by device generation. Default: 256 ns
  // (Tick = 63, 64 x 4 ns), the same assumption the simulator renders
  // (simulator/model.h kXmitWaitTickSeconds) and the recording rule
  // fabric:config:xmit_wait_tick_seconds uses; see docs/congestion.md.
  // Config: collectors.congestion.xmit_wait_tick_ns.
  double xmit_wait_tick_seconds = CongestionSettings{}.xmit_wait_tick_seconds;
  // How often the `rate` attribute is re-read (it changes only when the
  // link retrains).
  double rate_refresh_seconds = 10.0;
  // False when the EthtoolSource does not ask the running kernel (the
  // file-backed source): the class/net filter, which keeps a recorded tree
  // from reading a same-named host interface, is then not needed.
  bool ethtool_is_kernel = true;
  // How often the daemon publishes the peaks (Collect) while it samples
  // every interval (Sample): a peak reaches /metrics at most this late.
  std::chrono::microseconds publish_interval = std::chrono::seconds(1);
  // The sample interval (the daemon's collectors.congestion.interval) and
  // the share of one sample interval a counter must fill (line-rate
  // traffic, transmit wait) to be read at every sample for the next window
  // (congestion_window.h FastReads). 0: every counter at every sample.
  double sample_seconds = 0.1;
  double quiet_ratio = kCongestionQuietRatio;
};

// Recommended poll interval for this collector (the daemon's config sets
// it: collectors.congestion.interval).
inline constexpr std::chrono::milliseconds kCongestionRecommendedInterval{100};

class CongestionCollector final : public Collector {
 public:
  // `ethtool` may be null: no PFC peaks.
  CongestionCollector(CollectorEnv env, CongestionOptions options,
                      MonotonicClock clock,
                      std::unique_ptr<EthtoolSource> ethtool = nullptr);
  std::string_view Name() const override { return "congestion"; }
  bool Collect(MetricSink& sink) override;
  // Polls without emitting (the daemon calls it between publishes).
  void Sample() override;
  std::chrono::microseconds PublishInterval() const override {
    return options_.publish_interval;
  }
  // False while no counter is hot and no PFC netdev is watched: nothing to
  // read between publishes.
  bool Samples() const override { return sampling_; }

 private:
  // One port's state. The paths and labels are built once, when the port
  // appears, so a poll (100 ms) builds no strings.
  struct Port {
    Port(const std::string& device, const std::string& ports_dir,
         const std::string& port, PortWindow w);
    std::string dir;           // class/infiniband/<dev>/ports/<n>
    std::string counters_dir;  // dir + "/counters"
    std::string hw_dir;        // dir + "/hw_counters"
    Labels labels;             // {device, port}
    bool has_xmit_data = false, has_rcv_data = false, has_xmit_wait = false;
    bool has_cnp_handled = false, has_cnp_sent = false;
    // The reader's handles of the files above and `rate` (Probe).
    SysfsReader::KeptFile xmit_data = 0, rcv_data = 0, xmit_wait = 0,
                          cnp_handled = 0, cnp_sent = 0, rate_file = 0;
    std::optional<double> rate;
    double rate_read_at = -1e300;
    std::uint64_t seen = 0;  // the collection that last listed it
    PortWindow window;
  };
  struct Device {
    std::string ports_dir;  // class/infiniband/<dev>/ports
    std::map<std::string, Port, std::less<>> ports;
  };

  // PFC pause windows of one netdev, per (priority, direction).
  struct Netdev {
    std::string device, port;
    std::map<std::pair<int, int>, CounterPeakWindow> pause;
  };

  bool CollectImpl(MetricSink& sink, bool emit);
  void Probe(Port& port);
  // Reads the counters in `polled` (CounterBit()s) that the port has, and
  // `rate` when due on a publish. Skips go to `sink` when given (a
  // publish); a sample's are not reported.
  CongestionSample Poll(Port& port, double now, std::uint8_t polled,
                        MetricSink* sink);
  // Whether any port has a hot counter at `now` or a PFC netdev is watched.
  bool NeedsSamples(double now) const;
  void PollPfc(MetricSink& sink);
  void EmitPfc(double now, MetricSink& sink);

  CollectorEnv env_;
  CongestionOptions options_;
  MonotonicClock clock_;
  std::unique_ptr<EthtoolSource> ethtool_;
  // Reads of every poll; kept descriptors on real trees (sources/sysfs.h).
  std::unique_ptr<SysfsReader> reader_;
  // The device/port walk of the latest poll, its storage reused by the next.
  IbPortList walk_;
  std::map<std::string, Device, std::less<>> devices_;  // by device name
  // The ports of devices_ in walk order, rebuilt at each walk: what a
  // sample loops over (a flat array, not two levels of map nodes).
  std::vector<Port*> sample_ports_;
  std::uint64_t generation_ = 0;  // walks so far
  bool walked_ = false;           // Sample() walks only until the first walk
  bool ports_changed_ = true;
  bool sampling_ = true;                   // Samples()
  std::map<std::string, Netdev> netdevs_;  // by netdev name
};

// Factory: the config's devices and settings, env's clock and ethtool
// source.
std::unique_ptr<Collector> MakeCongestionCollector(
    const CollectorEnv& env, const CollectorConfig& config);
// The registry row (keys `window`, `xmit_wait_tick_ns`, `fast_read_ratio`;
// defaults 100 ms
// interval, 1 s timeout).
CollectorSpec CongestionCollectorSpec();

}  // namespace fabric
