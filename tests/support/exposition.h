// Checks on Prometheus text expositions that every test reading one applies:
// no series (metric name + label set) may appear twice in one exposition,
// whatever collector wrote it (a scraper keeps one of the two at random and
// Prometheus rejects the scrape's duplicates). Used by ParseSamples
// (tests/integration/fabricmon_run.h), so each fixture tree, simulator
// scenario and ibsim fabric a test reads is checked.
//
// Thread-safety: pure functions; ExpectUniqueSeries reports through
// GoogleTest (ADD_FAILURE), as any assertion.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fabric::testing {

// The series of `text` that appear more than once, each once, as
// `name{a="1",b="2"}` with the labels sorted by name (so the same label set
// written in another order counts as the same series). Comment and blank
// lines are skipped; a sample line that does not parse is reported as
// "unparsable: <line>".
std::vector<std::string> DuplicateSeries(std::string_view text);

// ADD_FAILURE naming `what` and every duplicate series of `text`.
void ExpectUniqueSeries(std::string_view text, std::string_view what);

}  // namespace fabric::testing
