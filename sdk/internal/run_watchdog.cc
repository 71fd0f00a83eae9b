#include "sdk/internal/run_watchdog.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/time/proto_time.h"

namespace jobwheel::sdk {

RunWatchdog::RunWatchdog(absl::Mutex& mu, Clock& clock, RunResults& results,
                         absl::Duration cancel_grace, absl::Duration interval)
    : mu_(mu), clock_(clock), results_(results), cancel_grace_(cancel_grace), interval_(interval) {}

RunWatchdog::~RunWatchdog() { Stop(); }

void RunWatchdog::Start() {
  absl::MutexLock lock(&mu_);
  if (thread_.joinable() || stop_) return;
  thread_ = std::thread([this] { Loop(); });
}

void RunWatchdog::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void RunWatchdog::Watch(const std::shared_ptr<RunState>& run) {
  if (run == nullptr) return;
  watched_[run->run_id()] = run;
  wake_ = true;
}

void RunWatchdog::Unwatch(const RunState& run) {
  auto it = watched_.find(run.run_id());
  if (it != watched_.end() && it->second.get() == &run) watched_.erase(it);
}

void RunWatchdog::Loop() {
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return wake_ || stop_; };
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    wake_ = false;
    const absl::Time now = clock_.Now();
    absl::Time next = absl::InfiniteFuture();  // When to look again.
    std::vector<jobwheel::v1::RunResult> to_report;
    for (auto it = watched_.begin(); it != watched_.end();) {
      const int64_t id = it->first;
      std::shared_ptr<RunState> run = it->second;
      if (run->phase != RunPhase::kRunning || run->reported) {
        watched_.erase(it++);  // Ended or already reported: nothing left to enforce.
        continue;
      }
      ++it;
      if (!run->token->cancelled() && run->deadline != absl::InfiniteFuture()) {
        if (now >= run->deadline) {
          const std::string message = absl::StrCat(
              "timed out after ", absl::FormatDuration(FromProto(run->request.timeout())));
          if (run->token->Cancel(CancelReason::kTimedOut, message)) {
            run->cancelled_at = now;
            run->Log(absl::StrCat("run ", id, " ", message, "; cancelling"));
          }
        } else {
          next = std::min(next, run->deadline);
        }
      }
      if (run->token->cancelled()) {
        if (run->cancelled_at == absl::InfiniteFuture()) run->cancelled_at = now;
        if (now - run->cancelled_at >= cancel_grace_) {
          run->Log(absl::StrCat("handler has not returned ",
                                absl::FormatDuration(now - run->cancelled_at),
                                " after cancellation; reporting now, a later result is dropped"));
          to_report.push_back(results_.Cancelled(*run));
        } else {
          next = std::min(next, run->cancelled_at + cancel_grace_);
        }
      }
    }
    if (!to_report.empty()) {
      mu_.Unlock();
      results_.Report(to_report);
      mu_.Lock();
      continue;
    }
    if (next == absl::InfiniteFuture()) {
      mu_.Await(absl::Condition(&woken));
    } else {
      clock_.AwaitWithDeadline(&mu_, absl::Condition(&woken), std::min(next, now + interval_));
    }
  }
}

}  // namespace jobwheel::sdk
