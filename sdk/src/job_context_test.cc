#include "jobwheel/job_context.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobwheel/cancellation.h"
#include "jobwheel/options.h"
#include "jobwheel/result.h"

namespace jobwheel {
namespace {

using ::testing::ElementsAre;

TEST(JobContextTest, LogSplitsLinesAndLogfFormats) {
  std::vector<std::string> lines;
  JobContext ctx(RunInfo{}, nullptr, [&](absl::string_view l) { lines.emplace_back(l); });
  ctx.Log("one\ntwo\n");
  ctx.Logf("n=%d s=%s", 42, "x");
  ctx.Log("");
  EXPECT_THAT(lines, ElementsAre("one", "two", "n=42 s=x", ""));
}

TEST(JobContextTest, SleepForReturnsEarlyOnCancel) {
  auto token = std::make_shared<CancellationToken>();
  JobContext ctx(RunInfo{}, token, nullptr);
  EXPECT_TRUE(ctx.SleepFor(absl::Milliseconds(1)));
  std::thread canceller([token] { token->Cancel(CancelReason::kKilled, "stop"); });
  const absl::Time start = RealClock::Get().Now();
  EXPECT_FALSE(ctx.SleepFor(absl::Hours(1)));
  EXPECT_LT(RealClock::Get().Now() - start, absl::Minutes(1));
  canceller.join();
  EXPECT_TRUE(ctx.cancelled());
  EXPECT_EQ(ctx.cancel_reason(), CancelReason::kKilled);
}

TEST(CancellationTokenTest, FirstCancelWins) {
  CancellationToken token;
  EXPECT_FALSE(token.cancelled());
  EXPECT_EQ(token.reason(), CancelReason::kNone);
  EXPECT_TRUE(token.Cancel(CancelReason::kTimedOut, "timed out"));
  EXPECT_FALSE(token.Cancel(CancelReason::kKilled, "killed"));
  EXPECT_EQ(token.reason(), CancelReason::kTimedOut);
  EXPECT_EQ(token.message(), "timed out");
  EXPECT_TRUE(token.WaitFor(absl::ZeroDuration()));
  EXPECT_EQ(CancelReasonName(CancelReason::kCovered), "covered");
}

TEST(ResultTest, OkAndFail) {
  EXPECT_TRUE(Result::Ok().ok());
  EXPECT_EQ(Result::Ok("m").code(), 200);
  EXPECT_EQ(Result::Ok("m").message(), "m");
  Result f = Result::Fail(503, "down");
  EXPECT_FALSE(f.ok());
  EXPECT_EQ(f.code(), 503);
  EXPECT_EQ(Result::Fail("x").code(), 500);
}

TEST(OptionsTest, ValidateNamesTheField) {
  ExecutorOptions o;
  EXPECT_THAT(std::string(o.Validate().message()), ::testing::HasSubstr("app"));
  o.app = "demo";
  EXPECT_THAT(std::string(o.Validate().message()), ::testing::HasSubstr("public_keys"));
  o.insecure_dev = true;
  EXPECT_TRUE(o.Validate().ok());
  o.listen_address = "0.0.0.0:7200";  // insecure_dev only where no other host can call.
  EXPECT_THAT(std::string(o.Validate().message()), ::testing::HasSubstr("listen_address"));
  o.listen_address = "127.0.0.1:7200";
  o.insecure_dev = false;
  o.dispatcher_public_keys = "d";  // Parsed at Start.
  o.scheduler_public_keys = "s";
  o.executor_token = "e";
  EXPECT_TRUE(o.Validate().ok());
  o.grace_period = absl::Seconds(-1);
  EXPECT_THAT(std::string(o.Validate().message()), ::testing::HasSubstr("grace_period"));
}

}  // namespace
}  // namespace jobwheel
