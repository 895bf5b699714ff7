// ReadTextFile (sources/text_file.h), the reader behind
// CollectorEnv::read_text_file: the whole file, the errno of a missing one,
// an error for a directory, and EFBIG (not a truncated text) past the cap.
#include "sources/text_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fabric {
namespace {

namespace fs = std::filesystem;

class TextFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "text_file.XXXXXX");
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(TextFileTest, ReadsTheWholeFile) {
  // Longer than one read() of the implementation's buffer.
  const std::string text = "0x0002c90300001a2c \"leaf-1\"\n" +
                           std::string(40'000, 'x') + "\nlast line\n";
  auto r = ReadTextFile(Write("map", text));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, text);
  auto empty = ReadTextFile(Write("empty", ""));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, "");
}

TEST_F(TextFileTest, MissingFileIsItsErrnoADirectoryAnError) {
  EXPECT_EQ(ReadTextFile((dir_ / "absent").string()).error(),
            std::errc::no_such_file_or_directory);
  EXPECT_FALSE(ReadTextFile(dir_.string()).ok());
}

TEST_F(TextFileTest, LongerThanTheCapIsAnErrorNotATruncatedText) {
  const std::string path = Write("big", std::string(100, 'a'));
  EXPECT_TRUE(ReadTextFile(path, 100).ok());
  EXPECT_EQ(ReadTextFile(path, 99).error(), std::errc::file_too_large);
}

}  // namespace
}  // namespace fabric
