#include "jobwheel/cancellation.h"

#include <utility>

namespace jobwheel {

absl::string_view CancelReasonName(CancelReason reason) {
  switch (reason) {
    case CancelReason::kNone:
      return "none";
    case CancelReason::kKilled:
      return "killed";
    case CancelReason::kTimedOut:
      return "timed_out";
    case CancelReason::kCovered:
      return "covered";
    case CancelReason::kShutdown:
      return "shutdown";
  }
  return "unknown";
}

bool CancellationToken::Cancel(CancelReason reason, std::string message) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return false;
  reason_ = reason;
  message_ = std::move(message);
  cancelled_.store(true, std::memory_order_release);
  return true;
}

CancelReason CancellationToken::reason() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

std::string CancellationToken::message() const {
  absl::MutexLock lock(&mu_);
  return message_;
}

bool CancellationToken::WaitFor(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto is_cancelled = [this]() { return cancelled_.load(std::memory_order_relaxed); };
  mu_.AwaitWithTimeout(absl::Condition(&is_cancelled), timeout);
  return cancelled_.load(std::memory_order_acquire);
}

}  // namespace jobwheel
