#include "collectors/gnmi_parse.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string_view>

#include "gnmi.pb.h"

namespace fabric::gnmi_switch {
namespace {

// One element of a full path, flattened.
struct Elem {
  std::string_view name;
  const google::protobuf::Map<std::string, std::string>* keys;
  std::string Key(const std::string& k) const {
    auto it = keys->find(k);
    return it == keys->end() ? std::string() : it->second;
  }
};

std::vector<Elem> Flatten(const gnmi::Path& prefix, const gnmi::Path& path) {
  std::vector<Elem> out;
  out.reserve(prefix.elem_size() + path.elem_size());
  for (const auto& e : prefix.elem()) out.push_back({e.name(), &e.key()});
  for (const auto& e : path.elem()) out.push_back({e.name(), &e.key()});
  return out;
}

bool Matches(const std::vector<Elem>& elems, std::size_t from,
             std::initializer_list<std::string_view> names) {
  if (elems.size() != from + names.size()) return false;
  std::size_t i = from;
  for (std::string_view n : names) {
    if (elems[i++].name != n) return false;
  }
  return true;
}

// A JSON scalar as json_val/json_ietf_val carry it: 12, "12" (RFC 7951
// encodes 64-bit integers as strings), 1.5.
bool JsonNumber(std::string_view text, double* out) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n'))
    text.remove_suffix(1);
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    text = text.substr(1, text.size() - 2);
  }
  if (text.empty()) return false;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() &&
         std::isfinite(*out);
}

// A counter or gauge value of any numeric kind the spec allows.
bool Number(const gnmi::TypedValue& v, double* out) {
  switch (v.value_case()) {
    case gnmi::TypedValue::kUintVal:
      *out = static_cast<double>(v.uint_val());
      return true;
    case gnmi::TypedValue::kIntVal:
      *out = static_cast<double>(v.int_val());
      return v.int_val() >= 0;
    case gnmi::TypedValue::kDoubleVal:
      *out = v.double_val();
      return std::isfinite(*out) && *out >= 0;
    case gnmi::TypedValue::kFloatVal:
      *out = v.float_val();
      return std::isfinite(*out) && *out >= 0;
    case gnmi::TypedValue::kDecimalVal: {
      const auto& d = v.decimal_val();
      if (d.precision() > 18) return false;
      *out = static_cast<double>(d.digits()) / std::pow(10.0, d.precision());
      return *out >= 0;
    }
    case gnmi::TypedValue::kJsonVal:
      return JsonNumber(v.json_val(), out) && *out >= 0;
    case gnmi::TypedValue::kJsonIetfVal:
      return JsonNumber(v.json_ietf_val(), out) && *out >= 0;
    case gnmi::TypedValue::kStringVal:
      return JsonNumber(v.string_val(), out) && *out >= 0;
    default:
      return false;
  }
}

// A string leaf (oper-status, port-speed, LLDP names), JSON-quoted or not.
bool Text(const gnmi::TypedValue& v, std::string* out) {
  std::string_view s;
  switch (v.value_case()) {
    case gnmi::TypedValue::kStringVal:
      s = v.string_val();
      break;
    case gnmi::TypedValue::kAsciiVal:
      s = v.ascii_val();
      break;
    case gnmi::TypedValue::kJsonVal:
      s = v.json_val();
      break;
    case gnmi::TypedValue::kJsonIetfVal:
      s = v.json_ietf_val();
      break;
    case gnmi::TypedValue::kUintVal:
      *out = std::to_string(v.uint_val());
      return true;
    default:
      return false;
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
    s = s.substr(1, s.size() - 2);
  }
  *out = std::string(s);
  return true;
}

struct Leaf {
  std::string_view leaf;
  std::string_view metric;
  std::string_view label;  // "error": the error name below; "" none
  std::string_view label_value;
  double scale;
};

constexpr std::string_view kRxBytes = "fabric_switch_port_receive_bytes_total";
constexpr std::string_view kTxBytes = "fabric_switch_port_transmit_bytes_total";
constexpr std::string_view kRxPackets =
    "fabric_switch_port_receive_packets_total";
constexpr std::string_view kTxPackets =
    "fabric_switch_port_transmit_packets_total";
constexpr std::string_view kErrors = "fabric_switch_port_errors_total";
constexpr std::string_view kState = "fabric_switch_port_state";
constexpr std::string_view kRate = "fabric_switch_port_rate_bytes_per_second";

// /interfaces/interface[name]/state/counters/<leaf>. The `error` values are
// the InfiniBand ones where the meaning is the same (docs/metrics.md).
constexpr Leaf kInterfaceCounters[] = {
    {"in-octets", kRxBytes, "", "", 1},
    {"out-octets", kTxBytes, "", "", 1},
    {"in-pkts", kRxPackets, "", "", 1},
    {"out-pkts", kTxPackets, "", "", 1},
    {"in-errors", kErrors, "error", "port_rcv_errors", 1},
    {"in-discards", kErrors, "error", "port_rcv_discards", 1},
    {"out-discards", kErrors, "error", "port_xmit_discards", 1},
    {"out-errors", kErrors, "error", "port_xmit_errors", 1},
    {"tx-wait", "fabric_switch_port_transmit_wait_total", "", "", 1},
    {"carrier-transitions", "fabric_switch_port_carrier_transitions_total", "",
     "", 1},
};

// /qos/interfaces/interface[interface-id]/output/queues/queue[name]/state/.
constexpr Leaf kQueueLeaves[] = {
    {"ecn-marked-pkts", "fabric_switch_port_queue_ecn_marked_packets_total", "",
     "", 1},
    {"no-buffer-uc-dropped-pkts",
     "fabric_switch_port_queue_no_buffer_dropped_packets_total", "", "", 1},
    {"wred-dropped-pkts", "fabric_switch_port_queue_wred_dropped_packets_total",
     "", "", 1},
    {"dropped-pkts", "fabric_switch_port_queue_dropped_packets_total", "", "",
     1},
    {"transmit-pkts", "fabric_switch_port_queue_transmit_packets_total", "", "",
     1},
    {"transmit-octets", "fabric_switch_port_queue_transmit_bytes_total", "", "",
     1},
    {"max-queue-len", "fabric_switch_port_queue_watermark_bytes", "", "", 1},
    {"instant-queue-len", "fabric_switch_port_queue_occupancy_bytes", "", "",
     1},
};

// .../switch-priority[priority]/state/{counters/,}<leaf>: PFC per priority.
// Cumulus Linux: in-pause-duration is the time this port was paused (it
// received pause), out-pause-duration the time it asked the far end to
// pause; both in microseconds.
constexpr Leaf kPriorityLeaves[] = {
    {"in-pause-pkts", "fabric_switch_port_pfc_pause_frames_total", "direction",
     "rx", 1},
    {"out-pause-pkts", "fabric_switch_port_pfc_pause_frames_total", "direction",
     "tx", 1},
    {"in-pause-duration", "fabric_switch_port_pfc_pause_duration_seconds_total",
     "direction", "rx", 1e-6},
    {"out-pause-duration",
     "fabric_switch_port_pfc_pause_duration_seconds_total", "direction", "tx",
     1e-6},
};

template <std::size_t N>
const Leaf* Find(const Leaf (&table)[N], std::string_view leaf) {
  for (const auto& l : table) {
    if (l.leaf == leaf) return &l;
  }
  return nullptr;
}

// Adds one numeric leaf; false when the value is not a number. `key_label`
// = `key_value`: the label the path's key gives (queue, priority), if any.
bool AddNumber(const Leaf& leaf, const std::string& port,
               std::string_view key_label, const std::string& key_value,
               const gnmi::TypedValue& v, ParsedNotification* out) {
  double value = 0;
  if (!Number(v, &value)) return false;
  out->values.push_back(
      {{leaf.metric, port, key_label, key_value, leaf.label, leaf.label_value},
       value * leaf.scale});
  return true;
}

// A value without labels besides switch/port.
void AddPlain(std::string_view metric, const std::string& port, double value,
              ParsedNotification* out) {
  out->values.push_back({{metric, port, {}, {}, {}, {}}, value});
}

enum class Result { kOk, kUnknown, kBad };

// /interfaces/interface[name=X]/...
Result Interface(const std::vector<Elem>& e, const gnmi::TypedValue& v,
                 ParsedNotification* out) {
  if (e.size() < 4 || e[1].name != "interface") return Result::kUnknown;
  const std::string port = e[1].Key("name");
  if (port.empty() || port == "*") return Result::kBad;
  if (Matches(e, 2, {"state", "counters", e.back().name})) {
    const Leaf* leaf = Find(kInterfaceCounters, e.back().name);
    if (!leaf) return Result::kUnknown;
    return AddNumber(*leaf, port, {}, {}, v, out) ? Result::kOk : Result::kBad;
  }
  if (Matches(e, 2, {"state", "oper-status"})) {
    std::string status;
    if (!Text(v, &status)) return Result::kBad;
    // The IB PortState numbers, so one query covers both fabrics: UP is
    // ACTIVE (4), anything else (DOWN, LOWER_LAYER_DOWN, DORMANT,
    // NOT_PRESENT, TESTING, UNKNOWN) is not carrying traffic: DOWN (1).
    AddPlain(kState, port, status == "UP" ? 4.0 : 1.0, out);
    return Result::kOk;
  }
  if (Matches(e, 2, {"ethernet", "state", "port-speed"})) {
    std::string text;
    double rate = 0;
    if (!Text(v, &text) || !ParsePortSpeed(text, &rate)) return Result::kBad;
    AddPlain(kRate, port, rate, out);
    return Result::kOk;
  }
  return Result::kUnknown;
}

// /qos/interfaces/interface[interface-id=X]/...
Result Qos(const std::vector<Elem>& e, const gnmi::TypedValue& v,
           ParsedNotification* out) {
  if (e.size() < 5 || e[1].name != "interfaces" || e[2].name != "interface")
    return Result::kUnknown;
  const std::string port = e[2].Key("interface-id");
  if (port.empty() || port == "*") return Result::kBad;
  if (Matches(e, 3, {"output", "queues", "queue", "state", e.back().name})) {
    const Leaf* leaf = Find(kQueueLeaves, e.back().name);
    if (!leaf) return Result::kUnknown;
    const std::string queue = e[5].Key("name");
    if (queue.empty() || queue == "*") return Result::kBad;
    return AddNumber(*leaf, port, "queue", queue, v, out) ? Result::kOk
                                                          : Result::kBad;
  }
  // switch-priority[priority=P]/state/{counters/}<leaf>
  if (e[3].name == "switch-priority" && e.size() >= 6 && e[4].name == "state") {
    const bool shape =
        e.size() == 6 || (e.size() == 7 && e[5].name == "counters");
    const Leaf* leaf = shape ? Find(kPriorityLeaves, e.back().name) : nullptr;
    if (!leaf) return Result::kUnknown;
    const std::string priority = e[3].Key("priority");
    if (priority.empty() || priority == "*") return Result::kBad;
    return AddNumber(*leaf, port, "priority", priority, v, out) ? Result::kOk
                                                                : Result::kBad;
  }
  return Result::kUnknown;
}

// /lldp/interfaces/interface[name=X]/neighbors/neighbor[id=N]/state/<leaf>
Result Lldp(const std::vector<Elem>& e, const gnmi::TypedValue& v,
            ParsedNotification* out) {
  if (!Matches(e, 1,
               {"interfaces", "interface", "neighbors", "neighbor", "state",
                e.back().name}))
    return Result::kUnknown;
  const std::string_view field = e.back().name;
  if (field != "system-name" && field != "port-id" &&
      field != "port-description" && field != "chassis-id")
    return Result::kUnknown;
  const std::string port = e[2].Key("name");
  const std::string id = e[4].Key("id");
  std::string text;
  if (port.empty() || port == "*" || id.empty() || !Text(v, &text))
    return Result::kBad;
  out->lldp.push_back({port, id, std::string(field), std::move(text)});
  return Result::kOk;
}

// SONiC's COUNTERS_DB (target COUNTERS_DB): COUNTERS/<port> with the whole
// table as a JSON object, or COUNTERS/<port>/<field> with one value; SAI
// counter names, values as decimal strings (sonic-net/SONiC
// doc/system-telemetry/grpc_telemetry.md). Port-level fields only; queue
// tables (COUNTERS/<port>:<queue>) are not read.
constexpr Leaf kSaiPortFields[] = {
    {"SAI_PORT_STAT_IF_IN_OCTETS", kRxBytes, "", "", 1},
    {"SAI_PORT_STAT_IF_OUT_OCTETS", kTxBytes, "", "", 1},
    {"SAI_PORT_STAT_IF_IN_ERRORS", kErrors, "error", "port_rcv_errors", 1},
    {"SAI_PORT_STAT_IF_IN_DISCARDS", kErrors, "error", "port_rcv_discards", 1},
    {"SAI_PORT_STAT_IF_OUT_DISCARDS", kErrors, "error", "port_xmit_discards",
     1},
    {"SAI_PORT_STAT_IF_OUT_ERRORS", kErrors, "error", "port_xmit_errors", 1},
};

// SAI_PORT_STAT_PFC_<p>_{RX,TX}_{PKTS,PAUSE_DURATION_US}: the leaf (of
// kPriorityLeaves) and the priority, or null.
const Leaf* SaiPfcField(std::string_view field, std::string* priority) {
  constexpr std::string_view kPrefix = "SAI_PORT_STAT_PFC_";
  if (field.rfind(kPrefix, 0) != 0 || field.size() < kPrefix.size() + 2)
    return nullptr;
  const char p = field[kPrefix.size()];
  if (p < '0' || p > '7' || field[kPrefix.size() + 1] != '_') return nullptr;
  const std::string_view rest = field.substr(kPrefix.size() + 2);
  std::string_view leaf;
  if (rest == "RX_PKTS") leaf = "in-pause-pkts";
  if (rest == "TX_PKTS") leaf = "out-pause-pkts";
  if (rest == "RX_PAUSE_DURATION_US") leaf = "in-pause-duration";
  if (rest == "TX_PAUSE_DURATION_US") leaf = "out-pause-duration";
  if (leaf.empty()) return nullptr;
  *priority = std::string(1, p);
  return Find(kPriorityLeaves, leaf);
}

Result SonicField(const std::string& port, std::string_view field,
                  const gnmi::TypedValue& v, ParsedNotification* out) {
  std::string priority;
  if (const Leaf* leaf = SaiPfcField(field, &priority))
    return AddNumber(*leaf, port, "priority", priority, v, out) ? Result::kOk
                                                                : Result::kBad;
  const Leaf* leaf = Find(kSaiPortFields, field);
  if (!leaf) return Result::kUnknown;
  return AddNumber(*leaf, port, {}, {}, v, out) ? Result::kOk : Result::kBad;
}

// COUNTERS/<port>[/<field>]
void Sonic(const std::vector<Elem>& e, const gnmi::TypedValue& v,
           ParsedNotification* out) {
  const std::string port(e.size() >= 2 ? e[1].name : std::string_view());
  const auto count = [&](Result r) {
    if (r == Result::kUnknown) ++out->unknown_paths;
    if (r == Result::kBad) ++out->bad_values;
  };
  if (e.size() == 3) return count(SonicField(port, e[2].name, v, out));
  if (e.size() != 2 || port.find(':') != std::string::npos)
    return count(Result::kUnknown);  // a queue table, or no port
  std::string_view text;
  if (v.value_case() == gnmi::TypedValue::kJsonIetfVal)
    text = v.json_ietf_val();
  if (v.value_case() == gnmi::TypedValue::kJsonVal) text = v.json_val();
  const auto table = nlohmann::json::parse(text, nullptr, false);
  if (!table.is_object()) return count(Result::kBad);
  for (const auto& [field, value] : table.items()) {
    gnmi::TypedValue one;
    if (value.is_string()) {
      one.set_string_val(value.get<std::string>());
    } else if (value.is_number_unsigned()) {
      one.set_uint_val(value.get<std::uint64_t>());
    }
    count(SonicField(port, field, one, out));
  }
}

Result One(const gnmi::Path& prefix, const gnmi::Update& update,
           ParsedNotification* out) {
  const auto e = Flatten(prefix, update.path());
  if (e.empty()) return Result::kUnknown;
  if (e[0].name == "interfaces") return Interface(e, update.val(), out);
  if (e[0].name == "qos") return Qos(e, update.val(), out);
  if (e[0].name == "lldp") return Lldp(e, update.val(), out);
  if (e[0].name == "COUNTERS") {
    Sonic(e, update.val(), out);  // counts per field itself
    return Result::kOk;
  }
  return Result::kUnknown;
}

}  // namespace

ParsedNotification ParseNotification(const gnmi::Notification& n) {
  ParsedNotification out;
  for (const auto& update : n.update()) {
    switch (One(n.prefix(), update, &out)) {
      case Result::kOk:
        break;
      case Result::kUnknown:
        ++out.unknown_paths;
        break;
      case Result::kBad:
        ++out.bad_values;
        break;
    }
  }
  for (const auto& del : n.delete_()) {
    const auto e = Flatten(n.prefix(), del);
    // An interface (or its subtree) withdrawn: drop what the port had.
    if (e.size() >= 2 && e[0].name == "interfaces" &&
        e[1].name == "interface") {
      std::string port = e[1].Key("name");
      if (!port.empty() && port != "*") out.deleted_ports.push_back(port);
    }
  }
  return out;
}

std::string PathString(const gnmi::Path& prefix, const gnmi::Path& path) {
  std::string s;
  for (const auto& e : Flatten(prefix, path)) {
    s += '/';
    s += e.name;
    for (const auto& [k, v] : *e.keys) s += "[" + k + "=" + v + "]";
  }
  return s.empty() ? "/" : s;
}

bool ParsePortSpeed(const std::string& text, double* bytes_per_second) {
  std::string_view s = text;
  if (auto colon = s.find(':'); colon != std::string_view::npos)
    s = s.substr(colon + 1);
  double mbits = 0;
  if (s.rfind("SPEED_", 0) == 0) {
    s.remove_prefix(6);
    double unit = 0;
    if (s.size() > 2 && s.substr(s.size() - 2) == "GB") unit = 1000;
    if (s.size() > 2 && s.substr(s.size() - 2) == "MB") unit = 1;
    if (unit == 0) return false;  // SPEED_UNKNOWN
    s.remove_suffix(2);
    double n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n <= 0) return false;
    mbits = n * unit;
  } else {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mbits);
    if (ec != std::errc() || end != s.data() + s.size() || mbits <= 0 ||
        !std::isfinite(mbits))
      return false;
  }
  *bytes_per_second = mbits * 1e6 / 8;
  return true;
}

}  // namespace fabric::gnmi_switch
