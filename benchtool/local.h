// LocalCluster: the agents of `fabricmon-bench run --local N`, for trying the
// tool and for the checks. Each agent is a child process running the real
// agent code (`fabricmon-bench agent`), so a test can kill one as a host
// dies. With root and iproute2 each agent gets its own network namespace,
// joined through a bridge namespace by a veth pair that tbf shapes in both
// directions (the "link"); the calling thread joins the bridge namespace to
// reach them (and returns when the cluster ends). Otherwise the agents listen
// on loopback. A fresh key is generated for the run.
//
// Thread-safety: one owner; the destructor stops the agents, removes the
// namespaces and the key file, and puts the calling thread back in its
// original network namespace (so destroy it on the thread that made it).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "auth/key_file.h"

namespace fabric::bench {

struct LocalOptions {
  int agents = 4;
  // Namespaces when possible (root + ip); false = loopback always.
  bool netns = true;
  // tbf rate of each veth direction ("1gbit"); empty = unshaped.
  std::string rate = "1gbit";
  // The fabricmon-bench binary that runs `agent`.
  std::string self_exe = "/proc/self/exe";
  // Agent i reads its host's rails and counters from sysfs_roots[i % n]
  // (recorded or simulated trees, to try the fabric guard); empty = /sys.
  std::vector<std::string> sysfs_roots;
};

class LocalCluster {
 public:
  static std::unique_ptr<LocalCluster> Start(const LocalOptions& options,
                                             std::string* error);
  ~LocalCluster();
  const std::vector<std::string>& hosts() const { return hosts_; }
  const Key& key() const { return key_; }
  bool in_netns() const { return !namespaces_.empty(); }
  // Kills agent `i` with SIGKILL (a host dying).
  void Kill(int i);
  const std::string& description() const { return description_; }

 private:
  LocalCluster() = default;
  bool SetUpNetns(const LocalOptions& o, std::string* error);
  bool Spawn(const LocalOptions& o, int i, std::string* error);
  void TearDown();

  std::string dir_;
  std::string key_path_;
  Key key_;
  std::vector<std::string> hosts_;
  std::vector<pid_t> pids_;
  std::vector<std::string> namespaces_;  // agents', then the bridge's
  int original_ns_ = -1;
  std::string description_;
};

}  // namespace fabric::bench
