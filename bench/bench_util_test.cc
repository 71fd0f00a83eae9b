#include "bench/bench_util.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(PercentilesTest, NearestRankOverOneToHundred) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  Percentiles p = ComputePercentiles(v);
  EXPECT_EQ(p.n, 100u);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);
  EXPECT_EQ(p.max, 100);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
}

TEST(PercentilesTest, EmptyAndSingle) {
  std::vector<double> none;
  EXPECT_EQ(ComputePercentiles(none).n, 0u);
  std::vector<double> one = {7};
  Percentiles p = ComputePercentiles(one);
  EXPECT_EQ(p.p50, 7);
  EXPECT_EQ(p.p99, 7);
  EXPECT_EQ(p.max, 7);
}

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

TEST(MetricSumTest, SumsEverySeriesOfExactlyThatName) {
  const char* body =
      "# HELP jobwheel_dispatcher_executors_known Executors.\n"
      "# TYPE jobwheel_dispatcher_executors_known gauge\n"
      "jobwheel_dispatcher_executors_known 3\n"
      "jobwheel_dispatcher_executors_known_total 99\n"
      "jobwheel_x{outcome=\"a\"} 1.5\n"
      "jobwheel_x{outcome=\"b\"} 2\n";
  EXPECT_EQ(MetricSum(body, "jobwheel_dispatcher_executors_known"), 3);
  EXPECT_EQ(MetricSum(body, "jobwheel_x"), 3.5);
  EXPECT_FALSE(MetricSum(body, "jobwheel_missing").has_value());
}

TEST(ProcTest, ReadsItsOwnProcess) {
  auto s = ReadProc(getpid());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->rss_kb, 0);
  EXPECT_GE(s->peak_rss_kb, s->rss_kb);
  EXPECT_GE(s->cpu_seconds, 0);
}

}  // namespace
}  // namespace jobwheel::bench
