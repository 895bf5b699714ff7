#include "auth/key_file.h"

#include <openssl/rand.h>

#include <cstdio>
#include <stdexcept>

#include "sources/fd_read.h"

namespace fabric {
namespace {

constexpr std::size_t kMaxKeyFileBytes = 4096;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

}  // namespace

std::optional<Key> ParseKeyHex(std::string_view text, std::string* error) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (HexValue(text[i]) < 0) {
      *error = "key: character " + std::to_string(i + 1) +
               " is not a hex digit (the key is one run of hex digits)";
      return std::nullopt;
    }
  }
  if (text.size() < kMinKeyHexDigits) {
    *error = "key: " + std::to_string(text.size()) + " hex digits, at least " +
             std::to_string(kMinKeyHexDigits) +
             " needed (generate one with `openssl rand -hex 32`)";
    return std::nullopt;
  }
  if (text.size() % 2 != 0) {
    *error = "key: odd number of hex digits";
    return std::nullopt;
  }
  Key key(text.size() / 2);
  for (std::size_t i = 0; i < key.size(); ++i) {
    key[i] = static_cast<std::uint8_t>(HexValue(text[2 * i]) << 4 |
                                       HexValue(text[2 * i + 1]));
  }
  return key;
}

std::optional<Key> LoadKeyFile(const std::string& path, std::string* error) {
  FileRead file = ReadRegularFile(path, kMaxKeyFileBytes, Symlinks::kRefuse);
  if (!file.ok()) {
    *error = path + ": " + file.error;
    return std::nullopt;
  }
  if ((file.mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", file.mode & 07777);
    *error = path + ": mode " + mode +
             " lets group or others access the key; chmod 600 it";
    return std::nullopt;
  }
  auto key = ParseKeyHex(file.text, error);
  if (!key) *error = path + ": " + *error;
  return key;
}

std::string GenerateKeyHex(std::size_t bytes) {
  Key raw(bytes);
  if (RAND_bytes(raw.data(), static_cast<int>(raw.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes);
  for (std::uint8_t b : raw) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

}  // namespace fabric
