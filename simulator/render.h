// Renders one simulated host as a live sysfs tree:
//   <root>/class/infiniband/<dev>/{board_id,fw_ver,hca_type,node_guid,...}
//   <root>/class/infiniband/<dev>/ports/1/{state,rate,...,counters/,hw_counters/}
//   <root>/class/net/bond0/{operstate,speed,...,ecn/roce_np|roce_rp/...}
//   <root>/ethtool/bond0   (`ethtool -S` text of the RoCE netdev, outside
//                           class/: not sysfs, read by the daemon's
//                           file-backed EthtoolSource; simulator/ethtool.h)
//   <root>/dcb/bond0       (the netdev's DCB configuration as `dcb` prints
//                           it, read by the daemon's file-backed DcbSource;
//                           simulator/dcb.h)
//   <root>/eeprom/bond0    (the netdev's transceiver EEPROM image, read by
//                           the daemon's file-backed ModuleEepromSource,
//                           config collectors.transceiver.eeprom_dir;
//                           simulator/transceiver.h)
//   <root>/fs/cgroup/...   (slurmd's cgroup tree of the Slurm jobs running
//   <root>/proc/<pid>/...   on the host, and their tasks' status and
//                           environ: the jobs collector's cgroup_root and
//                           proc_root; simulator/slurm.h)
// with the layout of the recorded H100 tree (tests/fixtures/real/
// sysfs-gpud-h100) plus the attributes real kernels also have there (lid,
// sm_lid, node_guid, ...; docs/simulator.md lists them).
//
// Readers never see a half-written value: each changed file is written to a
// staging directory (<root>/.sim-staging, outside class/) and renamed over
// the old one; a device that appears is built complete in staging and
// renamed into place; a removed device is renamed away first (and its
// netdev's ethtool and DCB dumps unlinked). Unchanged files are not rewritten.
//
// Thread-safety: none; one thread renders (the model must not change
// during Render()).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "simulator/model.h"

namespace fabric::sim {

class SysfsRenderer {
 public:
  // Renders host `host` of the cluster below `root` (created if needed).
  SysfsRenderer(std::filesystem::path root, int host);

  // Brings the tree up to date with the model. Returns false and sets
  // *error on an I/O error (the tree stays consistent file by file).
  bool Render(const Cluster& cluster, std::string* error);

  // Removes the whole tree this renderer wrote (root included).
  void Remove();

  const std::filesystem::path& root() const { return root_; }

  // Directory of the ethtool dumps below the root: <root>/ethtool/<netdev>.
  static constexpr const char* kEthtoolDir = "ethtool";
  // Directory of the DCB dumps below the root: <root>/dcb/<netdev>.
  static constexpr const char* kDcbDir = "dcb";
  // Directory of the module EEPROM images: <root>/eeprom/<netdev>.
  static constexpr const char* kEepromDir = "eeprom";

 private:
  using Files = std::map<std::string, std::string>;  // relative path -> data
  void DeviceFiles(const Cluster& cluster, const Device& device,
                   Files* out) const;
  void NetFiles(const Cluster& cluster, const Device& device, Files* out) const;
  bool WriteAtomic(const std::string& relative, const std::string& data,
                   std::string* error);
  bool InstallDir(const std::string& relative, const Files& files,
                  std::string* error);
  bool RemoveDir(const std::string& relative, std::string* error);
  // Installs the directories of the jobs that started and removes those of
  // the jobs that ended: a task's proc/<pid> before its job's cgroup, the
  // cgroup first when it ends, so a reader that sees a job finds its task.
  bool RenderJobs(const Cluster& cluster, std::string* error);
  // Writes (or, for a removed device, unlinks) <root>/ethtool/<netdev>,
  // <root>/dcb/<netdev> and <root>/eeprom/<netdev>.
  bool RenderDumps(const Cluster& cluster, const Device& device,
                   std::string* error);
  // Writes `text` to <root>/<dir>/<netdev> when it changed, or unlinks the
  // file when `text` is null; `written` remembers what is on disk.
  bool RenderDump(const char* dir, const std::string& netdev,
                  const std::string* text,
                  std::map<std::string, std::string>* written,
                  std::string* error);

  std::filesystem::path root_;
  std::filesystem::path staging_;
  int host_;
  std::uint64_t serial_ = 0;
  std::map<std::string, Files> written_;  // top dir (device/netdev) -> files
  std::map<std::string, std::string> ethtool_written_;  // netdev -> dump
  std::map<std::string, std::string> link_written_;     // netdev.link -> text
  std::map<std::string, std::string> dcb_written_;      // netdev -> dump
  std::map<std::string, std::string> eeprom_written_;   // netdev -> image
  std::set<std::string> jobs_written_;  // job cgroup and proc/<pid> dirs
};

}  // namespace fabric::sim
