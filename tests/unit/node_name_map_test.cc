// sources/node_name_map.h: the node-name-map format infiniband-diags and
// OpenSM read, as the fabric sweep and the opensm collector parse it.
#include "sources/node_name_map.h"

#include <gtest/gtest.h>

namespace fabric {
namespace {

TEST(NodeNameMap, QuotedBareCommentsDecimalAndBadLinesByNumber) {
  const auto map = ParseNodeNameMap(
      "# leaf switches\n"
      "0x0002c90300000001 \"leaf01 # rack 3\"\n"
      "\n"
      "   0x0002C90300000002\tspine01  # trailing comment\r\n"
      "12345 \"decimal\"\n"
      "0xzz \"bad guid\"\n"
      "0x0002c90300000003\n"
      "0x0002c90300000004 \"unterminated\n"
      "0x0002c90300000005 \"\"\n"
      "0x0002c90300000006 \"last\"");
  EXPECT_EQ(map.names.size(), 4u);
  EXPECT_EQ(map.names.at(0x0002c90300000001), "leaf01 # rack 3");
  EXPECT_EQ(map.names.at(0x0002c90300000002), "spine01");
  EXPECT_EQ(map.names.at(12345), "decimal");
  EXPECT_EQ(map.names.at(0x0002c90300000006), "last");
  EXPECT_EQ(map.bad_lines, (std::vector<int>{6, 7, 8, 9}));
}

TEST(NodeNameMap, EmptyAndCommentOnly) {
  EXPECT_TRUE(ParseNodeNameMap("").names.empty());
  const auto map = ParseNodeNameMap("# nothing\n\n   \n");
  EXPECT_TRUE(map.names.empty());
  EXPECT_TRUE(map.bad_lines.empty());
}

TEST(NodeNameMap, LaterLineForTheSameGuidWins) {
  const auto map = ParseNodeNameMap("0x1 \"old\"\n0x1 \"new\"\n");
  EXPECT_EQ(map.names.at(1), "new");
}

}  // namespace
}  // namespace fabric
