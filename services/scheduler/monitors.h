#ifndef JOBWHEEL_SERVICES_SCHEDULER_MONITORS_H_
#define JOBWHEEL_SERVICES_SCHEDULER_MONITORS_H_

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "services/scheduler/delay_chain_pass.h"
#include "services/scheduler/fire_store.h"
#include "services/scheduler/followup_pass.h"
#include "services/scheduler/monitor_options.h"
#include "services/scheduler/retention_pass.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// The leader's monitors: one scheduler of three passes, each a fenced transaction (FireStore)
// in a class of its own:
//  - FollowupPass (followup_pass.h): lost runs, follow-ups (retry and child fires), alarms
//    queued, jobs whose schedule cannot be computed stopped;
//  - DelayChainPass (delay_chain_pass.h): FIX_DELAY jobs given their next fire time;
//  - RetentionPass (retention_pass.h): old history deleted.
// The loop runs a full pass (follow-ups, then delay chains) every `interval` (the safety net)
// and, after OnExecutorChanged (the registry announced an executor going offline or
// registering), once the offline grace and once the restart grace have passed, so runs become
// LOST as soon as the rules allow; while FIX_DELAY jobs wait, the delay-chain pass alone every
// `delay_chain_interval` in between; and the retention pass every `retention_interval`. Only
// the leader runs passes. Time comes from `clock`; the loop waits on it.
class Monitors {
 public:
  using Options = MonitorOptions;
  struct Counts : FollowupPass::Counts {
    int deleted = 0;
    // FIX_DELAY jobs given their next fire time, and those still waiting.
    int delay_chains_advanced = 0;
    int delay_chains_waiting = 0;
  };

  // Gets the runs a pass made LOST, on the pass's thread.
  using LostRunsListener = FollowupPass::LostRunsListener;

  Monitors(Options options, FireStore& store, Clock& clock, SchedulerMetrics& metrics);
  ~Monitors();

  // Before Start.
  void SetLostRunsListener(LostRunsListener listener) {
    followups_.SetLostRunsListener(std::move(listener));
  }
  // The registry announced a change of an executor row: passes follow once the offline grace
  // and once the restart grace have passed (plus the margin).
  void OnExecutorChanged();

  void Start();
  void Shutdown();

  // One full pass: follow-ups and lost-run detection, then delay chains (tests call it
  // directly).
  absl::StatusOr<Counts> RunOnce();
  // One delay-chain pass alone (the loop runs it between passes while FIX_DELAY jobs wait).
  absl::StatusOr<FireStore::DelayChainResult> AdvanceDelayChains();
  // One retention pass.
  absl::StatusOr<int> Retain();

 private:
  void Loop();
  // Waits until `until` or the earliest wake-up, whichever is first; false when stopping.
  // `woken`: a wake-up came due.
  bool WaitForPass(absl::Time until, bool* woken);

  const Options options_;
  FireStore& store_;
  Clock& clock_;
  SchedulerMetrics& metrics_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Times woken passes are due, and how often the set gained one (wakes a waiting loop).
  std::set<absl::Time> wakes_ ABSL_GUARDED_BY(mu_);
  int64_t wake_version_ ABSL_GUARDED_BY(mu_) = 0;
  FollowupPass followups_;
  DelayChainPass delay_chains_;
  RetentionPass retention_;
  std::thread thread_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_MONITORS_H_
