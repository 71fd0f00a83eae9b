#include "common/base/backoff.h"

#include "absl/random/random.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

TEST(BackoffTest, StepsDoubleUpToTheCapAndWaitsStayInTheJitterBand) {
  absl::BitGen gen;
  Backoff b(absl::Milliseconds(100), absl::Milliseconds(700));
  const absl::Duration steps[] = {absl::Milliseconds(100), absl::Milliseconds(200),
                                  absl::Milliseconds(400), absl::Milliseconds(700),
                                  absl::Milliseconds(700)};
  for (absl::Duration want : steps) {
    absl::Duration wait = b.Next(gen);
    EXPECT_EQ(b.step(), want);
    EXPECT_GE(wait, want / 2);
    EXPECT_LE(wait, want);
  }
  EXPECT_EQ(b.failures(), 5);
}

TEST(BackoffTest, ResetStartsOverFromTheInitialStep) {
  absl::BitGen gen;
  Backoff b(absl::Milliseconds(50), absl::Seconds(2));
  b.Next(gen);
  b.Next(gen);
  b.Reset();
  EXPECT_EQ(b.failures(), 0);
  b.Next(gen);
  EXPECT_EQ(b.step(), absl::Milliseconds(50));
}

TEST(BackoffTest, ACapLowersTheCeilingOfOneCall) {
  absl::BitGen gen;
  Backoff b(absl::Milliseconds(100), absl::Seconds(5));
  b.Next(gen);
  b.Next(gen);
  b.Next(gen);  // 400 ms.
  EXPECT_LE(b.Next(gen, absl::Milliseconds(200)), absl::Milliseconds(200));
  EXPECT_EQ(b.step(), absl::Milliseconds(200));
  b.Next(gen);
  EXPECT_EQ(b.step(), absl::Milliseconds(400));  // Doubles from the capped step.
}

TEST(BackoffTest, JitterSpreadsTheWaits) {
  absl::BitGen gen;
  absl::Duration lo = absl::InfiniteDuration(), hi = absl::ZeroDuration();
  for (int i = 0; i < 200; ++i) {
    Backoff b(absl::Seconds(1), absl::Seconds(1));
    absl::Duration w = b.Next(gen);
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  EXPECT_GT(hi - lo, absl::Milliseconds(100));  // Not one fixed value.
}

}  // namespace
}  // namespace jobwheel
