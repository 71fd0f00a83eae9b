// The admission pacer: unlimited until the hand-off falls behind, then the rate it absorbs.
#include "services/scheduler/admission_pacer.h"

#include <limits>

#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

// One second of hand-offs: `fires` spread over ten batches, each `lateness` late.
void Second(AdmissionPacer& p, int s, int64_t fires, absl::Duration lateness) {
  for (int i = 0; i < 10; ++i) {
    p.OnHandOff(kT0 + absl::Seconds(s) + absl::Milliseconds(100 * i), fires / 10, lateness);
  }
}

TEST(AdmissionPacerTest, UnlimitedWhileTheHandOffKeepsUp) {
  AdmissionPacer p(AdmissionPacer::Options{});
  for (int s = 0; s < 5; ++s) Second(p, s, 5000, absl::Milliseconds(50));
  EXPECT_EQ(p.Budget(kT0 + absl::Seconds(5), 1000000), kUnlimited);
  EXPECT_EQ(p.rate(), 0);
  EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(5)));
}

TEST(AdmissionPacerTest, OneSlowSecondDoesNotPace) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 5000, absl::Seconds(2));
  Second(p, 1, 5000, absl::Milliseconds(10));
  Second(p, 2, 5000, absl::Milliseconds(10));
  EXPECT_EQ(p.Budget(kT0 + absl::Seconds(3), 0), kUnlimited);
}

TEST(AdmissionPacerTest, BehindForTwoSecondsAdmitsWhatWasHandedOff) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 8000, absl::Seconds(1));
  Second(p, 1, 8000, absl::Seconds(2));
  // Closed at the budget's call: 8,000/s handed off, 0.9 of it admitted, over a 10 s window.
  const int64_t budget = p.Budget(kT0 + absl::Seconds(2), 20000);
  EXPECT_NEAR(p.rate(), 7200, 1);
  EXPECT_EQ(budget, 72000 - 20000);
  // Held fires beyond the budget: nothing more.
  EXPECT_EQ(p.Budget(kT0 + absl::Seconds(2), 100000), 0);
}

TEST(AdmissionPacerTest, HeldBackAndKeepingUpGrowsTheRate) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 8000, absl::Seconds(1));
  Second(p, 1, 8000, absl::Seconds(1));
  p.Budget(kT0 + absl::Seconds(2), 0);
  const double paced = p.rate();
  p.OnHeldBack(kT0 + absl::Seconds(2) + absl::Milliseconds(10));
  Second(p, 2, 7000, absl::Milliseconds(20));
  p.Budget(kT0 + absl::Seconds(3) + absl::Milliseconds(1), 0);
  EXPECT_NEAR(p.rate(), paced * 1.1, 1);
}

// Overload: the lag grows second by second while the claim is held back.
TEST(AdmissionPacerTest, AGrowingLagShedsWhileHeldBack) {
  AdmissionPacer p(AdmissionPacer::Options{});
  for (int s = 0; s < 3; ++s) {
    Second(p, s, 8000, absl::Milliseconds(1000 + 500 * s));
    p.OnHeldBack(kT0 + absl::Seconds(s) + absl::Milliseconds(950));
  }
  // Three lagging seconds are not yet a trend over three seconds.
  p.Budget(kT0 + absl::Seconds(3), 0);
  EXPECT_FALSE(p.overloaded());
  EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(3)));
  Second(p, 3, 8000, absl::Milliseconds(2500));
  p.OnHeldBack(kT0 + absl::Seconds(3) + absl::Milliseconds(950));
  p.Budget(kT0 + absl::Seconds(4), 0);
  EXPECT_TRUE(p.overloaded());
  EXPECT_TRUE(p.Shedding(kT0 + absl::Seconds(4)));
  EXPECT_NEAR(p.rate(), 7200, 1);
  // A lag that stays where it is does not shrink either: still overload.
  AdmissionPacer q(AdmissionPacer::Options{});
  for (int s = 0; s < 4; ++s) Second(q, s, 8000, absl::Seconds(2));
  q.OnHeldBack(kT0 + absl::Seconds(4));
  EXPECT_TRUE(q.Shedding(kT0 + absl::Seconds(4) + absl::Milliseconds(1)));
}

// Shedding ends `shed_hold` (10 s) after the last held-back claim, and a new overload is judged
// afresh.
TEST(AdmissionPacerTest, SheddingEndsAfterTheHoldAndIsJudgedAgain) {
  AdmissionPacer p(AdmissionPacer::Options{});
  for (int s = 0; s < 4; ++s) Second(p, s, 8000, absl::Milliseconds(1000 + 500 * s));
  p.OnHeldBack(kT0 + absl::Seconds(4));
  ASSERT_TRUE(p.Shedding(kT0 + absl::Seconds(4)));
  EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(15)));
  for (int s = 4; s < 16; ++s) Second(p, s, 3000, absl::Milliseconds(20));
  EXPECT_FALSE(p.overloaded());
  // Held back again but keeping up: not overload, no shedding.
  p.OnHeldBack(kT0 + absl::Seconds(16));
  EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(16)));
}

// After an outage (nothing handed off, hand-offs failing) the backlog is handed off late and
// the lag shrinks: it is drained, not shed, although the claim is held back meanwhile; the
// outage's seconds neither pace the claim to the minimum nor count as lagging.
TEST(AdmissionPacerTest, AShrinkingBacklogAfterAnOutageIsDrainedNotShed) {
  AdmissionPacer p(AdmissionPacer::Options{});
  for (int s = 0; s < 3; ++s) Second(p, s, 2000, absl::Milliseconds(50));
  for (int s = 3; s < 14; ++s) {  // The outage: 11 s, the waiting fires later and later.
    const absl::Time t = kT0 + absl::Seconds(s);
    p.OnHandOff(t, 0, absl::Seconds(s - 2));
    p.OnHandOffFailed(t + absl::Milliseconds(500));
    p.OnHeldBack(t + absl::Milliseconds(600));
  }
  p.Budget(kT0 + absl::Seconds(14), 0);
  EXPECT_EQ(p.rate(), 0);  // The outage did not pace the claim.
  EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(14)));
  // The drain: 5,000/s handed off (2,000/s offered), the lag falling 1.5 s a second.
  for (int s = 14; s < 22; ++s) {
    Second(p, s, 5000, absl::Milliseconds(11000 - 1500 * (s - 14)));
    p.OnHeldBack(kT0 + absl::Seconds(s) + absl::Milliseconds(950));
    EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(s) + absl::Milliseconds(951))) << s;
  }
  p.Budget(kT0 + absl::Seconds(22), 0);
  EXPECT_FALSE(p.overloaded());
  // At least what the drain showed it absorbs, × 0.9 (× 1.1 once it kept up).
  EXPECT_GE(p.rate(), 4500);
}

// Overload with a database slowed down by it: some hand-offs time out, some seconds hand off
// nothing at all. Neither hides the growing lag.
TEST(AdmissionPacerTest, FailedAndStalledSecondsDoNotHideAGrowingLag) {
  AdmissionPacer p(AdmissionPacer::Options{});
  for (int s = 0; s < 7; ++s) {
    const absl::Time t = kT0 + absl::Seconds(s);
    if (s == 2 || s == 4) {  // Stalled: nothing handed off, the front of the queue later.
      p.OnHandOff(t, 0, absl::Milliseconds(1500 + 200 * s));
      p.OnHandOffFailed(t + absl::Milliseconds(500));
    } else {
      Second(p, s, 3000, absl::Milliseconds(1000 + 200 * s));
      p.OnHandOffFailed(t + absl::Milliseconds(950));  // One batch timed out.
    }
    p.OnHeldBack(t + absl::Milliseconds(960));
    // Overload once four closed seconds that handed off say the lag grew: 0, 1, 3 and 5,
    // closed by the first call of second 6.
    EXPECT_EQ(p.Shedding(t + absl::Milliseconds(970)), s == 6) << s;
  }
  p.Budget(kT0 + absl::Seconds(7), 0);
  EXPECT_TRUE(p.Shedding(kT0 + absl::Seconds(7)));
}

// A drain where failed hand-offs are requeued: each second one batch comes back older than
// the queue around it (its latest hand-off grows), while the youngest fires going out are less
// late every second. Still a drain, not overload.
TEST(AdmissionPacerTest, RequeuedFiresDoNotPassForAGrowingBacklog) {
  AdmissionPacer p(AdmissionPacer::Options{});
  for (int s = 0; s < 8; ++s) {
    const absl::Time t = kT0 + absl::Seconds(s);
    Second(p, s, 3000, absl::Milliseconds(9000 - 300 * s));
    p.OnHandOff(t + absl::Milliseconds(950), 500, absl::Milliseconds(9500 + 300 * s));
    p.OnHandOffFailed(t + absl::Milliseconds(955));
    p.OnHeldBack(t + absl::Milliseconds(960));
    EXPECT_FALSE(p.Shedding(t + absl::Milliseconds(970))) << s;
  }
  EXPECT_FALSE(p.overloaded());
}

TEST(AdmissionPacerTest, NotHeldBackTheRateStaysAheadOfTheHandOff) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 8000, absl::Seconds(1));
  Second(p, 1, 8000, absl::Seconds(1));
  p.Budget(kT0 + absl::Seconds(2), 0);
  Second(p, 2, 7000, absl::Milliseconds(20));
  p.Budget(kT0 + absl::Seconds(3) + absl::Milliseconds(1), 0);
  EXPECT_NEAR(p.rate(), 7700, 10);  // max(7200, 7000 × 1.1 over 1.001 s)
}

TEST(AdmissionPacerTest, AStallDoesNotMakeTheHandOffLookSmaller) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 8000, absl::Milliseconds(20));
  Second(p, 1, 500, absl::Seconds(2));  // A stall: little handed off, late.
  Second(p, 2, 500, absl::Seconds(3));
  p.Budget(kT0 + absl::Seconds(3), 0);
  EXPECT_NEAR(p.rate(), 7200, 10);  // The best second of the last five, × 0.9.
}

TEST(AdmissionPacerTest, CalmForTenSecondsIsUnlimitedAgain) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 8000, absl::Seconds(1));
  Second(p, 1, 8000, absl::Seconds(1));
  p.Budget(kT0 + absl::Seconds(2), 0);
  ASSERT_GT(p.rate(), 0);
  for (int s = 2; s < 12; ++s) Second(p, s, 3000, absl::Milliseconds(20));
  EXPECT_EQ(p.Budget(kT0 + absl::Seconds(12) + absl::Milliseconds(1), 1000000), kUnlimited);
}

TEST(AdmissionPacerTest, ResetMakesItUnlimited) {
  AdmissionPacer p(AdmissionPacer::Options{});
  Second(p, 0, 8000, absl::Seconds(1));
  Second(p, 1, 8000, absl::Seconds(1));
  p.OnHeldBack(kT0 + absl::Seconds(2));
  p.Reset();
  EXPECT_EQ(p.Budget(kT0 + absl::Seconds(2), 100000), kUnlimited);
  EXPECT_FALSE(p.Shedding(kT0 + absl::Seconds(2)));
}

}  // namespace
}  // namespace jobwheel::scheduler
