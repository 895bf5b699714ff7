// The metadata results.json keeps about a run, so that a number read months
// later says what it was measured on: the agents, the RDMA devices (HCA
// model, firmware, and per port link layer, rate, MTU), the link --local
// built, the line rate the report draws, start and end time and the
// fabricmon build, and the Slurm allocation it ran in.
//
// Devices are read through the daemon's sysfs door (core/sysfs.h) on the
// host that runs the coordinator, which for --local is the host the agents
// run on; remote agents (--hosts) do not report theirs, so for such a run
// the device list is empty and `devices_from` says so. Anything a host does
// not have or does not say reads "unknown", never an error.
//
// Thread-safety: pure functions (ReadDevices only reads through `sysfs`).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "sources/sysfs.h"

namespace fabric::bench {

struct PortInfo {
  std::string port;        // "1"
  std::string link_layer;  // "InfiniBand", "Ethernet"
  std::string rate;        // as sysfs says: "400 Gb/sec (4X NDR)"
  std::string mtu;    // RoCE: its netdev's MTU; IB: "unknown" (not in sysfs)
  std::string state;  // "4: ACTIVE"
};

struct DeviceInfo {
  std::string name;       // "mlx5_0"
  std::string hca_model;  // hca_type: "MT4129"
  std::string board_id;
  std::string firmware;  // fw_ver
  std::vector<PortInfo> ports;
};

struct RunInfo {
  std::vector<std::string> hosts;  // agents, host:port, rank order
  std::string link;                // --local: what links the agents
  std::string devices_from;        // "this host (--local)", or why none
  std::vector<DeviceInfo> devices;
  double line_rate_bytes_per_second = 0;  // 0 = not known
  std::string line_rate_source;           // "tbf 1gbit", "--line-rate 400gbit"
  std::string start_time, end_time;       // ISO 8601 UTC
  std::string fabricmon_version, fabricmon_revision;
  // Each host's kinds of rail as its agent reported them (rank order;
  // fabric_guard.h HostClasses, "" = none reported), the set's class
  // (HostSetCheck::fabric_class) and, for a mixed set run with
  // --allow-mixed, the guard's warning.
  std::vector<std::string> host_fabric_classes;
  std::string fabric_class;
  std::string mixed_warning;
  // The Slurm allocation the run was made in (SLURM_JOB_ID, _NAME,
  // _NODELIST of the coordinator's environment); empty outside Slurm.
  std::string slurm_job_id, slurm_job_name, slurm_job_nodelist;
};

// Fills the slurm_* fields from `getenv` (std::getenv, or a test's).
void ReadSlurmAllocation(const std::function<const char*(const char*)>& getenv,
                         RunInfo* info);

// Every device under class/infiniband with its ports.
std::vector<DeviceInfo> ReadDevices(const Sysfs& sysfs);

// A rate as tc writes it ("1gbit", "500mbit", "10gbps" = bytes, "800kbit",
// a bare number = bits) in bytes per second; 0 when it is not one.
double ParseTcRate(const std::string& text);

// A port's sysfs rate ("400 Gb/sec (4X NDR)", "2.5 Gb/sec (1X SDR)") in
// bytes per second; 0 when it is not one.
double ParseSysfsRate(const std::string& text);

// "2024-05-01T12:34:56Z".
std::string IsoTime(std::chrono::system_clock::time_point t);

}  // namespace fabric::bench
