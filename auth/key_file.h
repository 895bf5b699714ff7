// The shared secret that authenticates fabricmon daemons to each other (probe
// packets, fabricmon-bench agents): a key file holding at least 64 hex digits
// (32 bytes), surrounding whitespace ignored, readable by its owner only.
//
// Thread-safety: pure functions; LoadKeyFile only reads the file system.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric {

using Key = std::vector<std::uint8_t>;

// At least 256 bits: HMAC-SHA256 gains nothing from a longer key and an
// operator pasting a short passphrase must be told.
constexpr std::size_t kMinKeyHexDigits = 64;

// Parses the key text. Returns the key bytes, or nullopt with the reason in
// `error` (too short, odd number of digits, a non-hex character and where).
std::optional<Key> ParseKeyHex(std::string_view text, std::string* error);

// Reads and parses the key file at `path`. Refuses a file that group or
// others may read or write (mode must be 0600 or stricter; systemd's
// LoadCredential= delivers 0400), a symlink, a non-regular file (a FIFO is
// refused, not waited on) and a file larger than 4 KiB (sources/fd_read.h). The
// mode is checked on the opened descriptor, not the path, so the file checked
// is the file read. The error names the path.
std::optional<Key> LoadKeyFile(const std::string& path, std::string* error);

// A fresh random key as hex (for `--local` runs and `fabricmon-bench keygen`),
// from OpenSSL's RAND_bytes. Throws std::runtime_error when the RNG fails.
std::string GenerateKeyHex(std::size_t bytes = 32);

}  // namespace fabric
