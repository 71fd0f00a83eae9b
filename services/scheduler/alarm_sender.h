#ifndef JOBWHEEL_SERVICES_SCHEDULER_ALARM_SENDER_H_
#define JOBWHEEL_SERVICES_SCHEDULER_ALARM_SENDER_H_

#include <thread>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "services/scheduler/alarm.h"
#include "services/scheduler/alarm_outbox.h"
#include "services/scheduler/scheduler_metrics.h"

namespace jobwheel::scheduler {

// Sends the alarms the monitor pass queued in the outbox, on its own thread so that a slow or
// dead webhook never holds up the monitors. While this replica leads, every `interval` (or at
// once after a full batch) it claims due rows, posts each with its key as Idempotency-Key, and
// marks it sent; a failed post schedules that row's next attempt with jittered exponential
// backoff (common/base/backoff.h: `initial_backoff` doubling up to `max_backoff`, by the row's
// failed attempts) and postpones the rest of the batch to the same time, so a dead webhook
// costs one attempt per backoff step, not one per alarm. A row is retried until delivered.
// Time comes from `clock`; the loop waits on it.
class AlarmSender {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(1);
    absl::Duration initial_backoff = absl::Seconds(1);
    absl::Duration max_backoff = absl::Minutes(5);
    // A claimed row is claimable again after this if its sender never reported (it died).
    absl::Duration lease = absl::Minutes(2);
    int batch = 50;
  };
  struct Counts {
    int sent = 0;
    int failed = 0;
  };

  AlarmSender(Options options, AlarmOutbox& outbox, AlarmPoster& poster, Clock& clock,
              SchedulerMetrics& metrics);
  ~AlarmSender();

  void Start();
  void Shutdown();

  // One batch (tests call it directly). FAILED_PRECONDITION when not leading.
  absl::StatusOr<Counts> RunOnce();

 private:
  void Loop();
  absl::Duration BackoffAfter(int failures);

  const Options options_;
  AlarmOutbox& outbox_;
  AlarmPoster& poster_;
  Clock& clock_;
  SchedulerMetrics& metrics_;
  absl::BitGen gen_;  // Used by the sending thread only.
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_ALARM_SENDER_H_
