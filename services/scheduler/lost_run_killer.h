#ifndef JOBWHEEL_SERVICES_SCHEDULER_LOST_RUN_KILLER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_LOST_RUN_KILLER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/executor.pb.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// Tells executors to cancel the runs the monitors declared LOST, should they come back (the
// same process reconnecting after the grace, a paused process resuming): ExecutorService.Kill
// per run, best effort. Each executor address is tried at once, then with a doubling backoff
// while it is unreachable (UNAVAILABLE, DEADLINE_EXCEEDED and the like), at most
// `max_attempts` times; OnExecutorChanged (the registry announced the address) makes it due at
// once. An answer settles a run (killed, or not running there: a new process under the address
// answers so); any other error gives it up. Its results, should they still come, are the
// dispatcher's (recorded as late, the status unchanged). Time comes from `clock`; the loop
// waits on it. Thread-safe.
class LostRunKiller {
 public:
  struct Options {
    int max_attempts = 8;
    absl::Duration first_backoff = absl::Seconds(1);
    absl::Duration max_backoff = absl::Minutes(1);
  };
  using KillFn = std::function<absl::StatusOr<jobwheel::v1::KillResponse>(
      const std::string& app, const std::string& address,
      const jobwheel::v1::KillRequest& request)>;

  LostRunKiller(Options options, KillFn kill, Clock& clock, SchedulerMetrics& metrics);
  ~LostRunKiller();

  void Start();
  void Shutdown();

  // Runs made LOST: their executors are told at once.
  void Add(const std::vector<FireStore::LostRun>& runs);
  // The registry announced the executor at (app, address): its runs are due at once.
  void OnExecutorChanged(const std::string& app, const std::string& address);

  // Tries every executor that is due; returns how many Kill calls it made (tests).
  int RunDue();
  // Runs still to tell, and when the earliest executor is due (InfiniteFuture: none).
  size_t pending() const;
  absl::Time next_due() const;

 private:
  // The LOST runs of one executor.
  struct Target {
    std::vector<int64_t> run_ids;
    int attempts = 0;
    absl::Time due;
    // Announced by the registry since its calls began: tried again at once if unreachable.
    bool announced = false;
  };
  using Key = std::pair<std::string, std::string>;  // (app, address)

  void Loop();

  const Options options_;
  const KillFn kill_;
  Clock& clock_;
  SchedulerMetrics& metrics_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;  // Bumped when something became due sooner.
  std::map<Key, Target> targets_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_LOST_RUN_KILLER_H_
