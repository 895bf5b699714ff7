// A file that breaks the layering on purpose: scripts/check_layering.sh must
// fail on this tree (ctest layering_includes_fails), so the check cannot
// pass vacuously.
#pragma once

#include "collectors/collector.h"
