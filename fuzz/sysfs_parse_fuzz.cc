// libFuzzer target: the sysfs value parsers (sources/sysfs_parse.h) on
// arbitrary text: counters, hex, GUIDs, GIDs, port state and rate strings
// as the kernel (or a broken driver) writes them. A parsed GUID must come
// back unchanged from its label form (FormatGuid's "0x" + 16 hex digits).
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sources/sysfs_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)fabric::TrimValue(text);
  (void)fabric::ParseU64(text);
  (void)fabric::ParseHex(text);
  (void)fabric::ParseGidInterfaceId(text);
  (void)fabric::ParseState(text);
  (void)fabric::ParseRate(text);
  const auto guid = fabric::ParseGuid(text);
  (void)fabric::ParseStatusName(guid.status);
  if (guid.ok()) {
    const auto again = fabric::ParseHex(fabric::FormatGuid(guid.value));
    if (!again.ok() || again.value != guid.value) std::abort();
  }
  return 0;
}
