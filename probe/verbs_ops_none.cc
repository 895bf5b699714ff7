// Built without rdma-core: there is no verbs implementation, so the host has
// no RDMA ports and the probe collector's `auto` transport uses UDP.
#include "probe/verbs_ops.h"

namespace fabric::rdma {

std::unique_ptr<VerbsOps> MakeIbverbsOps() { return nullptr; }

}  // namespace fabric::rdma
