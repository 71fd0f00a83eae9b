#include "common/base/json_escape.h"

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(JsonEscapeTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape("plain"), "plain");
  EXPECT_EQ(JsonEscape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(JsonEscape("1\n2\r3\t4"), "1\\n2\\r3\\t4");
  EXPECT_EQ(JsonEscape(absl::string_view("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(JsonEscape(absl::string_view("\0", 1)), "\\u0000");
  EXPECT_EQ(JsonEscape("中文 <script>"), "中文 <script>");
}

}  // namespace
}  // namespace jobwheel
