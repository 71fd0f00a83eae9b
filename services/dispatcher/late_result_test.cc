#include "services/dispatcher/late_result.h"

#include <string>

#include "common/time/proto_time.h"
#include "gtest/gtest.h"

namespace jobwheel::dispatcher {
namespace {

TEST(LateResultTextTest, SaysWhatWhenAndFromWhere) {
  v1::RunResult r;
  r.set_run_id(7);
  r.set_status(v1::RUN_STATUS_SUCCEEDED);
  r.set_code(0);
  r.set_message("all good");
  r.set_executor_address("10.0.0.5:9999");
  r.set_result_key(std::string(32, 'k'));
  *r.mutable_end_time() = ToProto(absl::FromUnixSeconds(1700000000));
  const std::string text = LateResultText(r, absl::FromUnixSeconds(1800000000));
  EXPECT_EQ(text, "SUCCEEDED code 0 at 2023-11-14T22:13:20Z from 10.0.0.5:9999: all good");
  EXPECT_EQ(text.find("kkkk"), std::string::npos);
}

TEST(LateResultTextTest, NoEndTimeTakesTheReceivedTime) {
  v1::RunResult r;
  r.set_status(v1::RUN_STATUS_FAILED);
  r.set_code(3);
  EXPECT_EQ(LateResultText(r, absl::FromUnixSeconds(1700000000)),
            "FAILED code 3 at 2023-11-14T22:13:20Z from an unnamed executor: ");
}

TEST(LateResultTextTest, LongMessagesAreCutAtACharacterBoundary) {
  v1::RunResult r;
  r.set_status(v1::RUN_STATUS_FAILED);
  r.set_executor_address("h:1");
  std::string message = "x";
  for (int i = 0; i < 1000; ++i) message += "\xC3\xA9";  // é
  r.set_message(message);
  const std::string text = LateResultText(r, absl::FromUnixSeconds(0));
  const std::string suffix = " \xE2\x80\xA6(truncated)";
  ASSERT_GE(text.size(), suffix.size());
  EXPECT_EQ(text.substr(text.size() - suffix.size()), suffix);
  // "x" then whole two-byte characters: the kept message part has odd length.
  const size_t start = text.find(": ") + 2;
  const std::string kept = text.substr(start, text.size() - suffix.size() - start);
  EXPECT_LE(kept.size(), kLateResultMessageBytes);
  EXPECT_EQ(kept.size() % 2, 1u);
}

}  // namespace
}  // namespace jobwheel::dispatcher
