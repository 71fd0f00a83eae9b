#include "bench/http_metrics.h"

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

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

}  // namespace
}  // namespace jobwheel::bench
