// Test and bench support for libfabricmon_osm.so without OpenSM: loads the
// built plugin with dlopen() exactly as OpenSM does (dlsym "osm_event_plugin"),
// provides a minimal osm_opensm_t (version string, event_plugin_options,
// subnet lock, node table) for create(), and a Unix datagram receiver that
// plays the daemon. Header-only so only the tests that include it link
// libopensm/libosmcomp.
//
// Thread-safety: one harness per test; the receiver is not shared.
#pragma once

#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "osm/event_wire.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

// osm_event_plugin_t has a member named `delete` (a C++ keyword).
#define delete delete_plugin
#include <opensm/osm_event_plugin.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_version.h>
#undef delete

namespace fabric::testing {

inline std::string OsmPluginPath() {
  return BinaryDir() + "/lib/libfabricmon_osm.so";
}

// dlopen()s the plugin; `impl` is null when loading failed (see error()).
class LoadedPlugin {
 public:
  LoadedPlugin() {
    handle_ = dlopen(OsmPluginPath().c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle_ == nullptr) {
      error_ = dlerror();
      return;
    }
    impl = static_cast<osm_event_plugin_t*>(
        dlsym(handle_, OSM_EVENT_PLUGIN_IMPL_NAME));
  }
  ~LoadedPlugin() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;
  const std::string& error() const { return error_; }

  osm_event_plugin_t* impl = nullptr;

 private:
  void* handle_ = nullptr;
  std::string error_;
};

// The parts of osm_opensm_t the plugin reads. The struct is large and
// mostly irrelevant here, so it is zeroed and only these are set up.
class FakeOpenSm {
 public:
  explicit FakeOpenSm(const std::string& plugin_options)
      : options_(plugin_options) {
    osm_ = static_cast<osm_opensm_t*>(std::calloc(1, sizeof(osm_opensm_t)));
    osm_->osm_version = OSM_VERSION;
    osm_->log.level = 0;  // the plugin logs nothing
    cl_plock_construct(&osm_->lock);
    cl_plock_init(&osm_->lock);
    cl_qmap_init(&osm_->subn.node_guid_tbl);
    osm_->subn.opt.event_plugin_options = options_.data();
  }
  ~FakeOpenSm() {
    cl_plock_destroy(&osm_->lock);
    for (osm_node_t* n : nodes_) std::free(n);
    std::free(osm_);
  }
  FakeOpenSm(const FakeOpenSm&) = delete;
  FakeOpenSm& operator=(const FakeOpenSm&) = delete;

  osm_opensm_t* get() { return osm_; }
  // `guid` in host order; `type` an IB_NODE_TYPE_* value.
  osm_node_t* AddNode(uint64_t guid, uint8_t type) {
    auto* n = static_cast<osm_node_t*>(std::calloc(1, sizeof(osm_node_t)));
    n->node_info.node_type = type;
    n->node_info.node_guid = cl_hton64(guid);
    cl_qmap_insert(&osm_->subn.node_guid_tbl, cl_hton64(guid), &n->map_item);
    nodes_.push_back(n);
    return n;
  }
  pthread_rwlock_t* subnet_lock() { return &osm_->lock.lock; }

 private:
  std::string options_;
  osm_opensm_t* osm_ = nullptr;
  std::vector<osm_node_t*> nodes_;
};

// A bound AF_UNIX datagram socket in a fresh temporary directory.
class DatagramReceiver {
 public:
  explicit DatagramReceiver(std::string path) : path_(std::move(path)) {
    Bind();
  }
  ~DatagramReceiver() { Close(); }
  DatagramReceiver(const DatagramReceiver&) = delete;
  DatagramReceiver& operator=(const DatagramReceiver&) = delete;

  void Bind() {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    ::unlink(path_.c_str());
    bound_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    // A deadline so a missing datagram fails the test instead of hanging it.
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  // Closes and removes the path, as a stopped daemon does.
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
  }
  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }

  // The next datagram, decoded; nullopt on timeout or a decode error.
  std::optional<osm::Message> Receive(bool wait = true) {
    uint8_t buf[1024];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), wait ? 0 : MSG_DONTWAIT);
    if (n < 0) return std::nullopt;
    osm::Message m;
    if (osm::DecodeEvent(std::span<const uint8_t>(buf, n), &m) !=
        osm::DecodeStatus::kOk) {
      return std::nullopt;
    }
    return m;
  }
  // Every event the plugin was given is either received or counted in a
  // received datagram's `dropped`. Receives until `events` are accounted
  // for (or a receive times out) and returns the datagrams.
  struct Tally {
    std::vector<osm::Message> messages;
    uint64_t dropped = 0;
    uint64_t accounted() const { return messages.size() + dropped; }
  };
  Tally ReceiveUntilAccounted(uint64_t events) {
    Tally t;
    while (t.accounted() < events) {
      auto m = Receive();
      if (!m) break;
      t.dropped += m->dropped;
      t.messages.push_back(*m);
    }
    return t;
  }
  // Reads every queued datagram without waiting; returns how many.
  int Drain() {
    int n = 0;
    while (Receive(false)) ++n;
    return n;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

}  // namespace fabric::testing
