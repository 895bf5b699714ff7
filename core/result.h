// Result<T>: what one read from an OS source or one decode gives back: the
// value, or the error that says why there is none. The error is an
// errno-style std::error_code because that is all the callers need: they
// compare it with std::errc values to tell "absent" (ENOENT, ENODEV,
// EOPNOTSUPP: no samples, no complaint) from "failed", and turn
// error().message() into the skip reason or log line.
//
// The one result type of the sources: sysfs reads (ReadResult), ethtool
// statistics (EthtoolResult), DCB and RDMA netlink replies (DcbResult,
// RdmaStatResult) and MADs (MadResult) are all Result<their payload>.
//
// value() (and * / ->) of a failed result is a bug; it throws
// std::bad_variant_access rather than read garbage, and the daemon's runner
// turns that into a failed collection.
//
// Thread-safety: a plain value type; concurrent const access is safe.
#pragma once

#include <cassert>
#include <system_error>
#include <utility>
#include <variant>

namespace fabric {

template <typename T>
class [[nodiscard]] Result {
 public:
  // Success. Implicit, so a source can `return value;`.
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  // Failure; `error` must be set. Implicit, so a source can
  // `return std::errc::no_such_device;` or return an errno it caught.
  Result(std::error_code error) : state_(std::in_place_index<1>, error) {
    assert(error);
  }
  Result(std::errc error) : Result(std::make_error_code(error)) {}

  bool ok() const { return state_.index() == 0; }
  // Empty when ok().
  std::error_code error() const {
    return ok() ? std::error_code() : std::get<1>(state_);
  }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, std::error_code> state_;
};

// An errno value as a Result error (std::system_category, as strerror).
inline std::error_code ErrnoError(int error) {
  return {error, std::system_category()};
}

}  // namespace fabric
