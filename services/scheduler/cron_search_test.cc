// SearchAfter on hand-built parsed forms; the end-to-end cases (parse, then
// search) are in cron_test.cc, cron_property_test.cc and tests/cron.

#include "services/scheduler/cron_search.h"

#include <string>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "services/scheduler/cron_rep.h"

namespace jobwheel::scheduler::cron_internal {
namespace {

ValueSet Range(int min, int max) {
  ValueSet set;
  for (int v = min; v <= max; ++v) set.push_back(v);
  set.push_back(kAllSpec);
  return set;
}

// `* * * * * ?` in `zone`: every second.
CronRep EverySecond(const std::string& zone = "UTC") {
  CronRep rep;
  EXPECT_TRUE(absl::LoadTimeZone(zone, &rep.time_zone));
  rep.fields[kSecond] = Range(0, 59);
  rep.fields[kMinute] = Range(0, 59);
  rep.fields[kHour] = Range(0, 23);
  rep.fields[kDayOfMonth] = Range(1, 31);
  rep.fields[kMonth] = Range(1, 12);
  rep.fields[kDayOfWeek] = {kNoSpec};
  rep.fields[kYear] = Range(1970, kCronMaxYear);
  return rep;
}

absl::Time Utc(int y, int mo, int d, int h, int mi, int s) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone());
}

TEST(CronSearchTest, EachFieldStepsToItsNextValue) {
  CronRep rep = EverySecond();
  rep.fields[kSecond] = {10, 40};
  rep.fields[kMinute] = {5};
  rep.fields[kHour] = {3, 20};
  rep.fields[kDayOfMonth] = {15};
  rep.fields[kMonth] = {2, 8};
  rep.fields[kYear] = {2030, 2031};
  const CronSearch search = SearchAfter(rep, Utc(2030, 2, 15, 20, 5, 10));
  EXPECT_EQ(search.stop, CronSearch::kFired);
  EXPECT_EQ(search.time, Utc(2030, 2, 15, 20, 5, 40));
  // Every field runs out of values in turn and carries into the next.
  EXPECT_EQ(SearchAfter(rep, Utc(2030, 8, 15, 20, 5, 40)).time, Utc(2031, 2, 15, 3, 5, 10));
}

TEST(CronSearchTest, SecondsRunningOutCarryIntoTheMinute) {
  CronRep rep = EverySecond();
  rep.fields[kSecond] = {0, 30};
  EXPECT_EQ(SearchAfter(rep, Utc(2024, 12, 31, 23, 59, 30)).time, Utc(2025, 1, 1, 0, 0, 0));
}

TEST(CronSearchTest, AFieldWithNoValuesIsWhereQuartzThrows) {
  CronRep rep = EverySecond();
  rep.fields[kHour].clear();
  const CronSearch search = SearchAfter(rep, Utc(2024, 1, 1, 0, 0, 0));
  EXPECT_EQ(search.stop, CronSearch::kQuartzThrows);
  EXPECT_FALSE(search.time.has_value());
}

TEST(CronSearchTest, YearsRunningOutMeanNever) {
  CronRep rep = EverySecond();
  rep.fields[kYear] = {2030};
  EXPECT_EQ(SearchAfter(rep, Utc(2030, 12, 31, 23, 59, 59)).stop, CronSearch::kNever);
  rep.fields[kYear] = {kCronMaxYear + 1};  // Past the limit: never searched.
  EXPECT_EQ(SearchAfter(rep, Utc(2024, 1, 1, 0, 0, 0)).stop, CronSearch::kNever);
  EXPECT_EQ(SearchAfter(EverySecond(), absl::InfiniteFuture()).stop, CronSearch::kNever);
}

TEST(CronSearchTest, AnHourInTheSpringGapIsSkipped) {
  CronRep rep = EverySecond("America/New_York");
  rep.fields[kSecond] = {0};
  rep.fields[kMinute] = {30};
  rep.fields[kHour] = {2};
  // 2024-03-10 02:30 does not exist in New York: the next is March 11.
  const absl::Time after = Utc(2024, 3, 10, 5, 0, 0);                   // 00:00 EST.
  EXPECT_EQ(SearchAfter(rep, after).time, Utc(2024, 3, 11, 6, 30, 0));  // 02:30 EDT.
}

TEST(CronSearchTest, RepeatingInstantsAreWhereQuartzLoops) {
  // `L-30W`: in February the last day minus 30 is day -2, and Quartz walks
  // back into January and forth forever.
  CronRep rep = EverySecond();
  rep.fields[kSecond] = {0};
  rep.fields[kMinute] = {0};
  rep.fields[kHour] = {0};
  rep.fields[kDayOfMonth] = {};
  rep.last_day_of_month = true;
  rep.last_day_offset = 30;
  rep.nearest_weekday = true;
  const CronSearch search = SearchAfter(rep, Utc(2025, 1, 15, 0, 0, 0));
  EXPECT_EQ(search.stop, CronSearch::kQuartzLoops);
  EXPECT_FALSE(search.time.has_value());
}

TEST(CronSearchTest, NthAndLastDayOfWeek) {
  CronRep rep = EverySecond();
  rep.fields[kSecond] = {0};
  rep.fields[kMinute] = {0};
  rep.fields[kHour] = {12};
  rep.fields[kDayOfMonth] = {kNoSpec};
  rep.fields[kDayOfWeek] = {6};  // Friday.
  rep.nth_day_of_week = 3;
  // January 2024's Fridays: 5, 12, 19, 26.
  EXPECT_EQ(SearchAfter(rep, Utc(2024, 1, 1, 0, 0, 0)).time, Utc(2024, 1, 19, 12, 0, 0));
  rep.nth_day_of_week = 0;
  rep.last_day_of_week = true;
  EXPECT_EQ(SearchAfter(rep, Utc(2024, 1, 1, 0, 0, 0)).time, Utc(2024, 1, 26, 12, 0, 0));
}

}  // namespace
}  // namespace jobwheel::scheduler::cron_internal
