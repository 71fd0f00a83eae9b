#include "bench/fire_sets.h"

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(ExpectedFiresTest, EveryDueTimeInTheRange) {
  // Job 1 every second from 500 ms; job 2 every 3 s from 0.
  std::vector<JobSchedule> jobs = {{1, 500000, 1000000}, {2, 0, 3000000}};
  std::vector<FireKey> e = ExpectedFires(jobs, 1000000, 4000000);
  EXPECT_EQ(e, (std::vector<FireKey>{{1, 1500000}, {1, 2500000}, {1, 3500000}, {2, 3000000}}));
}

TEST(ExpectedFiresTest, NothingBeforeTheFirstDueTime) {
  std::vector<FireKey> e = ExpectedFires({{7, 5000000, 1000000}}, 0, 7000000);
  EXPECT_EQ(e, (std::vector<FireKey>{{7, 5000000}, {7, 6000000}}));
}

TEST(CompareFireSetsTest, SetsNotCounts) {
  // Equal counts (3 and 3) but one lost, one doubled: a count comparison would see nothing.
  std::vector<FireKey> expected = {{1, 1}, {1, 2}, {1, 3}};
  std::vector<FireKey> recorded = {{1, 1}, {1, 2}, {1, 2}, {9, 5}, {1, 100}};
  SetComparison c = CompareFireSets(expected, recorded, 0, 10);
  EXPECT_EQ(c.expected, 3);
  EXPECT_EQ(c.recorded, 3);  // (1,1), (1,2), (9,5); (1,100) is out of range.
  EXPECT_EQ(c.missing, 1);
  EXPECT_EQ(c.duplicate, 1);
  EXPECT_EQ(c.unexpected, 1);
}

}  // namespace
}  // namespace jobwheel::bench
