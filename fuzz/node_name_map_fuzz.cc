// libFuzzer target: infiniband-diags node-name-map files
// (sources/node_name_map.h), read by the fabric sweep and the opensm
// collector (`node_name_map` in both).
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sources/node_name_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)fabric::ParseNodeNameMap(text);
  return 0;
}
