#ifndef JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_RESOLVER_H_
#define JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_RESOLVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/backoff.h"
#include "common/time/clock.h"
#include "jobwheel/v1/executor.pb.h"
#include "services/dispatcher/dispatch_store.h"
#include "services/dispatcher/executor_clients.h"

namespace jobwheel::dispatcher {

// Whether a RunBatch call that failed with `error` may have reached the executor, so that its
// runs may have started there: DEADLINE_EXCEEDED, CANCELLED, INTERNAL and UNKNOWN (a cut
// stream), and UNAVAILABLE unless its message says no connection was made.
bool TriggerAnswerUnknown(const absl::Status& error);

// The run's new state from what the executor says of it (GetRuns with fence) after its
// trigger's answer was lost with `error`: FENCED → FAILED (it never started and never will:
// the scheduler retries it as any failed trigger); QUEUED, RUNNING, ENDED → RUNNING (the run
// is the executor's: its result comes through ReportResults); REFUSED → DISCARDED or FAILED
// as its answer would have been. NOT_SEEN or no presence: nullopt (unresolved).
std::optional<TriggerOutcome> ResolvedOutcome(const v1::RunPresenceState& state,
                                              const absl::Status& error, absl::Time at);
// The outcome of a run whose executor could not be asked: left RUNNING, its trigger message
// saying so ("trigger answer unknown: …"); the scheduler declares the runs of offline
// executors LOST.
TriggerOutcome UnknownOutcome(int64_t run_id, const absl::Status& error,
                              const std::string& why_unresolved, absl::Time at);

// Settles the runs of RunBatch calls whose answer was lost (TriggerAnswerUnknown): asks their
// executor with GetRuns(fence = true), retried with backoff (common/base/backoff) up to
// `attempts` times, and hands one TriggerOutcome per run to `answers` (ResolvedOutcome, or
// UnknownOutcome when the executor could not be asked). A run is never marked FAILED while
// the executor may be running it, and never started by the executor once it is FAILED (the
// fence refuses a late trigger). Its worker threads wait on the injected Clock between
// attempts; each call blocks one worker for at most `call_deadline`. Resolutions are logged
// with their counts by presence. Thread-safe. Start() before use; Shutdown() (idempotent,
// joining) tries once the calls not tried yet and answers the rest unknown.
class TriggerResolver {
 public:
  struct Options {
    int attempts = 4;
    absl::Duration call_deadline = absl::Seconds(3);
    absl::Duration backoff_initial = absl::Milliseconds(250);
    absl::Duration backoff_max = absl::Seconds(4);
    int threads = 2;
    // Told how the runs of each settled call ended up: presence is a RunPresence short name
    // (fenced, queued, running, ended, refused) or "unknown" (left RUNNING). For metrics.
    std::function<void(absl::string_view presence, size_t runs)> on_settled;
  };
  using AnswerSink = std::function<void(TriggerOutcome)>;

  TriggerResolver(ExecutorClients& executors, Clock& clock, Options options, AnswerSink answers);
  ~TriggerResolver();
  TriggerResolver(const TriggerResolver&) = delete;
  TriggerResolver& operator=(const TriggerResolver&) = delete;

  void Start();
  void Shutdown();

  // The runs of one RunBatch call to `address` that failed with `error` (at most 1,000 runs,
  // the executor's GetRuns limit). Returns at once; after Shutdown they are answered unknown.
  void Resolve(std::string app, std::string address, std::vector<int64_t> run_ids,
               absl::Status error);

  // Calls being settled (queued or being asked).
  size_t pending() const;

 private:
  struct Job {
    std::string app;
    std::string address;
    std::vector<int64_t> run_ids;
    absl::Status error;
    int attempts = 0;
    Backoff backoff;
    absl::Status last;  // The last GetRuns error.
  };
  void Loop();
  // One GetRuns attempt: true when the job is settled (answered), false to try again.
  bool Attempt(Job& job, bool last_attempt);
  void AnswerUnknown(const Job& job, const std::string& why);
  // "GetRuns failed <n> time(s), last: <CODE>: <message>": why a job's runs are left unknown.
  static std::string FailedAttempts(const Job& job);

  ExecutorClients& executors_;
  Clock& clock_;
  const Options options_;
  const AnswerSink answers_;

  mutable absl::Mutex mu_;
  std::multimap<absl::Time, Job> jobs_ ABSL_GUARDED_BY(mu_);  // By due time.
  size_t asking_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  absl::BitGen gen_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_TRIGGER_RESOLVER_H_
