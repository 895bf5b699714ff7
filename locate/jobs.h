// fabricmon-locate's jobs: which Slurm jobs run on the hosts of the bad
// pairs that cross a ranked link (issue 43; docs/locate.md "Jobs"). A
// pair's hosts are its prober (the `instance` label of its series) and its
// peer (the address it was configured with), each without its port; a job
// series (fabric_node_job_info, one query for the whole fleet) belongs to a
// host when its `instance` without the port, or its `host` target label, is
// that host. Pure functions on values, tested on strings.
//
// Thread-safety: pure functions on values.
#pragma once

#include <compare>
#include <set>
#include <string>
#include <vector>

#include "locate/prometheus.h"

namespace fabric::locate {

struct Job {
  std::string job_id, user, job_name;
  auto operator<=>(const Job&) const = default;
};

// The fleet's jobs, one series per host and job.
inline constexpr char kJobsQuery[] =
    "max by (instance, host, job_id, user, job_name) (fabric_node_job_info)";

// "10.0.0.1:10915" -> "10.0.0.1", "[fe80::1]:10916" -> "fe80::1",
// "gpu001" -> "gpu001".
std::string HostOf(const std::string& address);

// The prober's host from its identifying labels ("instance=h:10915,job=f"):
// its instance without the port; "" when there is no instance.
std::string ProberHost(const std::string& prober_labels);

// The jobs of `samples` (kJobsQuery's answer) on any of `hosts`, each once,
// ordered by job ID (numerically where both are numbers), then user, name.
std::vector<Job> JobsOnHosts(const std::vector<PromSample>& samples,
                             const std::set<std::string>& hosts);

// "4711 (alice: llama-70b), 4712 (bob)", as the alerts' annotation says it.
std::string JobsText(const std::vector<Job>& jobs);

}  // namespace fabric::locate
