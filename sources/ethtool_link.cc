#include "sources/ethtool_link.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace fabric {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

// The words of `s`, split on blanks.
void AddWords(std::string_view s, std::vector<std::string>* out) {
  while (true) {
    s = Trim(s);
    if (s.empty()) return;
    const auto end = std::find_if(s.begin(), s.end(), [](char c) {
      return std::isspace(static_cast<unsigned char>(c));
    });
    const std::size_t n = static_cast<std::size_t>(end - s.begin());
    out->emplace_back(s.substr(0, n));
    s.remove_prefix(n);
  }
}

}  // namespace

std::optional<std::uint64_t> LinkModeSpeedMbps(std::string_view name) {
  const auto base = name.find("base");
  if (base == std::string_view::npos || base == 0) return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + base, v);
  if (ec != std::errc() || end != name.data() + base || v == 0) {
    return std::nullopt;
  }
  return v;
}

std::optional<std::uint64_t> FastestMbps(
    const std::vector<std::string>& modes) {
  std::optional<std::uint64_t> best;
  for (const auto& m : modes) {
    if (const auto v = LinkModeSpeedMbps(m); v && (!best || *v > *best)) {
      best = v;
    }
  }
  return best;
}

std::optional<std::uint64_t> CapableMbps(const EthtoolLink& link) {
  if (auto v = FastestMbps(link.advertised)) return v;
  return FastestMbps(link.supported);
}

std::vector<std::string> LinkModeNames(std::span<const std::uint32_t> words,
                                       const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (std::size_t bit = 0; bit < words.size() * 32 && bit < names.size();
       ++bit) {
    if (words[bit / 32] & (1u << (bit % 32))) out.push_back(names[bit]);
  }
  return out;
}

std::optional<EthtoolLink> ParseEthtoolLinkText(std::string_view text) {
  EthtoolLink link;
  bool any = false;
  std::vector<std::string>* list = nullptr;  // the list being continued
  static constexpr std::pair<std::string_view, int> kLists[] = {
      {"Supported link modes:", 0},
      {"Advertised link modes:", 1},
      {"Link partner advertised link modes:", 2},
  };
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    const std::string_view t = Trim(line);
    if (t.empty()) continue;
    if (t.find(':') == std::string_view::npos) {
      // A continuation line: more modes of the list above.
      if (list && line.size() > t.size()) AddWords(t, list);
      continue;
    }
    list = nullptr;
    for (const auto& [key, which] : kLists) {
      if (t.rfind(key, 0) != 0) continue;
      list = which == 0   ? &link.supported
             : which == 1 ? &link.advertised
                          : &link.partner;
      any = true;
      const std::string_view rest = Trim(t.substr(key.size()));
      if (rest != "Not reported") AddWords(rest, list);
    }
    constexpr std::string_view kSpeed = "Speed:";
    if (t.rfind(kSpeed, 0) == 0) {
      any = true;
      const std::string_view v = Trim(t.substr(kSpeed.size()));
      std::uint64_t mbps = 0;
      const auto [end, ec] =
          std::from_chars(v.data(), v.data() + v.size(), mbps);
      if (ec == std::errc() &&
          std::string_view(end, v.data() + v.size() - end) == "Mb/s") {
        link.speed_mbps = mbps;
      }
    }
  }
  if (!any) return std::nullopt;
  return link;
}

}  // namespace fabric
