#ifndef JOBWHEEL_SERVICES_SCHEDULER_JAVA_CALENDAR_H_
#define JOBWHEEL_SERVICES_SCHEDULER_JAVA_CALENDAR_H_

#include <cstdint>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace jobwheel::scheduler::cron_internal {

// Days in `month` (1-12) of `year` in the proleptic Gregorian calendar.
int DaysInMonth(int64_t year, int month);

// A model of the lenient java.util.GregorianCalendar that Quartz searches
// with, to the second. Setting a field is lazy: the next read normalizes all
// fields together (Feb 31 is Mar 2 or 3, hour 24 is the next day) and turns
// the civil time into an instant like Java's ZoneInfo: a civil time in a
// spring-forward gap takes the offset before the gap (so it moves forward by
// the gap), one that occurs twice takes the offset after the change (its
// second occurrence). Reads then show the civil time of that instant.
//
// Holds a reference to the zone, which must outlive it. Not thread-safe
// (reads normalize); one calendar per search.
class JavaCalendar {
 public:
  explicit JavaCalendar(const absl::TimeZone& tz) : tz_(tz) {}

  // Sets every field, as a series of set() calls would.
  void SetCivil(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s);
  void SetSecond(int64_t v) { Pending().s = v; }
  void SetMinute(int64_t v) { Pending().mi = v; }
  void SetHour(int64_t v) { Pending().h = v; }
  void SetDay(int64_t v) { Pending().d = v; }
  void SetMonth(int64_t v) { Pending().mo = v; }  // 1-based
  void SetYear(int64_t v) { Pending().y = v; }
  // Calendar.add(YEAR, 1): keeps the day unless the month is shorter.
  void AddYear();

  int64_t Year() { return Complete().year(); }
  int Month() { return Complete().month(); }  // 1-based
  int Day() { return Complete().day(); }
  int Hour() { return Complete().hour(); }
  int Minute() { return Complete().minute(); }
  int Second() { return Complete().second(); }
  int DayOfWeek();  // 1=SUN ... 7=SAT
  absl::Time Time() {
    Complete();
    return time_;
  }

 private:
  struct Fields {
    int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  };
  // Before a set: the pending fields start from the current ones. Inline:
  // the search sets fields millions of times a second.
  Fields& Pending() {
    if (!dirty_) {
      pending_ = Fields{civil_.year(), civil_.month(),  civil_.day(),
                        civil_.hour(), civil_.minute(), civil_.second()};
      dirty_ = true;
    }
    return pending_;
  }
  const absl::CivilSecond& Complete();

  const absl::TimeZone& tz_;
  absl::CivilSecond civil_;
  absl::Time time_;
  bool dirty_ = false;
  Fields pending_;
};

}  // namespace jobwheel::scheduler::cron_internal

#endif  // JOBWHEEL_SERVICES_SCHEDULER_JAVA_CALENDAR_H_
