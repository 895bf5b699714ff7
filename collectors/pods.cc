#include "collectors/pods.h"

#include <spdlog/spdlog.h>

#include "config/duration.h"
#include "config/yaml_keys.h"
#include "sources/pod_resources.h"

namespace fabric {
namespace {

class PodsCollector final : public Collector {
 public:
  PodsCollector(CollectorEnv env, PodsSettings settings)
      : env_(std::move(env)), settings_(std::move(settings)) {}
  std::string_view Name() const override { return "pods"; }

  bool Collect(MetricSink& sink) override {
    PodResourcesReply reply = ListPodResources(
        settings_.socket, std::chrono::duration_cast<std::chrono::milliseconds>(
                              settings_.deadline));
    if (!reply.error.empty()) {
      // Once per streak: a kubelet that is down stays down for a while,
      // and its errors vary (refused, reset, deadline) as it does.
      if (last_error_.empty()) spdlog::warn("pods: {}", reply.error);
      last_error_ = reply.error;
      return false;
    }
    if (!last_error_.empty()) {
      spdlog::info("pods: the kubelet answers again");
      last_error_.clear();
    }
    std::vector<PodDevice> held =
        MapPodDevices(*env_.sysfs, reply.containers, settings_.shared);
    const std::size_t cap = static_cast<std::size_t>(settings_.max_series);
    const std::size_t over = held.size() > cap ? held.size() - cap : 0;
    held.resize(held.size() - over);
    for (PodDevice& p : held) {
      sink.Gauge("fabric_pod_device_info",
                 "A Kubernetes pod's container holding this RDMA device (from "
                 "the kubelet's pod-resources API; a VF: its PF's device).",
                 Labels{{"namespace", std::move(p.ns)},
                        {"pod", std::move(p.pod)},
                        {"container", std::move(p.container)},
                        {"device", std::move(p.device)}},
                 1);
    }
    if (over > 0 || had_over_) {
      had_over_ = true;
      sink.Gauge("fabric_pod_devices_over_cap",
                 "Pod device series beyond collectors.pods.max_series, not "
                 "exported (the first by namespace, pod, container, device "
                 "are).",
                 {}, static_cast<double>(over));
    }
    return true;
  }

 private:
  CollectorEnv env_;
  PodsSettings settings_;
  std::string last_error_;  // the last failure; "" while answering
  bool had_over_ = false;   // keep the gauge (at 0) once it has been seen
};

}  // namespace

std::unique_ptr<Collector> MakePodsCollector(const CollectorEnv& env,
                                             const CollectorConfig& config) {
  return std::make_unique<PodsCollector>(env, SettingsAs<PodsSettings>(config));
}

CollectorSpec PodsCollectorSpec() {
  using namespace config_keys;
  CollectorSpec spec;
  spec.name = "pods";
  spec.interval = std::chrono::seconds(30);
  spec.keys = {"socket", "deadline", "max_series", "shared"};
  spec.parse = [](const YAML::Node& node, const std::string& path,
                  const CollectorConfig& generic) {
    PodsSettings settings;
    ForEachKey(
        node, path,
        [&](const std::string& key, const YAML::Node& value,
            const std::string& key_path, const YAML::Mark& mark) {
          if (key == "socket") {
            settings.socket = Scalar(value, key_path);
            if (settings.socket.empty() || settings.socket[0] != '/') {
              Fail(key_path, mark, "must be an absolute path");
            }
          } else if (key == "deadline") {
            settings.deadline =
                Duration(value, key_path, std::chrono::milliseconds(1));
          } else if (key == "max_series") {
            settings.max_series = static_cast<int>(Integer(
                value, key_path, 1, 65536, "a number of series in 1..65536"));
          } else if (key == "shared" && !value.IsNull()) {
            RequireMap(value, key_path);
            for (const auto& kv : value) {
              const std::string resource = kv.first.as<std::string>();
              settings.shared[resource] =
                  Names(kv.second, Join(key_path, resource));
            }
          }
        });
    // The List must give up before the collection's own timeout does.
    if (generic.enabled && settings.deadline >= generic.timeout) {
      Fail(Join(path, "deadline"), KeyMark(node, "deadline"),
           "must be shorter than the timeout (" +
               FormatDuration(generic.timeout) + ")");
    }
    return std::make_shared<SettingsOf<PodsSettings>>(settings);
  };
  spec.make = MakePodsCollector;
  return spec;
}

}  // namespace fabric
