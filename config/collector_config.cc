#include "config/collector_config.h"

namespace fabric {

bool CollectorConfig::operator==(const CollectorConfig& o) const {
  const bool same_settings =
      settings == o.settings ||
      (settings && o.settings && settings->Equals(*o.settings));
  return enabled == o.enabled && interval == o.interval &&
         timeout == o.timeout && devices == o.devices && series == o.series &&
         same_settings;
}

}  // namespace fabric
