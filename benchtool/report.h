// `fabricmon-bench report`: one self-contained HTML page (inline SVG and CSS,
// no scripts, fonts or other requests). Per pattern, side by side, the
// busbw-vs-size curve of every run given (IB vs RoCE, before vs after) with
// each run's line rate drawn where it is known, and the time per operation
// (median, and the slowest iterations named for what their number can show:
// "max" under 20 iterations, p90 from 20, never a p99 of 20); then a table of
// the numbers per size with the fabric counters the agents saw, and what each
// run was measured on (results.json's metadata). An interrupted run says so.
//
// Axis labels are laid out so that none overlaps another: tick labels are
// thinned to fit their estimated width, line-rate labels stacked.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "benchtool/results.h"

namespace fabric::bench {

struct ReportOptions {
  // Bus bandwidth on a log scale (small sizes readable next to large
  // ones). Time per operation is always on a log scale: it spans decades.
  bool log_y = false;
};

// `names[i]` labels runs[i] where its own label is empty (e.g. file name).
std::string ReportHtml(const std::vector<Results>& runs,
                       const std::vector<std::string>& names,
                       const ReportOptions& options = {});

}  // namespace fabric::bench
