#ifndef JOBWHEEL_SERVICES_SCHEDULER_CRON_H_
#define JOBWHEEL_SERVICES_SCHEDULER_CRON_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "services/scheduler/cron_rep.h"  // kCronMaxYear, CronSearch

namespace jobwheel::scheduler {

// A parsed Quartz cron expression bound to an IANA time zone. Immutable,
// thread-safe, cheap to copy (the parsed form is shared).
//
// Agrees with Quartz 2.3.2's org.quartz.CronExpression (the engine XXL-JOB
// uses), with setTimeZone(time_zone) and getNextValidTimeAfter: the same
// expressions are valid and the fire times are the same, checked by the
// differential test in tests/cron against the Debian libquartz2-java jar.
// That includes Quartz's quirks, which XXL-JOB users rely on without knowing:
//  * syntax: 6 or 7 fields split on spaces and tabs (more are ignored);
//    after a number or a name, characters Quartz does not expect are ignored
//    (`5X` is 5, `MONDAY` is MON, `MON-FRI/2` is MON-FRI); `0-59/61` is 0
//    (no increment limit in a range); `*/0` is `*`; `L` in second, minute,
//    hour, month or year selects nothing; `15W,20` is `15W`.
//  * `nW` on a day the month lacks is a day of the next month to Java's
//    lenient calendar: `30W 2` fires on February 29 when March 1 is a
//    Saturday (2036, 2064), `31W 2` never fires.
//  * around DST: a civil time in a spring-forward gap never fires and the
//    search goes on after the gap (with the odd skips of Quartz's
//    field-by-field search); a repeated civil time fires once, at its second
//    occurrence, and a search starting in the first pass goes on from the
//    same wall-clock time in the second.
//  * a few valid expressions make Quartz throw or loop forever; Search()
//    says so and NextAfter() returns nullopt for them.
// Years run to kCronMaxYear (see above). Two more edges where Quartz is not
// a function of its input: for `W`, it compares the candidate day's time with
// the start using the wall clock's milliseconds (we take 0, which is exact
// for whole-second starts); and starts before 1900 are searched from 1900
// here (Java's calendar turns Julian before 1582).
class CronExpression {
 public:
  // Returns INVALID_ARGUMENT naming the field and the reason, e.g.
  // `cron expression "0 0 25 * * ?": field hour: value 25 out of range 0-23`.
  // An empty `time_zone` means "UTC"; an unknown one gives INVALID_ARGUMENT
  // `time_zone: unknown time zone "X"`.
  static absl::StatusOr<CronExpression> Parse(absl::string_view expression,
                                              absl::string_view time_zone = "UTC");

  // The first fire time strictly after `after` (fire times are whole seconds),
  // or std::nullopt if there is none up to the end of kCronMaxYear (local
  // time) or Quartz would throw or loop.
  std::optional<absl::Time> NextAfter(absl::Time after) const;

  // Quartz's getNextValidTimeAfter(after), telling apart why there is none.
  CronSearch Search(absl::Time after) const;

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
