// libFuzzer target: `ethtool -S` text (sources/ethtool_parse.h) as the
// ethtool_dir files hold it, then the typed RoCE/PFC view built from what
// was parsed; and iproute2 `dcb` text (sources/dcb_file.h), the other
// file-based RoCE input.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/dcb_file.h"
#include "sources/ethtool_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const fabric::EthtoolText parsed = fabric::ParseEthtoolText(text);
  (void)fabric::ParseEthtoolStats(parsed.stats.names, parsed.stats.values);
  (void)fabric::ParseDcbText(text);
  return 0;
}
