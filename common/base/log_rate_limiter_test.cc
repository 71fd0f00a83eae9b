#include "common/base/log_rate_limiter.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

LogRateLimiter::Options TenSeconds(size_t max_lines = 100) {
  LogRateLimiter::Options o;
  o.interval = absl::Seconds(10);
  o.max_lines_per_interval = max_lines;
  return o;
}

TEST(LogRateLimiterTest, OneLinePerKeyPerIntervalCarryingTheCountOfTheOthers) {
  SimulatedClock clock;
  LogRateLimiter limiter(TenSeconds(), clock);
  LogRateLimiter::Verdict first = limiter.Admit("ipv4:10.0.0.7");
  EXPECT_TRUE(first.log);
  EXPECT_EQ(first.suppressed, 0);
  for (int i = 0; i < 999; ++i) {
    clock.Advance(absl::Milliseconds(9));
    EXPECT_FALSE(limiter.Admit("ipv4:10.0.0.7").log) << i;
  }
  clock.Set(absl::FromUnixSeconds(1700000010));  // 10 s after the first line.
  LogRateLimiter::Verdict next = limiter.Admit("ipv4:10.0.0.7");
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.suppressed, 999);
  clock.Advance(absl::Seconds(1));
  EXPECT_FALSE(limiter.Admit("ipv4:10.0.0.7").log);
  clock.Advance(absl::Seconds(60));
  LogRateLimiter::Verdict later = limiter.Admit("ipv4:10.0.0.7");
  EXPECT_TRUE(later.log);
  EXPECT_EQ(later.suppressed, 1);
}

TEST(LogRateLimiterTest, KeysAreCountedApart) {
  SimulatedClock clock;
  LogRateLimiter limiter(TenSeconds(), clock);
  EXPECT_TRUE(limiter.Admit("a").log);
  EXPECT_FALSE(limiter.Admit("a").log);
  EXPECT_TRUE(limiter.Admit("b").log);
  EXPECT_FALSE(limiter.Admit("b").log);
}

TEST(LogRateLimiterTest, ManyKeysTogetherGetAtMostTheLineBudget) {
  SimulatedClock clock;
  LogRateLimiter limiter(TenSeconds(/*max_lines=*/3), clock);
  int written = 0;
  for (int i = 0; i < 50; ++i) written += limiter.Admit(absl::StrCat("peer", i)).log ? 1 : 0;
  EXPECT_EQ(written, 3);
  clock.Advance(absl::Seconds(10));
  // A key refused by the budget keeps its count for its next line.
  LogRateLimiter::Verdict v = limiter.Admit("peer40");
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.suppressed, 1);
}

TEST(LogRateLimiterTest, SuppressedNote) {
  EXPECT_EQ(LogRateLimiter::SuppressedNote(0), "");
  EXPECT_EQ(LogRateLimiter::SuppressedNote(12), " (12 more since the last line)");
}

}  // namespace
}  // namespace jobwheel
