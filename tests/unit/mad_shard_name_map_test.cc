// Shards ("i/n" by switch GUID) and the node-name-map parser.
#include <gtest/gtest.h>

#include <set>

#include "sources/mad/sweep.h"

namespace fabric::mad {
namespace {

TEST(Shard, ParsesOnlyValidSpecs) {
  auto s = ParseShard("2/3");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 3);
  for (const char* bad :
       {"", "1", "0/3", "4/3", "1/0", "a/b", "1/3x", "-1/3", "1 /3"}) {
    EXPECT_FALSE(ParseShard(bad)) << bad;
  }
}

TEST(Shard, ShardsCoverEverySwitchExactlyOnce) {
  // Sequential GUIDs (as one vendor's switches have) and scattered ones.
  std::vector<std::uint64_t> guids;
  for (std::uint64_t g = 0; g < 600; ++g)
    guids.push_back(0x0002c90300000000 + g);
  for (std::uint64_t g = 1; g < 400; ++g)
    guids.push_back(g * 0x9e3779b97f4a7c15);
  std::vector<int> per_shard(3);
  for (std::uint64_t g : guids) {
    int owners = 0;
    for (int i = 1; i <= 3; ++i) {
      if (Shard{i, 3}.Contains(g)) {
        ++owners;
        ++per_shard[i - 1];
      }
    }
    EXPECT_EQ(owners, 1) << std::hex << g;
  }
  for (int n : per_shard) {
    EXPECT_GT(n, 250);  // ~333 each: no shard is starved or flooded
    EXPECT_LT(n, 420);
  }
  EXPECT_TRUE(Shard{}.Contains(42));  // 1/1 has everything
}

}  // namespace
}  // namespace fabric::mad
