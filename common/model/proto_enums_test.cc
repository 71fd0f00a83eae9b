#include "common/model/proto_enums.h"

#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(ProtoEnumsTest, EveryRunStatusIsExactlyOneOfOpenTerminalOrUnspecified) {
  const auto* e = v1::RunStatus_descriptor();
  for (int i = 0; i < e->value_count(); ++i) {
    auto s = static_cast<v1::RunStatus>(e->value(i)->number());
    const int kinds =
        (IsOpen(s) ? 1 : 0) + (IsTerminal(s) ? 1 : 0) + (s == v1::RUN_STATUS_UNSPECIFIED ? 1 : 0);
    EXPECT_EQ(kinds, 1) << e->value(i)->name();
  }
}

TEST(ProtoEnumsTest, TerminalStatuses) {
  EXPECT_FALSE(IsTerminal(v1::RUN_STATUS_PENDING));
  EXPECT_FALSE(IsTerminal(v1::RUN_STATUS_RUNNING));
  EXPECT_TRUE(IsTerminal(v1::RUN_STATUS_SUCCEEDED));
  EXPECT_TRUE(IsTerminal(v1::RUN_STATUS_LOST));
  EXPECT_TRUE(IsTerminal(v1::RUN_STATUS_DISCARDED));
}

TEST(ProtoEnumsTest, ScriptGlueTypes) {
  EXPECT_TRUE(IsScript(v1::GLUE_TYPE_SCRIPT_SHELL));
  EXPECT_TRUE(IsScript(v1::GLUE_TYPE_SCRIPT_PYTHON));
  EXPECT_FALSE(IsScript(v1::GLUE_TYPE_HANDLER));
  EXPECT_FALSE(IsScript(v1::GLUE_TYPE_UNSPECIFIED));
}

TEST(ProtoEnumsTest, ShortNames) {
  EXPECT_EQ(RunStatusShortName(v1::RUN_STATUS_TIMED_OUT), "TIMED_OUT");
  EXPECT_EQ(ShortEnumName("GLUE_TYPE_SCRIPT_SHELL", "GLUE_TYPE_"), "SCRIPT_SHELL");
  EXPECT_EQ(ShortEnumName("OTHER", "GLUE_TYPE_"), "OTHER");
  EXPECT_EQ(TriggerTypeShortName(v1::TRIGGER_TYPE_MISFIRE), "MISFIRE");
  EXPECT_EQ(RoleShortName(v1::ROLE_OPERATOR), "OPERATOR");
}

}  // namespace
}  // namespace jobwheel
