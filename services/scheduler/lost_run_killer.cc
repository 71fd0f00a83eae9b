#include "services/scheduler/lost_run_killer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {
namespace {

// Errors that say the executor could not be reached (or asked to be called later).
bool Unreachable(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace

LostRunKiller::LostRunKiller(Options options, KillFn kill, Clock& clock, SchedulerMetrics& metrics)
    : options_(options), kill_(std::move(kill)), clock_(clock), metrics_(metrics) {}

LostRunKiller::~LostRunKiller() { Shutdown(); }

void LostRunKiller::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LostRunKiller::Shutdown() {
  if (!thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void LostRunKiller::Add(const std::vector<FireStore::LostRun>& runs) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  for (const FireStore::LostRun& run : runs) {
    Target& t = targets_[{run.app, run.executor_address}];
    if (std::find(t.run_ids.begin(), t.run_ids.end(), run.run_id) == t.run_ids.end()) {
      t.run_ids.push_back(run.run_id);
    }
    t.due = now;
  }
  ++version_;
}

void LostRunKiller::OnExecutorChanged(const std::string& app, const std::string& address) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  auto it = targets_.find({app, address});
  if (it == targets_.end()) return;
  it->second.announced = true;
  if (it->second.due <= now) return;
  it->second.due = now;
  ++version_;
}

int LostRunKiller::RunDue() {
  const absl::Time now = clock_.Now();
  std::vector<std::pair<Key, std::vector<int64_t>>> due;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, t] : targets_) {
      if (t.due > now) continue;
      t.announced = false;
      due.emplace_back(key, t.run_ids);
    }
  }
  int calls = 0;
  for (const auto& [key, run_ids] : due) {
    const std::string& address = key.second;
    std::vector<int64_t> settled;
    bool unreachable = false;
    for (int64_t run_id : run_ids) {
      jobwheel::v1::KillRequest request;
      request.set_run_id(run_id);
      request.set_reason(
          "the scheduler declared the run LOST: its executor was offline or restarted");
      ++calls;
      absl::StatusOr<jobwheel::v1::KillResponse> r = kill_(key.first, address, request);
      if (r.ok()) {
        metrics_.LostRunKill(r->killed() ? "killed" : "not_running");
        if (r->killed()) spdlog::info("run {} (LOST) killed on executor {}", run_id, address);
        settled.push_back(run_id);
      } else if (Unreachable(r.status())) {
        unreachable = true;  // The rest of this executor's runs wait with it.
        break;
      } else {
        metrics_.LostRunKill("gave_up");
        spdlog::warn("run {} (LOST): kill on executor {} refused: {}", run_id, address,
                     r.status().ToString());
        settled.push_back(run_id);
      }
    }
    absl::MutexLock lock(&mu_);
    auto it = targets_.find(key);
    if (it == targets_.end()) continue;
    Target& t = it->second;
    t.run_ids.erase(std::remove_if(t.run_ids.begin(), t.run_ids.end(),
                                   [&](int64_t id) {
                                     return std::find(settled.begin(), settled.end(), id) !=
                                            settled.end();
                                   }),
                    t.run_ids.end());
    if (unreachable) {
      ++t.attempts;
      if (t.attempts >= options_.max_attempts) {
        for (size_t i = 0; i < t.run_ids.size(); ++i) metrics_.LostRunKill("gave_up");
        spdlog::warn("executor {} unreachable after {} attempts: not told to kill {} LOST runs",
                     address, t.attempts, t.run_ids.size());
        t.run_ids.clear();
      } else {
        metrics_.LostRunKill("retried");
        absl::Duration backoff = options_.first_backoff;
        for (int i = 1; i < t.attempts && backoff < options_.max_backoff; ++i) backoff *= 2;
        // Announced meanwhile (it may have come back): again at once.
        t.due = t.announced ? clock_.Now() : clock_.Now() + std::min(backoff, options_.max_backoff);
        t.announced = false;
      }
    }
    if (t.run_ids.empty()) targets_.erase(it);
  }
  return calls;
}

size_t LostRunKiller::pending() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [key, t] : targets_) n += t.run_ids.size();
  return n;
}

absl::Time LostRunKiller::next_due() const {
  absl::MutexLock lock(&mu_);
  absl::Time due = absl::InfiniteFuture();
  for (const auto& [key, t] : targets_) due = std::min(due, t.due);
  return due;
}

void LostRunKiller::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        absl::Time due = absl::InfiniteFuture();
        for (const auto& [key, t] : targets_) due = std::min(due, t.due);
        const int64_t seen = version_;
        auto stopping_or_sooner = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || version_ != seen;
        };
        if (!clock_.AwaitWithDeadline(&mu_, absl::Condition(&stopping_or_sooner), due)) break;
        if (stopping_) return;
      }
    }
    RunDue();
  }
}

}  // namespace jobwheel::scheduler
