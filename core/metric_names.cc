#include "core/metric_names.h"

namespace fabric {
namespace {

constexpr DocumentedMetric kDocumented[] = {
#include "generated/core/metric_names_table.inc"
};

bool Listed(std::string_view name) {
  for (const auto& m : kDocumented) {
    if (m.name == name) return true;
  }
  return false;
}

}  // namespace

std::span<const DocumentedMetric> DocumentedMetrics() { return kDocumented; }

std::vector<std::string> DocumentedFamilies(std::string_view section) {
  std::vector<std::string> out;
  for (const auto& m : kDocumented) {
    if (m.section == section) out.emplace_back(m.name);
  }
  return out;
}

bool IsDocumentedMetric(std::string_view name) {
  if (Listed(name)) return true;
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.ends_with(suffix) &&
        Listed(name.substr(0, name.size() - suffix.size()))) {
      return true;
    }
  }
  return false;
}

}  // namespace fabric
