#include "collectors/series_names.h"

#include <initializer_list>
#include <span>

#include "collectors/hw_counters.h"
#include "collectors/opensm_parse.h"
#include "core/metric_names.h"

namespace fabric {
namespace {

// PortCounters' error fields, as sysfs counters/ files and as the sweep's
// `error` values: kSwitchPortErrorNames (collectors/opensm_parse.h), and
// port_rcv_discards, which some kernels add.
constexpr std::string_view kPortRcvDiscards[] = {"port_rcv_discards"};

// The counters/ and counters_ext/ files with a metric of their own
// (collectors/ib_port.cc), and port_xmit_wait's saturation flag.
constexpr std::string_view kPortCounters[] = {
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
    "port_xmit_wait",
    "port_xmit_data_64",
    "port_rcv_data_64",
    "port_xmit_packets_64",
    "port_rcv_packets_64",
    "port_unicast_xmit_packets",
    "port_unicast_rcv_packets",
    "port_multicast_xmit_packets",
    "port_multicast_rcv_packets",
};

// mlx5's hw_counters/ files (drivers/infiniband/hw/mlx5/counters.c) besides
// the 32-bit Q-counters (collectors/hw_counters.h): the congestion and
// extended PPCNT sets. Other drivers' names are exported as well; they are
// just not known here.
constexpr std::string_view kHwCounters64[] = {
    "rx_icrc_encapsulated",       "rp_cnp_ignored", "rp_cnp_handled",
    "np_ecn_marked_roce_packets", "np_cnp_sent",
};

// mlx5's optional counters that RDMA netlink shows once enabled
// (`rdma statistic set ... optional-counters`).
constexpr std::string_view kOptionalCounters[] = {
    "cc_rx_ce_pkts",
    "cc_rx_cnp_pkts",
    "cc_tx_cnp_pkts",
};

using NameList = std::span<const std::string_view>;

// The collector's families as docs/metrics.md lists them under its section
// (core/metric_names.h), then the counter names its labels carry.
std::vector<std::string> Names(std::string_view collector,
                               std::initializer_list<NameList> counters) {
  std::vector<std::string> out = DocumentedFamilies(collector);
  for (NameList names : counters)
    out.insert(out.end(), names.begin(), names.end());
  return out;
}

}  // namespace

std::vector<std::string> KnownSeries(std::string_view collector) {
  if (collector == "ib_port") {
    return Names(collector,
                 {kSwitchPortErrorNames, kPortRcvDiscards, kPortCounters});
  }
  if (collector == "hw_counters") {
    return Names(collector, {QCounter32Names(), kHwCounters64});
  }
  if (collector == "roce") return Names(collector, {kOptionalCounters});
  if (collector == "fabric") return Names(collector, {kSwitchPortErrorNames});
  return {};
}

}  // namespace fabric
