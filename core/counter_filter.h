// CounterFilter: which series of a collector are exported, from the config's
// `collectors.<name>.include`/`.exclude` glob lists (the series budget,
// docs/series-budget.md). CounterGate: the same decisions remembered, for
// the sink that applies them to every sample of every collection.
//
// A pattern matches a series when it matches one of the series' two names:
//   - its metric family name, as in the exposition
//     ("fabric_port_multicast_*", "fabric_hw_counters_total");
//   - in the families that carry one hardware counter per series, the value
//     of its `counter` or `error` label: the sysfs file, ethtool statistic or
//     PMA field name as-is ("rx_write_requests", "symbol_error").
// A series is kept when the include list is empty or one of its patterns
// matches, and no exclude pattern matches (exclude wins). Globs are
// fnmatch(3) without flags: `*`, `?` and `[...]`, nothing else (no regexes).
//
// Thread-safety: CounterFilter is immutable after construction, its const
// members safe from any thread. A CounterGate is used by one collection at a
// time (the sink's), like SampleOrder.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fabric {

class CounterFilter {
 public:
  CounterFilter() = default;
  CounterFilter(std::vector<std::string> include,
                std::vector<std::string> exclude);

  // True when both lists are empty: every series is kept.
  bool empty() const { return include_.empty() && exclude_.empty(); }
  // `counter` empty = the series has no counter/error label.
  bool Allows(std::string_view family, std::string_view counter) const;
  const std::vector<std::string>& include() const { return include_; }
  const std::vector<std::string>& exclude() const { return exclude_; }
  bool operator==(const CounterFilter& o) const {
    return include_ == o.include_ && exclude_ == o.exclude_;
  }

 private:
  std::vector<std::string> include_, exclude_;
};

// Whether `pattern` is a usable glob; on failure says why in *why. Names are
// made of [A-Za-z0-9_:.-]; a pattern is those plus `*`, `?` and bracket
// expressions ("[0-7]", "[!a]"), non-empty, brackets closed.
bool ValidCounterGlob(std::string_view pattern, std::string* why);

// fnmatch(pattern, name) on views.
bool GlobMatches(std::string_view pattern, std::string_view name);

// The labels whose value names a series' hardware counter.
bool IsCounterLabel(std::string_view label_name);

// A CounterFilter's decisions, remembered per family and per counter name:
// a collection asks for every sample (hundreds a second), always about the
// same few hundred names.
class CounterGate {
 public:
  explicit CounterGate(CounterFilter filter) : filter_(std::move(filter)) {}
  bool Allows(std::string_view family, std::string_view counter);
  const CounterFilter& filter() const { return filter_; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  using Memo = std::unordered_map<std::string, bool, Hash, std::equal_to<>>;
  struct Family {
    bool allowed = false;  // the series without a counter label
    Memo counters;
  };
  CounterFilter filter_;
  std::unordered_map<std::string, Family, Hash, std::equal_to<>> families_;
  // The previous sample's family: collectors emit runs of one family.
  const std::string* last_name_ = nullptr;
  Family* last_ = nullptr;
};

}  // namespace fabric
