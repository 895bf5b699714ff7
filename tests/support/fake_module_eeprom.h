// FakeModuleEeprom: the one fake ModuleEepromSource
// (sources/module_eeprom.h) of the unit tests. Each netdev has a module
// image: its lower memory and upper pages (ModulePages); a read answers the
// bytes asked for, EINVAL for a page the image lacks, and the netdev's
// `errors` entry instead when set. A netdev without an image answers
// EOPNOTSUPP, as the kernel answers a netdev without module EEPROM. Every
// call is logged.
//
// Thread-safety: none; one test thread sets it up and the collector that
// owns it calls it.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "sources/module_eeprom.h"
#include "sources/transceiver_parse.h"

namespace fabric::testing {

class FakeModuleEeprom final : public ModuleEepromSource {
 public:
  std::map<std::string, ModulePages> modules;
  std::map<std::string, std::error_code> errors;
  // "netdev:page" per read, in order; shared, so a test can look at it
  // after the collector that owns the fake is gone.
  std::shared_ptr<std::vector<std::string>> calls =
      std::make_shared<std::vector<std::string>>();

  EepromBytesResult Read(const std::string& netdev,
                         const EepromRequest& r) override {
    calls->push_back(netdev + ":" + std::to_string(r.page));
    if (auto e = errors.find(netdev); e != errors.end()) return e->second;
    auto m = modules.find(netdev);
    if (m == modules.end()) return std::errc::operation_not_supported;
    const std::vector<std::uint8_t>* bytes = nullptr;
    std::size_t from = 0;
    if (r.offset < 128) {
      bytes = &m->second.lower;
      from = r.offset;
    } else {
      auto p = m->second.upper.find(r.page);
      if (p == m->second.upper.end()) return std::errc::invalid_argument;
      bytes = &p->second;
      from = r.offset - 128;
    }
    // A short image gives short reads: truncated pages reach the parser.
    const std::size_t end =
        std::min<std::size_t>(bytes->size(), from + r.length);
    if (from >= end) return std::vector<std::uint8_t>{};
    return std::vector<std::uint8_t>(bytes->begin() + from,
                                     bytes->begin() + end);
  }
};

}  // namespace fabric::testing
