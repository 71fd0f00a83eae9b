#ifndef JOBWHEEL_SERVICES_SCHEDULER_CRON_SEARCH_H_
#define JOBWHEEL_SERVICES_SCHEDULER_CRON_SEARCH_H_

#include "absl/time/time.h"
#include "services/scheduler/cron_rep.h"

namespace jobwheel::scheduler::cron_internal {

// Quartz 2.3.2's getTimeAfter(after) for `rep`: its field-by-field search
// for the next fire time, step by step, on a model of the lenient
// java.util.GregorianCalendar it runs on (JavaCalendar), telling apart why
// there is none (see CronSearch). Pure; thread-safe.
CronSearch SearchAfter(const CronRep& rep, absl::Time after);

}  // namespace jobwheel::scheduler::cron_internal

#endif  // JOBWHEEL_SERVICES_SCHEDULER_CRON_SEARCH_H_
