// The per-MAD keys every collector that sends MADs (sm, fabric, ib_link)
// accepts under its `collectors.<name>` mapping, read in one place so they mean
// and check the same everywhere:
//   mad_timeout  duration, per try (default 500ms, at least 1ms)
//   mad_retries  tries after the first, 0 to 20 (default 2)
// Not a collector: a helper of the MAD collectors' settings parsers.
//
// Thread-safety: plain values and a pure function.
#pragma once

#include <chrono>
#include <string>

#include "sources/mad/mad_transport.h"

namespace YAML {
class Node;
}

namespace fabric {

struct MadSettings {
  std::chrono::milliseconds timeout{500};
  int retries = 2;
  bool operator==(const MadSettings&) const = default;

  // `options` with this timeout and retry count.
  MadOptions Apply(MadOptions options) const {
    options.timeout = timeout;
    options.retries = retries;
    return options;
  }
};

// The shortest mad_timeout accepted: the timeout is kept in whole
// milliseconds, and 0 would resend as fast as answers fail.
inline constexpr std::chrono::milliseconds kMinMadTimeout{1};

// The key names, for a CollectorSpec's `keys`.
inline constexpr const char* kMadTimeoutKey = "mad_timeout";
inline constexpr const char* kMadRetriesKey = "mad_retries";

// Reads `key` into `settings` when it is one of the keys above (errors name
// `key_path` and the line, config/yaml_keys.h); false for any other key.
bool ReadMadKey(const std::string& key, const YAML::Node& value,
                const std::string& key_path, MadSettings& settings);

}  // namespace fabric
