#include "sdk/internal/run_ledger.h"

#include <utility>

namespace jobwheel::sdk {

RunLedger::RunLedger(size_t recent_runs, size_t fenced_runs)
    : recent_(recent_runs), fenced_(fenced_runs) {}

void RunLedger::Ended(int64_t run_id, jobwheel::v1::RunStatus status, const std::string& message) {
  absl::MutexLock lock(&mu_);
  if (fenced_.Find(run_id) != nullptr) return;
  if (Entry* known = recent_.Find(run_id)) {
    if (known->kind != Kind::kEnded) return;
    if (status == jobwheel::v1::RUN_STATUS_UNSPECIFIED) return;
    known->status = status;
    known->message = message;
    return;
  }
  Entry e;
  e.kind = Kind::kEnded;
  e.status = status;
  e.message = message;
  Remember(run_id, std::move(e));
}

void RunLedger::Refused(int64_t run_id, jobwheel::v1::RunDisposition disposition,
                        const std::string& message) {
  absl::MutexLock lock(&mu_);
  if (fenced_.Find(run_id) != nullptr) return;
  if (Entry* known = recent_.Find(run_id); known != nullptr && known->kind == Kind::kEnded) return;
  Entry e;
  e.kind = Kind::kRefused;
  e.disposition = disposition;
  e.status = disposition == jobwheel::v1::RUN_DISPOSITION_DISCARDED
                 ? jobwheel::v1::RUN_STATUS_DISCARDED
                 : jobwheel::v1::RUN_STATUS_FAILED;
  e.message = message;
  Remember(run_id, std::move(e));
}

void RunLedger::Remember(int64_t run_id, Entry e) {
  if (recent_.Find(run_id) == nullptr && recent_.size() >= recent_.capacity()) {
    const int64_t* evicted = recent_.LeastRecentKey();
    if (evicted != nullptr && *evicted > largest_forgotten_) largest_forgotten_ = *evicted;
  }
  recent_.Put(run_id, std::move(e));
}

int64_t RunLedger::largest_forgotten() const {
  absl::MutexLock lock(&mu_);
  return largest_forgotten_;
}

void RunLedger::Fence(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  fenced_.Put(run_id, true);
}

std::optional<RunLedger::Entry> RunLedger::Find(int64_t run_id) {
  absl::MutexLock lock(&mu_);
  if (fenced_.Find(run_id) != nullptr) {
    Entry e;
    e.kind = Kind::kFenced;
    e.status = jobwheel::v1::RUN_STATUS_FAILED;
    e.disposition = jobwheel::v1::RUN_DISPOSITION_REJECTED;
    e.message = "fenced by GetRuns: never run here";
    return e;
  }
  if (Entry* known = recent_.Find(run_id)) return *known;
  return std::nullopt;
}

size_t RunLedger::size() const {
  absl::MutexLock lock(&mu_);
  return recent_.size() + fenced_.size();
}

void LedgerSink::Submit(const jobwheel::v1::RunResult& result) {
  ledger_->Ended(result.run_id(), result.status(), result.message());
  next_->Submit(result);
}

}  // namespace jobwheel::sdk
