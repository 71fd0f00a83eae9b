#ifndef JOBWHEEL_SERVICES_DISPATCHER_PLANNER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_PLANNER_H_

#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/executor_directory.h"
#include "services/dispatcher/routed_run.h"
#include "services/dispatcher/router.h"
#include "services/dispatcher/trigger_pools.h"

namespace jobwheel::dispatcher {

// Turns a Dispatch request's fires into runs: which executors of the fire's app can run it
// (live, with its handler or allowing scripts), the fire's manual executor or the job's
// routing strategy over them (Router: executor picks, sharding), and the FAILED outcome with
// its reason when none fits. Then, for the runs the store created, where each goes and when:
// its executor and trigger pool, now or at its fire's time (rounded up to `trigger_tick`).
// Thread-safe (as the directory and router are).
class Planner {
 public:
  Planner(const ExecutorDirectory& directory, Router& router, const TriggerPools& pools,
          absl::Duration trigger_tick);

  // The runs of a PENDING fire (called inside the store's transaction).
  FirePlan Plan(const v1::Fire& fire);
  // When the runs of `fire` are to be triggered: now if it is due, else its scheduled time
  // rounded up to a multiple of trigger_tick (whole seconds stay exact).
  absl::Time TriggerTime(const v1::Fire& fire, absl::Time now) const;

  // The PENDING runs the store created for `fire` (its `result`), routed: appended to
  // `now_runs` when due at `now`, else to `held` with their trigger time.
  void Route(const v1::Fire& fire, const FireResult& result, absl::Time now,
             std::vector<RoutedRun>* now_runs,
             std::vector<std::pair<RoutedRun, absl::Time>>* held) const;

  // The Run request of a created run, with its result key (made by the store).
  static PendingRun MakePendingRun(const v1::Fire& fire, const CreatedRun& run);

 private:
  const ExecutorDirectory& directory_;
  Router& router_;
  const TriggerPools& pools_;
  const absl::Duration trigger_tick_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_PLANNER_H_
