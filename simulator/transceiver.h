// The simulator's transceivers: the module EEPROM image of each host's RoCE
// port (a QSFP56 200G optical module, SFF-8636: lower memory, upper pages
// 00h and 03h) as the text that sources/module_eeprom.h's file-backed source
// reads (config collectors.transceiver.eeprom_dir = <host>/eeprom). The
// temperature follows the model (Port::module_temperature_celsius: the
// dying-cable scenario warms it); the thresholds are the module's own
// (kModuleTempHigh{Warning,Alarm}Celsius), and the latched temperature
// flags are set while it is past them. Built byte by byte from SFF-8636
// rev 2.10a Tables 6-2 to 6-9, 6-16 and 6-27 (the layout
// tests/unit/transceiver_test.cc's fixtures use).
//
// Thread-safety: pure function of the model.
#pragma once

#include <optional>
#include <string>

#include "simulator/model.h"

namespace fabric::sim {

// The image of `netdev` on `host`, or nullopt when it has no module (not a
// present RoCE netdev of that host).
std::optional<std::string> SimModuleEepromText(const Cluster& cluster, int host,
                                               const std::string& netdev);

}  // namespace fabric::sim
