#ifndef JOBWHEEL_SERVICES_SCHEDULER_CRON_H_
#define JOBWHEEL_SERVICES_SCHEDULER_CRON_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jobwheel::scheduler {

namespace cron_internal {
struct CronRep;  // The parsed form; defined in cron.cc.
}  // namespace cron_internal

// A parsed Quartz cron expression bound to an IANA time zone. Immutable,
// thread-safe, cheap to copy (the parsed form is shared).
//
// Syntax is Quartz's (the dialect XXL-JOB uses): 6 or 7 whitespace-separated
// fields `second minute hour day-of-month month day-of-week [year]` with `*`,
// `?`, `,`, `-` (wrap-around allowed, e.g. `22-2`, `FRI-MON`), `/`, `L`, `W`,
// `LW`, `L-n`, `L-nW`, `nL`, `#` and the names JAN-DEC and SUN-SAT
// (1=SUN ... 7=SAT), case-insensitive. Exactly one of day-of-month and
// day-of-week must be `?`; years are 1970-2099.
//
// Fire times equal Quartz 2.3.2's (checked against its jar on ~23k random
// expressions) for every expression accepted here, with one exception: `nW`
// or `L-nW` whose day does not exist in a month (31W in April, L-30W in
// February) does not fire in that month; Quartz 2.3.2 rolls the day into the
// next month there (firing on odd days, or looping forever), newer Quartz
// skips the month as here. Forms that Quartz accepts but silently misreads are
// rejected rather than reinterpreted: trailing junk (`5X`, `MONDAY`), a `/`
// after a name (`MON-FRI/2` is MON-FRI in Quartz), `L`, `W` or `#` combined
// with other list items or ranges, `/0`, years outside 1970-2099.
//
// Time zones: fields are matched against civil time in `time_zone()`. Around
// offset changes (DST):
//  * a civil time that does not exist (spring-forward gap) fires at the instant
//    the pre-transition offset gives it, i.e. shifted forward by the gap:
//    02:30 on 2024-03-10 in America/New_York fires at 03:30 EDT (once, even
//    if 03:30 matches as well);
//  * a civil time that occurs twice (fall-back) fires once, at its first
//    occurrence (01:30 EDT, not 01:30 EST); the repeated hour does not fire
//    again, so `0 */20 * * * ?` goes from 01:40 EDT to 02:00 EST.
// This is NOT what Quartz 2.3.2 does (its GregorianCalendar arithmetic drops
// the gap firing of fixed-hour schedules, e.g. `0 30 2 * * ?` skips the day,
// and fires repeated civil times only at their second occurrence).
class CronExpression {
 public:
  // Returns INVALID_ARGUMENT naming the field and the reason, e.g.
  // `cron expression "0 0 25 * * ?": field hour: value 25 out of range 0-23`.
  // An empty `time_zone` means "UTC"; an unknown one gives INVALID_ARGUMENT
  // `time_zone: unknown time zone "X"`.
  static absl::StatusOr<CronExpression> Parse(
      absl::string_view expression, absl::string_view time_zone = "UTC");

  // The first fire time strictly after `after` (fire times are whole seconds),
  // or std::nullopt if there is none up to the end of year 2099 (local time).
  std::optional<absl::Time> NextAfter(absl::Time after) const;

  // The expression as given to Parse().
  const std::string& expression() const;
  const absl::TimeZone& time_zone() const;

 private:
  explicit CronExpression(std::shared_ptr<const cron_internal::CronRep> rep)
      : rep_(std::move(rep)) {}

  std::shared_ptr<const cron_internal::CronRep> rep_;  // Never null.
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_CRON_H_
