// libFuzzer target: transceiver module EEPROM pages
// (sources/transceiver_parse.h). The input is what one module read gives:
// the first 128 bytes are the lower memory, each following chunk of up to
// 128 bytes the next upper page ModulePagesToRead names (short chunks are
// truncated pages).
//
// Thread-safety: libFuzzer calls it from one thread.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "sources/transceiver_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  fabric::ModulePages pages;
  const std::size_t lower = std::min<std::size_t>(in.size(), 128);
  pages.lower.assign(in.begin(), in.begin() + lower);
  in = in.subspan(lower);
  for (int page : fabric::ModulePagesToRead(pages.lower)) {
    const std::size_t n = std::min<std::size_t>(in.size(), 128);
    pages.upper[page].assign(in.begin(), in.begin() + n);
    in = in.subspan(n);
  }
  const fabric::ModuleParse parsed = fabric::ParseModuleEeprom(pages);
  if (parsed.reading) (void)parsed.reading->flags.size();
  return 0;
}
