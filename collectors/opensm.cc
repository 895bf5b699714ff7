#include "collectors/opensm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/datagram_protocol.hpp>
#include <boost/asio/post.hpp>

#include "collectors/opensm_parse.h"
#include "config/yaml_keys.h"
#include "core/thread_annotations.h"
#include "osm/event_wire.h"

namespace fabric {
namespace {

using Protocol = boost::asio::local::datagram_protocol;

// The socket and what arrived on it. Shared with the handlers queued on
// the io_context, so it outlives a collector destroyed while one is queued.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(boost::asio::io_context& io, std::string path, int max_ports)
      : socket_(io), path_(std::move(path)), totals_(max_ports) {}

  // io thread. Binds the socket (replacing a stale socket file, never any
  // other kind of file) and starts receiving.
  void Open() {
    if (stopped_ || socket_.is_open()) return;
    std::string error;
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) {
        SetError(path_ + " exists and is not a socket");
        return;
      }
      ::unlink(path_.c_str());
    }
    boost::system::error_code ec;
    socket_.open(Protocol(), ec);
    if (!ec) socket_.bind(Protocol::endpoint(path_), ec);
    // Only the owner (the daemon's user) and root may connect: writing to
    // a Unix socket needs write permission on its file.
    if (!ec && ::chmod(path_.c_str(), 0600) != 0) {
      ec.assign(errno, boost::system::system_category());
    }
    if (ec) {
      socket_.close();
      SetError("cannot bind " + path_ + ": " + ec.message());
      return;
    }
    {
      MutexLock lock(mu_);
      bound_ = true;
      error_.clear();
    }
    Receive();
  }

  // io thread.
  void Close() {
    stopped_ = true;
    if (socket_.is_open()) {
      boost::system::error_code ignored;
      socket_.close(ignored);
      ::unlink(path_.c_str());
    }
    MutexLock lock(mu_);
    bound_ = false;
  }

  // Poll thread: emits the totals; false (with the reason) when unbound.
  bool Emit(MetricSink& sink, const NodeNameMap& names, bool switch_ports,
            std::string* error) {
    MutexLock lock(mu_);
    if (!bound_) {
      *error = error_;
      return false;
    }
    totals_.Emit(sink, names, switch_ports);
    sink.Counter("fabric_opensm_datagrams_rejected_total",
                 "Datagrams on the plugin socket that did not decode (wrong "
                 "version, truncated, not from the plugin).",
                 {}, static_cast<double>(totals_.rejected()));
    sink.Counter("fabric_opensm_port_events_unclassified_total",
                 "PerfMgr events for a node the plugin could not classify as "
                 "switch or host (OpenSM's subnet lock was busy) and not "
                 "accumulated.",
                 {}, static_cast<double>(totals_.unclassified()));
    sink.Counter("fabric_opensm_port_events_over_cap_total",
                 "PerfMgr events for a switch port beyond "
                 "collectors.opensm.max_switch_ports, not accumulated.",
                 {}, static_cast<double>(totals_.over_cap()));
    sink.Gauge("fabric_opensm_switch_ports",
               "Switch ports whose PerfMgr counters are accumulated (at most "
               "collectors.opensm.max_switch_ports).",
               {}, static_cast<double>(totals_.switch_ports()));
    return true;
  }

 private:
  void SetError(std::string error) {
    MutexLock lock(mu_);
    bound_ = false;
    error_ = std::move(error);
  }

  void Receive() {
    socket_.async_receive(
        boost::asio::buffer(buffer_),
        [self = shared_from_this()](const boost::system::error_code& ec,
                                    std::size_t n) {
          if (ec == boost::asio::error::operation_aborted || self->stopped_) {
            return;
          }
          if (ec) {
            boost::system::error_code ignored;
            self->socket_.close(ignored);
            self->SetError("receive: " + ec.message());
            return;
          }
          osm::Message m;
          const auto status = osm::DecodeEvent(
              std::span<const uint8_t>(self->buffer_.data(), n), &m);
          {
            MutexLock lock(self->mu_);
            if (status == osm::DecodeStatus::kOk) {
              self->totals_.Apply(m);
            } else {
              self->totals_.Reject();
            }
          }
          self->Receive();
        });
  }

  Protocol::socket socket_;
  const std::string path_;
  // Larger than any valid datagram, so an oversized one is seen as such.
  std::array<uint8_t, 2 * osm::kMaxMessageSize> buffer_{};
  bool stopped_ = false;  // io thread only

  Mutex mu_;
  bool bound_ GUARDED_BY(mu_) = false;
  std::string error_ GUARDED_BY(mu_) = "not started";
  OpensmTotals totals_ GUARDED_BY(mu_);
};

class OpensmCollector final : public Collector {
 public:
  OpensmCollector(OpensmSettings settings, TextFileReader read_text_file)
      : settings_(std::move(settings)),
        read_text_file_(std::move(read_text_file)) {}

  std::string_view Name() const override { return "opensm"; }

  void Start(boost::asio::io_context& io) override {
    io_ = &io;
    if (!settings_.node_name_map.empty()) {
      FileRead file =
          read_text_file_(settings_.node_name_map, kMaxNodeNameMapBytes);
      if (file.ok()) {
        names_ = ParseNodeNameMap(file.text);
      } else {
        map_error_ = true;
      }
    }
    listener_ = std::make_shared<Listener>(io, settings_.socket,
                                           settings_.max_switch_ports);
    listener_->Open();
  }

  void Stop() override {
    if (listener_) listener_->Close();
  }

  bool Collect(MetricSink& sink) override {
    if (!listener_) {
      sink.Skip("opensm: events arrive only in the running daemon");
      return false;
    }
    if (map_error_) sink.Skip("opensm: node_name_map unreadable");
    for (int line : names_.bad_lines) {
      sink.Skip("opensm: node_name_map line " + std::to_string(line));
    }
    std::string error;
    if (listener_->Emit(sink, names_, settings_.switch_ports, &error)) {
      return true;
    }
    sink.Skip("opensm: " + error);
    // Try binding again on the io thread (e.g. the directory appeared).
    boost::asio::post(*io_, [l = listener_] { l->Open(); });
    return false;
  }

 private:
  const OpensmSettings settings_;
  const TextFileReader read_text_file_;
  boost::asio::io_context* io_ = nullptr;
  std::shared_ptr<Listener> listener_;
  NodeNameMap names_;
  bool map_error_ = false;
};

}  // namespace

std::unique_ptr<Collector> MakeOpensmCollector(const CollectorEnv& env,
                                               const CollectorConfig& config) {
  return std::make_unique<OpensmCollector>(SettingsAs<OpensmSettings>(config),
                                           env.read_text_file);
}

CollectorSpec OpensmCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "opensm";
  spec.enabled = false;
  spec.keys = {"socket", "node_name_map", "switch_ports", "max_switch_ports"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig&) {
    OpensmSettings settings;
    ForEachKey(node, path,
               [&](const std::string& key, const YAML::Node& value,
                   const std::string& key_path, const YAML::Mark& mark) {
                 if (key == "socket") {
                   settings.socket = Scalar(value, key_path);
                   // sockaddr_un holds 107 bytes and a terminator.
                   if (settings.socket.empty() || settings.socket[0] != '/' ||
                       settings.socket.size() > 107) {
                     Fail(key_path, mark,
                          "must be an absolute path of at most 107 bytes");
                   }
                 } else if (key == "node_name_map") {
                   settings.node_name_map = Scalar(value, key_path);
                 } else if (key == "switch_ports") {
                   settings.switch_ports = Bool(value, key_path);
                 } else if (key == "max_switch_ports") {
                   settings.max_switch_ports = static_cast<int>(
                       Integer(value, key_path, 1, kMaxSwitchPortsLimit,
                               "a number of switch ports in 1..1000000"));
                 }
               });
    return std::make_shared<SettingsOf<OpensmSettings>>(settings);
  };
  spec.make = MakeOpensmCollector;
  return spec;
}

}  // namespace fabric
