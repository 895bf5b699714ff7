// Pure functions of the gnmi collector (collectors/gnmi_switch.h): what one
// gNMI Notification from an Ethernet switch says about its ports, in
// fabricmon's schema. Tested on protobuf messages built in the test
// (tests/unit/gnmi_parse_test.cc).
//
// The paths (docs/gnmi.md has each with its source): OpenConfig interfaces
// (/interfaces/interface[name]/state/counters/*, .../state/oper-status,
// .../ethernet/state/port-speed), OpenConfig QoS as Cumulus Linux serves it
// (/qos/interfaces/interface[interface-id]/output/queues/queue[name]/state/*
// and .../switch-priority[priority]/state/...) and OpenConfig LLDP
// (/lldp/interfaces/interface[name]/neighbors/neighbor[id]/state/*). A full
// path is the Notification's prefix followed by the Update's path; origin
// and target are ignored. Anything else is counted as unknown, never fatal.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The generated messages (proto/gnmi, fabric_gnmi_proto), declared only:
// the collector's threading code includes this header without them.
namespace gnmi {
class Notification;
class Path;
}  // namespace gnmi

namespace fabric::gnmi_switch {

// One series of one switch port: the family (`metric`, static storage)
// and its labels besides switch/port: at most one whose value comes from
// the path (queue, priority: `key_label` = `key_value`) and one fixed by
// the leaf (error, direction: `fixed_label` = `fixed_value`, static
// storage). Compact on purpose: 64 switches x 64 ports stream ~100k of
// these a second (docs/measurements.md), and short values fit std::string's
// inline buffer, so parsing and storing one allocates nothing.
struct SeriesKey {
  std::string_view metric;
  std::string port;
  std::string_view key_label;
  std::string key_value;
  std::string_view fixed_label;
  std::string_view fixed_value;
  // The static names are compared by address: a series' leaf always
  // hands over the same copy, so equal series compare equal.
  bool operator<(const SeriesKey& o) const {
    std::less<const char*> before;
    if (metric.data() != o.metric.data())
      return before(metric.data(), o.metric.data());
    if (port != o.port) return port < o.port;
    if (key_value != o.key_value) return key_value < o.key_value;
    return before(fixed_value.data(), o.fixed_value.data());
  }
};

struct PortValue {
  SeriesKey key;
  double value = 0;
};

// One leaf of an LLDP neighbour of `port` (the neighbour's `id` key):
// field is the leaf name (system-name, port-id, port-description,
// chassis-id).
struct LldpLeaf {
  std::string port;
  std::string neighbor_id;
  std::string field;
  std::string value;
};

struct ParsedNotification {
  std::vector<PortValue> values;
  std::vector<LldpLeaf> lldp;
  // Ports whose whole subtree the target deleted (the interface is gone).
  std::vector<std::string> deleted_ports;
  // Updates not turned into a value: a path fabricmon does not read, or a
  // value of the wrong kind ("unknown_path", "bad_value").
  int unknown_paths = 0;
  int bad_values = 0;
};

ParsedNotification ParseNotification(const gnmi::Notification& notification);

// "/a/b[k=v]/c" of a path (for logs and tests).
std::string PathString(const gnmi::Path& prefix, const gnmi::Path& path);

// OpenConfig port-speed: an identity "SPEED_400GB", "SPEED_2500MB" (with or
// without the "openconfig-if-ethernet:" module prefix), or a number of Mb/s
// (Cumulus Linux documents the leaf in units of 10^6 bit/s). Bytes per
// second; false when it is neither.
bool ParsePortSpeed(const std::string& text, double* bytes_per_second);

}  // namespace fabric::gnmi_switch
