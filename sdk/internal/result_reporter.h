#ifndef JOBWHEEL_SDK_INTERNAL_RESULT_REPORTER_H_
#define JOBWHEEL_SDK_INTERNAL_RESULT_REPORTER_H_

#include <cstdint>
#include <map>
#include <thread>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/backoff.h"
#include "common/time/clock.h"
#include "jobwheel/v1/dispatcher.pb.h"
#include "sdk/internal/dispatcher_client.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/internal/result_sink.h"
#include "sdk/internal/result_spool.h"

namespace jobwheel::sdk {

struct ResultReporterOptions {
  // Results per ReportResults call (a dispatcher takes up to 10,000).
  int max_batch = 500;
  // Backoff while the dispatcher is unreachable (jittered, doubling).
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // A result the dispatcher answered but did not acknowledge is retried after this, doubling
  // up to 60 s.
  absl::Duration unacked_retry = absl::Seconds(1);
  // The sender waits on the injected Clock for the next attempt, and re-checks at least this
  // often.
  absl::Duration poll_interval = absl::Milliseconds(50);
};

// Delivers run results to the dispatcher without ever losing one: Submit() appends the
// result to the spool (which a killed process does not lose: it is in the page cache); the
// sender thread makes the spool durable (one fdatasync for everything appended since the
// last, not one per result) as soon as it wakes up, so before anything is sent, then sends
// batches of up to max_batch and removes from the spool only the run ids the dispatcher
// acknowledged, retrying with backoff while it is down. Only a machine crash in the
// milliseconds between a handler's end and that sync can lose a result. Start() reloads the
// spool left by an earlier process. Duplicates can happen (after a crash between ack and removal);
// the dispatcher ignores them. Thread-safe. Owns its thread (Start/Shutdown).
class ResultReporter : public ResultSink {
 public:
  // `client` may be null: results are then only spooled (no dispatcher configured).
  ResultReporter(ResultSpool* spool, DispatcherClient* client, Clock& clock,
                 ExecutorMetrics& metrics, ResultReporterOptions options = {});
  ~ResultReporter() override;

  // Loads the spool and starts the sender thread.
  absl::Status Start();

  // Spools the result and queues it for sending. Never drops it: if the spool write fails
  // the result is still kept in memory and sent.
  void Submit(const jobwheel::v1::RunResult& result) override;

  // Sends eagerly (backoff capped at 200 ms) until nothing is pending or `timeout` passed.
  // Returns how many results are still pending (they stay spooled).
  size_t Flush(absl::Duration timeout);

  // Stops the sender thread. Idempotent, joining. Pending results stay spooled.
  void Shutdown();

  size_t pending() const;

 private:
  struct Entry {
    jobwheel::v1::RunResult result;
    absl::Time next_attempt;
    absl::Duration retry;  // Per-result backoff for unacknowledged results.
    bool in_flight = false;
  };

  void Loop();

  ResultSpool* const spool_;
  DispatcherClient* const client_;
  Clock& clock_;
  ExecutorMetrics& metrics_;
  const ResultReporterOptions options_;

  mutable absl::Mutex mu_;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;  // Something for the sender to look at.
  std::map<int64_t, Entry> pending_ ABSL_GUARDED_BY(mu_);
  absl::Time next_attempt_ ABSL_GUARDED_BY(mu_);  // Global backoff while unreachable.
  Backoff backoff_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  bool flushing_ ABSL_GUARDED_BY(mu_) = false;
  bool unsynced_ ABSL_GUARDED_BY(mu_) = false;  // Submitted results not yet synced to disk.
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace jobwheel::sdk

#endif  // JOBWHEEL_SDK_INTERNAL_RESULT_REPORTER_H_
