#include "sources/dcb_file.h"

#include <fcntl.h>
#include <linux/dcbnl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <optional>
#include <vector>

#include "sources/fd_read.h"

namespace fabric {
namespace {

std::error_code Errno(int e) { return {e, std::generic_category()}; }

// PCP selector of the kernel's APP table (DCB_APP_SEL_PCP, Linux 6.2; not in
// older headers).
constexpr std::uint8_t kSelPcp = 255;

std::optional<std::uint64_t> Number(std::string_view s, std::uint64_t max) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > max) {
    return std::nullopt;
  }
  return v;
}

std::optional<bool> OnOff(std::string_view s) {
  if (s == "on") return true;
  if (s == "off") return false;
  return std::nullopt;
}

// DSCP code point names as iproute2 prints them (RFC 2474/2597/3246/5865/
// 8622), or a number.
std::optional<std::uint64_t> Dscp(std::string_view s) {
  static const std::map<std::string_view, int> kNames = {
      {"CS0", 0},   {"CS1", 8},   {"CS2", 16},  {"CS3", 24},  {"CS4", 32},
      {"CS5", 40},  {"CS6", 48},  {"CS7", 56},  {"AF11", 10}, {"AF12", 12},
      {"AF13", 14}, {"AF21", 18}, {"AF22", 20}, {"AF23", 22}, {"AF31", 26},
      {"AF32", 28}, {"AF33", 30}, {"AF41", 34}, {"AF42", 36}, {"AF43", 38},
      {"EF", 46},   {"VA", 44},   {"LE", 1}};
  if (auto it = kNames.find(s); it != kNames.end()) return it->second;
  return Number(s, 63);
}

std::vector<std::string_view> Tokens(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
    } else {
      const std::size_t start = i;
      while (i < text.size() && text[i] != ' ' && text[i] != '\t' &&
             text[i] != '\n' && text[i] != '\r' && text[i] != '#') {
        ++i;
      }
      out.push_back(text.substr(start, i - start));
    }
  }
  return out;
}

// `key:value` split at the last ':' (keys never contain one; values of
// ethtype/port maps do not either).
bool SplitPair(std::string_view token, std::string_view* key,
               std::string_view* value) {
  const std::size_t colon = token.rfind(':');
  if (colon == std::string_view::npos || colon == 0 ||
      colon + 1 == token.size()) {
    return false;
  }
  *key = token.substr(0, colon);
  *value = token.substr(colon + 1);
  return true;
}

enum class Kind { kScalar, kMap };

const std::map<std::string_view, Kind>& Keys() {
  static const std::map<std::string_view, Kind> kKeys = {
      {"pfc-cap", Kind::kScalar},
      {"macsec-bypass", Kind::kScalar},
      {"delay", Kind::kScalar},
      {"prio-pfc", Kind::kMap},
      {"requests", Kind::kMap},
      {"indications", Kind::kMap},
      {"willing", Kind::kScalar},
      {"ets-cap", Kind::kScalar},
      {"cbs", Kind::kScalar},
      {"prio-tc", Kind::kMap},
      {"tc-bw", Kind::kMap},
      {"pg-bw", Kind::kMap},
      {"tc-tsa", Kind::kMap},
      {"reco-tc-bw", Kind::kMap},
      {"reco-tc-tsa", Kind::kMap},
      {"reco-prio-tc", Kind::kMap},
      {"dscp-prio", Kind::kMap},
      {"pcp-prio", Kind::kMap},
      {"default-prio", Kind::kMap},
      {"ethtype-prio", Kind::kMap},
      {"stream-port-prio", Kind::kMap},
      {"dgram-port-prio", Kind::kMap},
      {"port-prio", Kind::kMap}};
  return kKeys;
}

class Parser {
 public:
  DcbResult Run(std::string_view text) {
    const auto tokens = Tokens(text);
    std::size_t i = 0;
    while (i < tokens.size()) {
      const std::string_view key = tokens[i++];
      const auto kind = Keys().find(key);
      if (kind == Keys().end()) {
        // Unknown key (a newer `dcb`): skip it and its map entries.
        while (i < tokens.size() && !Keys().count(tokens[i]) &&
               tokens[i].find(':') != std::string_view::npos) {
          ++i;
        }
        continue;
      }
      if (kind->second == Kind::kScalar) {
        if (i >= tokens.size() || !Scalar(key, tokens[i++])) return Bad();
        continue;
      }
      // default-prio prints bare priorities (`default-prio 3`).
      while (i < tokens.size() && !Keys().count(tokens[i]) &&
             (tokens[i].find(':') != std::string_view::npos ||
              key == "default-prio")) {
        if (!Entry(key, tokens[i++])) return Bad();
      }
    }
    return std::move(ieee_);
  }

 private:
  static DcbResult Bad() { return Errno(EBADMSG); }
  DcbPfc& Pfc() {
    if (!ieee_.pfc) ieee_.pfc.emplace();
    return *ieee_.pfc;
  }
  DcbEts& Ets() {
    if (!ieee_.ets) ieee_.ets.emplace();
    return *ieee_.ets;
  }

  bool Scalar(std::string_view key, std::string_view value) {
    if (key == "pfc-cap") {
      auto v = Number(value, 8);
      if (v) Pfc().cap = static_cast<std::uint8_t>(*v);
      return v.has_value();
    }
    if (key == "delay") {
      auto v = Number(value, 0xffff);
      if (v) Pfc().delay = static_cast<std::uint16_t>(*v);
      return v.has_value();
    }
    if (key == "willing") {
      auto v = OnOff(value);
      if (v) Ets().willing = *v;
      return v.has_value();
    }
    if (key == "ets-cap") {
      auto v = Number(value, 8);
      if (v) Ets().ets_cap = static_cast<std::uint8_t>(*v);
      return v.has_value();
    }
    // macsec-bypass, cbs: read for validity only.
    return OnOff(value).has_value();
  }

  bool Entry(std::string_view key, std::string_view token) {
    if (key == "default-prio") {
      auto prio = Number(token, 7);
      if (!prio) return false;
      App(IEEE_8021QAZ_APP_SEL_ETHERTYPE, *prio, 0);
      return true;
    }
    std::string_view left, right;
    if (!SplitPair(token, &left, &right)) return false;
    if (key == "dscp-prio" || key == "pcp-prio" || key == "ethtype-prio" ||
        key == "stream-port-prio" || key == "dgram-port-prio" ||
        key == "port-prio") {
      return AppEntry(key, left, right);
    }
    auto prio = Number(left, 7);
    if (!prio) return false;
    const std::size_t p = *prio;
    if (key == "prio-pfc") {
      auto on = OnOff(right);
      if (!on) return false;
      DcbPfc& pfc = Pfc();
      pfc.enabled = static_cast<std::uint8_t>(*on ? pfc.enabled | (1u << p)
                                                  : pfc.enabled & ~(1u << p));
      return true;
    }
    if (key == "requests" || key == "indications") {
      auto v = Number(right, UINT64_MAX);
      if (!v) return false;
      (key == "requests" ? Pfc().requests : Pfc().indications)[p] = *v;
      return true;
    }
    if (key == "prio-tc") {
      auto tc = Number(right, 7);
      if (!tc) return false;
      Ets().prio_tc[p] = static_cast<std::uint8_t>(*tc);
      return true;
    }
    return true;  // tc-bw, tc-tsa, ...: not kept
  }

  bool AppEntry(std::string_view key, std::string_view left,
                std::string_view right) {
    auto prio = Number(right, 7);
    if (!prio) return false;
    if (key == "dscp-prio") {
      auto dscp = Dscp(left);
      if (!dscp) return false;
      App(IEEE_8021QAZ_APP_SEL_DSCP, *prio, *dscp);
      return true;
    }
    if (key == "pcp-prio") {
      App(kSelPcp, *prio, 0);
      return true;
    }
    std::uint8_t selector = IEEE_8021QAZ_APP_SEL_ANY;
    if (key == "ethtype-prio") selector = IEEE_8021QAZ_APP_SEL_ETHERTYPE;
    if (key == "stream-port-prio") selector = IEEE_8021QAZ_APP_SEL_STREAM;
    if (key == "dgram-port-prio") selector = IEEE_8021QAZ_APP_SEL_DGRAM;
    // Ethertypes print as hex (0x8906); ports as decimal.
    std::uint64_t protocol = 0;
    const bool hex =
        left.size() > 2 && left[0] == '0' && (left[1] == 'x' || left[1] == 'X');
    const std::string_view digits = hex ? left.substr(2) : left;
    const auto [end, ec] = std::from_chars(
        digits.data(), digits.data() + digits.size(), protocol, hex ? 16 : 10);
    if (ec != std::errc() || end != digits.data() + digits.size() ||
        protocol > 0xffff) {
      return false;
    }
    App(selector, *prio, protocol);
    return true;
  }

  void App(std::uint8_t selector, std::uint64_t prio, std::uint64_t protocol) {
    ieee_.has_app_table = true;
    ieee_.apps.push_back({selector, static_cast<std::uint8_t>(prio),
                          static_cast<std::uint16_t>(protocol)});
  }

  DcbIeee ieee_;
};

bool UsableName(const std::string& name) {
  return !name.empty() && name.size() < 16 && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

DcbResult ParseDcbText(std::string_view text) { return Parser().Run(text); }

DcbResult FileDcbSource::Ieee(const std::string& netdev) {
  if (!UsableName(netdev)) return Errno(ENODEV);
  std::string text;
  if (const int e =
          ReadWholeFile(dir_ + "/" + netdev, kMaxDcbDumpBytes, &text)) {
    // No dump: no DCB information for this netdev, as for a netdev without
    // dcbnl ops.
    return Errno(e == ENOENT || e == ENOTDIR ? EOPNOTSUPP : e);
  }
  return ParseDcbText(text);
}

std::unique_ptr<DcbSource> MakeFileDcbSource(const std::string& dir) {
  return std::make_unique<FileDcbSource>(dir);
}

}  // namespace fabric
