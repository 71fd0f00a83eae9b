#ifndef JOBWHEEL_SERVICES_SCHEDULER_CRON_REP_H_
#define JOBWHEEL_SERVICES_SCHEDULER_CRON_REP_H_

// The vocabulary the cron pieces share: the year limit and the outcome of a
// search (both part of cron.h's API, which includes this header), and the
// parsed form that cron_parser writes and cron_search reads.

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jobwheel::scheduler {

// The last year any expression fires in. Quartz 2.3.2's limit is the JVM's
// current year + 100 (CronExpression.MAX_YEAR, read from the wall clock);
// ours is fixed so that fire times do not depend on the day they are asked.
// The differential test pins Quartz's limit to this value.
inline constexpr int kCronMaxYear = 2099;

// The outcome of one search for the next fire time.
struct CronSearch {
  enum Stop {
    kFired,         // `time` is the next fire time.
    kNever,         // No fire time after the start (Quartz returns null).
    kQuartzThrows,  // Quartz throws (a field with no values, e.g. hour `L`).
    kQuartzLoops,   // Quartz never returns (e.g. `L-30W` from February).
  };
  Stop stop = kNever;
  std::optional<absl::Time> time;  // Set only for kFired.
};

namespace cron_internal {

// The seven fields, in the order of the expression (and of CronRep::fields).
enum Field {
  kSecond = 0,
  kMinute,
  kHour,
  kDayOfMonth,
  kMonth,
  kDayOfWeek,
  kYear,
};
inline constexpr int kFieldCount = 7;

inline constexpr absl::string_view kFieldNames[kFieldCount] = {
    "second", "minute", "hour", "day-of-month", "month", "day-of-week", "year"};

// Quartz's markers, stored in the value sets like values (and so visible to
// the search, as in Quartz).
inline constexpr int kAllSpec = 99;  // `*`
inline constexpr int kNoSpec = 98;   // `?`

// Values above this year can never fire (the search stops past kCronMaxYear,
// and Quartz's hard stop is 2999), so a year set stores them all as this
// value: keeps `1970-2000000000` from filling memory while behaving the same.
inline constexpr int kYearCap = 3000;

// One field's values: Quartz's sorted set, as a sorted vector of unique values.
using ValueSet = std::vector<int>;

// A parsed expression: Quartz's CronExpression state after
// buildExpression. Written once by ParseCron, then shared read-only.
struct CronRep {
  std::string expression;
  absl::TimeZone time_zone;
  ValueSet fields[kFieldCount];    // Indexed by Field.
  bool last_day_of_week = false;   // `dL`
  int nth_day_of_week = 0;         // `d#n`
  bool last_day_of_month = false;  // `L...` in day-of-month
  bool nearest_weekday = false;    // `W`
  int last_day_offset = 0;         // `L-n`
};

}  // namespace cron_internal
}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_CRON_REP_H_
