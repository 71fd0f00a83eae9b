#ifndef JOBWHEEL_SERVICES_DISPATCHER_OUTCOME_WRITER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_OUTCOME_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/dispatcher_metrics.h"

namespace jobwheel::dispatcher {

// Writes the executors' answers to trigger calls (TriggerOutcome) to the store, in batches, on
// its own thread. An answer that leaves the run open (RUNNING: STARTED or QUEUED) is held for
// `trigger_write_delay` first (on the clock): most runs are short, and a result that comes
// meanwhile takes the answer out (TakeHeld) into its own write, one UPDATE of the run instead of
// two. Other answers are written at once. A failed write is retried every `write_retry` (given
// up at shutdown: the runs stay PENDING until the scheduler's monitor ends them).
//
// Thread-safe. Start() before use; Shutdown() (idempotent, joining) writes every answer, held
// ones included, after the result writes that took some have given back what they did not
// write.
class OutcomeWriter {
 public:
  struct Options {
    size_t max_outcomes_per_write = 2000;
    absl::Duration write_retry = absl::Milliseconds(500);
    // Zero or less: every answer is written at once.
    absl::Duration trigger_write_delay = absl::Milliseconds(250);
  };

  OutcomeWriter(DispatchStore& store, DispatcherMetrics& metrics, Clock& clock, Options options);
  ~OutcomeWriter();

  void Start();
  void Shutdown();

  // Holds a RUNNING answer (unless holding is off, the writer is stopping, or the run already
  // has one held), else queues it for the next write.
  void Enqueue(TriggerOutcome outcome);
  // Takes the held answers of these runs out, for their result write to carry them. Every
  // TakeHeld must be ended by one EndFold.
  std::vector<TriggerOutcome> TakeHeld(const std::vector<v1::RunResult>& results);
  // Ends a TakeHeld of `taken` answers: `put_back`, the ones the result write did not carry,
  // are held again under their first due time (or written).
  void EndFold(size_t taken, std::vector<TriggerOutcome> put_back);

  // Answers received but not yet written, held and carried ones included.
  size_t pending() const;
  // Of those, the ones held for trigger_write_delay.
  size_t held() const;

 private:
  void HoldOrQueueLocked(TriggerOutcome outcome) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves held answers due by `now` (all of them when stopping) to outcomes_.
  void ReleaseDueLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();

  DispatchStore& store_;
  DispatcherMetrics& metrics_;
  Clock& clock_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::vector<TriggerOutcome> outcomes_ ABSL_GUARDED_BY(mu_);  // To write now, in order.
  size_t writing_ ABSL_GUARDED_BY(mu_) = 0;
  // Held answers by due time (arrival + trigger_write_delay), and by run id.
  using Held = std::multimap<absl::Time, TriggerOutcome>;
  Held held_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, Held::iterator> held_by_run_ ABSL_GUARDED_BY(mu_);
  // Answers taken by result writes still in progress; the writer outlives them.
  size_t folding_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_OUTCOME_WRITER_H_
