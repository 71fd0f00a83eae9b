#include "services/dispatcher/result_key.h"

#include <string>

#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

TEST(ResultKeyTest, KeysAreRandomAndOfFixedSize) {
  const std::string a = NewResultKey();
  const std::string b = NewResultKey();
  EXPECT_EQ(a.size(), kResultKeyBytes);
  EXPECT_EQ(b.size(), kResultKeyBytes);
  EXPECT_NE(a, b);
}

TEST(ResultKeyTest, HashIsSha256) {
  // SHA-256("abc").
  const std::string expected(
      "\xba\x78\x16\xbf\x8f\x01\xcf\xea\x41\x41\x40\xde\x5d\xae\x22\x23"
      "\xb0\x03\x61\xa3\x96\x17\x7a\x9c\xb4\x10\xff\x61\xf2\x00\x15\xad",
      32);
  EXPECT_EQ(ResultKeyHash("abc"), expected);
}

TEST(ResultKeyTest, MatchesOnlyTheKeyItself) {
  const std::string key = NewResultKey();
  const std::string hash = ResultKeyHash(key);
  EXPECT_TRUE(ResultKeyMatches(key, hash));
  EXPECT_FALSE(ResultKeyMatches("", hash));
  std::string wrong = key;
  wrong[31] ^= 1;
  EXPECT_FALSE(ResultKeyMatches(wrong, hash));
  EXPECT_FALSE(ResultKeyMatches(key, hash.substr(0, 31)));
  EXPECT_FALSE(ResultKeyMatches(key, ""));
  // The hash itself is not a key.
  EXPECT_FALSE(ResultKeyMatches(hash, hash));
}

}  // namespace
}  // namespace jobwheel::dispatcher
