#include "services/xxl_gateway/run_ledger.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace jobwheel::xxl {

absl::Status RunLedger::Load() {
  auto runs = state_.LoadRuns();
  if (!runs.ok()) return runs.status();
  absl::MutexLock lock(&mu_);
  for (RunRecord& r : *runs) runs_[r.run_id()] = std::move(r);
  return absl::OkStatus();
}

std::optional<RunRecord> RunLedger::Get(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second;
}

absl::Status RunLedger::Put(const RunRecord& record) {
  {
    absl::MutexLock lock(&mu_);
    runs_[record.run_id()] = record;
  }
  absl::Status s = state_.SaveRun(record);
  if (!s.ok()) spdlog::error("run {}: {}", record.run_id(), s.ToString());
  return s;
}

std::vector<RunRecord> RunLedger::OfIdentity(const std::string& identity) const {
  std::vector<RunRecord> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, r] : runs_) {
    if (r.identity() == identity) out.push_back(r);
  }
  return out;
}

int RunLedger::Prune(absl::Time before) {
  const int64_t before_ms = absl::ToUnixMillis(before);
  std::vector<int64_t> gone;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      const RunRecord& r = it->second;
      const bool done = r.state() == RUN_STATE_FENCED || r.state() == RUN_STATE_REFUSED ||
                        (r.state() == RUN_STATE_ENDED && r.reported());
      const int64_t at = r.end_ms() > 0 ? r.end_ms() : r.accept_ms();
      if (done && at < before_ms) {
        gone.push_back(it->first);
        runs_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (int64_t id : gone) state_.DeleteRun(id).IgnoreError();
  return static_cast<int>(gone.size());
}

size_t RunLedger::size() const {
  absl::MutexLock lock(&mu_);
  return runs_.size();
}

}  // namespace jobwheel::xxl
