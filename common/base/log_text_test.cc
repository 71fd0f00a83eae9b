#include "common/base/log_text.h"

#include <string>

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(LogTextTest, KeepsPrintableAscii) {
  EXPECT_EQ(LogText("/jobwheel.v1.JobAdminService/ListJobs"),
            "/jobwheel.v1.JobAdminService/ListJobs");
  EXPECT_EQ(LogText(""), "");
}

TEST(LogTextTest, EscapesEverythingThatCouldForgeALineOrDriveATerminal) {
  const std::string forged = "/x\n2026-01-01 00:00:00.000 I console: POST ok\r\x1b[2J\x7f";
  const std::string safe = LogText(forged);
  EXPECT_EQ(safe.find('\n'), std::string::npos);
  EXPECT_EQ(safe.find('\r'), std::string::npos);
  EXPECT_EQ(safe.find('\x1b'), std::string::npos);
  EXPECT_EQ(safe, "/x\\x0a2026-01-01 00:00:00.000 I console: POST ok\\x0d\\x1b[2J\\x7f");
  EXPECT_EQ(LogText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(LogText("\xe4\xb8\xad"), "\\xe4\\xb8\\xad");
}

TEST(LogTextTest, EscapesBackslashesSoAnEscapeCannotBeFaked) {
  EXPECT_EQ(LogText("\\x0a"), "\\\\x0a");
}

TEST(LogTextTest, CutsLongTextAndSaysHowLongItWas) {
  EXPECT_EQ(LogText(std::string(300, 'a'), 4), "aaaa...(300 bytes)");
  EXPECT_EQ(LogText("abcd", 4), "abcd");
}

}  // namespace
}  // namespace jobwheel
