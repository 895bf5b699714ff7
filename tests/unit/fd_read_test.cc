// Tests for sources/fd_read.h's ReadRegularFile: a regular file is read whole;
// a FIFO (with or without a writer), /dev/zero, a directory and a file over
// the limit are refused at once with a plain reason; /dev/null reads as
// empty; a missing file gives ENOENT; kRefuse refuses a symlink.
#include "sources/fd_read.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

namespace fabric {
namespace {

namespace fs = std::filesystem;

class ReadRegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("fd_read_test." + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  fs::path dir_;
};

TEST_F(ReadRegularFileTest, ReadsARegularFileWhole) {
  const std::string text(200000, 'x');  // several read() calls
  FileRead r = ReadRegularFile(Write("big", text), 1 << 20);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, text);
  EXPECT_TRUE(S_ISREG(r.mode));
  EXPECT_EQ(r.error_number, 0);
}

TEST_F(ReadRegularFileTest, EmptyFileIsEmptyText) {
  FileRead r = ReadRegularFile(Write("empty", ""), 1024);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(S_ISREG(r.mode));
}

TEST_F(ReadRegularFileTest, FileAtTheLimitIsReadOneMoreByteIsRefused) {
  EXPECT_TRUE(ReadRegularFile(Write("at", std::string(4096, 'a')), 4096).ok());
  FileRead r = ReadRegularFile(Write("over", std::string(4097, 'a')), 4096);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "larger than 4 KiB");
  EXPECT_EQ(r.error_number, EFBIG);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(ReadRegularFile(Write("odd", "123456"), 5).error,
            "larger than 5 bytes");
}

TEST_F(ReadRegularFileTest, FifoWithoutWriterIsRefusedWithoutWaiting) {
  const std::string fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A blocking open would wait here for a writer forever.
  FileRead r = ReadRegularFile(fifo, 1024);
  EXPECT_EQ(r.error, "not a regular file");
  EXPECT_EQ(r.error_number, EINVAL);
  EXPECT_TRUE(S_ISFIFO(r.mode));
}

TEST_F(ReadRegularFileTest, FifoWithASilentWriterIsRefusedWithoutWaiting) {
  const std::string fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A writer that never writes: a blocking read would wait for it.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_GE(writer, 0);
  EXPECT_EQ(ReadRegularFile(fifo, 1024).error, "not a regular file");
  close(writer);
  close(reader);
}

TEST_F(ReadRegularFileTest, DevZeroIsRefusedNotReadWithoutEnd) {
  FileRead r = ReadRegularFile("/dev/zero", 1 << 20);
  EXPECT_EQ(r.error, "not a regular file");
  EXPECT_EQ(r.text, "");
}

TEST_F(ReadRegularFileTest, DevNullReadsAsEmpty) {
  FileRead r = ReadRegularFile("/dev/null", 1024);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(S_ISCHR(r.mode));
}

TEST_F(ReadRegularFileTest, DirectoryIsRefused) {
  FileRead r = ReadRegularFile(dir_.string(), 1024);
  EXPECT_EQ(r.error, "not a regular file");
  EXPECT_TRUE(S_ISDIR(r.mode));
}

TEST_F(ReadRegularFileTest, MissingFileGivesErrnoText) {
  FileRead r = ReadRegularFile((dir_ / "absent").string(), 1024);
  EXPECT_EQ(r.error_number, ENOENT);
  EXPECT_EQ(r.error, "No such file or directory");
  EXPECT_EQ(r.mode, 0u);
}

TEST_F(ReadRegularFileTest, SymlinksFollowedUnlessRefused) {
  const std::string target = Write("target", "hello");
  const std::string link = dir_ / "link";
  fs::create_symlink(target, link);
  EXPECT_EQ(ReadRegularFile(link, 1024).text, "hello");
  FileRead r = ReadRegularFile(link, 1024, Symlinks::kRefuse);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error_number, ELOOP);
}

TEST_F(ReadRegularFileTest, ReadWholeFileGivesTheErrno) {
  std::string out;
  EXPECT_EQ(ReadWholeFile(Write("f", "abc"), 16, &out), 0);
  EXPECT_EQ(out, "abc");
  EXPECT_EQ(ReadWholeFile((dir_ / "absent").string(), 16, &out), ENOENT);
  EXPECT_EQ(ReadWholeFile("/dev/zero", 16, &out), EINVAL);
  EXPECT_EQ(ReadWholeFile(Write("g", "abcdef"), 4, &out), EFBIG);
}

}  // namespace
}  // namespace fabric
