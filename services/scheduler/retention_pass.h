#ifndef JOBWHEEL_SERVICES_SCHEDULER_RETENTION_PASS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_RETENTION_PASS_H_

#include "absl/status/statusor.h"
#include "common/time/clock.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/monitor_options.h"

namespace jobwheel::scheduler {

// The retention pass: fires and runs older than `retention` (FireStore::DeleteHistory), and
// audit events older than `audit_retention`, deleted in small batches. Monitors runs it every
// `retention_interval`.
class RetentionPass {
 public:
  RetentionPass(const MonitorOptions& options, FireStore& store, Clock& clock)
      : options_(options), store_(store), clock_(clock) {}

  // How many rows it deleted.
  absl::StatusOr<int> Run();

 private:
  const MonitorOptions& options_;
  FireStore& store_;
  Clock& clock_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_RETENTION_PASS_H_
