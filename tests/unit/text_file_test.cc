// ReadTextFile (sources/text_file.h), the reader behind
// CollectorEnv::read_text_file: the whole file, the errno of a missing one,
// a refusal for a directory or FIFO, and EFBIG (not a truncated text) past
// the cap.
#include "sources/text_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

class TextFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  testing::TempDir tmp_{"text_file"};
  fs::path dir_;
};

TEST_F(TextFileTest, ReadsTheWholeFile) {
  // Longer than one read() of the implementation's buffer.
  const std::string text = "0x0002c90300001a2c \"leaf-1\"\n" +
                           std::string(40'000, 'x') + "\nlast line\n";
  FileRead r = ReadTextFile(Write("map", text), 1 << 20);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, text);
  FileRead empty = ReadTextFile(Write("empty", ""), 1 << 20);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty.text, "");
}

TEST_F(TextFileTest, MissingFileDirectoryAndFifoAreErrorsThatSayWhy) {
  EXPECT_EQ(ReadTextFile((dir_ / "absent").string(), 1 << 20).error_number,
            ENOENT);
  EXPECT_EQ(ReadTextFile(dir_.string(), 1 << 20).error, "not a regular file");
  // A FIFO named as a node-name map must not block the collector.
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadTextFile(fifo, 1 << 20).error, "not a regular file");
}

TEST_F(TextFileTest, LongerThanTheCapIsAnErrorNotATruncatedText) {
  const std::string path = Write("big", std::string(100, 'a'));
  EXPECT_TRUE(ReadTextFile(path, 100).ok());
  FileRead r = ReadTextFile(path, 99);
  EXPECT_EQ(r.error_number, EFBIG);
  EXPECT_EQ(r.text, "");
}

}  // namespace
}  // namespace fabric
