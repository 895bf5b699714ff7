// libFuzzer target: the exporter-toolkit web config parser
// (http/web_config.h) on arbitrary bytes, plus the request-header parsers
// the /metrics server runs on untrusted input (Authorization: Basic,
// Accept-Encoding). Any crash, sanitizer report or exception escaping is a
// finding; a clean error message is the expected outcome for bad input.
// Built and run by scripts/fuzz.sh; seeds in fuzz/corpus/web_config/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/basic_auth.h"
#include "http/gzip.h"
#include "http/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  auto config = fabric::http::ParseWebConfig(text, &error);
  // A rejected config always says why.
  if (!config && error.empty()) __builtin_trap();
  fabric::http::ParseBasicAuthorization(text);
  fabric::http::AcceptsGzip(text);
  return 0;
}
