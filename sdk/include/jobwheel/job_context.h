#ifndef JOBWHEEL_SDK_JOB_CONTEXT_H_
#define JOBWHEEL_SDK_JOB_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/attributes.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "jobwheel/cancellation.h"

namespace jobwheel {

// Why the fire behind a run happened (mirrors jobwheel.v1.TriggerType).
enum class TriggerType {
  kUnspecified = 0,
  kCron = 1,
  kFixRate = 2,
  kManual = 3,
  kMisfire = 4,
  kRetry = 5,
  kParent = 6,
};

// "unspecified", "cron", "fix_rate", "manual", "misfire", "retry", "parent".
absl::string_view TriggerTypeName(TriggerType type);

// The facts about one run that a handler sees.
struct RunInfo {
  int64_t job_id = 0;
  int64_t run_id = 0;
  int64_t fire_id = 0;
  std::string handler;
  std::string param;
  int shard_index = 0;  // 0-based; meaningful when shard_total > 0.
  int shard_total = 0;  // 0 when the run is not sharded.
  TriggerType trigger_type = TriggerType::kUnspecified;
  int attempt = 0;  // 0 for the first try, n for the n-th retry.
  absl::Time scheduled_time = absl::InfinitePast();
  absl::Time deadline = absl::InfiniteFuture();  // Start time + timeout, or infinite.
};

// What a handler gets: the run's facts, its log and its cancellation. The SDK creates one per
// run and keeps it alive while the handler runs; a handler must not keep it afterwards.
// Thread-safe (a handler may log and check cancellation from several threads).
//
// Tests of your own handlers may construct one directly.
class JobContext {
 public:
  // Receives one line of text (without the trailing newline) for the run's log.
  using LogSink = std::function<void(absl::string_view line)>;

  JobContext(RunInfo info, std::shared_ptr<CancellationToken> token, LogSink log_sink);
  JobContext(const JobContext&) = delete;
  JobContext& operator=(const JobContext&) = delete;

  const RunInfo& info() const { return info_; }
  int64_t job_id() const { return info_.job_id; }
  int64_t run_id() const { return info_.run_id; }
  int64_t fire_id() const { return info_.fire_id; }
  const std::string& handler() const { return info_.handler; }
  const std::string& param() const { return info_.param; }
  int shard_index() const { return info_.shard_index; }
  int shard_total() const { return info_.shard_total; }
  TriggerType trigger_type() const { return info_.trigger_type; }
  int attempt() const { return info_.attempt; }
  absl::Time scheduled_time() const { return info_.scheduled_time; }
  // When the run's timeout expires (absl::InfiniteFuture() without a timeout). The SDK
  // cancels the run with kTimedOut at that time.
  absl::Time deadline() const { return info_.deadline; }

  // True once the run was killed, timed out, covered or the executor shuts down. A handler
  // should then return promptly; its result is ignored.
  bool cancelled() const { return token_->cancelled(); }
  CancelReason cancel_reason() const { return token_->reason(); }
  const std::shared_ptr<CancellationToken>& cancellation() const { return token_; }

  // Sleeps for `d` unless cancelled first. Returns true when the full time passed, false when
  // it returned early because the run was cancelled.
  bool SleepFor(absl::Duration d) const;

  // Appends to the run's log file (readable through ExecutorService.Log). Each line of
  // `message` becomes one log line prefixed with a timestamp.
  void Log(absl::string_view message) const;
  // printf-style Log.
  void Logf(const char* format, ...) const ABSL_PRINTF_ATTRIBUTE(2, 3);

 private:
  RunInfo info_;
  std::shared_ptr<CancellationToken> token_;
  LogSink log_sink_;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_SDK_JOB_CONTEXT_H_
