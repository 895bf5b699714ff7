#include "benchtool/transport.h"

#include "benchtool/dataflow.h"

namespace fabric::bench {

std::string TransportError::Message() const {
  if (peer.empty()) return what;
  return "peer " + peer + " (rank " + std::to_string(rank) + "): " + what;
}

TransportStatus BulkTransport::Run(std::span<const Step> steps) {
  std::span<std::byte> region = Region();
  for (const Step& s : steps) {
    std::vector<ArrivalReducer> reducers;
    std::vector<bool> applied(s.reduce.size(), false);
    for (const Op& in : s.recvs) {
      std::vector<const Reduce*> mine;
      for (std::size_t k = 0; k < s.reduce.size(); ++k) {
        const Reduce& r = s.reduce[k];
        if (!applied[k] && r.src >= in.offset &&
            r.src + r.length <= in.offset + in.length) {
          mine.push_back(&r);
          applied[k] = true;
        }
      }
      reducers.emplace_back(region, in, std::move(mine));
    }
    auto arrived = [&](std::size_t i, std::size_t bytes) {
      reducers[i].Arrived(bytes);
    };
    if (auto err = Exchange(s.sends, s.recvs, arrived)) return err;
    for (std::size_t k = 0; k < s.reduce.size(); ++k) {  // src in no receive
      const Reduce& r = s.reduce[k];
      if (!applied[k]) {
        AddFloats(region.data() + r.dst, region.data() + r.src, r.length);
      }
    }
  }
  return std::nullopt;
}

}  // namespace fabric::bench
