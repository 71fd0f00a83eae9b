#include "services/dispatcher/result_message.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

TEST(TruncateResultMessageTest, LongMessagesAreStoredCut) {
  std::string huge = "xy";
  while (huge.size() < 200 * 1024) huge += "\xE2\x82\xAC";  // "€": 3 bytes, from byte 2 on.
  std::string cut = huge;
  TruncateResultMessage(&cut, 64 * 1024);
  EXPECT_LE(cut.size(), 64 * 1024 + 20u);
  EXPECT_TRUE(absl::EndsWith(cut, " \xE2\x80\xA6(truncated)"));
  // 64 Ki is inside a "€" (2 + 3k): cut before it.
  EXPECT_EQ(cut.substr(0, cut.size() - 15), huge.substr(0, 65534));
  std::string short_message = "fine";
  TruncateResultMessage(&short_message, 4);
  EXPECT_EQ(short_message, "fine");
}

}  // namespace
}  // namespace jobwheel::dispatcher
