// libfabricmon_osm.so: an OpenSM event plugin that forwards every event to
// the fabricmon daemon as one event_wire datagram on a Unix socket.
//
// OpenSM loads it with `event_plugin_name fabricmon_osm` (it dlopen()s
// "lib<name>.so" and dlsym()s `osm_event_plugin`, whose osm_version must
// equal OpenSM's own OSM_VERSION string) and calls report() from its own
// threads: the SM state manager, the PerfMgr and the MAD dispatcher pool,
// sometimes with the subnet lock or PerfMgr's database lock held. Hence:
//  - report() never blocks: it encodes the event on its stack and copies
//    it into the Sender's preallocated lock-free ring (osm/sender.h); the
//    Sender's own thread writes the ring to the daemon's AF_UNIX SOCK_DGRAM
//    socket. Why not sendto() straight from report(): see sender.h (the
//    kernel's 10-datagram receive queue loses PerfMgr bursts).
//  - an event that cannot be delivered (ring full, no daemon, send error,
//    no data from OpenSM) is dropped and counted; the count rides in the
//    next datagram that gets through (Message::dropped is a delta). A
//    restarted daemon receives events again without OpenSM restarting.
//  - no allocation in report() (a fixed stack buffer; the GUID cache is
//    allocated once in create()), and no exception crosses the C ABI.
//  - switch vs host ports: PerfMgr events carry only GUID, port and name, so
//    the plugin looks the node type up in OpenSM's subnet (node_guid_tbl)
//    under OpenSM's subnet lock taken with pthread_rwlock_tryrdlock: if
//    another thread holds it for writing (a heavy sweep) it does not wait and
//    answers from its own cache of earlier lookups, else sends "unknown".
//
// Thread-safety: report() may run on several OpenSM threads at once; the
// Sender's Enqueue() is multi-producer and the cache is lock-free.
// create()/delete() run once, from OpenSM's start-up and shut-down.
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

#include "osm/event_wire.h"
#include "osm/sender.h"

// osm_event_plugin_t has a member named `delete`, a C++ keyword; the rename
// changes only the member's name, not the struct's layout.
#define delete delete_plugin
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_version.h>
#undef delete

namespace fabric::osm {
namespace {

static_assert(OSM_EVENT_ID_PORT_ERRORS == int(Event::kPortErrors));
static_assert(OSM_EVENT_ID_PORT_DATA_COUNTERS == int(Event::kPortDataCounters));
static_assert(OSM_EVENT_ID_PORT_SELECT == int(Event::kPortSelect));
static_assert(OSM_EVENT_ID_TRAP == int(Event::kTrap));
static_assert(OSM_EVENT_ID_SUBNET_UP == int(Event::kSubnetUp));
static_assert(OSM_EVENT_ID_HEAVY_SWEEP_START == int(Event::kHeavySweepStart));
static_assert(OSM_EVENT_ID_HEAVY_SWEEP_DONE == int(Event::kHeavySweepDone));
static_assert(OSM_EVENT_ID_UCAST_ROUTING_DONE == int(Event::kUcastRoutingDone));
static_assert(OSM_EVENT_ID_STATE_CHANGE == int(Event::kStateChange));
static_assert(OSM_EVENT_ID_SA_DB_DUMPED == int(Event::kSaDbDumped));
static_assert(OSM_EVENT_ID_LFT_CHANGE == int(Event::kLftChange));
static_assert(OSM_EVENT_ID_MAX == kEventCount);
static_assert(OSM_EPI_NODE_NAME_LEN - 1 == kNodeNameSize);

constexpr char kDefaultSocket[] = "/run/fabricmon/osm-events.sock";
// Datagrams queued between OpenSM's threads and the sender thread: a
// PerfMgr sweep's burst for about 2,000 ports (two events each), ~0.9 MB.
constexpr std::size_t kQueueSlots = 4096;

// Node GUID -> node type, filled from successful subnet lookups. Fixed size,
// open addressing with a short probe; when full, lookups simply miss. A
// reader may see a slot's GUID before its type is stored and then reads
// kUnknown (0), which is the same answer as a miss.
class TypeCache {
 public:
  static constexpr std::size_t kSlots = 16384;  // power of two
  static constexpr int kProbe = 8;

  NodeType Find(uint64_t guid) const {
    for (int i = 0; i < kProbe; ++i) {
      const Slot& s = slots_[Index(guid, i)];
      const uint64_t key = s.guid.load(std::memory_order_acquire);
      if (key == guid) {
        return static_cast<NodeType>(s.type.load(std::memory_order_acquire));
      }
      if (key == 0) break;
    }
    return NodeType::kUnknown;
  }

  void Insert(uint64_t guid, NodeType type) {
    if (guid == 0) return;  // 0 marks an empty slot
    for (int i = 0; i < kProbe; ++i) {
      Slot& s = slots_[Index(guid, i)];
      uint64_t key = s.guid.load(std::memory_order_acquire);
      if (key == 0 && s.guid.compare_exchange_strong(
                          key, guid, std::memory_order_acq_rel)) {
        key = guid;
      }
      if (key == guid) {
        s.type.store(static_cast<uint8_t>(type), std::memory_order_release);
        return;
      }
    }
  }

 private:
  struct Slot {
    std::atomic<uint64_t> guid{0};
    std::atomic<uint8_t> type{0};
  };
  static std::size_t Index(uint64_t guid, int probe) {
    // GUIDs of one vendor share their high bits; mix before masking.
    uint64_t h = guid * 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>((h >> 40) + probe) & (kSlots - 1);
  }
  Slot slots_[kSlots];
};

struct Plugin {
  osm_opensm_t* osm = nullptr;
  std::unique_ptr<Sender> sender;
  TypeCache cache;
};

void Log(osm_opensm_t* osm, osm_log_level_t level, const char* fmt,
         const char* arg) {
  if (osm != nullptr && osm_log_is_active(&osm->log, level)) {
    osm_log(&osm->log, level, fmt, arg);
  }
}

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

// `guid` in host order, as PerfMgr reports it.
NodeType LookUpNodeType(Plugin& p, uint64_t guid) {
  NodeType cached = p.cache.Find(guid);
  if (cached != NodeType::kUnknown) return cached;
  if (p.osm == nullptr) return NodeType::kUnknown;
  // Never wait for the subnet lock: the SM holds it for writing through
  // parts of a sweep, and this thread may already hold it (then tryrdlock
  // fails with EDEADLK or succeeds as a nested read; both are safe).
  if (pthread_rwlock_tryrdlock(&p.osm->lock.lock) != 0) {
    return NodeType::kUnknown;
  }
  NodeType type = NodeType::kUnknown;
  cl_qmap_t* table = &p.osm->subn.node_guid_tbl;
  cl_map_item_t* item = cl_qmap_get(table, cl_hton64(guid));
  if (item != cl_qmap_end(table)) {
    const auto* node = reinterpret_cast<const osm_node_t*>(item);
    switch (osm_node_get_type(node)) {
      case IB_NODE_TYPE_CA:
        type = NodeType::kChannelAdapter;
        break;
      case IB_NODE_TYPE_SWITCH:
        type = NodeType::kSwitch;
        break;
      case IB_NODE_TYPE_ROUTER:
        type = NodeType::kRouter;
        break;
      default:
        break;
    }
  }
  pthread_rwlock_unlock(&p.osm->lock.lock);
  if (type != NodeType::kUnknown) p.cache.Insert(guid, type);
  return type;
}

PortId MakePortId(Plugin& p, const osm_epi_port_id_t& in, time_t diff) {
  PortId id;
  id.node_guid = in.node_guid;
  id.port = in.port_num;
  id.node_type = LookUpNodeType(p, in.node_guid);
  id.time_diff_s = diff < 0 ? 0 : static_cast<uint32_t>(diff);
  // OpenSM terminates the name; a malformed event might not, so stop at
  // the field's end.
  id.SetName(in.node_name, OSM_EPI_NODE_NAME_LEN - 1);
  return id;
}

// Fills `m` from OpenSM's event; false when the event cannot be encoded
// (an unknown id or a missing data pointer).
bool Translate(Plugin& p, osm_epi_event_id_t id, void* data, Message& m) {
  const auto number = static_cast<int>(id);
  if (number < 0 || number >= kEventCount) return false;
  m.event = static_cast<Event>(number);
  switch (id) {
    case OSM_EVENT_ID_PORT_ERRORS: {
      if (data == nullptr) return false;
      const auto& e = *static_cast<const osm_epi_pe_event_t*>(data);
      PortErrors pe;
      pe.id = MakePortId(p, e.port_id, e.time_diff_s);
      pe.symbol_error = e.symbol_err_cnt;
      pe.link_error_recovery = e.link_err_recover;
      pe.link_downed = e.link_downed;
      pe.port_rcv_errors = e.rcv_err;
      pe.port_rcv_remote_physical_errors = e.rcv_rem_phys_err;
      pe.port_rcv_switch_relay_errors = e.rcv_switch_relay_err;
      pe.port_xmit_discards = e.xmit_discards;
      pe.port_xmit_constraint_errors = e.xmit_constraint_err;
      pe.port_rcv_constraint_errors = e.rcv_constraint_err;
      pe.local_link_integrity_errors = e.link_integrity;
      pe.excessive_buffer_overrun_errors = e.buffer_overrun;
      pe.vl15_dropped = e.vl15_dropped;
      pe.port_xmit_wait = e.xmit_wait;
      m.body = pe;
      return true;
    }
    case OSM_EVENT_ID_PORT_DATA_COUNTERS: {
      if (data == nullptr) return false;
      const auto& e = *static_cast<const osm_epi_dc_event_t*>(data);
      PortData dc;
      dc.id = MakePortId(p, e.port_id, e.time_diff_s);
      dc.xmit_data = e.xmit_data;
      dc.rcv_data = e.rcv_data;
      dc.xmit_pkts = e.xmit_pkts;
      dc.rcv_pkts = e.rcv_pkts;
      dc.unicast_xmit_pkts = e.unicast_xmit_pkts;
      dc.unicast_rcv_pkts = e.unicast_rcv_pkts;
      dc.multicast_xmit_pkts = e.multicast_xmit_pkts;
      dc.multicast_rcv_pkts = e.multicast_rcv_pkts;
      m.body = dc;
      return true;
    }
    case OSM_EVENT_ID_PORT_SELECT: {
      if (data == nullptr) return false;
      const auto& e = *static_cast<const osm_epi_ps_event_t*>(data);
      PortSelect ps;
      ps.id = MakePortId(p, e.port_id, e.time_diff_s);
      ps.xmit_wait = e.xmit_wait;
      m.body = ps;
      return true;
    }
    case OSM_EVENT_ID_TRAP: {
      if (data == nullptr) return false;
      const auto& n = *static_cast<const ib_mad_notice_attr_t*>(data);
      Trap t;
      t.generic = (n.generic_type & 0x80) != 0;
      t.type = n.generic_type & 0x7f;
      // prod_type and vend_id share their layout: a high byte then a
      // 16-bit big-endian low part.
      t.producer_or_vendor = (uint32_t{n.g_or_v.generic.prod_type_msb} << 16) |
                             cl_ntoh16(n.g_or_v.generic.prod_type_lsb);
      t.trap_number = t.generic ? cl_ntoh16(n.g_or_v.generic.trap_num) : 0;
      t.issuer_lid = cl_ntoh16(n.issuer_lid);
      m.body = t;
      return true;
    }
    case OSM_EVENT_ID_UCAST_ROUTING_DONE:
      // OpenSM passes the osm_epi_ucast_routing_flags_t value itself as the
      // pointer; it is never dereferenced.
      m.body = UcastRoutingDone{
          static_cast<uint32_t>(reinterpret_cast<uintptr_t>(data))};
      return true;
    case OSM_EVENT_ID_LFT_CHANGE: {
      if (data == nullptr) return false;
      const auto& e = *static_cast<const osm_epi_lft_change_event_t*>(data);
      LftChange l;
      // OpenSM reports this with the subnet lock held, so the switch and
      // its node stay valid for this read.
      if (e.p_sw != nullptr && e.p_sw->p_node != nullptr) {
        l.switch_guid = cl_ntoh64(osm_node_get_node_guid(e.p_sw->p_node));
      }
      l.flags = static_cast<uint32_t>(e.flags);
      l.block_num = e.block_num;
      l.lft_top = e.lft_top;
      m.body = l;
      return true;
    }
    case OSM_EVENT_ID_SUBNET_UP:
    case OSM_EVENT_ID_HEAVY_SWEEP_START:
    case OSM_EVENT_ID_HEAVY_SWEEP_DONE:
    case OSM_EVENT_ID_STATE_CHANGE:
    case OSM_EVENT_ID_SA_DB_DUMPED:
      m.body = std::monostate{};
      return true;
    case OSM_EVENT_ID_MAX:
      break;
  }
  return false;
}

void Report(Plugin& p, osm_epi_event_id_t id, void* data) {
  Message m;
  if (!Translate(p, id, data, m)) {
    p.sender->CountDrop();
    return;
  }
  m.monotonic_ns = MonotonicNs();
  uint8_t buf[kMaxMessageSize];
  const std::size_t len = EncodeEvent(m, buf);
  if (len == 0) {
    p.sender->CountDrop();
    return;
  }
  p.sender->Enqueue(std::span<const uint8_t>(buf, len));
}

// The socket path: event_plugin_options, whitespace-trimmed, or the default.
std::string_view SocketPath(const osm_opensm_t* osm) {
  const char* opt = osm->subn.opt.event_plugin_options;
  std::string_view path = opt != nullptr ? opt : "";
  const std::string_view space = " \t\r\n";
  const auto first = path.find_first_not_of(space);
  if (first == std::string_view::npos) return kDefaultSocket;
  path.remove_prefix(first);
  path = path.substr(0, path.find_last_not_of(space) + 1);
  return path;
}

void* Create(osm_opensm_t* osm) {
  if (osm == nullptr) return nullptr;
  if (osm->osm_version == nullptr ||
      std::strcmp(osm->osm_version, OSM_VERSION) != 0) {
    Log(osm, OSM_LOG_ERROR,
        "fabricmon_osm: built for " OSM_VERSION ", not for %s\n",
        osm->osm_version != nullptr ? osm->osm_version : "(null)");
    return nullptr;
  }
  const std::string_view path = SocketPath(osm);
  std::unique_ptr<Plugin> p(new (std::nothrow) Plugin);
  if (!p) return nullptr;
  std::string error;
  p->sender = Sender::Create(path, kQueueSlots, &error);
  if (!p->sender) {
    Log(osm, OSM_LOG_ERROR, "fabricmon_osm: %s\n", error.c_str());
    Log(osm, OSM_LOG_ERROR, "fabricmon_osm: event_plugin_options: \"%s\"\n",
        osm->subn.opt.event_plugin_options);
    return nullptr;
  }
  p->osm = osm;
  Log(osm, OSM_LOG_INFO, "fabricmon_osm: sending events to %s\n",
      std::string(path).c_str());
  return p.release();
}

}  // namespace
}  // namespace fabric::osm

extern "C" {

static void* FabricmonOsmCreate(osm_opensm_t* osm) {
  try {
    return fabric::osm::Create(osm);
  } catch (...) {
    return nullptr;
  }
}

static void FabricmonOsmDelete(void* plugin_data) {
  auto* p = static_cast<fabric::osm::Plugin*>(plugin_data);
  if (p == nullptr) return;
  delete p;  // joins the sender thread
}

static void FabricmonOsmReport(void* plugin_data, osm_epi_event_id_t event_id,
                               void* event_data) {
  if (plugin_data == nullptr) return;
  try {
    fabric::osm::Report(*static_cast<fabric::osm::Plugin*>(plugin_data),
                        event_id, event_data);
  } catch (...) {
    // Nothing above throws; this only keeps a future change from taking
    // OpenSM down through the C ABI.
  }
}

// The symbol OpenSM looks up (OSM_EVENT_PLUGIN_IMPL_NAME).
__attribute__((visibility("default"))) osm_event_plugin_t osm_event_plugin = {
    OSM_VERSION, FabricmonOsmCreate, FabricmonOsmDelete, FabricmonOsmReport};

}  // extern "C"
