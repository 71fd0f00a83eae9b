#include "bench/run_records.h"

#include <fstream>

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(RecordsTest, ParsesWholeLinesAndSkipsATornOne) {
  std::vector<RunRecord> r =
      ParseRecords("1 10 100 0 1000000 1002000\n2 11 101 1 2000000 2000500\n3 12 10");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].run_id, 1);
  EXPECT_EQ(r[0].job_id, 10);
  EXPECT_EQ(r[0].fire_id, 100);
  EXPECT_EQ(r[0].received_us - r[0].scheduled_us, 2000);
  EXPECT_EQ(r[1].attempt, 1);
}

TEST(RecordsTest, ReadsOnlyWholeNewLines) {
  const std::string path = ::testing::TempDir() + "/records";
  std::ofstream(path) << "1 10 100 0 1000000 1002000\n2 11 1";
  size_t offset = 0;
  EXPECT_EQ(ReadNewRecords(path, &offset).size(), 1u);
  std::ofstream(path, std::ios::app) << "01 0 2000000 2000500\n";
  std::vector<RunRecord> r = ReadNewRecords(path, &offset);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].fire_id, 101);
  EXPECT_TRUE(ReadNewRecords(path, &offset).empty());
}

TEST(CollectExecutionsTest, OwnJobsOnlyRepeatsKeptEarliestStart) {
  std::vector<RunRecord> records = {
      {1, 10, 100, 0, 1000000, 1005000},
      {2, 10, 100, 0, 1000000, 1002000},  // The same fire again, started earlier.
      {3, 99, 101, 0, 1000000, 1001000},  // Not a bench job.
  };
  Executions e = CollectExecutions(records, {{10, 1000000, 1000000}});
  EXPECT_EQ(e.keys.size(), 2u);
  ASSERT_EQ(e.first_start_us.size(), 1u);
  EXPECT_EQ(e.first_start_us.at(FireKey(10, 1000000)), 1002000);
}

}  // namespace
}  // namespace jobwheel::bench
