// libFuzzer target: infiniband-diags node-name-map files, read by the
// fabric collector (mad/node_name_map.h, `collectors.fabric.node_name_map`)
// and by the opensm collector (collectors/opensm_parse.h): both get the
// same bytes.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/opensm_parse.h"
#include "mad/node_name_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)fabric::mad::ParseNodeNameMap(text);
  (void)fabric::ParseNodeNameMap(text);
  return 0;
}
