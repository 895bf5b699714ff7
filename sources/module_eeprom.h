// ModuleEepromSource: where the transceiver collector reads a module's
// EEPROM, one request (up to a half page, 128 bytes) at a time. The real
// source asks ethtool netlink (ETHTOOL_MSG_MODULE_EEPROM_GET, by page and
// bank; sources/ethtool_netlink.h) and, where the kernel has no ethtool
// netlink or no such message (before 5.13), falls back to the
// ETHTOOL_GMODULEINFO / ETHTOOL_GMODULEEEPROM ioctls, whose flat address
// space holds page p's upper half at p * 128 + offset (the mapping the
// kernel's own netlink-to-ioctl fallback uses, net/ethtool/eeprom.c);
// requests past the module's reported length are ENODATA there.
//
// Contract: Read() never throws; errors are errno values: EOPNOTSUPP (no
// module EEPROM on this netdev: veth, an IPoIB port of most drivers), ENODEV
// (no such netdev), EIO / ETIMEDOUT (the module did not answer), EINVAL (a
// page or bank the module does not have). Read only.
//
// Thread-safety: an instance is used by one thread at a time (the collector
// owns its source).
#pragma once

#include <memory>
#include <string>

#include "sources/ethtool_netlink.h"

namespace fabric {

class ModuleEepromSource {
 public:
  virtual ~ModuleEepromSource() = default;
  virtual EepromBytesResult Read(const std::string& netdev,
                                 const EepromRequest& request) = 0;
  // The kernel's Ethernet address of `netdev` as sysfs prints it
  // ("0c:42:a1:..."), or "" when unknown (not Ethernet, a fake): the
  // collector compares it with the monitored tree's class/net/<if>/address
  // so a recorded tree never gets a same-named host interface's module.
  virtual std::string HwAddress(const std::string& /*netdev*/) { return ""; }
};

// Module images from files, for trees that are not this kernel's
// (fabricmon-sim writes them; config collectors.transceiver.eeprom_dir):
// <dir>/<netdev> holds one module's memory as text, one line per 128-byte
// half page, "lower <256 hex digits>" and "page <NN hex> <256 hex digits>"
// (bank 0, I2C address 0x50; '#' lines are comments). No file: EOPNOTSUPP
// (no module EEPROM on that netdev); a page the file lacks, another bank
// or address: EINVAL; a line that does not parse: EIO (the module's answer
// is garbage), never a crash. The file is read again at every request, so a
// rewrite between requests can mix two images (fabricmon-sim renames whole
// files, and the collector reads one module within milliseconds).
std::unique_ptr<ModuleEepromSource> MakeFileModuleEepromSource(std::string dir);

// Netlink first, the ioctl when netlink is not there. Sockets are created
// in the constructing thread's network namespace.
std::unique_ptr<ModuleEepromSource> MakeRealModuleEepromSource();

}  // namespace fabric
