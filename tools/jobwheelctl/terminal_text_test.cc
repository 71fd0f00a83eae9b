#include "tools/jobwheelctl/terminal_text.h"

#include "gtest/gtest.h"

namespace jobwheel::ctl {
namespace {

TEST(TerminalTextTest, PlainTextAndNonAsciiLettersPass) {
  EXPECT_EQ(EscapeForTerminal("nightly-report 42"), "nightly-report 42");
  EXPECT_EQ(EscapeForTerminal("报表 Größe ✓ 🚀"), "报表 Größe ✓ 🚀");
  EXPECT_EQ(EscapeForTerminal(""), "");
}

TEST(TerminalTextTest, C0ControlsAndDelAreEscaped) {
  // Clear screen, set the window title, move the cursor up, a bell.
  EXPECT_EQ(EscapeForTerminal("a\x1b[2J\x1b]0;pwned\x07z"), "a\\x1b[2J\\x1b]0;pwned\\x07z");
  EXPECT_EQ(EscapeForTerminal("ok\rFAILED"), "ok\\rFAILED");
  EXPECT_EQ(EscapeForTerminal("two\nlines"), "two\\nlines");
  EXPECT_EQ(EscapeForTerminal("a\tb"), "a\\tb");
  EXPECT_EQ(EscapeForTerminal("a\tb", /*keep_tabs=*/true), "a\tb");
  EXPECT_EQ(EscapeForTerminal(std::string("nul\0x\x08\x7f", 7)), "nul\\x00x\\x08\\x7f");
}

TEST(TerminalTextTest, C1ControlsBidiOverridesAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"
                              "31m"),
            "\\x9b31m");                                 // U+009B: 8-bit CSI.
  EXPECT_EQ(EscapeForTerminal("\xc2\x85"), "\\x85");     // U+0085: NEL.
  EXPECT_EQ(EscapeForTerminal("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is text.
  EXPECT_EQ(EscapeForTerminal("abc\xe2\x80\xae"
                              "fdp.exe"),
            "abc\\u202efdp.exe");
  EXPECT_EQ(EscapeForTerminal("x\xe2\x81\xa6y"), "x\\u2066y");
  EXPECT_EQ(EscapeForTerminal("\x9b"
                              "2J"),
            "\\x9b2J");                                             // A raw C1 byte.
  EXPECT_EQ(EscapeForTerminal("\xc0\x80"), "\\xc0\\x80");           // Overlong NUL.
  EXPECT_EQ(EscapeForTerminal("\xe2\x82"), "\\xe2\\x82");           // Truncated.
  EXPECT_EQ(EscapeForTerminal("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // A surrogate.
}

}  // namespace
}  // namespace jobwheel::ctl
