// `fabricmon-bench report`: one self-contained HTML page (inline SVG and CSS,
// no scripts, fonts or other requests) with the busbw-vs-size curve of each
// pattern, every run given overlaid (IB vs RoCE, before vs after), and a
// table of the numbers per size: time, p50/p99, algbw, busbw, and the fabric
// counters the agents saw (summed over the measured iterations).
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "benchtool/results.h"

namespace fabric::bench {

// `names[i]` labels runs[i] where its own label is empty (e.g. file name).
std::string ReportHtml(const std::vector<Results>& runs,
                       const std::vector<std::string>& names);

}  // namespace fabric::bench
