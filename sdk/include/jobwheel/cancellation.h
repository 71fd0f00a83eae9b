#ifndef JOBWHEEL_SDK_CANCELLATION_H_
#define JOBWHEEL_SDK_CANCELLATION_H_

#include <atomic>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace jobwheel {

// Why a run was told to stop. The run's terminal status follows from it, whatever the
// handler returns afterwards: kKilled → KILLED, kTimedOut → TIMED_OUT, kCovered → DISCARDED
// (a newer run of a COVER_EARLY job replaced it), kShutdown → FAILED "executor shut down".
enum class CancelReason {
  kNone = 0,
  kKilled = 1,
  kTimedOut = 2,
  kCovered = 3,
  kShutdown = 4,
};

// "none", "killed", "timed_out", "covered", "shutdown".
absl::string_view CancelReasonName(CancelReason reason);

// A one-shot cancellation flag with a reason. The first Cancel() wins; later calls change
// nothing. Thread-safe; handlers poll cancelled() or block in WaitFor().
class CancellationToken {
 public:
  CancellationToken() = default;
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  // Returns true when this call cancelled the token, false when it already was.
  bool Cancel(CancelReason reason, std::string message);

  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  CancelReason reason() const;
  std::string message() const;

  // Blocks until the token is cancelled or `timeout` passes; returns cancelled().
  bool WaitFor(absl::Duration timeout) const;

 private:
  mutable absl::Mutex mu_;
  std::atomic<bool> cancelled_{false};
  CancelReason reason_ ABSL_GUARDED_BY(mu_) = CancelReason::kNone;
  std::string message_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel

#endif  // JOBWHEEL_SDK_CANCELLATION_H_
