// The series names a collector's `include`/`exclude` patterns can match:
// its metric families (docs/metrics.md's rows under the collector's section,
// compiled in: core/metric_names.h) and the counter names its
// `counter`/`error` labels carry. The registry hands them to the config
// parser (CollectorKeys::series), which warns about a pattern matching none
// of them; metrics_doc_test checks the doc against what the collectors emit.
//
// Thread-safety: returns fresh values; safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fabric {

// Empty for a collector without include/exclude (one that exports no
// families of raw counters).
std::vector<std::string> KnownSeries(std::string_view collector);

}  // namespace fabric
