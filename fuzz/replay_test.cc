// Replays every file of fuzz/corpus/<name>/ through the entry point of
// fuzz/<name>_fuzz.cc, compiled into this normal test build: the seeds and
// every input a fuzzing run once crashed on stay regression tests. A crash,
// sanitizer report (under scripts/test-sanitizers.sh) or abort fails the
// test; a target without a corpus fails too (scripts/fuzz.sh would have
// nothing to start from).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/replay_targets.h"

namespace fabric::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> TargetNames() {
  std::vector<std::string> names;
  for (const FuzzTarget& t : FuzzTargets()) names.push_back(t.name);
  return names;
}

class FuzzReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzReplay, EveryCorpusFileRunsClean) {
  const FuzzTarget* target = nullptr;
  for (const FuzzTarget& t : FuzzTargets()) {
    if (t.name == GetParam()) target = &t;
  }
  ASSERT_NE(target, nullptr);
  const fs::path dir =
      fs::path(FABRICMON_SOURCE_DIR) / "fuzz" / "corpus" / GetParam();
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " missing: add seeds";
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    // libFuzzer hands a non-null pointer even for empty input.
    static const std::uint8_t kEmpty = 0;
    EXPECT_EQ(
        target->entry(bytes.empty() ? &kEmpty : bytes.data(), bytes.size()), 0);
    ++files;
  }
  EXPECT_GT(files, 0) << dir << " is empty";
}

INSTANTIATE_TEST_SUITE_P(Corpus, FuzzReplay, ::testing::ValuesIn(TargetNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace fabric::fuzz
