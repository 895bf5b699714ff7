#include "probe/peers.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace fabric::probe {
namespace {

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool ParsePort(std::string_view s, std::uint16_t* port) {
  unsigned v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v == 0 || v > 65535) {
    return false;
  }
  *port = static_cast<std::uint16_t>(v);
  return true;
}

bool ValidHost(std::string_view h) {
  return !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
           c == '-' || c == '_' || c == ':' || c == '%';
  });
}

void AddUnique(std::vector<Peer>& peers, std::set<std::string>& seen, Peer p) {
  if (seen.insert(p.name).second) peers.push_back(std::move(p));
}

}  // namespace

std::optional<Peer> ParsePeer(std::string_view text, std::string* error,
                              std::uint16_t default_port) {
  auto fail = [&](const std::string& why) -> std::optional<Peer> {
    if (error) *error = "peer \"" + std::string(text) + "\": " + why;
    return std::nullopt;
  };
  std::string_view s = Trim(text);
  Peer p;
  p.name = std::string(s);
  p.port = default_port;
  std::string_view host, port;
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos) return fail("missing ']'");
    host = s.substr(1, close - 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail("expected ':port' after ']'");
      port = rest.substr(1);
      if (port.empty()) return fail("empty port");
    }
  } else {
    auto colon = s.rfind(':');
    if (colon != std::string_view::npos && s.find(':') != colon) {
      return fail("IPv6 addresses are written [addr]:port");
    }
    host = colon == std::string_view::npos ? s : s.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = s.substr(colon + 1);
      if (port.empty()) return fail("empty port");
    }
    if (host.find(':') != std::string_view::npos) {
      return fail("IPv6 addresses are written [addr]:port");
    }
  }
  if (!ValidHost(host)) return fail("not a host name or address");
  if (!port.empty() && !ParsePort(port, &p.port)) {
    return fail("port is not a number in 1..65535");
  }
  p.host = std::string(host);
  return p;
}

std::optional<std::vector<Peer>> ParsePeerLines(std::string_view text,
                                                std::string* error,
                                                std::uint16_t default_port) {
  std::vector<Peer> peers;
  std::set<std::string> seen;
  int line_no = 0;
  while (!text.empty() || line_no == 0) {
    ++line_no;
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text =
        nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    line = line.substr(0, line.find('#'));
    line = Trim(line);
    if (line.empty()) continue;
    std::string why;
    auto p = ParsePeer(line, &why, default_port);
    if (!p) {
      if (error) *error = "line " + std::to_string(line_no) + ": " + why;
      return std::nullopt;
    }
    AddUnique(peers, seen, std::move(*p));
  }
  return peers;
}

std::optional<std::vector<Peer>> ParseFileSd(std::string_view text,
                                             std::string* error,
                                             std::uint16_t default_port) {
  auto fail = [&](const std::string& why) -> std::optional<std::vector<Peer>> {
    if (error) *error = "file_sd: " + why;
    return std::nullopt;
  };
  // JSON is YAML's flow style: yaml-cpp reads it, so no second parser.
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return fail(std::string("not valid JSON: ") + e.what());
  }
  if (!root.IsSequence()) return fail("expected a list of target groups");
  std::vector<Peer> peers;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < root.size(); ++i) {
    const YAML::Node& group = root[i];
    std::string where = "group " + std::to_string(i + 1);
    if (!group.IsMap()) return fail(where + " is not an object");
    YAML::Node targets = group["targets"];
    if (!targets || !targets.IsSequence()) {
      return fail(where + " has no \"targets\" list");
    }
    for (const auto& t : targets) {
      if (!t.IsScalar()) return fail(where + ": a target is not a string");
      std::string why;
      auto p = ParsePeer(t.Scalar(), &why, default_port);
      if (!p) return fail(where + ": " + why);
      // The scrape port is not the probe port (see the header).
      p->port = default_port;
      p->name = p->host.find(':') == std::string::npos ? p->host
                                                       : "[" + p->host + "]";
      AddUnique(peers, seen, std::move(*p));
    }
  }
  return peers;
}

std::optional<std::vector<Peer>> ParsePeersFile(std::string_view text,
                                                std::string* error,
                                                std::uint16_t default_port) {
  // "[::1]:10916" opens a plain list too: JSON's '[' is followed by '{'
  // (a target group) or ']' (none).
  std::string_view t = Trim(text);
  std::string_view after = t.empty() ? t : Trim(t.substr(1));
  if (!t.empty() && t.front() == '[' &&
      (after.empty() || after.front() == '{' || after.front() == ']')) {
    return ParseFileSd(text, error, default_port);
  }
  return ParsePeerLines(text, error, default_port);
}

}  // namespace fabric::probe
