#include "services/scheduler/cron_search.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "services/scheduler/cron_rep.h"
#include "services/scheduler/java_calendar.h"

// Reproduces getTimeAfter step by step: each pass takes the calendar's
// fields from the second up, moves each to the field's next value, and when
// one changes (or runs out of values and carries into the next larger field)
// starts the pass over, as Quartz does. Where Quartz is surprising we follow
// it anyway: XXL-JOB users write expressions against Quartz.

namespace jobwheel::scheduler::cron_internal {
namespace {

// The first value >= v, or nullopt (Java's tailSet(v).first()).
std::optional<int> Tail(const ValueSet& set, int64_t v) {
  auto it = std::lower_bound(set.begin(), set.end(), v, [](int a, int64_t b) { return a < b; });
  if (it == set.end()) return std::nullopt;
  return *it;
}

bool Contains(const ValueSet& set, int v) { return std::binary_search(set.begin(), set.end(), v); }

// Java's TreeSet.first(), which throws on an empty set: nullopt then.
std::optional<int> First(const ValueSet& set) {
  if (set.empty()) return std::nullopt;
  return set.front();
}

// How one field's step ends.
enum class Step {
  kKept,     // The field holds a value of its set; go on to the next field.
  kRestart,  // The calendar moved; the pass starts over from the second.
  kThrows,   // Quartz throws: the field needed the first value of an empty set.
  kNever,    // No fire time.
};

// The calendar's fields in the order a pass steps through them, smallest
// first (day-of-week is not a calendar field: the day step reads it), with
// what each starts over at when a larger field changes.
constexpr Field kPass[] = {kSecond, kMinute, kHour, kDayOfMonth, kMonth, kYear};
constexpr int kPassLength = sizeof(kPass) / sizeof(kPass[0]);
constexpr int64_t kStartOver[kPassLength] = {0, 0, 0, 1, 1, 0};

// Each field's place in kPass (-1: day-of-week, not in it).
constexpr int kPassIndex[kFieldCount] = {0, 1, 2, 3, 4, -1, 5};

int64_t Get(JavaCalendar& cl, Field field) {
  switch (field) {
    case kSecond:
      return cl.Second();
    case kMinute:
      return cl.Minute();
    case kHour:
      return cl.Hour();
    case kDayOfMonth:
      return cl.Day();
    case kMonth:
      return cl.Month();
    case kYear:
      return cl.Year();
    case kDayOfWeek:
      break;
  }
  return cl.DayOfWeek();
}

void Set(JavaCalendar& cl, Field field, int64_t v) {
  switch (field) {
    case kSecond:
      return cl.SetSecond(v);
    case kMinute:
      return cl.SetMinute(v);
    case kHour:
      return cl.SetHour(v);
    case kDayOfMonth:
      return cl.SetDay(v);
    case kMonth:
      return cl.SetMonth(v);
    case kYear:
      return cl.SetYear(v);
    case kDayOfWeek:
      return;
  }
}

// Quartz's setCalendarHour: if a gap moved the hour, ask for one more.
void SetHourPastGap(JavaCalendar& cl, int64_t hour) {
  cl.SetHour(hour);
  if (cl.Hour() != hour && hour != 24) cl.SetHour(hour + 1);
}

// Quartz's move after `field` changed to `value`: the smaller fields start
// over, the next larger field takes `carry` (one more than it was if the
// field ran out of values). Hours go last, through SetHourPastGap, which
// reads the calendar; the other sets are lazy and so commute.
void Restart(JavaCalendar& cl, Field field, int64_t value, int64_t carry) {
  const int index = kPassIndex[field];
  for (int i = 0; i < index; ++i) Set(cl, kPass[i], kStartOver[i]);
  const bool has_carry = index + 1 < kPassLength;
  const Field carry_field = has_carry ? kPass[index + 1] : field;
  if (field != kHour) Set(cl, field, value);
  if (has_carry && carry_field != kHour) Set(cl, carry_field, carry);
  if (field == kHour) SetHourPastGap(cl, value);
  if (has_carry && carry_field == kHour) SetHourPastGap(cl, carry);
}

// The step every field but the day takes: the field's next value at or after
// the calendar's; when there is none, its first value and one more of the
// next larger field (the year, the largest, has none: the search is over).
// A changed value restarts the pass, except for the second, which Quartz sets
// and goes on. Sets *kept to the value the field takes.
Step StepField(JavaCalendar& cl, const CronRep& rep, Field field, int64_t* kept) {
  const int index = kPassIndex[field];
  const bool largest = index + 1 == kPassLength;
  const ValueSet& set = rep.fields[field];
  int64_t value = Get(cl, field);
  int64_t carry = largest ? 0 : Get(cl, kPass[index + 1]);
  int64_t t = -1;
  if (std::optional<int> next = Tail(set, value)) {
    t = value;
    value = *next;
  } else if (largest) {
    return Step::kNever;
  } else {
    std::optional<int> first = First(set);
    if (!first.has_value()) return Step::kThrows;
    value = *first;
    ++carry;
  }
  *kept = value;
  if (field == kSecond) {
    if (t == -1) Set(cl, kMinute, carry);
    cl.SetSecond(value);
    return Step::kKept;
  }
  if (value != t) {
    Restart(cl, field, value, carry);
    return Step::kRestart;
  }
  Set(cl, field, value);
  return Step::kKept;
}

// Quartz's nearest-weekday rule for `W`: the weekday (per `tcal`) of `day`
// in month `mon`, year `year`, with hour, minute and second of the search;
// sets *day and returns the instant Quartz compares with the start.
absl::Time NearestWeekday(const absl::TimeZone& tz, int64_t year, int mon, int* day, int hr,
                          int min, int sec) {
  // Quartz builds this calendar from "now" and sets every field but the
  // milliseconds, which keep the wall clock's; taking 0 makes the comparison
  // with the start exact whenever the start is a whole second.
  JavaCalendar tcal(tz);
  tcal.SetCivil(year, mon, *day, 0, 0, 0);
  const int ldom = DaysInMonth(year, mon);
  const int dow = tcal.DayOfWeek();
  if (dow == 7 && *day == 1) {
    *day += 2;
  } else if (dow == 7) {
    *day -= 1;
  } else if (dow == 1 && *day == ldom) {
    *day -= 2;
  } else if (dow == 1) {
    *day += 1;
  }
  // The year is the one the calendar normalized to (Quartz sets it first).
  tcal.SetSecond(sec);
  tcal.SetMinute(min);
  tcal.SetHour(hr);
  tcal.SetDay(*day);
  tcal.SetMonth(mon);
  return tcal.Time();
}

// The day step when day-of-month is given (`?` in day-of-week). `kept` holds
// the second, minute and hour the pass has taken; `start` is the instant the
// search starts from (Quartz compares `W` candidates with it).
Step DayOfMonthStep(JavaCalendar& cl, const CronRep& rep, absl::Time start, const int64_t* kept) {
  const ValueSet& days_of_month = rep.fields[kDayOfMonth];
  const int hr = static_cast<int>(kept[kHour]);
  const int min = static_cast<int>(kept[kMinute]);
  const int sec = static_cast<int>(kept[kSecond]);
  int64_t day = cl.Day();
  int64_t mon = cl.Month();
  int64_t t = -1;
  int64_t tmon = mon;
  const std::optional<int> st = Tail(days_of_month, day);
  if (rep.last_day_of_month) {
    t = day;
    day = DaysInMonth(cl.Year(), static_cast<int>(mon)) - rep.last_day_offset;
    if (!rep.nearest_weekday) {
      if (t > day) {
        ++mon;
        if (mon > 12) {
          mon = 1;
          tmon = 3333;  // Forces the change below, as in Quartz.
          cl.AddYear();
        }
        day = 1;
      }
    } else {
      int d = static_cast<int>(day);
      const absl::Time n =
          NearestWeekday(rep.time_zone, cl.Year(), static_cast<int>(mon), &d, hr, min, sec);
      day = d;
      if (n < start) {
        day = 1;
        ++mon;
      }
    }
  } else if (rep.nearest_weekday) {
    // Only the first day of the set counts (`15W,20` is `15W`); a day the
    // month lacks rolls into the next month, as Java's lenient calendar does
    // (31W in February fires in early March).
    t = day;
    const std::optional<int> first_day = First(days_of_month);
    if (!first_day.has_value()) return Step::kThrows;
    int d = *first_day;
    const absl::Time n =
        NearestWeekday(rep.time_zone, cl.Year(), static_cast<int>(mon), &d, hr, min, sec);
    day = d;
    if (n < start) {
      day = *first_day;
      ++mon;
    }
  } else if (st.has_value()) {
    t = day;
    day = *st;
    if (day > DaysInMonth(cl.Year(), static_cast<int>(mon))) {
      const std::optional<int> first_day = First(days_of_month);
      if (!first_day.has_value()) return Step::kThrows;
      day = *first_day;
      ++mon;
    }
  } else {
    const std::optional<int> first_day = First(days_of_month);
    if (!first_day.has_value()) return Step::kThrows;
    day = *first_day;
    ++mon;
  }
  if (day != t || mon != tmon) {
    Restart(cl, kDayOfMonth, day, mon);
    return Step::kRestart;
  }
  cl.SetDay(day);
  return Step::kKept;
}

// The day step when day-of-week is given (`?` in day-of-month).
Step DayOfWeekStep(JavaCalendar& cl, const CronRep& rep) {
  const ValueSet& days_of_week = rep.fields[kDayOfWeek];
  const int64_t day = cl.Day();
  const int64_t mon = cl.Month();
  const int64_t last_day = DaysInMonth(cl.Year(), static_cast<int>(mon));
  const std::optional<int> first_dow = First(days_of_week);
  if (!first_dow.has_value()) return Step::kThrows;
  const int cdow = cl.DayOfWeek();
  // Days from the calendar's weekday to `dow`, 0-6.
  auto days_to = [cdow](int64_t dow) -> int64_t {
    return cdow < dow ? dow - cdow : cdow > dow ? dow + 7 - cdow : 0;
  };
  int64_t target = day;  // The day the pass moves to, if it moves.
  if (rep.last_day_of_week) {
    int64_t add = days_to(*first_dow);
    if (day + add > last_day) {
      Restart(cl, kDayOfMonth, 1, mon + 1);
      return Step::kRestart;
    }
    while (day + add + 7 <= last_day) add += 7;
    target = day + add;
  } else if (rep.nth_day_of_week != 0) {
    int64_t add = days_to(*first_dow);
    const bool shifted = add > 0;
    int64_t d = day + add;
    int64_t week = d / 7;
    if (d % 7 > 0) ++week;
    add = (rep.nth_day_of_week - week) * 7;
    d += add;
    if (add < 0 || d > last_day) {
      Restart(cl, kDayOfMonth, 1, mon + 1);
      return Step::kRestart;
    }
    if (add > 0 || shifted) target = d;
  } else {
    int64_t dow = *first_dow;
    if (std::optional<int> next = Tail(days_of_week, cdow)) dow = *next;
    const int64_t add = days_to(dow);
    if (day + add > last_day) {
      Restart(cl, kDayOfMonth, 1, mon + 1);
      return Step::kRestart;
    }
    target = day + add;
  }
  if (target != day) {
    Restart(cl, kDayOfMonth, target, mon);
    return Step::kRestart;
  }
  cl.SetDay(day);
  return Step::kKept;
}

// One field's step of the pass.
Step StepOnce(JavaCalendar& cl, const CronRep& rep, Field field, absl::Time start, int64_t* kept) {
  if (field == kDayOfMonth) {
    const bool dom_given = !Contains(rep.fields[kDayOfMonth], kNoSpec);
    const bool dow_given = !Contains(rep.fields[kDayOfWeek], kNoSpec);
    if (dom_given && !dow_given) return DayOfMonthStep(cl, rep, start, kept);
    if (dow_given && !dom_given) return DayOfWeekStep(cl, rep);
    cl.SetDay(cl.Day());
    return Step::kKept;
  }
  if (field == kMonth && cl.Year() > kCronMaxYear) return Step::kNever;
  return StepField(cl, rep, field, &kept[field]);
}

}  // namespace

CronSearch SearchAfter(const CronRep& rep, absl::Time after) {
  CronSearch result;
  result.stop = CronSearch::kNever;
  if (after == absl::InfiniteFuture()) return result;
  // Keeps civil arithmetic away from infinities and before 1900 (Java's
  // calendar turns Julian in 1582); `*` years start at 1970 anyway.
  const absl::Time earliest = absl::FromUnixSeconds(-2208988800);
  if (after < earliest) after = earliest;
  if (after > absl::FromUnixSeconds(int64_t{1} << 40)) return result;

  // Quartz starts one second later; the calendar drops the milliseconds and
  // re-reads the civil time, so a start in the first pass through a repeated
  // hour goes on from the same wall-clock time in the second pass.
  const absl::Time start = after + absl::Seconds(1);
  JavaCalendar cl(rep.time_zone);
  {
    const absl::CivilSecond c = absl::ToCivilSecond(start, rep.time_zone);
    cl.SetCivil(c.year(), c.month(), c.day(), c.hour(), c.minute(), c.second());
  }

  // Cycle detection (Brent): the loop is a function of the calendar's
  // instant, so a repeated instant means Quartz would loop forever.
  absl::Time tortoise = absl::InfinitePast();
  int64_t power = 1;
  int64_t lambda = 0;
  while (true) {
    if (cl.Year() > 2999) return result;
    const absl::Time now = cl.Time();
    if (now == tortoise || cl.Year() < 1) {
      result.stop = CronSearch::kQuartzLoops;
      return result;
    }
    if (lambda == power) {
      tortoise = now;
      power *= 2;
      lambda = 0;
    }
    ++lambda;

    int64_t kept[kFieldCount] = {};
    Step step = Step::kKept;
    for (int i = 0; i < kPassLength && step == Step::kKept; ++i) {
      step = StepOnce(cl, rep, kPass[i], start, kept);
    }
    switch (step) {
      case Step::kRestart:
        break;
      case Step::kKept:
        result.stop = CronSearch::kFired;
        result.time = cl.Time();
        return result;
      case Step::kThrows:
        result.stop = CronSearch::kQuartzThrows;
        return result;
      case Step::kNever:
        return result;
    }
  }
}

}  // namespace jobwheel::scheduler::cron_internal
