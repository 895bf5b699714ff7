#include "collectors/pods.h"

#include <spdlog/spdlog.h>

#include "collectors/inventory.h"
#include "config/duration.h"
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
    cap_.Apply(static_cast<std::size_t>(settings_.max_series), held, sink);
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
    return true;
  }

 private:
  CollectorEnv env_;
  PodsSettings settings_;
  std::string last_error_;  // the last failure; "" while answering
  SeriesCap cap_{"fabric_pod_devices_over_cap",
                 "Pod device series beyond collectors.pods.max_series, not "
                 "exported (the first by namespace, pod, container, device "
                 "are)."};
};

}  // namespace

CollectorSpec PodsCollectorSpec() {
  using namespace config_keys;
  return InventorySpec<PodsCollector, PodsSettings>(
      "pods", {"socket", "deadline", "max_series", "shared"},
      [](PodsSettings& settings, const SettingKey& key) {
        if (key.name == "socket") {
          settings.socket = PathKey(key);
        } else if (key.name == "deadline") {
          settings.deadline =
              Duration(key.value, key.path, std::chrono::milliseconds(1));
        } else if (key.name == "max_series") {
          settings.max_series = CapKey(key, 65536, "series");
        } else if (key.name == "shared" && !key.value.IsNull()) {
          RequireMap(key.value, key.path);
          for (const auto& kv : key.value) {
            const std::string resource = kv.first.as<std::string>();
            settings.shared[resource] =
                Names(kv.second, Join(key.path, resource));
          }
        }
      },
      // The List must give up before the collection's own timeout does.
      [](const PodsSettings& settings, const YAML::Node& node,
         const std::string& path, const CollectorConfig& generic) {
        if (generic.enabled && settings.deadline >= generic.timeout) {
          Fail(Join(path, "deadline"), KeyMark(node, "deadline"),
               "must be shorter than the timeout (" +
                   FormatDuration(generic.timeout) + ")");
        }
      });
}

}  // namespace fabric
