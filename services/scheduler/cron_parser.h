#ifndef JOBWHEEL_SERVICES_SCHEDULER_CRON_PARSER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_CRON_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "services/scheduler/cron_rep.h"

namespace jobwheel::scheduler::cron_internal {

// Parses a Quartz cron expression bound to `time_zone` into its value sets
// and flags, the way Quartz 2.3.2's buildExpression does (quirks included;
// see CronExpression in cron.h). An empty `time_zone` means "UTC".
//
// Errors are INVALID_ARGUMENT naming the field and the reason, e.g.
// `cron expression "0 0 25 * * ?": field hour: value 25 out of range 0-23`,
// or `time_zone: unknown time zone "X"`.
absl::StatusOr<CronRep> ParseCron(absl::string_view expression, absl::string_view time_zone);

}  // namespace jobwheel::scheduler::cron_internal

#endif  // JOBWHEEL_SERVICES_SCHEDULER_CRON_PARSER_H_
