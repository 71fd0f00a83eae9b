#include "bench/peak_search.h"

#include <vector>

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(PeakSearchTest, DoublesThenBisectsToWithinTheResolution) {
  std::vector<int> tried;
  auto probe = [&](int rate) -> absl::StatusOr<bool> {
    tried.push_back(rate);
    return rate <= 7300;  // The machine sustains 7,300/s.
  };
  absl::StatusOr<PeakSearchResult> r = SearchPeak({2500, 64000, 0.05}, probe, [] { return true; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::vector<int>(tried.begin(), tried.begin() + 3),
            (std::vector<int>{2500, 5000, 10000}));
  EXPECT_LE(r->max_sustained, 7300);
  EXPECT_GT(r->first_unsustained, 7300);
  EXPECT_LE(r->first_unsustained - r->max_sustained, 0.05 * r->max_sustained);
  EXPECT_TRUE(r->converged);
  EXPECT_FALSE(r->ceiling);
  EXPECT_EQ(r->probes, static_cast<int>(tried.size()));
}

TEST(PeakSearchTest, AFailingStartBisectsDownwards) {
  absl::StatusOr<PeakSearchResult> r = SearchPeak(
      {2500, 64000, 0.05}, [](int rate) -> absl::StatusOr<bool> { return rate <= 900; },
      [] { return true; });
  ASSERT_TRUE(r.ok());
  EXPECT_LE(r->max_sustained, 900);
  EXPECT_GE(r->max_sustained, 850);
  EXPECT_TRUE(r->converged);
}

TEST(PeakSearchTest, TheCeilingHolding) {
  std::vector<int> tried;
  absl::StatusOr<PeakSearchResult> r = SearchPeak(
      {100, 300, 0.05},
      [&](int rate) -> absl::StatusOr<bool> {
        tried.push_back(rate);
        return true;
      },
      [] { return true; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(tried, (std::vector<int>{100, 200, 300}));
  EXPECT_EQ(r->max_sustained, 300);
  EXPECT_TRUE(r->ceiling);
}

TEST(PeakSearchTest, TheBudgetStopsItUnconverged) {
  int budget = 4;
  absl::StatusOr<PeakSearchResult> r = SearchPeak(
      {2500, 64000, 0.01}, [](int rate) -> absl::StatusOr<bool> { return rate <= 7300; },
      [&] { return budget-- > 0; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->probes, 4);  // 2,500, 5,000, 10,000, then 7,500: 5,000-7,500 is not 1 %.
  EXPECT_FALSE(r->converged);
  EXPECT_EQ(r->max_sustained, 5000);
  EXPECT_EQ(r->first_unsustained, 7500);
}

TEST(PeakSearchTest, AProbeErrorEndsTheSearch) {
  absl::StatusOr<PeakSearchResult> r = SearchPeak(
      {100, 1000, 0.05},
      [](int) -> absl::StatusOr<bool> { return absl::DeadlineExceededError("did not drain"); },
      [] { return true; });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(MiddleRateTest, TwoSignificantDigits) {
  EXPECT_EQ(MiddleRate(5000, 10000), 7500);
  EXPECT_EQ(MiddleRate(7500, 10000), 8800);
  EXPECT_EQ(MiddleRate(50, 100), 75);
  EXPECT_EQ(MiddleRate(0, 1), 1);
}

}  // namespace
}  // namespace jobwheel::bench
