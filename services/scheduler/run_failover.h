#ifndef JOBWHEEL_SERVICES_SCHEDULER_RUN_FAILOVER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_RUN_FAILOVER_H_

#include <string>

#include "common/time/clock.h"
#include "services/scheduler/executor_changes.h"
#include "services/scheduler/lost_run_killer.h"
#include "services/scheduler/monitors.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// Runs fail over at the speed of detection: the registry's announcements of executor rows
// (ExecutorChangeListener) wake the monitors after their graces, so the runs of an executor
// taken offline become LOST (and their retries are written) within the offline grace; the
// runs each pass makes LOST go to a LostRunKiller, which tells their executors to cancel them
// should they come back. Construct before monitors.Start(); Start after it.
class RunFailover {
 public:
  RunFailover(const std::string& dsn, Monitors& monitors, LostRunKiller::KillFn kill, Clock& clock,
              SchedulerMetrics& metrics);

  void Start();
  void Shutdown();

 private:
  Monitors& monitors_;
  SchedulerMetrics& metrics_;
  LostRunKiller killer_;
  ExecutorChangeListener listener_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_RUN_FAILOVER_H_
