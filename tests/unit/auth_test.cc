#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "auth/hmac.h"
#include "auth/key_file.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

const std::string k64(64, 'a');

TEST(ParseKeyHexTest, AcceptsSixtyFourDigitsWithSurroundingWhitespace) {
  std::string error;
  auto key = ParseKeyHex("  \n" + k64 + "\n\n", &error);
  ASSERT_TRUE(key) << error;
  EXPECT_EQ(key->size(), 32u);
  EXPECT_EQ((*key)[0], 0xaa);
}

TEST(ParseKeyHexTest, RefusesShortOddAndNonHex) {
  std::string error;
  EXPECT_FALSE(ParseKeyHex(std::string(62, 'f'), &error));
  EXPECT_NE(error.find("at least 64"), std::string::npos) << error;
  EXPECT_FALSE(ParseKeyHex(std::string(65, 'f'), &error));
  EXPECT_NE(error.find("odd"), std::string::npos) << error;
  EXPECT_FALSE(ParseKeyHex(k64 + " " + k64, &error));
  EXPECT_NE(error.find("character 65"), std::string::npos) << error;
  EXPECT_FALSE(ParseKeyHex("", &error));
}

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
    path_ = dir_ + "/key";
  }
  void Write(const std::string& text, mode_t mode) {
    std::ofstream(path_) << text;
    ASSERT_EQ(chmod(path_.c_str(), mode), 0);
  }
  testing::TempDir tmp_{"fabric-key"};
  std::string dir_, path_;
};

TEST_F(KeyFileTest, LoadsAnOwnerOnlyFile) {
  Write(k64 + "\n", 0600);
  std::string error;
  auto key = LoadKeyFile(path_, &error);
  ASSERT_TRUE(key) << error;
  EXPECT_EQ(key->size(), 32u);
  Write(k64, 0400);
  EXPECT_TRUE(LoadKeyFile(path_, &error)) << error;
}

TEST_F(KeyFileTest, RefusesAGroupOrWorldReadableFile) {
  Write(k64, 0640);
  std::string error;
  EXPECT_FALSE(LoadKeyFile(path_, &error));
  EXPECT_NE(error.find("mode 0640"), std::string::npos) << error;
  EXPECT_NE(error.find(path_), std::string::npos) << error;
}

TEST_F(KeyFileTest, MissingShortAndNonRegularFilesAreErrors) {
  std::string error;
  EXPECT_FALSE(LoadKeyFile(path_, &error));
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;
  Write("abcd", 0600);
  error.clear();
  EXPECT_FALSE(LoadKeyFile(path_, &error));
  EXPECT_NE(error.find("at least 64"), std::string::npos) << error;
  error.clear();
  chmod(dir_.c_str(), 0700);
  EXPECT_FALSE(LoadKeyFile(dir_, &error));
}

TEST(GenerateKeyHexTest, MakesAParseableFreshKey) {
  std::string a = GenerateKeyHex(), b = GenerateKeyHex(), error;
  EXPECT_EQ(a.size(), 64u);
  EXPECT_NE(a, b);
  EXPECT_TRUE(ParseKeyHex(a, &error)) << error;
}

TEST(HmacTest, MatchesRfc4231TestCase2) {
  std::string key = "Jefe", msg = "what do ya want for nothing?";
  Hmac hmac(Key(key.begin(), key.end()));
  Mac mac = hmac.Sign(
      {reinterpret_cast<const std::uint8_t*>(msg.data()), msg.size()});
  const std::uint8_t expected[] = {
      0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24,
      0x26, 0x08, 0x95, 0x75, 0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27,
      0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43};
  EXPECT_TRUE(std::equal(mac.begin(), mac.end(), expected));
}

TEST(HmacTest, VerifyRejectsAnyChangedByteAndAnotherKey) {
  Key key(32, 7), other(32, 8);
  std::vector<std::uint8_t> msg(48, 1);
  Hmac hmac(key);
  Mac mac = hmac.Sign(msg);
  EXPECT_TRUE(hmac.Verify(msg, mac));
  EXPECT_FALSE(Hmac(other).Verify(msg, mac));
  msg[47] ^= 1;
  EXPECT_FALSE(hmac.Verify(msg, mac));
  msg[47] ^= 1;
  mac[0] ^= 0x80;
  EXPECT_FALSE(hmac.Verify(msg, mac));
  EXPECT_FALSE(hmac.Verify(msg, std::span(mac).first(16)));
}

// The reused context must give, call after call, what a fresh one-shot
// HMAC() gives: messages of every length around SHA-256's 64-byte block,
// with a key longer than a block (hashed first) and a short one.
TEST(HmacTest, ReusedContextMatchesOneShotCallAfterCall) {
  for (std::size_t key_bytes : {4u, 32u, 131u}) {
    Key key(key_bytes);
    for (std::size_t i = 0; i < key.size(); ++i) key[i] = i * 31 + 1;
    Hmac hmac(key);
    for (std::size_t n = 0; n <= 200; ++n) {
      std::vector<std::uint8_t> msg(n);
      for (std::size_t i = 0; i < n; ++i) msg[i] = (i * 7 + n) & 0xff;
      Mac expected{};
      unsigned int length = 0;
      ASSERT_NE(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                     msg.data(), msg.size(), expected.data(), &length),
                nullptr);
      ASSERT_EQ(hmac.Sign(msg), expected) << key_bytes << " " << n;
      ASSERT_TRUE(hmac.Verify(msg, expected));
    }
  }
}

TEST(HmacTest, CopiesAndMovesSignAlike) {
  std::vector<std::uint8_t> msg(64, 3);
  Hmac a(Key(32, 9));
  Mac mac = a.Sign(msg);
  Hmac copy(a);
  EXPECT_EQ(copy.Sign(msg), mac);
  Hmac assigned(Key(32, 1));
  assigned = a;
  EXPECT_EQ(assigned.Sign(msg), mac);
  Hmac moved(std::move(copy));
  EXPECT_EQ(moved.Sign(msg), mac);
  EXPECT_EQ(a.Sign(msg), mac);
}

// Sign/Verify are const and may run concurrently on one instance (the
// header's rule): threads signing different messages each get their own
// message's MAC.
TEST(HmacTest, ConcurrentSignsOnOneInstanceStayCorrect) {
  Hmac shared(Key(32, 5));
  std::vector<Mac> expected;
  for (int t = 0; t < 4; ++t) {
    expected.push_back(Hmac(Key(32, 5)).Sign(std::vector<std::uint8_t>(64, t)));
  }
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::uint8_t> msg(64, t);
      for (int i = 0; i < 2000; ++i) {
        if (shared.Sign(msg) != expected[t]) ++wrong[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace fabric
