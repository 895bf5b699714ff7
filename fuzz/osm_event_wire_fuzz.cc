// libFuzzer target: datagrams on the OpenSM event socket (osm/event_wire.h).
// Anything that decodes must encode again and decode to the same event.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "osm/event_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  namespace osm = fabric::osm;
  osm::Message message;
  const auto status =
      osm::DecodeEvent(std::span<const std::uint8_t>(data, size), &message);
  (void)osm::DecodeStatusName(status);
  if (status != osm::DecodeStatus::kOk) return 0;
  (void)osm::EventName(message.event);
  std::array<std::uint8_t, osm::kMaxMessageSize> out{};
  const std::size_t n = osm::EncodeEvent(message, out);
  osm::Message again;
  if (n == 0 ||
      osm::DecodeEvent(std::span<const std::uint8_t>(out.data(), n), &again) !=
          osm::DecodeStatus::kOk ||
      again.event != message.event || again.dropped != message.dropped ||
      again.monotonic_ns != message.monotonic_ns) {
    std::abort();
  }
  return 0;
}
