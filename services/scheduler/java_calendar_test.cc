#include "services/scheduler/java_calendar.h"

#include <string>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler::cron_internal {
namespace {

absl::TimeZone Zone(const std::string& name) {
  absl::TimeZone tz;
  EXPECT_TRUE(absl::LoadTimeZone(name, &tz)) << name;
  return tz;
}

absl::CivilSecond Civil(JavaCalendar& cl) {
  const int64_t year = cl.Year();
  return absl::CivilSecond(year, cl.Month(), cl.Day(), cl.Hour(), cl.Minute(), cl.Second());
}

TEST(DaysInMonthTest, FollowsTheGregorianLeapYearRules) {
  EXPECT_EQ(DaysInMonth(2024, 2), 29);
  EXPECT_EQ(DaysInMonth(2023, 2), 28);
  EXPECT_EQ(DaysInMonth(2100, 2), 28);
  EXPECT_EQ(DaysInMonth(2000, 2), 29);
  EXPECT_EQ(DaysInMonth(2024, 4), 30);
  EXPECT_EQ(DaysInMonth(2024, 12), 31);
}

TEST(JavaCalendarTest, DaysPastTheEndOfTheMonthRollIntoTheNext) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  JavaCalendar cl(utc);
  cl.SetCivil(2023, 2, 31, 10, 0, 0);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2023, 3, 3, 10, 0, 0));
  cl.SetCivil(2024, 2, 31, 10, 0, 0);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2024, 3, 2, 10, 0, 0));
}

TEST(JavaCalendarTest, OutOfRangeTimeAndMonthCarryUpwards) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  JavaCalendar cl(utc);
  cl.SetCivil(2024, 1, 31, 24, 0, 0);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2024, 2, 1, 0, 0, 0));
  cl.SetCivil(2024, 12, 31, 23, 59, 60);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2025, 1, 1, 0, 0, 0));
  cl.SetCivil(2024, 13, 5, 0, 61, 0);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2025, 1, 5, 1, 1, 0));
}

TEST(JavaCalendarTest, SetsAreLazyAndStartFromTheCurrentFields) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  JavaCalendar cl(utc);
  cl.SetCivil(2024, 1, 15, 10, 20, 30);
  EXPECT_EQ(cl.Day(), 15);
  cl.SetMonth(2);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2024, 2, 15, 10, 20, 30));
  // Both sets apply before normalizing: April 31 is May 1 (normalizing after
  // each set would make February 31 March 2, then April 2).
  cl.SetCivil(2024, 2, 10, 0, 0, 0);
  EXPECT_EQ(cl.Day(), 10);
  cl.SetDay(31);
  cl.SetMonth(4);
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2024, 5, 1, 0, 0, 0));
}

TEST(JavaCalendarTest, TimeInAGapMovesForwardByTheGap) {
  const absl::TimeZone ny = Zone("America/New_York");
  JavaCalendar cl(ny);
  // 2024-03-10 02:30 does not exist in New York: the offset before the gap
  // (-05:00) makes it 07:30Z, which reads 03:30 EDT.
  cl.SetCivil(2024, 3, 10, 2, 30, 0);
  EXPECT_EQ(cl.Time(),
            absl::FromCivil(absl::CivilSecond(2024, 3, 10, 7, 30, 0), absl::UTCTimeZone()));
  EXPECT_EQ(cl.Hour(), 3);
  EXPECT_EQ(cl.Minute(), 30);
}

TEST(JavaCalendarTest, RepeatedTimeTakesItsSecondOccurrence) {
  const absl::TimeZone ny = Zone("America/New_York");
  JavaCalendar cl(ny);
  // 2024-11-03 01:30 occurs at 05:30Z (EDT) and 06:30Z (EST).
  cl.SetCivil(2024, 11, 3, 1, 30, 0);
  EXPECT_EQ(cl.Time(),
            absl::FromCivil(absl::CivilSecond(2024, 11, 3, 6, 30, 0), absl::UTCTimeZone()));
  EXPECT_EQ(cl.Hour(), 1);
  // Any set re-reads the civil time: still the second occurrence.
  cl.SetSecond(0);
  EXPECT_EQ(cl.Time(),
            absl::FromCivil(absl::CivilSecond(2024, 11, 3, 6, 30, 0), absl::UTCTimeZone()));
}

TEST(JavaCalendarTest, AddYearKeepsTheDayUnlessTheMonthIsShorter) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  JavaCalendar cl(utc);
  cl.SetCivil(2024, 2, 29, 12, 34, 56);
  cl.AddYear();
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2025, 2, 28, 12, 34, 56));
  cl.SetCivil(2024, 7, 31, 1, 2, 3);
  cl.AddYear();
  EXPECT_EQ(Civil(cl), absl::CivilSecond(2025, 7, 31, 1, 2, 3));
}

TEST(JavaCalendarTest, DayOfWeekIsSundayOneToSaturdaySeven) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  JavaCalendar cl(utc);
  cl.SetCivil(2024, 1, 7, 0, 0, 0);  // A Sunday.
  EXPECT_EQ(cl.DayOfWeek(), 1);
  cl.SetDay(8);
  EXPECT_EQ(cl.DayOfWeek(), 2);
  cl.SetDay(13);  // A Saturday.
  EXPECT_EQ(cl.DayOfWeek(), 7);
  cl.SetDay(32);  // February 1, a Thursday.
  EXPECT_EQ(cl.DayOfWeek(), 5);
}

}  // namespace
}  // namespace jobwheel::scheduler::cron_internal
