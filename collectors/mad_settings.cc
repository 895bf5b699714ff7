#include "collectors/mad_settings.h"

#include "config/yaml_keys.h"

namespace fabric {

bool ReadMadKey(const std::string& key, const YAML::Node& value,
                const std::string& key_path, MadSettings& settings) {
  using namespace config_keys;
  if (key == kMadTimeoutKey) {
    settings.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        Duration(value, key_path, kMinMadTimeout));
    return true;
  }
  if (key == kMadRetriesKey) {
    settings.retries = static_cast<int>(
        Integer(value, key_path, 0, 20, "a retry count (0 to 20, e.g. 2)"));
    return true;
  }
  return false;
}

}  // namespace fabric
