#include "services/xxl_gateway/run_ledger.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace jobwheel::xxl {

absl::Status RunLedger::Load() {
  auto runs = state_.LoadRuns();
  if (!runs.ok()) return runs.status();
  absl::MutexLock lock(&mu_);
  for (RunRecord& r : *runs) {
    Entry& e = runs_[r.run_id()];
    e.record = std::move(r);
    e.version = e.written = 1;
    e.synced = true;
  }
  return absl::OkStatus();
}

std::optional<RunRecord> RunLedger::Get(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second.record;
}

absl::Status RunLedger::Put(const RunRecord& record, Durability durability) {
  Stage(record);
  return Persist(record.run_id(), durability);
}

void RunLedger::Stage(const RunRecord& record) {
  absl::MutexLock lock(&mu_);
  Entry& e = runs_[record.run_id()];
  e.record = record;
  ++e.version;
}

absl::Status RunLedger::Persist(int64_t run_id, Durability durability) {
  const bool sync = durability == Durability::kSynced;
  absl::MutexLock writer(&write_mu_[static_cast<uint64_t>(run_id) % kWriteStripes]);
  RunRecord record;
  uint64_t version = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return absl::OkStatus();  // Pruned.
    const Entry& e = it->second;
    if (e.written == e.version && (e.synced || !sync)) return absl::OkStatus();
    record = e.record;
    version = e.version;
  }
  absl::Status s = state_.SaveRun(record, sync);
  if (!s.ok()) {
    spdlog::error("run {}: {}", run_id, s.ToString());
    return s;
  }
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it != runs_.end()) {
    it->second.written = version;
    it->second.synced = sync;
  }
  return absl::OkStatus();
}

std::vector<RunRecord> RunLedger::OfIdentity(const std::string& identity) const {
  std::vector<RunRecord> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, e] : runs_) {
    if (e.record.identity() == identity) out.push_back(e.record);
  }
  return out;
}

int RunLedger::Prune(absl::Time before) {
  const int64_t before_ms = absl::ToUnixMillis(before);
  std::vector<int64_t> gone;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = runs_.begin(); it != runs_.end();) {
      const RunRecord& r = it->second.record;
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
  for (int64_t id : gone) {
    absl::MutexLock writer(&write_mu_[static_cast<uint64_t>(id) % kWriteStripes]);
    {
      absl::MutexLock lock(&mu_);
      if (runs_.contains(id)) continue;  // Known again since.
    }
    state_.DeleteRun(id).IgnoreError();
  }
  return static_cast<int>(gone.size());
}

size_t RunLedger::size() const {
  absl::MutexLock lock(&mu_);
  return runs_.size();
}

}  // namespace jobwheel::xxl
