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
// Time zones: fields are matched against civil time in `time_zone()`, and
// around offset changes (DST) fire times are Quartz 2.3.2's (checked against
// its jar: 100k random expressions and start times around the transitions of
// America/New_York, Europe/Berlin and Australia/Lord_Howe, 8 fire times each,
// no difference but the year limit). Quartz searches
// field by field (second, minute, hour, day, ...) with a lenient
// java.util.GregorianCalendar, which gives:
//  * spring forward: a civil time in the gap never fires; the search goes on
//    after the gap. `0 30 2 * * ?` in America/New_York skips 2024-03-10 and
//    next fires 2024-03-11 02:30; `0 0 * * * ?` fires 01:00 EST, then
//    03:00 EDT; `0 30 2 ? 3 1L` never fires in Europe/Berlin. A quirk matters
//    for gaps shorter than an hour: when the search enters the gap at a
//    minute m past its start (because the previous hour ran out of matching
//    minutes), it goes on from m past the gap's end, so matching times in
//    between are passed over. In Australia/Lord_Howe (02:00 -> 02:30 on
//    2024-10-06) `0 10,35 * * * ?` goes 01:35 -> 03:10, not 02:35;
//    `0 10,35 2 * * ?` (entering at 02:00) fires at 02:35. After a gap longer
//    than an hour, up to an hour more is passed over (Antarctica/Troll,
//    01:00 -> 03:00: `0 0 * * * ?` goes 00:00 -> 04:00).
//  * fall back: a civil time that occurs twice fires once, at its second
//    occurrence; nothing fires during the first pass through the repeated
//    interval. In America/New_York on 2024-11-03, `0 30 1 * * ?` fires at
//    01:30 EST and `0 */20 * * * ?` goes 00:40 EDT -> 01:00 EST. Searching
//    from an instant in the first pass goes on from the same wall-clock time
//    in the second pass (after 01:10 EDT comes 01:20 EST).
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
