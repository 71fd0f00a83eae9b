#include "common/model/instance_tag.h"

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(InstanceTagTest, FirstHalfOfSha256InLowerCaseHex) {
  // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
  EXPECT_EQ(InstanceTag("abc"), "ba7816bf8f01cfea414140de5dae2223");
  EXPECT_EQ(InstanceTag("0123456789abcdef0123456789abcdef").size(), 32u);
  EXPECT_NE(InstanceTag("0123456789abcdef0123456789abcdef"),
            InstanceTag("0123456789abcdef0123456789abcdee"));
}

TEST(InstanceTagTest, EmptyIdHasNoTag) { EXPECT_EQ(InstanceTag(""), ""); }

TEST(ExecutorAudienceTest, NamesAppAndAddress) {
  EXPECT_EQ(ExecutorAudience("billing", "127.0.0.1:7201"), "billing@127.0.0.1:7201");
}

}  // namespace
}  // namespace jobwheel
