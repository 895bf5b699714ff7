#include "sources/module_eeprom.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace fabric {
namespace {

class RealModuleEepromSource final : public ModuleEepromSource {
 public:
  RealModuleEepromSource() {
    fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  ~RealModuleEepromSource() override {
    if (fd_ >= 0) ::close(fd_);
  }

  EepromBytesResult Read(const std::string& netdev,
                         const EepromRequest& request) override {
    if (netdev.empty() || netdev.size() >= IFNAMSIZ ||
        netdev.find('/') != std::string::npos || request.length == 0 ||
        request.length > 128) {
      return ErrnoError(EINVAL);
    }
    if (netlink_usable_) {
      EepromBytesResult r = nl_.ModuleEeprom(netdev, request);
      // ENOENT: no ethtool family; EOPNOTSUPP from genetlink for a command
      // it does not know is indistinguishable from a driver without the op,
      // so the ioctl gets its chance either way (it answers EOPNOTSUPP too
      // when the driver has no module EEPROM).
      if (r.ok() || (r.error() != std::errc::no_such_file_or_directory &&
                     r.error() != std::errc::operation_not_supported &&
                     r.error() != std::errc::protocol_not_supported)) {
        return r;
      }
      if (r.error() != std::errc::operation_not_supported) {
        netlink_usable_ = false;  // the kernel has no ethtool netlink at all
      }
    }
    return Ioctl(netdev, request);
  }

  std::string HwAddress(const std::string& netdev) override {
    if (fd_ < 0 || netdev.empty() || netdev.size() >= IFNAMSIZ) return "";
    struct ifreq ifr;
    std::memset(&ifr, 0, sizeof(ifr));
    std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
    if (::ioctl(fd_, SIOCGIFHWADDR, &ifr) != 0 ||
        ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER) {
      return "";
    }
    const auto* a =
        reinterpret_cast<const unsigned char*>(ifr.ifr_hwaddr.sa_data);
    char buf[18];
    std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1],
                  a[2], a[3], a[4], a[5]);
    return buf;
  }

 private:
  int Call(const std::string& netdev, void* data) {
    if (fd_ < 0) return EBADF;
    struct ifreq ifr;
    std::memset(&ifr, 0, sizeof(ifr));
    std::memcpy(ifr.ifr_name, netdev.data(), netdev.size());
    ifr.ifr_data = static_cast<char*>(data);
    int rc;
    do {
      rc = ::ioctl(fd_, SIOCETHTOOL, &ifr);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? errno : 0;
  }

  EepromBytesResult Ioctl(const std::string& netdev,
                          const EepromRequest& request) {
    if (request.bank != 0 || request.i2c_address != 0x50) {
      return ErrnoError(EOPNOTSUPP);  // the flat space has neither
    }
    ethtool_modinfo info{};
    info.cmd = ETHTOOL_GMODULEINFO;
    if (int e = Call(netdev, &info)) return ErrnoError(e);
    // Page 0 is bytes 0-255; page p's upper half follows at p * 128.
    const std::uint32_t flat = request.offset < 128
                                   ? request.offset
                                   : request.page * 128u + request.offset;
    if (request.offset < 128 && request.page != 0) return ErrnoError(EINVAL);
    if (flat + request.length > info.eeprom_len) return ErrnoError(ENODATA);
    std::vector<std::uint8_t> buf(sizeof(ethtool_eeprom) + request.length);
    auto* ee = reinterpret_cast<ethtool_eeprom*>(buf.data());
    ee->cmd = ETHTOOL_GMODULEEEPROM;
    ee->offset = flat;
    ee->len = request.length;
    if (int e = Call(netdev, buf.data())) return ErrnoError(e);
    const std::size_t got = std::min<std::size_t>(ee->len, request.length);
    return std::vector<std::uint8_t>(
        buf.begin() + sizeof(ethtool_eeprom),
        buf.begin() + sizeof(ethtool_eeprom) + got);
  }

  EthtoolNetlink nl_;
  bool netlink_usable_ = true;
  int fd_ = -1;
};

}  // namespace

std::unique_ptr<ModuleEepromSource> MakeRealModuleEepromSource() {
  return std::make_unique<RealModuleEepromSource>();
}

namespace {

class FileModuleEepromSource final : public ModuleEepromSource {
 public:
  explicit FileModuleEepromSource(std::string dir) : dir_(std::move(dir)) {}

  EepromBytesResult Read(const std::string& netdev,
                         const EepromRequest& request) override {
    if (netdev.empty() || netdev.find('/') != std::string::npos ||
        netdev == "." || netdev == ".." || request.length == 0 ||
        request.length > 128 || request.offset > 255) {
      return ErrnoError(EINVAL);
    }
    if (request.bank != 0 || request.i2c_address != 0x50) {
      return ErrnoError(EINVAL);
    }
    std::ifstream in(dir_ + "/" + netdev);
    if (!in) return ErrnoError(EOPNOTSUPP);
    const bool lower = request.offset < 128;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string kind, page, hex;
      words >> kind;
      if (kind == "page") {
        words >> page;
      } else if (kind != "lower") {
        return ErrnoError(EIO);
      }
      words >> hex;
      if (lower != (kind == "lower")) continue;
      if (!lower) {
        unsigned number = 0;
        if (page.size() != 2 ||
            std::sscanf(page.c_str(), "%2x", &number) != 1) {
          return ErrnoError(EIO);
        }
        if (number != request.page) continue;
      }
      std::vector<std::uint8_t> half;
      if (!Unhex(hex, &half)) return ErrnoError(EIO);
      const std::size_t from = request.offset % 128;
      const std::size_t end =
          std::min<std::size_t>(half.size(), from + request.length);
      if (from >= end) return std::vector<std::uint8_t>{};
      return std::vector<std::uint8_t>(half.begin() + from, half.begin() + end);
    }
    return ErrnoError(EINVAL);
  }

 private:
  // At most 128 bytes of hex digits; false on anything else.
  static bool Unhex(const std::string& hex, std::vector<std::uint8_t>* out) {
    if (hex.size() % 2 != 0 || hex.size() > 256) return false;
    auto digit = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      const int hi = digit(hex[i]), lo = digit(hex[i + 1]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<std::uint8_t>(hi << 4 | lo));
    }
    return true;
  }

  std::string dir_;
};

}  // namespace

std::unique_ptr<ModuleEepromSource> MakeFileModuleEepromSource(
    std::string dir) {
  return std::make_unique<FileModuleEepromSource>(std::move(dir));
}

}  // namespace fabric
