#include "services/scheduler/cron_parser.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/scheduler/cron_rep.h"

namespace jobwheel::scheduler::cron_internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// min..max and the markers given, sorted (as the value sets are).
ValueSet Range(int min, int max, std::vector<int> markers = {}) {
  ValueSet set;
  for (int v = min; v <= max; ++v) set.push_back(v);
  set.insert(set.end(), markers.begin(), markers.end());
  std::sort(set.begin(), set.end());
  return set;
}

CronRep MustParse(const std::string& expression, const std::string& zone = "UTC") {
  absl::StatusOr<CronRep> rep = ParseCron(expression, zone);
  EXPECT_TRUE(rep.ok()) << expression << ": " << rep.status();
  return rep.ok() ? *std::move(rep) : CronRep{};
}

TEST(CronParserTest, StarHoldsEveryValueAndTheMarker) {
  const CronRep rep = MustParse("* * * * * ?");
  EXPECT_EQ(rep.fields[kSecond], Range(0, 59, {kAllSpec}));
  EXPECT_EQ(rep.fields[kHour], Range(0, 23, {kAllSpec}));
  EXPECT_EQ(rep.fields[kDayOfMonth], Range(1, 31, {kAllSpec}));
  EXPECT_EQ(rep.fields[kMonth], Range(1, 12, {kAllSpec}));
  EXPECT_THAT(rep.fields[kDayOfWeek], ElementsAre(kNoSpec));
  // Six fields: the year is `*`.
  EXPECT_EQ(rep.fields[kYear], Range(1970, kCronMaxYear, {kAllSpec}));
  EXPECT_EQ(rep.expression, "* * * * * ?");
}

TEST(CronParserTest, StepsRangesAndWrapAround) {
  const CronRep rep = MustParse("*/0 0/15 22-2 1/10 NOV-FEB ?");
  EXPECT_EQ(rep.fields[kSecond], Range(0, 59, {kAllSpec}));  // `*/0` is `*`.
  EXPECT_THAT(rep.fields[kMinute], ElementsAre(0, 15, 30, 45));
  EXPECT_THAT(rep.fields[kHour], ElementsAre(0, 1, 2, 22, 23));
  EXPECT_THAT(rep.fields[kDayOfMonth], ElementsAre(1, 11, 21, 31));
  EXPECT_THAT(rep.fields[kMonth], ElementsAre(1, 2, 11, 12));
}

TEST(CronParserTest, QuartzQuirksInTheValueSets) {
  // No increment limit in a range; characters after a number or name ignored.
  const CronRep rep = MustParse("0-59/61 5X 0 ? * MON-FRI/2");
  EXPECT_THAT(rep.fields[kSecond], ElementsAre(0));
  EXPECT_THAT(rep.fields[kMinute], ElementsAre(5));
  EXPECT_THAT(rep.fields[kDayOfMonth], ElementsAre(kNoSpec));
  EXPECT_THAT(rep.fields[kDayOfWeek], ElementsAre(2, 3, 4, 5, 6));
  // `L` outside the day fields adds nothing (the search then throws).
  EXPECT_THAT(MustParse("0 0 L * * ?").fields[kHour], IsEmpty());
}

TEST(CronParserTest, DayOfMonthFlags) {
  CronRep rep = MustParse("0 0 12 L-3W * ?");
  EXPECT_TRUE(rep.last_day_of_month);
  EXPECT_EQ(rep.last_day_offset, 3);
  EXPECT_TRUE(rep.nearest_weekday);
  EXPECT_THAT(rep.fields[kDayOfMonth], IsEmpty());

  rep = MustParse("0 0 12 15W,20 * ?");
  EXPECT_FALSE(rep.last_day_of_month);
  EXPECT_TRUE(rep.nearest_weekday);
  EXPECT_THAT(rep.fields[kDayOfMonth], ElementsAre(15, 20));
}

TEST(CronParserTest, DayOfWeekFlags) {
  CronRep rep = MustParse("0 0 12 ? * 6#3");
  EXPECT_EQ(rep.nth_day_of_week, 3);
  EXPECT_FALSE(rep.last_day_of_week);
  EXPECT_THAT(rep.fields[kDayOfWeek], ElementsAre(6));

  rep = MustParse("0 0 12 ? * FRIL");
  EXPECT_TRUE(rep.last_day_of_week);
  EXPECT_THAT(rep.fields[kDayOfWeek], ElementsAre(6));

  rep = MustParse("0 0 12 ? * L");  // `L` alone is Saturday.
  EXPECT_FALSE(rep.last_day_of_week);
  EXPECT_THAT(rep.fields[kDayOfWeek], ElementsAre(7));
}

TEST(CronParserTest, FarYearsAreCapped) {
  const CronRep rep = MustParse("0 0 0 1 1 ? 2020-2000000000");
  ASSERT_EQ(rep.fields[kYear].size(), static_cast<size_t>(kYearCap - 2020 + 1));
  EXPECT_EQ(rep.fields[kYear].front(), 2020);
  EXPECT_EQ(rep.fields[kYear].back(), kYearCap);
}

TEST(CronParserTest, SplitsOnSpacesAndTabsAndIgnoresAnEighthField) {
  const CronRep rep = MustParse("\t0  30\t2 * * ? 2030 extra\n");
  EXPECT_THAT(rep.fields[kMinute], ElementsAre(30));
  EXPECT_THAT(rep.fields[kHour], ElementsAre(2));
  EXPECT_THAT(rep.fields[kYear], ElementsAre(2030));
}

TEST(CronParserTest, ErrorsNameTheExpressionAndTheField) {
  absl::StatusOr<CronRep> rep = ParseCron("0 0 25 * * ?", "UTC");
  EXPECT_EQ(rep.status(),
            absl::InvalidArgumentError(
                "cron expression \"0 0 25 * * ?\": field hour: value 25 out of range 0-23"));
  rep = ParseCron("0 0 0 * * MON", "UTC");
  EXPECT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rep.status().message(), HasSubstr("field day-of-week: exactly one of"));
  rep = ParseCron("0 0 0 *", "UTC");
  EXPECT_THAT(rep.status().message(), HasSubstr("expected 6 or 7 fields"));
}

TEST(CronParserTest, TimeZones) {
  EXPECT_EQ(MustParse("0 0 0 * * ?", "").time_zone.name(), "UTC");
  EXPECT_EQ(MustParse("0 0 0 * * ?", "Asia/Shanghai").time_zone.name(), "Asia/Shanghai");
  for (const char* zone : {"localtime", "/etc/passwd", "../UTC", "Mars/Olympus"}) {
    absl::StatusOr<CronRep> rep = ParseCron("0 0 0 * * ?", zone);
    EXPECT_EQ(rep.status().code(), absl::StatusCode::kInvalidArgument) << zone;
    EXPECT_THAT(rep.status().message(), HasSubstr("time_zone: unknown time zone")) << zone;
  }
}

}  // namespace
}  // namespace jobwheel::scheduler::cron_internal
