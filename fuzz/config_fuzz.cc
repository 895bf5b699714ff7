// libFuzzer target: the YAML config (config/config.h) with every
// collector's own keys (the registry's specs, as the daemon passes them):
// what --check-config, start-up and SIGHUP read from disk.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/registry.h"
#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  std::string error;
  (void)fabric::ParseConfig(yaml, fabric::AllCollectorKeys(), &error);
  return 0;
}
