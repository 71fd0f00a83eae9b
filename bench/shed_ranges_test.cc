// Which due times a misfire or skipped row stands for.
#include "bench/shed_ranges.h"

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(ShedRangesTest, CountsTheMisfireRange) {
  EXPECT_EQ(CoveredCount("misfire: 60 fire(s) from a to b skipped (DO_NOTHING)"), 60);
  EXPECT_EQ(CoveredCount("late: 3 pending fire(s) from a to b more than 5s late"), 1);
  EXPECT_EQ(CoveredCount("misfire: x fire(s)"), 1);
  EXPECT_EQ(CoveredCount(""), 1);
}

TEST(ShedRangesTest, ExpandsRowsByTheJobsSchedules) {
  const std::vector<JobSchedule> jobs = {{1, 0, 1000000}, {2, 500000, 2000000}};
  const auto covered = CoveredFires({{1, 3000000, "misfire: 3 fire(s) from …"},
                                     {2, 4500000, "late: 1 pending fire(s) …"},
                                     {9, 0, "misfire: 5 fire(s)"}},
                                    jobs);
  EXPECT_EQ(covered.size(), 4u);
  EXPECT_TRUE(covered.contains(FireKey{1, 3000000}));
  EXPECT_TRUE(covered.contains(FireKey{1, 5000000}));
  EXPECT_FALSE(covered.contains(FireKey{1, 6000000}));
  EXPECT_TRUE(covered.contains(FireKey{2, 4500000}));
}

}  // namespace
}  // namespace jobwheel::bench
