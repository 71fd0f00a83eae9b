#include "services/scheduler/executor_changes.h"

#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

bool ParseExecutorChange(const std::string& payload, ExecutorChange* change) {
  // Addresses may hold '|' only in theory; the address is everything after the third '|'.
  std::vector<std::string> parts = absl::StrSplit(payload, absl::MaxSplits('|', 3));
  if (parts.size() != 4 || parts[0] != "e" || parts[2].empty() || parts[3].empty()) return false;
  change->app = parts[2];
  change->address = parts[3];
  return true;
}

ExecutorChangeListener::ExecutorChangeListener(std::string dsn, Options options, OnChange on_change,
                                               Clock& clock)
    : listener_(std::move(dsn), kExecutorChangeChannel, clock),
      options_(options),
      on_change_(std::move(on_change)),
      clock_(clock) {}

ExecutorChangeListener::~ExecutorChangeListener() { Shutdown(); }

void ExecutorChangeListener::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ExecutorChangeListener::Shutdown() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  listener_.Disconnect();
}

bool ExecutorChangeListener::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void ExecutorChangeListener::Loop() {
  while (!stopping()) {
    if (!listener_.connected()) {
      if (absl::Status s = listener_.Connect(); !s.ok()) {
        spdlog::warn("executor changes: {}", s.ToString());
        absl::MutexLock lock(&mu_);
        clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_),
                                 clock_.Now() + options_.reconnect_delay);
        continue;
      }
      on_change_(ExecutorChange{});  // Announcements may have been missed meanwhile.
    }
    absl::StatusOr<std::vector<std::string>> payloads = listener_.Wait(options_.poll);
    if (!payloads.ok()) {
      spdlog::warn("executor changes: {}", payloads.status().ToString());
      continue;  // Disconnected: connect again.
    }
    for (const std::string& payload : *payloads) {
      ExecutorChange change;
      if (ParseExecutorChange(payload, &change)) on_change_(change);
    }
  }
}

}  // namespace jobwheel::scheduler
