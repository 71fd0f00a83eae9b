#ifndef JOBWHEEL_SERVICES_SCHEDULER_FAKE_FIRE_STORE_ROWS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FAKE_FIRE_STORE_ROWS_H_

#include <cstdint>

#include "absl/time/time.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/fake_fire_store.h"

namespace jobwheel::scheduler {

// For the monitor tests on a FakeFireStore: a DISPATCHED fire of `job` with one run in
// `status` at `attempt`, triggered and started at `at`, as a dispatcher and an executor leave
// it. Returns the run's id.
inline int64_t AddRunOf(FakeFireStore& store, absl::Time at, int64_t job,
                        jobwheel::v1::RunStatus status, int attempt = 0) {
  FakeFireStore::FireRow fire;
  fire.job_id = job;
  fire.scheduled = at;
  fire.status = jobwheel::v1::FIRE_STATUS_DISPATCHED;
  FakeFireStore::RunRow run;
  run.fire_id = store.AddFire(fire);
  run.job_id = job;
  run.status = status;
  run.attempt = attempt;
  run.trigger_time = at;
  run.start_time = at;
  return store.AddRun(run);
}

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FAKE_FIRE_STORE_ROWS_H_
